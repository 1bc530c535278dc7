"""The verification engine: re-derive a row's binary label from its payload.

Every row names a ``verification_method`` (the public name of the check) and
carries a ``verification_payload`` whose ``"kind"`` selects the checker
module below. Each checker module exposes ``check(row) -> Check`` and asks one
question: is the answer cached for query_a a correct, complete answer to
query_b? Checker modules import their own dependencies (sympy, jsonschema)
lazily, so importing this package stays cheap.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from ..schema import DETERMINISTIC_METHODS, JUDGE_METHODS, RUBRIC_METHODS, Row

#: payload "kind" -> module (relative to this package) that checks it.
CHECKERS: dict[str, str] = {
    "alias_set": "alias",  # exact match against accepted-answer sets (qa_factual, multilingual)
    "rubric": "rubric",  # three atomic, pattern-checked criteria per side (qa_open, conversational)
    "policy": "policy",  # never-cache policy rows (creative, personalized, tool mutations)
    "sympy": "math",  # sympy solve/simplify + numeric tolerance (math)
    "code": "code",  # sandboxed tests + AST comparison (code)
    "tool_call": "tool",  # JSON-schema validation + canonical call forms (tool)
    "multi_turn": "multi_turn",  # final message + context-equivalence (multi_turn)
}


@dataclass(frozen=True, slots=True)
class Check:
    """Outcome of verifying one row.

    ``binary`` is the re-derived label (HIT/MISS) or None when the checker
    could not decide; ``detail`` says why, briefly.
    """

    binary: str | None
    detail: str


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
    module_name = CHECKERS.get(kind)
    if module_name is None:
        return Check(None, f"no checker for payload kind {kind!r}")
    try:
        module = importlib.import_module(f"{__name__}.{module_name}")
        result: Check = module.check(row)
    except Exception as e:  # a checker bug must surface as a disagreement, not a crash
        return Check(None, f"checker {kind!r} raised {type(e).__name__}: {e}")
    return result
