"""Rubric check: three atomic criteria per side, each tied to a pattern.

Payload::

    {"kind": "rubric",
     "criteria_a": [{"criterion": "names at least one advantage", "pattern": "cheap|fast"}, ...],
     "criteria_b": [{"criterion": "...", "pattern": "..."}, ...]}

Each list holds exactly three criteria: what a correct answer to that side
must contain. ``pattern`` is a case-insensitive regular expression that a
text meeting the criterion matches. HIT iff the cached answer
(``expected_answer_a``) meets every criterion of query_b. The row is
inconsistent (undecided) when an expected answer fails its own side's
criteria. This is the rubric tier, not the deterministic one: the criteria are
a curator's judgement, only their application is mechanical.
"""

from __future__ import annotations

import re

from ..schema import HIT, MISS, Row
from .result import Check


def _failed(answer: str, criteria: list[dict[str, str]]) -> list[str]:
    return [
        c["criterion"]
        for c in criteria
        if not re.search(c["pattern"], answer, flags=re.IGNORECASE | re.UNICODE)
    ]


def _valid(criteria: object) -> bool:
    return (
        isinstance(criteria, list)
        and len(criteria) == 3
        and all(
            isinstance(c, dict)
            and isinstance(c.get("criterion"), str)
            and isinstance(c.get("pattern"), str)
            for c in criteria
        )
    )


def check(row: Row) -> Check:
    p = row.verification_payload or {}
    crit_a, crit_b = p.get("criteria_a"), p.get("criteria_b")
    if not _valid(crit_a) or not _valid(crit_b):
        return Check(None, "rubric payload needs three {criterion, pattern} items per side")
    assert isinstance(crit_a, list) and isinstance(crit_b, list)
    if row.expected_answer_a is None or row.expected_answer_b is None:
        return Check(None, "expected answers are missing")
    own_a = _failed(row.expected_answer_a, crit_a)
    if own_a:
        return Check(None, f"expected_answer_a fails its own criteria: {own_a}")
    own_b = _failed(row.expected_answer_b, crit_b)
    if own_b:
        return Check(None, f"expected_answer_b fails its own criteria: {own_b}")
    failed = _failed(row.expected_answer_a, crit_b)
    if failed:
        return Check(MISS, f"cached answer misses query_b criteria: {failed}")
    return Check(HIT, "cached answer meets all of query_b's criteria")
