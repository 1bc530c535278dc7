"""GPTCache 0.1.44 as a CacheEval cache, driven through the real package.

Protocol A-prime (per-pair isolation): for every row a fresh GPTCache ``Cache``
with its own SQLite scalar store (through sqlalchemy) and faiss vector index in
a temporary directory; ``put`` side a's request with its answer, ``get`` side
b's request, and call it a HIT when GPTCache returns the cached answer. The
decision is GPTCache's own, made inside ``gptcache.adapter.adapter.adapt``::

    rank_threshold = clamp((max_rank - min_rank) * similarity_threshold * cache_factor,
                           min_rank, max_rank)
    hit  <=>  rank >= rank_threshold

With ``SearchDistanceEvaluation(max_distance=4.0)`` the rank is
``4 - clamp(d, 0, 4)`` where ``d`` is faiss's squared L2 distance between the
stored and the query vector. GPTCache's data manager L2-normalises both, so
``d = 2 - 2 cos`` and a hit means ``4 - (2 - 2 cos) >= 4 t``, i.e.

    **hit  <=>  cos >= 2t - 1**      (t = 0.80 -> cos >= 0.60; 0.85 -> 0.70; 0.95 -> 0.90)

``Verdict.score`` is the rank scaled to [0, 1]: ``rank / 4 = (1 + cos) / 2``,
so the threshold-free metrics see GPTCache's own similarity signal.

What is embedded: by default only the last user message (``query``), exactly
what GPTCache's pre-embedding sees for a chat request; ``embed="full"``
embeds system prompt + prior turns + query, to show what context-awareness
changes.

Two paths give the same decision:

* ``path="real"``: the real cache per row (put/get through GPTCache), embedding
  included in the timed call. Slow, faithful.
* ``path="fast"``: ``prepare(pairs)`` batch-embeds every unique text once; each
  row then computes the faiss distance of the two normalised vectors and applies
  GPTCache's own ``SearchDistanceEvaluation`` and threshold rule. For sweeps.

Models are local only (see :mod:`adapters.embedders`); GPTCache's hub-loading
defaults (``Onnx()``, ``OnnxModelEvaluation()``, ``init_similar_cache()``) are
never called. GPTCache's "onnx-default" embedding (paraphrase-albert-onnx) and
its ONNX cross-encoder evaluator (albert-duplicate-onnx) live on a model hub
and cannot be had offline; ``embedder="onnx-dir:/path/to/model"`` runs any
local ONNX sentence encoder (``model.onnx`` + ``tokenizer.json``) the way
GPTCache's ``Onnx`` does, for users who have such a directory.
"""

from __future__ import annotations

import math
import shutil
import struct
import tempfile
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cacheeval.run.blockrun import CacheSpec
from cacheeval.schema import Pair, Request, Verdict

if TYPE_CHECKING:
    import numpy as np

MAX_DISTANCE = 4.0  # SearchDistanceEvaluation's default bound


@dataclass(frozen=True, slots=True)
class GPTCacheConfig:
    """One named configuration: embedder, similarity threshold, what is embedded."""

    name: str
    embedder: str
    threshold: float
    embed: str = "query"


#: The reference configurations reported in reports/SUMMARY.md.
CONFIGS: dict[str, GPTCacheConfig] = {
    c.name: c
    for c in (
        GPTCacheConfig("minilm@0.80", "minilm", 0.80),
        GPTCacheConfig("minilm@0.85", "minilm", 0.85),
        GPTCacheConfig("minilm@0.95", "minilm", 0.95),
        GPTCacheConfig("minilm-onnx@0.80", "minilm-onnx", 0.80),
        GPTCacheConfig("e5-small@0.80", "e5-small", 0.80),
    )
}


EMBED_MODES: tuple[str, ...] = ("query", "full")


def adapter_args(config: GPTCacheConfig, path: str) -> dict[str, Any]:
    """The :class:`GPTCacheAdapter` arguments of ``config`` on ``path``."""
    return {
        "embedder": config.embedder,
        "threshold": config.threshold,
        "embed": config.embed,
        "path": path,
    }


