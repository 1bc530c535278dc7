"""Measure the scoring core's speed.

(a) Harness overhead: grade the rows with ``exact_match`` through
    ``evaluate`` and through a bare loop calling the same cache, alternating,
    ``--runs`` times; print the medians, the per-row overhead
    ``(median_evaluate - median_bare) / n`` in microseconds and the ratio.
    Uses ``cachebench.jsonl`` (its labelled rows) when it exists, else
    ``--rows`` synthetic rows.
(b) Threshold-free metrics: time ``threshold_free`` over ``--scored-rows``
    seeded random scored rows; print the median seconds.
(c) The cache process: ``exact_match`` over the rows in a process of its own
    (the default of ``eval``/``predict``: pairs out and checked results back
    as JSON lines) and in this process, each over the rows once and twice
    over; the per-pair cost is the slope, ``(T(2n) - T(n)) / n``, so the
    process's start-up (reported apart) does not count; the overhead is the
    slope out of process minus the slope in process.

Targets: overhead <= 20 us/row, threshold-free on 1,000,000 rows < 3 s,
out-of-process overhead <= 100 us/pair.
``--check`` exits 1 when a target is missed. Run from the repository root::

    python -m scripts.bench_harness
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from cacheeval.baselines import ExactMatch
from cacheeval.dataset import load_bench
from cacheeval.metrics.ranking import threshold_free
from cacheeval.run.blockrun import CacheSpec
from cacheeval.run.harness import evaluate, predict
from cacheeval.run.parallel import Predictor
from cacheeval.schema import DOMAINS, LABELS, POLICY_NO_CACHE, Row, derive_binary_label
from cacheeval.support.layout import rng

REPO_ROOT = Path(__file__).resolve().parent.parent
OVERHEAD_TARGET_US = 20.0
PROCESS_TARGET_US = 100.0
THRESHOLD_FREE_TARGET_S = 3.0


def synthetic_rows(n: int) -> list[Row]:
    """``n`` valid labelled rows; about a tenth are verbatim repeats."""
    r = rng("bench_harness", "rows", n)
    words = ("cache", "answer", "query", "python", "capital", "solve", "sort", "list", "user")
    rows: list[Row] = []
    for i in range(n):
        domain = DOMAINS[i % len(DOMAINS)]
        label = LABELS[r.randrange(len(LABELS))]
        method = POLICY_NO_CACHE if domain in ("creative", "personalized") else "exact_match"
        query_a = " ".join(r.choice(words) for _ in range(8)) + "?"
        query_b = query_a if r.random() < 0.1 else " ".join(r.choice(words) for _ in range(8)) + "?"
        rows.append(
            Row(
                id=f"cb-{domain}-{i:04d}",
                domain=domain,
                subcategory="synthetic",
                label=label,
                binary_label=derive_binary_label(label, method),
                difficulty=("easy", "medium", "hard")[i % 3],
                query_a=query_a,
                query_b=query_b,
                context_a=None,
                context_b=None,
                system_prompt_a=None,
                system_prompt_b=None,
                tools_a=None,
                tools_b=None,
                expected_answer_a=None,
                expected_answer_b=None,
                rationale=None,
                verification_method=method,
                verification_payload=None,
                construction_method="synthetic",
                source="scripts/bench_harness.py",
                real_world_grounding=None,
                split="train",
            )
        )
    return rows


def bench_rows(n: int) -> tuple[list[Row], str]:
    """The labelled rows of cachebench.jsonl when it exists, else synthetic ones."""
    path = REPO_ROOT / "cachebench.jsonl"
    if path.exists():
        rows = [row for row in load_bench(path) if row.is_labelled]
        if rows:
            return rows, f"{path.name} ({len(rows)} labelled rows)"
    return synthetic_rows(n), f"{n} synthetic rows"


def _timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def bench_overhead(rows: list[Row], runs: int) -> tuple[float, float, float]:
    """Median seconds of evaluate and of the bare loop, and the per-row overhead in us."""
    cache = ExactMatch()
    pairs = [r.pair for r in rows]

    def bare() -> None:
        for pair in pairs:
            cache(pair)

    def harness() -> None:
        evaluate(cache, rows, cache_name="exact_match")

    harness()  # warm-up: imports, git provenance (asked once per process)
    bare()
    t_eval: list[float] = []
    t_bare: list[float] = []
    for _ in range(runs):  # alternate so drift hits both equally
        t_bare.append(_timed(bare))
        t_eval.append(_timed(harness))
    m_eval, m_bare = statistics.median(t_eval), statistics.median(t_bare)
    return m_eval, m_bare, (m_eval - m_bare) / len(rows) * 1e6


def bench_threshold_free(n: int, runs: int) -> tuple[float, float]:
    """Median and max seconds of threshold_free over ``n`` seeded scored rows."""
    r = rng("bench_harness", "scores", n)
    y = [1 if r.random() < 0.3375 else 0 for _ in range(n)]
    # Overlapping score distributions: HIT rows score higher on average.
    scores: list[float | None] = [r.random() * 0.7 + 0.3 * t for t in y]
    times = [_timed(lambda: threshold_free(y, scores)) for _ in range(runs)]
    return statistics.median(times), max(times)


def _out_of_process(rows: list[Row]) -> tuple[float, float]:
    """Seconds to start the cache process, and to decide ``rows`` in it."""
    t0 = time.perf_counter()
    with Predictor(CacheSpec(baseline="exact_match"), workers=1) as predictor:
        predictor.start()
        t1 = time.perf_counter()
        n = sum(1 for _ in predictor.run(rows))
        t2 = time.perf_counter()
    assert n == len(rows)
    return t1 - t0, t2 - t1


def bench_process(rows: list[Row], runs: int) -> tuple[float, float, float]:
    """Median start-up seconds of a cache process, and the median per-pair
    cost in us out of process and in process (slopes over n and 2n rows)."""
    twice = rows + rows
    starts: list[float] = []
    slope_out: list[float] = []
    slope_in: list[float] = []
    for _ in range(runs):  # alternate so drift hits both equally
        start, one = _out_of_process(rows)
        _, two = _out_of_process(twice)
        starts.append(start)
        slope_out.append((two - one) / len(rows) * 1e6)
        one_in = _timed(lambda: predict(ExactMatch(), rows))
        two_in = _timed(lambda: predict(ExactMatch(), twice))
        slope_in.append((two_in - one_in) / len(rows) * 1e6)
    return statistics.median(starts), statistics.median(slope_out), statistics.median(slope_in)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2000, help="synthetic rows for (a)")
    parser.add_argument("--runs", type=int, default=7, help="repetitions of (a)")
    parser.add_argument("--scored-rows", type=int, default=1_000_000, help="rows for (b)")
    parser.add_argument("--tf-runs", type=int, default=5, help="repetitions of (b)")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args(argv)

    print(f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs")
    rows, what = bench_rows(args.rows)
    m_eval, m_bare, overhead = bench_overhead(rows, args.runs)
    print(f"(a) exact_match over {what}, median of {args.runs} runs:")
    print(f"    evaluate   {m_eval * 1e3:9.2f} ms  ({m_eval / len(rows) * 1e6:.2f} us/row)")
    print(f"    bare loop  {m_bare * 1e3:9.2f} ms  ({m_bare / len(rows) * 1e6:.2f} us/row)")
    print(
        f"    overhead   {overhead:9.2f} us/row (target <= {OVERHEAD_TARGET_US:g}), "
        f"ratio evaluate/bare {m_eval / m_bare:.2f}"
    )
    med, worst = bench_threshold_free(args.scored_rows, args.tf_runs)
    print(
        f"(b) threshold_free over {args.scored_rows:,} scored rows, {args.tf_runs} runs: "
        f"median {med:.3f} s, max {worst:.3f} s (target < {THRESHOLD_FREE_TARGET_S:g} s)"
    )
    start, out_us, in_us = bench_process(rows, max(3, args.runs // 2))
    print(f"(c) exact_match in a cache process, over {what}:")
    print(f"    start-up   {start * 1e3:9.1f} ms (building the cache in a fresh interpreter)")
    print(f"    per pair   {out_us:9.2f} us out of process, {in_us:.2f} us in process")
    print(
        f"    overhead   {out_us - in_us:9.2f} us/pair (target <= {PROCESS_TARGET_US:g}), "
        f"ratio {out_us / in_us:.1f}"
    )
    ok = (
        overhead <= OVERHEAD_TARGET_US
        and med < THRESHOLD_FREE_TARGET_S
        and out_us - in_us <= PROCESS_TARGET_US
    )
    print("targets met" if ok else "TARGET MISSED")
    return 0 if ok or not args.check else 1


if __name__ == "__main__":
    sys.exit(main())
