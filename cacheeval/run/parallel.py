"""Predict with many processes: local worker processes (``--workers N``) or
Ray actors (``--ray``), and the streaming, in-process run they extend.

How a run is cut up. The rows are cut, in order, into contiguous blocks; each
block travels to a worker as the fields of its :class:`~cacheeval.schema.Pair`
records only (:func:`to_wire`; never a row: the labels stay in this process, so
a cache in a worker cannot read the truth table even through ``gc``), numbered
``p<i>`` by the row's
position in the whole run, so what a cache sees does not depend on the number
of workers. Each worker builds the cache once from a :class:`CacheSpec` (a
cache object is never pickled), and the predictions come back to be merged in
row order. Per-call latency is timed inside the worker around the call alone,
by :func:`cacheeval.run.harness.predict`, which each worker runs on its blocks.

* A cache without ``prepare`` gets its blocks as they are read (any free
  worker takes the next block), so a run over millions of rows streams in
  memory that does not grow with the run. Blocks start small and are then
  sized to about half a second of calls each, so a slow cache (an LLM judge)
  reports progress, and loses little to a dying worker, a few rows at a time.
* A cache with ``prepare`` must see every pair it will decide before its
  first call: the run is read whole and split into one contiguous shard per
  worker; each worker calls ``prepare`` once on its own shard.

A worker that dies (killed, ``os._exit``, a segfault) loses no rows: the block
it was deciding is retried once on a fresh worker; if that one dies on it too
the block's rows come back as error rows (``WorkerDied: ...``), so the report
accounts for every row and none is counted twice (the engine is
:class:`cacheeval.run.blockrun.BlockRunner`; the workers are processes from
:mod:`cacheeval.run.procpool` or Ray actors from :mod:`cacheeval.run.ray_backend`).

``on_error="raise"`` is enforced here, in row order: the first failed row (in
row order, whichever worker decided it) stops the run with
:class:`~cacheeval.run.harness.CacheCallError`; workers may have decided up to a
block or two past it by then.

Scripts that start workers need the usual ``if __name__ == "__main__":``
guard of multiprocessing's ``spawn`` (``python -m cacheeval`` has it).
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from itertools import islice
from typing import Any, cast

from ..results.predictions import Prediction
from ..schema import Pair, Request, Row
from ..support.progress import ProgressCallback
from .blockrun import Backend, BlockRunner, BlockTask, CacheSpec
from .harness import (
    CacheCallError,
    OnError,
    RunInterrupted,
    as_pairs,
    bind_cache,
    cache_name_of,
    cache_ref_of,
    cache_version,
    call_outcome,
    cost_table,
    describe_exception,
    predict,
)
from .procpool import PREPARE_S, ProcessBackend, threads_per_worker
from .wire import checked_meta, checked_result

__all__ = [
    "BlockTask",
    "CacheInfo",
    "CacheSpec",
    "PredictTask",
    "Predictor",
    "map_blocks",
    "predict_parallel",
]

#: Rows per block, at most.
MAX_BLOCK = 256
#: Rows of the first blocks, before the time per call is known.
FIRST_BLOCK = 8
#: Seconds of calls a block aims at.
TARGET_BLOCK_S = 0.5


@dataclass(frozen=True, slots=True)
class PredictTask:
    """The worker side of a prediction run, results as plain lists
    ``[is_hit, confidence, score, tier_used, latency_ms, error]``.

    In a cache process (:mod:`cacheeval.run.child`) each pair is one
    :meth:`run_one` call, its result sent at once, and ``timeout_ms`` is
    enforced by the driver, which kills the process; on Ray, :meth:`run`
    decides a block with :func:`~cacheeval.run.harness.predict` (errors become
    error rows, timeouts abandon the call's thread). The driver checks every
    result with :meth:`check` before it becomes a prediction."""

    timeout_ms: float | None = None

    def setup(self, cache: Any) -> dict[str, Any]:
        bound = bind_cache(cache)
        try:
            prices, price_error = cost_table(cache), None
        except TypeError as e:
            prices, price_error = {}, str(e)
        return {
            "name": bound.name,
            "ref": cache_ref_of(cache),
            "cost_per_call_usd": prices,
            "price_error": price_error,
            "has_prepare": bound.prepare is not None,
            "version": cache_version(cache),
        }

    def prepare(self, cache: Any, items: list[Any]) -> float:
        """``prepare`` on the shard; its wall time in ms (the pairs' decoding
        left out), reported beside the per-call latency."""
        pairs = [from_wire(t) for t in items]
        t0 = time.perf_counter_ns()
        prepare_cache(cache, pairs)
        return (time.perf_counter_ns() - t0) / 1e6

    def run(self, cache: Any, first_index: int, items: list[Any]) -> list[Any]:
        pairs = [from_wire(t) for t in items]
        preds = predict(
            call_only(cache), pairs, timeout_ms=self.timeout_ms, first_index=first_index
        )
        return [
            [p.is_hit, p.confidence, p.score, p.tier_used, p.latency_ms, p.error] for p in preds
        ]

    def run_one(self, cache: Any, item: Wire) -> list[Any]:
        """One call, timed around the call alone (no thread: the driver
        enforces the timeout by killing the process)."""
        pair = from_wire(item)
        clock = time.perf_counter_ns
        t0 = clock()
        try:
            value = cache(pair)
        except BaseException as e:  # SystemExit, a KeyboardInterrupt of its own, ...
            return self.failed("error", describe_exception(e), (clock() - t0) / 1e6)
        p = call_outcome(pair.id, value, None, (clock() - t0) / 1e6, False)
        return [p.is_hit, p.confidence, p.score, p.tier_used, p.latency_ms, p.error]

    @staticmethod
    def failed(tier: str, message: str, latency_ms: float | None) -> list[Any]:
        """The result of a call that failed (tier ``error`` or ``timeout``)."""
        return [False, None, None, tier, latency_ms, message]

    @staticmethod
    def check_meta(raw: Any) -> dict[str, Any]:
        """What a cache process says about its cache, checked
        (:func:`~cacheeval.run.wire.checked_meta`)."""
        return checked_meta(raw)

    @staticmethod
    def check(raw: Any) -> list[Any]:
        """A result from a cache process, checked (:func:`~cacheeval.run.wire.checked_result`)."""
        return list(checked_result(raw))

    def close(self, cache: Any) -> str | None:
        close = bind_cache(cache).close
        if close is None:
            return None
        try:
            close()
        except BaseException as e:  # SystemExit/KeyboardInterrupt from close are its own
            return f"close() raised {describe_exception(e)}"
        return None


#: A pair as it travels to a worker: its position, then query, context, system
#: prompt and tools of request a, then of request b. Exactly a Pair's fields,
#: as plain tuples (pickled at C speed, unlike dataclasses).
Wire = tuple[Any, ...]


def to_wire(item: Row | Pair, index: int) -> Wire:
    """What a worker is sent of ``item``, the run's ``index``-th: its pair.

    >>> from cacheeval.schema import Request
    >>> to_wire(Pair("cb-math-0001", Request("2+2?"), Request("2 + 2?")), 7)
    (7, '2+2?', None, None, None, '2 + 2?', None, None, None)
    """
    if isinstance(item, Row):
        return (
            index,
            item.query_a, item.context_a, item.system_prompt_a, item.tools_a,
            item.query_b, item.context_b, item.system_prompt_b, item.tools_b,
        )  # fmt: skip
    a, b = item.a, item.b
    return (index, a.query, a.context, a.system_prompt, a.tools,
            b.query, b.context, b.system_prompt, b.tools)  # fmt: skip


def request_from_wire(query: str, context: Any, system_prompt: Any, tools: Any) -> Request:
    """A :class:`~cacheeval.schema.Request` from its fields as they arrive
    over JSON (lists become the tuples a Request holds)."""
    return Request(
        query,
        None if context is None else tuple(context),
        system_prompt,
        None if tools is None else tuple(tools),
    )


def request_to_wire(request: Request) -> list[Any]:
    """The fields of ``request`` as :func:`request_from_wire` takes them."""
    context = None if request.context is None else list(request.context)
    tools = None if request.tools is None else list(request.tools)
    return [request.query, context, request.system_prompt, tools]


def from_wire(t: Wire) -> Pair:
    """The :class:`~cacheeval.schema.Pair` a worker shows its cache, id ``p<index>``."""
    return Pair(f"p{t[0]}", request_from_wire(*t[1:5]), request_from_wire(*t[5:9]))


def prepare_cache(cache: Any, pairs: list[Pair]) -> None:
    """``cache.prepare(pairs)``; anything it raises is a CacheCallError."""
    prepare = bind_cache(cache).prepare
    assert prepare is not None
    try:
        prepare(pairs)
    except BaseException as e:
        raise CacheCallError(f"prepare() raised {describe_exception(e)}") from e


def call_only(cache: Any) -> Callable[[Pair], Any]:
    """The cache's call with nothing else (no ``prepare``/``close`` for
    :func:`~cacheeval.run.harness.predict` to find): blocks of one run must not
    prepare or close the cache again."""
    return partial(bind_cache(cache).call)


# --- predictions ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CacheInfo:
    """What the driver learns about the cache (from a worker, or in-process)."""

    name: str
    ref: str
    cost_per_call_usd: dict[str, float]
    has_prepare: bool
    #: Why ``cost_per_call_usd`` could not be read (then it is empty).
    price_error: str | None = None
    #: The cache's version (:func:`~cacheeval.run.harness.cache_version`).
    version: str = "unknown"


def block_size_for(total: int | None, workers: int) -> int:
    """Rows per block of a run held whole (a cache with ``prepare``): about
    eight blocks per worker, 1 to :data:`MAX_BLOCK`.

    >>> block_size_for(500, 2), block_size_for(None, 2), block_size_for(10**6, 8)
    (32, 256, 256)
    """
    if not total:
        return MAX_BLOCK
    return max(1, min(MAX_BLOCK, math.ceil(total / (8 * max(1, workers)))))


class BlockSizer:
    """Rows for the next block of a stream: :data:`FIRST_BLOCK` until calls
    have been timed, then about :data:`TARGET_BLOCK_S` seconds of calls at
    the mean call time so far (1 to :data:`MAX_BLOCK` rows). A fixed
    ``size`` overrides.

    >>> sizer = BlockSizer()
    >>> sizer.next()
    8
    >>> sizer.record([2.0] * 8)  # 2 ms a call
    >>> sizer.next()
    250
    """

    def __init__(self, size: int | None = None) -> None:
        self.size = size
        self._calls = 0
        self._ms = 0.0

    def record(self, latencies_ms: Iterable[float | None]) -> None:
        for ms in latencies_ms:
            if ms is not None:
                self._calls += 1
                self._ms += ms

    def next(self) -> int:
        if self.size is not None:
            return self.size
        if self._calls < FIRST_BLOCK:
            return FIRST_BLOCK
        per_call_s = max(self._ms / self._calls / 1000.0, 1e-9)
        return max(1, min(MAX_BLOCK, round(TARGET_BLOCK_S / per_call_s)))


class Predictor:
    """Runs one cache over a stream of rows (or pairs), in this process or on
    workers, and yields the predictions in row order.

    ``cache`` is a cache object (in-process only) or a :class:`CacheSpec`.
    ``workers=0`` and no ``ray``: in this process, the rows read and decided
    a block at a time (a cache with ``prepare`` gets every pair first, so
    those runs are held whole). ``workers=N``: N local worker processes.
    ``ray``: ``"local"`` starts a Ray instance on this machine with
    ``workers`` CPUs (default: all), an address joins that cluster (default
    workers: its CPUs); one actor per worker.

    Use as a context manager: :meth:`start`, one :meth:`run`, then
    :meth:`close` (or an abort on an exception).
    """

    def __init__(
        self,
        cache: Any,
        *,
        workers: int = 0,
        ray: str | None = None,
        on_error: OnError = "miss",
        timeout_ms: float | None = None,
        block_size: int | None = None,
        wrap: Sequence[str] = (),
        prepare_timeout_s: float = PREPARE_S,
    ) -> None:
        if on_error not in ("miss", "raise"):
            raise ValueError(f"on_error must be 'miss' or 'raise', got {on_error!r}")
        if timeout_ms is not None and not timeout_ms > 0:
            raise ValueError(f"timeout_ms must be > 0, got {timeout_ms}")
        if workers < 0:
            raise ValueError(f"workers must be >= 0, got {workers}")
        remote = workers > 0 or ray is not None
        if remote and not isinstance(cache, CacheSpec):
            raise TypeError("workers build the cache themselves: pass a CacheSpec, not a cache")
        self.cache = cache
        self.workers = workers
        self.ray = ray
        self.on_error = on_error
        self.timeout_ms = timeout_ms
        self.block_size = block_size
        self.wrap = tuple(wrap)  # argv prefix of each cache process (an OS sandbox)
        self.prepare_timeout_s = prepare_timeout_s
        self.info: CacheInfo | None = None
        self.runner: BlockRunner | None = None
        self._local: Any = None
        self._local_prepare_ms: float | None = None
        self._started = self._ran = False

    @property
    def remote(self) -> bool:
        return self.workers > 0 or self.ray is not None

    def __enter__(self) -> Predictor:
        self.start()
        return self

    def __exit__(self, exc_type: object, *rest: object) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()

    def start(self) -> CacheInfo:
        """Build the cache (in each worker); CacheLoadError when it cannot be."""
        if self._started:
            assert self.info is not None
            return self.info
        self._started = True
        if not self.remote:
            cache = self.cache.build() if isinstance(self.cache, CacheSpec) else self.cache
            bound = bind_cache(cache)
            self._local = cache
            meta = PredictTask().setup(cache)
            self.info = CacheInfo(
                name=cache_name_of(cache),
                ref=cache_ref_of(cache),
                cost_per_call_usd=meta["cost_per_call_usd"],
                has_prepare=bound.prepare is not None,
                price_error=meta["price_error"],
                version=meta["version"],
            )
            return self.info
        spec = self.cache.portable()
        task = PredictTask(self.timeout_ms)
        if self.ray is not None:
            from .ray_backend import RayBackend

            ray_backend = RayBackend(spec, task, self.ray, self.workers or None)
            backend: Backend = ray_backend
            n = ray_backend.workers
        else:
            backend = ProcessBackend(
                spec,
                task,
                threads=threads_per_worker(self.workers),
                timeout_ms=self.timeout_ms,
                lost=self._lost,
                wrap=self.wrap,
                prepare_s=self.prepare_timeout_s,
            )
            n = self.workers
        self.runner = BlockRunner(backend, n, self._lost)
        try:
            meta = self.runner.start()
        except BaseException:
            self.runner.abort()
            raise
        self.info = CacheInfo(
            name=meta["name"],
            ref=meta["ref"],
            cost_per_call_usd=dict(meta["cost_per_call_usd"]),
            has_prepare=bool(meta["has_prepare"]),
            price_error=meta["price_error"],
            version=str(meta.get("version", "unknown")),
        )
        return self.info

    @staticmethod
    def _lost(n: int, message: str) -> list[Any]:
        return [[False, None, None, "error", None, message] for _ in range(n)]

    def run(
        self,
        items: Iterable[Row | Pair],
        *,
        progress: ProgressCallback | None = None,
        total: int | None = None,
    ) -> Iterator[Prediction]:
        """The prediction of every item, in order (ids: the items' ids).

        A real Ctrl-C raises :class:`~cacheeval.run.harness.RunInterrupted`; its
        ``predictions`` are those decided but not yet yielded (in process:
        the interrupted block's first rows; on workers: none).
        """
        if self._ran:
            raise RuntimeError("a Predictor runs once")
        self._ran = True
        info = self.start()
        if total is None and hasattr(items, "__len__"):
            total = len(items)  # type: ignore[arg-type]
        if self.remote:
            return self._run_remote(items, progress, total or 0)
        if info.has_prepare:
            return self._run_local_prepared(items, progress, total or 0)
        return self._run_local(items, BlockSizer(self.block_size), progress, total or 0)

    # -- in this process --------------------------------------------------------------

    def _run_local(
        self,
        items: Iterable[Row | Pair],
        sizer: BlockSizer,
        progress: ProgressCallback | None,
        total: int,
    ) -> Iterator[Prediction]:
        call = call_only(self._local)
        first, done = 1, 0
        it = iter(items)
        while block := list(islice(it, sizer.next())):
            try:
                preds = predict(
                    call,
                    cast("list[Row]", block),
                    on_error=self.on_error,
                    timeout_ms=self.timeout_ms,
                    first_index=first,
                )
            except RunInterrupted as stop:
                raise RunInterrupted(stop.predictions, total) from None
            sizer.record(p.latency_ms for p in preds)
            yield from preds
            first += len(block)
            done += len(block)
            if progress is not None:
                progress(done, total)

    def _run_local_prepared(
        self, items: Iterable[Row | Pair], progress: ProgressCallback | None, total: int
    ) -> Iterator[Prediction]:
        ids: list[str] = []
        pairs: list[Pair] = []
        for item in items:  # prepare sees the whole run: hold it, as pairs
            ids.append(item.id)
            pairs.extend(as_pairs([item], len(ids)))
        size = self.block_size or block_size_for(len(pairs), 1)
        try:
            shown = as_pairs(pairs)
            t0 = time.perf_counter_ns()
            prepare_cache(self._local, shown)
            self._local_prepare_ms = (time.perf_counter_ns() - t0) / 1e6
        except CacheCallError as e:
            if isinstance(e.__context__, KeyboardInterrupt):
                raise RunInterrupted([], len(ids)) from None
            raise
        call = call_only(self._local)
        total = total or len(ids)
        for start in range(0, len(pairs), size):
            block = pairs[start : start + size]
            try:
                preds = predict(call, block, timeout_ms=self.timeout_ms, first_index=start + 1)
            except RunInterrupted as stop:
                partial_preds = [
                    _with_id(p, ids[start + k]) for k, p in enumerate(stop.predictions)
                ]
                raise RunInterrupted(partial_preds, len(ids)) from None
            for k, p in enumerate(preds):
                yield self._checked(_with_id(p, ids[start + k]))
            if progress is not None:
                progress(start + len(block), total)

    # -- on workers ---------------------------------------------------------------------

    def _run_remote(
        self, items: Iterable[Row | Pair], progress: ProgressCallback | None, total: int
    ) -> Iterator[Prediction]:
        assert self.runner is not None and self.info is not None
        runner = self.runner
        sizer = BlockSizer(self.block_size)

        def blocks() -> Iterator[tuple[list[str], int, list[Wire]]]:
            first = 1
            it = iter(items)
            while chunk := list(islice(it, sizer.next())):
                wire = [to_wire(item, i) for i, item in enumerate(chunk, first)]
                yield [item.id for item in chunk], first, wire
                first += len(chunk)

        def held() -> Iterator[tuple[list[str], int, list[Wire]]]:
            # prepare sees each worker's whole shard: hold the run, as wire pairs
            ids: list[str] = []
            wire: list[Wire] = []
            for i, item in enumerate(items, 1):
                ids.append(item.id)
                wire.append(to_wire(item, i))
            size = self.block_size or block_size_for(len(wire), len(runner.slots))
            for k in range(0, len(wire), size):
                yield ids[k : k + size], k + 1, wire[k : k + size]

        source = held() if self.info.has_prepare else blocks()
        try:
            for ids, results in runner.run(source, progress=progress, total=total):
                sizer.record(res[4] for res in results)
                for rid, res in zip(ids, results, strict=True):
                    yield self._checked(Prediction(rid, *res))
        except KeyboardInterrupt:
            raise RunInterrupted([], total) from None

    def prepare_times(self) -> list[float] | None:
        """After :meth:`run`: the wall time (ms) of ``prepare`` in each process
        that ran it (one in this process); None when the cache has no
        ``prepare``."""
        if self.info is None or not self.info.has_prepare:
            return None
        if self.runner is not None:
            return self.runner.prepare_times()
        return [] if self._local_prepare_ms is None else [self._local_prepare_ms]

    def _checked(self, pred: Prediction) -> Prediction:
        if self.on_error == "raise" and pred.error is not None:
            raise CacheCallError(f"row {pred.id}: {pred.error}")
        return pred

    # -- the end -------------------------------------------------------------------------

    def close(self) -> None:
        """Close the cache (in every worker). A problem ``close`` reports is a
        CacheCallError under ``on_error="raise"``, else a warning."""
        if not self.remote:
            if self._local is None:
                return
            problem = PredictTask().close(self._local)
            self._local = None
            problems = [problem] if problem else []
        else:
            problems = self.runner.close() if self.runner is not None else []
        for problem in dict.fromkeys(problems):
            if self.on_error == "raise":
                raise CacheCallError(problem)
            warnings.warn(f"cache {problem}", stacklevel=2)

    def abort(self) -> None:
        """Stop at once (workers killed); the cache's ``close`` still runs in
        this process."""
        if self.runner is not None:
            self.runner.abort()
        elif self._local is not None:
            problem = PredictTask().close(self._local)
            self._local = None
            if problem:
                warnings.warn(f"cache {problem}", stacklevel=2)


def map_blocks(
    spec: CacheSpec,
    task: BlockTask,
    items: Iterable[Any],
    *,
    lost: Callable[[int, str], list[Any]],
    workers: int = 2,
    ray: str | None = None,
    block_size: int = MAX_BLOCK,
    progress: ProgressCallback | None = None,
) -> Iterator[Any]:
    """Run any :class:`BlockTask` over ``items`` on ``workers`` worker
    processes (or Ray actors), yielding one result per item, in order; the
    workers are stopped when the iterator is exhausted or closed.

    The general form of :class:`Predictor` for other kinds of runs: the
    lookup phase of ``cacheeval replay``, for one, is a task whose ``setup``
    puts the run's entries into each worker's store and whose ``run`` looks a
    block of requests up; ``lost(n, message)`` gives the results of ``n``
    items whose worker died twice (error lookups). Items must pickle.
    """
    spec = spec.portable()
    if ray is not None:
        from .ray_backend import RayBackend

        ray_backend = RayBackend(spec, task, ray, workers or None)
        backend: Backend = ray_backend
        workers = ray_backend.workers
    else:
        backend = ProcessBackend(spec, task, threads=threads_per_worker(workers), lost=lost)
    runner = BlockRunner(backend, workers, lost)
    try:
        runner.start()

        def blocks() -> Iterator[tuple[None, int, list[Any]]]:
            first = 1
            it = iter(items)
            while chunk := list(islice(it, block_size)):
                yield None, first, chunk
                first += len(chunk)

        for _, results in runner.run(blocks(), progress=progress):
            yield from results
    except BaseException:
        runner.abort()
        raise
    problems = runner.close()
    for problem in dict.fromkeys(problems):
        warnings.warn(f"cache {problem}", stacklevel=2)


def _with_id(pred: Prediction, row_id: str) -> Prediction:
    return Prediction(
        row_id, pred.is_hit, pred.confidence, pred.score, pred.tier_used, pred.latency_ms,
        pred.error,
    )  # fmt: skip


def predict_parallel(
    cache: Any,
    rows: Iterable[Row | Pair],
    *,
    workers: int = 2,
    ray: str | None = None,
    on_error: OnError = "miss",
    timeout_ms: float | None = None,
    progress: ProgressCallback | None = None,
    block_size: int | None = None,
) -> list[Prediction]:
    """:func:`cacheeval.run.harness.predict` on ``workers`` worker processes (or
    Ray actors): the same predictions, in row order, whatever ``workers``.
    ``cache`` is a :class:`CacheSpec` (``workers=0`` also takes a cache)."""
    out: list[Prediction] = []
    items = rows if isinstance(rows, list) else list(rows)
    with Predictor(
        cache,
        workers=workers,
        ray=ray,
        on_error=on_error,
        timeout_ms=timeout_ms,
        block_size=block_size,
    ) as predictor:
        try:
            out.extend(predictor.run(items, progress=progress))
        except RunInterrupted as stop:
            raise RunInterrupted(out + stop.predictions, len(items)) from None
    return out
