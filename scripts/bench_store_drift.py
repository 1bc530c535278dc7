"""The verified store when traffic moves out of its 8-bit ranges, with and without
the retraining rebuild (``index_options={"retrain_on_drift": ...}``).

    python -m scripts.bench_store_drift [--first qa_open] [--json out.json]

Real request embeddings (MiniLM, offline): the texts ``bench_verified_store
--real`` uses (every request of cachebench.jsonl and of the stress rows made
from the shipped prompts and the dev queries). 500 of them, drawn with a seed,
are the lookups; the rest are stored. A scope's graph is first built from one
kind of traffic only, the stored requests of the ``--first`` CacheEval domains
(one batch: its 8-bit ranges are trained on them, as a store's first 8,193
entries are), and the rest arrive afterwards one put at a time in a seeded
order. The store forces HNSW early (``brute_force_max`` 256) because these are
a few thousand texts, not the millions where the switch happens.

Per run, after the last put (and any rebuild) is done: the live entries'
encoding errors (median, p99, max) and how many have drifted (clamped by the
ranges), the retrains that ran, the float32 rows each lookup read to re-rank
its candidates (a wide error bound costs a read), lookup p50/p95 (the store's
``nearest`` with the recall gate as floor, one thread), and recall@3 and gate
recall against exact brute force over the stored vectors. Progress on stderr,
the table on stdout.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from adapters.verified_cache.store import EntryStore

from .bench_verified_store import TOP_K, _accuracy, _stats, gate_threshold, real_texts

LOOKUPS = 500


def _progress(msg: str) -> None:
    print(f"[bench_store_drift {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


class _CountingStore(EntryStore):
    """The store, counting the records its lookups read (the re-ranking's reads)."""

    reads = 0

    def _fetch(self, ids: list[int]) -> list[Any]:
        self.reads += len(ids)
        return super()._fetch(ids)


def _domains() -> dict[str, str]:
    """Each request text of cachebench.jsonl -> its row's domain."""
    from cacheeval.support.layout import REPO_ROOT

    out: dict[str, str] = {}
    with open(REPO_ROOT / "cachebench.jsonl", encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            for text in (row.get("query_a"), row.get("query_b")):
                if text:
                    out.setdefault(text, row["domain"])
    return out


def run(vectors: Any, first: Any, later: Any, lookups: Any, retrain: bool) -> dict[str, Any]:
    """One store: ``first`` rows in one batch, ``later`` one put at a time; then the lookups."""
    import faiss
    import numpy as np

    from adapters.verified_cache.store import NewEntry
    from cacheeval.schema import Request

    def entry(row: int) -> NewEntry:
        return NewEntry("", str(row), Request(str(row)), "", vectors[row])

    with tempfile.TemporaryDirectory(prefix="bench_store_drift_") as tmp:
        store = _CountingStore(
            Path(tmp) / "store.sqlite",
            brute_force_max=256,
            index_options={"retrain_on_drift": retrain},
        )
        store.add_many([entry(r) for r in first])
        index = store._indexes[0]
        first_limit = index._drift_limit
        t0 = time.perf_counter()
        for r in later:
            store.add_many([entry(r)])
        puts_s = time.perf_counter() - t0
        store.wait_for_rebuilds()
        index = store._indexes[0]
        live = index._errors[: index._n][index._alive[: index._n]]
        faiss.omp_set_num_threads(1)
        floor = gate_threshold() - 1e-4
        store.reads = 0
        returned, get_ms = [], []
        stored_rows = np.concatenate([first, later])
        for v in vectors[lookups]:
            t = time.perf_counter_ns()
            got = store.nearest("", v, TOP_K, floor=floor)
            get_ms.append((time.perf_counter_ns() - t) / 1e6)
            returned.append([int(rec.exact_key) for rec, _ in got])
        reads = store.reads / len(lookups)
        store.close()
    remap = {int(r): j for j, r in enumerate(stored_rows)}
    found = [[remap[r] for r in g] for g in returned]
    acc = _accuracy(vectors[stored_rows], vectors[lookups], found)
    return {
        "retrain_on_drift": retrain,
        "entries": len(stored_rows),
        "first_batch": len(first),
        "drift_limit_first": first_limit,
        "drift_limit": index._drift_limit,
        "drifted": index.drifted,
        "retrains": index.retrains,
        "error_median": float(np.median(live)),
        "error_p99": float(np.percentile(live, 99)),
        "error_max": float(live.max()),
        "reads_per_get": reads,
        "get": _stats(get_ms),
        "puts_s": puts_s,
        "recall_at_3": acc["recall_at_3"],
        "gate_recall": acc["gate_recall"],
    }


def markdown(results: list[dict[str, Any]], first: list[str]) -> str:
    lines = [
        f"Ranges trained on the first batch ({', '.join(first)}), the rest put one at a time:",
        "",
        "| retrain on drift | entries (first batch) | drifted | retrains "
        "| error median / p99 / max | rows read per get | get p50 / p95 ms | recall@3 "
        "| gate recall |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {'yes' if r['retrain_on_drift'] else 'no'} | {r['entries']:,} "
            f"({r['first_batch']:,}) | {r['drifted']:,} | {r['retrains']} | "
            f"{r['error_median']:.4f} / {r['error_p99']:.4f} / {r['error_max']:.4f} | "
            f"{r['reads_per_get']:.2f} | {r['get']['p50_ms']:.3f} / {r['get']['p95_ms']:.3f} | "
            f"{r['recall_at_3']:.4f} | {r['gate_recall']:.4f} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--first", default="qa_open",
                        help="CacheEval domains whose requests build the first graph")  # fmt: skip
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    import numpy as np

    from adapters.verified_cache.cache import Resources
    from adapters.verified_cache.model import Verifier

    first_domains = [d for d in args.first.split(",") if d]
    texts = real_texts()
    _progress(f"embedding {len(texts):,} request texts")
    vectors = np.asarray(Resources(verifier=Verifier.load()).encode(texts), dtype=np.float32)
    domain = _domains()
    rows = np.random.default_rng(0).permutation(len(texts))
    lookups, stored = rows[:LOOKUPS], rows[LOOKUPS:]
    is_first = np.array([domain.get(texts[r]) in first_domains for r in stored])
    first, later = np.sort(stored[is_first]), stored[~is_first]
    if len(first) < 257:
        print(f"--first {args.first}: {len(first)} requests, fewer than 257", file=sys.stderr)
        return 2
    results = []
    for retrain in (False, True):
        _progress(f"store, retrain_on_drift={retrain}")
        results.append(run(vectors, first, later, lookups, retrain))
    print(markdown(results, first_domains))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
