"""How an HNSW scope stores its vectors (adapters/verified_cache/index.py,
``storage``): float16 or faiss's 8-bit scalar quantizer. The 8-bit error is
measured on every insert, so the store's pruned re-ranking stays exact (for
float16 too, with its fixed bound); it survives a save, a load and a rebuild,
on real faiss graphs and real files."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("faiss")

from adapters.verified_cache.index import SQ8_MIN_TRAIN_ROWS, ScopeIndex, storage_of  # noqa: E402
from adapters.verified_cache.store import RERANK, EntryStore, NewEntry  # noqa: E402
from cacheeval.schema import Request  # noqa: E402

DIM = 32


def _clustered(n: int, seed: int, spread: float = 0.05, centres: int = 40) -> np.ndarray:
    """Unit vectors around ``centres`` centres (near-ties inside a cluster)."""
    rng = np.random.default_rng(seed)
    middle = rng.standard_normal((centres, DIM))
    x = middle[np.arange(n) % centres] + spread * rng.standard_normal((n, DIM))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def _sq8(x: np.ndarray, **options: Any) -> ScopeIndex:
    ix = ScopeIndex(DIM, brute_force_max=0, storage="sq8", **options)
    ix.add(np.arange(1, len(x) + 1), x)
    assert ix.storage == "sq8"  # enough vectors to train its ranges on
    return ix


def _largest_error(ix: ScopeIndex) -> float:
    """The largest of the scope's per-entry bounds."""
    return float(ix._slot_errors(np.arange(ix._n)).max())


def _bounds_hold(ix: ScopeIndex, x: np.ndarray, queries: np.ndarray) -> bool:
    """Whether every |approximate cosine - exact cosine| of ``queries`` against
    the stored ``x`` (slot i holds x[i]) is within that entry's own bound."""
    import faiss

    storage = faiss.downcast_index(ix._hnsw.storage)
    sims, slots = storage.search(queries, len(x))
    exact = np.take_along_axis(queries @ x.T, slots, axis=1)
    bounds = ix._slot_errors(slots.ravel()).reshape(slots.shape)
    return bool((np.abs(sims - exact) <= bounds).all())


def test_an_unknown_storage_is_refused_and_8bit_is_the_default(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="storage must be one of"):
        ScopeIndex(DIM, storage="int4")
    assert ScopeIndex(DIM).storage == "sq8"
    # the store refuses it when opened, not at its first put, and writes nothing
    with pytest.raises(ValueError, match="storage must be one of"):
        EntryStore(tmp_path / "bad.sqlite", index_options={"storage": "int4"})
    assert list(tmp_path.iterdir()) == []


def test_8bit_storage_takes_half_the_bytes_of_float16() -> None:
    import faiss

    x = _clustered(300, seed=0)
    fp16 = ScopeIndex(DIM, brute_force_max=0, storage="fp16")
    fp16.add(np.arange(1, 301), x)
    sq8 = _sq8(x)
    assert storage_of(fp16._hnsw) == "fp16" and storage_of(sq8._hnsw) == "sq8"
    assert faiss.downcast_index(fp16._hnsw.storage).code_size == 2 * DIM
    assert faiss.downcast_index(sq8._hnsw.storage).code_size == DIM


def test_a_graph_built_from_too_few_vectors_stores_float16() -> None:
    x = _clustered(SQ8_MIN_TRAIN_ROWS, seed=8)
    few = ScopeIndex(DIM, brute_force_max=0)  # "sq8" asked for
    few.add(np.arange(1, SQ8_MIN_TRAIN_ROWS), x[:-1])
    assert few.storage == "fp16" and storage_of(few._hnsw) == "fp16"
    few.add(np.array([SQ8_MIN_TRAIN_ROWS]), x[-1:])  # and keeps it as it grows
    assert storage_of(few._hnsw) == "fp16"
    assert _sq8(x).storage == "sq8"  # enough of them


def test_the_error_bound_holds_for_vectors_outside_the_trained_ranges() -> None:
    x = _clustered(400, seed=1)
    ix = _sq8(x[:300])  # ranges trained on these
    within = _largest_error(ix)
    assert 0 < within < 0.05
    # vectors far outside the trained ranges: their coordinates are clamped
    rng = np.random.default_rng(2)
    out = rng.standard_normal((100, DIM)) * np.where(np.arange(DIM) % 2, 1.0, 8.0)
    out = (out / np.linalg.norm(out, axis=1, keepdims=True)).astype(np.float32)
    ix.add(np.arange(301, 401), out)
    assert _largest_error(ix) > within  # measured, not assumed
    stored = np.concatenate([x[:300], out])
    queries = np.concatenate([x[300:], out[:20]])
    assert _bounds_hold(ix, stored, queries)
    # each entry has its own bound: the clamped ones' are the large ones
    errors = ix._slot_errors(np.arange(400))
    assert errors[:300].max() <= within < errors[300:].max()
    ix._errors[:400] = 0.0  # no bound at all: the data breaks it
    assert not _bounds_hold(ix, stored, queries)


def test_save_and_load_keep_the_storage_and_the_bound(tmp_path: Path) -> None:
    x = _clustered(300, seed=3)
    ix = _sq8(x)
    assert ix.save(tmp_path / "scope")
    # the file says how it is stored, whatever the options of the reader
    again = ScopeIndex.load(tmp_path / "scope", DIM, storage="fp16")
    assert again.storage == "sq8" and _largest_error(again) == _largest_error(ix)
    assert np.array_equal(again._slot_errors(np.arange(300)), ix._slot_errors(np.arange(300)))
    assert np.array_equal(again.search(x[5], 5)[0], ix.search(x[5], 5)[0])


