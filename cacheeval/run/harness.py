"""Run a cache over benchmark rows and score its decisions.

A cache is a :class:`~cacheeval.cache.Cache`: ``cache(pair) -> Verdict``,
optionally with ``prepare(pairs)``, ``close()``, ``name`` and
``cost_per_call_usd``. The cache is shown only :class:`~cacheeval.schema.Pair`
records (the two requests and an id), each a fresh copy; the labelled rows stay
here, in a truth table the cache never has a reference to.

Three steps: :func:`predict` calls the cache on every pair and records a
:class:`~cacheeval.results.predictions.Prediction` per row (it never needs labels, so
it runs on hidden test rows); :func:`score` joins predictions to labelled rows
by id and computes the :class:`~cacheeval.reporting.report.Report`; :func:`evaluate` is
the two together.

Failure handling (``on_error="miss"``, the default): anything a cache call
raises - any ``BaseException``, ``SystemExit`` and a ``KeyboardInterrupt`` the
cache raised itself included -, a return value that is not a valid
:class:`~cacheeval.schema.Verdict` (wrong type, non-bool ``is_hit``, NaN, a
confidence outside [0, 1], a reserved tier) or a timeout makes that row a MISS
with an ``error`` string, counted and shown in the report; the run goes on.
``on_error="raise"`` stops at the first failure with :class:`CacheCallError`.
Only a real Ctrl-C (SIGINT delivered to the process while the harness runs on
the main thread) stops a run: :func:`predict` then raises
:class:`RunInterrupted`, which carries the predictions made so far.

Timeouts (``timeout_ms``): each call then runs on a worker thread and the
harness waits at most ``timeout_ms``. Python cannot kill a thread, so a call
that overruns is *abandoned*: its worker is a daemon thread (it never blocks
interpreter exit), it is replaced by a fresh worker for the next row, and its
late result is discarded. An abandoned call may still be running while later
rows (and ``close()``) run, so a cache used with a timeout must tolerate that;
a call that spins the CPU keeps using it. Without ``timeout_ms`` calls run on
the calling thread with no extra overhead.
"""

from __future__ import annotations

import copy
import hashlib
import importlib
import importlib.util
import json
import math
import os
import queue
import re
import signal
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..cache import Cache
from ..metrics.ranking import DEFAULT_ALPHAS
from ..reporting.report import MAX_IDS, IdCheck, Report, build_report, make_provenance
from ..results.predictions import Prediction
from ..schema import MAX_ERROR_CHARS, Pair, Row
from ..support.jsonio import dumps, sha256_file
from ..support.progress import ProgressCallback
from .wire import plain_verdict

OnError = Literal["miss", "raise"]


#: Module-name prefix of caches imported from a ``.py`` file by :func:`load_cache`.
_USER_MODULE_PREFIX = "cacheeval_user_"


class CacheCallError(RuntimeError):
    """A cache call failed under ``on_error="raise"`` (or ``prepare`` failed)."""


class CacheLoadError(ValueError):
    """A cache could not be loaded or constructed from a module/class spec."""


class UnlabelledRowsError(ValueError):
    """Scoring needs labels but some rows are hidden test rows."""


class RunInterrupted(KeyboardInterrupt):
    """The user pressed Ctrl-C during :func:`predict`.

    ``predictions`` holds the rows decided before the interrupt, in order;
    ``total`` is how many rows the run had.
    """

    def __init__(self, predictions: list[Prediction], total: int) -> None:
        super().__init__(f"interrupted after {len(predictions)} of {total} rows")
        self.predictions = predictions
        self.total = total


# --- binding a cache ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BoundCache:
    """The pieces of a cache the harness uses."""

    call: Callable[[Pair], Any]
    prepare: Callable[[Sequence[Pair]], Any] | None
    close: Callable[[], Any] | None
    name: str
    cost_per_call_usd: dict[str, float]


