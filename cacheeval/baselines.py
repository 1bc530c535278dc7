"""Reference caches every report can be read against.

* ``always_miss`` never serves: FHR 0 (the floor), recall 0.
* ``always_hit`` always serves: recall 1 (the ceiling) and the worst FHR, 1.
* ``exact_match`` serves only a verbatim repeat of the whole request: query,
  prior turns, system prompt and tools, each compared after collapsing
  whitespace and case-folding (tier ``exact``).

Each baseline also gives a score (1.0 = would serve, 0.0 = would not), so the
threshold-free block of a report is filled for them too.
"""

from __future__ import annotations

from collections.abc import Callable

from .cache import Cache
from .schema import Pair, Verdict


class AlwaysMiss:
    """Never serve from the cache."""

    name = "always_miss"

    def __call__(self, pair: Pair) -> Verdict:
        return Verdict(is_hit=False, confidence=1.0, tier_used="baseline", score=0.0)


class AlwaysHit:
    """Always serve from the cache."""

    name = "always_hit"

    def __call__(self, pair: Pair) -> Verdict:
        return Verdict(is_hit=True, confidence=1.0, tier_used="baseline", score=1.0)


class ExactMatch:
    """Serve only when the two whole requests are identical after normalisation."""

    name = "exact_match"

    def __call__(self, pair: Pair) -> Verdict:
        same = pair.a.key() == pair.b.key()
        return Verdict(is_hit=same, confidence=1.0, tier_used="exact", score=1.0 if same else 0.0)


#: Baseline name -> factory building a fresh cache.
BASELINES: dict[str, Callable[[], Cache]] = {
    "always_miss": AlwaysMiss,
    "always_hit": AlwaysHit,
    "exact_match": ExactMatch,
}


def make_baseline(name: str) -> Cache:
    """A fresh instance of the named baseline; ValueError naming the choices."""
    try:
        factory = BASELINES[name]
    except KeyError:
        raise ValueError(
            f"unknown baseline {name!r} (expected one of {', '.join(BASELINES)})"
        ) from None
    return factory()
