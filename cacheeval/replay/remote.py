"""A shared cache in a process of its own, for ``cacheeval replay``.

:class:`RemoteSharedCache` has the :class:`~cacheeval.cache.SharedCache`
methods the replay engine calls (``put``, ``lookup``, and ``nearest`` and
``prepare`` when the cache has them) and forwards each, one at a time, to a
``cacheeval.run.child`` process over checked JSON lines
(:mod:`cacheeval.run.procpool`). The replay, which holds every label, never
shares a process with the cache. Each call's latency is the one the cache
process measured around the cache's own call (the pipe's round trip is not
the cache's latency); a call past ``timeout_ms`` is killed, and since the
store dies with its process every later call is an error, as after a stuck
call in this process.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..run.blockrun import CacheSpec
from ..run.harness import CacheCallError, CacheLoadError, describe_exception
from ..run.parallel import request_from_wire, request_to_wire
from ..run.procpool import ProcessBackend
from ..run.wire import WireError, clean_text
from ..schema import MAX_ERROR_CHARS, MAX_LATENCY_MS, Request

#: Operations a shared-cache process answers.
OPS = ("put", "lookup", "nearest", "prepare")


class RemoteCallFailed(Exception):
    """A call that failed in the cache process; ``described`` is its error
    as the replay reports it (``Type: message``)."""

    def __init__(self, described: str) -> None:
        super().__init__(described)
        self.described = described


def load_shared_cache(module: str, class_name: str | None, kwargs: dict[str, Any]) -> Any:
    """A shared cache from a dotted module name or a ``.py`` file: ``class_name``
    instantiated with ``kwargs``, or the module's ``cache`` (instantiated when
    it is a class). CacheLoadError with one line on any failure."""
    try:
        if module.endswith(".py") or os.sep in module or "/" in module:
            path = Path(module)
            if not path.is_file():
                raise CacheLoadError(f"{module}: no such file")
            spec = importlib.util.spec_from_file_location(f"cacheeval_shared_{path.stem}", path)
            if spec is None or spec.loader is None:
                raise CacheLoadError(f"{module}: cannot be imported as a Python module")
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
        else:
            if os.getcwd() not in sys.path and "" not in sys.path:
                sys.path.insert(0, os.getcwd())
            mod = importlib.import_module(module)
    except CacheLoadError:
        raise
    except Exception as e:
        raise CacheLoadError(f"importing {module!r} raised {type(e).__name__}: {e}") from None
    attr = class_name or "cache"
    target = getattr(mod, attr, None)
    if target is None:
        raise CacheLoadError(f"module {module!r} has no attribute {attr!r}")
    if isinstance(target, type):
        try:
            target = target(**kwargs)
        except Exception as e:
            raise CacheLoadError(
                f"constructing {module}.{attr} raised {type(e).__name__}: {e}"
            ) from None
    elif kwargs:
        raise CacheLoadError(f"cache arguments given but {module}.{attr} is not a class")
    if not (callable(getattr(target, "put", None)) and callable(getattr(target, "lookup", None))):
        raise CacheLoadError(f"{module}.{attr} is not a shared cache: it needs put() and lookup()")
    return target


def load_shared(module: str, class_name: str | None, kwargs: dict[str, Any]) -> Any:
    """A :class:`~cacheeval.run.blockrun.CacheSpec` loader: a shared baseline
    by name (``module`` ``"baseline"``, ``class_name`` its name), or a shared
    cache from a module, as ``cacheeval replay`` loads one."""
    if module == "baseline":
        from .shared_baselines import make_shared_baseline

        try:
            return make_shared_baseline(class_name or "")
        except ValueError as e:
            raise CacheLoadError(str(e)) from None
    return load_shared_cache(module, class_name, kwargs)


@dataclass(frozen=True, slots=True)
class SharedTask:
    """The cache-process side: one operation per item,
    ``[op, request fields | [request fields, ...], answer_id?]``, answered
    ``[value, error, latency_ms]``."""

    #: A dead process takes the store with it: never start a fresh one.
    restartable: bool = False

    def setup(self, cache: Any) -> dict[str, Any]:
        name = getattr(cache, "name", None)
        return {
            "name": name if isinstance(name, str) and name else type(cache).__name__,
            "has_prepare": False,  # the replay sends prepare as an operation
            "nearest": callable(getattr(cache, "nearest", None)),
            "prepare": callable(getattr(cache, "prepare", None)),
        }

    def prepare(self, cache: Any, items: list[Any]) -> None:
        raise CacheCallError("a shared cache is prepared through the 'prepare' operation")

    def run(self, cache: Any, first_index: int, items: list[Any]) -> list[Any]:
        return [self.run_one(cache, item) for item in items]

    def run_one(self, cache: Any, item: list[Any]) -> list[Any]:
        import time

        op = item[0]
        clock = time.perf_counter_ns
        t0 = clock()
        try:
            if op == "put":
                cache.put(request_from_wire(*item[1]), item[2])
                value: Any = None
            elif op == "lookup":
                value = list(cache.lookup(request_from_wire(*item[1])))
            elif op == "nearest":
                value = list(cache.nearest(request_from_wire(*item[1])))
            elif op == "prepare":
                cache.prepare([request_from_wire(*r) for r in item[1]])
                value = None
            else:
                raise ValueError(f"unknown operation {op!r}")
        except BaseException as e:  # SystemExit, a KeyboardInterrupt of its own, ...
            return [None, describe_exception(e), (clock() - t0) / 1e6]
        return [value, None, (clock() - t0) / 1e6]

    @staticmethod
    def failed(tier: str, message: str, latency_ms: float | None) -> list[Any]:
        return [None, message, latency_ms]

    @staticmethod
    def check(raw: Any) -> list[Any]:
        """``[value, error, latency_ms]`` with a short error and a finite
        latency; the value's meaning is checked by the replay
        (:func:`~cacheeval.replay.engine.answer_problem`)."""
        if type(raw) is not list or len(raw) != 3:
            raise WireError("a shared-cache result is [value, error, latency_ms]")
        value, error, ms = raw
        if error is not None:
            error = clean_text(error, MAX_ERROR_CHARS, "error")
        if type(ms) not in (int, float) or not math.isfinite(ms) or not 0 <= ms <= MAX_LATENCY_MS:
            raise WireError("latency_ms is not a number of ms in range")
        return [value, error, float(ms)]

    def close(self, cache: Any) -> str | None:
        close = getattr(cache, "close", None)
        if not callable(close):
            return None
        try:
            close()
        except BaseException as e:
            return f"close() raised {describe_exception(e)}"
        return None


class RemoteSharedCache:
    """A shared cache built and called in a cache process (module docstring)."""

    def __init__(
        self, spec: CacheSpec, *, timeout_ms: float | None = None, wrap: Sequence[str] = ()
    ) -> None:
        self._backend = ProcessBackend(spec, SharedTask(), timeout_ms=timeout_ms, wrap=wrap)
        self._backend.spawn(0, 0)
        self._calls = 0
        #: What the cache process measured around the last call, in ms.
        self.last_call_ms: float | None = None
        meta = self._wait("ready")[0]
        self.name: str = meta["name"]
        if not meta.get("nearest"):
            self.nearest = None  # type: ignore[assignment]
        if not meta.get("prepare"):
            self.prepare = None  # type: ignore[assignment]

    def _wait(self, kind: str) -> Any:
        while True:
            for got, _, _, payload in self._backend.poll():
                if got == kind:
                    return payload
                if got == "load_error":
                    self._backend.shutdown()
                    raise CacheLoadError(payload[0])
                if got == "died":
                    self._backend.shutdown()
                    raise CacheLoadError(f"the cache process {payload}")
                if got == "fatal":
                    raise CacheCallError(payload[0])

    def _call(self, item: list[Any]) -> Any:
        self._calls += 1
        self._backend.submit(0, self._calls, self._calls, [item])
        block, results = self._wait("done")
        assert block == self._calls
        value, error, ms = results[0]
        self.last_call_ms = ms
        if error is not None:
            raise RemoteCallFailed(error)
        return value

    def put(self, request: Request, answer_id: str) -> None:
        self._call(["put", request_to_wire(request), answer_id])

    def lookup(self, request: Request) -> Any:
        return self._call(["lookup", request_to_wire(request)])

    def nearest(self, request: Request) -> Any:
        return self._call(["nearest", request_to_wire(request)])

    def prepare(self, requests: Sequence[Request]) -> None:
        self._call(["prepare", [request_to_wire(r) for r in requests]])

    def close(self) -> None:
        """Stop the process (its ``close`` runs there); a problem is raised."""
        self._backend.stop(0)
        try:
            problem = self._wait("closed")[0]
        finally:
            self._backend.shutdown()
        if problem:
            raise RuntimeError(problem)