def cache_ref_of(cache: object) -> str:
    """Where a cache comes from, as ``module:QualName`` (a ``.py`` file's path
    for a cache loaded from a file), for the report's provenance.

    >>> from cacheeval.baselines import ExactMatch
    >>> cache_ref_of(ExactMatch())
    'cacheeval.baselines:ExactMatch'
    """
    # functions and classes name themselves; an instance is named by its class
    target = cache if hasattr(cache, "__qualname__") else type(cache)
    qualname = str(getattr(target, "__qualname__", "?"))
    module_name = str(getattr(target, "__module__", "") or "")
    module = sys.modules.get(module_name)
    file = getattr(module, "__file__", None)
    if module_name.startswith(_USER_MODULE_PREFIX) and isinstance(file, str):
        module_name = file
    return f"{module_name}:{qualname}"


def cache_name_of(cache: Any) -> str:
    """``cache.name`` if it is a string, else the function or class name."""
    name = getattr(cache, "name", None)
    if isinstance(name, str) and name:
        return name
    fn_name = getattr(cache, "__name__", None)
    if isinstance(fn_name, str):
        return fn_name
    return type(cache).__name__


def cache_version(cache: Any) -> str:
    """The cache's ``version`` attribute, else its module's ``__version__``,
    else the version of the installed distribution its top package comes
    from, else ``"unknown"``."""
    import importlib.metadata

    for value in (getattr(cache, "version", None),):
        if isinstance(value, str) and value:
            return value
    mod_name = getattr(type(cache), "__module__", None) or getattr(cache, "__module__", None)
    mod = sys.modules.get(mod_name or "")
    value = getattr(mod, "__version__", None)
    if isinstance(value, str) and value:
        return value
    top = (mod_name or "").split(".")[0]
    try:
        return importlib.metadata.version(top)
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return "unknown"


def cost_table(cache: Any) -> dict[str, float]:
    """The cache's ``cost_per_call_usd`` (tier -> USD per call), checked; {} if absent."""
    raw = getattr(cache, "cost_per_call_usd", None)
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise TypeError("cost_per_call_usd must be a mapping of tier -> USD per call")
    out: dict[str, float] = {}
    for tier, price in raw.items():
        ok = isinstance(price, (int, float)) and not isinstance(price, bool)
        if not isinstance(tier, str) or not ok or not math.isfinite(price) or price < 0:
            raise TypeError(f"cost_per_call_usd[{tier!r}] must be a finite price >= 0")
        out[tier] = float(price)
    return out


def bind_cache(cache: Cache) -> BoundCache:
    """Find the call, optional ``prepare``/``close``, name and prices of ``cache``."""
    if not callable(cache):
        raise TypeError(f"{type(cache).__name__} is not a cache: need a callable Pair -> Verdict")
    call = cache
    prepare = getattr(cache, "prepare", None)
    close = getattr(cache, "close", None)
    return BoundCache(
        call=call,
        prepare=prepare if callable(prepare) else None,
        close=close if callable(close) else None,
        name=cache_name_of(cache),
        cost_per_call_usd=cost_table(cache),
    )


# --- one call -----------------------------------------------------------------------


def describe_exception(e: BaseException) -> str:
    """``"TypeName: first line of the message"`` (at most :data:`MAX_ERROR_CHARS`).

    Never raises: a cache may raise an exception whose ``__str__`` (or whose
    type's name) is itself broken.

    >>> describe_exception(ValueError("bad\\nsecond line"))
    'ValueError: bad'
    >>> class Nasty(Exception):
    ...     def __str__(self): raise RuntimeError("no")
    >>> describe_exception(Nasty())
    'Nasty: (message could not be read)'
    """
    try:
        name = str(type(e).__name__)
    except BaseException:  # a hostile metaclass
        name = "BaseException"
    try:
        text = str(e).strip().splitlines()
        message = text[0] if text else "(no message)"
    except BaseException:
        message = "(message could not be read)"
    out = f"{name}: {message}"
    return out if len(out) <= MAX_ERROR_CHARS else out[: MAX_ERROR_CHARS - 3] + "..."


def verdict_problem(value: Any) -> str | None:
    """Why a cache's return value cannot be scored (None when it is a usable Verdict)."""
    plain = plain_verdict(value)
    return plain if isinstance(plain, str) else None


