"""Predict with many processes: local worker processes (``--workers N``) or
Ray actors (``--ray``), and the streaming, in-process run they extend.

How a run is cut up. The rows are cut, in order, into contiguous blocks; each
block travels to a worker as :class:`~cacheeval.schema.Pair` records only
(never a row: the labels stay in this process, so a cache in a worker cannot
read the truth table even through ``gc``), numbered ``p<i>`` by the row's
position in the whole run, so what a cache sees does not depend on the number
of workers. Each worker builds the cache once from a :class:`CacheSpec` (a
cache object is never pickled), and the predictions come back to be merged in
row order. Per-call latency is timed inside the worker around the call alone,
by :func:`cacheeval.harness.predict`, which each worker runs on its blocks.

* A cache without ``prepare`` gets its blocks as they are read (any free
  worker takes the next block; at most ``depth`` blocks wait per worker and
  at most a bounded number of decided blocks wait to be merged), so a run
  over millions of rows streams in memory that does not grow with the run.
* A cache with ``prepare`` must see every pair it will decide before its
  first call: the run is read whole and split into one contiguous shard per
  worker; each worker calls ``prepare`` once on its own shard.

A worker that dies (killed, ``os._exit``, a segfault) loses no rows: the block
it was deciding is retried once on a fresh worker; if that one dies on it too
the block's rows come back as error rows (``WorkerDied: ...``), so the report
accounts for every row and none is counted twice. Blocks queued behind the
dying one were never started and are simply resent.

``on_error="raise"`` is enforced here, in row order: the first failed row (in
row order, whichever worker decided it) stops the run with
:class:`~cacheeval.harness.CacheCallError`; workers may have decided up to a
block or two past it by then.

:class:`BlockRunner` is the engine and knows nothing about predictions: it
runs a :class:`BlockTask` (what a worker does with its cache) over blocks on a
backend (local processes here, Ray actors in :mod:`cacheeval.ray_backend`).
``cacheeval replay`` can run its lookup phase on it with a task whose
``setup`` puts the entries and whose ``run`` looks a block of requests up.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import signal
import threading
import time
import warnings
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import partial
from itertools import islice
from multiprocessing.connection import Connection, wait
from typing import Any, Protocol, cast

from .harness import (
    CacheCallError,
    CacheLoadError,
    OnError,
    RunInterrupted,
    as_pairs,
    bind_cache,
    cache_name_of,
    cache_ref_of,
    cost_table,
    describe_exception,
    predict,
)
from .predictions import Prediction
from .progress import ProgressCallback
from .schema import Pair, Row

#: Rows per block when the run's length is unknown (and the most ever).
MAX_BLOCK = 256
#: Blocks sent ahead to one worker (one deciding, the rest waiting).
DEPTH = 2
#: Seconds a worker gets to run ``close()`` and exit once told to stop.
STOP_GRACE_S = 30.0


# --- what to build in a worker ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CacheSpec:
    """How to build a cache in another process: a baseline name, or a module
    (dotted name or path to a ``.py`` file) with an optional class and its
    constructor arguments, as :func:`cacheeval.harness.load_cache` takes them.

    >>> CacheSpec(baseline="exact_match").build().name
    'exact_match'
    """

    module: str | None = None
    class_name: str | None = None
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    baseline: str | None = None

    def __post_init__(self) -> None:
        if (self.module is None) == (self.baseline is None):
            raise ValueError("a CacheSpec names exactly one of module= and baseline=")

    def build(self) -> Any:
        """A fresh cache (:class:`~cacheeval.harness.CacheLoadError` on failure)."""
        from .baselines import make_baseline
        from .harness import load_cache

        if self.baseline is not None:
            try:
                return make_baseline(self.baseline)
            except ValueError as e:
                raise CacheLoadError(str(e)) from None
        assert self.module is not None
        return load_cache(self.module, self.class_name, self.kwargs)

    def portable(self) -> CacheSpec:
        """The same spec with a ``.py`` path made absolute, for a worker that
        may run in another directory."""
        m = self.module
        if m is not None and (m.endswith(".py") or "/" in m or os.sep in m):
            return CacheSpec(os.path.abspath(m), self.class_name, dict(self.kwargs))
        return self


# --- what a worker does -----------------------------------------------------------------


class BlockTask(Protocol):
    """What a worker does with its cache. Runs in the worker; must pickle."""

    def setup(self, cache: Any) -> dict[str, Any]:
        """Once, after the cache is built: anything the driver should know
        (``has_prepare`` among it: True asks for one ``prepare`` per shard)."""
        ...

    def prepare(self, cache: Any, items: list[Any]) -> None:
        """Once per worker before its first block, when ``has_prepare``;
        raises :class:`~cacheeval.harness.CacheCallError` to stop the run."""
        ...

    def run(self, cache: Any, first_index: int, items: list[Any]) -> list[Any]:
        """One result per item, in order; ``first_index`` is the first item's
        1-based position in the whole run."""
        ...

    def close(self, cache: Any) -> str | None:
        """Once at the end; a problem to report, or None."""
        ...


@dataclass(frozen=True, slots=True)
class PredictTask:
    """The worker side of a prediction run: :func:`~cacheeval.harness.predict`
    on each block (errors become error rows), results as compact tuples
    ``(is_hit, confidence, score, tier_used, latency_ms, error)``."""

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
        }

    def prepare(self, cache: Any, items: list[Any]) -> None:
        prepare = bind_cache(cache).prepare
        assert prepare is not None
        try:
            prepare(items)
        except BaseException as e:
            raise CacheCallError(f"prepare() raised {describe_exception(e)}") from None

    def run(self, cache: Any, first_index: int, items: list[Any]) -> list[Any]:
        preds = predict(
            call_only(cache), items, timeout_ms=self.timeout_ms, first_index=first_index
        )
        return [
            (p.is_hit, p.confidence, p.score, p.tier_used, p.latency_ms, p.error) for p in preds
        ]

    def close(self, cache: Any) -> str | None:
        close = bind_cache(cache).close
        if close is None:
            return None
        try:
            close()
        except Exception as e:
            return f"close() raised {describe_exception(e)}"
        return None


def call_only(cache: Any) -> Callable[[Pair], Any]:
    """The cache's call with nothing else (no ``prepare``/``close`` for
    :func:`~cacheeval.harness.predict` to find): blocks of one run must not
    prepare or close the cache again."""
    return partial(bind_cache(cache).call)


# --- local worker processes ---------------------------------------------------------------


def _detach() -> None:
    """In a worker: leave the terminal's process group, so a Ctrl-C meant for
    the driver does not kill the cache mid-call (the driver stops the
    workers itself), and exit when the driver is gone."""
    try:
        os.setpgrp()
    except (AttributeError, OSError):
        pass
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    parent = os.getppid()

    def watch() -> None:
        while True:
            time.sleep(0.5)
            if os.getppid() != parent:
                os._exit(3)

    threading.Thread(target=watch, name="cacheeval-parent-watch", daemon=True).start()


def _process_main(conn: Connection, spec: CacheSpec, task: BlockTask) -> None:
    """A worker process: build the cache, then answer the driver's messages."""
    _detach()
    try:
        cache = spec.build()
        meta = task.setup(cache)
    except CacheLoadError as e:
        conn.send(("load_error", str(e)))
        return
    except BaseException as e:
        conn.send(("load_error", f"building the cache raised {describe_exception(e)}"))
        return
    conn.send(("ready", meta))
    problem: str | None = None
    try:
        while True:
            try:
                msg = conn.recv()
            except EOFError:
                return
            if msg[0] == "stop":
                break
            try:
                if msg[0] == "prepare":
                    task.prepare(cache, msg[1])
                    conn.send(("prepared",))
                else:
                    _, block_no, first_index, items = msg
                    conn.send(("done", block_no, task.run(cache, first_index, items)))
            except CacheCallError as e:
                conn.send(("fatal", str(e)))
                return
            except Exception as e:
                conn.send(("fatal", f"the worker failed: {describe_exception(e)}"))
                return
    finally:
        problem = task.close(cache)
        try:
            conn.send(("closed", problem))
        except (OSError, ValueError):
            pass


