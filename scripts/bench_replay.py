"""Shared-cache replay speed: lookup latency as the store grows, and the wall
time of a whole replay.

For each reference shared cache, one replay over all labelled rows (side a of
every row stored, side b of every row looked up; seed 0): 200 probe lookups
are timed once 100 and once 1,000 entries are stored, and every lookup at the
full store. The wall time covers everything a user waits for: model load,
batch embedding, puts and lookups. Target: the GPTCache fast-path replay over
all 2,000 rows in <= 30 s (``--check`` exits 1 when it is missed).

    python -m scripts.bench_replay [--check] [--real N] [--only NAME]

``--real N`` also runs GPTCache's real store (one SQLite + faiss store,
embedding every put and lookup live) over the first N rows.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cacheeval.dataset import load_bench
from cacheeval.metrics.latency import latency_stats
from cacheeval.replay.engine import replay

REPO = Path(__file__).resolve().parents[1]
FAST_TARGET_S = 30.0
SIZES = (100, 1000)


def caches(real_rows: int) -> list[tuple[str, Callable[[], Any], int | None]]:
    """(name, factory, row limit) of every cache to time."""
    from adapters.gptcache_shared import GPTCacheShared
    from adapters.verified_cache.shared import VerifiedShared
    from cacheeval.replay.shared_baselines import make_shared_baseline

    out: list[tuple[str, Callable[[], Any], int | None]] = [
        ("exact_match", lambda: make_shared_baseline("exact_match"), None),
        ("always_hit (lexical nearest)", lambda: make_shared_baseline("always_hit"), None),
        ("gptcache minilm@0.80 fast", lambda: GPTCacheShared(config="minilm@0.80", path="fast"),
         None),
        ("verified-cache", VerifiedShared, None),
    ]  # fmt: skip
    if real_rows:
        out.append(
            (
                "gptcache minilm@0.80 real store",
                lambda: GPTCacheShared(config="minilm@0.80", path="real"),
                real_rows,
            )
        )
    return out  # fmt: skip


def _ms(x: float | None) -> str:
    return "   n/a" if x is None else f"{x:6.3f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bench", type=Path, default=REPO / "cachebench.jsonl")
    parser.add_argument("--labels", type=Path, default=REPO / "private" / "test_labels.jsonl")
    parser.add_argument(
        "--real",
        type=int,
        default=0,
        metavar="N",
        help="also time GPTCache's real store over the first N rows",
    )
    parser.add_argument("--only", help="only caches whose name contains this")
    parser.add_argument("--check", action="store_true", help="exit 1 when the target is missed")
    args = parser.parse_args()  # fmt: skip
    rows = load_bench(args.bench, labels_path=args.labels)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{len(rows)} rows, {os.cpu_count()} CPUs, load average {load:.1f} at the start")
    print("p50 / p95 ms per lookup at each store size; wall time of the whole replay")
    print(f"{'cache':34} {'100 entries':>17} {'1,000 entries':>17} {'full store':>24} {'wall':>8}")
    fast_wall: float | None = None
    for name, factory, limit in caches(args.real):
        if args.only and args.only not in name:
            continue
        subset = rows[:limit] if limit else rows
        t0 = time.perf_counter()
        run = replay(factory(), subset, latency_sizes=SIZES, cache_name=name)
        wall = time.perf_counter() - t0
        cells = []
        for size in (*SIZES, len(subset)):
            stage = next((s for s in run.stages if s.n_entries == size), None)
            stats = latency_stats(stage.latencies_ms if stage else ())
            label = f" ({size})" if size == len(subset) else ""
            cells.append(f"{_ms(stats.p50_ms)} / {_ms(stats.p95_ms)}{label}")
        print(f"{name:34} {cells[0]:>17} {cells[1]:>17} {cells[2]:>24} {wall:7.1f}s")
        if name.startswith("gptcache") and name.endswith("fast"):
            fast_wall = wall
    end = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"load average {end:.1f} at the end")
    if fast_wall is None:
        return 0
    ok = fast_wall <= FAST_TARGET_S
    print(f"GPTCache fast-path replay over {len(rows)} rows: {fast_wall:.1f} s "
          f"(target <= {FAST_TARGET_S:g} s): {'met' if ok else 'MISSED'}")  # fmt: skip
    return 1 if args.check and not ok else 0


if __name__ == "__main__":
    sys.exit(main())
