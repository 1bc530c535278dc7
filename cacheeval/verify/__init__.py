"""The verification engine: re-derive a row's binary label from its payload.

Every row names a ``verification_method`` (the public name of the check) and
carries a ``verification_payload`` whose ``"kind"`` selects a checker of
:data:`CHECKERS`. Each checker module exposes ``check(row) -> Check`` and asks
one question: is the answer cached for query_a a correct, complete answer to
query_b? Checker modules import their own heavy dependencies (sympy,
jsonschema) inside the functions that need them, so importing this package
stays cheap.
"""

from __future__ import annotations

from collections.abc import Callable

from ..schema import DETERMINISTIC_METHODS, JUDGE_METHODS, RUBRIC_METHODS, Row
from . import alias, code, math, multi_turn, perturbation, policy, rubric, tool
from .result import Check

#: A checker: one row in, its re-derived label out.
Checker = Callable[[Row], Check]

#: payload "kind" -> the checker that re-derives the label.
CHECKERS: dict[str, Checker] = {
    "alias_set": alias.check,  # exact match against accepted-answer sets (qa_factual, multilingual)
    "rubric": rubric.check,  # three pattern-checked criteria per side (qa_open, conversational)
    "policy": policy.check,  # never-cache policy rows (creative, personalized, tool mutations)
    "sympy": math.check,  # sympy solve/simplify + numeric tolerance (math)
    "code": code.check,  # sandboxed tests + AST comparison (code)
    "tool_call": tool.check,  # JSON-schema validation + canonical call forms (tool)
    "multi_turn": multi_turn.check,  # final message + context-equivalence (multi_turn)
    "perturbation": perturbation.check,  # stress rows: a recorded edit of a user request
}

__all__ = ["CHECKERS", "Check", "Checker", "check_row", "tier_of"]


def tier_of(method: str | None) -> str:
    """The verification tier of a method: deterministic, rubric or judge."""
    if method in DETERMINISTIC_METHODS:
        return "deterministic"
    if method in RUBRIC_METHODS:
        return "rubric"
    if method in JUDGE_METHODS:
        return "judge"
    return "unknown"


def check_row(row: Row) -> Check:
    """Re-derive ``row``'s binary label with the checker its payload names."""
    payload = row.verification_payload
    if not isinstance(payload, dict) or "kind" not in payload:
        return Check(None, "verification_payload has no 'kind'")
    kind = payload["kind"]
    checker = CHECKERS.get(kind)
    if checker is None:
        return Check(None, f"no checker for payload kind {kind!r}")
    try:
        return checker(row)
    except Exception as e:  # a checker bug must surface as a disagreement, not a crash
        return Check(None, f"checker {kind!r} raised {type(e).__name__}: {e}")
