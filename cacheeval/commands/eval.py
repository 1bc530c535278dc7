"""``cacheeval eval``: run a cache (or a baseline) over the benchmark and write
the report (Markdown, optionally JSON and the predictions file).

``scripts/eval_harness.py`` builds its parser from :func:`add_arguments` and
runs :func:`run`, so both entry points behave identically. The helpers here
(cache selection, row loading, error reporting) are shared with the
``predict`` and ``score`` commands.

Exit codes: 0 success; 1 the cache failed under ``--on-error raise``; 2 a
usage or data error, reported as one line on stderr (``path:LINE: ...`` for
bad data), never a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..schema import DOMAINS, SPLITS

# Shared with the other commands, which import them from here.
from ._running import UsageError as UsageError
from ._running import _one_line as _one_line
from ._running import add_cache_arguments as add_cache_arguments
from ._running import add_probe_argument, output_problem, positive_int, with_cold_start
from ._running import cache_spec as cache_spec
from ._running import hidden_count_message as hidden_count_message
from ._running import parse_cache_args as parse_cache_args

NAME = "eval"
HELP = "Run a cache or a baseline over the benchmark and write a report."

EXIT_OK = 0
EXIT_CACHE_FAILED = 1
EXIT_USAGE = 2
#: The user pressed Ctrl-C (128 + SIGINT, as a shell reports it).
EXIT_INTERRUPTED = 130


# --- shared argument groups -------------------------------------------------------------


def add_rows_arguments(parser: argparse.ArgumentParser, *, labels: bool = True) -> None:
    """--bench, --split, --domain and (optionally) --labels."""
    parser.add_argument("--bench", required=True, type=Path, help="benchmark JSONL file")
    parser.add_argument("--split", choices=SPLITS, help="only rows of this split")
    parser.add_argument(
        "--domain",
        dest="domains",
        action="extend",
        nargs="+",
        choices=DOMAINS,
        metavar="D",
        help="only rows of these domains (repeatable)",
    )
    if labels:
        parser.add_argument(
            "--labels",
            type=Path,
            help="private labels file of the test split (needed to score hidden test rows)",
        )


def add_isolation_arguments(parser: argparse.ArgumentParser) -> None:
    """--in-process, --isolate, --allow-network: where the cache runs (by
    default in a process of its own, see :mod:`cacheeval.run.procpool`)."""
    parser.add_argument(
        "--in-process",
        action="store_true",
        help="run the cache in this process, beside the labels: faster to start, for a cache "
        "you trust only (the report says which mode ran)",
    )
    parser.add_argument(
        "--isolate",
        action="store_true",
        help="run each cache process in the bubblewrap sandbox: the machine read-only, no "
        "network, private/ and the labels file hidden (fails if bwrap cannot run)",
    )
    parser.add_argument(
        "--allow-network",
        action="store_true",
        help="with --isolate: let the cache reach the network",
    )
    parser.add_argument(
        "--ray",
        nargs="?",
        const="local",
        metavar="ADDRESS",
        help="decide the rows on Ray actors: without ADDRESS a local Ray with --workers CPUs "
        "(default: all), with one the cluster there (needs pip install 'cacheeval[scale]')",
    )


def add_scale_arguments(parser: argparse.ArgumentParser) -> None:
    """--workers N, --in-process, --ray [ADDRESS] (see :mod:`cacheeval.run.parallel`).
    By default the cache runs in one process of its own (:mod:`cacheeval.run.procpool`)."""
    parser.add_argument(
        "--workers",
        type=positive_int,
        metavar="N",
        help="decide the rows in N cache processes, each building the cache once and seeing "
        "only the pairs (default: 1; at most 4 per CPU, any number with --ray)",
    )
    add_isolation_arguments(parser)


def hidden_rows_message(rows: Any) -> str:
    """What to do when the selected rows include hidden test rows."""
    return hidden_count_message(sum(1 for r in rows if not r.is_labelled), len(rows))


def prog_name(args: argparse.Namespace, default: str) -> str:
    """The program name for messages (the script's or ``cacheeval <command>``)."""
    prog = getattr(args, "_prog", None)
    return prog if isinstance(prog, str) else default


def fail(prog: str, message: str, code: int = EXIT_USAGE) -> int:
    """Print ``prog: error: message`` on stderr and return ``code``."""
    print(f"{prog}: error: {message}", file=sys.stderr)
    return code


def summary_line(report: Any, out: Path) -> str:
    """One line with the headline numbers of a report."""

    def fmt(v: float | None) -> str:
        return "null" if v is None else f"{v:.3f}"

    h = report.headline
    return (
        f"{report.provenance.cache_name}: {report.provenance.n_rows} rows, "
        f"accuracy {fmt(h.accuracy.value)}, F1 {fmt(h.f1.value)}, FHR {fmt(h.fhr.value)}, "
        f"ADVERSARIAL-FHR {fmt(h.adversarial_fhr.value)} -> {out}"
    )


def write_report(
    report: Any, md_path: Path, json_path: Path | None, view: tuple[Path, str] | None = None
) -> None:
    """Write the Markdown (and JSON) renderings atomically; ``view``: the run's
    per-pair page and the cache's name on it, which the Markdown's counts link to."""
    from ..reporting.report_markdown import render_markdown
    from ..reporting.viewer import ViewLink
    from ..support.jsonio import write_bytes_atomic

    if view is None:  # any report (a replay's too) renders itself
        markdown = report.to_markdown()
    else:
        link = ViewLink(os.path.relpath(view[0], md_path.parent).replace(os.sep, "/"), view[1])
        markdown = render_markdown(report, link)
    write_bytes_atomic(md_path, markdown.encode("utf-8"))
    if json_path is not None:
        write_bytes_atomic(json_path, report.to_json().encode("utf-8"))


def write_view(args: argparse.Namespace, prog: str, predictions: list[Path]) -> list[str]:
    """``--view``: the per-pair page of the run's predictions files (``cacheeval
    view``'s page, every cache side by side); the caches' names on it. Files
    the run does not keep (no --predictions) are named so on the page."""
    from ._pages import write_page

    kept = getattr(args, "predictions_kept", True)
    page_args = argparse.Namespace(
        predictions=predictions,
        bench=args.bench,
        split=args.split,
        domains=args.domains,
        labels=args.labels,
        title=None,
        out=args.view,
        file_labels=None if kept else ["(predictions not kept)"] * len(predictions),
    )
    summary, names = write_page(page_args, prog)
    print(f"{prog}: per-pair page: {summary}", file=sys.stderr)
    return names


def add_report_arguments(parser: argparse.ArgumentParser) -> None:
    """--out (the Markdown report) and --json."""
    parser.add_argument("--out", required=True, type=Path, help="Markdown report to write")
    parser.add_argument("--json", type=Path, help="also write the report as JSON")


def add_failure_arguments(parser: argparse.ArgumentParser) -> None:
    """--list-test-failures (eval and score)."""
    parser.add_argument(
        "--list-test-failures",
        action="store_true",
        help="list failed test-split rows in the report even when their labels come from "
        "--labels (by default they are counted, not listed: the labels are hidden)",
    )


def add_view_argument(parser: argparse.ArgumentParser) -> None:
    """--view (eval and score)."""
    parser.add_argument(
        "--view",
        type=Path,
        metavar="PAGE",
        help="also write the per-pair page (cacheeval view: every pair, every cache of the run) "
        "and link the report's counts of false and missed hits to exactly those pairs on it",
    )


def list_test_failures(args: argparse.Namespace) -> bool:
    """Whether the report lists failed test-split rows: when their labels are
    the rows' own (no --labels file), or when asked."""
    return getattr(args, "labels", None) is None or bool(args.list_test_failures)


def run_report_command(
    args: argparse.Namespace, name: str, make_report: Callable[[argparse.Namespace, str], Any]
) -> int:
    """Run a command that ends in a report: ``make_report(args, prog)`` (None
    when Ctrl-C stopped it) written to --out and --json, then its summary line.
    A usage, data or file error is one line on stderr (exit 2); a failing
    cache under ``--on-error raise`` exits 1."""
    from ..run.harness import CacheCallError

    prog = prog_name(args, f"cacheeval {name}")
    try:
        report = make_report(args, prog)
        if report is not None:
            view = None
            if getattr(args, "view", None) is not None:
                view = (args.view, write_view(args, prog, [args.predictions])[0])
            write_report(report, args.out, args.json, view)
    except UsageError as e:
        return fail(prog, str(e))
    except CacheCallError as e:
        return fail(prog, f"the cache failed: {e}", EXIT_CACHE_FAILED)
    except OSError as e:
        return fail(prog, _one_line(e))
    if report is None:
        return fail(prog, "interrupted; no report written", EXIT_INTERRUPTED)
    print(summary_line(report, args.out))
    return EXIT_OK


# --- the command --------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ..baselines import BASELINES
    from ._several import add_several_arguments

    add_rows_arguments(parser)
    add_several_arguments(
        parser,
        sorted(BASELINES),
        "dotted module or path to a .py file exposing `cache` (or --cache-class)",
    )
    add_cache_arguments(parser, several=True)
    add_scale_arguments(parser)
    add_report_arguments(parser)
    add_failure_arguments(parser)
    parser.add_argument("--predictions", type=Path, help="also write the predictions JSONL")
    add_view_argument(parser)
    add_probe_argument(parser)
    parser.set_defaults(_prog=parser.prog)


def run(args: argparse.Namespace) -> int:
    prog = prog_name(args, f"cacheeval {NAME}")
    clash = output_problem(args, ("out", "json", "predictions", "view"), ("bench", "labels"))
    if clash is not None:
        return fail(prog, clash)
    if getattr(args, "view", None) is None or args.predictions is not None:
        return _run(args, prog)
    # the page is made from the predictions: keep them, in a folder that goes after
    with tempfile.TemporaryDirectory(prefix="cacheeval-eval-") as tmp:
        args.predictions = Path(tmp) / "predictions.jsonl"
        args.predictions_kept = False
        return _run(args, prog)


def _run(args: argparse.Namespace, prog: str) -> int:
    from ._several import cache_choices

    try:
        choices = cache_choices(args)
    except UsageError as e:
        return fail(prog, str(e))
    if len(choices) == 1:
        return run_report_command(choices[0], NAME, _evaluate)
    return run_several(args, prog, choices, _evaluate)


def run_several(
    args: argparse.Namespace,
    prog: str,
    choices: list[argparse.Namespace],
    make_report: Callable[[argparse.Namespace, str], Any],
) -> int:
    """Run each cache in turn (each as a one-cache run: out of process, its
    own report beside --out as ``<out stem>.<cache>.md``, and JSON and
    predictions the same way), then write the comparison to --out (and
    --json). A usage error stops before any cache runs when the options show
    it; a cache that fails stops the rest."""
    from ..reporting.several import to_dict_several, to_markdown_several
    from ..run.harness import CacheCallError
    from ..support.jsonio import dumps_pretty, write_bytes_atomic
    from ._running import run_mode
    from ._several import beside, distinct_names, file_slugs

    slugs = file_slugs([c.cache_label for c in choices])
    try:
        for c, tag in zip(choices, slugs, strict=True):
            cache_spec(c)  # every cache's options checked before the first runs
            run_mode(c)
            c.out, c.json = beside(args.out, tag), beside(args.json, tag)
            c.predictions = beside(args.predictions, tag)
        reports = []
        for c in choices:
            print(f"{prog}: {c.cache_label} ({c.cache_origin})", file=sys.stderr)
            report = make_report(c, prog)
            if report is None:
                return fail(prog, "interrupted; no comparison written", EXIT_INTERRUPTED)
            write_report(report, c.out, c.json)
            print(summary_line(report, c.out))
            reports.append(report)
        if getattr(args, "view", None) is not None:  # one page for all: relink each report
            on_page = write_view(args, prog, [c.predictions for c in choices])
            for c, report, page_name in zip(choices, reports, on_page, strict=True):
                write_report(report, c.out, c.json, (args.view, page_name))
        names = distinct_names([r.provenance.cache_name for r in reports])
        by_name = dict(zip(names, reports, strict=True))
        files = {n: _relative(c.out, args.out) for n, c in zip(names, choices, strict=True)}
        write_bytes_atomic(args.out, to_markdown_several(by_name, files).encode("utf-8"))
        if args.json is not None:
            jfiles = {n: _relative(c.json, args.json) for n, c in zip(names, choices, strict=True)}
            data = to_dict_several(by_name, jfiles)
            write_bytes_atomic(args.json, dumps_pretty(data).encode("utf-8"))
    except UsageError as e:
        return fail(prog, str(e))
    except CacheCallError as e:
        return fail(prog, f"the cache failed: {e}", EXIT_CACHE_FAILED)
    except OSError as e:
        return fail(prog, _one_line(e))
    print(f"{len(reports)} caches compared -> {args.out}")
    return EXIT_OK


def _relative(path: Path, to: Path) -> str:
    """``path`` as a link from the file ``to`` (they share a folder: its name)."""
    return path.name if path.parent == to.parent else str(path)


def _evaluate(args: argparse.Namespace, prog: str) -> Any:
    """Stream the labelled rows through the cache, scoring each prediction as
    it comes back (and writing it, with --predictions); the report (not yet
    written), or None when Ctrl-C stopped the run."""
    from dataclasses import replace

    from ..reporting.report import utc_now
    from ..results.columns import ScoreColumns
    from ..results.predictions import PredictionsWriter, make_header
    from ..support.jsonio import sha256_file
    from ..support.progress import terminal_progress
    from ._running import LabelledRows, interrupted_message, started_cache, stream_rows

    selected = LabelledRows(stream_rows(args, labels=args.labels), args.labels, args.bench)
    rows = selected.start()
    sha = sha256_file(args.bench)
    created = utc_now()
    columns = ScoreColumns(list_test_failures=list_test_failures(args))
    writer: PredictionsWriter | None = None
    bar = terminal_progress()
    try:
        with started_cache(args) as cache:
            header = make_header(
                cache_name=cache.name,
                created=created,
                cache_args=cache.kwargs,
                dataset_sha256=sha,
                split=args.split,
                domains=args.domains,
                cost_per_call_usd=cache.prices,
                cache_ref=cache.ref,
            )
            if args.predictions is not None:
                writer = PredictionsWriter(args.predictions, header)
            for pred in cache.predictor.run(rows, progress=bar):
                truth = selected.truth.popleft()
                if truth[0] != pred.id:
                    raise AssertionError(f"prediction {pred.id} came back for row {truth[0]}")
                columns.add(*truth[1:5], pred, subscore=truth[5], kind=truth[6])
                columns.failures.add(truth[7], pred)
                if writer is not None:
                    writer.write(pred)
    except KeyboardInterrupt as stop:
        if bar is not None:
            bar.finish()
        if writer is None:
            return None
        for pred in getattr(stop, "predictions", []):
            writer.write(pred)
        writer.commit_partial(replace(header, split=selected.split(args.split)))
        print(interrupted_message(prog, writer.count, args.predictions), file=sys.stderr)
        return None
    except BaseException:
        if writer is not None:
            writer.discard()
        raise
    if bar is not None:
        bar.finish()
    split = selected.split(args.split)
    try:
        report = _build(args, prog, selected, columns, cache, (sha, split, created))
        report = with_cold_start(args, prog, report, cache.predictor.prepare_times())
    except BaseException:
        if writer is not None:
            writer.discard()  # no report: no file that looks like a finished run
        raise
    if writer is not None:
        writer.commit(replace(header, split=split))
    return report


def _build(
    args: argparse.Namespace,
    prog: str,
    selected: Any,
    columns: Any,
    cache: Any,
    run: tuple[str, str | None, str],
) -> Any:
    """The report of a finished ``eval`` run (built before its predictions
    file is put in place, so a failure here leaves neither); ``run`` is the
    dataset's sha256, the split and the creation time."""
    from ..reporting.report import IdCheck, build_report_from_columns, make_provenance

    sha, split, created = run
    if selected.hidden:
        print(
            f"{prog}: note: leaving out {selected.hidden} hidden test rows without labels "
            "(pass --labels to score them)",
            file=sys.stderr,
        )
    provenance = make_provenance(
        n_rows=len(columns),
        cache_name=cache.name,
        cache_args=cache.kwargs,
        cache_ref=cache.ref,
        dataset_path=str(args.bench),
        dataset_sha256=sha,
        split=split,
        domains=args.domains,
        created=created,
        hidden_rows_skipped=selected.hidden,
        run_mode=cache.run_mode,
    )
    return build_report_from_columns(
        columns, provenance=provenance, ids=IdCheck(0, (), 0, ()), cost_per_call_usd=cache.prices
    )