def test_an_8bit_file_without_its_bound_is_not_trusted(tmp_path: Path) -> None:
    ix = _sq8(_clustered(300, seed=4))
    ix.save(tmp_path / "scope")
    with np.load(tmp_path / "scope.npz") as saved:
        ids, alive = saved["ids"], saved["alive"]
    with open(tmp_path / "scope.npz", "wb") as f:
        np.savez(f, ids=ids, alive=alive)  # as written before the bounds were saved
    with pytest.raises(ValueError, match="error bounds"):
        ScopeIndex.load(tmp_path / "scope", DIM)


def test_a_rebuild_keeps_every_code_and_the_bound() -> None:
    import faiss

    x = _clustered(400, seed=5)
    ix = _sq8(x)
    before_codes = faiss.downcast_index(ix._hnsw.storage).sa_encode(x[1::2])
    kept_errors = ix._slot_errors(np.arange(1, 400, 2))
    for entry_id in range(1, 401, 2):  # remove the even slots' entries
        ix.remove(entry_id)
    ix.rebuild_now()
    storage = faiss.downcast_index(ix._hnsw.storage)
    assert ix._hnsw.ntotal == 200
    stored = faiss.rev_swig_ptr(storage.codes.data(), storage.codes.size())
    assert np.array_equal(np.asarray(stored).reshape(200, DIM), before_codes)
    assert np.array_equal(ix._slot_errors(np.arange(200)), kept_errors)  # in the new order
    assert _bounds_hold(ix, x[1::2], x[:20])


def _entries(x: np.ndarray) -> list[NewEntry]:
    return [NewEntry("", f"q{i}", Request(f"q{i}"), f"a{i}", x[i]) for i in range(len(x))]


def _reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of records each of the store's reads asks for, from now on."""
    read: list[int] = []
    real_fetch = EntryStore._fetch

    def counting(self: EntryStore, ids: list[int]) -> list[Any]:
        read.append(len(ids))
        return real_fetch(self, ids)

    monkeypatch.setattr(EntryStore, "_fetch", counting)
    return read


def _reopened_store(path: Path, x: np.ndarray, storage: str) -> EntryStore:
    """A store of ``x`` forced to HNSW, closed and opened again (nothing memoised)."""
    store = EntryStore(path, brute_force_max=0, index_options={"storage": storage})
    store.add_many(_entries(x))
    store.close()
    store = EntryStore(path, brute_force_max=0, index_options={"storage": storage})
    assert store._indexes[0].approximate and store._indexes[0].storage == storage
    return store


def _near(x: np.ndarray, step: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    probes = x[::step] + 0.003 * rng.standard_normal((len(x[::step]), x.shape[1]))
    return (probes / np.linalg.norm(probes, axis=1, keepdims=True)).astype(np.float32)


def _pruning_is_exact(
    store: EntryStore,
    probes: np.ndarray,
    monkeypatch: pytest.MonkeyPatch,
    set_bound: Callable[[float], None],
) -> None:
    """The store's pruned re-ranking reads fewer records than re-ranking every
    candidate (``set_bound(10.0)``: nothing pruned) and answers exactly as it
    does (ids and float32 cosines, bit for bit); without the margin
    (``set_bound(0.0)``) the near-ties in the data change the answers."""

    def answers() -> list[list[tuple[int, float]]]:
        return [[(r.id, c) for r, c in store.nearest("", v, 3)] for v in probes]

    read = _reads(monkeypatch)
    pruned = answers()
    assert sum(read) < len(probes) * (3 + RERANK)  # some candidates never read
    set_bound(10.0)
    read.clear()
    everything = answers()
    assert sum(read) == len(probes) * (3 + RERANK)
    assert pruned == everything  # ==, not approx
    set_bound(0.0)
    assert answers() != everything


def test_pruned_reranking_over_float16_cosines_answers_as_reranking_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Clusters of near-duplicates (float16 swaps their order) and far candidates:
    a candidate more than twice the float16 error below the k-th is never read."""
    from adapters.verified_cache import index as index_module

    centres = np.random.default_rng(50).standard_normal((60, 64))
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    x = centres[np.arange(1200) % 60] + 0.01 * np.random.default_rng(51).standard_normal((1200, 64))
    x = (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)
    store = _reopened_store(tmp_path / "fp16.sqlite", x, "fp16")
    _pruning_is_exact(
        store,
        _near(x, 7, seed=52),
        monkeypatch,
        lambda bound: monkeypatch.setattr(index_module, "FP16_COSINE_ERROR", bound),
    )
    store.close()


def test_pruned_reranking_over_8bit_cosines_answers_as_reranking_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each 8-bit candidate is bounded by its own measured error."""
    x = _clustered(1200, seed=6, spread=0.01, centres=300)  # 4 a cluster, far apart
    store = _reopened_store(tmp_path / "sq8.sqlite", x, "sq8")

    def every_slot(bound: float) -> None:
        errors = lambda self, slots: np.full(len(slots), bound)  # noqa: E731
        monkeypatch.setattr(ScopeIndex, "_slot_errors", errors)

    _pruning_is_exact(store, _near(x, 9, seed=7), monkeypatch, every_slot)
    store.close()
