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


@dataclass(frozen=True, slots=True)
class PrepareTime:
    """What the cache's ``prepare()`` cost, set beside the per-call latency so a
    cache that embeds every pair in ``prepare`` is compared fairly with one
    that embeds in the call.

    ``total_ms`` is the wall time of ``prepare`` summed over the cache
    processes that ran it (each prepares its own shard); ``per_row_ms =
    total_ms / n_rows``; ``per_row_with_call_ms = per_row_ms + mean call
    latency`` (None without timed calls). A cache without ``prepare``
    (``has_prepare`` False) costs 0 here.
    """

    has_prepare: bool
    total_ms: float
    processes: int
    n_rows: int
    per_row_ms: float | None
    per_row_with_call_ms: float | None


@dataclass(frozen=True, slots=True)
class ColdProbe:
    """A cold single-call probe: a fresh cache process is started and built,
    then decides a few new pairs one at a time, with nothing prepared (the
    embedding of both requests included).

    ``start_ms``: from starting the process to the built cache answering
    (interpreter, imports, construction); ``first_call_ms``: the first call,
    one-off loading included; ``next_call_ms``: the median of the calls after
    it (nearest rank), what an unprepared request costs once the cache is
    warm; ``n_calls`` calls timed; ``error``: the first failed call's error
    (its latency still counts), or why the probe could not run.
    """

    start_ms: float | None
    first_call_ms: float | None
    next_call_ms: float | None
    n_calls: int
    error: str | None = None


def prepare_time(
    prepare_ms: Sequence[float] | None, n_rows: int, mean_call_ms: float | None
) -> PrepareTime:
    """``prepare_ms``: the wall time of each process's ``prepare`` (None: the
    cache has none). ``per_row_ms = sum(prepare_ms) / n_rows`` (None for no
    rows) and ``per_row_with_call_ms = per_row_ms + mean_call_ms``.

    >>> p = prepare_time([300.0, 100.0], 200, 0.5)
    >>> p.total_ms, p.per_row_ms, p.per_row_with_call_ms
    (400.0, 2.0, 2.5)
    >>> prepare_time(None, 10, 1.0).per_row_with_call_ms
    1.0
    """
    values = list(prepare_ms or ())
    if not all(math.isfinite(v) and v >= 0 for v in values):
        raise ValueError("prepare times must be finite and >= 0")
    total = math.fsum(values)
    per_row = total / n_rows if n_rows else None
    with_call = None if per_row is None or mean_call_ms is None else per_row + mean_call_ms
    return PrepareTime(prepare_ms is not None, total, len(values), n_rows, per_row, with_call)


def cold_probe(
    start_ms: float | None, call_ms: Sequence[float | None], error: str | None = None
) -> ColdProbe:
    """The probe's summary from its start time and its calls' latencies, in
    call order: the first, and the nearest-rank median of the rest (calls
    without a latency are left out of it).

    >>> p = cold_probe(900.0, [250.0, 12.0, 10.0, 11.0])
    >>> p.first_call_ms, p.next_call_ms, p.n_calls
    (250.0, 11.0, 4)
    >>> cold_probe(None, [], "the cache could not be built").next_call_ms is None
    True
    """
    first = call_ms[0] if call_ms else None
    rest = sorted(v for v in call_ms[1:] if v is not None)
    return ColdProbe(start_ms, first, percentile(rest, 50), len(call_ms), error)