def _to_prediction(row_id: str, value: Any, latency_ms: float) -> Prediction:
    """A successful call's Prediction, or an ``InvalidVerdict`` error row. The
    verdict's fields are read once, as plain values (:func:`plain_verdict`):
    what was checked is what is scored."""
    plain = plain_verdict(value)
    if isinstance(plain, str):
        return _failed(row_id, "error", f"InvalidVerdict: {plain}", latency_ms)
    is_hit, confidence, score, tier = plain
    return Prediction(row_id, is_hit, confidence, score, tier, latency_ms, None)


def _failed(row_id: str, tier: str, error: str, latency_ms: float | None) -> Prediction:
    return Prediction(row_id, False, None, None, tier, latency_ms, error)


class _Worker:
    """A daemon thread that runs calls one at a time (used for timeouts)."""

    def __init__(self, call: Callable[[Pair], Any]) -> None:
        self._call = call
        self._inbox: queue.SimpleQueue[Pair | None] = queue.SimpleQueue()
        self._outbox: queue.SimpleQueue[tuple[Any, BaseException | None, int]] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._loop, name="cacheeval-call", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while True:
            pair = self._inbox.get()
            if pair is None:
                return
            t0 = time.perf_counter_ns()
            try:
                value, exc = self._call(pair), None
            except BaseException as e:  # handed back to the harness thread
                value, exc = None, e
            self._outbox.put((value, exc, time.perf_counter_ns() - t0))

    def run(self, pair: Pair, timeout_s: float) -> tuple[Any, BaseException | None, int]:
        """The call's (value, exception, ns); raises ``queue.Empty`` on timeout."""
        self._inbox.put(pair)
        return self._outbox.get(timeout=timeout_s)

    def stop(self) -> None:
        """Ask the thread to exit once its current call (if any) returns."""
        self._inbox.put(None)


# --- predict / score / evaluate --------------------------------------------------------


class _SigintWatch:
    """Tells a real Ctrl-C from a ``KeyboardInterrupt`` a cache raised itself.

    While active on the main thread it installs a SIGINT handler that records
    the signal before raising ``KeyboardInterrupt`` as Python's default does.
    Off the main thread no signal can reach the running code, so every
    ``KeyboardInterrupt`` there comes from the cache. A process that ignores
    SIGINT (``nohup``, a background job of a non-interactive shell) keeps
    ignoring it: nothing is installed then.
    """

    def __init__(self) -> None:
        self.fired = False
        self._previous: Any = None
        self._installed = False

    def _handler(self, signum: int, frame: Any) -> None:
        self.fired = True
        raise KeyboardInterrupt

    def __enter__(self) -> _SigintWatch:
        if threading.current_thread() is threading.main_thread():
            try:
                if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
                    self._previous = signal.signal(signal.SIGINT, self._handler)
                    self._installed = True
            except ValueError:  # not the main interpreter
                pass
        return self

    def __exit__(self, *exc: object) -> None:
        if self._installed:
            signal.signal(signal.SIGINT, self._previous)


def as_pairs(items: Iterable[Row | Pair], start: int = 1) -> list[Pair]:
    """What the cache may see of each item, in order: the two requests (fresh
    copies) under an opaque id ``p1``, ``p2``, ... - row ids name the domain
    (``cb-creative-0003``), and two domains are all-MISS. ``start`` is the first
    number (a block cut from a longer run keeps the run's numbering)."""
    return [_shown_pair(item, i) for i, item in enumerate(items, start)]


def _shown_pair(item: Row | Pair, index: int) -> Pair:
    """:func:`as_pairs` for one item (``index`` 1-based), a fresh copy for a call."""
    if isinstance(item, Row):
        pair = item.pair
        return Pair(f"p{index}", pair.a, pair.b)
    return Pair(f"p{index}", copy.deepcopy(item.a), copy.deepcopy(item.b))