def exit_reason(code: int | None) -> str:
    """How a process ended, in words.

    >>> exit_reason(-9), exit_reason(1)
    ('was killed by SIGKILL', 'exited with code 1')
    """
    if code is None:
        return "stopped answering"
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


#: An event from a backend: (kind, slot, generation, payload).
Event = tuple[str, int, int, Any]


class Backend(Protocol):
    """Where workers run. Each slot holds one worker at a time; ``gen``
    counts the workers a slot has had, so late news of a dead one is ignored."""

    def spawn(self, slot: int, gen: int) -> None: ...
    def prepare(self, slot: int, items: list[Any]) -> None: ...
    def submit(self, slot: int, block_no: int, first_index: int, items: list[Any]) -> None: ...
    def poll(self) -> list[Event]: ...
    def stop(self, slot: int) -> None: ...
    def kill(self, slot: int) -> None: ...
    def shutdown(self) -> None: ...


class ProcessBackend:
    """Worker processes on this machine (``spawn`` context: a fresh
    interpreter each, nothing inherited from the driver but the spec), one
    pipe each."""

    def __init__(self, spec: CacheSpec, task: BlockTask, start_method: str = "spawn") -> None:
        self._ctx: Any = multiprocessing.get_context(start_method)
        self._spec = spec
        self._task = task
        self._workers: dict[int, tuple[Any, Connection, int]] = {}

    def spawn(self, slot: int, gen: int) -> None:
        ours, theirs = self._ctx.Pipe(duplex=True)
        proc = self._ctx.Process(
            target=_process_main,
            args=(theirs, self._spec, self._task),
            name=f"cacheeval-worker-{slot}",
        )
        proc.start()
        theirs.close()
        self._workers[slot] = (proc, ours, gen)

    def _send(self, slot: int, msg: tuple[Any, ...]) -> None:
        try:
            self._workers[slot][1].send(msg)
        except (OSError, ValueError):
            pass  # the worker is gone: poll() reports it

    def prepare(self, slot: int, items: list[Any]) -> None:
        self._send(slot, ("prepare", items))

    def submit(self, slot: int, block_no: int, first_index: int, items: list[Any]) -> None:
        self._send(slot, ("run", block_no, first_index, items))

    def stop(self, slot: int) -> None:
        self._send(slot, ("stop",))

    def poll(self) -> list[Event]:
        by_conn = {conn: slot for slot, (_, conn, _) in self._workers.items()}
        by_sentinel = {proc.sentinel: slot for slot, (proc, _, _) in self._workers.items()}
        if not by_conn:
            return []
        ready = wait([*by_conn, *by_sentinel])
        events: list[Event] = []
        dead: set[int] = set()
        for obj in ready:
            if obj in by_conn:
                slot = by_conn[obj]
                proc, conn, gen = self._workers[slot]
                try:
                    while conn.poll():
                        msg = conn.recv()
                        events.append((msg[0], slot, gen, msg[1:]))
                except (EOFError, OSError):
                    dead.add(slot)
        for obj in ready:
            if obj in by_sentinel:
                slot = by_sentinel[obj]  # type: ignore[index]
                proc, conn, gen = self._workers[slot]
                try:  # what it said before it died still counts
                    while conn.poll():
                        msg = conn.recv()
                        events.append((msg[0], slot, gen, msg[1:]))
                except (EOFError, OSError):
                    pass
                dead.add(slot)
        for slot in dead:
            proc, conn, gen = self._workers.pop(slot)
            proc.join(1.0)
            conn.close()
            events.append(("died", slot, gen, exit_reason(proc.exitcode)))
        return events

    def kill(self, slot: int) -> None:
        entry = self._workers.pop(slot, None)
        if entry is not None:
            proc, conn, _ = entry
            proc.kill()
            proc.join(5.0)
            conn.close()

    def shutdown(self) -> None:
        for slot in list(self._workers):
            self.kill(slot)

    def pids(self) -> dict[int, int]:
        """slot -> process id of its current worker (for tests and tools)."""
        return {slot: proc.pid for slot, (proc, _, _) in self._workers.items()}


