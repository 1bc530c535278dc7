"""Ray actors as the workers of :class:`cacheeval.run.blockrun.BlockRunner`
(``--ray [ADDRESS]``). The only module that imports ``ray`` (optional extra
``cacheeval[scale]``), and only when a Ray run starts.

One actor per worker holds a cache it built itself from the
:class:`~cacheeval.run.blockrun.CacheSpec`; each block of pairs is one actor task,
and the driver waits on the tasks' object refs with ``ray.wait``. At most a
couple of blocks are in flight per actor (the runner's back-pressure), so the
object store and the driver's memory stay bounded however long the run. An
actor that dies fails its pending tasks with ``RayActorError``: the runner
retries the block it was deciding once on a fresh actor, then scores it as
error rows. Ray's own restart machinery is left off (``max_restarts=0``):
a restarted actor would lose the shard it prepared, so the runner starts the
replacement itself and prepares it again.

Without an address a Ray instance is started on this machine with
``num_cpus = workers`` (and shut down at the end); with one the driver joins
that cluster, whose nodes need ``cacheeval`` and the cache's module
importable (``pip install 'cacheeval[scale]'`` and the cache's package).
"""

from __future__ import annotations

import os
import time
from typing import Any

from ..schema import MAX_ERROR_CHARS
from .blockrun import BlockTask, CacheSpec, Event
from .harness import CacheCallError, CacheLoadError, describe_exception
from .wire import WireError, clean_text, prepare_ms

#: Object store of a local Ray instance: blocks are small, the default (30%
#: of RAM) would only reserve shared memory the run never uses.
LOCAL_OBJECT_STORE_BYTES = 256 * 1024 * 1024
#: Seconds per ``ray.wait`` round, so Ctrl-C is seen promptly.
WAIT_S = 1.0


class CacheActor:
    """The body of a Ray actor: a cache built once, blocks decided on demand."""

    def __init__(self, spec: CacheSpec, task: BlockTask) -> None:
        self.task = task
        self.cache: Any = None
        try:
            self.cache = spec.build()
            self.hello_: tuple[str, Any] = ("ready", task.setup(self.cache))
        except CacheLoadError as e:
            self.hello_ = ("load_error", str(e))
        except BaseException as e:  # a constructor may raise anything
            self.hello_ = ("load_error", f"building the cache raised {describe_exception(e)}")

    def hello(self) -> tuple[str, Any]:
        return self.hello_

    def prepare(self, items: list[Any]) -> float | None:
        took: float | None = self.task.prepare(self.cache, items)
        return took

    def run(self, first_index: int, items: list[Any]) -> list[Any]:
        return self.task.run(self.cache, first_index, items)

    def close(self) -> str | None:
        return None if self.cache is None else self.task.close(self.cache)

    def pid(self) -> int:
        return os.getpid()