def config_spec(config: GPTCacheConfig | str, path: str) -> CacheSpec:
    """How a worker process builds ``config`` on ``path`` (see :mod:`cacheeval.run.parallel`)."""
    cfg = CONFIGS[config] if isinstance(config, str) else config
    return CacheSpec("adapters.gptcache_adapter", "GPTCacheAdapter", adapter_args(cfg, path))


def embed_text(request: Request, embed: str) -> str:
    """The text GPTCache embeds for one request.

    ``embed="query"``: the last user message only. ``embed="full"``: system
    prompt, prior turns and query, one ``role: content`` line each.
    """
    if embed == "query":
        return request.query
    if embed != "full":
        raise ValueError(f"embed must be 'query' or 'full', not {embed!r}")
    return request.text(roles=True)


def gptcache_hit(rank: float, threshold: float, cache_factor: float = 1.0) -> bool:
    """GPTCache's decision rule from ``adapter.adapt`` (0.1.44), for ranks in [0, 4]."""
    min_rank, max_rank = 0.0, MAX_DISTANCE
    rank_threshold = (max_rank - min_rank) * threshold * cache_factor
    rank_threshold = (
        max_rank
        if rank_threshold > max_rank
        else min_rank
        if rank_threshold < min_rank
        else rank_threshold
    )
    return bool(rank_threshold <= rank)


def _float32(x: float) -> float:
    """``x`` rounded to float32, as numpy compares a Python float with GPTCache's
    float32 rank (NEP 50: the Python float is cast to the rank's type)."""
    return float(struct.unpack("f", struct.pack("f", x))[0])


def similarity_setting(fires_from: float, stops_at: float | None) -> dict[str, Any]:
    """GPTCache's own ``Config(similarity_threshold=t)`` for a certified threshold on
    :class:`GPTCacheAdapter`'s score: it serves every pair scored ``>= fires_from``
    and none scored ``<= stops_at`` (the highest score below it; None: none).

    The score is ``rank / 4`` and GPTCache serves when ``4 t <= rank`` (module
    docstring; ``cache_factor`` 1), so ``t = fires_from`` makes exactly the
    certified decisions. A user wants a short number: this is the shortest decimal
    in the upper half of ``(stops_at, fires_from]`` that gives the same decisions
    on both sides under GPTCache's float32 comparison and under the fast path's
    float64 one, else ``fires_from`` itself. ``cosine_at_least`` is ``2 t - 1``.

    >>> similarity_setting(0.8312, 0.79)
    {'similarity_threshold': 0.83, 'cosine_at_least': 0.66}
    >>> similarity_setting(1.0, 0.9999999)["similarity_threshold"]
    1.0
    """
    if not 0.0 <= fires_from <= 1.0:
        raise ValueError(f"a GPTCache score lies in [0, 1], got {fires_from}")
    low = max(0.0, fires_from - 0.02) if stops_at is None else stops_at
    floor = low + (fires_from - low) / 2

    def same(t: float) -> bool:
        for four_t in (4.0 * t, _float32(4.0 * t)):
            if not four_t <= 4.0 * fires_from:
                return False
            if stops_at is not None and four_t <= 4.0 * stops_at:
                return False
        return True

    chosen = fires_from
    for digits in range(1, 8):
        scale = 10**digits
        t = math.floor(fires_from * scale) / scale
        if t > floor and same(t):
            chosen = t
            break
    return {"similarity_threshold": chosen, "cosine_at_least": round(2 * chosen - 1, 12)}


def _make_recording_evaluation() -> Any:
    """GPTCache's SearchDistanceEvaluation, unchanged, that also keeps the last rank
    it computed (GPTCache reports the rank only on hits; the score needs it on
    misses too)."""
    from gptcache.similarity_evaluation.distance import SearchDistanceEvaluation

    class RecordingSearchDistance(SearchDistanceEvaluation):  # type: ignore[misc]
        last_rank: float | None = None

        def evaluation(self, src_dict: Any, cache_dict: Any, **kwargs: Any) -> float:
            rank = super().evaluation(src_dict, cache_dict, **kwargs)
            self.last_rank = float(rank)
            return rank

    return RecordingSearchDistance(max_distance=MAX_DISTANCE)