def predict(
    cache: Cache,
    rows: Sequence[Row] | Sequence[Pair],
    *,
    on_error: OnError = "miss",
    timeout_ms: float | None = None,
    progress: ProgressCallback | None = None,
    first_index: int = 1,
) -> list[Prediction]:
    """Call the cache on every row's :class:`~cacheeval.schema.Pair`, in order,
    and record its decisions.

    The cache is shown only pairs: ``prepare`` gets a list of copies, each
    call a fresh copy, so nothing a cache does to what it is given reaches the
    rows or a later call. ``prepare`` runs first (untimed); ``close()`` always
    runs last. Each call is timed with ``time.perf_counter_ns``. Labels are
    never read. A real Ctrl-C raises :class:`RunInterrupted` with the
    predictions made so far. ``first_index`` numbers the pairs shown from
    ``p<first_index>`` on (:mod:`cacheeval.run.parallel` runs a long run in blocks
    and keeps the ids positional in the whole run).
    """
    if on_error not in ("miss", "raise"):
        raise ValueError(f"on_error must be 'miss' or 'raise', got {on_error!r}")
    if timeout_ms is not None and not timeout_ms > 0:
        raise ValueError(f"timeout_ms must be > 0, got {timeout_ms}")
    if first_index < 1:
        raise ValueError(f"first_index must be >= 1, got {first_index}")
    items: list[Row | Pair] = list(rows)  # a generator would be consumed by len()
    ids = [item.id for item in items]
    bound = bind_cache(cache)
    failed = False
    out: list[Prediction] = []
    try:
        with _SigintWatch() as sigint:
            try:
                if bound.prepare is not None:
                    # its own list: emptying or editing it cannot touch the run
                    _call_prepare(bound.prepare, as_pairs(items, first_index), sigint)
                run = _run_inline if timeout_ms is None else _run_with_timeout
                run(
                    bound.call,
                    items,
                    ids,
                    out,
                    on_error == "raise",
                    timeout_ms,
                    progress,
                    sigint,
                    first_index,
                )
            except KeyboardInterrupt:
                if sigint.fired:
                    raise RunInterrupted(out, len(ids)) from None
                raise
        return out
    except BaseException:
        failed = True
        raise
    finally:
        if bound.close is not None:
            try:
                bound.close()
            except Exception as e:
                if not failed and on_error == "raise":
                    raise CacheCallError(f"close() raised {describe_exception(e)}") from e
                warnings.warn(f"cache close() raised {describe_exception(e)}", stacklevel=2)


def _call_prepare(
    prepare: Callable[[Sequence[Pair]], Any], pairs: list[Pair], sigint: _SigintWatch
) -> None:
    try:
        prepare(pairs)
    except BaseException as e:
        if isinstance(e, KeyboardInterrupt) and sigint.fired:
            raise
        raise CacheCallError(f"prepare() raised {describe_exception(e)}") from e


def call_outcome(
    row_id: str, value: Any, exc: BaseException | None, latency_ms: float, strict: bool
) -> Prediction:
    """The prediction of a call that returned ``value`` or raised ``exc``; under
    ``strict`` (``on_error="raise"``) a failed call raises :class:`CacheCallError`."""
    if exc is not None:
        if strict:
            raise CacheCallError(f"row {row_id}: {describe_exception(exc)}") from exc
        return _failed(row_id, "error", describe_exception(exc), latency_ms)
    pred = _to_prediction(row_id, value, latency_ms)
    if strict and pred.error is not None:
        raise CacheCallError(f"row {row_id}: {pred.error}")
    return pred


def _run_inline(
    call: Callable[[Pair], Any],
    items: Sequence[Row | Pair],
    ids: Sequence[str],
    out: list[Prediction],
    strict: bool,
    timeout_ms: float | None,
    progress: ProgressCallback | None,
    sigint: _SigintWatch,
    first_index: int = 1,
) -> None:
    append = out.append
    clock = time.perf_counter_ns
    total = len(ids)
    for done, (item, row_id) in enumerate(zip(items, ids, strict=True), 1):
        pair = _shown_pair(item, done + first_index - 1)
        t0 = clock()
        try:
            value = call(pair)
        except BaseException as e:  # SystemExit, a cache's own KeyboardInterrupt, ...
            ms = (clock() - t0) / 1e6
            if isinstance(e, KeyboardInterrupt) and sigint.fired:
                raise
            append(call_outcome(row_id, None, e, ms, strict))
        else:
            append(call_outcome(row_id, value, None, (clock() - t0) / 1e6, strict))
        if sigint.fired:  # the cache swallowed the user's Ctrl-C: stop all the same
            raise KeyboardInterrupt
        if progress is not None:
            progress(done, total)


