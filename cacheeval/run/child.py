"""A cache process: ``python -m cacheeval.run.child``, started by
:class:`cacheeval.run.procpool.ProcessBackend`.

It builds one cache from a spec, then answers the driver's requests, speaking
only :mod:`cacheeval.run.wire` lines: JSON in on stdin, JSON out on a private
copy of stdout. Whatever the cache prints goes to stderr, so it cannot forge a
message. It is shown pairs only (the driver keeps every row and label in its
own process) and it is never trusted: the driver checks each line it sends
and kills it when it overruns a deadline.

The first line from the driver says what to build::

    {"spec": {CacheSpec fields}, "task": {"class": "module:Class", "args": {...}},
     "threads": N | null}

then each request is a line: ``["prepare", items]``, ``["run", block, first,
items]`` or ``["stop"]``. The answers: ``["ready", meta]`` or ``["load_error",
message]`` once; ``["prepared"]`` or ``["prepared", ms]`` (the wall time of
``prepare`` when the task measured it); per item of a block ``["r", block,
result]`` (a task with ``run_one``: one line per call, so the driver knows
which call was running when it had to kill the process), then ``["done",
block]``; or ``["done", block, results]`` for a task without ``run_one``;
``["fatal", message]``; and ``["closed", problem]`` at the end.
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import sys
import threading
import time
from typing import Any, BinaryIO

from .blockrun import CacheSpec
from .harness import CacheCallError, CacheLoadError, describe_exception
from .wire import encode

#: Thread-pool variables of the numeric runtimes a cache may load (OpenMP, BLAS).
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def limit_threads(threads: int | None) -> None:
    """Cap the cache's numeric runtimes at ``threads`` each (a variable the
    user set is kept). N processes x C threads on C cores make OpenMP teams
    that spin-wait at their barriers collapse (GPTCache on 2 workers ran 3x
    slower); this runs before the cache imports anything."""
    if threads is None:
        return
    for name in THREAD_VARIABLES:
        os.environ.setdefault(name, str(threads))


def _watch_parent() -> None:
    """Exit when the driver is gone (its stdin closing is not seen mid-call)."""
    parent = os.getppid()

    def watch() -> None:
        while True:
            time.sleep(0.5)
            if os.getppid() != parent:
                os._exit(3)

    threading.Thread(target=watch, name="cacheeval-parent-watch", daemon=True).start()


def load_task(ref: dict[str, Any]) -> Any:
    """The task the driver named: ``module:Class`` built with its JSON arguments."""
    where, _, name = str(ref["class"]).partition(":")
    cls = getattr(importlib.import_module(where), name)
    return cls(**ref.get("args", {}))


class _Channel:
    """The protocol's output: a private copy of the real stdout, unbuffered."""

    def __init__(self, out: BinaryIO) -> None:
        self._out = out

    def send(self, message: Any) -> None:
        self._out.write(encode(message))

    def send_result(self, block: int, result: Any, task: Any) -> None:
        """One call's result; one JSON cannot carry (NaN, an object) is that
        call's error, not the end of the process."""
        try:
            line = encode(["r", block, result])
        except (TypeError, ValueError) as e:
            failed = task.failed("error", f"UnencodableResult: {e}", None)
            line = encode(["r", block, failed])
        self._out.write(line)


def serve(task: Any, cache: Any, inbox: BinaryIO, channel: _Channel) -> None:
    """Answer the driver's requests until it says stop (or goes away)."""
    run_one = getattr(task, "run_one", None)
    for line in inbox:
        message = json.loads(line)
        kind = message[0]
        if kind == "stop":
            return
        try:
            if kind == "prepare":
                took = task.prepare(cache, message[1])
                channel.send(["prepared"] if took is None else ["prepared", took])
            elif kind == "run":
                _, block, first, items = message
                if run_one is None:
                    channel.send(["done", block, task.run(cache, first, items)])
                    continue
                for item in items:
                    channel.send_result(block, run_one(cache, item), task)
                channel.send(["done", block])
        except CacheCallError as e:
            channel.send(["fatal", str(e)])
            return
        except BaseException as e:  # SystemExit, KeyboardInterrupt from the cache
            channel.send(["fatal", f"the cache process failed: {describe_exception(e)}"])
            return


def main() -> int:
    """Build the cache the first line names and serve; the exit status is 0
    whenever the protocol ran (what went wrong travels as messages)."""
    channel = _Channel(os.fdopen(os.dup(1), "wb", buffering=0))
    os.dup2(2, 1)  # the cache's prints, and any C library's, go to stderr
    sys.stdout = sys.stderr
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the driver stops its caches itself
    _watch_parent()
    inbox = sys.stdin.buffer
    hello = json.loads(inbox.readline())
    limit_threads(hello.get("threads"))
    try:
        task = load_task(hello["task"])
        cache = CacheSpec(**hello["spec"]).build()
        meta = task.setup(cache)
    except CacheLoadError as e:
        channel.send(["load_error", str(e)])
        return 0
    except BaseException as e:
        channel.send(["load_error", f"building the cache raised {describe_exception(e)}"])
        return 0
    channel.send(["ready", meta])
    try:
        serve(task, cache, inbox, channel)
    finally:
        try:
            problem = task.close(cache)
        except BaseException as e:
            problem = f"close() raised {describe_exception(e)}"
        channel.send(["closed", problem])
    return 0


if __name__ == "__main__":
    sys.exit(main())
