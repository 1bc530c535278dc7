"""The verified cache's store on real files, processes and threads: the exact map
and the index against the old list-and-sort rule, persistence across a restart
and a ``kill -9``, LRU and TTL eviction leaving the index, and 8 threads at once."""

from __future__ import annotations

import os
import re
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

np = pytest.importorskip("numpy")
pytest.importorskip("faiss")
pytest.importorskip("lightgbm")

from adapters.embedders import COSINE_SNAP  # noqa: E402
from adapters.verified_cache import index as index_module  # noqa: E402
from adapters.verified_cache.cache import Resources, VerifiedCache, exact_key  # noqa: E402
from adapters.verified_cache.index import ScopeIndex  # noqa: E402
from adapters.verified_cache.model import Verifier  # noqa: E402
from adapters.verified_cache.policy import scope_key  # noqa: E402
from adapters.verified_cache.store import EntryStore, NewEntry, Record  # noqa: E402
from cacheeval.schema import Request  # noqa: E402
from tests.adapters.test_verified_cache import (  # noqa: E402
    HashEmbedder as VerifiedCacheTestEmbedder,
)

ROOT = Path(__file__).resolve().parents[2]


class HashEmbedder(VerifiedCacheTestEmbedder):
    """The verified-cache tests' hashed bag of words in 32 dimensions: few
    dimensions, so equal and near-equal cosines are common."""

    name = "hash32"
    dim = 32


@pytest.fixture(scope="module")
def resources() -> Resources:
    return Resources(verifier=Verifier.load(), embedder=HashEmbedder())


WORDS = "capital france spain reset password python list reverse tax tokyo river paris".split()


def queries(n: int, seed: int) -> list[str]:
    rnd = np.random.default_rng(seed)
    return [" ".join(rnd.choice(WORDS, size=int(rnd.integers(2, 6)))) for _ in range(n)]


def unit_vectors(n: int, dim: int, seed: int) -> Any:
    x = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def decisions(cache: VerifiedCache, probes: list[str]) -> list[tuple[Any, ...]]:
    out = []
    for q in probes:
        d = cache.lookup(q)
        out.append((d.hit, d.answer, d.tier, d.score, d.reason, d.cosine, repr(d.features)))
    return out


# --- the same candidates as the list-and-sort store it replaced ----------------------


def old_rule(matrix: Any, vector: Any, k: int) -> tuple[list[int], list[float]]:
    """The replaced store: stack every vector, sort by (-cosine, insertion index);
    cosines within float noise of 1 are 1 (``adapters.embedders.COSINE_SNAP``)."""
    sims = matrix @ vector
    sims = np.where(sims >= np.float32(1 - COSINE_SNAP), np.float32(1.0), sims)
    order = sorted(range(len(matrix)), key=lambda i: (-float(sims[i]), i))[:k]
    return order, [float(sims[i]) for i in order]


def test_brute_force_gives_the_old_candidates_bit_for_bit(resources: Resources) -> None:
    # many repeated queries: duplicates and exact ties of the cosine
    texts = queries(600, seed=1)
    cache = VerifiedCache(resources=resources)
    for i, q in enumerate(texts):
        assert cache.put(q, f"a{i}").stored
    matrix = np.stack([resources.encode([q])[0] for q in texts])
    ties = 0
    for q in queries(200, seed=2):
        v = resources.encode([q])[0]
        want_ids, want_sims = old_rule(matrix, v, cache.top_k)
        got = cache.store.nearest("", v, cache.top_k)
        assert [r.answer for r, _ in got] == [f"a{i}" for i in want_ids]
        assert [s for _, s in got] == want_sims  # the very float32 products
        ties += len(set(want_sims)) < len(want_sims)
        # the exact tier serves the first stored copy, as the scan did
        key = exact_key(Request(q))
        first = next((i for i, t in enumerate(texts) if exact_key(Request(t)) == key), None)
        rec = cache.store.exact("", exact_key(Request(q)))
        assert (rec.answer if rec else None) == (f"a{first}" if first is not None else None)
    assert ties > 0, "the sequence should exercise tied cosines"