def _run_with_timeout(
    call: Callable[[Pair], Any],
    items: Sequence[Row | Pair],
    ids: Sequence[str],
    out: list[Prediction],
    strict: bool,
    timeout_ms: float | None,
    progress: ProgressCallback | None,
    sigint: _SigintWatch,
    first_index: int = 1,
) -> None:
    assert timeout_ms is not None
    timeout_s = timeout_ms / 1000.0
    worker = _Worker(call)
    total = len(ids)
    try:
        for done, (item, row_id) in enumerate(zip(items, ids, strict=True), 1):
            pair = _shown_pair(item, done + first_index - 1)
            t0 = time.perf_counter_ns()
            try:
                value, exc, ns = worker.run(pair, timeout_s)
            except queue.Empty:
                waited = (time.perf_counter_ns() - t0) / 1e6
                error = f"timeout after {timeout_ms:g} ms"
                if strict:
                    raise CacheCallError(f"row {row_id}: {error}") from None
                out.append(_failed(row_id, "timeout", error, waited))
                worker.stop()  # abandoned: exits whenever the hung call returns
                worker = _Worker(call)
            else:
                # On the worker thread no signal arrives: any exception is the cache's.
                out.append(call_outcome(row_id, value, exc, ns / 1e6, strict))
            if progress is not None:
                progress(done, total)
    finally:
        worker.stop()


def require_labels(rows: Sequence[Row]) -> None:
    """Raise :class:`UnlabelledRowsError` when any row is a hidden test row."""
    hidden = [r.id for r in rows if not r.is_labelled]
    if hidden:
        raise UnlabelledRowsError(
            f"{len(hidden)} of {len(rows)} rows have no label (hidden test rows, first "
            f"{hidden[0]}); load them with the private labels file "
            "(load_bench(..., labels_path=...) or --labels)"
        )


def _json_args(cache_args: Mapping[str, Any] | None) -> dict[str, Any]:
    args = dict(cache_args or {})
    try:
        dumps(args)
    except (TypeError, ValueError) as e:
        raise ValueError(f"cache_args must be JSON-serialisable: {e}") from None
    return args


def rows_split(rows: Sequence[Row]) -> str | None:
    """The one split all rows share, or None when they mix splits (or are empty)."""
    splits = {r.split for r in rows}
    return splits.pop() if len(splits) == 1 else None


