"""Re-linking misplaced HNSW nodes (adapters/verified_cache/graph_repair.py), on
real faiss graphs: a node whose links were sent to another cluster is found
again after the check, and the check's best-link values are those of the graph."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("faiss")

from adapters.verified_cache import graph_repair  # noqa: E402
from adapters.verified_cache.index import ScopeIndex  # noqa: E402

DIM = 16


def _clusters(n_clusters: int = 6, size: int = 50, seed: int = 0) -> np.ndarray:
    """Unit vectors in tight clusters (cosine ~0.98 within, ~0 across)."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((n_clusters, DIM))
    x = np.repeat(centres, size, axis=0) + 0.05 * rng.standard_normal((n_clusters * size, DIM))
    x = x[rng.permutation(len(x))]
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def _graph(x: np.ndarray, storage: str = "fp16") -> ScopeIndex:
    ix = ScopeIndex(DIM, brute_force_max=0, hnsw_m=4, storage=storage)
    ix.add(np.arange(1, len(x) + 1), x)
    assert ix.storage == storage  # enough vectors to train 8-bit ranges on
    return ix


def _level0(ix: ScopeIndex, slot: int) -> np.ndarray:
    _, links, offsets, width = graph_repair._views(ix._hnsw)
    start = int(offsets[slot])
    return links[start : start + width]  # a view: writing it edits the graph


def _misplace(ix: ScopeIndex, x: np.ndarray, node: int) -> None:
    """Send ``node``'s level-0 links to the cluster least like it, and drop every
    level-0 link to it: what a lost insert leaves behind."""
    sims = x @ x[node]
    far = np.argsort(sims)[:8]
    row = _level0(ix, node)
    row[:] = -1
    row[: len(far)] = far
    for other in range(len(x)):
        theirs = _level0(ix, other)
        theirs[theirs == node] = -1
    # keep it on level 0 only, so no upper layer leads to it either
    assert int(ix._hnsw.hnsw.levels.at(node)) == 1


def _level0_only(ix: ScopeIndex, x: np.ndarray) -> int:
    levels = np.array([ix._hnsw.hnsw.levels.at(i) for i in range(len(x))])
    return int(np.flatnonzero(levels == 1)[0])


@pytest.mark.parametrize("storage", ["fp16", "sq8"])
def test_a_misplaced_node_is_found_again_after_the_check(storage: str) -> None:
    x = _clusters()
    ix = _graph(x, storage)
    node = _level0_only(ix, x)
    _misplace(ix, x, node)
    before = graph_repair.best_link_cosines(ix._hnsw, [node])[0]
    assert before < graph_repair.REPAIR_BELOW  # every link is in a far cluster
    # nothing leads to it: a search for its own vector misses it
    ids, _ = ix.search(x[node], 3, ef=8)
    assert node + 1 not in ids.tolist()

    assert ix.check_links(len(x)) >= 1

    row = _level0(ix, node)
    mates = set(np.flatnonzero(x @ x[node] > 0.9).tolist()) - {node}
    assert mates & set(row[row >= 0].tolist())  # linked to its own cluster again
    assert graph_repair.best_link_cosines(ix._hnsw, [node])[0] > 0.9
    ids, _ = ix.search(x[node], 3, ef=8)
    assert ids[0] == node + 1  # and found first for its own vector


@pytest.mark.parametrize("storage", ["fp16", "sq8"])
def test_best_link_cosines_are_the_graph_s(storage: str) -> None:
    x = _clusters(seed=1)
    ix = _graph(x, storage)
    vectors, links, offsets, width = graph_repair._views(ix._hnsw)
    node = _level0_only(ix, x)
    _misplace(ix, x, node)
    got = graph_repair.best_link_cosines(ix._hnsw, np.arange(len(x)))
    for i in range(len(x)):
        row = links[int(offsets[i]) : int(offsets[i]) + width]
        row = row[row >= 0]
        exact = float((vectors[row].astype(np.float32) @ vectors[i].astype(np.float32)).max())
        if exact < graph_repair.REPAIR_BELOW:  # a lost node is read in full
            assert got[i] == pytest.approx(exact, abs=1e-6)
        else:  # the others stop at a link over the line
            assert graph_repair.REPAIR_BELOW <= got[i] <= exact + 1e-6
    assert got[node] < graph_repair.REPAIR_BELOW


