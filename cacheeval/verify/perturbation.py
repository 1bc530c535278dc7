"""Stress rows: the label of a controlled edit of a user's request.

``cacheeval stress`` pairs each unlabelled request (side a) with a variant
(side b) made by one edit whose effect on the answer is known by construction
(:mod:`cacheeval.benches.stress`). Payload::

    {"kind": "perturbation",
     "perturbation": "city",            # the edit's kind (:data:`KINDS`), also the subcategory
     "family": "identity",              # noise | identity | context
     "field": "query",                  # query | system_prompt | context
     "turn": null,                      # the prior turn edited (field "context", kind turns_edit)
     "edit": null,                      # the identity kind applied inside that turn
     "start": 31, "end": 36,            # the changed span of side a's text
     "original": "Paris", "replacement": "Tokyo",
     "policy": null}                    # or {"rule": "creative", "reason": "..."}

The checker re-derives the label from the payload alone:

1. side b is side a with ``original`` at ``[start, end)`` replaced by
   ``replacement`` (or, for a context edit, the same query under the recorded
   system prompt or turns), and nothing else differs;
2. the edit is one its kind allows: a case, spacing or punctuation change keeps
   every character that carries meaning; a typo is one keyboard slip in a
   lower-case word of five letters or more outside quotes and code, that no
   curated list names; a swap exchanges two members of one curated class
   (:mod:`cacheeval.verify.stress_lexicon`) with the neighbours that class
   requires;
3. the label follows: a noise edit keeps the answer (HIT), an identity or
   context edit changes it (MISS);
4. the never-cache detector (:mod:`cacheeval.verify.never_cache`) is asked
   again on side a: when it refuses, the payload must name the same rule and
   the row is ``policy_no_cache`` (MISS whatever the edit); when it allows,
   the payload must carry no policy.

Anything else is undecided: the payload does not describe the row.
"""

from __future__ import annotations

from typing import Any

from ..schema import ADVERSARIAL, EQUIV, HIT, MISS, PARA_SAFE, POLICY_NO_CACHE, Row
from . import stress_lexicon as lex
from .never_cache import request_policy
from .perturbation_greetings import LOWERABLE_OPENERS
from .perturbation_guards import back_reference_problem, later_turn_problem
from .perturbation_numbers import is_year, number_shape
from .perturbation_rules import (
    ENTITY_KINDS,
    FRAME_SLOT,
    VALIDATORS,
    typo_target,
)
from .result import Check

__all__ = [
    "ENTITY_KINDS",
    "FAMILIES",
    "FRAME_SLOT",
    "KINDS",
    "LOWERABLE_OPENERS",
    "VALIDATORS",
    "check",
    "expected_binary",
    "family_of",
    "is_year",
    "number_shape",
    "typo_target",
]

FAMILIES: tuple[str, ...] = ("noise", "identity", "context")

