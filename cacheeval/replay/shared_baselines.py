"""Reference shared caches for ``cacheeval replay`` (see :class:`~cacheeval.cache.SharedCache`).

* ``always_miss`` never serves: CHR 0, FHR 0.
* ``exact_match`` serves an entry whose whole request is identical after
  normalisation (:meth:`~cacheeval.schema.Request.key`: query, prior turns,
  system prompt, tools); the first stored one when several are. Score 1.0 on
  a hit, 0.0 otherwise.
* ``always_hit`` serves on every lookup (once anything is stored): the entry
  most similar to the request by word-set Jaccard similarity of the whole
  request text, ``|A & B| / |A | B|`` over lower-cased word tokens (ties: the
  first stored; the first stored when nothing shares a word). The score is
  that similarity, so its P-CHR curve is a lexical-retrieval baseline.

Standard library only.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from typing import Any

from ..schema import Request, RequestKey

_WORD = re.compile(r"\w+")


def words(request: Request) -> frozenset[str]:
    """The lower-cased word tokens of the whole request (system prompt, turns, query).

    >>> sorted(words(Request("What is 2+2?", system_prompt="Be brief.")))
    ['2', 'be', 'brief', 'is', 'what']
    """
    return frozenset(_WORD.findall(request.text().casefold()))


class SharedAlwaysMiss:
    """Never serve."""

    name = "always_miss"

    def put(self, request: Request, answer_id: str) -> None:
        pass

    def lookup(self, request: Request) -> tuple[str | None, float]:
        return None, 0.0


class SharedExactMatch:
    """Serve a stored request identical after normalisation (first stored wins).

    >>> c = SharedExactMatch()
    >>> c.put(Request("Capital of France?"), "e1")
    >>> c.lookup(Request("capital of  france?")), c.lookup(Request("Capital of Spain?"))
    (('e1', 1.0), (None, 0.0))
    """

    name = "exact_match"

    def __init__(self) -> None:
        self._entries: dict[RequestKey, str] = {}

    def put(self, request: Request, answer_id: str) -> None:
        self._entries.setdefault(request.key(), answer_id)

    def lookup(self, request: Request) -> tuple[str | None, float]:
        found = self._entries.get(request.key())
        return (found, 1.0) if found is not None else (None, 0.0)


class SharedAlwaysHit:
    """Serve the lexically nearest entry on every lookup (module docstring).

    >>> c = SharedAlwaysHit()
    >>> c.put(Request("How do I reset my password?"), "e1")
    >>> c.put(Request("What is the capital of France?"), "e2")
    >>> c.lookup(Request("what is the capital of Spain"))  # 5 shared of 7 distinct words
    ('e2', 0.7142857142857143)
    >>> c.lookup(Request("zzz"))
    ('e1', 0.0)
    """

    name = "always_hit"

    def __init__(self) -> None:
        self._ids: list[str] = []
        self._sizes: list[int] = []
        self._postings: dict[str, list[int]] = {}

    def put(self, request: Request, answer_id: str) -> None:
        index = len(self._ids)
        tokens = words(request)
        self._ids.append(answer_id)
        self._sizes.append(len(tokens))
        for t in tokens:
            self._postings.setdefault(t, []).append(index)

    def lookup(self, request: Request) -> tuple[str | None, float]:
        if not self._ids:
            return None, 0.0
        tokens = words(request)
        shared: Counter[int] = Counter()
        for t in tokens:
            postings = self._postings.get(t)
            if postings:
                shared.update(postings)
        best, best_sim = 0, 0.0
        for i, inter in shared.items():
            sim = inter / (len(tokens) + self._sizes[i] - inter)
            if sim > best_sim or (sim == best_sim and i < best):
                best, best_sim = i, sim
        return self._ids[best], best_sim


#: Shared baseline name -> factory building a fresh, empty cache.
SHARED_BASELINES: dict[str, Callable[[], Any]] = {
    "always_miss": SharedAlwaysMiss,
    "always_hit": SharedAlwaysHit,
    "exact_match": SharedExactMatch,
}


def make_shared_baseline(name: str) -> Any:
    """A fresh instance of the named shared baseline; ValueError naming the choices."""
    try:
        return SHARED_BASELINES[name]()
    except KeyError:
        raise ValueError(
            f"unknown baseline {name!r} (expected one of {', '.join(SHARED_BASELINES)})"
        ) from None
