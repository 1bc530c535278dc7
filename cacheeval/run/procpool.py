"""Worker processes on this machine for :class:`cacheeval.run.blockrun.BlockRunner`
(``--workers N``): ``spawn`` context, so each worker is a fresh interpreter
that inherits nothing from the driver but the cache spec and the task; one
duplex pipe each; a worker that dies is seen through its process sentinel.

A worker leaves the terminal's process group (a Ctrl-C meant for the driver
does not kill a cache mid-call: the driver stops its workers itself) and
exits on its own when the driver is gone.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from typing import TYPE_CHECKING, Any

from .blockrun import BlockTask, CacheSpec, Event
from .harness import CacheCallError, CacheLoadError, describe_exception

if TYPE_CHECKING:  # multiprocessing is imported when workers start, not with cacheeval
    from multiprocessing.connection import Connection


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


#: Thread-pool variables of the numeric runtimes a cache may load (OpenMP, BLAS).
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def threads_per_worker(workers: int, cpus: int | None = None) -> int:
    """Each worker's share of the CPUs, at least one: ``max(1, cpus // workers)``.

    >>> threads_per_worker(2, cpus=2), threads_per_worker(3, cpus=8), threads_per_worker(4, cpus=2)
    (1, 2, 1)
    """
    return max(1, (cpus if cpus is not None else os.cpu_count() or 1) // max(1, workers))


def _limit_threads(threads: int | None) -> None:
    # Every worker's model runtime would otherwise start one thread per CPU:
    # N workers x C threads on C cores, and OpenMP teams that spin-wait at
    # their barriers then collapse (GPTCache's real path on 2 workers ran 3x
    # slower). Runs before the cache imports anything; a variable the user set
    # is kept.
    if threads is None:
        return
    for name in THREAD_VARIABLES:
        os.environ.setdefault(name, str(threads))


def _process_main(
    conn: Connection, spec: CacheSpec, task: BlockTask, threads: int | None = None
) -> None:
    """A worker process: build the cache, then answer the driver's messages."""
    _detach()
    _limit_threads(threads)
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


class ProcessBackend:
    """Worker processes on this machine (``spawn`` context: a fresh
    interpreter each, nothing inherited from the driver but the spec), one
    pipe each."""

    def __init__(
        self,
        spec: CacheSpec,
        task: BlockTask,
        start_method: str = "spawn",
        threads: int | None = None,
    ) -> None:
        import multiprocessing

        self._ctx: Any = multiprocessing.get_context(start_method)
        self._spec = spec
        self._task = task
        self._threads = threads  # per worker (see _limit_threads); None: no limit
        self._workers: dict[int, tuple[Any, Connection, int]] = {}

    def spawn(self, slot: int, gen: int) -> None:
        ours, theirs = self._ctx.Pipe(duplex=True)
        proc = self._ctx.Process(
            target=_process_main,
            args=(theirs, self._spec, self._task, self._threads),
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

    def poll(self, timeout: float | None = None) -> list[Event]:
        from multiprocessing.connection import wait

        by_conn = {conn: slot for slot, (_, conn, _) in self._workers.items()}
        by_sentinel = {proc.sentinel: slot for slot, (proc, _, _) in self._workers.items()}
        if not by_conn:
            return []
        ready = wait([*by_conn, *by_sentinel], timeout)
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