#: kind -> (family, label). Noise keeps the answer, identity and context change it.
KINDS: dict[str, tuple[str, str]] = {
    # noise: the same request, typed differently
    "case_lower": ("noise", EQUIV),
    "case_upper": ("noise", EQUIV),
    "spacing": ("noise", EQUIV),
    "punct_end": ("noise", EQUIV),
    "punct_comma": ("noise", EQUIV),
    "typo_transpose": ("noise", EQUIV),
    "typo_drop": ("noise", EQUIV),
    "typo_double": ("noise", EQUIV),
    "typo_adjacent": ("noise", EQUIV),
    "greeting": ("noise", PARA_SAFE),
    "closer": ("noise", PARA_SAFE),
    "contraction": ("noise", PARA_SAFE),
    "expansion": ("noise", PARA_SAFE),
    "modal_swap": ("noise", PARA_SAFE),
    "spelling_variant": ("noise", PARA_SAFE),
    # identity: one answer-determining detail changed
    "number": ("identity", ADVERSARIAL),
    "year": ("identity", ADVERSARIAL),
    "number_word": ("identity", ADVERSARIAL),
    "city": ("identity", ADVERSARIAL),
    "country": ("identity", ADVERSARIAL),
    "first_name": ("identity", ADVERSARIAL),
    "language": ("identity", ADVERSARIAL),
    "translate_target": ("identity", ADVERSARIAL),
    "proglang": ("identity", ADVERSARIAL),
    "currency": ("identity", ADVERSARIAL),
    "unit": ("identity", ADVERSARIAL),
    "weekday": ("identity", ADVERSARIAL),
    "month": ("identity", ADVERSARIAL),
    "us_state": ("identity", ADVERSARIAL),
    "continent": ("identity", ADVERSARIAL),
    "celestial": ("identity", ADVERSARIAL),
    "software": ("identity", ADVERSARIAL),
    "cuisine": ("identity", ADVERSARIAL),
    "company": ("identity", ADVERSARIAL),
    "landmark": ("identity", ADVERSARIAL),
    "work": ("identity", ADVERSARIAL),
    "event": ("identity", ADVERSARIAL),
    "acronym": ("identity", ADVERSARIAL),
    "file_type": ("identity", ADVERSARIAL),
    "audience": ("identity", ADVERSARIAL),
    **{noun: ("identity", ADVERSARIAL) for noun in lex.NOUNS},
    "ordinal": ("identity", ADVERSARIAL),
    "direction": ("identity", ADVERSARIAL),
    "antonym": ("identity", ADVERSARIAL),
    "operator_frame": ("identity", ADVERSARIAL),
    "negation_remove": ("identity", ADVERSARIAL),
    "negation_add": ("identity", ADVERSARIAL),
    "comparison": ("identity", ADVERSARIAL),
    "question_focus": ("identity", ADVERSARIAL),
    "with_without": ("identity", ADVERSARIAL),
    # context: the same query under another user or after other turns (MISS by the
    # key, as in the benchmark: a prior turn's detail need not change every answer)
    "system_prompt_other": ("context", ADVERSARIAL),
    "turns_other": ("context", ADVERSARIAL),
    "turns_edit": ("context", ADVERSARIAL),
}


def family_of(kind: str) -> str:
    """The family of a perturbation kind ('noise', 'identity' or 'context').

    >>> family_of("typo_drop"), family_of("city"), family_of("turns_other")
    ('noise', 'identity', 'context')
    """
    return KINDS[kind][0]


def expected_binary(kind: str, policy: bool) -> str:
    """HIT for a noise edit of a request that may be cached, else MISS.

    >>> expected_binary("spacing", False), expected_binary("spacing", True)
    ('HIT', 'MISS')
    """
    return HIT if family_of(kind) == "noise" and not policy else MISS


# --- the checker ------------------------------------------------------------------------


def _span_problem(text_a: str, text_b: str, p: dict[str, Any]) -> str | None:
    start, end = p.get("start"), p.get("end")
    o, r = p.get("original"), p.get("replacement")
    if not (isinstance(start, int) and isinstance(end, int) and 0 <= start <= end <= len(text_a)):
        return "start/end are not a span of side a"
    if not isinstance(o, str) or not isinstance(r, str) or o == r:
        return "original/replacement are not two different strings"
    if text_a[start:end] != o:
        return "side a does not hold 'original' at [start, end)"
    if text_b != text_a[:start] + r + text_a[end:]:
        return "side b is not side a with the span replaced"
    return None


def _turns(pairs: tuple[str, str]) -> list[dict[str, str]]:
    return [{"role": "user", "content": pairs[0]}, {"role": "assistant", "content": pairs[1]}]


