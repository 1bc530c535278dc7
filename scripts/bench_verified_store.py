"""Measure the verified cache's store beside GPTCache's own store, from 1k to 1M entries.

    python -m scripts.bench_verified_store [--sizes 1000,10000,100000,1000000]
        [--gets 500] [--puts 300] [--no-gptcache] [--json out.json]

What is timed is the store's own work, without the model call (embedding) and
without the verifier (which reads only the ``top_k`` candidates, whatever N):

* **ours** (:class:`adapters.verified_cache.store.EntryStore` with ``path=``, the
  persistent store): ``get`` = the exact-tier dict lookup (a miss: the query is
  new) + the scope's nearest-neighbour search for ``top_k = 3`` + reading those
  candidates (request, answer, float32 vector, word pieces) and their exact
  cosines; ``put`` = one entry stored: one SQLite transaction + the index add.
* **GPTCache** (its SQLite + faiss data manager, ``get_data_manager(CacheBase(
  'sqlite'), VectorBase('faiss', dimension=384))`` in a temp dir, ``max_size`` above
  N so nothing is evicted): ``get`` = ``search(top_k=3)`` + ``get_scalar_data`` of
  each result (what its adapter does before evaluating); ``put`` = ``save``.

Both stores get the same synthetic vectors in the same run (seeded): 384-d unit
vectors in paraphrase clusters of 8 (cosine ~0.87 within a cluster, ~0 across;
random unit vectors would make the 2nd and 3rd neighbours meaningless ties);
each ``get`` is a fresh member of a stored cluster, each ``put`` a new one. Each
store is first filled to N in bulk (ours: ``add_many`` in batches of 10,000, one
transaction each; GPTCache: ``import_data``), which is timed as the build; then
``--gets`` lookups and ``--puts`` single puts are timed one by one
(``perf_counter_ns``). Memory is the growth of the process's resident set over
the build (``malloc_trim`` first), per entry, the request/answer text included
(~40 bytes here); disk is the files' size per entry (SQLite, and the HNSW index
saved beside it by ``close()``, whose time is "close s"; "reopen s" is opening
the closed store again: reading that index and scanning SQLite). Recall@3 is ours against
exact brute force over all N vectors, on every timed get. Each (store, size)
runs in its own subprocess, so one's memory is not another's.

Threads: builds use faiss's default OpenMP threads (all cores); the timed single
calls run with one (``faiss.omp_set_num_threads(1)``) for both stores: on a
shared 2-core machine an OpenMP region for one query mostly waits for a busy
core (GPTCache's flat search over 1k vectors: p95 11 ms with two threads, 0.04
ms with one).

Durability: our SQLite runs in WAL with ``synchronous=NORMAL`` (no fsync per
commit; a killed process loses nothing committed), GPTCache's SQLAlchemy
SQLite in its default rollback journal, which fsyncs every commit (its ``get``
commits too: it updates each result's access time). "put p50 fsync" times 100
more of our puts with ``synchronous=FULL`` (an fsync per commit, as GPTCache).

Beside them, in the same run: one MiniLM (ONNX) query embedding, the model call
a real ``get``/``put`` adds (skipped when the model cannot be loaded offline).
Progress goes to stderr; the table to stdout.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

DIM = 384
CLUSTER = 8
SIGMA = 0.02  # per-coordinate noise: cosine ~0.87 between members of a cluster
TOP_K = 3
BATCH = 10_000
DEFAULT_SIZES = (1_000, 10_000, 100_000, 1_000_000)


def _progress(msg: str) -> None:
    print(f"[bench_verified_store {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def _rss_bytes() -> int:
    with open("/proc/self/statm", encoding="ascii") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _trimmed_rss() -> int:
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except OSError:  # not glibc: the figure includes freed heap
        pass
    return _rss_bytes()


def _unit(x: Any) -> Any:
    import numpy as np

    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def synthetic(n: int, n_get: int, n_put: int, seed: int = 0) -> tuple[Any, Any, Any]:
    """Stored vectors (n), get queries and put vectors, all clustered (see the docstring)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    n_centers = max(1, n // CLUSTER)
    centers = _unit(rng.standard_normal((n_centers, DIM), dtype=np.float32))
    stored = np.empty((n, DIM), dtype=np.float32)
    for start in range(0, n, 100_000):  # in chunks: 1M x 384 noise at once is 1.5 GB more
        stop = min(n, start + 100_000)
        c = centers[np.arange(start, stop) // CLUSTER % n_centers]
        noise = rng.standard_normal((stop - start, DIM), dtype=np.float32)
        stored[start:stop] = _unit(c + SIGMA * noise)
    gets = _unit(centers[rng.integers(0, n_centers, n_get)]
                 + SIGMA * rng.standard_normal((n_get, DIM), dtype=np.float32))  # fmt: skip
    puts = _unit(centers[rng.integers(0, n_centers, n_put)]
                 + SIGMA * rng.standard_normal((n_put, DIM), dtype=np.float32))  # fmt: skip
    return stored, gets, puts


def _stats(ms: list[float]) -> dict[str, float]:
    from cacheeval.metrics.latency import latency_stats

    s = latency_stats(ms)
    return {"p50_ms": s.p50_ms or 0.0, "p95_ms": s.p95_ms or 0.0, "mean_ms": s.mean_ms or 0.0}


def _disk(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


# --- the two stores ------------------------------------------------------------------


def run_ours(n: int, n_get: int, n_put: int, folder: Path, reopen: bool) -> dict[str, Any]:
    import faiss
    import numpy as np

    from adapters.verified_cache.store import EntryStore, NewEntry
    from cacheeval.schema import Request

    stored, gets, puts = synthetic(n, n_get, n_put)
    path = folder / "verified.sqlite"
    store = EntryStore(path)
    base = _trimmed_rss()  # libraries loaded, store open and empty
    t0 = time.perf_counter()
    for start in range(0, n, BATCH):
        batch = [
            NewEntry("", f"synthetic request {i}", Request(f"synthetic request {i}"),
                     f"answer {i}", stored[i])
            for i in range(start, min(n, start + BATCH))
        ]  # fmt: skip
        store.add_many(batch)
        if start and start % 100_000 == 0:
            _progress(f"ours: {start:,} / {n:,} stored ({time.perf_counter() - t0:.0f} s)")
    build_s = time.perf_counter() - t0
    memory = _trimmed_rss() - base
    faiss.omp_set_num_threads(1)  # single calls: see the module docstring
    get_ms, hits = [], 0
    for i, q in enumerate(gets):
        key = f"new request {i}"
        t = time.perf_counter_ns()
        store.exact("", key)
        got = store.nearest("", q, TOP_K)
        get_ms.append((time.perf_counter_ns() - t) / 1e6)
        sims = stored @ q
        want = np.argpartition(-sims, TOP_K)[:TOP_K] if n > TOP_K else np.arange(n)
        hits += len({r.id - 1 for r, _ in got} & set(want.tolist()))
    put_ms = []
    for i, v in enumerate(puts):
        t = time.perf_counter_ns()
        store.add("", f"put request {i}", Request(f"put request {i}"), f"put answer {i}", v)
        put_ms.append((time.perf_counter_ns() - t) / 1e6)
    assert store._db is not None
    store._db.writer.execute("PRAGMA synchronous=FULL")  # as GPTCache's SQLite commits
    fsync_ms = []
    for i, v in enumerate(puts[: min(100, len(puts))]):
        t = time.perf_counter_ns()
        store.add("", f"fsync request {i}", Request(f"fsync request {i}"), "answer", v)
        fsync_ms.append((time.perf_counter_ns() - t) / 1e6)
    index = store._indexes[0]
    t0 = time.perf_counter()
    store.close()  # saves the HNSW index beside the file
    close_s = time.perf_counter() - t0
    out: dict[str, Any] = {
        "store": "verified (ours)",
        "n": n,
        "build_s": build_s,
        "get": _stats(get_ms),
        "put": _stats(put_ms),
        "put_fsync": _stats(fsync_ms),
        "memory_bytes_per_entry": memory / n,
        "disk_bytes_per_entry": _disk(folder) / n,
        "recall_at_3": hits / (TOP_K * len(gets)),
        "regime": "hnsw (float16)" if index.approximate else "brute force (float32)",
        "close_s": close_s,
    }
    if reopen:
        t0 = time.perf_counter()
        again = EntryStore(path)
        out["reopen_s"] = time.perf_counter() - t0
        assert len(again) == n + n_put + len(fsync_ms)
        again.close()
    return out


def run_gptcache(n: int, n_get: int, n_put: int, folder: Path) -> dict[str, Any]:
    import faiss
    from gptcache.manager import CacheBase, VectorBase, get_data_manager

    stored, gets, puts = synthetic(n, n_get, n_put)
    dm = get_data_manager(
        CacheBase("sqlite", sql_url=f"sqlite:///{folder / 'gptcache.db'}"),
        VectorBase("faiss", dimension=DIM, index_path=str(folder / "faiss.index")),
        max_size=n + n_put + 10,
    )
    base = _trimmed_rss()  # libraries loaded, store open and empty
    t0 = time.perf_counter()
    for start in range(0, n, BATCH):
        stop = min(n, start + BATCH)
        dm.import_data(
            [f"synthetic request {i}" for i in range(start, stop)],
            [f"answer {i}" for i in range(start, stop)],
            list(stored[start:stop]),
            [None] * (stop - start),
        )
        if start and start % 100_000 == 0:
            _progress(f"gptcache: {start:,} / {n:,} stored ({time.perf_counter() - t0:.0f} s)")
    build_s = time.perf_counter() - t0
    memory = _trimmed_rss() - base
    faiss.omp_set_num_threads(1)
    get_ms = []
    for q in gets:
        t = time.perf_counter_ns()
        for res in dm.search(q, top_k=TOP_K) or []:
            dm.get_scalar_data(res)
        get_ms.append((time.perf_counter_ns() - t) / 1e6)
    put_ms = []
    for i, v in enumerate(puts):
        t = time.perf_counter_ns()
        dm.save(f"put request {i}", f"put answer {i}", v)
        put_ms.append((time.perf_counter_ns() - t) / 1e6)
    dm.close()  # writes faiss.index
    return {
        "store": "GPTCache (SQLite + faiss)",
        "n": n,
        "build_s": build_s,
        "get": _stats(get_ms),
        "put": _stats(put_ms),
        "put_fsync": _stats(put_ms),  # its SQLite commits with synchronous=FULL already
        "memory_bytes_per_entry": memory / n,
        "disk_bytes_per_entry": _disk(folder) / n,
        "recall_at_3": 1.0,  # IndexFlatL2: exact
        "regime": "flat (float32)",
    }


def run_model(n_calls: int = 200) -> dict[str, Any] | None:
    """One MiniLM (ONNX) query embedding: the model call a real get/put adds."""
    try:
        from adapters.verified_cache.cache import Resources
        from adapters.verified_cache.model import Verifier

        res = Resources(verifier=Verifier.load())
        res.query_embedding("warm up")
    except Exception as e:  # no model offline: say so, measure the rest
        _progress(f"model call not measured: {type(e).__name__}: {e}")
        return None
    ms = []
    for i in range(n_calls):
        t = time.perf_counter_ns()
        res.query_embedding(f"How do I reset the password of account number {i}?")
        ms.append((time.perf_counter_ns() - t) / 1e6)
    return {"embedder": res.embedder_name, **_stats(ms)}


# --- driver ----------------------------------------------------------------------------


def _worker(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="bench_store_") as tmp:
        folder = Path(tmp)
        if args.worker == "ours":
            result = run_ours(args.size, args.gets, args.puts, folder, args.size <= args.reopen_max)
        elif args.worker == "gptcache":
            result = run_gptcache(args.size, args.gets, args.puts, folder)
        else:
            result = {"model": run_model()}
    print(json.dumps(result))
    return 0


def _spawn(kind: str, size: int, args: argparse.Namespace) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "scripts.bench_verified_store", "--worker", kind,
           "--size", str(size), "--gets", str(args.gets), "--puts", str(args.puts),
           "--reopen-max", str(args.reopen_max)]  # fmt: skip
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{kind} at {size:,}: worker exited {proc.returncode}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def markdown(results: list[dict[str, Any]], model: dict[str, Any] | None, cpu: str) -> str:
    lines = [
        f"CPU: {cpu}; top_k {TOP_K}; 384-d clustered unit vectors; times in ms per call.",
        "",
        "| store | entries | get p50 | get p95 | put p50 | put p95 | put p50 fsync | recall@3"
        " | RAM B/entry | disk B/entry | build s | close s | reopen s | index |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        reopen = f"{r['reopen_s']:.1f}" if "reopen_s" in r else "-"
        close = f"{r['close_s']:.1f}" if "close_s" in r else "-"
        lines.append(
            f"| {r['store']} | {r['n']:,} | {r['get']['p50_ms']:.3f} | {r['get']['p95_ms']:.3f}"
            f" | {r['put']['p50_ms']:.3f} | {r['put']['p95_ms']:.3f}"
            f" | {r['put_fsync']['p50_ms']:.3f} | {r['recall_at_3']:.4f}"
            f" | {r['memory_bytes_per_entry']:,.0f} | {r['disk_bytes_per_entry']:,.0f}"
            f" | {r['build_s']:.1f} | {close} | {reopen} | {r['regime']} |"
        )
    lines.append("")
    if model:
        lines.append(
            f"Model call (not in the figures above): one {model['embedder']} query embedding,"
            f" p50 {model['p50_ms']:.2f} ms, p95 {model['p95_ms']:.2f} ms."
        )
    else:
        lines.append("Model call: not measured (the model could not be loaded offline).")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes",
        default=",".join(str(s) for s in DEFAULT_SIZES),
        help="comma-separated store sizes (default 1000,10000,100000,1000000)",
    )
    parser.add_argument("--gets", type=int, default=500, help="timed gets per size")
    parser.add_argument("--puts", type=int, default=300, help="timed puts per size")
    parser.add_argument("--no-gptcache", action="store_true", help="ours only")
    parser.add_argument("--reopen-max", type=int, default=1_000_000,
                        help="time reopening the closed store up to this size")  # fmt: skip
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--worker", choices=("ours", "gptcache", "model"), help=argparse.SUPPRESS)
    parser.add_argument("--size", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return _worker(args)
    try:
        sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]
    except ValueError:
        print(f"--sizes: not a list of integers: {args.sizes!r}", file=sys.stderr)
        return 2
    if not sizes or min(sizes) < 10:
        print("--sizes: each size must be at least 10", file=sys.stderr)
        return 2
    from scripts.machine import cpu_model

    _progress("model call")
    model = _spawn("model", 0, args)["model"]
    results = []
    for n in sizes:
        for kind in ("ours",) if args.no_gptcache else ("ours", "gptcache"):
            _progress(f"{kind} at {n:,} entries")
            t0 = time.perf_counter()
            r = _spawn(kind, n, args)
            results.append(r)
            _progress(
                f"{kind} at {n:,}: done in {time.perf_counter() - t0:.0f} s; get p50"
                f" {r['get']['p50_ms']:.3f} ms, put p50 {r['put']['p50_ms']:.3f} ms,"
                f" {r['memory_bytes_per_entry']:,.0f} B/entry"
            )
    table = markdown(results, model, cpu_model())
    print(table)
    if args.json:
        args.json.write_text(
            json.dumps({"cpu": cpu_model(), "model": model, "results": results}, indent=1) + "\n",
            encoding="utf-8",
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
