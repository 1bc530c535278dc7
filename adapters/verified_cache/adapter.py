"""The verified cache on benchmark rows: a ``Pair -> Verdict`` adapter for the
harness.

The adapter (:class:`VerifiedCacheAdapter`) gives every pair its own cache. In
``prepare`` it ``put``s side a's request with a stand-in answer (in production that
entry was stored when its answer was first generated; put latencies are kept
in ``put_latencies_ms``); the timed call is ``lookup(side b)``: policy, exact
match, embedding query b, recall gate, features, verifier.

The leakage-free training pipeline built on the same code path lives in
:mod:`.training`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from cacheeval.metrics.sweep import OperatingPoint
from cacheeval.schema import Pair, Verdict

from .cache import Resources, VerifiedCache
from .model import Verifier

if TYPE_CHECKING:
    from adapters.embedders import Embedder


# --- the Pair -> Verdict adapter -------------------------------------------------------


class VerifiedCacheAdapter:
    """The verified cache as a harness cache (one isolated cache per row).

    Example::

        from adapters.verified_cache.adapter import VerifiedCacheAdapter
        from cacheeval.run.harness import evaluate
        report = evaluate(VerifiedCacheAdapter(), rows, cache_name="verified-cache")
    """

    name = "verified-cache"
    #: Everything runs locally on the CPU: no tier calls a paid API.
    cost_per_call_usd: dict[str, float] = {
        "policy": 0.0,
        "exact": 0.0,
        "embedding": 0.0,
        "verifier": 0.0,
    }

    def __init__(
        self,
        *,
        verifier: Verifier | None = None,
        embedder: Embedder | None = None,
        embedder_name: str | None = None,
        operating_point: OperatingPoint | None = None,
        gate_threshold: float | None = None,
        model_dir: str | Path | None = None,
    ) -> None:
        if verifier is None and model_dir is not None:
            verifier = Verifier.load(Path(model_dir))
        self.resources = Resources(
            verifier=verifier, embedder=embedder, embedder_name=embedder_name
        )
        #: Serve at this point (default: the model's certified one, ``model/meta.json``).
        self.operating_point = operating_point
        self.gate_threshold = gate_threshold
        self._caches: dict[str, VerifiedCache] = {}
        self._refused: dict[str, str] = {}
        self.put_latencies_ms: list[float] = []

    def _new_cache(self) -> VerifiedCache:
        return VerifiedCache(
            resources=self.resources,
            operating_point=self.operating_point,
            gate_threshold=self.gate_threshold,
        )

    def prepare(self, pairs: Sequence[Pair]) -> None:
        """Load the model, warm the embedder, and put side a of every pair."""
        _ = self.resources.verifier  # load before timing anything
        self.resources.encode(["warm-up"])
        for pair in pairs:
            self._store(pair)

    def _store(self, pair: Pair) -> None:
        cache = self._new_cache()
        t0 = time.perf_counter_ns()
        # The stored answer's text never enters a decision: a stand-in will do.
        result = cache.put(pair.a, f"answer {pair.id}")
        self.put_latencies_ms.append((time.perf_counter_ns() - t0) / 1e6)
        self._caches[pair.id] = cache
        if not result.stored:
            self._refused[pair.id] = result.reason

    def __call__(self, pair: Pair) -> Verdict:
        cache = self._caches.get(pair.id)
        if cache is None:  # called without prepare(): store side a now (untimed by design)
            self._store(pair)
            cache = self._caches[pair.id]
        decision = cache.lookup(pair.b)
        tier = decision.tier
        if not decision.hit and pair.id in self._refused and tier != "policy":
            tier = "policy"  # side a was never stored: refused at put time
        score = min(max(decision.score, 0.0), 1.0)
        confidence = score if decision.hit else 1.0 - score
        return Verdict(is_hit=decision.hit, confidence=confidence, tier_used=tier, score=score)

    def close(self) -> None:
        self._caches.clear()
        self._refused.clear()
