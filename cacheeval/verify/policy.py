"""Never-cache policy rows.

Payload::

    {"kind": "policy",
     "policy": "creative" | "cross_user" | "personalized" | "mutation" | "time_sensitive",
     "reason": "why this request must not be served from a cache"}

A policy row is MISS whatever the similarity of its two sides. Other keys (e.g.
the tool calls of a mutation row) may ride along for documentation. The checker
also insists that the row's method is ``policy_no_cache`` and that the named
policy is a known one, so a mislabelled row surfaces as a disagreement.
"""

from __future__ import annotations

from ..schema import MISS, POLICY_NO_CACHE, Row
from . import Check

POLICIES = ("creative", "cross_user", "personalized", "mutation", "time_sensitive")


def check(row: Row) -> Check:
    p = row.verification_payload or {}
    policy = p.get("policy")
    if policy not in POLICIES:
        return Check(None, f"unknown policy {policy!r} (expected one of {', '.join(POLICIES)})")
    if not isinstance(p.get("reason"), str) or not p["reason"].strip():
        return Check(None, "policy payload needs a non-empty reason")
    if row.verification_method != POLICY_NO_CACHE:
        return Check(None, f"policy payload on a {row.verification_method!r} row")
    return Check(MISS, f"never cached by policy: {policy}")
