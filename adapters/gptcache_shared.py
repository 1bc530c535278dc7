"""GPTCache 0.1.44 as a shared cache for ``cacheeval replay``: ONE real store for
every entry.

``path="real"``: one GPTCache ``Cache`` with one SQLite scalar store (through
sqlalchemy) and one faiss ``IDMap,Flat`` L2 index, in a temporary directory
that lives as long as the object. ``put`` is GPTCache's ``put`` (embed, save
question + answer id); ``lookup`` is GPTCache's ``get``: its own retrieval
(faiss top-1 over everything stored) and its own threshold rule (see
:mod:`adapters.gptcache_adapter`: hit iff ``rank >= 4 t``, ``rank = 4 - d``,
``d`` the squared L2 distance of the normalised vectors). The answer GPTCache
returns is the answer id it stored. The score is ``rank / 4 = (1 + cos) / 2``
of the top-1 entry, recorded by GPTCache's own ``SearchDistanceEvaluation``.

``path="fast"``: the same decision without GPTCache's per-call machinery:
``prepare`` embeds every text once in batches; the store is a numpy matrix of
the vectors normalised by GPTCache's own ``normalize``; a lookup takes the
squared L2 distance to every stored vector, the first smallest one (faiss's
top-1), GPTCache's ``SearchDistanceEvaluation`` rank and its threshold rule.

``nearest`` (for the replay's P-CHR curve) names the top-1 entry whatever its
rank: on the real path through GPTCache's data manager (``search`` then
``get_scalar_data``), on the fast path from the matrix.

Models are local only (:mod:`adapters.embedders`); GPTCache's hub-loading
defaults are never called.
"""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from adapters.gptcache_adapter import (
    CONFIGS,
    MAX_DISTANCE,
    _ClosedDataManager,
    _gptcache_lock,
    _make_recording_evaluation,
    embed_text,
    gptcache_hit,
)
from cacheeval.schema import Request

if TYPE_CHECKING:
    import numpy as np

#: Entries a store holds before GPTCache's LRU eviction would start: far above
#: any replay, so nothing is ever evicted.
CAPACITY = 10_000_000