def test_hnsw_regime_finds_the_brute_force_neighbours() -> None:
    dim, n = 48, 3000
    centers = unit_vectors(n // 6, dim, seed=3)
    x = centers[np.arange(n) // 6] + 0.05 * unit_vectors(n, dim, seed=4)
    x = (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)
    store = EntryStore(brute_force_max=500)
    for i in range(0, n, 100):
        store.add_many(
            [_new(f"q{j}", x[j]) for j in range(i, min(i + 100, n))]
        )  # fmt: skip
    assert store._indexes[0].approximate
    q = centers[:200] + 0.05 * unit_vectors(200, dim, seed=5)
    q = (q / np.linalg.norm(q, axis=1, keepdims=True)).astype(np.float32)
    found = 0
    for v in q:
        want, want_sims = old_rule(x, v, 3)
        got = store.nearest("", v, 3)
        found += len({r.id - 1 for r, _ in got} & set(want))
        # the cosines returned are the exact float32 ones, not the float16 estimates
        for r, s in got:
            assert s == pytest.approx(float(x[r.id - 1] @ v), abs=1e-6)
    assert found / (3 * len(q)) >= 0.99


def _new(query: str, vector: Any, scope: str = "", answer: str | None = None) -> Any:
    from adapters.verified_cache.store import NewEntry

    return NewEntry(scope, query, Request(query), answer or f"ans {query}", vector)


# --- persistence ---------------------------------------------------------------------


def test_a_restart_serves_identical_decisions(tmp_path: Path, resources: Resources) -> None:
    path = tmp_path / "cache.sqlite"
    texts = queries(300, seed=6)
    probes = texts[:40] + queries(160, seed=7)
    with VerifiedCache(resources=resources, path=path) as cache:
        for i, q in enumerate(texts):
            cache.put(Request(q, system_prompt="app" if i % 3 == 0 else None), f"a{i}")
        cache.put("Set a timer for 5 minutes", "refused?")  # a request the policy refuses
        before = decisions(cache, probes)
        n = len(cache)
    assert sum(d[0] for d in before) > 40, "some lookups should be served"
    with VerifiedCache(resources=resources, path=path) as again:
        assert len(again) == n
        assert decisions(again, probes) == before
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert con.execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_records_round_trip_through_sqlite(tmp_path: Path) -> None:
    from adapters.embedders import WordPieces

    tokens = WordPieces((101, 7, 9), (True, False, True), unit_vectors(3, 8, seed=8))
    req = Request(
        "And Spain?",
        ({"role": "user", "content": "Capital of France?"},),
        "Be brief.",
        ({"name": "lookup", "parameters": {"type": "object"}},),
    )
    v = unit_vectors(1, 8, seed=9)[0]
    store = EntryStore(tmp_path / "s.sqlite")
    store.add(scope_key(req), exact_key(req), req, "Madrid", v, tokens)
    store.close()
    rec = next(EntryStore(tmp_path / "s.sqlite").records())
    assert (rec.request, rec.answer, rec.scope) == (req, "Madrid", "Be brief.")
    assert np.array_equal(rec.vector, v)
    assert rec.tokens is not None and rec.tokens.ids == tokens.ids
    assert rec.tokens.wordlike == tokens.wordlike
    assert np.array_equal(rec.tokens.vectors, tokens.vectors)


def test_a_path_that_is_not_a_store_is_named_and_left_untouched(tmp_path: Path) -> None:
    # VerifiedCache(path=...) on a directory or a text file said only "unable to
    # open database file" / "file is not a database"; on another program's
    # SQLite file it added its own tables (and switched the file to WAL)
    text = tmp_path / "prompts.csv"
    text.write_text("id,question\n1,hi\n")
    for path, error in ((tmp_path, sqlite3.OperationalError), (text, sqlite3.DatabaseError)):
        with pytest.raises(error, match=f"^{re.escape(str(path))}: .*give a new path or a store"):
            EntryStore(path)
    assert text.read_text() == "id,question\n1,hi\n"
    foreign = tmp_path / "other.db"
    con = sqlite3.connect(foreign)
    con.execute("CREATE TABLE answers (q TEXT, a TEXT)")
    con.commit()
    con.close()
    before = foreign.read_bytes()
    with pytest.raises(
        ValueError, match=r"other.db: a SQLite database of something else \(tables: answers\)"
    ):
        EntryStore(foreign)
    assert foreign.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.db", "prompts.csv"]
    EntryStore(tmp_path / "new.sqlite").close()  # a new path, and reopening our own, still work
    EntryStore(tmp_path / "new.sqlite").close()


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"max_entries": "many"}, TypeError, "max_entries must be an int or None, got 'many'"),
        ({"max_entries": 1.5}, TypeError, "max_entries must be an int or None, got 1.5"),
        ({"max_entries": 0}, ValueError, "max_entries must be >= 1, got 0"),
        ({"ttl_seconds": "1d"}, TypeError, "ttl_seconds must be a number or None, got '1d'"),
        ({"ttl_seconds": float("nan")}, ValueError, "ttl_seconds must be > 0, got nan"),
    ],
)
def test_store_options_of_the_wrong_type_say_so(
    options: dict[str, Any], error: type[Exception], message: str
) -> None:
    # max_entries="many" was "'<' not supported between instances of 'str' and 'int'"
    with pytest.raises(error, match=f"^{re.escape(message)}$"):
        EntryStore(**options)
    EntryStore(max_entries=np.int64(5), ttl_seconds=np.float32(2.5)).close()  # numpy's numbers pass


