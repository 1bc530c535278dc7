"""The engine under :mod:`cacheeval.run.parallel`: run a task over contiguous
blocks of items on a pool of workers, each holding one cache it built itself,
and hand the results back in block order.

It knows nothing about predictions. A :class:`BlockTask` says what a worker
does with its cache (``setup`` once, ``prepare`` once per shard when the cache
asks for it, ``run`` per block, ``close`` at the end); a :class:`Backend` says
where workers run (:class:`cacheeval.run.procpool.ProcessBackend`: processes on
this machine; :class:`cacheeval.run.ray_backend.RayBackend`: Ray actors).
:class:`BlockRunner` hands out blocks (any free worker takes the next one,
at most ``depth`` per worker; with ``prepare``, one contiguous shard per
worker), merges the results in order, and survives workers that die: the
block a dead worker was deciding is retried once on a fresh worker, then its
rows are given up as ``lost`` results, so every item gets exactly one result.

``cacheeval replay`` can run its lookup phase on it: a task whose ``setup``
puts the entries into the worker's store and whose ``run`` looks a block of
requests up (``has_prepare`` False), and whose lost results are error lookups.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..support.progress import ProgressCallback
from .harness import CacheCallError, CacheLoadError

#: Blocks sent ahead to one worker (one deciding, the rest waiting).
DEPTH = 2
#: Seconds a worker gets to run ``close()`` and exit once told to stop.
STOP_GRACE_S = 30.0

# --- what to build in a worker ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CacheSpec:
    """How to build a cache in another process: a baseline name, or a module
    (dotted name or path to a ``.py`` file) with an optional class and its
    constructor arguments, as :func:`cacheeval.run.harness.load_cache` takes them.
    ``loader`` (``"package.module:function"``) replaces ``load_cache`` for
    other kinds of caches (a shared cache for ``replay``): it is called as
    ``function(module, class_name, kwargs)`` in the worker.

    >>> CacheSpec(baseline="exact_match").build().name
    'exact_match'
    """

    module: str | None = None
    class_name: str | None = None
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    baseline: str | None = None
    loader: str | None = None

    def __post_init__(self) -> None:
        if (self.module is None) == (self.baseline is None):
            raise ValueError("a CacheSpec names exactly one of module= and baseline=")

    def build(self) -> Any:
        """A fresh cache (:class:`~cacheeval.run.harness.CacheLoadError` on failure)."""
        from ..baselines import make_baseline
        from .harness import load_cache

        if self.baseline is not None:
            try:
                return make_baseline(self.baseline)
            except ValueError as e:
                raise CacheLoadError(str(e)) from None
        assert self.module is not None
        if self.loader is None:
            return load_cache(self.module, self.class_name, self.kwargs)
        where, _, name = self.loader.partition(":")
        try:
            load = getattr(importlib.import_module(where), name)
        except (ImportError, AttributeError) as e:
            raise CacheLoadError(f"cannot find the loader {self.loader!r}: {e}") from None
        return load(self.module, self.class_name, dict(self.kwargs))

    def wrapped_by(self, loader: str) -> CacheSpec:
        """A spec whose ``loader`` (``"package.module:function"``) builds a
        cache around this one: it receives this spec's fields as
        ``kwargs["inner"]`` (``--keyed`` wraps a cache this way).

        >>> spec = CacheSpec(baseline="exact_match").wrapped_by("adapters.keyed:load_keyed")
        >>> spec.module, spec.kwargs["inner"]["baseline"]
        ('adapters.keyed', 'exact_match')
        """
        inner = dataclasses.asdict(self.portable())
        return CacheSpec(module=loader.partition(":")[0], kwargs={"inner": inner}, loader=loader)

    def portable(self) -> CacheSpec:
        """The same spec with a ``.py`` path made absolute, for a worker that
        may run in another directory."""
        m = self.module
        if m is not None and (m.endswith(".py") or "/" in m or os.sep in m):
            return dataclasses.replace(self, module=os.path.abspath(m))
        return self


# --- what a worker does -----------------------------------------------------------------


class BlockTask(Protocol):
    """What a worker does with its cache. Runs in the worker; must pickle."""

    def setup(self, cache: Any) -> dict[str, Any]:
        """Once, after the cache is built: anything the driver should know
        (``has_prepare`` among it: True asks for one ``prepare`` per shard)."""
        ...

    def prepare(self, cache: Any, items: list[Any]) -> float | None:
        """Once per worker before its first block, when ``has_prepare``;
        raises :class:`~cacheeval.run.harness.CacheCallError` to stop the run.
        Returns its wall time in ms when it measures it (else None)."""
        ...

    def run(self, cache: Any, first_index: int, items: list[Any]) -> list[Any]:
        """One result per item, in order; ``first_index`` is the first item's
        1-based position in the whole run."""
        ...

    def close(self, cache: Any) -> str | None:
        """Once at the end; a problem to report, or None."""
        ...


#: An event from a backend: (kind, slot, generation, payload). Kinds: ready
#: (meta), load_error (message), prepared, done (block number, results),
#: fatal (message), closed (problem or None), died (reason).
Event = tuple[str, int, int, Any]


class Backend(Protocol):
    """Where workers run. Each slot holds one worker at a time; ``gen``
    counts the workers a slot has had, so late news of a dead one is ignored."""

    def spawn(self, slot: int, gen: int) -> None: ...
    def prepare(self, slot: int, items: list[Any]) -> None: ...
    def submit(self, slot: int, block_no: int, first_index: int, items: list[Any]) -> None: ...
    def poll(self, timeout: float | None = None) -> list[Event]:
        """Wait for news (at most ``timeout`` seconds: then maybe none)."""
        ...

    def stop(self, slot: int) -> None: ...
    def kill(self, slot: int) -> None: ...
    def shutdown(self) -> None: ...


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
    #: Wall time (ms) of the last ``prepare`` this slot's worker reported.
    prepare_ms: float | None = None
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
        while waiting and (left := deadline - time.monotonic()) > 0:
            for kind, index, gen, payload in self.backend.poll(timeout=left):
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
            # 1. hand back what is decided, in order (frees room to read ahead)
            while next_out in done:
                yield done.pop(next_out)
                next_out += 1
            # 2. hand out blocks
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
            busy = any(s.inflight or s.pending or s.preparing for s in self.slots)
            if not busy and not retry and exhausted:
                if done:
                    raise AssertionError(f"blocks {sorted(done)} decided out of order")
                return
            if not busy and not any(s.state == "starting" for s in self.slots):
                # nothing can arrive: the block next in order is neither out nor coming
                raise AssertionError(f"stalled waiting for block {next_out}")
            # 3. wait for news
            events = self.backend.poll()
            if not events:
                raise RuntimeError("no worker left to decide the remaining blocks")
            for kind, index, gen, payload in events:
                slot = self.slots[index]
                if gen != slot.gen or slot.state == "dead":
                    continue
                if kind == "done":
                    # a worker decides its blocks in order, but news of two of
                    # them may arrive together in any order (ray.wait)
                    block = next((b for b in slot.inflight if b.no == payload[0]), None)
                    if block is None:
                        raise AssertionError(f"block {payload[0]} came back unasked")
                    slot.inflight.remove(block)
                    done[block.no] = (block.tag, payload[1])
                    rows_done += len(block.items)
                    if progress is not None:
                        progress(rows_done, total)
                elif kind == "prepared":
                    slot.prepared, slot.preparing = True, False
                    slot.prepare_ms = payload[0] if payload else None
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

    def prepare_times(self) -> list[float]:
        """The wall time (ms) of ``prepare`` on each worker that reported one
        (a replacement worker's time replaces its predecessor's)."""
        return [s.prepare_ms for s in self.slots if s.prepare_ms is not None]

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
