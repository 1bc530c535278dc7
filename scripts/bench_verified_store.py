"""Measure the verified cache's store beside GPTCache's own store, from 1k to 1M entries.

    python -m scripts.bench_verified_store [--sizes 1000,10000,100000,1000000]
        [--data calibrated,worst] [--gets 500] [--misses 100] [--puts 300]
        [--no-gptcache] [--gptcache-data calibrated] [--real]
        [--index-options '{"ef_search": 128}'] [--fill-order arrival|grouped]
        [--json out.json]

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

Both stores get the same synthetic vectors in the same run (seeded), from one
of two generators (``--data``): **calibrated** (:func:`calibrated`: shaped like
real request embeddings: a shared mean direction, domains, topics, subtopics
and paraphrase groups, weights fitted to the neighbourhood statistics of MiniLM
embeddings of the repository's request texts, which ``--real`` measures) and
**worst** (:func:`worst_case`: 384-d unit vectors in clusters of 8 around
random, near-orthogonal directions, cosine ~0.87 within a cluster, ~0 across:
a needle in a haystack for a graph index). ``--gets`` lookups are fresh
members of stored groups, ``--misses`` more belong to no stored group; they are
timed in one shuffled order and reported apart by whether the exact best
cosine reaches the recall gate (``model/meta.json``), which our store gets as
its ``floor`` (as :class:`~adapters.verified_cache.cache.VerifiedCache` passes
it). Recall@3 and gate recall (every exact top-3 entry at or above the gate
returned) are measured against exact brute force, over all gets and over the
gets with a servable neighbour ("servable"), and the latter's gate recall apart
for the gets that belong to a stored group ("group") and the new-topic ones
whose best neighbour reaches the gate by chance ("chance": an unrelated entry
just above the gate among many just below it, which a graph search finds only
by luck); the same gets are then timed again
on the same graph without the floor, with a scan at any size (the store scans
only scopes up to ``exhaustive_max``), and at 2x and 4x the efSearch. The
entries are stored in a seeded random order (``--fill-order arrival``, as
traffic arrives) or group by group as generated (``grouped``). A third pass
times the exact tier alone and the index search alone ("Where a get's time
goes").
Each ``put`` is a fresh member of a stored group. Each store is first filled to
N in bulk (ours: ``add_many`` in batches of 10,000, one
transaction each; GPTCache: ``import_data``), which is timed as the build; then
``--gets`` lookups and ``--puts`` single puts are timed one by one
(``perf_counter_ns``). Memory is the growth of the process's resident set over
the build (``malloc_trim`` first), per entry, the request/answer text included
(~40 bytes here); disk is the files' size per entry (SQLite, and the HNSW index
saved beside it by ``close()``, whose time is "close s"; "reopen s" is opening
the closed store again: reading that index and scanning SQLite). Each (store,
size, data) runs in its own subprocess, so one's memory is not another's.

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
DATASETS = ("calibrated", "worst")
#: Weights of the calibrated generator's levels (mean direction, domain, topic,
#: subtopic, paraphrase group, member noise), fitted by hand to the neighbourhood
#: statistics of real request embeddings (``--real``; docs/verified-cache.md).
CALIBRATED_WEIGHTS = (0.21, 0.33, 0.38, 0.5, 0.62, 0.25)
DOMAINS = 10
GROUP_SIZES = (2, 6)  # members of a paraphrase group (uniform)
SUBTOPIC_GROUPS = 4
TOPIC_SUBTOPICS = 8


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

    return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)


def gate_threshold() -> float:
    """The shipped model's recall gate (``model/meta.json``): the lowest cosine a
    candidate can be served at."""
    from adapters.verified_cache.model import MODEL_DIR

    meta = json.loads((MODEL_DIR / "meta.json").read_text(encoding="utf-8"))
    return float(meta["gate_threshold"])


def worst_case(n: int, n_get: int, n_miss: int, n_put: int, seed: int = 0) -> tuple[Any, ...]:
    """The worst case for a graph index: ``n / 8`` random (near-orthogonal) cluster
    directions of 8 members each. Stored vectors (n), gets (fresh members of stored
    clusters), misses (members of new clusters: nothing within the gate) and puts."""
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

    def members(c: Any) -> Any:
        return _unit(c + SIGMA * rng.standard_normal(c.shape, dtype=np.float32))

    gets = members(centers[rng.integers(0, n_centers, n_get)])
    misses = members(_unit(rng.standard_normal((n_miss, DIM), dtype=np.float32)))
    puts = members(centers[rng.integers(0, n_centers, n_put)])
    return stored, gets, misses, puts


def calibrated(n: int, n_get: int, n_miss: int, n_put: int, seed: int = 0) -> tuple[Any, ...]:
    """Vectors shaped like real request embeddings: a shared mean direction (MiniLM's
    anisotropy), :data:`DOMAINS` domains, topics of :data:`TOPIC_SUBTOPICS`
    subtopics of :data:`SUBTOPIC_GROUPS` paraphrase groups of 2-6 members; each
    vector is the normalised sum of its levels' random unit directions, weighted by
    :data:`CALIBRATED_WEIGHTS`, the member noise scaled per group by an exponential
    draw (tight and loose paraphrase groups). More entries mean more topics of
    the same shape. Returns stored vectors, gets (new members of stored groups),
    misses (members of new topics: nothing within the gate) and puts."""
    import numpy as np

    w = CALIBRATED_WEIGHTS
    rng = np.random.default_rng(seed)
    mean = _unit(rng.standard_normal(DIM, dtype=np.float32))
    sizes = rng.integers(GROUP_SIZES[0], GROUP_SIZES[1] + 1, n // GROUP_SIZES[0] + 1)
    n_groups = int(np.searchsorted(np.cumsum(sizes), n)) + 1
    sizes = sizes[:n_groups]
    n_subs = -(-n_groups // SUBTOPIC_GROUPS)
    n_topics = -(-n_subs // TOPIC_SUBTOPICS)
    domains = _unit(rng.standard_normal((DOMAINS, DIM), dtype=np.float32))
    topic_dom = rng.integers(0, DOMAINS, n_topics)
    topics = _unit(rng.standard_normal((n_topics, DIM), dtype=np.float32))
    subs = _unit(rng.standard_normal((n_subs, DIM), dtype=np.float32))
    sub_topic = np.arange(n_subs) // TOPIC_SUBTOPICS
    noise_w = (w[5] * rng.exponential(1.0, n_groups)).astype(np.float32)
    base = np.empty((n_groups, DIM), dtype=np.float32)
    for start in range(0, n_groups, 100_000):
        g = np.arange(start, min(n_groups, start + 100_000))
        s_ = g // SUBTOPIC_GROUPS
        t = sub_topic[s_]
        own = _unit(rng.standard_normal((len(g), DIM), dtype=np.float32))
        base[g] = (w[0] * mean + w[1] * domains[topic_dom[t]] + w[2] * topics[t]
                   + w[3] * subs[s_] + w[4] * own)  # fmt: skip
    owner = np.repeat(np.arange(n_groups), sizes)[:n]

    def members(groups: Any) -> Any:
        noise = _unit(rng.standard_normal((len(groups), DIM), dtype=np.float32))
        return _unit(base[groups] + noise_w[groups, None] * noise)

    stored = np.empty((n, DIM), dtype=np.float32)
    for start in range(0, n, 100_000):
        stored[start : start + 100_000] = members(owner[start : start + 100_000])
    gets = members(owner[rng.integers(0, n, n_get)])  # groups in proportion to their size
    new = _unit(
        w[0] * mean + w[1] * domains[rng.integers(0, DOMAINS, n_miss)]
        + sum(w[i] * _unit(rng.standard_normal((n_miss, DIM), dtype=np.float32)) for i in (2, 3, 4))
        + w[5] * rng.exponential(1.0, (n_miss, 1)).astype(np.float32)
        * _unit(rng.standard_normal((n_miss, DIM), dtype=np.float32))
    )  # fmt: skip
    puts = members(owner[rng.integers(0, n, n_put)])
    return stored, gets, new, puts


def make_data(
    kind: str, n: int, n_get: int, n_miss: int, n_put: int, order: str = "arrival"
) -> tuple[Any, ...]:
    """The data set ``kind``; ``order`` "arrival" stores the entries in a seeded
    random order (traffic order: paraphrases of one question arrive apart in
    time), "grouped" in the generator's order (group by group, topic by topic:
    a sorted bulk import, harder for a graph built as it goes)."""
    import numpy as np

    stored, *rest = (calibrated if kind == "calibrated" else worst_case)(n, n_get, n_miss, n_put)
    if order == "arrival":
        stored = stored[np.random.default_rng(3).permutation(n)]
    return (stored, *rest)


def true_neighbours(stored: Any, queries: Any, k: int) -> tuple[Any, Any]:
    """Exact top ``k`` (row numbers, cosines; best first, ties by row) of every
    query over ``stored``, by blocks of rows."""
    import numpy as np

    best_i = np.zeros((len(queries), 0), dtype=np.int64)
    best_s = np.zeros((len(queries), 0), dtype=np.float32)
    for start in range(0, len(stored), 100_000):
        sims = queries @ stored[start : start + 100_000].T
        kk = min(k, sims.shape[1])
        part = np.argpartition(-sims, kk - 1, axis=1)[:, :kk]
        best_i = np.concatenate([best_i, part + start], axis=1)
        best_s = np.concatenate([best_s, np.take_along_axis(sims, part, axis=1)], axis=1)
        order = np.lexsort((best_i, -best_s), axis=1)[:, :k]
        best_i = np.take_along_axis(best_i, order, axis=1)
        best_s = np.take_along_axis(best_s, order, axis=1)
    return best_i, best_s


def neighbourhood(vectors: Any, n_queries: int = 1000, seed: int = 0) -> dict[str, float]:
    """Neighbourhood statistics of a set of unit vectors: medians (and the 1st
    neighbour's 10th/90th percentiles) of the cosine to the 1st, 10th and 100th
    nearest other vector over ``n_queries`` of them; mean and standard deviation of
    the cosine of random pairs; the norm of the mean vector (anisotropy: 0 for
    isotropic vectors); the share of vectors with a neighbour at or above the gate."""
    import numpy as np

    rng = np.random.default_rng(seed)
    n = len(vectors)
    rows = rng.choice(n, min(n, n_queries), replace=False)
    idx, sims = true_neighbours(vectors, vectors[rows], 101)
    not_self = idx != rows[:, None]
    nn = np.stack([s[m][:100] for s, m in zip(sims, not_self, strict=True)])
    a, b = rng.integers(0, n, 20_000), rng.integers(0, n, 20_000)
    pairs = np.einsum("ij,ij->i", vectors[a[a != b]], vectors[b[a != b]])
    gate = gate_threshold()
    return {
        "n": n,
        "nn1": float(np.median(nn[:, 0])),
        "nn1_p10": float(np.percentile(nn[:, 0], 10)),
        "nn1_p90": float(np.percentile(nn[:, 0], 90)),
        "nn10": float(np.median(nn[:, 9])),
        "nn100": float(np.median(nn[:, 99])),
        "random_mean": float(pairs.mean()),
        "random_std": float(pairs.std()),
        "mean_norm": float(np.linalg.norm(vectors.mean(axis=0))),
        "share_nn1_at_gate": float((nn[:, 0] >= gate).mean()),
    }


def _stats(ms: list[float]) -> dict[str, float]:
    from cacheeval.metrics.latency import latency_stats

    s = latency_stats(ms)
    return {"p50_ms": s.p50_ms or 0.0, "p95_ms": s.p95_ms or 0.0, "mean_ms": s.mean_ms or 0.0}


def _disk(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


# --- the two stores ------------------------------------------------------------------


def _interleave(gets: Any, misses: Any, seed: int = 1) -> tuple[Any, Any]:
    """Gets and misses in one seeded random order, and which rows are misses."""
    import numpy as np

    queries = np.concatenate([gets, misses])
    order = np.random.default_rng(seed).permutation(len(queries))
    return queries[order], order >= len(gets)


def _accuracy(
    stored: Any, queries: Any, returned: list[list[int]], new_topic: Any = None
) -> dict[str, Any]:
    """Recall@3: the share of the exact top 3 returned; gate recall: the share of
    queries whose exact top-3 entries at or above the gate were all returned; and
    which queries have a servable neighbour (exact best cosine at or above the
    gate). Near-ties count as found: an entry returned in place of one whose
    cosine it matches within 1e-6 (float32 sums in another order) is no miss.
    With ``new_topic`` (one flag per query: made as a member of no stored group),
    the gate recall of the servable queries is also given apart for the members
    of stored groups ("group") and the new-topic ones whose best neighbour
    reaches the gate only by chance ("chance": an unrelated entry a little above
    the gate among many just below it)."""
    import numpy as np

    gate = gate_threshold() - 1e-4  # the cache's floor (cache.GATE_SLACK)
    _, sims = true_neighbours(stored, queries, TOP_K)
    hits = gate_ok = servable_hits = servable_ok = 0
    oks = []
    for got, q, s in zip(returned, queries, sims, strict=True):
        cos = stored[got] @ q if got else np.zeros(0, dtype=np.float32)
        # the i-th best exact cosine is matched by a returned one at most 1e-6 below
        found = sum(int((cos >= c - 1e-6).sum() > i) for i, c in enumerate(s))
        servable = s[s >= gate]
        ok = all((cos >= c - 1e-6).sum() > i for i, c in enumerate(servable))
        hits, gate_ok = hits + found, gate_ok + ok
        oks.append(ok)
        if len(servable):
            servable_hits, servable_ok = servable_hits + found, servable_ok + ok
    n_servable = int((sims[:, 0] >= gate).sum())
    out = {
        "recall_at_3": hits / (TOP_K * len(queries)),
        "gate_recall": gate_ok / len(queries),
        # the same over the gets with a servable neighbour only
        "recall_at_3_servable": servable_hits / (TOP_K * n_servable) if n_servable else 1.0,
        "gate_recall_servable": servable_ok / n_servable if n_servable else 1.0,
        "servable": (sims[:, 0] >= gate).tolist(),
    }
    if new_topic is not None:
        ok_a, serv, new = np.array(oks), sims[:, 0] >= gate, np.asarray(new_topic, dtype=bool)
        for name, mask in (("group", serv & ~new), ("chance", serv & new)):
            out[f"gate_recall_{name}"] = float(ok_a[mask].mean()) if mask.any() else 1.0
            out[f"n_{name}"] = int(mask.sum())
    return out


SPLIT_KEYS = ("gate_recall_group", "n_group", "gate_recall_chance", "n_chance")


def _split_stats(ms: list[float], servable: list[bool]) -> dict[str, Any]:
    yes = [m for m, s in zip(ms, servable, strict=True) if s]
    no = [m for m, s in zip(ms, servable, strict=True) if not s]
    return {
        "get": _stats(ms),
        "get_servable": _stats(yes) if yes else None,
        "get_unservable": _stats(no) if no else None,
        "n_servable": len(yes),
        "n_unservable": len(no),
    }


def run_ours(args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    import faiss

    from adapters.verified_cache.store import EntryStore, NewEntry
    from cacheeval.schema import Request

    n = args.size
    stored, gets, misses, puts = make_data(
        args.data, n, args.gets, args.misses, args.puts, args.fill_order
    )
    queries, new_topic = _interleave(gets, misses)
    path = folder / "verified.sqlite"
    options = json.loads(args.index_options) if args.index_options else None
    store = EntryStore(path, index_options=options)
    base = _trimmed_rss()  # libraries loaded, store open and empty
    t0 = time.perf_counter()
    for start in range(0, n, BATCH):
        # the batch is a temporary, as GPTCache's import lists are: a batch still
        # referenced when the memory is read would count the caller's input
        store.add_many([
            NewEntry("", f"synthetic request {i}", Request(f"synthetic request {i}"),
                     f"answer {i}", stored[i])
            for i in range(start, min(n, start + BATCH))
        ])  # fmt: skip
        if start and start % 100_000 == 0:
            _progress(f"ours: {start:,} / {n:,} stored ({time.perf_counter() - t0:.0f} s)")
    build_s = time.perf_counter() - t0
    memory = _trimmed_rss() - base
    faiss.omp_set_num_threads(1)  # single calls: see the module docstring
    floor = gate_threshold() - 1e-4  # what VerifiedCache passes (cache.GATE_SLACK)
    get_ms, returned = [], []
    for i, q in enumerate(queries):
        key = f"new request {i}"
        t = time.perf_counter_ns()
        store.exact("", key)
        got = store.nearest("", q, TOP_K, floor=floor)
        get_ms.append((time.perf_counter_ns() - t) / 1e6)
        returned.append([r.id - 1 for r, _ in got])
    steps = dict(store.search_steps)
    parts = _get_parts(store, queries)
    accuracy = _accuracy(stored, queries, returned, new_topic)
    sweep = (
        _ef_sweep(store, stored, queries, floor, new_topic) if store._indexes[0].approximate else []
    )
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
    stored_as = "8-bit" if index.storage == "sq8" else "float16"
    regime = (
        f"hnsw ({stored_as}) M {index.hnsw_m} efC {index.ef_construction} efS {index.ef_search}"
        if index.approximate
        else "brute force (float32)"
    )
    t0 = time.perf_counter()
    store.close()  # saves the HNSW index beside the file
    close_s = time.perf_counter() - t0
    out: dict[str, Any] = {
        "store": "verified (ours)",
        "data": args.data,
        "n": n,
        "build_s": build_s,
        **_split_stats(get_ms, accuracy["servable"]),
        "put": _stats(put_ms),
        "put_fsync": _stats(fsync_ms),
        "memory_bytes_per_entry": memory / n,
        "disk_bytes_per_entry": _disk(folder) / n,
        "recall_at_3": accuracy["recall_at_3"],
        "gate_recall": accuracy["gate_recall"],
        "recall_at_3_servable": accuracy["recall_at_3_servable"],
        "gate_recall_servable": accuracy["gate_recall_servable"],
        **{
            k: accuracy[k]
            for k in ("gate_recall_group", "n_group", "gate_recall_chance", "n_chance")
        },
        "search_steps": steps,
        "get_parts": parts,
        "ef_sweep": sweep,
        "regime": regime,
        "close_s": close_s,
    }
    if n <= args.reopen_max:
        t0 = time.perf_counter()
        again = EntryStore(path, index_options=options)
        out["reopen_s"] = time.perf_counter() - t0
        assert len(again) == n + len(puts) + len(fsync_ms)
        again.close()
    return out


def _get_parts(store: Any, queries: Any) -> dict[str, Any]:
    """Where a get's time goes: the same gets again, timing the exact tier alone
    and the scope's index search alone (HNSW: ``top_k`` + the re-ranked extra
    candidates at the default efSearch; brute force: ``top_k`` by the matrix
    product and partition)."""
    from adapters.verified_cache.store import RERANK

    index = store._indexes[0]
    k = TOP_K + RERANK if index.approximate else TOP_K  # as EntryStore.nearest asks
    exact_ms, search_ms = [], []
    for i, q in enumerate(queries):
        t = time.perf_counter_ns()
        store.exact("", f"new request {i}")
        exact_ms.append((time.perf_counter_ns() - t) / 1e6)
        t = time.perf_counter_ns()
        index.search(q, k)
        search_ms.append((time.perf_counter_ns() - t) / 1e6)
    return {"exact": _stats(exact_ms), "search": _stats(search_ms), "k": k}


def _ef_sweep(
    store: Any, stored: Any, queries: Any, floor: float, new_topic: Any
) -> list[dict[str, Any]]:
    """The same gets again on the same graph: at the default efSearch without the
    floor, with it (the default scan bound) and with a scan at any size; at wider
    first searches (2x, 4x) without and with the floor: what more recall costs."""
    index = store._indexes[0]
    default, bound = index.ef_search, store.exhaustive_max
    variants = [(default, False, bound), (default, True, bound), (default, True, None)]
    variants += [(ef, gated, bound) for ef in (2 * default, 4 * default) for gated in (False, True)]
    out = []
    for ef, gated, scan_max in variants:
        index.ef_search, store.exhaustive_max = ef, scan_max
        ms, returned = [], []
        for q in queries:
            t = time.perf_counter_ns()
            got = store.nearest("", q, TOP_K, floor=floor if gated else None)
            ms.append((time.perf_counter_ns() - t) / 1e6)
            returned.append([r.id - 1 for r, _ in got])
        acc = _accuracy(stored, queries, returned, new_topic)
        out.append({
            "ef_search": ef, "floor": gated, "exhaustive_max": scan_max,
            **_split_stats(ms, acc["servable"]),
            **{k: v for k, v in acc.items() if k != "servable"},
        })  # fmt: skip
    index.ef_search, store.exhaustive_max = default, bound
    return out


def _scan(bound: int | None) -> str:
    return "any size" if bound is None else f"<= {bound:,}"


def sweep_markdown(results: list[dict[str, Any]]) -> str:
    """What a wider first search, and a scan at any size, buy per (data, size) of
    ours on HNSW."""
    lines = [
        "| data | entries | efSearch | floor (gate-aware) | scan | get p50 | get p95"
        " | servable p50 / p95 | none servable p50 / p95 | recall@3 | recall@3 servable"
        " | gate recall servable | gate recall group / chance |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        for e in r.get("ef_sweep") or []:
            yes, no = e["get_servable"], e["get_unservable"]
            lines.append(
                f"| {r['data']} | {r['n']:,} | {e['ef_search']} | {'yes' if e['floor'] else 'no'}"
                f" | {_scan(e['exhaustive_max']) if e['floor'] else '-'}"
                f" | {e['get']['p50_ms']:.3f} | {e['get']['p95_ms']:.3f}"
                f" | {_p(yes, 'p50_ms')} / {_p(yes, 'p95_ms')} | {_p(no, 'p50_ms')} /"
                f" {_p(no, 'p95_ms')} | {e['recall_at_3']:.4f} | {e['recall_at_3_servable']:.4f}"
                f" | {e['gate_recall_servable']:.4f} | {_split_recall(e)} |"
            )
    return "\n".join(lines)


def run_gptcache(args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    import faiss
    from gptcache.manager import CacheBase, VectorBase, get_data_manager

    n = args.size
    stored, gets, misses, puts = make_data(
        args.data, n, args.gets, args.misses, args.puts, args.fill_order
    )
    queries, new_topic = _interleave(gets, misses)
    dm = get_data_manager(
        CacheBase("sqlite", sql_url=f"sqlite:///{folder / 'gptcache.db'}"),
        VectorBase("faiss", dimension=DIM, index_path=str(folder / "faiss.index")),
        max_size=n + len(puts) + 10,
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
    for q in queries:
        t = time.perf_counter_ns()
        for res in dm.search(q, top_k=TOP_K) or []:
            dm.get_scalar_data(res)
        get_ms.append((time.perf_counter_ns() - t) / 1e6)
    _, sims = true_neighbours(stored, queries, 1)
    servable = (sims[:, 0] >= gate_threshold() - 1e-4).tolist()
    put_ms = []
    for i, v in enumerate(puts):
        t = time.perf_counter_ns()
        dm.save(f"put request {i}", f"put answer {i}", v)
        put_ms.append((time.perf_counter_ns() - t) / 1e6)
    dm.close()  # writes faiss.index
    return {
        "store": "GPTCache (SQLite + faiss)",
        "data": args.data,
        "n": n,
        "build_s": build_s,
        **_split_stats(get_ms, servable),
        "put": _stats(put_ms),
        "put_fsync": _stats(put_ms),  # its SQLite commits with synchronous=FULL already
        "memory_bytes_per_entry": memory / n,
        "disk_bytes_per_entry": _disk(folder) / n,
        "recall_at_3": 1.0,  # IndexFlatL2: exact
        "gate_recall": 1.0,
        "recall_at_3_servable": 1.0,
        "gate_recall_servable": 1.0,
        "gate_recall_group": 1.0,
        "n_group": sum(bool(s and not t) for s, t in zip(servable, new_topic, strict=True)),
        "gate_recall_chance": 1.0,
        "n_chance": sum(bool(s and t) for s, t in zip(servable, new_topic, strict=True)),
        "search_steps": {},
        "regime": "flat (float32)",
    }


def real_texts() -> list[str]:
    """Every distinct request text of cachebench.jsonl (both sides) and of the stress
    rows ``cacheeval stress`` makes from sources/stress/prompts.txt and from the dev
    split's queries (written to a temporary folder)."""
    from cacheeval.support.layout import REPO_ROOT as root

    texts: list[str] = []
    files = [root / "cachebench.jsonl"]
    with tempfile.TemporaryDirectory(prefix="bench_store_real_") as tmp:
        for name, extra in (
            ("prompts", [str(root / "sources" / "stress" / "prompts.txt")]),
            ("dev", [str(root / "cachebench.jsonl"), "--field", "query_a", "--where", "split=dev"]),
        ):
            out = Path(tmp) / f"stress_{name}.jsonl"
            subprocess.run(
                [sys.executable, "-m", "cacheeval", "stress", *extra, "--out", str(out)],
                check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )  # fmt: skip
            files.append(out)
        for f in files:
            for line in f.read_text(encoding="utf-8").splitlines():
                row = json.loads(line)
                texts += [t for t in (row.get("query_a"), row.get("query_b")) if t and t.strip()]
    return list(dict.fromkeys(texts))


