"""The interface a cache under test implements.

A cache is shown exactly what production would show it, a :class:`~cacheeval.schema.Pair`
of requests, and answers with a :class:`~cacheeval.schema.Verdict`. It never
receives a label, an expected answer, a rationale, a verification payload or
the row's domain; the harness keeps those in a truth table the cache has no
reference to, and scores against it after the calls.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from .schema import Pair, Verdict


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
