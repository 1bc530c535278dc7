"""The verifier as a GPTCache similarity evaluation, on the real GPTCache 0.1.44
(SQLite through sqlalchemy, a faiss index, in tmp_path) with the real MiniLM
ONNX embedder and the shipped verifier."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("gptcache")
pytest.importorskip("faiss")
pytest.importorskip("lightgbm")

from adapters.integrations.gptcache_evaluation import (  # noqa: E402
    VerifiedEvaluation,
    question_request,
)
from adapters.verified_cache import Request  # noqa: E402

SLOW = pytest.mark.slow(reason="loads MiniLM (ONNX Runtime) and the shipped verifier")

STORED = "How many ounces are in 3 pounds?"
PARAPHRASE = "How many ounces are there in 3 pounds?"
OTHER_NUMBER = "How many ounces are in 4 pounds?"
SWAPPED = "How many pounds are in 3 ounces?"


# --- no model ---------------------------------------------------------------------------


def test_range_is_the_base_evaluations_and_a_veto_sits_below_it() -> None:
    from gptcache.similarity_evaluation import SearchDistanceEvaluation

    ev = VerifiedEvaluation()
    assert ev.range() == (0.0, 4.0)
    assert ev.veto_rank() == -1.0
    narrow = VerifiedEvaluation(SearchDistanceEvaluation(max_distance=2.0, positive=True))
    assert narrow.range() == (0.0, 2.0)


def test_a_question_it_cannot_read_is_vetoed_without_a_model() -> None:
    ev = VerifiedEvaluation()
    cache_dict = {"question": STORED, "search_result": (0.0, 1)}
    assert ev.evaluation({"question": None}, cache_dict) == -1.0
    assert ev.evaluation({"question": STORED}, {"question": 7, "search_result": (0.0, 1)}) == -1.0
    assert ev.resources._verifier is None and ev.resources._embedder is None  # nothing loaded


def test_question_request_reads_strings_and_requests_only() -> None:
    assert question_request("hi") == Request("hi")
    r = Request("hi", system_prompt="s")
    assert question_request(r) is r
    assert question_request(b"hi") is None


# --- the real GPTCache ------------------------------------------------------------------


@pytest.fixture(scope="module")
def embedder() -> Any:
    pytest.importorskip("onnxruntime")
    from adapters.verified_cache.cache import shared_embedder

    return shared_embedder("minilm-onnx")


@pytest.fixture
def pipeline(tmp_path: Path, embedder: Any) -> Iterator[Any]:
    """``make(evaluation, threshold)``: a GPTCache pipeline as a user builds it
    (sqlite + faiss under tmp_path, local MiniLM embeddings), closed afterwards."""
    from gptcache import Cache, Config
    from gptcache.manager import CacheBase, VectorBase, get_data_manager
    from gptcache.processor.pre import get_prompt

    from adapters.gptcache_adapter import _ClosedDataManager

    made: list[Any] = []

    def make(evaluation: Any, threshold: float = 0.8) -> Any:
        where = tmp_path / f"store{len(made)}"
        where.mkdir()
        data_manager = get_data_manager(
            CacheBase("sqlite", sql_url=f"sqlite:///{where}/cache.db"),
            VectorBase("faiss", dimension=embedder.dim, index_path=str(where / "faiss.index")),
        )
        cache = Cache()
        cache.init(
            pre_embedding_func=get_prompt,
            embedding_func=lambda data, **_: embedder.encode([data])[0],
            data_manager=data_manager,
            similarity_evaluation=evaluation,
            config=Config(similarity_threshold=threshold),
        )
        made.append(cache)
        return cache

    yield make
    for cache in made:
        cache.data_manager.close()
        engine = getattr(getattr(cache.data_manager, "s", None), "_engine", None)
        if engine is not None:
            engine.dispose()
        cache.data_manager = _ClosedDataManager()  # GPTCache's atexit hook closes it again


@SLOW
def test_one_argument_gives_a_gptcache_pipeline_the_verifiers_veto(pipeline: Any) -> None:
    from gptcache.adapter.api import get, put
    from gptcache.similarity_evaluation import SearchDistanceEvaluation

    plain = pipeline(SearchDistanceEvaluation())
    verified = pipeline(VerifiedEvaluation())
    for cache in (plain, verified):
        put(STORED, "48 ounces", cache_obj=cache)
        assert get(PARAPHRASE, cache_obj=cache) == "48 ounces"  # a paraphrase is served
    # GPTCache alone serves the changed number and the swapped units (high cosine) ...
    assert get(OTHER_NUMBER, cache_obj=plain) == "48 ounces"
    assert get(SWAPPED, cache_obj=plain) == "48 ounces"
    # ... the verifier vetoes both
    assert get(OTHER_NUMBER, cache_obj=verified) is None
    assert get(SWAPPED, cache_obj=verified) is None
    assert get(STORED, cache_obj=verified) == "48 ounces"  # exact repeat


@SLOW
def test_at_threshold_zero_the_verified_cache_decides_alone(pipeline: Any) -> None:
    from gptcache.adapter.api import get, put

    cache = pipeline(VerifiedEvaluation(), threshold=0.0)
    put("Convert 5 miles to kilometres", "8.05 km", cache_obj=cache)
    assert get("What is 5 miles in kilometres?", cache_obj=cache) == "8.05 km"
    assert get("Convert 5 kilometres to miles", cache_obj=cache) is None
    assert get("What is the capital of France?", cache_obj=cache) is None  # below the gate


@SLOW
def test_evaluation_keeps_the_base_rank_on_a_hit_and_vetoes_below_the_range(embedder) -> None:
    ev = VerifiedEvaluation()
    cache_dict = {"question": STORED, "search_result": (0.25, 1)}
    assert ev.evaluation({"question": PARAPHRASE}, cache_dict) == pytest.approx(3.75)
    assert ev.evaluation({"question": OTHER_NUMBER}, cache_dict) < ev.range()[0]
    assert ev.decide(STORED, OTHER_NUMBER).tier == "verifier"
    # the stored question is embedded once, then read from the memo
    assert STORED in ev.resources._queries


@SLOW
def test_request_of_carries_the_user_to_the_verified_cache(embedder) -> None:
    def request_of(question: Any) -> Request:
        user, query = str(question).split("\n", 1)
        return Request(query, system_prompt=f"Session of {user}.")

    ev = VerifiedEvaluation(request_of=request_of)
    stored = "user u-1001\nHow do I reset my password?"
    assert ev.decide(stored, "user u-1001\nHow can I reset my password?").hit
    other_user = ev.decide(stored, "user u-2002\nHow can I reset my password?")
    assert not other_user.hit and other_user.tier == "policy"
    assert "cross_user" in other_user.reason