# --- the engine ---------------------------------------------------------------------------


@dataclass(slots=True)
class _Block:
    no: int
    first_index: int
    items: list[Any]
    tag: Any
    attempts: int = 0


@dataclass(slots=True)
class _Slot:
    index: int
    gen: int = 0
    state: str = "starting"  # starting | ready | dead | stopped
    prepared: bool = False
    preparing: bool = False
    prepare_deaths: int = 0
    inflight: deque[_Block] = field(default_factory=deque)
    pending: deque[_Block] = field(default_factory=deque)  # its shard (prepare mode)


class BlockRunner:
    """Runs a :class:`BlockTask` over blocks on ``workers`` workers of a
    :class:`Backend` (module docstring): :meth:`start` builds the caches and
    returns the first worker's ``setup`` answer, :meth:`run` streams the
    results in block order, :meth:`close` stops the workers and returns what
    their ``close`` reported."""

    def __init__(
        self,
        backend: Backend,
        workers: int,
        lost: Callable[[int, str], list[Any]],
        *,
        depth: int = DEPTH,
        max_ahead: int | None = None,
    ) -> None:
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        self.backend = backend
        self.slots = [_Slot(i) for i in range(workers)]
        self.lost = lost
        self.depth = depth
        self.max_ahead = max_ahead if max_ahead is not None else 4 * workers * depth
        self.meta: dict[str, Any] = {}
        self.worker_deaths = 0
        self._ran = False

    # -- lifecycle --------------------------------------------------------------------

    def start(self) -> dict[str, Any]:
        """Start every worker and wait until each has built its cache."""
        for slot in self.slots:
            self.backend.spawn(slot.index, slot.gen)
        waiting = {s.index for s in self.slots}
        while waiting:
            for kind, index, gen, payload in self.backend.poll():
                slot = self.slots[index]
                if gen != slot.gen:
                    continue
                if kind == "ready":
                    slot.state = "ready"
                    waiting.discard(index)
                    if not self.meta:
                        self.meta = dict(payload[0])
                elif kind == "load_error":
                    raise CacheLoadError(payload[0])
                elif kind == "died":
                    raise CacheLoadError(f"a worker {payload} while building the cache")
        return self.meta

    def close(self) -> list[str]:
        """Stop the workers, waiting for their ``close``; the problems they reported."""
        problems: list[str] = []
        live = [s for s in self.slots if s.state == "ready"]
        for slot in live:
            self.backend.stop(slot.index)
        waiting = {s.index for s in live}
        deadline = time.monotonic() + STOP_GRACE_S
        while waiting and time.monotonic() < deadline:
            for kind, index, gen, payload in self.backend.poll():
                if gen != self.slots[index].gen:
                    continue
                if kind == "closed":
                    if payload[0]:
                        problems.append(payload[0])
                    waiting.discard(index)
                elif kind == "died":
                    waiting.discard(index)
        self.backend.shutdown()
        for slot in self.slots:
            slot.state = "stopped"
        return problems

    def abort(self) -> None:
        """Kill every worker now."""
        self.backend.shutdown()
        for slot in self.slots:
            slot.state = "stopped"

    # -- the run ----------------------------------------------------------------------------

    def run(
        self,
        blocks: Iterable[tuple[Any, int, list[Any]]],
        *,
        progress: ProgressCallback | None = None,
        total: int = 0,
    ) -> Iterator[tuple[Any, list[Any]]]:
        """``(tag, results)`` for each ``(tag, first_index, items)`` block, in
        order. ``total`` (rows, 0 if unknown) is passed to ``progress``."""
        if self._ran:
            raise RuntimeError("a BlockRunner runs once")
        self._ran = True
        prepare_mode = bool(self.meta.get("has_prepare"))
        source: Iterator[_Block] = (
            _Block(no, first, items, tag) for no, (tag, first, items) in enumerate(blocks)
        )
        retry: deque[_Block] = deque()
        if prepare_mode:
            self._shard(list(source))
            source = iter(())
            for slot in self.slots:
                self._send_prepare(slot)
        done: dict[int, tuple[Any, list[Any]]] = {}
        next_out = next_in = rows_done = 0
        exhausted = prepare_mode
        while True:
            # 1. hand out blocks
            for slot in self.slots:
                if slot.state != "ready" or (prepare_mode and not slot.prepared):
                    continue
                while len(slot.inflight) < self.depth:
                    if prepare_mode:
                        block = slot.pending.popleft() if slot.pending else None
                    elif retry:
                        block = retry.popleft()
                    elif exhausted or next_in - next_out >= self.max_ahead:
                        block = None
                    else:
                        block = next(source, None)
                        if block is None:
                            exhausted = True
                        else:
                            next_in += 1
                    if block is None:
                        break
                    self.backend.submit(slot.index, block.no, block.first_index, block.items)
                    slot.inflight.append(block)
            # 2. hand back what is decided, in order
            while next_out in done:
                yield done.pop(next_out)
                next_out += 1
            busy = any(s.inflight or s.pending or s.preparing for s in self.slots)
            if not busy and not retry and exhausted:
                if done:
                    raise AssertionError(f"blocks {sorted(done)} decided out of order")
                return
            # 3. wait for news
            events = self.backend.poll()
            if not events:
                raise RuntimeError("no worker left to decide the remaining blocks")
            for kind, index, gen, payload in events:
                slot = self.slots[index]
                if gen != slot.gen or slot.state == "dead":
                    continue
                if kind == "done":
                    block = slot.inflight.popleft()
                    if block.no != payload[0]:
                        raise AssertionError(f"block {payload[0]} came back for {block.no}")
                    done[block.no] = (block.tag, payload[1])
                    rows_done += len(block.items)
                    if progress is not None:
                        progress(rows_done, total)
                elif kind == "prepared":
                    slot.prepared, slot.preparing = True, False
                elif kind == "ready":
                    slot.state = "ready"
                    if prepare_mode:
                        self._send_prepare(slot)
                elif kind == "died":
                    rows_done += self._on_death(slot, str(payload), prepare_mode, retry, done)
                    if progress is not None:
                        progress(rows_done, total)
                elif kind == "fatal":
                    raise CacheCallError(payload[0])
                elif kind == "load_error":
                    raise CacheLoadError(payload[0])

    def _shard(self, blocks: list[_Block]) -> None:
        """Contiguous shards of about equal rows, one per worker."""
        n_rows = sum(len(b.items) for b in blocks)
        per = n_rows / len(self.slots) if self.slots else 0
        slot_i, acc = 0, 0
        for block in blocks:
            while slot_i < len(self.slots) - 1 and acc >= per * (slot_i + 1):
                slot_i += 1
            self.slots[slot_i].pending.append(block)
            acc += len(block.items)

    def _send_prepare(self, slot: _Slot) -> None:
        if slot.state != "ready" or not slot.pending:
            return
        items = [item for block in slot.pending for item in block.items]
        slot.preparing, slot.prepared = True, False
        self.backend.prepare(slot.index, items)

    def _on_death(
        self,
        slot: _Slot,
        reason: str,
        prepare_mode: bool,
        retry: deque[_Block],
        done: dict[int, tuple[Any, list[Any]]],
    ) -> int:
        """A worker died: retry or give up on its blocks, start a replacement.
        Returns the rows given up on (they are decided now, as errors)."""
        self.worker_deaths += 1
        self.backend.kill(slot.index)
        given_up = 0
        if slot.state == "starting":
            raise CacheLoadError(f"a replacement worker {reason} while building the cache")
        if slot.preparing:
            slot.prepare_deaths += 1
            if slot.prepare_deaths >= 2:
                raise CacheCallError(f"prepare() killed its worker twice (the worker {reason})")
        requeue = list(slot.inflight)
        slot.inflight.clear()
        if requeue:
            started = requeue[0]  # a worker decides its blocks in the order sent
            started.attempts += 1
            if started.attempts >= 2:
                requeue.pop(0)
                message = (
                    f"WorkerDied: the worker {reason} while deciding this block, "
                    "on the first try and on the retry"
                )
                done[started.no] = (started.tag, self.lost(len(started.items), message))
                given_up = len(started.items)
        if prepare_mode:
            slot.pending.extendleft(reversed(requeue))
        else:
            retry.extendleft(reversed(requeue))
        slot.state, slot.prepared, slot.preparing = "dead", False, False
        if not prepare_mode or slot.pending:
            slot.gen += 1
            slot.state = "starting"
            self.backend.spawn(slot.index, slot.gen)
        return given_up


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