def edit_problem(row: Row, p: dict[str, Any]) -> str | None:
    """Why side b is not side a under the payload's edit (None when it is)."""
    kind = p["perturbation"]
    field = p.get("field")
    same_query = row.query_a == row.query_b
    same_system = row.system_prompt_a == row.system_prompt_b
    same_turns = row.context_a == row.context_b
    if row.tools_a != row.tools_b:
        return "the two sides offer different tools"
    if field == "query":
        if not (same_system and same_turns):
            return "a query edit changed the system prompt or the turns"
        problem = _span_problem(row.query_a, row.query_b, p)
        if problem:
            return problem
        validator = VALIDATORS.get(kind)
        if validator is None or family_of(kind) == "context":
            return f"{kind} is not a query edit"
        return validator(row.query_a, p["start"], p["end"], p["original"], p["replacement"])
    if not same_query:
        return "a context edit changed the query"
    if field == "system_prompt" and kind == "system_prompt_other":
        if not same_turns:
            return "a system-prompt edit changed the turns"
        if row.system_prompt_b not in lex.OTHER_SYSTEM_PROMPTS or same_system:
            return "side b's system prompt is not another curated user's"
        return None
    if field == "context" and kind == "turns_other":
        if not same_system or not row.context_a:
            return "turns_other needs side a's turns and one system prompt"
        turns_b = [dict(t) for t in row.context_b or ()]
        if turns_b not in [_turns(t) for t in lex.OTHER_TURNS] or same_turns:
            return "side b's turns are not another curated conversation"
        return back_reference_problem(row.query_a)
    if field == "context" and kind == "turns_edit":
        return _turn_edit_problem(row, p)
    return f"{kind} does not edit field {field!r}"


def _turn_edit_problem(row: Row, p: dict[str, Any]) -> str | None:
    turn, edit = p.get("turn"), p.get("edit")
    a, b = list(row.context_a or ()), list(row.context_b or ())
    if row.system_prompt_a != row.system_prompt_b:
        return "a turn edit changed the system prompt"
    if not isinstance(turn, int) or not 0 <= turn < len(a) or len(a) != len(b):
        return "turn does not name a prior turn of both sides"
    if edit not in KINDS or family_of(edit) != "identity" or edit == "turns_edit":
        return f"edit {edit!r} is not an identity kind"
    if any(a[i] != b[i] for i in range(len(a)) if i != turn):
        return "a turn other than the edited one differs"
    if a[turn].get("role") != "user" or b[turn].get("role") != "user":
        return "the edited turn is not the user's"
    ta, tb = str(a[turn].get("content", "")), str(b[turn].get("content", ""))
    problem = _span_problem(ta, tb, p)
    if problem:
        return problem
    return VALIDATORS[edit](
        ta, p["start"], p["end"], p["original"], p["replacement"]
    ) or later_turn_problem(a, turn, edit, p["original"], p["replacement"], row.query_a)


def check(row: Row) -> Check:
    p = row.verification_payload or {}
    kind = p.get("perturbation")
    if kind not in KINDS:
        return Check(None, f"unknown perturbation {kind!r}")
    if p.get("family") != family_of(kind):
        return Check(None, f"{kind} is a {family_of(kind)} edit, not {p.get('family')!r}")
    if row.subcategory != kind:
        return Check(None, f"subcategory {row.subcategory!r} is not the perturbation {kind!r}")
    if row.label != KINDS[kind][1]:
        return Check(None, f"a {kind} edit is labelled {KINDS[kind][1]}, not {row.label}")
    problem = edit_problem(row, p)
    if problem:
        return Check(None, f"{kind}: {problem}")
    verdict = request_policy(row.request("a"))
    policy = p.get("policy")
    if not verdict.allowed:
        if not isinstance(policy, dict) or policy.get("rule") != verdict.rule:
            return Check(None, f"side a is never cached ({verdict.rule}); the payload says not")
        if row.verification_method != POLICY_NO_CACHE:
            return Check(None, f"a {verdict.rule} request on a {row.verification_method!r} row")
        return Check(MISS, f"never cached by policy: {verdict.rule} (edit {kind})")
    if policy is not None:
        return Check(None, f"the payload claims policy {policy!r}; the detector allows side a")
    if row.verification_method == POLICY_NO_CACHE:
        return Check(None, "a policy_no_cache row whose request the detector allows")
    binary = expected_binary(kind, False)
    what = "keeps" if binary == HIT else "changes"
    return Check(binary, f"a {family_of(kind)} edit ({kind}) {what} the answer")