class _ClosedDataManager:
    """Stands in for a closed data manager: GPTCache's ``Cache.init`` registers an
    atexit hook that closes ``self.data_manager``; after a row we swap the real
    one out so the hook neither flushes into a deleted temp dir nor keeps the
    index alive."""

    def close(self) -> None:
        pass


_gptcache_lock = threading.Lock()


def run_real_pair(
    text_a: str,
    text_b: str,
    answer_a: str,
    embed_fn: Callable[[str], np.ndarray],
    dim: int,
    threshold: float,
    sqlite_in_memory: bool = False,
) -> tuple[bool, float | None]:
    """One isolated GPTCache round trip: fresh cache, put(a), get(b).

    Returns (hit, rank). Everything GPTCache writes goes to a temp dir that is
    removed before returning. ``sqlite_in_memory`` keeps the scalar store in an
    in-memory SQLite database (same sqlalchemy code path, no file I/O): the
    decision is identical and the equivalence test runs several times faster.
    """
    from gptcache import Cache, Config
    from gptcache.adapter.api import get, put
    from gptcache.manager import CacheBase, VectorBase, get_data_manager
    from gptcache.processor.pre import get_prompt

    tmp = tempfile.mkdtemp(prefix="cacheeval-gptcache-")
    data_manager = None
    cache = None
    try:
        evaluation = _make_recording_evaluation()
        data_manager = get_data_manager(
            CacheBase(
                "sqlite", sql_url="sqlite://" if sqlite_in_memory else f"sqlite:///{tmp}/cache.db"
            ),
            VectorBase("faiss", dimension=dim, index_path=f"{tmp}/faiss.index"),
        )
        cache = Cache()
        # GPTCache's global state (its default cache, report timers) is not
        # thread-safe; the harness's timeout worker may overlap calls.
        with _gptcache_lock:
            cache.init(
                pre_embedding_func=get_prompt,
                embedding_func=lambda data, **_: embed_fn(data),
                data_manager=data_manager,
                similarity_evaluation=evaluation,
                config=Config(similarity_threshold=threshold),
            )
            put(text_a, answer_a, cache_obj=cache)
            got = get(text_b, cache_obj=cache)
        return got is not None, evaluation.last_rank
    finally:
        if data_manager is not None:
            try:
                data_manager.close()
            finally:
                engine = getattr(getattr(data_manager, "s", None), "_engine", None)
                if engine is not None:
                    engine.dispose()
        if cache is not None:
            cache.data_manager = _ClosedDataManager()
        shutil.rmtree(tmp, ignore_errors=True)


def faiss_rank(vec_a: np.ndarray, vec_b: np.ndarray) -> float:
    """GPTCache's rank for a stored vector ``vec_a`` and a query ``vec_b``, computed
    the way the real cache does: GPTCache's own ``normalize``, a faiss flat L2
    index, and ``SearchDistanceEvaluation``."""
    import faiss
    import numpy as np
    from gptcache.manager.data_manager import normalize
    from gptcache.similarity_evaluation.distance import SearchDistanceEvaluation

    a = np.asarray(normalize(vec_a), dtype="float32").reshape(1, -1)
    b = np.asarray(normalize(vec_b), dtype="float32").reshape(1, -1)
    index = faiss.IndexFlatL2(a.shape[1])
    index.add(a)
    dist, _ = index.search(b, 1)
    rank = SearchDistanceEvaluation(max_distance=MAX_DISTANCE).evaluation(
        {}, {"search_result": (dist[0][0], None)}
    )
    return float(rank)


