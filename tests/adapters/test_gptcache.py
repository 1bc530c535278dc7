"""GPTCache adapter: the real package, offline, per-pair isolation, and the fast path."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

pytest.importorskip("gptcache")

from adapters.embedders import get_embedder  # noqa: E402
from adapters.gptcache_adapter import (  # noqa: E402
    CONFIGS,
    GPTCacheAdapter,
    embed_text,
    gptcache_hit,
)
from cacheeval.dataset import load_bench  # noqa: E402

from .conftest import make_row  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def test_decision_rule_in_cosine_terms() -> None:
    # rank = 4 - (2 - 2cos) = 2 + 2cos; a hit needs rank >= 4t, i.e. cos >= 2t - 1.
    for t in (0.80, 0.85, 0.95):
        cos_edge = 2 * t - 1
        assert gptcache_hit(2 + 2 * (cos_edge + 1e-6), t)
        assert not gptcache_hit(2 + 2 * (cos_edge - 1e-6), t)
    assert gptcache_hit(4.0, 1.0) and not gptcache_hit(3.99, 1.0)
    assert gptcache_hit(0.0, 0.0)


def test_real_cache_on_a_dozen_rows(dozen_rows, no_network, tmp_path, monkeypatch) -> None:
    # GPTCache writes sqlite.db / data_map.txt / faiss.index into the working
    # directory unless given paths: run from an empty cwd and a private temp root.
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    tmp_root = tmp_path / "tmp"
    tmp_root.mkdir()
    monkeypatch.chdir(cwd)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_root))

    cache = GPTCacheAdapter(embedder="minilm", threshold=0.80, path="real")
    cache.prepare([r.pair for r in dozen_rows])
    verdicts = {row.id: cache(row.pair) for row in dozen_rows}
    for row in dozen_rows:
        v = verdicts[row.id]
        assert v.tier_used == "embedding"
        assert v.score is not None and 0.0 <= v.score <= 1.0
        assert v.is_hit == (row.binary_label == "HIT"), (row.query_a, row.query_b, v)
    assert list(cwd.iterdir()) == [], "GPTCache wrote into the working directory"
    leftovers = [p.name for p in tmp_root.iterdir() if p.name.startswith("cacheeval-gptcache-")]
    assert leftovers == [], "per-pair temp dirs were not removed"


def test_score_is_scaled_rank(dozen_rows) -> None:
    cache = GPTCacheAdapter(embedder="minilm", threshold=0.80, path="fast")
    cache.prepare([r.pair for r in dozen_rows])
    emb = get_embedder("minilm")
    for row in dozen_rows:
        va, vb = emb.encode([row.query_a, row.query_b])
        cos = float(va @ vb)
        v = cache(row.pair)
        assert v.score == pytest.approx((1 + cos) / 2, abs=1e-5)
        assert v.is_hit == gptcache_hit(4 * v.score, 0.80)


@pytest.mark.parametrize("config", list(CONFIGS))
def test_fast_path_equals_real_path_on_dozen(config, dozen_rows) -> None:
    fast = GPTCacheAdapter.from_config(config, path="fast")
    real = GPTCacheAdapter.from_config(config, path="real", embedding_memo=True)
    pairs = [r.pair for r in dozen_rows]
    fast.prepare(pairs)
    real.prepare(pairs)
    for pair in pairs:
        f, r = fast(pair), real(pair)
        assert (f.is_hit, f.score) == (r.is_hit, r.score), pair.id


def test_full_request_embedding_sees_context() -> None:
    ctx_a = ({"role": "user", "content": "I am baking banana bread."},)
    ctx_b = ({"role": "user", "content": "I am roasting a whole chicken."},)
    row = make_row(
        1,
        "How long should I bake it?",
        "How long should I bake it?",
        "ADVERSARIAL",
        context_a=ctx_a,
        context_b=ctx_b,
    )
    pair = row.pair
    assert embed_text(pair.a, "query") == embed_text(pair.b, "query")
    full_a, full_b = embed_text(pair.a, "full"), embed_text(pair.b, "full")
    assert "banana bread" in full_a and "chicken" in full_b
    query_only = GPTCacheAdapter(threshold=0.95, path="fast")
    with_context = GPTCacheAdapter(threshold=0.95, embed="full", path="fast")
    for c in (query_only, with_context):
        c.prepare([pair])
    assert query_only(pair).is_hit  # identical last message: GPTCache serves it
    assert with_context(pair).score < query_only(pair).score


def test_onnx_matches_torch() -> None:
    texts = [
        "Solve x + 2 = 8",
        "¿Cuál es la capital de Australia?",
        "turn off the kitchen lights " * 40,  # longer than the 256-token window
        "",
    ]
    torch_vecs = get_embedder("minilm").encode(texts)
    onnx_vecs = get_embedder("minilm-onnx").encode(texts)
    assert abs(torch_vecs - onnx_vecs).max() < 1e-5


def test_local_onnx_dir_embedder(tmp_path) -> None:
    # The "onnx-default" path for users with a local model dir, exercised on our
    # own MiniLM export (model.onnx + tokenizer.json).
    import shutil

    from adapters.embedders import export_minilm_onnx, minilm_model_path

    model_dir = tmp_path / "minilm"
    model_dir.mkdir()
    shutil.copy(export_minilm_onnx(), model_dir / "model.onnx")
    shutil.copy(Path(minilm_model_path()) / "tokenizer.json", model_dir / "tokenizer.json")
    local = get_embedder(f"onnx-dir:{model_dir}")
    ref = get_embedder("minilm-onnx")
    texts = ["How do I reset my password?", "Best hiking trails near Denver"]
    assert local.dim == 384
    assert abs(local.encode(texts) - ref.encode(texts)).max() < 1e-5


def test_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError):
        GPTCacheAdapter(path="slow")
    with pytest.raises(ValueError):
        GPTCacheAdapter(threshold=1.5)
    with pytest.raises(ValueError):
        GPTCacheAdapter(embed="everything")
    with pytest.raises(ValueError):
        get_embedder("mpnet")


_VECTORS: dict[str, dict] = {}


def _stratified_sample(per_cell: int = 3, seed: int = 20261124) -> list:
    """A seeded sample of ``per_cell`` rows from every domain x label cell.

    The main job checks the two paths agree on every row (and prints it); here
    a sample covering every cell keeps the suite fast while still exercising
    GPTCache's real put/get on every kind of pair.
    """
    import random

    cells: dict[tuple[str, str | None], list] = {}
    for r in load_bench(REPO / "cachebench.jsonl"):
        cells.setdefault((r.domain, r.label), []).append(r)
    rng = random.Random(seed)
    out = []
    for key in sorted(cells, key=str):
        group = cells[key]
        out += rng.sample(group, min(per_cell, len(group)))
    return out


@pytest.mark.skipif(not (REPO / "cachebench.jsonl").exists(), reason="no cachebench.jsonl yet")
@pytest.mark.parametrize("config", list(CONFIGS))
def test_fast_path_equals_real_path_on_a_stratified_sample(config) -> None:
    # The decision logic must agree; both paths use the same vectors (the real
    # path reads the fast path's embeddings), so any difference is GPTCache's
    # put/get/faiss/threshold, not model noise.
    rows = _stratified_sample()
    # Embeddings are shared across the configurations of one embedder, and the
    # real path reads the fast path's (prepare computes them once).
    vectors = _VECTORS.setdefault(CONFIGS[config].embedder, {})
    fast = GPTCacheAdapter.from_config(config, path="fast", vectors=vectors)
    real = GPTCacheAdapter.from_config(
        config, path="real", embedding_memo=True, sqlite_in_memory=True, vectors=vectors
    )
    pairs = [r.pair for r in rows]
    fast.prepare(pairs)
    mismatches = []
    for p in pairs:
        f, g = fast(p), real(p)
        if (f.is_hit, f.score) != (g.is_hit, g.score):
            mismatches.append((p.id, f, g))
    assert len(pairs) >= 100
    assert mismatches == []
