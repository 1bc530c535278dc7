"""The verified cache's single-call latency against its floor, measured interleaved.

A cache built on an embedding cannot answer faster than one call of that
embedding, so the latency targets are ratios: ``get`` over one bare embedding
call of the same query. Machines of the kind CI runs on drift by tens of
percent within minutes (other tenants, frequency), so two loops run one after
the other - all the ``get`` calls, then all the floor calls - can give ratios
from 1.0x to 1.36x on the same code (seen in three main-job runs). Here each
``get`` is timed right after one bare embedding call of its own query, so both
halves of every ratio see the same machine state.

Used by ``scripts/bench_verified_cache.py`` and by the head-to-head report
(``scripts/run_verified_vs_gptcache.py``).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from cacheeval.metrics.latency import LatencyStats, latency_stats
from cacheeval.schema import Pair

from .cache import Resources, VerifiedCache

#: Where a pair whose side a the policy refused to store is counted.
REFUSED_AT_PUT = "policy (refused at put)"


@dataclass(frozen=True)
class InterleavedLatency:
    """Milliseconds per call: ``get`` by tier, ``put`` of side a, and the floor
    (one embedding call of side b's query, timed right before its ``get``)."""

    by_tier: dict[str, list[float]]
    puts: list[float]
    floor: list[float]
    refused: int

    def get(self) -> LatencyStats:
        return latency_stats(v for vs in self.by_tier.values() for v in vs)

    def tier(self, name: str) -> LatencyStats:
        return latency_stats(self.by_tier.get(name, []))

    def ratios(self, stats: LatencyStats | None = None) -> tuple[float | None, float | None]:
        """``stats`` (default: ``get`` over all tiers) over the floor, at p50 and p95."""
        s = stats or self.get()
        base = latency_stats(self.floor)

        def ratio(x: float | None, y: float | None) -> float | None:
            return x / y if x is not None and y else None

        return ratio(s.p50_ms, base.p50_ms), ratio(s.p95_ms, base.p95_ms)


def interleaved_latency(
    pairs: Sequence[Pair], resources: Resources, *, cold_memo: bool = False
) -> InterleavedLatency:
    """``put`` side a of every pair into its own cache (timed), then for every pair
    time one bare embedding call of side b's query and, right after it,
    ``lookup(side b)``. ``cold_memo`` clears the span memo before each lookup
    (the worst case: every differing span embedded inside the call)."""
    resources.encode(["warm-up", "a second warm-up text"])
    puts: list[float] = []
    caches = []
    for pair in pairs:
        cache = VerifiedCache(resources=resources)
        t0 = time.perf_counter_ns()
        # the stored answer's text never enters a decision: a stand-in will do
        cache.put(pair.a, f"answer {pair.id}")
        puts.append((time.perf_counter_ns() - t0) / 1e6)
        caches.append(cache)
    by_tier: dict[str, list[float]] = {}
    floor: list[float] = []
    for pair, cache in zip(pairs, caches, strict=True):
        if cold_memo:
            resources.memo.clear()
        t0 = time.perf_counter_ns()
        resources.query_embedding(pair.b.query)
        floor.append((time.perf_counter_ns() - t0) / 1e6)
        t0 = time.perf_counter_ns()
        decision = cache.lookup(pair.b)
        ms = (time.perf_counter_ns() - t0) / 1e6
        by_tier.setdefault(decision.tier if len(cache) else REFUSED_AT_PUT, []).append(ms)
    refused = sum(1 for c in caches if len(c) == 0)
    return InterleavedLatency(by_tier, puts, floor, refused)