class GPTCacheAdapter:
    """A ``Pair -> Verdict`` cache backed by GPTCache.

    Example::

        from adapters.gptcache_adapter import GPTCacheAdapter
        from cacheeval.run.harness import evaluate
        cache = GPTCacheAdapter(embedder="minilm", threshold=0.80)
        report = evaluate(cache, rows, cache_name="gptcache minilm@0.80")

    ``path="real"`` runs GPTCache per row; ``path="fast"`` computes the same
    decision from precomputed embeddings (see the module docstring).
    ``embedding_memo`` (real path only) reuses the fast path's embeddings, so a
    test can compare the two paths' decision logic on identical vectors;
    ``sqlite_in_memory`` keeps GPTCache's SQLite store in memory (see
    :func:`run_real_pair`). ``vectors`` (fast path and memo) is the text ->
    embedding store to fill and read: adapters of one embedder may share one,
    so a run that grades several thresholds embeds each text once.
    """

    def __init__(
        self,
        embedder: str = "minilm",
        threshold: float = 0.80,
        embed: str = "query",
        path: str = "real",
        embedding_memo: bool = False,
        sqlite_in_memory: bool = False,
        vectors: dict[str, np.ndarray] | None = None,
    ) -> None:
        if path not in ("real", "fast"):
            raise ValueError(f"path must be 'real' or 'fast', not {path!r}")
        if not 0.0 <= threshold <= 1.0:
            raise ValueError(f"threshold must be in [0, 1], got {threshold}")
        if embed not in EMBED_MODES:
            raise ValueError(f"embed must be 'query' or 'full', not {embed!r}")
        self.embedder_name = embedder
        self.threshold = float(threshold)
        self.embed = embed
        self.path = path
        self.embedding_memo = embedding_memo
        self.sqlite_in_memory = sqlite_in_memory
        self._embedder: Any = None
        self._vectors: dict[str, np.ndarray] = {} if vectors is None else vectors

    @classmethod
    def from_config(cls, config: GPTCacheConfig | str, **kwargs: Any) -> GPTCacheAdapter:
        cfg = CONFIGS[config] if isinstance(config, str) else config
        return cls(embedder=cfg.embedder, threshold=cfg.threshold, embed=cfg.embed, **kwargs)

    @property
    def embedder(self) -> Any:
        if self._embedder is None:
            from adapters.embedders import get_embedder

            self._embedder = get_embedder(self.embedder_name)
        return self._embedder

    def texts(self, pairs: Iterable[Pair]) -> list[str]:
        """Every unique text this cache embeds for ``pairs``, in first-seen order."""
        seen: dict[str, None] = {}
        for pair in pairs:
            seen.setdefault(embed_text(pair.a, self.embed), None)
            seen.setdefault(embed_text(pair.b, self.embed), None)
        return list(seen)

    def prepare(self, pairs: Sequence[Pair]) -> None:
        """Load the model (and, for the fast path or the memo, embed every text once)."""
        emb = self.embedder
        if self.path == "fast" or self.embedding_memo:
            todo = [t for t in self.texts(pairs) if t not in self._vectors]
            if todo:
                vecs = emb.encode(todo)
                self._vectors.update(zip(todo, vecs, strict=True))
        else:
            emb.encode(["warm-up"])  # first call pays one-off allocation costs

    def vector(self, text: str) -> np.ndarray:
        vec = self._vectors.get(text)
        if vec is None:
            vec = self.embedder.encode([text])[0]
            if self.path == "fast" or self.embedding_memo:
                self._vectors[text] = vec
        return vec

    def rank(self, pair: Pair) -> float:
        """GPTCache's rank for a pair from (precomputed) vectors: the fast path."""
        return faiss_rank(
            self.vector(embed_text(pair.a, self.embed)),
            self.vector(embed_text(pair.b, self.embed)),
        )

    def __call__(self, pair: Pair) -> Verdict:
        text_a = embed_text(pair.a, self.embed)
        text_b = embed_text(pair.b, self.embed)
        if self.path == "fast":
            rank: float | None = self.rank(pair)
            assert rank is not None
            hit = gptcache_hit(rank, self.threshold)
        else:
            embed_one = self.vector if self.embedding_memo else self._embed_live
            hit, rank = run_real_pair(
                text_a,
                text_b,
                f"cached answer for {pair.id}",
                embed_one,
                self.embedder.dim,
                self.threshold,
                self.sqlite_in_memory,
            )
        score = None if rank is None else rank / MAX_DISTANCE
        confidence = 1.0 if score is None else (score if hit else 1.0 - score)
        return Verdict(is_hit=hit, confidence=confidence, tier_used="embedding", score=score)

    def _embed_live(self, text: str) -> np.ndarray:
        vec: np.ndarray = self.embedder.encode([text])[0]
        return vec
