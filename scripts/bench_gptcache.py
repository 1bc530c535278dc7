"""Speed and memory of the GPTCache adapter, measured in one run.

Prints, for MiniLM on torch and on ONNX: the wall time of the real-cache path
over the rows (per-pair GPTCache, embedding included) with the per-decision
p50/p95; the fast path's wall time (batch embedding of every unique text
included, model load excluded); and the process's peak resident memory.

    python -m scripts.bench_gptcache [--limit N]
"""

import argparse
import resource
import statistics
import sys
import time
from pathlib import Path

from adapters.embedders import get_embedder
from adapters.gptcache_adapter import GPTCacheAdapter
from cacheeval.dataset import load_bench

REPO = Path(__file__).resolve().parents[1]


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[max(0, min(len(s) - 1, round(q * len(s)) - 1))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bench", type=Path, default=REPO / "cachebench.jsonl")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--threshold", type=float, default=0.80)
    args = parser.parse_args()
    rows = load_bench(args.bench)  # the decision needs no labels
    if args.limit:
        rows = rows[: args.limit]
    print(f"rows: {len(rows)}")
    for name in ("minilm", "minilm-onnx"):
        t0 = time.perf_counter()
        get_embedder(name)
        print(f"{name}: model load {time.perf_counter() - t0:.1f} s")
    for name in ("minilm", "minilm-onnx"):
        real = GPTCacheAdapter(embedder=name, threshold=args.threshold, path="real")
        pairs = [r.pair for r in rows]
        real.prepare(pairs[:1])
        lat = []
        t0 = time.perf_counter()
        for p in pairs:
            s = time.perf_counter_ns()
            real(p)
            lat.append((time.perf_counter_ns() - s) / 1e6)
        wall = time.perf_counter() - t0
        print(
            f"{name} real path: {wall:.1f} s for {len(rows)} rows; per decision "
            f"p50 {statistics.median(lat):.1f} ms, p95 {pct(lat, 0.95):.1f} ms"
        )
    for name in ("minilm", "minilm-onnx"):
        fast = GPTCacheAdapter(embedder=name, threshold=args.threshold, path="fast")
        t0 = time.perf_counter()
        pairs = [r.pair for r in rows]
        fast.prepare(pairs)
        for p in pairs:
            fast(p)
        print(f"{name} fast path: {time.perf_counter() - t0:.1f} s (embedding included)")
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak resident memory: {peak_mb:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
