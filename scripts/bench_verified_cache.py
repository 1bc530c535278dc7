"""Measure the verified cache's decision latency, per tier and overall, in one run.

    python -m scripts.bench_verified_cache [--rows N] [--split test] [--cold-memo]

For each row (public rows suffice: no label is read) side a is ``put`` into a
fresh cache (timed separately: the put latency), then ``lookup(side b)`` is timed
with ``time.perf_counter_ns`` - a single call, no batching, the embedding of
side b included. Right before each lookup, one bare embedding call of the same
query with the same model (MiniLM ONNX, the call ``lookup`` makes) is timed:
the floor no cache built on that embedding can beat. Prints p50/p95/p99/mean
per tier (policy, exact, embedding, verifier) and overall, the put latency, the
embedding floor, the ratios get/floor at p50 and p95, and the CPU model (the
measuring loop is :func:`adapters.verified_cache.latency.interleaved_latency`).

The cache memoises embeddings of short differing spans and prior-turn histories
(LRU, keyed by text); by default the memo persists across rows as it would in a
running service. ``--cold-memo`` clears it before every lookup (the worst case:
every span embedded in the call). ``--check`` exits 1 when the overall p50 is
above 1.3x the embedding floor's p50 or the p95 above 2x its p95 (machines differ
2-3x in speed; the ratio does not).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from collections.abc import Sequence
from pathlib import Path

from adapters.verified_cache.cache import Resources
from adapters.verified_cache.latency import interleaved_latency
from adapters.verified_cache.model import MODEL_DIR, Verifier
from cacheeval.dataset import load_bench
from cacheeval.metrics.latency import LatencyStats, latency_stats
from cacheeval.support.jsonio import JsonlError
from scripts.machine import cpu_model

REPO = Path(__file__).resolve().parents[1]
#: get() latency over one embedding call of the same query, at p50 and p95.
P50_RATIO = 1.3
P95_RATIO = 2.0


def _ms(x: float | None) -> str:
    return "   n/a" if x is None else f"{x:6.2f}"


def _line(name: str, s: LatencyStats) -> str:
    return (
        f"{name:28s} n={s.n:5d}  p50 {_ms(s.p50_ms)}  p95 {_ms(s.p95_ms)}  "
        f"p99 {_ms(s.p99_ms)}  mean {_ms(s.mean_ms)}  max {_ms(s.max_ms)} ms"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bench", type=Path, default=REPO / "cachebench.jsonl")
    parser.add_argument("--split", default="test", help="rows of this split (default test)")
    parser.add_argument("--rows", type=int, default=None, help="first N rows only")
    parser.add_argument("--model-dir", type=Path, default=MODEL_DIR)
    parser.add_argument(
        "--embedder", default=None, help="default: the one the model was trained with"
    )
    parser.add_argument(
        "--threads", type=int, default=None, help="ONNX Runtime threads (default: the cache's)"
    )
    parser.add_argument("--cold-memo", action="store_true", help="clear the memo before each get")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args(argv)
    if not args.bench.is_file():
        print(
            f"error: {args.bench} not found: run `python -m scripts.assemble` first",
            file=sys.stderr,
        )
        return 2
    try:
        rows = load_bench(args.bench, split=args.split)
        verifier = Verifier.load(args.model_dir)
    except (JsonlError, ValueError, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.rows:
        rows = rows[: args.rows]
    extra = {} if args.threads is None else {"threads": args.threads}
    resources = Resources(verifier=verifier, embedder_name=args.embedder, **extra)
    run = interleaved_latency([r.pair for r in rows], resources, cold_memo=args.cold_memo)

    print(
        f"verified cache, {len(rows)} {args.split} rows, single-call get(), "
        f"memo {'cleared before each call' if args.cold_memo else 'kept across calls'}; "
        f"{platform.machine()} x{os.cpu_count()}, Python {platform.python_version()}, "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    for tier in sorted(run.by_tier):
        print(_line(f"get: {tier}", run.tier(tier)))
    overall = run.get()
    print(_line("get: all tiers", overall))
    print(_line("put (side a)", latency_stats(run.puts)) + f"  ({run.refused} refused by policy)")
    print(_line(f"embedding call ({resources.embedder_name})", latency_stats(run.floor)))
    r50, r95 = run.ratios()
    ok = r50 is not None and r95 is not None and r50 <= P50_RATIO and r95 <= P95_RATIO
    print(f"CPU: {cpu_model()}")
    print(
        f"get / embedding floor: p50 {r50:.2f}x (target <= {P50_RATIO}x), "
        f"p95 {r95:.2f}x (target <= {P95_RATIO}x): {'met' if ok else 'NOT met'}"
        if r50 is not None and r95 is not None
        else "get / embedding floor: n/a"
    )
    return 1 if args.check and not ok else 0


if __name__ == "__main__":
    sys.exit(main())