@pytest.mark.parametrize("storage", ["fp16", "sq8"])
def test_a_well_linked_graph_is_left_as_it_is(storage: str) -> None:
    x = _clusters(seed=2)
    ix = _graph(x, storage)
    _, links, _, _ = graph_repair._views(ix._hnsw)
    before = np.array(links, copy=True)
    assert ix.check_links(len(x)) == 0
    assert np.array_equal(np.asarray(links), before)


def test_the_check_goes_round_the_live_nodes() -> None:
    x = _clusters(n_clusters=2, size=20, seed=3)
    ix = _graph(x)
    ix._sweep_at = 0
    seen: list[int] = []
    real = graph_repair.best_link_cosines

    def spy(index: object, slots: object) -> np.ndarray:
        seen.extend(np.asarray(slots).tolist())
        return real(index, slots)

    ix.remove(1)  # slot 0: a tombstone is not checked
    ix._new_from = ix._n  # the cursor alone (the inserts' own check: below)
    try:
        graph_repair.best_link_cosines = spy  # type: ignore[assignment]
        ix.check_links(30)
        ix.check_links(30)  # wraps round the 40 slots
    finally:
        graph_repair.best_link_cosines = real  # type: ignore[assignment]
    assert seen == [*range(1, 30), *range(1, 20), *range(30, 40)]


def test_new_nodes_are_checked_with_the_next_batch() -> None:
    x = _clusters(n_clusters=3, size=40, seed=4)
    ix = _graph(x[:100])
    ix.check_links(1)  # the build's own nodes: checked once
    seen: list[int] = []
    real = graph_repair.best_link_cosines

    def spy(index: object, slots: object) -> np.ndarray:
        seen.extend(np.asarray(slots).tolist())
        return real(index, slots)

    try:
        graph_repair.best_link_cosines = spy  # type: ignore[assignment]
        for i in range(100, 120):  # 20 puts owe 40 visits: under one batch
            ix.add(np.array([i + 1]), x[i : i + 1])
        assert seen == []
        ix.check_links(2)
    finally:
        graph_repair.best_link_cosines = real  # type: ignore[assignment]
    assert set(range(100, 120)) <= set(seen)  # every new node, with the cursor's
    assert len(seen) == 22


def test_the_8bit_rows_are_decoded_as_faiss_decodes_them() -> None:
    import faiss

    x = _clusters(seed=5)
    ix = _graph(x, "sq8")
    vectors, _, _, _ = graph_repair._views(ix._hnsw)
    storage = faiss.downcast_index(ix._hnsw.storage)
    codes = storage.sa_encode(x[:7])
    np.testing.assert_allclose(vectors[np.arange(7)], storage.sa_decode(codes), atol=1e-6)
    table = np.array([[0, 3], [6, 1]])  # any shape of slots, as the link table reads them
    assert vectors[table].shape == (2, 2, DIM)
    np.testing.assert_array_equal(vectors[table][1], vectors[np.array([6, 1])])
    assert vectors[4].shape == (DIM,)  # one node, as the repair reads its own vector


def test_only_float16_and_8bit_graphs_are_repaired() -> None:
    import faiss

    flat = faiss.IndexHNSWFlat(DIM, 4, faiss.METRIC_INNER_PRODUCT)
    flat.add(_clusters(n_clusters=1, size=10))
    with pytest.raises(ValueError, match="QT_fp16 or QT_8bit"):
        graph_repair.best_link_cosines(flat, [0])
