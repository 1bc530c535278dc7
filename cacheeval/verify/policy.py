"""Never-cache policy rows.

Payload::

    {"kind": "policy",
     "policy": "creative" | "cross_user" | "personalized" | "mutation" | "time_sensitive",
     "reason": "why this request must not be served from a cache",
     "call_a": {...} | null, "call_b": {...} | null}     # tool policies only

A policy row is MISS whatever the similarity of its two sides. The checker
insists that the row's method is ``policy_no_cache`` and that the named
policy is a known one, so a mislabelled row surfaces as a disagreement.

The two tool policies are not the payload's to claim: they come from the tool
definitions (see :mod:`cacheeval.verify.tool`). A ``mutation`` or
``time_sensitive`` payload must carry the calls of both sides (``call_a``,
``call_b``; null for a side that makes no call), each call must name a tool
offered on its side whose definition carries a ``policy``, and the payload's
policy must be the strongest never-cache policy among the called tools
(``mutation`` before ``time_sensitive``). A payload claiming a tool policy
that no called tool has is undecided.
"""

from __future__ import annotations

from ..schema import MISS, POLICY_NO_CACHE, Row
from .result import Check
from .tool import NEVER_CACHE, called_policies, never_cache

POLICIES = ("creative", "cross_user", "personalized", *NEVER_CACHE)


def check(row: Row) -> Check:
    p = row.verification_payload or {}
    policy = p.get("policy")
    if policy not in POLICIES:
        return Check(None, f"unknown policy {policy!r} (expected one of {', '.join(POLICIES)})")
    if not isinstance(p.get("reason"), str) or not p["reason"].strip():
        return Check(None, "policy payload needs a non-empty reason")
    if row.verification_method != POLICY_NO_CACHE:
        return Check(None, f"policy payload on a {row.verification_method!r} row")
    if policy in NEVER_CACHE:
        problem = _tool_policy_problem(row, p, policy)
        if problem:
            return Check(None, problem)
    return Check(MISS, f"never cached by policy: {policy}")


def _tool_policy_problem(row: Row, p: dict[str, object], policy: str) -> str | None:
    """Why the tool definitions do not make this a ``policy`` row (None: they do)."""
    if "call_a" not in p or "call_b" not in p:
        return f"a {policy} payload needs call_a and call_b (null for no call)"
    policies, problem = called_policies(row, p)
    if problem:
        return problem
    strongest = never_cache(policies)
    if strongest is None:
        return f"the payload claims {policy}, but no called tool is a never-cache tool"
    if strongest[0] != policy:
        return (
            f"the payload claims {policy}, but {strongest[1]}'s definition makes this "
            f"a {strongest[0]} row"
        )
    return None
