"""What ``eval``, ``predict`` and ``score`` share to run over a benchmark file
of any length: the selected rows as a stream, the cache started (in this
process or on workers, see :mod:`cacheeval.run.parallel`), and the truth of the
rows in flight; and the options that name a cache (also ``replay``'s and
``external``'s) with their argument types (also ``serve``'s)."""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import Any

from ..results.columns import perturbation_kind
from ..schema import Row, subscore_of

_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class UsageError(Exception):
    """A problem with the command line or its inputs: exit 2 with one line."""


def overwritten_input(
    args: argparse.Namespace,
    outputs: tuple[str, ...],
    inputs: tuple[str, ...],
    positional: tuple[str, ...] = (),
) -> str | None:
    """Why writing would replace one of the run's own inputs (an output option
    naming an input file, which would be lost), else None. ``positional``:
    the inputs given without a flag.

    >>> ns = argparse.Namespace(bench=Path(__file__), out=Path(__file__), json=None)
    >>> overwritten_input(ns, ("out", "json"), ("bench",)).endswith(
    ...     "is the --bench input; write --out somewhere else")
    True
    >>> overwritten_input(ns, ("json",), ("bench",)) is None
    True
    """
    for out_name in outputs:
        out = getattr(args, out_name, None)
        if out is None or not Path(out).exists():
            continue
        for in_name in inputs:
            given = getattr(args, in_name, None)
            paths = given if isinstance(given, list) else [given]  # nargs: a list of files
            if any(p is not None and Path(p).resolve() == Path(out).resolve() for p in paths):
                flag_in, flag_out = (f"--{n.replace('_', '-')} " for n in (in_name, out_name))
                flag_in = "" if in_name in positional else flag_in
                return f"{out}: is the {flag_in}input; write {flag_out}somewhere else"
    return None


def output_problem(
    args: argparse.Namespace,
    outputs: tuple[str, ...],
    inputs: tuple[str, ...],
    positional: tuple[str, ...] = (),
) -> str | None:
    """What is wrong with the output options before any work is done: one that
    is a directory, or one naming an input (:func:`overwritten_input`)."""
    seen: dict[Path, str] = {}
    for out_name in outputs:
        out = getattr(args, out_name, None)
        if out is None:
            continue
        if Path(out).is_dir():
            return f"{out}: Is a directory"
        other = seen.setdefault(Path(out).resolve(), out_name)
        if other != out_name:  # the second write would replace the first
            flags = " and ".join(f"--{n.replace('_', '-')}" for n in (other, out_name))
            return f"{out}: given to both {flags}; give each its own file"
    return overwritten_input(args, outputs, inputs, positional)


def int_at_least(minimum: int, text: str) -> int:
    """A whole number >= ``minimum``, or the argparse error saying what is wrong."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < minimum:
        message = f"must be >= {minimum}" if minimum < 1 else f"must be at least {minimum}"
        raise argparse.ArgumentTypeError(f"{message}: {text!r}")
    return value


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    return int_at_least(1, text)


def non_negative_int(text: str) -> int:
    """An argparse type: a whole number of at least 0."""
    return int_at_least(0, text)


def positive_float(text: str) -> float:
    """An argparse type: a finite number above 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number: {text!r}")
    return value


def add_resamples_argument(parser: argparse.ArgumentParser, what: str) -> None:
    """``--resamples N``: bootstrap resamples behind ``what`` (0: none)."""
    from ..metrics.paired import DEFAULT_RESAMPLES

    parser.add_argument(
        "--resamples",
        type=non_negative_int,
        default=DEFAULT_RESAMPLES,
        help=f"bootstrap resamples behind {what} (default {DEFAULT_RESAMPLES}; 0: none)",
    )


#: The label flags' defaults, the same in every command that reads pair files.
LABEL_DEFAULTS = {"text_a": "text_a", "text_b": "text_b", "label": "label", "positive": "HIT"}


def add_label_arguments(parser: argparse.ArgumentParser | Any) -> None:
    """--text-a, --text-b, --label, --positive, --negative: how a pair file's
    columns and label values are read, with one set of names and defaults for
    ``import-pairs`` and ``external`` alike (``parser`` may be a group)."""
    d = LABEL_DEFAULTS
    parser.add_argument("--text-a", default=d["text_a"], metavar="COL",
                        help=f"column of the first request (default {d['text_a']})")  # fmt: skip
    parser.add_argument("--text-b", default=d["text_b"], metavar="COL",
                        help=f"column of the second request (default {d['text_b']})")  # fmt: skip
    parser.add_argument("--label", default=d["label"], metavar="COL",
                        help=f"column of the label (default {d['label']})")  # fmt: skip
    parser.add_argument(
        "--positive",
        default=d["positive"],
        metavar="VALUE",
        help="label value meaning: serving the first request's answer is right (HIT; "
        f"default {d['positive']})",
    )
    parser.add_argument(
        "--negative",
        metavar="VALUE",
        help="label value meaning MISS; when given, any other value is an error "
        "(default: every value but --positive is MISS)",
    )


