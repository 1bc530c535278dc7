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
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..schema import DOMAINS, SPLITS

NAME = "eval"
HELP = "Run a cache or a baseline over the benchmark and write a report."

EXIT_OK = 0
EXIT_CACHE_FAILED = 1
EXIT_USAGE = 2
#: The user pressed Ctrl-C (128 + SIGINT, as a shell reports it).
EXIT_INTERRUPTED = 130

_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class UsageError(Exception):
    """A problem with the command line or its inputs: exit 2 with one line."""


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


def add_cache_arguments(parser: argparse.ArgumentParser) -> None:
    """--baseline | --cache-module [--cache-class] [--cache-arg ...], --cache-name,
    --on-error, --timeout-ms."""
    from ..baselines import BASELINES

    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--baseline", choices=sorted(BASELINES), help="a reference cache")
    which.add_argument(
        "--cache-module",
        metavar="MOD",
        help="dotted module or path to a .py file exposing `cache` (or --cache-class)",
    )
    parser.add_argument("--cache-class", metavar="CLS", help="class in the module to instantiate")
    parser.add_argument(
        "--cache-arg",
        dest="cache_args",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="constructor argument (VALUE parsed as JSON when it parses, else a string)",
    )
    parser.add_argument("--cache-name", help="name shown in the report (default: the cache's)")
    parser.add_argument(
        "--on-error",
        choices=("miss", "raise"),
        default="miss",
        help="a failing call is scored MISS (default) or aborts the run",
    )
    parser.add_argument(
        "--timeout-ms",
        type=_positive_float,
        metavar="N",
        help="abandon a call after N ms (scored MISS, reported as a timeout)",
    )


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number: {text!r}")
    return value