def score(
    predictions: Sequence[Prediction],
    rows: Sequence[Row],
    *,
    cache_name: str = "unnamed",
    cache_args: Mapping[str, Any] | None = None,
    cache_ref: str | None = None,
    dataset_path: str | os.PathLike[str] | None = None,
    dataset_sha256: str | None = None,
    split: str | None = None,
    domains: Sequence[str] | None = None,
    cost_per_call_usd: Mapping[str, float] | None = None,
    created: str | None = None,
    alphas: Sequence[float] = DEFAULT_ALPHAS,
    hidden_rows_skipped: int = 0,
    failures: bool = True,
    list_test_failures: bool = False,
) -> Report:
    """Grade predictions against labelled rows, joined by id.

    Rows without a prediction are scored MISS with a ``MissingPrediction``
    error (tier ``missing``) and listed in ``Report.ids``; predictions for ids
    not among the rows are listed there and otherwise ignored. Raises
    :class:`UnlabelledRowsError` when a row is a hidden test row, ValueError on
    duplicate ids. ``hidden_rows_skipped`` is recorded in the provenance (the
    command line leaves hidden test rows out when it has no labels for them).
    ``failures=False`` leaves out the verdict and the failure lists, which
    quote rows (the grading service, for hidden test rows); test-split rows
    are counted in them but listed only with ``list_test_failures``.
    """
    rows = list(rows)
    require_labels(rows)
    by_id: dict[str, Prediction] = {}
    for p in predictions:
        if p.id in by_id:
            raise ValueError(f"duplicate prediction id {p.id!r}")
        by_id[p.id] = p
    row_ids: set[str] = set()
    for r in rows:
        if r.id in row_ids:
            raise ValueError(f"duplicate row id {r.id!r}")
        row_ids.add(r.id)
    aligned: list[Prediction] = []
    called: list[bool] = []
    missing: list[str] = []
    for r in rows:
        found = by_id.get(r.id)
        if found is None:
            missing.append(r.id)
            aligned.append(
                _failed(r.id, "missing", "MissingPrediction: no prediction for this row", None)
            )
            called.append(False)
        else:
            aligned.append(found)
            called.append(True)
    extra = [p.id for p in predictions if p.id not in row_ids]
    ids = IdCheck(len(missing), tuple(missing[:MAX_IDS]), len(extra), tuple(extra[:MAX_IDS]))
    if dataset_sha256 is None and dataset_path is not None:
        dataset_sha256 = sha256_file(dataset_path)
    provenance = make_provenance(
        n_rows=len(rows),
        cache_name=cache_name,
        cache_args=_json_args(cache_args),
        cache_ref=cache_ref,
        dataset_path=str(dataset_path) if dataset_path is not None else None,
        dataset_sha256=dataset_sha256,
        split=split if split is not None else rows_split(rows),
        domains=domains,
        created=created,
        hidden_rows_skipped=hidden_rows_skipped,
    )
    return build_report(
        rows,
        aligned,
        provenance=provenance,
        ids=ids,
        cost_per_call_usd=cost_per_call_usd,
        alphas=alphas,
        scored_latency=called,
        failures=failures,
        list_test_failures=list_test_failures,
    )


class SealedRows:
    """Labelled rows frozen into immutable bytes before any cache code runs.

    Scoring reads the rows back from the bytes, so nothing a cache does to
    live ``Row`` objects it might reach (``gc``, frames, ``object.__setattr__``)
    can change the truth it is graded against. (A cache that must not even
    *read* the labels has to run in another process: see ``--workers``.)
    """

    __slots__ = ("_blob",)

    def __init__(self, rows: Iterable[Row]) -> None:
        self._blob = b"\n".join(dumps(r.to_dict()).encode("utf-8") for r in rows)

    def rows(self) -> list[Row]:
        """Fresh Row objects, equal to the rows sealed."""
        if not self._blob:
            return []
        return [Row.from_dict(json.loads(line)) for line in self._blob.split(b"\n")]


def evaluate(
    cache: Cache,
    rows: Sequence[Row],
    cache_name: str | None = None,
    cache_args: Mapping[str, Any] | None = None,
    on_error: OnError = "miss",
    timeout_ms: float | None = None,
    progress: ProgressCallback | None = None,
    dataset_path: str | os.PathLike[str] | None = None,
    *,
    split: str | None = None,
    domains: Sequence[str] | None = None,
    alphas: Sequence[float] = DEFAULT_ALPHAS,
    cache_ref: str | None = None,
) -> Report:
    """:func:`predict` then :func:`score`. Labels are checked before the cache
    runs, so a hidden test split fails fast, and sealed (:class:`SealedRows`)
    so the cache cannot change them. ``cache_name`` defaults to
    :func:`cache_name_of`, ``cache_ref`` to :func:`cache_ref_of`;
    ``split``/``domains`` record the row filters."""
    return evaluate_with_predictions(
        cache, rows, cache_name, cache_args, on_error, timeout_ms, progress, dataset_path,
        split=split, domains=domains, alphas=alphas, cache_ref=cache_ref,
    )[0]  # fmt: skip