def run_real(args: argparse.Namespace) -> dict[str, Any]:
    """Neighbourhood statistics of real request embeddings beside the two generators'
    at the same size, and HNSW recall on the real embeddings themselves (500 of
    them looked up among the rest, the index forced to HNSW from the first entry)."""
    import faiss
    import numpy as np

    from adapters.verified_cache.cache import Resources
    from adapters.verified_cache.model import Verifier
    from adapters.verified_cache.store import EntryStore, NewEntry
    from cacheeval.schema import Request

    texts = real_texts()
    _progress(f"real: embedding {len(texts):,} request texts")
    res = Resources(verifier=Verifier.load())
    vectors = np.asarray(res.encode(texts), dtype=np.float32)
    n = len(vectors)
    stats = {
        "real (MiniLM)": neighbourhood(vectors),
        "calibrated": neighbourhood(calibrated(n, 0, 0, 0)[0]),
        "worst": neighbourhood(worst_case(n, 0, 0, 0)[0]),
    }
    rows = np.random.default_rng(2).permutation(n)
    q_rows, s_rows = rows[:500], np.sort(rows[500:])
    options = json.loads(args.index_options) if args.index_options else None
    store = EntryStore(brute_force_max=0, index_options=options)
    store.add_many([NewEntry("", str(i), Request(str(i)), "", vectors[i]) for i in s_rows])
    faiss.omp_set_num_threads(1)
    floor = gate_threshold() - 1e-4
    index = store._indexes[0]
    graph, gated, get_ms = [], [], []
    for v in vectors[q_rows]:
        graph.append([int(s_rows[i - 1]) for i in index.search(v, TOP_K)[0].tolist()])
        t = time.perf_counter_ns()
        got = store.nearest("", v, TOP_K, floor=floor)
        get_ms.append((time.perf_counter_ns() - t) / 1e6)
        gated.append([int(s_rows[r.id - 1]) for r, _ in got])
    stored = vectors[s_rows]
    remap = {int(r): j for j, r in enumerate(s_rows)}
    plain = _accuracy(stored, vectors[q_rows], [[remap[r] for r in g] for g in graph])
    acc = _accuracy(stored, vectors[q_rows], [[remap[r] for r in g] for g in gated])
    return {
        "texts": n,
        "stats": stats,
        "hnsw": {
            "stored": len(s_rows),
            "queries": len(q_rows),
            "graph_recall_at_3": plain["recall_at_3"],
            "recall_at_3": acc["recall_at_3"],
            "gate_recall": acc["gate_recall"],
            "servable": sum(acc["servable"]),
            "search_steps": dict(store.search_steps),
            "get": _stats(get_ms),
            "regime": f"{index.storage} M {index.hnsw_m} efC {index.ef_construction} "
            f"efS {index.ef_search}",
        },
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
            result = run_ours(args, folder)
        elif args.worker == "gptcache":
            result = run_gptcache(args, folder)
        elif args.worker == "real":
            result = run_real(args)
        else:
            result = {"model": run_model()}
    print(json.dumps(result))
    return 0


def _spawn(kind: str, size: int, data: str, args: argparse.Namespace) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "scripts.bench_verified_store", "--worker", kind,
           "--size", str(size), "--data", data, "--gets", str(args.gets),
           "--misses", str(args.misses), "--puts", str(args.puts),
           "--reopen-max", str(args.reopen_max), "--fill-order", args.fill_order]  # fmt: skip
    if args.index_options:
        cmd += ["--index-options", args.index_options]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{kind} at {size:,}: worker exited {proc.returncode}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def _split_recall(r: dict[str, Any]) -> str:
    """Gate recall of the servable gets that belong to a stored group / of the
    new-topic gets whose neighbour reaches the gate by chance (counts in brackets)."""
    if "n_group" not in r:
        return "-"
    return (
        f"{r['gate_recall_group']:.4f} ({r['n_group']}) / {r['gate_recall_chance']:.4f}"
        f" ({r['n_chance']})"
    )


