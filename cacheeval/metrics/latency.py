"""Latency summaries and the cost of decisions."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

#: The percentiles every latency summary reports.
PERCENTILES: tuple[int, ...] = (50, 95, 99)
PERCENTILE_METHOD = "nearest-rank"


@dataclass(frozen=True, slots=True)
class LatencyStats:
    """Decision latency in milliseconds over ``n`` timed calls (None when n = 0).

    Percentiles use the nearest-rank definition (see :func:`percentile`).
    """

    n: int
    mean_ms: float | None
    p50_ms: float | None
    p95_ms: float | None
    p99_ms: float | None
    max_ms: float | None
    percentile_method: str = PERCENTILE_METHOD


@dataclass(frozen=True, slots=True)
class CostStats:
    """What the decisions cost, from the cache's declared price per call by tier.

    ``total_usd = sum over decisions of cost_per_call_usd.get(tier_used, 0)``;
    ``per_1k_decisions_usd = 1000 * total_usd / n_decisions`` (None when no
    decision was made).
    """

    cost_per_call_usd: dict[str, float]
    n_decisions: int
    total_usd: float
    per_1k_decisions_usd: float | None


def percentile(sorted_values: Sequence[float], q: int) -> float | None:
    """Nearest-rank percentile: the smallest value with at least q% of values <= it.

    For n values sorted ascending, the result is ``v[ceil(q * n / 100) - 1]``
    (1-based rank ceil(q n / 100), at least 1). No interpolation: the result is
    always an observed latency. ``q`` is an integer percent in 1..100; None for
    an empty sequence. Integer arithmetic avoids float rounding in the rank.
    """
    if not 1 <= q <= 100:
        raise ValueError(f"percentile must be in 1..100, got {q}")
    n = len(sorted_values)
    if n == 0:
        return None
    rank = -(-q * n // 100)  # ceil(q * n / 100) without floats
    return sorted_values[max(rank, 1) - 1]


def latency_stats(latencies_ms: Iterable[float]) -> LatencyStats:
    """Mean (= sum / n), nearest-rank p50/p95/p99 and max of the given latencies."""
    values = sorted(latencies_ms)
    n = len(values)
    if n == 0:
        return LatencyStats(0, None, None, None, None, None)
    if not all(map(math.isfinite, values)):
        raise ValueError("latencies must be finite")
    return LatencyStats(
        n=n,
        mean_ms=math.fsum(values) / n,
        p50_ms=percentile(values, 50),
        p95_ms=percentile(values, 95),
        p99_ms=percentile(values, 99),
        max_ms=values[-1],
    )


def cost_stats(tiers_used: Iterable[str], cost_per_call_usd: Mapping[str, float]) -> CostStats:
    """Total and per-1,000-decision cost; tiers without a declared price cost 0."""
    total = 0.0
    n = 0
    for tier in tiers_used:
        total += cost_per_call_usd.get(tier, 0.0)
        n += 1
    return CostStats(
        cost_per_call_usd={k: float(cost_per_call_usd[k]) for k in sorted(cost_per_call_usd)},
        n_decisions=n,
        total_usd=total,
        per_1k_decisions_usd=1000.0 * total / n if n else None,
    )