class GPTCacheShared:
    """One GPTCache store shared by every entry (module docstring).

    Example::

        cache = GPTCacheShared(embedder="minilm", threshold=0.80, path="real")
        cache.put(Request("How do I reset my password?"), "e1")
        cache.lookup(Request("how can I reset my password"))   # ("e1", 0.93...)
        cache.close()

    ``vectors`` (fast path) is the text -> embedding store to fill and read:
    stores of one embedder may share one, so several replays over the same
    rows embed each text once.
    """

    def __init__(
        self,
        embedder: str = "minilm",
        threshold: float = 0.80,
        embed: str = "query",
        path: str = "real",
        config: str | None = None,
        sqlite_in_memory: bool = False,
        vectors: dict[str, np.ndarray] | None = None,
    ) -> None:
        if config is not None:
            cfg = CONFIGS[config]
            embedder, threshold, embed = cfg.embedder, cfg.threshold, cfg.embed
        if path not in ("real", "fast"):
            raise ValueError(f"path must be 'real' or 'fast', not {path!r}")
        if not 0.0 <= threshold <= 1.0:
            raise ValueError(f"threshold must be in [0, 1], got {threshold}")
        embed_text(Request(""), embed)  # validates `embed`
        self.embedder_name = embedder
        self.threshold = float(threshold)
        self.embed = embed
        self.path = path
        self.sqlite_in_memory = sqlite_in_memory
        self.name = f"gptcache {embedder}@{threshold:.2f} shared ({path})"
        self._embedder: Any = None
        if vectors is not None and path != "fast":
            raise ValueError("a shared vector store is for the fast path only")
        self._memo: dict[str, np.ndarray] = {} if vectors is None else vectors
        # real path
        self._tmp: str | None = None
        self._cache: Any = None
        self._data_manager: Any = None
        self._evaluation: Any = None
        # fast path
        self._ids: list[str] = []
        self._rows: list[np.ndarray] = []
        self._matrix: np.ndarray | None = None
        self._norms: np.ndarray | None = None

    # -- embedding ----------------------------------------------------------------

    @property
    def embedder(self) -> Any:
        if self._embedder is None:
            from adapters.embedders import get_embedder

            self._embedder = get_embedder(self.embedder_name)
        return self._embedder

    def prepare(self, requests: Sequence[Request]) -> None:
        """Load the model; the fast path also embeds every unique text once."""
        emb = self.embedder
        if self.path == "fast":
            texts = list(dict.fromkeys(embed_text(r, self.embed) for r in requests))
            todo = [t for t in texts if t not in self._memo]
            if todo:
                self._memo.update(zip(todo, emb.encode(todo), strict=True))
        else:
            emb.encode(["warm-up"])  # first call pays one-off allocation costs

    def vector(self, text: str) -> np.ndarray:
        """The text's embedding: from the batch memo, or computed now (the real
        path keeps only the last one, so a lookup and its ``nearest`` share it)."""
        vec = self._memo.get(text)
        if vec is None:
            vec = self.embedder.encode([text])[0]
            if self.path == "real":
                self._memo = {text: vec}
            else:
                self._memo[text] = vec
        return vec

    # -- the real GPTCache store -----------------------------------------------------

    def _store(self) -> Any:
        if self._cache is not None:
            return self._cache
        from gptcache import Cache, Config
        from gptcache.manager import CacheBase, VectorBase, get_data_manager
        from gptcache.processor.pre import get_prompt

        self._tmp = tempfile.mkdtemp(prefix="cacheeval-gptcache-shared-")
        sql_url = "sqlite://" if self.sqlite_in_memory else f"sqlite:///{self._tmp}/cache.db"
        self._evaluation = _make_recording_evaluation()
        self._data_manager = get_data_manager(
            CacheBase("sqlite", sql_url=sql_url),
            VectorBase(
                "faiss", dimension=self.embedder.dim, index_path=f"{self._tmp}/faiss.index", top_k=1
            ),  # fmt: skip
            max_size=CAPACITY,
        )
        cache = Cache()
        with _gptcache_lock:
            cache.init(
                pre_embedding_func=get_prompt,
                embedding_func=lambda data, **_: self.vector(data),
                data_manager=self._data_manager,
                similarity_evaluation=self._evaluation,
                config=Config(similarity_threshold=self.threshold),
            )
        self._cache = cache
        return cache

    @property
    def sqlite_path(self) -> Path | None:
        """The SQLite file of the real store (None before the first put or in memory)."""
        if self._tmp is None or self.sqlite_in_memory:
            return None
        return Path(self._tmp) / "cache.db"

    def stored_questions(self) -> int:
        """Rows in the real store's ``gptcache_question`` table, read with sqlite3."""
        path = self.sqlite_path
        if path is None:
            raise RuntimeError("no SQLite file: nothing stored yet, or sqlite_in_memory")
        with sqlite3.connect(path) as db:
            (count,) = db.execute("SELECT COUNT(*) FROM gptcache_question").fetchone()
        return int(count)

    # -- SharedCache ----------------------------------------------------------------

    def put(self, request: Request, answer_id: str) -> None:
        text = embed_text(request, self.embed)
        if self.path == "fast":
            from gptcache.manager.data_manager import normalize

            self._ids.append(answer_id)
            self._rows.append(normalize(self.vector(text)).astype("float32"))
            self._matrix = None
            return
        from gptcache.adapter.api import put

        cache = self._store()
        with _gptcache_lock:
            put(text, answer_id, cache_obj=cache)

    def lookup(self, request: Request) -> tuple[str | None, float]:
        text = embed_text(request, self.embed)
        if self.path == "fast":
            found, rank = self._top1(text)
            if found is None:
                return None, 0.0
            return (found if gptcache_hit(rank, self.threshold) else None), rank / MAX_DISTANCE
        from gptcache.adapter.api import get

        cache = self._store()
        with _gptcache_lock:
            self._evaluation.last_rank = None
            got = get(text, cache_obj=cache)
            rank = self._evaluation.last_rank
        score = 0.0 if rank is None else rank / MAX_DISTANCE
        return (None if got is None else str(got)), score

    def nearest(self, request: Request) -> tuple[str | None, float]:
        """The top-1 entry and its score, whatever the threshold."""
        text = embed_text(request, self.embed)
        if self.path == "fast":
            found, rank = self._top1(text)
            return found, rank / MAX_DISTANCE
        self._store()
        with _gptcache_lock:
            results = self._data_manager.search(self.vector(text), top_k=1) or []
            for result in results:
                data = self._data_manager.get_scalar_data(result)
                if data is None:
                    continue
                rank = self._evaluation.evaluation({}, {"search_result": result})
                return str(data.answers[0].answer), float(rank) / MAX_DISTANCE
        return None, 0.0

    def _top1(self, text: str) -> tuple[str | None, float]:
        """Fast path: the first stored vector at the smallest squared L2 distance
        from the normalised query, and GPTCache's rank of that distance."""
        import numpy as np
        from gptcache.manager.data_manager import normalize

        if not self._ids:
            return None, 0.0
        if self._matrix is None:
            self._matrix = np.stack(self._rows)
            self._norms = np.einsum("ij,ij->i", self._matrix, self._matrix)
        assert self._norms is not None
        q = normalize(self.vector(text)).astype("float32")
        dist = self._norms + float(q @ q) - 2.0 * (self._matrix @ q)
        best = int(np.argmin(dist))
        exact = float(np.sum((self._matrix[best] - q) ** 2))  # faiss's direct form
        rank = self._evaluation_rank(exact)
        return self._ids[best], rank

    def _evaluation_rank(self, distance: float) -> float:
        if self._evaluation is None:
            self._evaluation = _make_recording_evaluation()
        return float(self._evaluation.evaluation({}, {"search_result": (distance, None)}))

    def close(self) -> None:
        """Close the data manager and remove the temporary directory."""
        if self._data_manager is not None:
            try:
                self._data_manager.close()
            finally:
                engine = getattr(getattr(self._data_manager, "s", None), "_engine", None)
                if engine is not None:
                    engine.dispose()
        if self._cache is not None:
            self._cache.data_manager = _ClosedDataManager()
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
        self._cache = self._data_manager = self._tmp = None
        self._ids, self._rows, self._matrix, self._norms = [], [], None, None