def test_another_embedder_cannot_reopen_the_store(tmp_path: Path, resources: Resources) -> None:
    path = tmp_path / "c.sqlite"
    with VerifiedCache(resources=resources, path=path) as cache:
        cache.put("What is the capital of France?", "Paris")

    class Other(HashEmbedder):
        name = "other"

    other = Resources(verifier=resources.verifier, embedder=Other())
    with (
        VerifiedCache(resources=other, path=path) as cache,
        pytest.raises(ValueError, match="embedder"),
    ):
        cache.lookup("What is the capital of Spain?")


PUT_LOOP = textwrap.dedent(
    """
    import sys, numpy as np
    from adapters.verified_cache.store import EntryStore
    from cacheeval.schema import Request
    store = EntryStore(sys.argv[1], brute_force_max=200)
    rng = np.random.default_rng(0)
    i = 0
    while True:
        v = rng.standard_normal(16).astype(np.float32)
        store.add("", f"q{i}", Request(f"q{i}"), f"a{i}" * 50, v / np.linalg.norm(v))
        i += 1
    """
)


def test_kill_9_mid_put_loses_at_most_that_entry(tmp_path: Path) -> None:
    path = tmp_path / "crash.sqlite"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", PUT_LOOP, str(path)], env=env, cwd=ROOT)
    try:
        deadline = time.monotonic() + 60
        n = 0
        while n < 400 and time.monotonic() < deadline:
            time.sleep(0.05)
            try:
                con = sqlite3.connect(path, timeout=5)
                n = con.execute("SELECT COUNT(*) FROM entries").fetchone()[0]
                con.close()
            except sqlite3.OperationalError:
                pass
        assert n >= 400, "the put loop did not get going"
        os.kill(proc.pid, signal.SIGKILL)  # mid-put: the loop does nothing else
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL
    store = EntryStore(path, brute_force_max=200)
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    ids = [r[0] for r in con.execute("SELECT id FROM entries ORDER BY id")]
    assert ids == list(range(1, len(ids) + 1)) and len(ids) >= n  # a prefix, nothing torn
    rng = np.random.default_rng(0)
    for rec in store.records():
        v = rng.standard_normal(16).astype(np.float32)
        i = rec.id - 1
        assert (rec.exact_key, rec.answer) == (f"q{i}", f"a{i}" * 50)
        assert np.array_equal(rec.vector, v / np.linalg.norm(v))
        assert store.exact("", f"q{i}") == rec
        assert store.nearest("", rec.vector, 1)[0][0].id == rec.id
    # and the store takes new entries after the crash
    store.add("", "after", Request("after"), "x", unit_vectors(1, 16, seed=1)[0])
    assert len(store) == len(ids) + 1


# --- capacity and freshness -------------------------------------------------------------


def test_lru_eviction_keeps_the_recently_served(tmp_path: Path) -> None:
    path = tmp_path / "lru.sqlite"
    v = unit_vectors(5, 8, seed=10)
    store = EntryStore(path, max_entries=3)
    a, b, c = (store.add("", k, Request(k), k.upper(), v[i]) for i, k in enumerate("abc"))
    store.touch(a.id)  # served: a is now the most recent
    store.add("", "d", Request("d"), "D", v[3])
    assert len(store) == 3
    assert store.exact("", "b") is None and store.exact("", "a") is not None
    assert b.id not in {r.id for r, _ in store.nearest("", v[1], 5)}
    store.close()
    again = EntryStore(path, max_entries=3)  # the served-time of a was written with d
    assert sorted(r.exact_key for r in again.records()) == ["a", "c", "d"]
    again.add("", "e", Request("e"), "E", v[4])
    assert sorted(r.exact_key for r in again.records()) == ["a", "d", "e"]
    assert c.id not in {r.id for r, _ in again.nearest("", v[2], 5)}


