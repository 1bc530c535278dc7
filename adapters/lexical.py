"""A lexical cache: serve when the word sets of the two queries overlap enough.

The simplest non-embedding semantic cache, for the validity pool
(``scripts/run_validity.py``): the score is the Jaccard similarity
``|A & B| / |A | B|`` of the lower-cased word tokens of the two queries, and
the cache serves when it reaches ``threshold``. Standard library only.
"""

from __future__ import annotations

import re

from cacheeval.schema import Pair, Verdict

_WORD = re.compile(r"\w+")


def jaccard(a: str, b: str) -> float:
    """Word-set Jaccard similarity of two texts (1.0 for two empty ones).

    >>> jaccard("Sort a list?", "sort the list")
    0.5
    """
    wa, wb = set(_WORD.findall(a.lower())), set(_WORD.findall(b.lower()))
    if not wa and not wb:
        return 1.0
    return len(wa & wb) / len(wa | wb)


class TokenOverlap:
    """Serve when the queries' word-set Jaccard similarity is >= ``threshold``."""

    def __init__(self, threshold: float = 0.5) -> None:
        self.threshold = float(threshold)
        self.name = f"token-overlap@{self.threshold:g}"

    def __call__(self, pair: Pair) -> Verdict:
        s = jaccard(pair.a.query, pair.b.query)
        hit = s >= self.threshold
        return Verdict(is_hit=hit, confidence=s if hit else 1.0 - s, tier_used="lexical", score=s)