def parse_cache_args(items: list[str]) -> dict[str, Any]:
    """``KEY=VALUE`` strings -> kwargs; VALUE is JSON when it parses, else a string."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not _KEY.match(key):
            raise UsageError(f"--cache-arg {item!r}: expected KEY=VALUE with an identifier KEY")
        if key in out:
            raise UsageError(f"--cache-arg {key} given twice")
        try:
            out[key] = json.loads(raw)
        except json.JSONDecodeError:
            out[key] = raw
    return out


@dataclass(frozen=True, slots=True)
class ResolvedCache:
    """A cache built from the command-line options, and how it was built."""

    cache: Any
    name: str
    kwargs: dict[str, Any]
    #: ``module:Class`` (or ``path/to/file.py:Class``) for the provenance.
    ref: str


def resolve_cache(args: argparse.Namespace) -> ResolvedCache:
    """The cache the parsed options name, with its name, arguments and source."""
    from ..baselines import make_baseline
    from ..harness import CacheLoadError, cache_name_of, cache_ref_of, load_cache

    kwargs = parse_cache_args(args.cache_args)
    if args.baseline is not None:
        if args.cache_class or kwargs:
            raise UsageError("--cache-class/--cache-arg apply to --cache-module, not --baseline")
        cache = make_baseline(args.baseline)
        name = args.cache_name or cache_name_of(cache)
        return ResolvedCache(cache, name, {}, cache_ref_of(cache))
    try:
        cache = load_cache(args.cache_module, args.cache_class, kwargs)
    except CacheLoadError as e:
        raise UsageError(str(e)) from None
    ref = f"{args.cache_module}:{args.cache_class or 'cache'}"
    return ResolvedCache(cache, args.cache_name or cache_name_of(cache), kwargs, ref)


def write_partial(path: Path, interrupted: Any, header_args: dict[str, Any], prog: str) -> None:
    """Write the predictions an interrupted run made, marked incomplete."""
    from ..predictions import make_header, write_predictions

    header = make_header(**header_args, complete=False)
    write_predictions(path, header, interrupted.predictions)
    print(
        f"{prog}: interrupted after {len(interrupted.predictions)} of {interrupted.total} rows; "
        f"partial predictions (marked incomplete) -> {path}",
        file=sys.stderr,
    )


def load_rows(args: argparse.Namespace, *, split: str | None = None, domains: Any = None) -> Any:
    """Load the benchmark rows the options select (data errors -> UsageError)."""
    from ..dataset import load_bench

    labels = getattr(args, "labels", None)
    try:
        rows = load_bench(
            args.bench,
            split=split if split is not None else args.split,
            domains=domains if domains is not None else args.domains,
            labels_path=labels,
        )
    except (OSError, ValueError) as e:  # JsonlError is a ValueError: path:LINE: ...
        raise UsageError(_one_line(e)) from None
    if not rows:
        raise UsageError(f"{args.bench}: no rows match the --split/--domain filters")
    return rows


def _one_line(e: BaseException) -> str:
    if isinstance(e, OSError) and e.filename is not None:
        return f"{e.filename}: {e.strerror or type(e).__name__}"
    text = str(e).strip().splitlines()
    return text[0] if text else type(e).__name__


def hidden_rows_message(rows: Any) -> str:
    """What to do when the selected rows include hidden test rows."""
    hidden = sum(1 for r in rows if not r.is_labelled)
    return (
        f"{hidden} of {len(rows)} selected rows are hidden test rows without labels: pass the "
        "labels file with --labels, or pick a labelled split with --split train|dev "
        "(`cacheeval predict` writes test-split predictions for grading)"
    )


def drop_hidden(rows: Any, args: argparse.Namespace, prog: str) -> tuple[Any, list[str]]:
    """Leave out hidden test rows (no labels) so the rest can be scored.

    Returns (labelled rows, ids left out) and notes the omission on stderr.
    An error when nothing labelled remains, or when a labels file was given
    but does not cover every selected test row.
    """
    hidden = [r.id for r in rows if not r.is_labelled]
    if not hidden:
        return rows, []
    if getattr(args, "labels", None) is not None:
        raise UsageError(
            f"{args.labels}: no labels for {len(hidden)} selected test row(s), first {hidden[0]}"
        )
    labelled = [r for r in rows if r.is_labelled]
    if not labelled:
        raise UsageError(hidden_rows_message(rows))
    print(
        f"{prog}: note: leaving out {len(hidden)} hidden test rows without labels "
        "(pass --labels to score them)",
        file=sys.stderr,
    )
    return labelled, hidden


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


def write_report(report: Any, md_path: Path, json_path: Path | None) -> None:
    """Write the Markdown (and JSON) renderings atomically."""
    from ..jsonio import write_bytes_atomic

    write_bytes_atomic(md_path, report.to_markdown().encode("utf-8"))
    if json_path is not None:
        write_bytes_atomic(json_path, report.to_json().encode("utf-8"))


# --- the command --------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_rows_arguments(parser)
    add_cache_arguments(parser)
    parser.add_argument("--out", required=True, type=Path, help="Markdown report to write")
    parser.add_argument("--json", type=Path, help="also write the report as JSON")
    parser.add_argument("--predictions", type=Path, help="also write the predictions JSONL")
    parser.set_defaults(_prog=parser.prog)


def run(args: argparse.Namespace) -> int:
    from ..harness import (
        CacheCallError,
        RunInterrupted,
        SealedRows,
        cost_table,
        predict,
        rows_split,
        score,
    )
    from ..jsonio import sha256_file
    from ..predictions import make_header, write_predictions
    from ..progress import terminal_progress
    from ..report import utc_now

    prog = prog_name(args, f"cacheeval {NAME}")
    try:
        rows, hidden = drop_hidden(load_rows(args), args, prog)
        truth = SealedRows(rows)
        resolved = resolve_cache(args)
        cache, name, kwargs = resolved.cache, resolved.name, resolved.kwargs
        try:
            prices = cost_table(cache)
        except TypeError as e:
            raise UsageError(f"{name}: {e}") from None
        sha = sha256_file(args.bench)
        created = utc_now()
        split = args.split or rows_split(rows)
        header_args = dict(
            cache_name=name,
            created=created,
            cache_args=kwargs,
            dataset_sha256=sha,
            split=split,
            domains=args.domains,
            cost_per_call_usd=prices,
            cache_ref=resolved.ref,
        )
        try:
            preds = predict(
                cache,
                rows,
                on_error=args.on_error,
                timeout_ms=args.timeout_ms,
                progress=terminal_progress(),
            )
        except RunInterrupted as stop:
            if args.predictions is not None:
                write_partial(args.predictions, stop, header_args, prog)
            return fail(prog, "interrupted; no report written", EXIT_INTERRUPTED)
        report = score(
            preds,
            truth.rows(),
            cache_name=name,
            cache_args=kwargs,
            cache_ref=resolved.ref,
            dataset_path=str(args.bench),
            dataset_sha256=sha,
            split=split,
            domains=args.domains,
            cost_per_call_usd=prices,
            created=created,
            hidden_rows_skipped=len(hidden),
        )
        if args.predictions is not None:
            write_predictions(args.predictions, make_header(**header_args), preds)
        write_report(report, args.out, args.json)
    except UsageError as e:
        return fail(prog, str(e))
    except CacheCallError as e:
        return fail(prog, f"the cache failed: {e}", EXIT_CACHE_FAILED)
    except OSError as e:
        return fail(prog, _one_line(e))
    print(summary_line(report, args.out))
    return EXIT_OK
