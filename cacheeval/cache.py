"""The interface a cache under test implements.

A cache is shown exactly what production would show it, a :class:`~cacheeval.schema.Pair`
of requests, and answers with a :class:`~cacheeval.schema.Verdict`. It never
receives a label, an expected answer, a rationale, a verification payload or
the row's domain; the harness keeps those in a truth table the cache has no
reference to, and scores against it after the calls.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from .schema import Pair, Request, Verdict


@runtime_checkable
class Cache(Protocol):
    """Anything callable as ``cache(pair) -> Verdict``: a function or an object.

    Optional members, used when present (a Protocol cannot mark members
    optional, so they are documented here rather than declared):

    * ``prepare(pairs: Sequence[Pair]) -> None`` - called once, untimed, with
      every pair of the run before the first call (load models, embed in
      batch). It gets its own immutable copy: mutating or emptying what it is
      given changes nothing in the run.
    * ``close() -> None`` - called once at the end, always.
    * ``cost_per_call_usd: Mapping[str, float]`` - dollars per call by tier.
    * ``name: str`` - a default for the report's cache name.

    >>> from cacheeval import Pair, Request, Verdict
    >>> def exact(pair: Pair) -> Verdict:
    ...     same = pair.a.key() == pair.b.key()
    ...     return Verdict(is_hit=same, tier_used="exact", score=float(same))
    >>> isinstance(exact, Cache)
    True
    >>> exact(Pair("p1", Request("What is 2+2?"), Request("what is  2+2?"))).is_hit
    True
    """

    def __call__(self, pair: Pair, /) -> Verdict: ...


@runtime_checkable
class SharedCache(Protocol):
    """One store shared by many requests, as a production cache runs: ``put``
    stores a request under an answer id, ``lookup`` retrieves among everything
    stored (used by ``cacheeval replay``, see :mod:`cacheeval.replay.engine`).

    ``lookup`` returns ``(answer_id, score)``: the id of the entry the cache
    serves, or None when it serves nothing, and a score (higher = more willing
    to serve; for a served entry, the score it was served with). Like
    :class:`Cache`, a shared cache only ever receives
    :class:`~cacheeval.schema.Request` s and the opaque answer ids the replay
    gives it: never a row, a label or a domain.

    Optional members, used when present:

    * ``prepare(requests: Sequence[Request]) -> None`` - called once, untimed,
      with every request of the run (entries and lookups, in no meaningful
      order) before the first ``put``: load models, embed in batch.
    * ``nearest(request) -> tuple[str | None, float]`` - the entry the cache
      would serve if its own threshold were lowered as far as it goes, with
      its score (untimed; used only for the P-CHR curve of lookups that did
      not fire; ``(None, 0.0)`` when the cache has no candidate at all).
    * ``close() -> None`` - called once at the end, always.
    * ``name: str`` - a default for the report's cache name.

    >>> from cacheeval import Request
    >>> class Exact:
    ...     def __init__(self) -> None:
    ...         self.entries: dict = {}
    ...     def put(self, request: Request, answer_id: str) -> None:
    ...         self.entries.setdefault(request.key(), answer_id)
    ...     def lookup(self, request: Request) -> tuple[str | None, float]:
    ...         found = self.entries.get(request.key())
    ...         return found, float(found is not None)
    >>> cache = Exact()
    >>> isinstance(cache, SharedCache)
    True
    >>> cache.put(Request("What is 2+2?"), "e1")
    >>> cache.lookup(Request("what is  2+2?")), cache.lookup(Request("What is 3+3?"))
    (('e1', 1.0), (None, 0.0))
    """

    def put(self, request: Request, answer_id: str, /) -> None: ...

    def lookup(self, request: Request, /) -> tuple[str | None, float]: ...