def evaluate_with_predictions(
    cache: Cache,
    rows: Sequence[Row],
    cache_name: str | None = None,
    cache_args: Mapping[str, Any] | None = None,
    on_error: OnError = "miss",
    timeout_ms: float | None = None,
    progress: ProgressCallback | None = None,
    dataset_path: str | os.PathLike[str] | None = None,
    *,
    split: str | None = None,
    domains: Sequence[str] | None = None,
    alphas: Sequence[float] = DEFAULT_ALPHAS,
    cache_ref: str | None = None,
) -> tuple[Report, list[Prediction]]:
    """:func:`evaluate`, and the predictions it scored (in row order): what a
    per-pair view of the run (``cacheeval view``'s page) is built from."""
    rows = list(rows)
    require_labels(rows)
    truth = SealedRows(rows)
    args = _json_args(cache_args)
    prices = cost_table(cache)
    name = cache_name or cache_name_of(cache)
    ref = cache_ref or cache_ref_of(cache)
    preds = predict(cache, rows, on_error=on_error, timeout_ms=timeout_ms, progress=progress)
    report = score(
        preds,
        truth.rows(),
        cache_name=name,
        cache_args=args,
        cache_ref=ref,
        dataset_path=dataset_path,
        split=split,
        domains=domains,
        cost_per_call_usd=prices,
        alphas=alphas,
    )
    return report, preds


# --- loading a cache from a module -----------------------------------------------------


def _import_file(path: Path) -> Any:
    digest = hashlib.sha256(str(path.resolve()).encode("utf-8")).hexdigest()[:10]
    stem = re.sub(r"\W", "_", path.stem)
    name = f"{_USER_MODULE_PREFIX}{stem}_{digest}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise CacheLoadError(f"{path}: cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    # Sibling modules of the cache file must be importable from it.
    parent = str(path.resolve().parent)
    if parent not in sys.path:
        sys.path.insert(0, parent)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as e:
        del sys.modules[name]
        raise CacheLoadError(f"{path}: importing it raised {describe_exception(e)}") from e
    return module


def load_cache(
    module: str, class_name: str | None = None, kwargs: Mapping[str, Any] | None = None
) -> Any:
    """Load a cache from a dotted module name or a path to a ``.py`` file.

    With ``class_name`` the module's class is instantiated with ``kwargs``;
    otherwise the module must expose ``cache`` (a cache, or a class that is
    instantiated with ``kwargs``). Dotted names are resolved with the current
    directory on ``sys.path`` (as ``python -m`` would). Every failure is a
    :class:`CacheLoadError` with a one-line message.
    """
    kwargs = dict(kwargs or {})
    if module.endswith(".py") or "/" in module or os.sep in module:
        path = Path(module)
        if not path.is_file():
            raise CacheLoadError(f"{module}: no such file")
        mod = _import_file(path)
    else:
        cwd = os.getcwd()
        if cwd not in sys.path and "" not in sys.path:
            sys.path.insert(0, cwd)
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as e:
            raise CacheLoadError(f"cannot import cache module {module!r}: {e}") from e
        except Exception as e:
            raise CacheLoadError(f"importing {module!r} raised {describe_exception(e)}") from e
    attr = class_name or "cache"
    if not hasattr(mod, attr):
        hint = "" if class_name else " (or name a class with --cache-class)"
        raise CacheLoadError(f"module {module!r} has no attribute {attr!r}{hint}")
    target = getattr(mod, attr)
    if class_name is not None or isinstance(target, type):
        if not isinstance(target, type):
            raise CacheLoadError(f"{module}.{attr} is not a class")
        try:
            obj = target(**kwargs)
        except Exception as e:
            raise CacheLoadError(
                f"constructing {module}.{attr}({', '.join(kwargs)}) raised {describe_exception(e)}"
            ) from e
    else:
        if kwargs:
            raise CacheLoadError(
                f"cache arguments given but {module}.cache is not a class (use --cache-class)"
            )
        obj = target
    try:
        bind_cache(obj)
    except TypeError as e:
        raise CacheLoadError(f"{module}.{attr}: {e}") from e
    return obj