def block_size_for(total: int | None, workers: int) -> int:
    """Rows per block: about eight blocks per worker, 1 to :data:`MAX_BLOCK`.

    >>> block_size_for(500, 2), block_size_for(None, 2), block_size_for(10**6, 8)
    (32, 256, 256)
    """
    if not total:
        return MAX_BLOCK
    return max(1, min(MAX_BLOCK, math.ceil(total / (8 * max(1, workers)))))


def _failed(row_id: str, error: str) -> Prediction:
    return Prediction(row_id, False, None, None, "error", None, error)


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
        self.info: CacheInfo | None = None
        self.runner: BlockRunner | None = None
        self._local: Any = None
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
            backend = ProcessBackend(spec, task)
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
        )
        return self.info

    @staticmethod
    def _lost(n: int, message: str) -> list[Any]:
        return [(False, None, None, "error", None, message)] * n

    def run(
        self,
        items: Iterable[Row | Pair],
        *,
        progress: ProgressCallback | None = None,
        total: int | None = None,
    ) -> Iterator[Prediction]:
        """The prediction of every item, in order (ids: the items' ids).

        A real Ctrl-C raises :class:`~cacheeval.harness.RunInterrupted`; its
        ``predictions`` are those decided but not yet yielded (in process:
        the interrupted block's first rows; on workers: none).
        """
        if self._ran:
            raise RuntimeError("a Predictor runs once")
        self._ran = True
        info = self.start()
        if total is None and hasattr(items, "__len__"):
            total = len(items)  # type: ignore[arg-type]
        size = self.block_size or block_size_for(total, max(1, self.workers))
        if self.remote:
            return self._run_remote(items, size, progress, total or 0)
        if info.has_prepare:
            return self._run_local_prepared(items, size, progress, total or 0)
        return self._run_local(items, size, progress, total or 0)

    # -- in this process --------------------------------------------------------------

    def _run_local(
        self, items: Iterable[Row | Pair], size: int, progress: ProgressCallback | None, total: int
    ) -> Iterator[Prediction]:
        call = call_only(self._local)
        first, done = 1, 0
        it = iter(items)
        while block := list(islice(it, size)):
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
            yield from preds
            first += len(block)
            done += len(block)
            if progress is not None:
                progress(done, total)

    def _run_local_prepared(
        self, items: Iterable[Row | Pair], size: int, progress: ProgressCallback | None, total: int
    ) -> Iterator[Prediction]:
        ids: list[str] = []
        pairs: list[Pair] = []
        for item in items:
            ids.append(item.id)
            pairs.extend(as_pairs([item], len(ids)))
        try:
            PredictTask().prepare(self._local, as_pairs(pairs))
        except CacheCallError as e:
            cause = e.__context__
            if isinstance(cause, KeyboardInterrupt):
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
        self, items: Iterable[Row | Pair], size: int, progress: ProgressCallback | None, total: int
    ) -> Iterator[Prediction]:
        assert self.runner is not None

        def blocks() -> Iterator[tuple[list[str], int, list[Pair]]]:
            first = 1
            it = iter(items)
            while chunk := list(islice(it, size)):
                yield [item.id for item in chunk], first, as_pairs(chunk, first)
                first += len(chunk)

        try:
            for ids, results in self.runner.run(blocks(), progress=progress, total=total):
                for rid, res in zip(ids, results, strict=True):
                    yield self._checked(Prediction(rid, *res))
        except KeyboardInterrupt:
            raise RunInterrupted([], total) from None

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
    """:func:`cacheeval.harness.predict` on ``workers`` worker processes (or
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
