"""``--keyed``: the key a cache should have had, around any cache.

A semantic cache that embeds the query alone serves the same question asked
under another user's system prompt, after other turns or with other tools:
its false hits there come from its key, not its threshold. :class:`Keyed`
wraps any pair cache and :class:`KeyedShared` any shared cache with the key
they should have had:

* **context**: never serve across different system prompts, prior turns or
  tool sets, compared exactly after canonicalisation (whitespace and case of
  texts, key order of tool definitions: :meth:`~cacheeval.schema.Request.key`
  without its query);
* **policy**: never serve what must not be cached - creative writing, live
  data, state changes, a signed-in user's data - by the verified cache's own
  policy rules (:func:`adapters.verified_cache.policy.request_policy` on each
  request), not a copy.

A refused pair is a MISS with score 0.0 (tier ``key`` or ``policy``), so the
threshold-free metrics see the key too; any other pair is decided by the
wrapped cache, its verdict and score kept as they are. On the command line it
is ``--keyed`` (``eval``, ``predict``, ``external``, ``replay``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from cacheeval.results.predictions import Prediction
from cacheeval.run.blockrun import CacheSpec
from cacheeval.schema import Pair, Request, Row, Verdict

#: The loaders ``--keyed`` names (the command line refers to them by name only:
#: the scoring core never imports the reference caches).
KEYED_LOADER = "adapters.keyed:load_keyed"
KEYED_SHARED_LOADER = "adapters.keyed:load_keyed_shared"
#: The tiers a refusal is reported under.
KEY_TIER = "key"
POLICY_TIER = "policy"


def context_key(request: Request) -> tuple[Any, ...]:
    """What must match besides the query: prior turns, system prompt and tools,
    canonicalised (:meth:`~cacheeval.schema.Request.key` less its query).

    >>> a, b = Request("Hi", None, " Be brief. "), Request("Yo", (), "be BRIEF.")
    >>> context_key(a) == context_key(b)
    True
    """
    return request.key()[1:]


def refusal(stored: Request, new: Request) -> tuple[str, str] | None:
    """``(tier, reason)`` when the key forbids serving ``stored``'s answer for
    ``new``, else None."""
    if context_key(stored) != context_key(new):
        return KEY_TIER, "the requests differ in system prompt, prior turns or tools"
    from .verified_cache.policy import request_policy

    # the never-cache rules of the verified cache, on each request; the
    # context comparison above is the key's own (its pair rule, cross_user,
    # compares system prompts alone)
    for request in (new, stored):
        verdict = request_policy(request)
        if not verdict.allowed:
            return POLICY_TIER, f"{verdict.rule}: {verdict.reason}"
    return None


def _name(cache: Any) -> str:
    name = getattr(cache, "name", None)
    if isinstance(name, str) and name:
        return name
    return str(getattr(cache, "__name__", type(cache).__name__))


class Keyed:
    """A pair cache behind the key (module docstring)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = f"{_name(inner)}+keyed"
        prices = getattr(inner, "cost_per_call_usd", None)
        if isinstance(prices, Mapping):
            self.cost_per_call_usd = {**prices, KEY_TIER: 0.0, POLICY_TIER: 0.0}
        if callable(getattr(inner, "prepare", None)):
            self.prepare = self._prepare
        if callable(getattr(inner, "close", None)):
            self.close = inner.close

    def _prepare(self, pairs: Sequence[Pair]) -> Any:
        return self.inner.prepare(pairs)

    def __call__(self, pair: Pair) -> Verdict:
        refused = refusal(pair.a, pair.b)
        if refused is not None:
            return Verdict(is_hit=False, confidence=1.0, tier_used=refused[0], score=0.0)
        verdict: Verdict = self.inner(pair)
        return verdict


class KeyedShared:
    """A shared cache behind the key: an entry is served only to a request
    with its context and no policy against it (module docstring)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = f"{_name(inner)}+keyed"
        self._stored: dict[str, Request] = {}
        if callable(getattr(inner, "prepare", None)):
            self.prepare = inner.prepare
        if callable(getattr(inner, "close", None)):
            self.close = inner.close
        if callable(getattr(inner, "nearest", None)):
            self.nearest = self._nearest

    def put(self, request: Request, answer_id: str) -> Any:
        self._stored.setdefault(answer_id, request)
        return self.inner.put(request, answer_id)

    def _keep(self, found: Any, request: Request) -> Any:
        answer, score = found
        stored = self._stored.get(answer) if isinstance(answer, str) else None
        if stored is not None and refusal(stored, request) is not None:
            return None, 0.0
        return found

    def lookup(self, request: Request) -> Any:
        return self._keep(self.inner.lookup(request), request)

    def _nearest(self, request: Request) -> Any:
        return self._keep(self.inner.nearest(request), request)


def keyed_predictions(rows: Sequence[Row], predictions: Sequence[Prediction]) -> list[Prediction]:
    """The predictions of the same cache behind the key, from its own (rows and
    predictions in the same order): a pair the key refuses becomes a MISS at
    score 0.0 under tier ``key`` or ``policy``; every other prediction is kept.
    The same decisions as running the cache wrapped in :class:`Keyed` (which
    defers every other pair to it), without running it again."""
    out = []
    for row, pred in zip(rows, predictions, strict=True):
        refused = refusal(row.request("a"), row.request("b"))
        if refused is None:
            out.append(pred)
        else:
            out.append(Prediction(pred.id, False, 1.0, 0.0, refused[0], pred.latency_ms, None))
    return out


def _inner_spec(kwargs: Mapping[str, Any]) -> CacheSpec:
    inner = dict(kwargs.get("inner") or {})
    return CacheSpec(**inner)


def load_keyed(module: str, class_name: str | None, kwargs: dict[str, Any]) -> Keyed:
    """A :class:`~cacheeval.run.blockrun.CacheSpec` loader: ``kwargs["inner"]``
    is the wrapped cache's spec (its fields)."""
    return Keyed(_inner_spec(kwargs).build())


def load_keyed_shared(module: str, class_name: str | None, kwargs: dict[str, Any]) -> KeyedShared:
    """:func:`load_keyed` for a shared cache (``replay``)."""
    return KeyedShared(_inner_spec(kwargs).build())


def keyed_spec(inner: CacheSpec, *, shared: bool = False) -> CacheSpec:
    """The spec of ``inner`` behind the key (what ``--keyed`` runs)."""
    return inner.wrapped_by(KEYED_SHARED_LOADER if shared else KEYED_LOADER)
