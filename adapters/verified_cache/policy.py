"""The policy tier: requests a cache must never answer from memory, whatever the
similarity of the stored request.

Deterministic rules on the request itself (query, system prompt, offered tools),
never on labels or benchmark metadata. The rules on one request are the core's
(:mod:`cacheeval.verify.never_cache`, the one never-cache detector, which
``cacheeval stress`` asks too); this module adds ``declared`` (it needs the
request's analysis) and the pair rule ``cross_user``:

``mutation``, ``time_sensitive``, ``creative``, ``personal_data``
    The core's rules on one request, as :mod:`cacheeval.verify.never_cache`
    defines them.
``declared``
    The cache's own version of the core's rule of that name, from its request
    model: the offered tool the query most plausibly calls (the one whose
    definition shares most content words with it, :func:`~.features.tool_intent`,
    units and currencies included; the core reads names and descriptions) declares
    ``"policy": "mutation"`` or ``"policy": "time_sensitive"`` in its definition:
    the application that wrote the tool says its result must never be replayed
    (a device action such as an alarm or the lights, live listings or
    availability). The verdict carries the declared policy as its rule.
``cross_user``
    The stored request was made under another system prompt (another user, app
    or persona): a cached answer never crosses that boundary. The cache keys its
    entries by system prompt, so such an entry is never even a candidate.

Every rule returns a :class:`PolicyVerdict` whose ``reason`` names what fired.
"""

from __future__ import annotations

from collections.abc import Callable

from cacheeval.schema import Request
from cacheeval.verify.never_cache import (
    ALLOWED,
    MUTATING_VERBS,
    PolicyVerdict,
    asks,
    creative,
    declared_policy,
    mutating_tools,
    mutation,
    personal_data,
    time_sensitive,
    tool_name,
)

from .features import Side, analyze

RULES: tuple[str, ...] = ("mutation", "time_sensitive", "creative", "personal_data", "cross_user")

__all__ = [
    "ALLOWED",
    "MUTATING_VERBS",
    "RULES",
    "PolicyVerdict",
    "asks",
    "check",
    "creative",
    "declared",
    "mutating_tools",
    "mutation",
    "pair_policy",
    "personal_data",
    "request_policy",
    "scope_key",
    "time_sensitive",
]


# --- declared by the tool ------------------------------------------------------------

#: Declared tool policies that forbid replaying a call's result.
NEVER_CACHE_POLICIES = frozenset({"mutation", "time_sensitive"})


def declared(request: Request, side: Side | None = None) -> PolicyVerdict:
    """Never serve a request whose most plausible tool declares a never-cache policy.

    Only the tool the query calls counts: a bundle that offers ``set_alarm`` beside
    ``convert_units`` still lets "Convert 10 km to miles" be cached. ``side``: the
    request already analysed (:func:`~.features.analyze`), else it is analysed
    here - only when some offered tool declares such a policy."""
    declared_by = {tool_name(t): declared_policy(t) for t in request.tools or ()}
    if not NEVER_CACHE_POLICIES & set(declared_by.values()):
        return ALLOWED
    name = (side or analyze(request)).tool_intent
    policy = declared_by.get(name, "")
    if policy in NEVER_CACHE_POLICIES:
        return PolicyVerdict(False, policy, f"calls {name}, whose definition declares {policy}")
    return ALLOWED


# --- entry points -----------------------------------------------------------------------

#: A rule about one request. Every rule takes the request's analysis
#: (:func:`~.features.analyze`) when the caller already has it, so no rule analyses
#: a request twice; a rule that reads it and gets None analyses the request itself.
RequestRule = Callable[[Request, Side | None], PolicyVerdict]

_REQUEST_RULES: tuple[RequestRule, ...] = (
    lambda request, side: mutation(request),
    lambda request, side: time_sensitive(request),
    declared,
    lambda request, side: creative(request),
    lambda request, side: personal_data(request),
)


def request_policy(request: Request | str, side: Side | None = None) -> PolicyVerdict:
    """May this request be answered from (or stored in) a cache at all? ``side``:
    the request already analysed (see :data:`RequestRule`)."""
    req = Request.of(request)
    for rule in _REQUEST_RULES:
        verdict = rule(req, side)
        if not verdict.allowed:
            return verdict
    return ALLOWED


def scope_key(request: Request) -> str:
    """The scope a cached answer lives in: the system prompt, whitespace-normalised.
    Requests under different system prompts (users, apps, personas) never share
    cached answers."""
    return " ".join((request.system_prompt or "").split())


def pair_policy(stored: Request, new: Request) -> PolicyVerdict:
    """May an answer stored for ``stored`` be served for ``new``? (Both requests
    must also pass :func:`request_policy`.)"""
    if scope_key(stored) != scope_key(new):
        return PolicyVerdict(
            False, "cross_user", "stored under another system prompt (user, app or persona)"
        )
    return ALLOWED


def check(stored: Request, new: Request, sides: tuple[Side, Side] | None = None) -> PolicyVerdict:
    """Every policy rule for serving ``stored``'s answer to ``new`` (``sides``: the
    two requests already analysed, stored first)."""
    side_stored, side_new = sides or (None, None)
    for verdict in (
        request_policy(new, side_new),
        request_policy(stored, side_stored),
        pair_policy(stored, new),
    ):
        if not verdict.allowed:
            return verdict
    return ALLOWED
