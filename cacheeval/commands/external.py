"""``cacheeval external``: grade a cache on labelled pair files that CacheEval did
not write (your own downloads of QQP, PAWS, MRPC, SemEval STS, or any file in
the ``import-pairs`` formats), next to its CacheEval result, with the MiniLM
cosine's recall at the cache's own FHR and ROC-AUC on every set.

    cacheeval external quora_dev.tsv --format qqp --cache-module my_cache.py \\
        --bench cachebench.jsonl --split dev --out external.md --json external.json
    cacheeval external sts.tsv --format sts --hit-min 4 --miss-max 2 --baseline exact_match \\
        --out external.md

Every set is also reported on its pairs whose numbers and names agree
(:func:`cacheeval.benches.external.details_agree`), where a paraphrase label and a cache
label should coincide. Every gap carries a 95% interval from a paired bootstrap
over the set's pairs (``--resamples``, 0 for none). See
:mod:`cacheeval.benches.pair_formats` for the layouts and :mod:`cacheeval.benches.external` for
the figures. Exit codes: 0 written; 1 the cache
failed under ``--on-error raise``; 2 bad input (``file:LINE: what is wrong``) or
usage.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import Any

NAME = "external"
HELP = (
    "Grade a cache on labelled pair files in public layouts (qqp, paws, mrpc, sts) or the "
    "import-pairs formats, beside CacheEval, against the MiniLM cosine's recall at the same FHR."
)
#: The reference cache: the plain MiniLM cosine (needs the adapters/ package).
DEFAULT_REFERENCE = "adapters.cosine_baseline:MiniLMCosine"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ..benches.pair_formats import FORMATS, PairFileSpec
    from ..schema import DOMAINS, SPLITS
    from ._running import add_label_arguments, add_resamples_argument
    from .eval import add_cache_arguments

    d = PairFileSpec()
    parser.add_argument("files", nargs="+", type=Path, metavar="FILE", help="labelled pair files")
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default="auto",
        help="layout of every FILE (default auto: from its header or extension)",
    )
    add_label_arguments(parser.add_argument_group("import-pairs formats (csv, tsv, jsonl)"))
    s = parser.add_argument_group("SemEval STS (score<TAB>s1<TAB>s2)")
    s.add_argument("--hit-min", type=float, default=d.hit_min, help="score >= this is HIT")
    s.add_argument("--miss-max", type=float, default=d.miss_max, help="score <= this is MISS")
    parser.add_argument("--domain", choices=DOMAINS, default=d.domain, help="domain of every row")
    parser.add_argument(
        "--max-pairs",
        type=int,
        default=d.max_pairs,
        help="sample a larger file down to this many pairs (seeded)",
    )
    parser.add_argument("--seed", type=int, default=d.seed, help="seed of that sample")
    from ..baselines import BASELINES
    from ._several import add_several_arguments

    add_several_arguments(
        parser,
        sorted(BASELINES),
        "dotted module or path to a .py file exposing `cache` (or --cache-class)",
    )
    add_cache_arguments(parser, several=True)
    parser.add_argument(
        "--in-process",
        action="store_true",
        help="run the cache in this process, beside the labels (a cache you trust only; "
        "default: a process of its own)",
    )
    parser.add_argument(
        "--reference",
        default=DEFAULT_REFERENCE,
        metavar="MOD:CLS",
        help=f"reference cache giving the score to compare with (default {DEFAULT_REFERENCE})",
    )
    parser.add_argument("--no-reference", action="store_true", help="grade without a reference")
    add_resamples_argument(parser, "the gap intervals")
    parser.add_argument("--bootstrap-seed", type=int, default=0, help="seed of the resamples")
    b = parser.add_argument_group("the CacheEval result beside them (optional)")
    b.add_argument("--bench", type=Path, help="benchmark JSONL to grade the cache on as well")
    b.add_argument("--labels", type=Path, help="private labels file (for the test split)")
    b.add_argument("--split", choices=SPLITS, help="only rows of this split")
    parser.add_argument("--out", required=True, type=Path, help="Markdown report to write")
    parser.add_argument("--json", type=Path, help="also write the report as JSON")
    parser.set_defaults(_prog=parser.prog)  # fmt: skip


def load_sets(args: argparse.Namespace) -> list[Any]:
    """The labelled sets the options name: every file, then CacheEval's rows."""
    from ..benches.external import LabelledSet, from_pair_file
    from ..benches.pair_formats import PairFileSpec, read_pair_file
    from ._running import LabelledRows, UsageError, _one_line, stream_rows

    spec = PairFileSpec(
        format=args.format, text_a=args.text_a, text_b=args.text_b, label=args.label,
        positive=args.positive, negative=args.negative, hit_min=args.hit_min,
        miss_max=args.miss_max, domain=args.domain, max_pairs=args.max_pairs, seed=args.seed,
    )  # fmt: skip
    problems = spec.problems()
    if problems:
        raise UsageError("; ".join(problems))
    sets = []
    for path in args.files:
        if not path.is_file():
            raise UsageError(f"{path}: no such file")
        try:
            sets.append(from_pair_file(read_pair_file(path, spec)))
        except UnicodeDecodeError as e:
            raise UsageError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None
        except (OSError, ValueError) as e:  # JsonlError: "file:LINE: ..."
            raise UsageError(_one_line(e)) from None
    if args.bench is not None:
        args.domains = None
        labelled = LabelledRows(stream_rows(args, labels=args.labels), args.labels, args.bench)
        rows = list(labelled.start())
        if labelled.hidden:
            print(
                f"{prog_of(args)}: note: leaving out {labelled.hidden} hidden test rows "
                "without labels (pass --labels to score them)",
                file=sys.stderr,
            )
        name = f"CacheEval {args.split or 'all'}"
        info = {"format": "cachebench", "pairs": len(rows), "positives": sum(r.y for r in rows)}
        sets.append(LabelledSet(name, tuple(rows), info))
    return sets