class RayBackend:
    """A :class:`~cacheeval.run.blockrun.Backend` on Ray actors."""

    def __init__(self, spec: CacheSpec, task: BlockTask, address: str, workers: int | None) -> None:
        try:
            import ray
        except ImportError:
            raise CacheLoadError(
                "--ray needs the ray package: pip install 'cacheeval[scale]'"
            ) from None
        self.ray = ray
        self._own = False
        if not ray.is_initialized():
            try:
                if address == "local":
                    ray.init(
                        num_cpus=workers or os.cpu_count() or 1,
                        include_dashboard=False,
                        object_store_memory=LOCAL_OBJECT_STORE_BYTES,
                    )
                else:
                    ray.init(address=address)
            except Exception as e:
                where = "a local Ray" if address == "local" else f"the Ray cluster at {address}"
                raise CacheLoadError(f"cannot start {where}: {describe_exception(e)}") from None
            self._own = True
        cpus = int(ray.cluster_resources().get("CPU", 1))
        self.workers = workers or max(1, cpus)
        self._spec = spec
        self._task = task
        self._actor_class: Any = ray.remote(num_cpus=1, max_restarts=0, max_task_retries=0)(
            CacheActor
        )
        self._actors: dict[int, tuple[Any, int]] = {}
        self._pending: dict[Any, tuple[int, int, str, int]] = {}

    def spawn(self, slot: int, gen: int) -> None:
        actor = self._actor_class.remote(self._spec, self._task)
        self._actors[slot] = (actor, gen)
        self._pending[actor.hello.remote()] = (slot, gen, "hello", -1)

    def prepare(self, slot: int, items: list[Any]) -> None:
        actor, gen = self._actors[slot]
        self._pending[actor.prepare.remote(items)] = (slot, gen, "prepare", -1)

    def submit(self, slot: int, block_no: int, first_index: int, items: list[Any]) -> None:
        actor, gen = self._actors[slot]
        self._pending[actor.run.remote(first_index, items)] = (slot, gen, "run", block_no)

    def stop(self, slot: int) -> None:
        actor, gen = self._actors[slot]
        self._pending[actor.close.remote()] = (slot, gen, "close", -1)

    def poll(self, timeout: float | None = None) -> list[Event]:
        ray = self.ray
        deadline = None if timeout is None else time.monotonic() + timeout
        while self._pending:
            refs = list(self._pending)
            step = WAIT_S if deadline is None else min(WAIT_S, deadline - time.monotonic())
            ready, rest = ray.wait(refs, num_returns=1, timeout=max(step, 0.0))
            if ready:
                if rest:  # and whatever else is done by now, in the order submitted
                    more, _ = ray.wait(rest, num_returns=len(rest), timeout=0)
                    done = set(ready + more)
                    ready = [ref for ref in self._pending if ref in done]
                return [self._event(ref) for ref in ready]
            if deadline is not None and time.monotonic() >= deadline:
                break
        return []

    def _event(self, ref: Any) -> Event:
        from ray.exceptions import RayActorError, RayTaskError

        slot, gen, kind, block_no = self._pending.pop(ref)
        try:
            value = self.ray.get(ref)
        except RayActorError as e:
            text = str(e).strip().splitlines()
            return ("died", slot, gen, f"died (Ray: {text[0] if text else type(e).__name__})")
        except RayTaskError as e:
            cause = getattr(e, "cause", None) or e
            if isinstance(cause, CacheCallError):
                return ("fatal", slot, gen, (str(cause),))
            return ("fatal", slot, gen, (f"the worker failed: {describe_exception(cause)}",))
        # What an actor returns is checked as the cache process's lines are
        # (Ray's own transport has unpickled it: --ray is for trusted caches).
        try:
            return self._checked(kind, slot, gen, block_no, value)
        except (WireError, TypeError, ValueError, IndexError) as e:
            return ("fatal", slot, gen, (f"an actor sent a malformed answer: {e}",))

    def _checked(self, kind: str, slot: int, gen: int, block_no: int, value: Any) -> Event:
        if kind == "hello":
            state, payload = value
            if state == "ready":
                check_meta = getattr(self._task, "check_meta", None)
                payload = check_meta(payload) if check_meta is not None else payload
            else:
                payload = clean_text(payload, MAX_ERROR_CHARS, "load error")
            return (str(state), slot, gen, (payload,))
        if kind == "prepare":
            return ("prepared", slot, gen, () if value is None else (prepare_ms(value),))
        if kind == "run":
            check = getattr(self._task, "check", None)
            results = [check(r) if check is not None else r for r in value]
            return ("done", slot, gen, (block_no, results))
        problem = None if value is None else clean_text(value, MAX_ERROR_CHARS, "problem")
        return ("closed", slot, gen, (problem,))

    def kill(self, slot: int) -> None:
        entry = self._actors.pop(slot, None)
        if entry is None:
            return
        actor, gen = entry
        for ref, (s, g, _, _) in list(self._pending.items()):
            if s == slot and g == gen:
                del self._pending[ref]
        self.ray.kill(actor, no_restart=True)

    def shutdown(self) -> None:
        for slot in list(self._actors):
            self.kill(slot)
        self._pending.clear()
        if self._own and self.ray.is_initialized():
            self.ray.shutdown()
            self._own = False

    def pids(self) -> dict[int, int]:
        """slot -> process id of its actor (for tests and tools)."""
        return {slot: self.ray.get(actor.pid.remote()) for slot, (actor, _) in self._actors.items()}
