"""``cacheeval plot``: draw the figures of one or more report files (pair-mode
reports from ``cacheeval eval --json``, replay reports from ``cacheeval replay
--json``) into a directory, as SVG and PNG (matplotlib, ``plot`` extra):

* ``pr_pchr``: PR and P-CHR curves of every report with a threshold sweep,
  with the perfect-ranker ceiling ``p (1 - ln p)``;
* ``reliability_<cache>``: a reliability diagram per pair-mode report;
* ``domain_fhr``: per-domain FHR with 95% Wilson intervals, side by side;
* ``subscore_fhr``: the same per sub-score (query, context, policy), for reports that have them;
* ``kind_results``: stress rows per perturbation kind (FHR of the edits that change
  the answer, recall of the noise that keeps it), for reports of stress rows;
* ``clq``: quality against p95 latency, cost as marker area, the Pareto front;
* ``gptcache_sweep`` (with ``--sweep reports/gptcache_sweep.csv``): GPTCache's
  FHR and recall against its threshold.

A report name can be given as ``PATH=NAME``. Exit codes: 0 success; 2 a usage
or data error (one line on stderr).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

NAME = "plot"
HELP = "Draw PR/P-CHR, reliability, per-domain FHR and cost-latency-quality figures."
FIGURES = ("pr_pchr", "reliability", "domain_fhr", "subscore_fhr", "kind_results", "clq", "sweep")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("reports", nargs="+", metavar="REPORT.json[=NAME]",
                        help="report or replay JSON files (optionally =display name)")  # fmt: skip
    parser.add_argument("--out", required=True, type=Path, help="directory to write into")
    parser.add_argument("--sweep", type=Path, help="GPTCache threshold sweep CSV")
    parser.add_argument(
        "--format",
        dest="formats",
        action="append",
        choices=("svg", "png"),
        help="output format (repeatable; default: svg and png)",
    )
    parser.add_argument(
        "--only",
        action="append",
        choices=FIGURES,
        help="draw only these figures (repeatable; default: all)",
    )
    parser.add_argument("--prefix", default="", help="prefix of every file name written")


def run(args: argparse.Namespace) -> int:
    from ..reporting import plotdata
    from ..reporting.plotdata import PAIR, read_source

    prog = "cacheeval plot"
    sources = []
    for item in args.reports:
        path, sep, name = item.partition("=")
        try:
            sources.append(read_source(path, name if sep else None))
        except OSError as e:
            return _fail(prog, f"{path}: {e.strerror}")
        except ValueError as e:
            return _fail(prog, str(e))
    if args.sweep is not None and not args.sweep.is_file():
        return _fail(prog, f"{args.sweep}: no such file")
    try:
        from ..reporting import plot
    except ImportError as e:  # pragma: no cover - depends on the installed extras
        return _fail(prog, f"matplotlib is needed (pip install 'cacheeval[plot]'): {e}")
    formats = tuple(dict.fromkeys(args.formats or plot.FORMATS))
    only = set(args.only or FIGURES)
    pre = args.prefix
    written = []
    if "pr_pchr" in only:
        written.append(plot.pr_pchr(sources, args.out, stem=f"{pre}pr_pchr", formats=formats))
    if "reliability" in only:
        for src in sources:
            if src.kind == PAIR:
                written.append(
                    plot.reliability(
                        src, args.out, formats=formats, stem=f"{pre}reliability_{_slug(src.name)}"
                    )
                )
    if "domain_fhr" in only:  # fmt: skip
        written.append(plot.domain_fhr(sources, args.out, stem=f"{pre}domain_fhr", formats=formats))
    if "subscore_fhr" in only and any(plotdata.subscore_fhr(s) for s in sources):
        written.append(
            plot.subscore_fhr(sources, args.out, stem=f"{pre}subscore_fhr", formats=formats)
        )
    if "kind_results" in only and any(any(plotdata.kind_rates(s)) for s in sources):
        written.append(
            plot.kind_results(sources, args.out, stem=f"{pre}kind_results", formats=formats)
        )
    if "clq" in only:
        written.append(plot.clq(sources, args.out, stem=f"{pre}clq", formats=formats))
    if "sweep" in only and args.sweep is not None:
        written.append(
            plot.threshold_sweep(args.sweep, args.out, stem=f"{pre}gptcache_sweep", formats=formats)
        )
    for fig in written:
        for note in fig.notes:
            print(f"{prog}: note: {note}", file=sys.stderr)
        print(f"{fig.name}: {fig.n_series} series -> {', '.join(str(p) for p in fig.paths)}")
    return 0


def _slug(name: str) -> str:
    from ..reporting.plotdata import slug

    return slug(name)


def _fail(prog: str, message: str) -> int:
    print(f"{prog}: error: {message}", file=sys.stderr)
    return 2