def add_cache_arguments(
    parser: argparse.ArgumentParser,
    *,
    shared: bool = False,
    several: bool = False,
    predictions: bool = False,
) -> None:
    """--baseline | --cache-module [--cache-class] [--cache-arg ...], --cache-name;
    for a per-row cache also --on-error and --timeout-ms. ``predictions`` adds
    ``--predictions FILE`` as a third way to name the cache: its saved run (``tune``).

    ``shared`` names a shared cache (``replay``): a baseline of
    :data:`~cacheeval.replay.shared_baselines.SHARED_BASELINES`, and no --on-error
    (``replay`` places its own --timeout-ms, whose help differs). ``several``:
    leave out the options naming the cache, for a command that names several
    with :func:`._several.add_several_arguments`."""
    if not several:
        _add_which_cache(parser, shared=shared, predictions=predictions)
    parser.add_argument(
        "--keyed",
        action="store_true",
        help="put the cache behind the key it should have: never serve across system "
        "prompts, prior turns or tools, nor what the policy tier forbids (adapters.keyed)",
    )
    if shared:
        return
    parser.add_argument(
        "--on-error",
        choices=("miss", "raise"),
        default="miss",
        help="a failing call is scored MISS (default) or aborts the run",
    )
    parser.add_argument(
        "--timeout-ms",
        type=positive_float,
        metavar="N",
        help="abandon a call after N ms (scored MISS, reported as a timeout)",
    )


def _add_which_cache(
    parser: argparse.ArgumentParser, *, shared: bool, predictions: bool = False
) -> None:
    """--baseline | --cache-module [--cache-class] [--cache-arg ...], --cache-name."""
    if shared:
        from ..replay.shared_baselines import SHARED_BASELINES

        baselines = sorted(SHARED_BASELINES)
        module_help = "dotted module or .py file exposing the cache"
        name_help = "name shown in the report"
    else:
        from ..baselines import BASELINES

        baselines = sorted(BASELINES)
        module_help = "dotted module or path to a .py file exposing `cache` (or --cache-class)"
        name_help = "name shown in the report (default: the cache's)"
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--baseline", choices=baselines, help="a reference cache")
    which.add_argument("--cache-module", metavar="MOD", help=module_help)
    if predictions:
        which.add_argument("--predictions", type=Path, metavar="FILE",
                           help="a saved predictions file (eval --predictions, predict) of the "
                           "cache, instead of running it")  # fmt: skip
    parser.add_argument("--cache-class", metavar="CLS", help="class in the module to instantiate")
    parser.add_argument(
        "--cache-arg",
        dest="cache_args",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="constructor argument (VALUE parsed as JSON when it parses, else a string)",
    )
    parser.add_argument("--cache-name", help=name_help)


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


def cache_spec(args: argparse.Namespace) -> tuple[Any, dict[str, Any], str | None]:
    """The :class:`~cacheeval.run.parallel.CacheSpec` the options name, its
    constructor arguments, and the ``module:Class`` the report records (None
    for a baseline: its own class names it)."""
    from ..run.parallel import CacheSpec

    kwargs = parse_cache_args(args.cache_args)
    if args.baseline is not None:
        if args.cache_class or kwargs:
            raise UsageError("--cache-class/--cache-arg apply to --cache-module, not --baseline")
        spec, ref = CacheSpec(baseline=args.baseline), None
    else:
        spec = CacheSpec(args.cache_module, args.cache_class, kwargs)
        ref = f"{args.cache_module}:{args.cache_class or 'cache'}"
    if getattr(args, "keyed", False):
        spec = spec.wrapped_by(KEYED_LOADER)
        ref = f"{ref or args.baseline} behind --keyed"
    return spec, kwargs, ref


#: What ``--keyed`` wraps a cache with (:mod:`adapters.keyed`, named here only).
KEYED_LOADER = "adapters.keyed:load_keyed"
KEYED_SHARED_LOADER = "adapters.keyed:load_keyed_shared"


def _one_line(e: BaseException) -> str:
    if isinstance(e, OSError) and e.filename is not None:
        return f"{e.filename}: {e.strerror or type(e).__name__}"
    text = str(e).strip().splitlines()
    return text[0] if text else type(e).__name__


def hidden_count_message(hidden: int, selected: int) -> str:
    """What to do when ``hidden`` of the ``selected`` rows are hidden test rows."""
    return (
        f"{hidden} of {selected} selected rows are hidden test rows without labels: pass the "
        "labels file with --labels, or pick a labelled split with --split train|dev "
        "(`cacheeval predict` writes test-split predictions for grading)"
    )


