"""Cache processes on this machine for :class:`cacheeval.run.blockrun.BlockRunner`:
the default way a cache under test runs (``eval``, ``predict``, ``external``
and ``--workers N``).

Each worker is a fresh interpreter, ``python -m cacheeval.run.child``, in a
session of its own (a Ctrl-C meant for the driver does not reach it, and a
kill takes the processes it started too). It builds its cache from a
:class:`~cacheeval.run.blockrun.CacheSpec` and speaks
:mod:`cacheeval.run.wire`: JSON lines, never pickle, so nothing it sends can
run code here, and every value is checked before it counts. The labels never
exist in it: it is sent pairs only.

Deadlines are enforced by killing the process, so a call that holds the GIL,
a ``prepare`` that sleeps or a process that stops answering cannot stall a
run:

* **a call** past ``timeout_ms`` (plus a quarter and 100 ms for the pipe):
  that row is a ``timeout`` error row, and a fresh process (its cache built
  again, ``prepare`` shown the same pairs again) takes the rest of the block;
* **a process that dies mid-call** (``os._exit``, a signal, a segfault): the
  call is tried once more on a fresh process, then its row is an error row;
* **a malformed message**: the row is an error row, the process is replaced;
* after :data:`MAX_STRAIGHT_FAILURES` of those in a row the rows still waiting
  on that worker come back as error rows without being run, so a cache that
  hangs on every call costs a few timeouts, not one per row;
* building the cache, ``prepare`` and ``close`` have their own limits
  (:data:`STARTUP_S`, :data:`PREPARE_S`, :data:`CLOSE_S`).
"""

from __future__ import annotations

import dataclasses
import json
import os
import queue
import select
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .blockrun import BlockTask, CacheSpec, Event
from .child import THREAD_VARIABLES, limit_threads
from .wire import (
    MAX_ERROR_CHARS,
    MAX_LINE_BYTES,
    WireError,
    clean_text,
    decode,
    encode,
    prepare_ms,
)

__all__ = [
    "THREAD_VARIABLES",
    "ProcessBackend",
    "exit_reason",
    "limit_threads",
    "threads_per_worker",
]

#: Seconds a process gets to build its cache (a model load).
STARTUP_S = 600.0
#: Seconds ``prepare`` gets on one worker's shard.
PREPARE_S = 3600.0
#: Seconds ``close`` gets once the process is told to stop.
CLOSE_S = 30.0
#: Kills in a row (timeouts, deaths, malformed messages) after which a worker's
#: waiting rows are given up as error rows.
MAX_STRAIGHT_FAILURES = 10


