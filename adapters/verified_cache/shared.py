"""The verified cache as a shared cache for ``cacheeval replay``.

One :class:`~adapters.verified_cache.cache.VerifiedCache` holds every entry:
``put`` is its own ``put`` (the answer stored is the replay's answer id; a
request the policy tier refuses is not stored), ``lookup`` its own ``lookup``
(policy, exact match, top-k embedding recall gate, verifier), returning the
served answer id and P(HIT). ``nearest`` (untimed, for the replay's P-CHR
curve) is the same lookup with the threshold lowered to 0 and every differing
span embedded: the first candidate above the recall gate and its exact P(HIT);
None when the policy tier refuses or no candidate clears the gate.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from cacheeval.metrics.sweep import OperatingPoint
from cacheeval.schema import Request

from .cache import Resources, VerifiedCache
from .model import Verifier


class VerifiedShared:
    """The verified cache behind the :class:`~cacheeval.cache.SharedCache` protocol.

    Example::

        cache = VerifiedShared()
        cache.put(Request("Solve x + 2 = 8"), "e1")
        cache.lookup(Request("solve x+2=8"))      # ("e1", 1.0): exact tier
        cache.lookup(Request("Solve a + 2 = 8"))  # (None, ...): the verifier refuses
    """

    name = "verified-cache (shared)"

    def __init__(
        self,
        *,
        operating_point: OperatingPoint | None = None,
        gate_threshold: float | None = None,
        top_k: int = 3,
        model_dir: str | Path | None = None,
    ) -> None:
        verifier = Verifier.load(Path(model_dir)) if model_dir is not None else None
        self.cache = VerifiedCache(
            resources=Resources(verifier=verifier),
            operating_point=operating_point,
            gate_threshold=gate_threshold,
            top_k=top_k,
        )
        self.refused_puts = 0

    def prepare(self, requests: Sequence[Request]) -> None:
        """Load the verifier and warm the embedder (nothing is embedded ahead)."""
        _ = self.cache.resources.verifier
        self.cache.resources.encode(["warm-up"])

    def put(self, request: Request, answer_id: str) -> None:
        if not self.cache.put(request, answer_id).stored:
            self.refused_puts += 1

    def lookup(self, request: Request) -> tuple[str | None, float]:
        decision = self.cache.lookup(request)
        return decision.answer, min(max(decision.score, 0.0), 1.0)

    def nearest(self, request: Request) -> tuple[str | None, float]:
        point, lazy = self.cache.operating_point, self.cache.lazy_spans
        # only the threshold of the point is read by the lookup: 0 serves every candidate
        self.cache.operating_point = dataclasses.replace(self.cache.point, threshold=0.0)
        self.cache.lazy_spans = False
        try:
            decision = self.cache.lookup(request)
        finally:
            self.cache.operating_point, self.cache.lazy_spans = point, lazy
        if not decision.hit:
            return None, 0.0
        return decision.answer, min(max(decision.score, 0.0), 1.0)

    def __len__(self) -> int:
        return len(self.cache)

    def close(self) -> None:
        self.cache.clear()