def stream_rows(
    args: argparse.Namespace,
    *,
    split: Any = None,
    domains: Any = None,
    labels: Path | None = None,
) -> Iterator[Row]:
    """The rows the options select, read as they are needed; a data error
    (``path:LINE: ...``) surfaces as a :class:`UsageError` when it is reached."""
    from ..dataset import iter_bench

    if labels is not None:
        check_labels_file(Path(args.bench), labels)
    try:
        yield from iter_bench(
            args.bench,
            split=split if split is not None else args.split,
            domains=domains if domains is not None else args.domains,
            labels_path=labels,
        )
    except (OSError, ValueError) as e:  # JsonlError is a ValueError: path:LINE: ...
        raise UsageError(_one_line(e)) from None


def check_labels_file(bench: Path, labels: Path) -> None:
    """When ``bench`` is the benchmark a build manifest describes (its sha256
    is the manifest's ``dataset.sha256``; the manifest sits in ``domains/``
    beside it), ``labels`` must be that build's labels file, byte for byte: a
    label changed by hand would change the scores. Other benches pass."""
    from ..support.jsonio import sha256_file

    manifest = bench.parent / "domains" / "manifest.json"
    try:
        data = json.loads(manifest.read_text(encoding="utf-8"))
        want_bench = data["dataset"]["sha256"]
        want_labels = data["test_labels"]["sha256"]
    except (OSError, ValueError, KeyError, TypeError):
        return  # no manifest for this bench
    try:
        if sha256_file(bench) != want_bench:
            return
        got = sha256_file(labels)
    except OSError as e:
        raise UsageError(_one_line(e)) from None
    if got != want_labels:
        raise UsageError(
            f"{labels}: sha256 {got[:12]}... is not the {manifest} test_labels.sha256 "
            f"{want_labels[:12]}...: not this build's labels file (rebuild it with "
            "python -m scripts.assemble)"
        )


def no_rows(bench: Path | str) -> UsageError:
    """The error for a run that selected no rows: an empty file is named as such
    (``path:1``), not blamed on the filters."""
    try:
        with open(bench, "rb") as f:
            empty = not any(line.strip() for line in f)
    except OSError:
        empty = False
    if empty:
        return UsageError(f"{bench}:1: no rows in the file (it is empty)")
    return UsageError(f"{bench}: no rows match the --split/--domain filters")


def non_empty(rows: Iterator[Row], bench: Path) -> Iterator[Row]:
    """``rows`` after checking there is at least one."""
    first = next(rows, None)
    if first is None:
        raise no_rows(bench)
    return chain([first], rows)


class SplitTracker:
    """Passes rows through, noting their splits (for the one split a run's
    rows share, recorded when no --split was given)."""

    def __init__(self) -> None:
        self.splits: set[str] = set()

    def through(self, rows: Iterator[Row]) -> Iterator[Row]:
        add = self.splits.add
        for row in rows:
            add(row.split)
            yield row

    def split(self, given: str | None) -> str | None:
        if given is not None:
            return given
        return next(iter(self.splits)) if len(self.splits) == 1 else None


#: The truth of one row: id, 1 for HIT, label, domain, difficulty, sub-score,
#: perturbation kind (stress rows; else None) and the (frozen) row itself, for
#: the report's failure lists.
Truth = tuple[str, int, str | None, str, str | None, str, str | None, Row]


class LabelledRows(SplitTracker):
    """The labelled rows of a stream, for ``eval``: hidden test rows (no
    label) are left out and counted, or, when a labels file was given, are an
    error. Each row's truth is sealed in an immutable tuple before the row goes
    on to the cache and waits in :attr:`truth` until its prediction is back."""

    def __init__(self, rows: Iterator[Row], labels: Path | None, bench: Path) -> None:
        super().__init__()
        self._rows = rows
        self._labels = labels
        self._bench = bench
        self.truth: deque[Truth] = deque()
        self.hidden = 0

    def _iter(self) -> Iterator[Row]:
        for row in self._rows:
            if not row.is_labelled:
                if self._labels is not None:
                    missing = 1 + sum(1 for r in self._rows if not r.is_labelled)
                    raise UsageError(
                        f"{self._labels}: no labels for {missing} selected test row(s), "
                        f"first {row.id}"
                    )
                self.hidden += 1
                continue
            self.truth.append(
                (
                    row.id,
                    row.y,
                    row.label,
                    row.domain,
                    row.difficulty,
                    subscore_of(row),
                    perturbation_kind(row),
                    row,
                )
            )
            self.splits.add(row.split)
            yield row

    def start(self) -> Iterator[Row]:
        """The stream, after checking it has a labelled row."""
        it = self._iter()
        first = next(it, None)
        if first is None:
            if self.hidden:
                raise UsageError(hidden_count_message(self.hidden, self.hidden))
            raise no_rows(self._bench)
        return chain([first], it)