def prog_of(args: argparse.Namespace) -> str:
    prog = getattr(args, "_prog", None)
    return prog if isinstance(prog, str) else f"cacheeval {NAME}"


def load_reference(spec: str) -> Any:
    from ..run.harness import CacheLoadError, load_cache
    from .eval import UsageError

    module, _, cls = spec.partition(":")
    try:
        return load_cache(module, cls or None)
    except CacheLoadError as e:
        raise UsageError(f"--reference {spec}: {e} (or pass --no-reference)") from None


def summary(e: Any, reference: str) -> str:
    """One line per set: the cache's operating point and its gaps to the reference."""
    from ..benches.external import format_gap

    def f(x: float | None) -> str:
        return "n/a" if x is None else f"{x:.3f}"

    where = f"{e.set}: {e.subset}" if e.subset else e.set
    return (
        f"{where}: FHR {f(e.fhr)} recall {f(e.recall)} ROC-AUC {f(e.roc_auc)} | {reference}: "
        f"recall at the same FHR {f(e.ref_recall_at_fhr)}, ROC-AUC {f(e.ref_roc_auc)} | "
        f"gaps: recall {format_gap(e.recall_gap, e.recall_gap_ci)}, "
        f"AUC {format_gap(e.auc_gap, e.auc_gap_ci)}"
    )


def described_name(spec: Any) -> str:
    """The name a cache gives itself, asked of a cache process (so the cache
    is never built here)."""
    from ..run.parallel import Predictor

    predictor = Predictor(spec, workers=1)
    try:
        return predictor.start().name
    finally:
        predictor.abort()


def run(args: argparse.Namespace) -> int:
    from ..benches.external import DEFAULT_SLICES, grade
    from ..reporting.report import utc_now
    from ..run.harness import CacheCallError, CacheLoadError, cache_name_of
    from ._running import cache_spec, output_problem
    from ._several import cache_choices, distinct_names
    from .eval import EXIT_CACHE_FAILED, EXIT_OK, UsageError, _one_line, fail

    prog = prog_of(args)
    clash = output_problem(args, ("out", "json"), ("files", "bench", "labels"), ("files",))
    if clash is not None:
        return fail(prog, clash)
    try:
        choices = cache_choices(args)
        sets = load_sets(args)
        caches: dict[str, Any] = {}
        names = []
        for choice in choices:
            spec, _, _ = cache_spec(choice)
            try:
                cache = spec.build() if args.in_process else spec
                name = choice.cache_name or (
                    cache_name_of(cache) if args.in_process else described_name(spec)
                )
            except CacheLoadError as e:
                raise UsageError(str(e)) from None
            names.append(name)
            caches[distinct_names(names)[-1]] = cache
        reference = None if args.no_reference else load_reference(args.reference)
        report = grade(
            caches,
            sets,
            reference=reference,
            reference_name=cache_name_of(reference) if reference is not None else "reference",
            on_error=args.on_error,
            progress=lambda msg: print(f"{prog}: {msg}", file=sys.stderr),
            slices=DEFAULT_SLICES,
            resamples=args.resamples,
            seed=args.bootstrap_seed,
            in_process=args.in_process,
        )
        report = dataclasses.replace(report, created=utc_now())
        _write(args, report, list(caches))
    except UsageError as e:
        return fail(prog, str(e))
    except CacheCallError as e:
        return fail(prog, f"the cache failed: {e}", EXIT_CACHE_FAILED)
    except OSError as e:
        return fail(prog, _one_line(e))
    for item in report.entries:
        if item.cache in caches:
            line = summary(item, report.reference)
            print(f"{item.cache} on {line}" if len(caches) > 1 else line)
    print(f"{prog}: wrote {args.out}", file=sys.stderr)
    return EXIT_OK


def _write(args: argparse.Namespace, report: Any, names: list[str]) -> None:
    """One cache: its report to --out (and --json). Several: each cache's own
    report beside --out (``<stem>.<cache>.md``, the reference's entries
    included) and to --out the report of them all, led by a table of the
    caches side by side."""
    from ..benches.external import side_by_side_table
    from ..support.jsonio import dumps_pretty, write_bytes_atomic
    from ._several import beside, file_slugs

    def put(out: Path | None, js: Path | None, rep: Any, text: str) -> None:
        if out is not None:
            write_bytes_atomic(out, text.encode("utf-8"))
        if js is not None:
            write_bytes_atomic(js, dumps_pretty(rep.to_dict()).encode("utf-8"))

    if len(names) == 1:
        put(args.out, args.json, report, report.to_markdown())
        return
    for name, tag in zip(names, file_slugs(names), strict=True):
        keep = tuple(e for e in report.entries if e.cache == name or e.is_reference)
        own = dataclasses.replace(report, entries=keep)
        put(beside(args.out, tag), beside(args.json, tag), own, own.to_markdown())
    md = report.to_markdown(title=f"External validity: {len(names)} caches")
    side = ["## Caches side by side", "", *side_by_side_table(report.entries)]
    head, _, rest = md.partition("\n\n")
    put(args.out, args.json, report, "\n\n".join([head, "\n".join(side), rest]))
