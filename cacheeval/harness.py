"""Run a cache over benchmark rows and score its decisions.

A *cache* is either a callable ``Row -> Verdict`` or an object that is
callable (or has a ``predict(row)`` method), optionally with:

* ``prepare(rows)`` - called once with all rows before any call is timed
  (warm-up, model loading, index building);
* ``close()`` - called once at the end, always, even when the run fails;
* ``name`` - a default for ``cache_name``;
* ``cost_per_call_usd`` - a ``{tier: price}`` mapping used for the cost metric.

Three steps: :func:`predict` calls the cache on every row and records a
:class:`~cacheeval.predictions.Prediction` per row (it never needs labels, so
it runs on hidden test rows); :func:`score` joins predictions to labelled rows
by id and computes the :class:`~cacheeval.report.Report`; :func:`evaluate` is
the two together.

Failure handling (``on_error="miss"``, the default): an exception, a return
value that is not a valid :class:`~cacheeval.schema.Verdict` (wrong type,
non-bool ``is_hit``, NaN, a confidence outside [0, 1], a reserved tier) or a
timeout makes that row a MISS with an ``error`` string, counted and shown in
the report; the run goes on. ``on_error="raise"`` stops at the first failure
with :class:`CacheCallError`.

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

import hashlib
import importlib
import importlib.util
import math
import os
import queue
import re
import sys
import threading
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from .jsonio import dumps, sha256_file
from .metrics.ranking import DEFAULT_ALPHAS
from .predictions import Prediction
from .progress import ProgressCallback
from .report import MAX_IDS, IdCheck, Report, build_report, make_provenance
from .schema import Row, Verdict

OnError = Literal["miss", "raise"]

#: Tiers the harness sets itself; a cache may not report them.
RESERVED_TIERS: frozenset[str] = frozenset({"error", "timeout", "missing"})
#: Longest error message kept per row.
MAX_ERROR_CHARS = 300


class CacheCallError(RuntimeError):
    """A cache call failed under ``on_error="raise"`` (or ``prepare`` failed)."""


class CacheLoadError(ValueError):
    """A cache could not be loaded or constructed from a module/class spec."""


class UnlabelledRowsError(ValueError):
    """Scoring needs labels but some rows are hidden test rows."""


# --- binding a cache ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BoundCache:
    """The pieces of a cache the harness uses."""

    call: Callable[[Row], Any]
    prepare: Callable[[Sequence[Row]], Any] | None
    close: Callable[[], Any] | None
    name: str
    cost_per_call_usd: dict[str, float]


def cache_name_of(cache: Any) -> str:
    """``cache.name`` if it is a string, else the function or class name."""
    name = getattr(cache, "name", None)
    if isinstance(name, str) and name:
        return name
    fn_name = getattr(cache, "__name__", None)
    if isinstance(fn_name, str):
        return fn_name
    return type(cache).__name__


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


def bind_cache(cache: Any) -> BoundCache:
    """Find the call, optional ``prepare``/``close``, name and prices of ``cache``."""
    if callable(cache):
        call = cache
    elif callable(getattr(cache, "predict", None)):
        call = cache.predict
    else:
        raise TypeError(
            f"{type(cache).__name__} is not a cache: need a callable or an object with predict()"
        )
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
    """``"TypeName: first line of the message"`` (at most :data:`MAX_ERROR_CHARS`)."""
    text = str(e).strip().splitlines()
    message = text[0] if text else "(no message)"
    out = f"{type(e).__name__}: {message}"
    return out if len(out) <= MAX_ERROR_CHARS else out[: MAX_ERROR_CHARS - 3] + "..."


def verdict_problem(value: Any) -> str | None:
    """Why a cache's return value cannot be scored (None when it is a usable Verdict)."""
    if not isinstance(value, Verdict):
        return f"returned {type(value).__name__}, not Verdict"
    problems = value.problems()
    if not problems and value.tier_used in RESERVED_TIERS:
        problems = [f"tier_used {value.tier_used!r} is reserved for the harness"]
    return "; ".join(problems) if problems else None


def _to_prediction(row_id: str, value: Any, latency_ms: float) -> Prediction:
    """A successful call's Prediction, or an ``InvalidVerdict`` error row."""
    problem = verdict_problem(value)
    if problem is not None:
        return _failed(row_id, "error", f"InvalidVerdict: {problem}", latency_ms)
    score = value.score
    return Prediction(
        row_id,
        value.is_hit,
        float(value.confidence),
        None if score is None else float(score),
        value.tier_used or "unknown",
        latency_ms,
        None,
    )


def _failed(row_id: str, tier: str, error: str, latency_ms: float | None) -> Prediction:
    return Prediction(row_id, False, None, None, tier, latency_ms, error)


class _Worker:
    """A daemon thread that runs calls one at a time (used for timeouts)."""

    def __init__(self, call: Callable[[Row], Any]) -> None:
        self._call = call
        self._inbox: queue.SimpleQueue[Row | None] = queue.SimpleQueue()
        self._outbox: queue.SimpleQueue[tuple[Any, BaseException | None, int]] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._loop, name="cacheeval-call", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while True:
            row = self._inbox.get()
            if row is None:
                return
            t0 = time.perf_counter_ns()
            try:
                value, exc = self._call(row), None
            except BaseException as e:  # handed back to the harness thread
                value, exc = None, e
            self._outbox.put((value, exc, time.perf_counter_ns() - t0))

    def run(self, row: Row, timeout_s: float) -> tuple[Any, BaseException | None, int]:
        """The call's (value, exception, ns); raises ``queue.Empty`` on timeout."""
        self._inbox.put(row)
        return self._outbox.get(timeout=timeout_s)

    def stop(self) -> None:
        """Ask the thread to exit once its current call (if any) returns."""
        self._inbox.put(None)