def test_eviction_leaves_the_hnsw_index(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(index_module, "MIN_TOMBSTONES_FOR_REBUILD", 50)
    x = unit_vectors(1000, 16, seed=11)
    store = EntryStore(max_entries=300, brute_force_max=100)
    for i in range(1000):
        store.add("", f"q{i}", Request(f"q{i}"), f"a{i}", x[i])
    index = store._indexes[0]
    assert index.approximate and len(index) == 300 == len(store)
    assert store.wait_for_rebuilds(60)
    assert index.tombstones <= 300  # rebuilt when the tombstones outnumbered the live
    assert sorted(index.ids().tolist()) == list(range(701, 1001))
    for i in range(0, 1000, 7):
        got = {r.id for r, _ in store.nearest("", x[i], 10)}
        assert got and min(got) >= 701, "an evicted entry came back"
        assert (store.exact("", f"q{i}") is not None) == (i >= 700)


def test_ttl_with_an_injected_clock(tmp_path: Path, resources: Resources) -> None:
    now = [1000.0]
    cache = VerifiedCache(
        resources=resources, path=tmp_path / "ttl.sqlite", ttl_seconds=60, clock=lambda: now[0]
    )
    cache.put("capital france", "Paris")
    now[0] += 30
    cache.put("reset password", "Settings")
    now[0] += 40  # the first is 70 s old, the second 40 s
    assert cache.get("capital france") is None
    assert cache.lookup("capital france").tier != "exact"
    assert cache.get("reset password") == "Settings"
    assert len(cache) == 2  # not yet purged...
    cache.put("tax deadline", "April")
    assert len(cache) == 2  # ...the next put deletes it
    assert cache.store.purge_expired() == 0
    now[0] += 1000
    assert cache.store.purge_expired() == 2 and len(cache) == 0
    con = sqlite3.connect(tmp_path / "ttl.sqlite")
    assert con.execute("SELECT COUNT(*) FROM entries").fetchone()[0] == 0


# --- threads -------------------------------------------------------------------------


def test_eight_threads_lose_and_duplicate_nothing(tmp_path: Path, resources: Resources) -> None:
    cache = VerifiedCache(resources=resources, path=tmp_path / "threads.sqlite")
    cache.store.brute_force_max = 64  # cross into HNSW while the threads run
    n_writers, per_writer = 4, 120
    errors: list[BaseException] = []
    served: list[int] = []
    start = threading.Barrier(8)

    def writer(w: int) -> None:
        start.wait()
        for i in range(per_writer):
            q = f"writer {w} item {i} " + " ".join(queries(1, seed=w * 1000 + i))
            assert cache.put(q, f"w{w}-{i}").stored

    def reader(r: int) -> None:
        start.wait()
        for q in queries(150, seed=100 + r):
            d = cache.lookup(q)
            served.append(int(d.hit))

    def run(fn: Any, arg: int) -> None:
        try:
            fn(arg)
        except BaseException as e:  # surfaced below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(writer, w)) for w in range(n_writers)]
    threads += [threading.Thread(target=run, args=(reader, r)) for r in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors, errors
    assert len(served) == 4 * 150
    total = n_writers * per_writer
    assert len(cache) == total
    records = list(cache.store.records())
    answers = [r.answer for r in records]
    assert len(set(answers)) == len(answers) == total
    assert sorted(r.id for r in records) == list(range(1, total + 1))
    for w in range(n_writers):  # every entry is found again by its own request
        for i in range(0, per_writer, 10):
            q = f"writer {w} item {i} " + " ".join(queries(1, seed=w * 1000 + i))
            assert cache.get(q) == f"w{w}-{i}"
    cache.close()
    con = sqlite3.connect(tmp_path / "threads.sqlite")
    assert con.execute("SELECT COUNT(*), COUNT(DISTINCT answer) FROM entries").fetchone() == (
        total,
        total,
    )


def test_a_vector_that_is_not_unit_length_is_refused_and_nothing_is_stored(
    tmp_path: Path,
) -> None:
    store = EntryStore(tmp_path / "s.sqlite")
    good, other = unit_vectors(2, 8, seed=3)
    store.add("", "k1", Request("a"), "A", good)
    with pytest.raises(ValueError, match="norm 2.0000"):
        store.add_many(
            [
                NewEntry("", "k2", Request("b"), "B", other),
                NewEntry("", "k3", Request("c"), "C", 2 * other),
            ]
        )
    store.close()
    assert [r.answer for r in EntryStore(tmp_path / "s.sqlite").records()] == ["A"]


def test_scope_index_rejects_wrong_shapes() -> None:
    ix = ScopeIndex(4)
    with pytest.raises(ValueError, match="shape"):
        ix.add(np.array([1]), np.zeros((1, 3), dtype=np.float32))
    assert ix.search(np.zeros(4, dtype=np.float32), 3)[0].tolist() == []


def test_record_is_frozen() -> None:
    rec = Record(1, "", "k", Request("k"), "a", np.zeros(2, dtype=np.float32), None, 0.0)
    with pytest.raises(AttributeError):
        rec.answer = "b"  # type: ignore[misc]


# --- the HNSW index saved beside the file ----------------------------------------------


def _fill(store: EntryStore, x: Any, start: int, stop: int) -> None:
    for i in range(start, stop):
        store.add("", f"q{i}", Request(f"q{i}"), f"a{i}", x[i])


def _neighbours(store: EntryStore, x: Any) -> list[list[tuple[int, float]]]:
    return [[(r.id, s) for r, s in store.nearest("", v, 5)] for v in x[::9]]


def test_a_saved_index_is_read_not_rebuilt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "saved.sqlite"
    x = unit_vectors(600, 16, seed=12)
    store = EntryStore(path, brute_force_max=100)
    _fill(store, x, 0, 500)
    before = _neighbours(store, x)
    store.close()
    assert (tmp_path / "saved.sqlite.index" / "manifest.json").is_file()
    builds: list[int] = []
    real = ScopeIndex._build_from
    monkeypatch.setattr(
        ScopeIndex,
        "_build_from",
        lambda self, ids, v: builds.append(len(ids)) or real(self, ids, v),
    )
    again = EntryStore(path, brute_force_max=100)
    assert builds == [] and again._indexes[0].approximate
    assert _neighbours(again, x) == before


def test_a_stale_saved_index_catches_up_with_sqlite(tmp_path: Path) -> None:
    path = tmp_path / "stale.sqlite"
    x = unit_vectors(900, 16, seed=13)
    store = EntryStore(path, brute_force_max=100, max_entries=600)
    _fill(store, x, 0, 400)
    store.save_index()
    _fill(store, x, 400, 900)  # 300 evicted, 500 added after the save; then a crash: no close
    expect = sorted(r.id for r in store.records())
    want = _neighbours(store, x)
    del store
    again = EntryStore(path, brute_force_max=100, max_entries=600)
    assert sorted(r.id for r in again.records()) == expect and len(again) == 600
    assert sorted(again._indexes[0].ids().tolist()) == expect  # evicted ones tombstoned
    got = _neighbours(again, x)
    same = sum(a == b for a, b in zip(got, want, strict=True))
    assert same >= 0.95 * len(want)  # HNSW built in another order: near-identical
    assert all(i in expect for row in got for i, _ in row)


def test_an_index_saved_beside_another_database_is_ignored(tmp_path: Path) -> None:
    x = unit_vectors(300, 16, seed=14)
    first = EntryStore(tmp_path / "a.sqlite", brute_force_max=50)
    _fill(first, x, 0, 300)
    first.close()
    second = EntryStore(tmp_path / "b.sqlite", brute_force_max=50)
    _fill(second, x[::-1].copy(), 0, 200)
    second.close()
    # swap the saved indexes: each database must notice it is not its own
    (tmp_path / "a.sqlite.index").rename(tmp_path / "tmp.index")
    (tmp_path / "b.sqlite.index").rename(tmp_path / "a.sqlite.index")
    again = EntryStore(tmp_path / "a.sqlite", brute_force_max=50)
    assert len(again._indexes[0]) == 300
    assert again.nearest("", x[7], 1)[0][0].exact_key == "q7"


def test_index_options_reach_every_scope_index(tmp_path: Path) -> None:
    opts = {"hnsw_m": 8, "ef_construction": 20, "ef_search": 16}
    x = unit_vectors(200, 16, seed=15)
    store = EntryStore(tmp_path / "o.sqlite", brute_force_max=50, index_options=opts)
    _fill(store, x, 0, 200)
    ix = store._indexes[0]
    assert (ix.hnsw_m, ix.ef_construction, ix.ef_search) == (8, 20, 16)
    assert ix._hnsw.hnsw.efSearch == 16
    store.close()
    again = EntryStore(tmp_path / "o.sqlite", brute_force_max=50, index_options=opts)
    assert again._indexes[0].ef_search == 16 and again._indexes[0]._hnsw.hnsw.efSearch == 16


# --- gate-aware search ------------------------------------------------------------------


def test_a_brute_force_scope_ignores_the_floor(resources: Resources) -> None:
    cache = VerifiedCache(resources=resources)
    for i, q in enumerate(queries(300, seed=21)):
        cache.put(q, f"a{i}")
    for q in queries(50, seed=22):
        v = resources.encode([q])[0]
        plain = [(r.id, s) for r, s in cache.store.nearest("", v, 3)]
        assert [(r.id, s) for r, s in cache.store.nearest("", v, 3, floor=0.99)] == plain
    assert not cache.store.search_steps  # no graph, no escalation


class ClusterEmbedder:
    """Texts "... topic N ..." embedded near the N-th of 400 random directions in 256
    dimensions (a little noise from the text's digest); other texts by digest
    alone. Well-separated paraphrase clusters: a graph search either reaches a
    query's cluster or finds nothing near it."""

    name = "cluster256"
    dim = 256  # unrelated texts stay far below the gate (cosine sd 0.06)
    version = "test"
    centres = unit_vectors(400, 256, seed=30)

    def encode(self, texts: list[str]) -> Any:
        import hashlib
        import re

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
            noise = np.random.default_rng(seed).standard_normal(self.dim).astype(np.float32)
            m = re.search(r"topic (\d+)", text)
            v = self.centres[int(m.group(1)) % 400] + 0.04 * noise if m else noise
            out[i] = v / np.linalg.norm(v)
        return out


def _cluster_caches(options: dict[str, int]) -> tuple[Resources, VerifiedCache, VerifiedCache]:
    """The same 2,000 requests in 300 clusters in a brute-force cache and in one
    forced to HNSW from the first entry with ``options``."""
    res = Resources(verifier=Verifier.load(), embedder=ClusterEmbedder())
    texts = [f"{WORDS[i % 12]} about topic {i % 300} {WORDS[i % 7]} {i}" for i in range(2000)]
    exact = VerifiedCache(resources=res)
    graph = VerifiedCache(resources=res, index_options=options)
    graph.store.brute_force_max = 0
    for i, q in enumerate(texts):
        exact.put(q, f"a{i}")
        graph.put(q, f"a{i}")
    assert graph.store._indexes[0].approximate and not exact.store._indexes[0].approximate
    return res, exact, graph


#: 300 probes near a stored cluster, 60 near none (topics 300-399 were never stored)
PROBES = [f"{WORDS[i % 5]} on topic {(i * 7) % 300} {WORDS[i % 11]}" for i in range(300)] + [
    f"{WORDS[i % 5]} on topic {300 + i % 100} {WORDS[i % 3]}" for i in range(60)
]


def test_gate_aware_search_decides_as_brute_force_where_something_is_servable() -> None:
    # a sparse graph searched narrowly (M 8, efConstruction 40, efSearch 2)
    res, exact, graph = _cluster_caches({"hnsw_m": 8, "ef_construction": 40, "ef_search": 2})
    gate = exact._gate_threshold()
    servable = 0
    for q in PROBES:
        v = res.encode([q])[0]
        want = exact.store.nearest("", v, 3)
        got = graph.store.nearest("", v, 3, floor=gate - 1e-4)
        if want[0][1] >= gate:
            servable += 1
            assert [r.id for r, _ in got] == [r.id for r, _ in want], q
            assert [s for _, s in got] == pytest.approx([s for _, s in want], abs=1e-6)
            assert decisions(graph, [q]) == decisions(exact, [q]), q
        else:  # nothing servable: the exhaustive step confirmed it, both miss
            assert got[0][1] < gate
            assert not graph.lookup(q).hit and not exact.lookup(q).hit
    steps = graph.store.search_steps
    assert servable == 300 and steps["exhaustive"] >= 2 * 60, steps  # nearest + lookup


def test_a_graph_that_misses_the_cluster_escalates(monkeypatch: pytest.MonkeyPatch) -> None:
    # the worst case of a graph index: its search ends in a region far from the
    # query. Made certain here by answering the narrow search with the query's
    # antipode's neighbours; the wider and exhaustive steps are faiss's own
    res, exact, graph = _cluster_caches({})
    probes = PROBES[:100]
    want = [[r.id for r, _ in exact.store.nearest("", res.encode([q])[0], 3)] for q in probes]
    want_decisions = decisions(exact, probes)
    index = graph.store._indexes[0]
    real = ScopeIndex.search_bounded

    def lost(
        self: ScopeIndex, vector: Any, k: int, *, ef: int | None = None, exhaustive: bool = False
    ) -> Any:
        narrow = ef is None and not exhaustive and self is index
        return real(self, -vector if narrow else vector, k, ef=ef, exhaustive=exhaustive)

    monkeypatch.setattr(ScopeIndex, "search_bounded", lost)
    gate = exact._gate_threshold()
    for q, ids in zip(probes, want, strict=True):
        v = res.encode([q])[0]
        assert [r.id for r, _ in graph.store.nearest("", v, 3, floor=gate - 1e-4)] == ids
        # without the floor, the lost search is believed
        assert graph.store.nearest("", v, 3)[0][0].id != ids[0]
    assert decisions(graph, probes) == want_decisions
    assert graph.store.search_steps["wider"] >= 100
    assert index.approximate


def test_exhaustive_max_bounds_what_a_miss_scans(monkeypatch: pytest.MonkeyPatch) -> None:
    # a probe far from every entry: the graph and the wider search find nothing
    # above the floor; the scan runs only in a scope within exhaustive_max
    res, _, graph = _cluster_caches({})
    index = graph.store._indexes[0]
    far = -res.encode([PROBES[0]])[0]
    scanned = []
    real = ScopeIndex.search_bounded

    def counting(
        self: ScopeIndex, vector: Any, k: int, *, ef: int | None = None, exhaustive: bool = False
    ) -> Any:
        if exhaustive:
            scanned.append(len(self))
        return real(self, vector, k, ef=ef, exhaustive=exhaustive)

    monkeypatch.setattr(ScopeIndex, "search_bounded", counting)
    graph.store.nearest("", far, 3, floor=0.99)
    assert scanned == [len(index)]
    graph.store.exhaustive_max = len(index) - 1
    before = dict(graph.store.search_steps)
    graph.store.nearest("", far, 3, floor=0.99)
    assert scanned == [len(index)]  # no second scan
    assert graph.store.search_steps["wider"] == before.get("wider", 0) + 1


# --- background rebuilds ------------------------------------------------------------------


def test_lookups_and_puts_proceed_during_a_background_rebuild(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(index_module, "MIN_TOMBSTONES_FOR_REBUILD", 50)
    x = unit_vectors(3000, 16, seed=25)
    store = EntryStore(tmp_path / "rebuild.sqlite", max_entries=400, brute_force_max=100)
    held, release = threading.Event(), threading.Event()

    def hook(phase: str, number: int) -> None:
        if phase == "built" and not held.is_set():  # hold the first rebuild, built
            held.set()
            assert release.wait(120)

    store._rebuild_hook = hook
    _fill(store, x, 0, 1000)  # 600 evicted: a rebuild starts and is held
    assert held.wait(60)
    index = store._indexes[0]
    assert index.rebuilding is not None
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def writer(w: int) -> None:  # 4 x 250 puts, each evicting one entry
        start.wait()
        for i in range(1000 + w * 250, 1000 + (w + 1) * 250):
            store.add("", f"q{i}", Request(f"q{i}"), f"a{i}", x[i])

    def reader(r: int) -> None:
        start.wait()
        for i in range(r, 3000, 20):
            got = store.nearest("", x[i], 3)
            assert got and len({rec.id for rec, _ in got}) == len(got)
            rec = store.exact("", f"q{i}")
            assert rec is None or rec.answer == f"a{i}"

    def run(fn: Any, arg: int) -> None:
        try:
            fn(arg)
        except BaseException as e:  # surfaced below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(writer, w)) for w in range(4)]
    threads += [threading.Thread(target=run, args=(reader, r)) for r in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    # every put and lookup finished while the rebuild was still held
    assert not errors, errors
    assert not any(t.is_alive() for t in threads)
    assert index.rebuilding is not None and not release.is_set()
    release.set()
    assert store.wait_for_rebuilds(120)
    live = sorted(r.id for r in store.records())
    assert len(live) == len(store) == 400
    assert sorted(index.ids().tolist()) == live  # nothing lost, nothing duplicated
    assert index.tombstones <= max(len(index), 49)
    keys = {r.exact_key for r in store.records()}
    for rec in store.records():  # every live entry is its own nearest neighbour
        got = store.nearest("", x[int(rec.exact_key[1:])], 1)
        assert got[0][0].id == rec.id
    for i in range(0, 2000, 13):  # and the evicted ones are gone
        if f"q{i}" not in keys:
            assert store.exact("", f"q{i}") is None
    store.close()
    again = EntryStore(tmp_path / "rebuild.sqlite", max_entries=400, brute_force_max=100)
    assert sorted(again._indexes[0].ids().tolist()) == live
    again.close()


def test_closing_cancels_a_rebuild_under_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(index_module, "MIN_TOMBSTONES_FOR_REBUILD", 50)
    x = unit_vectors(800, 16, seed=26)
    store = EntryStore(tmp_path / "cancel.sqlite", max_entries=200, brute_force_max=100)
    held = threading.Event()

    def hold_until_cancelled(phase: str, number: int) -> None:
        # the rebuild stays at its snapshot until it is cancelled (30 s at most)
        job = store._rebuilds[number][0]
        held.set()
        deadline = time.monotonic() + 30
        while not job.cancelled and time.monotonic() < deadline:
            time.sleep(0.01)

    store._rebuild_hook = hold_until_cancelled
    _fill(store, x, 0, 800)
    assert held.wait(30), "a rebuild should be under way"
    job = next(iter(store._rebuilds.values()))[0]
    started = time.monotonic()
    store.close()  # cancels and joins whatever rebuild runs: no thread left behind
    assert job.cancelled
    assert time.monotonic() - started < 10  # cancelled, not waited out
    assert not store._rebuilds
    again = EntryStore(tmp_path / "cancel.sqlite", max_entries=200, brute_force_max=100)
    assert again.wait_for_rebuilds(60)
    assert sorted(again._indexes[0].ids().tolist()) == sorted(r.id for r in again.records())
    assert len(again) == 200


def test_a_rebuild_in_the_foreground_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(index_module, "MIN_TOMBSTONES_FOR_REBUILD", 50)
    x = unit_vectors(700, 16, seed=27)
    store = EntryStore(max_entries=200, brute_force_max=100, background_rebuild=False)
    _fill(store, x, 0, 700)
    index = store._indexes[0]
    assert not store._rebuilds and index.rebuilding is None
    assert index.tombstones <= max(len(index), 49)  # rebuilt inside the puts
    assert sorted(index.ids().tolist()) == list(range(501, 701))


def test_the_exhaustive_step_skips_tombstones_and_matches_brute_force() -> None:
    x = unit_vectors(600, 16, seed=28)
    ix = ScopeIndex(16, brute_force_max=0, storage="fp16")
    ix.add(np.arange(1, 601), x)
    for entry_id in range(1, 601, 3):
        assert ix.remove(entry_id)
    live = np.array([i for i in range(1, 601) if (i - 1) % 3])
    for v in x[::17]:
        ids, sims, _ = ix.search_bounded(v, 5, exhaustive=True)
        exact = x[live - 1] @ v
        want = live[np.argsort(-exact, kind="stable")[:5]]
        assert ids.tolist() == want.tolist()  # float16 cosines, far apart here
        assert not set(ids.tolist()) & set(range(1, 601, 3))
        assert sims == pytest.approx(np.sort(exact)[::-1][:5], abs=2e-3)


def test_an_expired_candidate_does_not_stop_the_widening(monkeypatch: pytest.MonkeyPatch) -> None:
    # the graph's first search returns only an expired entry above the floor; a live
    # servable entry exists: the lookup must go on to the wider search and find it
    now = [1000.0]
    dim = 16
    x = unit_vectors(600, dim, seed=41)
    store = EntryStore(brute_force_max=100, ttl_seconds=50, clock=lambda: now[0])
    store.add_many([_new("old", x[0])])
    now[0] += 100  # "old" is now expired
    near = (x[0] + 0.02 * x[1]) / np.linalg.norm(x[0] + 0.02 * x[1])
    store.add_many([_new("live", near)] + [_new(f"q{i}", x[i]) for i in range(2, 600)])
    assert store._indexes[0].approximate
    real = ScopeIndex.search_bounded

    def narrow_sees_only_the_expired(
        self: ScopeIndex, vector: Any, k: int, *, ef: Any = None, exhaustive: bool = False
    ) -> Any:
        ids, sims, errors = real(self, vector, k, ef=ef, exhaustive=exhaustive)
        if ef is None and not exhaustive:  # the first, narrow search: only entry 1 ("old")
            keep = ids == 1
            return ids[keep], sims[keep], errors[keep]
        return ids, sims, errors

    monkeypatch.setattr(ScopeIndex, "search_bounded", narrow_sees_only_the_expired)
    got = store.nearest("", x[0], 3, floor=0.9)
    assert got and got[0][0].request.query == "live"
    assert store.search_steps["wider"] == 1
    assert all(r.request.query != "old" for r, _ in got)


def test_a_failing_background_rebuild_is_recorded_and_not_retried(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from adapters.verified_cache.index import Rebuild

    calls = []

    def broken(self: Rebuild) -> None:
        calls.append(1)
        raise RuntimeError("no memory for the new graph")

    monkeypatch.setattr(Rebuild, "build", broken)
    x = unit_vectors(3000, 16, seed=42)
    store = EntryStore(max_entries=1200, brute_force_max=100)
    for i in range(0, 3000, 100):  # evictions make rebuilds due again and again
        store.add_many([_new(f"q{j}", x[j]) for j in range(i, i + 100)])
        assert store.wait_for_rebuilds(timeout=10)
    assert calls == [1]  # tried once, never again in this store
    assert isinstance(store.rebuild_errors[0], RuntimeError)
    assert "rebuilding scope 0 failed" in capsys.readouterr().err
    # the old graph, with its tombstones, still serves the live entries
    got = store.nearest("", x[2999], 1)
    assert got[0][0].request.query == "q2999"


def test_a_miss_scans_only_scopes_up_to_the_default_bound() -> None:
    from adapters.verified_cache.store import EXHAUSTIVE_MAX

    assert EntryStore().exhaustive_max == EXHAUSTIVE_MAX
    assert VerifiedCache(resources=Resources(embedder=HashEmbedder())).store.exhaustive_max == (
        EXHAUSTIVE_MAX
    )
    assert EntryStore(exhaustive_max=None).exhaustive_max is None  # any size, when asked


def _unit_vector(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(8).astype(np.float32)
    return v / np.linalg.norm(v)


def test_ids_are_never_reused_across_reopens(tmp_path: Path) -> None:
    """A plain put writes no 'next_id' (the largest stored id says it); a
    transaction that deletes, and clear(), do: after the newest entries are gone
    and the store is reopened, a new entry still gets a fresh id."""
    path = tmp_path / "ids.sqlite"
    store = EntryStore(path)
    for i in range(3):
        store.add("", f"q{i}", Request(f"q{i}"), "a", _unit_vector(i))
    with sqlite3.connect(path) as con:  # plain puts: nothing written there yet
        assert con.execute("SELECT value FROM meta WHERE key = 'next_id'").fetchone() is None
    store.close()
    store = EntryStore(path)
    assert store.add("", "q3", Request("q3"), "a", _unit_vector(3)).id == 4
    store.clear()  # deletes ids 1-4, the newest too
    store.close()
    store = EntryStore(path)
    assert len(store) == 0
    assert store.add("", "q4", Request("q4"), "a", _unit_vector(4)).id == 5
    store.close()
