"""The plain embedding-cosine cache: the reference every learned cache is read
against in the external-validity report (``cacheeval external``).

``MiniLMCosine`` serves when the cosine of the two queries' MiniLM embeddings
(fp32 ONNX, :mod:`adapters.embedders`) is at least ``threshold`` - 0.60 by
default, the cosine GPTCache's ``similarity_threshold=0.80`` amounts to (see
:mod:`adapters.gptcache_adapter`) - and reports the cosine itself as its
score, so the threshold-free metrics (and the recall at another cache's FHR)
are the cosine's own.

``prepare`` embeds every query of the run in batches. Embeddings are kept in a
small on-disk memo under the user cache directory (``embeddings/`` in
``$CACHEEVAL_CACHE_DIR``, default ``~/.cache/cacheeval``), keyed by the
embedder's version and the sha256 of each text, so re-running a report on the
same pair files does not embed them again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cacheeval.schema import Pair, Verdict
from cacheeval.support.layout import user_cache_dir

from .embedders import get_embedder, unit_cosine

if TYPE_CHECKING:
    import numpy as np

MEMO_DIR = user_cache_dir("embeddings")


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class DiskMemo:
    """text -> vector for one embedder, persisted as one ``.npz`` file (keys are
    the texts' sha256, so the file holds no text)."""

    def __init__(self, embedder: Any, directory: Path | None = MEMO_DIR) -> None:
        self.embedder = embedder
        tag = _digest(f"{embedder.name}|{embedder.version}")[:16]
        self.path = None if directory is None else directory / f"{embedder.name}-{tag}.npz"
        self._vectors: dict[str, np.ndarray] = {}
        self._dirty = False
        if self.path is not None and self.path.is_file():
            import numpy as np

            with np.load(self.path) as data:
                self._vectors = {k: data[k] for k in data.files}

    def vectors(self, texts: Sequence[str], batch: int = 256) -> list[np.ndarray]:
        """The vectors of ``texts`` (missing ones embedded in batches)."""
        keys = [_digest(t) for t in texts]
        missing = list(dict.fromkeys(t for t, k in zip(texts, keys, strict=True)
                                     if k not in self._vectors))  # fmt: skip
        for start in range(0, len(missing), batch):
            chunk = missing[start : start + batch]
            for t, v in zip(chunk, self.embedder.encode(chunk), strict=True):
                self._vectors[_digest(t)] = v
            self._dirty = True
        return [self._vectors[k] for k in keys]

    def save(self) -> None:
        if self.path is None or not self._dirty:
            return
        import numpy as np

        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp.npz")
        np.savez(tmp, **self._vectors)  # type: ignore[arg-type]
        tmp.replace(self.path)
        self._dirty = False


class MiniLMCosine:
    """Serve when the MiniLM cosine of the two queries is >= ``threshold``.

    Example::

        from adapters.cosine_baseline import MiniLMCosine
        from cacheeval.run.harness import evaluate
        report = evaluate(MiniLMCosine(), rows)
    """

    cost_per_call_usd: dict[str, float] = {"embedding": 0.0}

    def __init__(
        self,
        threshold: float = 0.60,
        embedder: str = "minilm-onnx",
        memo_dir: str | None = str(MEMO_DIR),
    ) -> None:
        self.threshold = float(threshold)
        self.embedder_name = embedder
        self.name = f"{embedder}-cosine"
        self._memo_dir = None if memo_dir is None else Path(memo_dir)
        self._memo: DiskMemo | None = None

    @property
    def memo(self) -> DiskMemo:
        if self._memo is None:
            self._memo = DiskMemo(get_embedder(self.embedder_name), self._memo_dir)
        return self._memo

    def prepare(self, pairs: Sequence[Pair]) -> None:
        """Embed every query of the run in batches (and keep them on disk)."""
        self.memo.vectors(list(dict.fromkeys(q for p in pairs for q in (p.a.query, p.b.query))))
        self.memo.save()

    def cosine(self, pair: Pair) -> float:
        va, vb = self.memo.vectors([pair.a.query, pair.b.query])
        return unit_cosine(va, vb)  # identical queries: 1.0 exactly, on any CPU

    def __call__(self, pair: Pair) -> Verdict:
        cos = self.cosine(pair)
        hit = cos >= self.threshold
        score = (cos + 1.0) / 2.0  # in [0, 1], monotone in the cosine
        return Verdict(
            is_hit=hit,
            confidence=score if hit else 1.0 - score,
            tier_used="embedding",
            score=score,
        )

    def close(self) -> None:
        if self._memo is not None:
            self._memo.save()
