"""8-bit ranges that traffic has left behind (adapters/verified_cache/index.py,
``DRIFT_FACTOR``): entries whose coordinates were clamped are counted, and once
enough of a scope has drifted a rebuild trains new ranges on the entries' own
float32 vectors and measures every error again. Real faiss graphs, real files,
the store's own background thread."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("faiss")

from adapters.verified_cache.index import (  # noqa: E402
    DRIFT_FACTOR,
    RETRAIN_MIN,
    ScopeIndex,
    drift_limit,
    encoding_errors,
)
from adapters.verified_cache.store import EntryStore, NewEntry  # noqa: E402
from cacheeval.schema import Request  # noqa: E402

DIM = 32


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def _first_traffic(n: int, seed: int) -> np.ndarray:
    """Unit vectors around 40 centres: what the ranges are trained on."""
    rng = np.random.default_rng(seed)
    middle = rng.standard_normal((40, DIM))
    return _unit(middle[np.arange(n) % 40] + 0.05 * rng.standard_normal((n, DIM)))


def _moved_traffic(n: int, seed: int) -> np.ndarray:
    """Later traffic that leans on 4 dimensions: nearly all of it out of the first
    ranges (~99.7% measured)."""
    rng = np.random.default_rng(seed)
    return _unit(rng.standard_normal((n, DIM)) * np.where(np.arange(DIM) < 4, 20.0, 1.0))


def _sq8(x: np.ndarray, **options: bool) -> ScopeIndex:
    ix = ScopeIndex(DIM, brute_force_max=0, storage="sq8", **options)
    ix.add(np.arange(1, len(x) + 1), x)
    assert ix.storage == "sq8"
    return ix


def _live_errors_match(ix: ScopeIndex, vectors: dict[int, np.ndarray]) -> bool:
    """Whether every live slot's error is the one measured afresh under the
    graph's ranges from the entry's own vector."""
    slots = np.flatnonzero(ix._alive[: ix._n])
    ids = ix._ids[slots].tolist()
    fresh = encoding_errors(ix._hnsw, np.stack([vectors[i] for i in ids]))
    return bool(np.array_equal(ix._errors[slots], fresh))


def test_only_clamped_entries_count_as_drifted() -> None:
    first = _first_traffic(300, seed=1)
    ix = _sq8(first)
    limit = drift_limit(ix._hnsw)
    # a vector inside the ranges moves by at most half a step per coordinate
    within = ix._errors[:300]
    assert within.max() <= limit / DRIFT_FACTOR * (1 + 1e-5)
    assert ix.drifted == 0 and not ix.retrain_due
    ix.add(np.arange(301, 401), _moved_traffic(100, seed=2))
    moved = ix._errors[300:400]
    assert ix.drifted == int(np.count_nonzero(moved > limit)) >= 95
    ix.remove(301 + int(np.argmax(moved)))  # a removed entry no longer counts
    assert ix.drifted == int(np.count_nonzero(moved > limit)) - 1


def test_drifted_traffic_calls_for_new_ranges_and_a_retrain_measures_again() -> None:
    first, moved = _first_traffic(300, seed=3), _moved_traffic(RETRAIN_MIN + 200, seed=4)
    ix = _sq8(first)
    ix.add(np.arange(301, 301 + len(moved)), moved)
    assert ix.drifted >= RETRAIN_MIN and ix.retrain_due
    kept = _sq8(first, retrain_on_drift=False)  # the option that keeps the first ranges
    kept.add(np.arange(301, 301 + len(moved)), moved)
    assert kept.drifted == ix.drifted and not kept.retrain_due
    every = np.concatenate([first, moved])
    vectors = {i + 1: every[i] for i in range(len(every))}
    old_limit, old_errors = ix._drift_limit, ix._errors[: len(every)].copy()

    ix.rebuild_now()  # the old ranges: the same codes, still drifted
    assert ix.retrain_due and np.array_equal(ix._errors[: len(every)], old_errors)

    ix.rebuild_now(lambda ids: {i: vectors[i] for i in ids})
    assert ix.drifted == 0 and not ix.retrain_due
    assert ix._drift_limit > old_limit  # ranges wide enough for both kinds of traffic
    assert ix._errors[: len(every)].max() <= ix._drift_limit / DRIFT_FACTOR * (1 + 1e-5)
    assert ix._errors[: len(every)].max() < old_errors.max() / 5
    assert _live_errors_match(ix, vectors)
    assert np.array_equal(ix.ids(), np.arange(1, len(every) + 1))
    found = [int(ix.search(moved[j], 1)[0][0]) for j in range(0, len(moved), 50)]
    assert found == [301 + j for j in range(0, len(moved), 50)]


def test_a_retrain_beside_puts_and_removals_keeps_both() -> None:
    first, moved = _first_traffic(300, seed=5), _moved_traffic(RETRAIN_MIN + 300, seed=6)
    every = np.concatenate([first, moved])
    vectors = {i + 1: every[i] for i in range(len(every))}
    live = set(range(1, RETRAIN_MIN + 401))
    ix = _sq8(first)
    ix.add(np.arange(301, RETRAIN_MIN + 401), moved[: RETRAIN_MIN + 100])
    assert ix.retrain_due
    # the store's originals: what it still has (removed entries are gone from it)
    job = ix.begin_rebuild(lambda ids: {i: vectors[i] for i in ids if i in live})
    assert job.retrain
    job.decode_step()
    for entry_id in (2, 17, 305, 500):  # removed during the rebuild, both kinds
        assert ix.remove(entry_id)
        live.discard(entry_id)
    job.build()
    late = np.arange(RETRAIN_MIN + 401, len(every) + 1)
    ix.add(late, every[late - 1])  # stored during the rebuild, out of the old ranges
    live.update(late.tolist())
    job.add(job.take_new())
    assert job.finish()
    assert len(ix) == len(live) and set(ix.ids().tolist()) == live
    assert ix.drifted == 0 and _live_errors_match(ix, vectors)
    assert int(ix.search(every[499], 1)[0][0]) != 500  # removed stays removed
    assert int(ix.search(every[late[-1] - 1], 1)[0][0]) == late[-1]


def _entries(x: np.ndarray, first_id: int) -> list[NewEntry]:
    return [
        NewEntry("", f"q{first_id + i}", Request(f"q{first_id + i}"), f"a{i}", x[i])
        for i in range(len(x))
    ]


@pytest.mark.parametrize("persistent", [True, False], ids=["sqlite", "memory"])
def test_the_store_retrains_a_scope_whose_traffic_drifted(tmp_path: Path, persistent: bool) -> None:
    path = tmp_path / "store.sqlite" if persistent else None
    first, moved = _first_traffic(300, seed=7), _moved_traffic(RETRAIN_MIN + 200, seed=8)
    store = EntryStore(path, brute_force_max=256)
    store.add_many(_entries(first, 0))
    index = store._indexes[0]
    assert index.approximate and index.storage == "sq8"
    old_limit = index._drift_limit
    for start in range(0, len(moved), 100):  # puts as traffic brings them
        store.add_many(_entries(moved[start : start + 100], 300 + start))
    assert store.wait_for_rebuilds(120) and not store.rebuild_errors
    index = store._indexes[0]
    assert index._drift_limit > old_limit and index.drifted == 0 and not index.retrain_due
    every = np.concatenate([first, moved])
    assert _live_errors_match(index, {i + 1: every[i] for i in range(len(every))})
    for j in (0, 200, len(moved) - 1):
        (record, cosine), *_ = store.nearest("", moved[j], 3)
        assert record.exact_key == f"q{300 + j}" and cosine == pytest.approx(1.0, abs=1e-5)
    if path is None:
        return
    store.close()
    again = EntryStore(path, brute_force_max=256)
    assert again._indexes[0]._drift_limit == index._drift_limit
    assert again._indexes[0].drifted == 0 and not again._indexes[0].retrain_due
    again.close()


def test_a_retrain_reads_more_vectors_than_sqlite_binds_in_one_statement(
    tmp_path: Path,
) -> None:
    import sqlite3

    # a retrain asks for whole chunks of ids (16,384, or every entry stored
    # during a long rebuild); SQLite binds at most 999 values per statement
    # before 3.32, 32,766 since (builds may set their own)
    n = 3_000
    x = _unit(np.random.default_rng(9).standard_normal((n, DIM)))
    store = EntryStore(tmp_path / "store.sqlite", background_rebuild=False)
    store.add_many(_entries(x, 0))
    store.close()
    store = EntryStore(tmp_path / "store.sqlite", background_rebuild=False)
    store._db.reader().setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 999)
    vectors = store._vectors(list(range(1, n + 1)))  # nothing memoised: all from SQLite
    assert len(vectors) == n and np.array_equal(vectors[n], x[n - 1])
    store.close()