@dataclass(frozen=True, slots=True)
class StartedCache:
    """A started :class:`~cacheeval.run.parallel.Predictor` and what the files
    and the report say about its cache."""

    predictor: Any
    name: str
    kwargs: dict[str, Any]
    ref: str
    prices: dict[str, float]
    #: Where the cache runs (:attr:`~cacheeval.reporting.report.Provenance.run_mode`).
    run_mode: str = "process"


def run_mode(args: argparse.Namespace) -> tuple[str, tuple[str, ...]]:
    """Where the options put the cache - ``process`` (default), ``in-process``
    or ``ray`` - and the sandbox prefix of each cache process (``--isolate``)."""
    from ..run.isolate import IsolationError, cache_file_dirs, checked_prefix

    in_process = bool(getattr(args, "in_process", False))
    isolate = bool(getattr(args, "isolate", False))
    ray = getattr(args, "ray", None)
    if in_process and (getattr(args, "workers", None) is not None or ray is not None or isolate):
        raise UsageError("--in-process runs the cache here: no --workers, --ray or --isolate")
    if isolate and ray is not None:
        raise UsageError("--isolate sandboxes local cache processes: it cannot wrap --ray actors")
    if getattr(args, "allow_network", False) and not isolate:
        raise UsageError("--allow-network only loosens --isolate")
    workers = getattr(args, "workers", None)
    if workers is not None and ray is None:  # local processes, all started at once
        from ..support.cpus import too_many_workers

        problem = too_many_workers("--workers", workers)
        if problem is not None:
            raise UsageError(f"{problem} (--ray takes any number)")
    if in_process:
        return "in-process", ()
    if ray is not None:
        return "ray", ()
    if not isolate:
        return "process", ()
    hide = [p for p in (getattr(args, "labels", None),) if p is not None]
    show = cache_file_dirs(getattr(args, "cache_module", None))
    try:
        return "process", tuple(checked_prefix(hide, show, network=args.allow_network))
    except IsolationError as e:
        raise UsageError(str(e)) from None


@contextmanager
def started_cache(args: argparse.Namespace) -> Iterator[StartedCache]:
    """Build the cache the options name (once in each of ``--workers`` cache
    processes, default one; on ``--ray`` actors; or here with ``--in-process``);
    stop it at the end (at once on an error)."""
    from ..run.harness import CacheLoadError
    from ..run.parallel import Predictor

    spec, kwargs, ref = cache_spec(args)
    mode, wrap = run_mode(args)
    workers = args.workers if args.workers is not None else (0 if mode != "process" else 1)
    try:
        cache = spec.build() if mode == "in-process" else spec
        predictor = Predictor(
            cache,
            workers=workers,
            ray=args.ray,
            on_error=args.on_error,
            timeout_ms=args.timeout_ms,
            wrap=wrap,
        )
        info = predictor.start()
    except CacheLoadError as e:
        raise UsageError(str(e)) from None
    name = args.cache_name or info.name
    if info.price_error:
        predictor.abort()
        raise UsageError(f"{name}: {info.price_error}")
    shown_mode = "process, bubblewrap" if wrap else mode
    try:
        yield StartedCache(
            predictor, name, kwargs, ref or info.ref, info.cost_per_call_usd, shown_mode
        )
    except BaseException:
        predictor.abort()
        raise
    predictor.close()


def interrupted_message(prog: str, written: int, path: Path) -> str:
    """The note printed when Ctrl-C left a partial predictions file."""
    return (
        f"{prog}: interrupted after {written} rows; partial predictions "
        f"(marked incomplete) -> {path}"
    )


def add_probe_argument(parser: argparse.ArgumentParser) -> None:
    """``--no-probe``: leave the cold single-call probe out of the report."""
    parser.add_argument(
        "--no-probe",
        action="store_true",
        help="skip the cold probe (a fresh cache process deciding a few new pairs with "
        "nothing prepared, timed for the report's latency section)",
    )


def with_cold_start(
    args: argparse.Namespace, prog: str, report: Any, prepare_ms: list[float] | None
) -> Any:
    """``report`` with what ``prepare()`` cost per row and, unless
    ``--no-probe``, the cold probe of the cache the options name, run out of
    process (in the run's sandbox with ``--isolate``), see :mod:`cacheeval.run.probe`."""
    from ..run.probe import with_cold_start as attach

    if getattr(args, "no_probe", False):
        return attach(report, None, prepare_ms=prepare_ms)
    spec, _, _ = cache_spec(args)
    _, wrap = run_mode(args)
    print(f"{prog}: cold probe of {report.provenance.cache_name} in a fresh process",
          file=sys.stderr)  # fmt: skip
    return attach(report, spec, prepare_ms=prepare_ms, wrap=wrap, timeout_ms=args.timeout_ms)