def threads_per_worker(workers: int, cpus: int | None = None) -> int:
    """Each worker's share of the CPUs, at least one: ``max(1, cpus // workers)``.

    >>> threads_per_worker(2, cpus=2), threads_per_worker(3, cpus=8), threads_per_worker(4, cpus=2)
    (1, 2, 1)
    """
    return max(1, (cpus if cpus is not None else os.cpu_count() or 1) // max(1, workers))


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


def task_ref(task: BlockTask) -> dict[str, Any]:
    """How a cache process builds ``task``: its class and its fields (a
    dataclass of JSON values)."""
    cls = type(task)
    args = {f.name: getattr(task, f.name) for f in dataclasses.fields(task)}  # type: ignore[arg-type]
    return {"class": f"{cls.__module__}:{cls.__qualname__}", "args": args}


@dataclass(slots=True)
class _Block:
    """A block sent to a process: its results so far, in order."""

    no: int
    first: int
    items: list[Any]
    results: list[Any] = field(default_factory=list)
    retried: bool = False  # the next item already took a process down once


class _Process:
    """One running ``cacheeval.run.child``: the process, a writer thread (a
    cache that stops reading cannot block the driver), and what came back."""

    def __init__(self, command: Sequence[str], hello: bytes) -> None:
        self.proc = subprocess.Popen(
            list(command),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            start_new_session=True,
            close_fds=True,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.fd = self.proc.stdout.fileno()
        self.buffer = bytearray()
        self._outbox: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._writer = threading.Thread(target=self._write, name="cacheeval-feed", daemon=True)
        self._writer.start()
        self.send_raw(hello)

    def _write(self) -> None:
        stdin = self.proc.stdin
        assert stdin is not None
        try:
            while (data := self._outbox.get()) is not None:
                stdin.write(data)
                stdin.flush()
        except (OSError, ValueError):
            pass  # the process is gone: its death is seen on stdout

    def send_raw(self, data: bytes) -> None:
        self._outbox.put(data)

    def kill(self) -> str:
        """Kill the process and everything it started; how it ended."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                self.proc.kill()
        try:
            code = self.proc.wait(5.0)
        except subprocess.TimeoutExpired:
            code = None
        self._outbox.put(None)
        for pipe in (self.proc.stdin, self.proc.stdout):
            try:
                if pipe is not None:
                    pipe.close()
            except OSError:
                pass
        return exit_reason(code)


@dataclass(slots=True)
class _Slot:
    """One worker slot's process and state."""

    gen: int
    process: _Process
    phase: str = "starting"  # starting | ready | preparing | stopping
    deadline: float | None = None
    started_at: float = 0.0  # when the call now running began (for its latency)
    recovering: bool = False  # a replacement started by the backend itself
    broken: bool = False
    straight_failures: int = 0
    prepare_items: list[Any] | None = None
    blocks: deque[_Block] = field(default_factory=deque)


class ProcessBackend:
    """Cache processes on this machine, one per slot (module docstring).

    ``task`` must be a dataclass of JSON values, importable by its module
    name; ``failed(tier, message, latency_ms)`` and ``check(raw)`` on it, when
    present, make the error result of a killed call and check a result
    (``lost`` stands in for ``failed`` otherwise). ``command`` is the argv
    prefix that runs a Python module (``sandbox`` wraps it, e.g. bubblewrap).
    """

    def __init__(
        self,
        spec: CacheSpec,
        task: BlockTask,
        *,
        threads: int | None = None,
        timeout_ms: float | None = None,
        lost: Callable[[int, str], list[Any]] | None = None,
        wrap: Sequence[str] = (),
        startup_s: float = STARTUP_S,
        prepare_s: float = PREPARE_S,
    ) -> None:
        self._task = task
        hello = {
            "spec": dataclasses.asdict(spec.portable()),
            "task": task_ref(task),
            "threads": threads,
        }
        self._hello = json.dumps(hello, ensure_ascii=False).encode("utf-8") + b"\n"
        self._command = [*wrap, sys.executable, "-m", "cacheeval.run.child"]
        self._timeout_ms = timeout_ms
        self._call_s = None if timeout_ms is None else timeout_ms * 1.25 / 1000.0 + 0.1
        self._lost = lost
        self._startup_s = startup_s
        self._prepare_s = prepare_s
        self._slots: dict[int, _Slot] = {}
        self._queued: list[Event] = []
        #: Processes killed or found dead mid-run (for tests and the report).
        self.deaths = 0
        self.timeouts = 0

    # -- Backend ---------------------------------------------------------------------

    def spawn(self, slot: int, gen: int) -> None:
        self._slots[slot] = _Slot(gen, _Process(self._command, self._hello))
        self._slots[slot].deadline = time.monotonic() + self._startup_s

    def prepare(self, slot: int, items: list[Any]) -> None:
        s = self._slots[slot]
        s.prepare_items = items
        self._send_prepare(s)

    def submit(self, slot: int, block_no: int, first_index: int, items: list[Any]) -> None:
        s = self._slots[slot]
        block = _Block(block_no, first_index, items)
        s.blocks.append(block)
        if s.broken:
            self._give_up(slot, s, "the cache process failed too often")
            return
        if not s.recovering:
            if len(s.blocks) == 1:
                self._start_call(s)
            self._send_block(s, block)

    def stop(self, slot: int) -> None:
        s = self._slots.get(slot)
        if s is None:
            return
        if s.broken or s.recovering:
            s.process.kill()
            self._queued.append(("closed", slot, s.gen, (None,)))
            return
        s.phase = "stopping"
        s.deadline = time.monotonic() + CLOSE_S
        s.process.send_raw(b'["stop"]\n')

    def poll(self, timeout: float | None = None) -> list[Event]:
        """Wait for news (results stream in per call, so a round may bring
        none: wait on until some comes or ``timeout`` passes)."""
        end = None if timeout is None else time.monotonic() + timeout
        while True:
            events = self._round(None if end is None else max(0.0, end - time.monotonic()))
            if events or not self._slots or (end is not None and time.monotonic() >= end):
                return events

    def _round(self, timeout: float | None) -> list[Event]:
        if self._queued:
            queued, self._queued = self._queued, []
            return queued
        by_fd = {s.process.fd: slot for slot, s in self._slots.items()}
        if not by_fd:
            return []
        now = time.monotonic()
        deadlines = [s.deadline for s in self._slots.values() if s.deadline is not None]
        wait = timeout
        if deadlines:
            until = max(0.0, min(deadlines) - now)
            wait = until if wait is None else min(wait, until)
        ready, _, _ = select.select(list(by_fd), [], [], wait)
        events: list[Event] = []
        for fd in ready:
            slot = by_fd[fd]
            s = self._slots.get(slot)
            if s is None or s.process.fd != fd:
                continue
            self._read(slot, s, events)
        now = time.monotonic()
        for slot, s in list(self._slots.items()):
            if s.deadline is not None and now > s.deadline and self._slots.get(slot) is s:
                self._overran(slot, s, events)
        events.extend(self._queued)
        self._queued = []
        return events

    def kill(self, slot: int) -> None:
        s = self._slots.pop(slot, None)
        if s is not None:
            s.process.kill()

    def shutdown(self) -> None:
        for slot in list(self._slots):
            self.kill(slot)

    def pids(self) -> dict[int, int]:
        """slot -> process id of its current worker (for tests and tools)."""
        return {slot: s.process.proc.pid for slot, s in self._slots.items()}

    # -- sending ---------------------------------------------------------------------

    def _send_prepare(self, s: _Slot) -> None:
        s.phase = "preparing"
        s.deadline = time.monotonic() + self._prepare_s
        s.process.send_raw(encode(["prepare", s.prepare_items]))

    def _send_block(self, s: _Slot, block: _Block, start: int = 0) -> None:
        s.process.send_raw(encode(["run", block.no, block.first + start, block.items[start:]]))

    def _start_call(self, s: _Slot) -> None:
        s.started_at = time.monotonic()
        s.deadline = None if self._call_s is None else s.started_at + self._call_s

    def _resume(self, s: _Slot) -> None:
        """A replacement process is ready: send it what its predecessor left."""
        s.recovering = False
        s.phase = "ready"
        s.deadline = None
        if s.blocks:
            self._start_call(s)
        for i, block in enumerate(s.blocks):
            self._send_block(s, block, len(block.results) if i == 0 else 0)

    # -- receiving -------------------------------------------------------------------

    def _read(self, slot: int, s: _Slot, events: list[Event]) -> None:
        try:
            data = os.read(s.process.fd, 1 << 16)
        except OSError:
            data = b""
        if not data:
            self._failed(slot, s, events, f"the cache process {s.process.kill()}", died=True)
            return
        buf = s.process.buffer
        buf.extend(data)
        while self._slots.get(slot) is s and (end := buf.find(b"\n")) >= 0:
            line = bytes(buf[: end + 1])
            del buf[: end + 1]
            try:
                self._on_message(slot, s, decode(line), events)
            except (WireError, ValueError, TypeError, IndexError, KeyError) as e:
                reason = clean_text(str(e), MAX_ERROR_CHARS, "reason")
                s.process.kill()
                self._failed(slot, s, events, f"the cache process broke the protocol: {reason}")
                return
        if self._slots.get(slot) is s and len(buf) > MAX_LINE_BYTES:
            s.process.kill()
            self._failed(slot, s, events, "the cache process sent an over-long line")

    def _on_message(self, slot: int, s: _Slot, msg: list[Any], events: list[Event]) -> None:
        kind = msg[0]
        if kind == "ready":
            check_meta = getattr(self._task, "check_meta", None)
            meta = check_meta(msg[1]) if check_meta is not None else msg[1]
            if not isinstance(meta, dict):
                raise WireError("the cache's description is not an object")
            if s.recovering:
                if s.prepare_items is not None:
                    self._send_prepare(s)
                else:
                    self._resume(s)
                return
            s.phase, s.deadline = "ready", None
            events.append(("ready", slot, s.gen, (meta,)))
        elif kind == "prepared":
            took = prepare_ms(msg[1]) if len(msg) > 1 else None
            if s.recovering:
                self._resume(s)
                return
            s.phase, s.deadline = "ready", None
            if s.blocks:
                self._start_call(s)
            events.append(("prepared", slot, s.gen, () if took is None else (took,)))
        elif kind == "r":
            block = s.blocks[0]
            if msg[1] != block.no or len(block.results) >= len(block.items):
                raise WireError(f"a result for block {msg[1]!r} not asked for")
            block.results.append(self._check(msg[2]))
            block.retried = False
            s.straight_failures = 0
            self._start_call(s)
        elif kind == "done":
            block = s.blocks[0]
            if msg[1] != block.no:
                raise WireError(f"block {msg[1]!r} done out of turn")
            if len(msg) == 3:
                if type(msg[2]) is not list or len(msg[2]) != len(block.items):
                    raise WireError("a block's results do not match its items")
                block.results = [self._check(r) for r in msg[2]]
            elif len(block.results) != len(block.items):
                raise WireError("a block done before all its results")
            s.blocks.popleft()
            s.straight_failures = 0
            if s.blocks:
                self._start_call(s)
            else:
                s.deadline = None
            events.append(("done", slot, s.gen, (block.no, block.results)))
        elif kind in ("load_error", "fatal"):
            events.append((kind, slot, s.gen, (clean_text(msg[1], MAX_ERROR_CHARS, kind),)))
        elif kind == "closed":
            problem = None if msg[1] is None else clean_text(msg[1], MAX_ERROR_CHARS, "problem")
            self._slots.pop(slot, None)  # its exit is no news
            s.process.kill()
            events.append(("closed", slot, s.gen, (problem,)))
        else:
            raise WireError(f"unknown message {str(kind)[:20]!r}")

    def _check(self, raw: Any) -> Any:
        check = getattr(self._task, "check", None)
        if check is None:
            return raw
        try:
            return check(raw)
        except WireError as e:
            return self._error_result("error", f"InvalidResult: {e}", None)

    def _error_result(self, tier: str, message: str, latency_ms: float | None) -> Any:
        failed = getattr(self._task, "failed", None)
        if failed is not None:
            return failed(tier, message, latency_ms)
        assert self._lost is not None, "a task without failed() needs lost="
        return self._lost(1, message)[0]

    # -- failures --------------------------------------------------------------------

    def _overran(self, slot: int, s: _Slot, events: list[Event]) -> None:
        s.process.kill()
        if s.phase == "ready" and s.blocks:
            self.timeouts += 1
            assert self._timeout_ms is not None
            message = f"timeout after {self._timeout_ms:g} ms (the cache process was killed)"
            self._failed(slot, s, events, message, tier="timeout")
        elif s.phase == "preparing":
            events.append(
                ("fatal", slot, s.gen, (f"prepare() ran over {self._prepare_s:g} s: killed",))
            )
            self._slots.pop(slot, None)
        elif s.phase == "stopping":
            events.append(("closed", slot, s.gen, (f"close() ran over {CLOSE_S:g} s: killed",)))
            self._slots.pop(slot, None)
        else:
            self._failed(slot, s, events, f"building the cache ran over {self._startup_s:g} s")

    def _failed(
        self,
        slot: int,
        s: _Slot,
        events: list[Event],
        reason: str,
        *,
        tier: str = "error",
        died: bool = False,
    ) -> None:
        """The process is dead or killed: blame the call it was in, if any,
        and carry on with a replacement (or hand the death to the runner)."""
        self.deaths += 1
        s.process.kill()
        if s.phase == "stopping":
            self._slots.pop(slot, None)
            events.append(("closed", slot, s.gen, (f"{reason} during close()",)))
            return
        if (not s.recovering and s.phase in ("starting", "preparing")) or not s.blocks:
            # not in a call: the runner decides (a load error, a prepare retry)
            self._slots.pop(slot, None)
            events.append(("died", slot, s.gen, reason.removeprefix("the cache process ")))
            return
        block = s.blocks[0]
        latency = (time.monotonic() - s.started_at) * 1000.0 if s.started_at else None
        prefix = "" if tier == "timeout" else "CacheProcessDied: "
        blame = self._error_result(tier, clean_text(prefix + reason, MAX_ERROR_CHARS, "e"), latency)
        if not getattr(self._task, "restartable", True):
            # its state died with it (a shared cache's store): blame the call, run no more
            block.results.append(blame)
            s.broken = True
            self._give_up(slot, s, f"{reason}; its state is gone")
            return
        if died and not block.retried and not s.recovering:
            block.retried = True  # a death from outside: try the call once more
        else:
            block.results.append(blame)
            block.retried = False
            if len(block.results) == len(block.items):
                s.blocks.popleft()
                events.append(("done", slot, s.gen, (block.no, block.results)))
        s.straight_failures += 1
        if s.straight_failures >= MAX_STRAIGHT_FAILURES:
            s.broken = True
            self._give_up(slot, s, f"the cache process failed {s.straight_failures} times in a row")
            return
        s.process = _Process(self._command, self._hello)
        s.phase, s.recovering = "starting", True
        s.deadline = time.monotonic() + self._startup_s

    def _give_up(self, slot: int, s: _Slot, why: str) -> None:
        """Every row still waiting on this worker becomes an error row, unrun."""
        s.process.kill()
        s.deadline = None
        while s.blocks:
            block = s.blocks.popleft()
            left = len(block.items) - len(block.results)
            message = f"NotRun: {why}; this row was not run"
            block.results.extend(self._error_result("error", message, None) for _ in range(left))
            self._queued.append(("done", slot, s.gen, (block.no, block.results)))
