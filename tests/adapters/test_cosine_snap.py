"""Cosines of identical texts are 1.0 on any CPU (adapters/embedders.py,
``COSINE_SNAP``). Float32 vectors move by ~1e-7 with the vector kernels a CPU
picks, so a text's vector dotted with itself lands a little above or below 1,
and rank metrics over identical-query pairs (the same question under another
user, after other turns) followed the CPU. Here "another CPU" is the same
vectors moved by 1e-7 and normalised again."""

from __future__ import annotations

import numpy as np
import pytest

from adapters.embedders import COSINE_SNAP, snap_cosines, unit_cosine
from cacheeval.metrics.agreement import roc_auc


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)


def _other_cpu(x: np.ndarray, seed: int) -> np.ndarray:
    """The same vectors as another CPU's kernels might give them."""
    rng = np.random.default_rng(seed)
    return _unit(x + 1e-7 * rng.standard_normal(x.shape).astype(np.float32))


def _scores(vectors: np.ndarray, pairs: list[tuple[int, int]], snap: bool) -> list[float]:
    dot = unit_cosine if snap else (lambda u, v: float(u @ v))
    return [dot(vectors[a], vectors[b]) for a, b in pairs]


def test_identical_texts_rank_the_same_on_any_cpu() -> None:
    rng = np.random.default_rng(0)
    x = _unit(rng.standard_normal((400, 384)))
    # 200 identical-query pairs (context rows: half served, half refused because
    # of other turns) and 200 paraphrase-like HIT pairs just below cosine 1
    near = _unit(x[:200] + 0.02 * rng.standard_normal((200, 384)))
    vectors = np.concatenate([x, near])
    pairs = [(i, i) for i in range(200, 400)] + [(i, 400 + i) for i in range(200)]
    truth = [i % 2 for i in range(200)] + [1] * 200
    cpus = (vectors, _other_cpu(vectors, 1))
    raw = [roc_auc(truth, _scores(v, pairs, snap=False)) for v in cpus]
    snapped = [roc_auc(truth, _scores(v, pairs, snap=True)) for v in cpus]
    assert raw[0] != raw[1]  # the noise reaches the metric without the snap
    assert snapped[0] == snapped[1]
    assert _scores(vectors, pairs, snap=True)[:200] == [1.0] * 200


def test_the_snap_leaves_real_differences_alone() -> None:
    values = np.array([1.0000001, 1 - COSINE_SNAP / 2, 1 - 4 * COSINE_SNAP, 0.3, -1.0000002])
    assert snap_cosines(values).tolist() == [1.0, 1.0, 1 - 4 * COSINE_SNAP, 0.3, -1.0]
    assert snap_cosines(values.astype(np.float32)).dtype == np.float32
    a, b = _unit(np.array([1.0, 0.0, 0.0])), _unit(np.array([1.0, 0.003, 0.0]))
    assert unit_cosine(a, b) == pytest.approx(float(a @ b)) and unit_cosine(a, b) < 1.0


def test_the_store_ties_identical_entries_oldest_first_on_any_cpu() -> None:
    from adapters.verified_cache.store import EntryStore, NewEntry
    from cacheeval.schema import Request

    rng = np.random.default_rng(2)
    base = _unit(rng.standard_normal((50, 384)))
    for brute_force_max in (10_000, 0):  # brute force, then HNSW with re-ranking
        orders = []
        for seed in (3, 4):  # the same entries, as two CPUs would embed them
            store = EntryStore(brute_force_max=brute_force_max)
            copies = np.concatenate([base, _other_cpu(base, seed), _other_cpu(base, seed + 10)])
            store.add_many(
                [NewEntry("", f"k{i}", Request(f"q{i % 50}"), f"a{i}", v)
                 for i, v in enumerate(copies)]
            )  # fmt: skip
            got = [store.nearest("", base[j], 3) for j in range(50)]
            assert all(cos == 1.0 for hits in got for _, cos in hits)
            orders.append([[rec.id for rec, _ in hits] for hits in got])
        assert orders[0] == orders[1] == [[j + 1, j + 51, j + 101] for j in range(50)]