def _p(stats: dict[str, float] | None, key: str) -> str:
    return f"{stats[key]:.3f}" if stats else "-"


def markdown(results: list[dict[str, Any]], model: dict[str, Any] | None, cpu: str) -> str:
    lines = [
        f"CPU: {cpu}; top_k {TOP_K}; 384-d unit vectors; gate {gate_threshold():.2f};"
        " times in ms per call.",
        "",
        "| data | store | entries | get p50 | get p95 | servable p50 / p95 | none servable"
        " p50 / p95 | put p50 | put p95 | put p50 fsync | recall@3 | recall@3 servable"
        " | gate recall servable | gate recall group / chance | wider / exhaustive"
        " | RAM B/entry | disk B/entry | build s | close s | reopen s | index |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        reopen = f"{r['reopen_s']:.1f}" if "reopen_s" in r else "-"
        close = f"{r['close_s']:.1f}" if "close_s" in r else "-"
        yes, no = r["get_servable"], r["get_unservable"]
        steps = r.get("search_steps") or {}
        total = sum(steps.values())
        escalated = (
            f"{steps.get('wider', 0) / total:.1%} / {steps.get('exhaustive', 0) / total:.1%}"
            if total
            else "-"
        )
        lines.append(
            f"| {r['data']} | {r['store']} | {r['n']:,} | {r['get']['p50_ms']:.3f}"
            f" | {r['get']['p95_ms']:.3f} | {_p(yes, 'p50_ms')} / {_p(yes, 'p95_ms')}"
            f" ({r['n_servable']}) | {_p(no, 'p50_ms')} / {_p(no, 'p95_ms')} ({r['n_unservable']})"
            f" | {r['put']['p50_ms']:.3f} | {r['put']['p95_ms']:.3f}"
            f" | {r['put_fsync']['p50_ms']:.3f} | {r['recall_at_3']:.4f}"
            f" | {r['recall_at_3_servable']:.4f} | {r['gate_recall_servable']:.4f}"
            f" | {_split_recall(r)} | {escalated} | {r['memory_bytes_per_entry']:,.0f}"
            f" | {r['disk_bytes_per_entry']:,.0f}"
            f" | {r['build_s']:.1f} | {close} | {reopen} | {r['regime']} |"
        )
    lines.append("")
    for r in results:
        if "get_parts" in r:
            ex, se = r["get_parts"]["exact"], r["get_parts"]["search"]
            lines.append(
                f"Where a get's time goes ({r['data']}, {r['n']:,}; the same gets again):"
                f" exact tier p50 {ex['p50_ms']:.3f} ms; the index search alone"
                f" ({r['get_parts']['k']} candidates, no floor) p50 {se['p50_ms']:.3f}"
                f" / p95 {se['p95_ms']:.3f} ms;"
                f" the whole get (first pass) p50 {r['get']['p50_ms']:.3f} ms."
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


def real_markdown(real: dict[str, Any]) -> str:
    """The ``--real`` tables: neighbourhood statistics, HNSW on real embeddings."""
    lines = [
        f"Neighbourhood statistics at {real['texts']:,} vectors (medians over 1,000 of them):",
        "",
        "| vectors | 1st nn | 1st nn p10 / p90 | 10th nn | 100th nn | random pair mean / std"
        " | mean vector norm | share with a 1st nn at the gate |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, st in real["stats"].items():
        lines.append(
            f"| {name} | {st['nn1']:.3f} | {st['nn1_p10']:.3f} / {st['nn1_p90']:.3f}"
            f" | {st['nn10']:.3f} | {st['nn100']:.3f} | {st['random_mean']:.3f} /"
            f" {st['random_std']:.3f} | {st['mean_norm']:.3f} | {st['share_nn1_at_gate']:.3f} |"
        )
    h = real["hnsw"]
    lines += [
        "",
        f"HNSW ({h['regime']}) on the real embeddings: {h['queries']} of them looked up among"
        f" the other {h['stored']:,} ({h['servable']} with a servable neighbour): graph alone"
        f" recall@3 {h['graph_recall_at_3']:.4f}; gate-aware store recall@3"
        f" {h['recall_at_3']:.4f}, gate recall {h['gate_recall']:.4f}, steps"
        f" {h['search_steps']}, get p50 {h['get']['p50_ms']:.3f} ms, p95"
        f" {h['get']['p95_ms']:.3f} ms.",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes",
        default=",".join(str(s) for s in DEFAULT_SIZES),
        help="comma-separated store sizes (default 1000,10000,100000,1000000)",
    )
    parser.add_argument("--data", default=",".join(DATASETS),
                        help="synthetic data sets: calibrated, worst (default both)")  # fmt: skip
    parser.add_argument("--gets", type=int, default=500, help="timed gets per size")
    parser.add_argument("--misses", type=int, default=100,
                        help="timed gets with no servable neighbour per size")  # fmt: skip
    parser.add_argument("--puts", type=int, default=300, help="timed puts per size")
    parser.add_argument("--no-gptcache", action="store_true", help="ours only")
    parser.add_argument("--gptcache-data", default=None,
                        help="data sets GPTCache runs on (default: every --data)")  # fmt: skip
    parser.add_argument("--real", action="store_true",
                        help="also: real request embeddings' statistics, HNSW recall")  # fmt: skip
    parser.add_argument("--index-options", default=None,
                        help='HNSW settings as JSON, e.g. {"hnsw_m": 32}')  # fmt: skip
    parser.add_argument("--fill-order", choices=("arrival", "grouped"), default="arrival",
                        help="store the entries in a seeded random (traffic) order, or"
                        " group by group (a sorted bulk import)")  # fmt: skip
    parser.add_argument("--reopen-max", type=int, default=1_000_000,
                        help="time reopening the closed store up to this size")  # fmt: skip
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--worker", choices=("ours", "gptcache", "model", "real"),
                        help=argparse.SUPPRESS)  # fmt: skip
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
    datas = [d.strip() for d in args.data.split(",") if d.strip()]
    g_datas = datas if args.gptcache_data is None else args.gptcache_data.split(",")
    if not datas or any(d not in DATASETS for d in [*datas, *g_datas]):
        print(f"--data/--gptcache-data: choose among {', '.join(DATASETS)}", file=sys.stderr)
        return 2
    from scripts.machine import cpu_model

    _progress("model call")
    model = _spawn("model", 0, "worst", args)["model"]
    real = None
    if args.real:
        _progress("real request embeddings")
        real = _spawn("real", 0, "calibrated", args)
        print(real_markdown(real), flush=True)
    results = []
    for n in sizes:
        for data in datas:
            kinds = ["ours"] + (["gptcache"] if data in g_datas and not args.no_gptcache else [])
            for kind in kinds:
                _progress(f"{kind} at {n:,} entries ({data})")
                t0 = time.perf_counter()
                r = _spawn(kind, n, data, args)
                results.append(r)
                _progress(
                    f"{kind} at {n:,} ({data}): done in {time.perf_counter() - t0:.0f} s; get p50"
                    f" {r['get']['p50_ms']:.3f} ms, p95 {r['get']['p95_ms']:.3f} ms, put p50"
                    f" {r['put']['p50_ms']:.3f} ms, recall@3 {r['recall_at_3']:.4f}, gate recall"
                    f" {r['gate_recall_servable']:.4f} (servable gets),"
                    f" {r['memory_bytes_per_entry']:,.0f} B/entry"
                )
    table = markdown(results, model, cpu_model())
    print(table)
    print()
    print(sweep_markdown(results))
    if args.json:
        args.json.write_text(
            json.dumps({"cpu": cpu_model(), "model": model, "real": real, "results": results},
                       indent=1) + "\n",
            encoding="utf-8",
        )  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
