"""Caches for the parallel-prediction tests, importable in worker processes and
Ray actors as ``tests.parallel_caches`` (workers build them from a spec)."""

from __future__ import annotations

import ctypes
import gc
import os
import signal
import time
from collections.abc import Sequence
from dataclasses import dataclass

from cacheeval.baselines import ExactMatch
from cacheeval.schema import Pair, Request, Row, Verdict

_EXACT = ExactMatch()


def die(how: str) -> None:
    """End this process the way ``how`` says, mid-call."""
    if how == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    elif how == "exit":
        os._exit(7)
    elif how == "segv":
        ctypes.string_at(0)  # reads address 0: SIGSEGV
    raise AssertionError(f"still alive after {how}")


class DiesAt:
    """``exact_match``, except that the process deciding pair ``p<at>`` dies
    there: only the first time (a marker file remembers) unless ``always``."""

    name = "dies_at"

    def __init__(self, marker: str, at: int, how: str = "kill", always: bool = False) -> None:
        self.marker, self.at, self.how, self.always = marker, at, how, always

    def __call__(self, pair: Pair) -> Verdict:
        if pair.id == f"p{self.at}" and (self.always or not os.path.exists(self.marker)):
            with open(self.marker, "w", encoding="utf-8") as f:
                f.write(str(os.getpid()))
            die(self.how)
        return _EXACT(pair)


class Slow:
    """``exact_match`` after sleeping ``ms`` milliseconds."""

    name = "slow"

    def __init__(self, ms: float = 5.0) -> None:
        self.s = ms / 1000.0

    def __call__(self, pair: Pair) -> Verdict:
        time.sleep(self.s)
        return _EXACT(pair)


class Position:
    """Scores each pair by the number in its opaque id: what a cache sees of
    the row's position."""

    name = "position"

    def __call__(self, pair: Pair) -> Verdict:
        return Verdict(is_hit=False, tier_used="position", score=float(pair.id[1:]))


class LooksForRows:
    """Says whether any labelled row is reachable in this process (through
    ``gc``, as a hostile cache would look)."""

    name = "looks_for_rows"

    def __call__(self, pair: Pair) -> Verdict:
        found = any(isinstance(o, Row) for o in gc.get_objects())
        return Verdict(is_hit=False, tier_used="sees-rows" if found else "blind", score=0.0)


class PreparedShard:
    """Refuses any pair it was not prepared with; its score is the position of
    the first pair it was prepared with (which shard decided the row)."""

    name = "prepared_shard"

    def __init__(self) -> None:
        self.ids: list[str] = []
        self.calls = 0

    def prepare(self, pairs: Sequence[Pair]) -> None:
        if self.ids:
            raise RuntimeError("prepare() called twice")
        self.ids = [p.id for p in pairs]
        self.known = set(self.ids)

    def __call__(self, pair: Pair) -> Verdict:
        if pair.id not in self.known:
            raise KeyError(f"{pair.id} was not prepared")
        return Verdict(is_hit=False, tier_used="shard", score=float(self.ids[0][1:]))


class FailsOn:
    """``exact_match`` that raises on the pairs ``p<n>`` named."""

    name = "fails_on"

    def __init__(self, at: list[int]) -> None:
        self.at = {f"p{n}" for n in at}

    def __call__(self, pair: Pair) -> Verdict:
        if pair.id in self.at:
            raise ValueError(f"refusing {pair.id}")
        return _EXACT(pair)


class BadPrices:
    """A cache whose price table is not one."""

    cost_per_call_usd = {"judge": "cheap"}

    def __call__(self, pair: Pair) -> Verdict:
        return _EXACT(pair)


class SharedExact:
    """A shared store, as ``cacheeval replay`` drives one: ``put`` a request
    under an answer id, ``lookup`` a request (exact match after normalisation)."""

    def __init__(self) -> None:
        self.entries: dict[object, str] = {}

    def put(self, request: Request, answer_id: str) -> None:
        self.entries.setdefault(request.key(), answer_id)

    def lookup(self, request: Request) -> tuple[str | None, float]:
        found = self.entries.get(request.key())
        return found, float(found is not None)


def load_shared(module: str, class_name: str | None, kwargs: dict[str, object]) -> object:
    """A CacheSpec loader for shared caches (no ``Pair -> Verdict`` check)."""
    import importlib

    return getattr(importlib.import_module(module), class_name or "cache")(**kwargs)


@dataclass(frozen=True)
class LookupTask:
    """A replay-style lookup phase as a block task: every worker puts all
    ``entries`` (answer id, query) into its own store, then looks its blocks
    of queries up. Its fields and items are plain JSON values: a cache
    process is sent nothing else."""

    entries: tuple[tuple[str, str], ...]

    def setup(self, cache: SharedExact) -> dict[str, object]:
        for answer_id, query in self.entries:
            cache.put(Request(query), answer_id)
        return {"has_prepare": False, "pid": os.getpid()}

    def prepare(self, cache: SharedExact, items: list[str]) -> None:
        raise AssertionError("no prepare")

    def run(self, cache: SharedExact, first_index: int, items: list[str]) -> list[object]:
        return [list(cache.lookup(Request(q))) for q in items]

    def close(self, cache: SharedExact) -> str | None:
        return None