# --- predict / score / evaluate --------------------------------------------------------


def predict(
    cache: Any,
    rows: Sequence[Row],
    *,
    on_error: OnError = "miss",
    timeout_ms: float | None = None,
    progress: ProgressCallback | None = None,
) -> list[Prediction]:
    """Call the cache on every row, in order, and record its decisions.

    ``prepare(rows)`` runs first (untimed); ``close()`` always runs last. Each
    call is timed with ``time.perf_counter_ns``. Labels are never read.
    """
    if on_error not in ("miss", "raise"):
        raise ValueError(f"on_error must be 'miss' or 'raise', got {on_error!r}")
    if timeout_ms is not None and not timeout_ms > 0:
        raise ValueError(f"timeout_ms must be > 0, got {timeout_ms}")
    rows = list(rows)  # a generator would be consumed by prepare() or len()
    bound = bind_cache(cache)
    failed = False
    try:
        if bound.prepare is not None:
            try:
                bound.prepare(rows)
            except Exception as e:
                raise CacheCallError(f"prepare() raised {describe_exception(e)}") from e
        if timeout_ms is None:
            return _predict_inline(bound.call, rows, on_error == "raise", progress)
        return _predict_with_timeout(bound.call, rows, on_error == "raise", timeout_ms, progress)
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


def _predict_inline(
    call: Callable[[Row], Any],
    rows: Sequence[Row],
    strict: bool,
    progress: ProgressCallback | None,
) -> list[Prediction]:
    out: list[Prediction] = []
    append = out.append
    clock = time.perf_counter_ns
    total = len(rows)
    done = 0
    for row in rows:
        t0 = clock()
        try:
            value = call(row)
        except Exception as e:
            ms = (clock() - t0) / 1e6
            if strict:
                raise CacheCallError(f"row {row.id}: {describe_exception(e)}") from e
            append(_failed(row.id, "error", describe_exception(e), ms))
        else:
            pred = _to_prediction(row.id, value, (clock() - t0) / 1e6)
            if strict and pred.error is not None:
                raise CacheCallError(f"row {row.id}: {pred.error}")
            append(pred)
        if progress is not None:
            done += 1
            progress(done, total)
    return out


def _predict_with_timeout(
    call: Callable[[Row], Any],
    rows: Sequence[Row],
    strict: bool,
    timeout_ms: float,
    progress: ProgressCallback | None,
) -> list[Prediction]:
    out: list[Prediction] = []
    timeout_s = timeout_ms / 1000.0
    worker = _Worker(call)
    try:
        for done, row in enumerate(rows, 1):
            t0 = time.perf_counter_ns()
            try:
                value, exc, ns = worker.run(row, timeout_s)
            except queue.Empty:
                waited = (time.perf_counter_ns() - t0) / 1e6
                error = f"timeout after {timeout_ms:g} ms"
                if strict:
                    raise CacheCallError(f"row {row.id}: {error}") from None
                out.append(_failed(row.id, "timeout", error, waited))
                worker.stop()  # abandoned: exits whenever the hung call returns
                worker = _Worker(call)
            else:
                if exc is not None and not isinstance(exc, Exception):
                    raise exc  # KeyboardInterrupt, SystemExit: never swallowed
                if exc is not None:
                    if strict:
                        raise CacheCallError(f"row {row.id}: {describe_exception(exc)}") from exc
                    out.append(_failed(row.id, "error", describe_exception(exc), ns / 1e6))
                else:
                    pred = _to_prediction(row.id, value, ns / 1e6)
                    if strict and pred.error is not None:
                        raise CacheCallError(f"row {row.id}: {pred.error}")
                    out.append(pred)
            if progress is not None:
                progress(done, len(rows))
    finally:
        worker.stop()
    return out


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
    dataset_path: str | os.PathLike[str] | None = None,
    dataset_sha256: str | None = None,
    split: str | None = None,
    domains: Sequence[str] | None = None,
    cost_per_call_usd: Mapping[str, float] | None = None,
    created: str | None = None,
    alphas: Sequence[float] = DEFAULT_ALPHAS,
    hidden_rows_skipped: int = 0,
) -> Report:
    """Grade predictions against labelled rows, joined by id.

    Rows without a prediction are scored MISS with a ``MissingPrediction``
    error (tier ``missing``) and listed in ``Report.ids``; predictions for ids
    not among the rows are listed there and otherwise ignored. Raises
    :class:`UnlabelledRowsError` when a row is a hidden test row, ValueError on
    duplicate ids. ``hidden_rows_skipped`` is recorded in the provenance (the
    command line leaves hidden test rows out when it has no labels for them).
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
    )


def evaluate(
    cache: Any,
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
) -> Report:
    """:func:`predict` then :func:`score`. Labels are checked before the cache
    runs, so a hidden test split fails fast. ``cache_name`` defaults to
    :func:`cache_name_of`; ``split``/``domains`` record the row filters."""
    rows = list(rows)
    require_labels(rows)
    args = _json_args(cache_args)
    prices = cost_table(cache)
    preds = predict(cache, rows, on_error=on_error, timeout_ms=timeout_ms, progress=progress)
    return score(
        preds,
        rows,
        cache_name=cache_name or cache_name_of(cache),
        cache_args=args,
        dataset_path=dataset_path,
        split=split,
        domains=domains,
        cost_per_call_usd=prices,
        alphas=alphas,
    )


# --- loading a cache from a module -----------------------------------------------------


def _import_file(path: Path) -> Any:
    digest = hashlib.sha256(str(path.resolve()).encode("utf-8")).hexdigest()[:10]
    stem = re.sub(r"\W", "_", path.stem)
    name = f"cacheeval_user_{stem}_{digest}"
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
