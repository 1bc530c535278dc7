"""Multi-turn check: is the final request the same, and does the history pin
the same answer-determining referents and constraints on both sides?

Payload::

    {"kind": "multi_turn",
     "final": {"normalized_a": "how long should i bake it",   # normalize_answer(query_a)
               "normalized_b": "how long should i bake it",   # normalize_answer(query_b)
               "intent_a": "bake_time",                         # curator's intent id of query_a
               "intent_b": "bake_time"},                        # equal ids = declared paraphrases
     "referents_a": ["banana bread"],     # what the final message refers to, side a
     "referents_b": ["roast chicken"],
     "constraints_a": [],                 # earlier-stated facts that shape the answer
     "constraints_b": ["allergic to eggs"],
     "small_talk_a": [],                  # optional: indices of context_a turns declared irrelevant
     "small_talk_b": [2, 3]}

Two parts, matching the two verification methods a row may name:

* the final message (``exact_match``): each ``normalized_x`` must equal
  :func:`~cacheeval.verify.textnorm.normalize_answer` of ``query_x``. The final
  requests are equivalent when the normalised texts are equal, or when the
  curator declares them paraphrases by giving both the same intent id. Equal
  normalised texts with different intent ids are inconsistent. A row names
  ``exact_match`` exactly when the normalised finals are equal, ``rubric``
  otherwise (their equivalence then rests on the declared intent).
* the context (a pattern-checked rubric): every turn has role ``user`` or
  ``assistant``; every referent and constraint listed for a side must occur
  literally (case-insensitive, NFKC) in that side's context or final message;
  a constraint listed for one side that also occurs in the other side's
  conversation must be listed there too (no silently shared constraint);
  every referent of a side must occur in that side's expected answer (the
  answer names what it is about); every small-talk turn must exist and mention
  no referent or constraint of either side.

Decision::

    HIT  iff  intent_a == intent_b
              and casefold(set(referents_a)) == casefold(set(referents_b))
              and casefold(set(constraints_a)) == casefold(set(constraints_b))

Two consistency rules tie the decision to the rest of the row:

* a HIT needs the same *substantive* history on both sides: the contexts with
  their declared small-talk turns removed must be equal turn by turn (role,
  and content after ``normalize_answer``). Any other difference could carry an
  undeclared referent or constraint, so the row is undecided instead;
* the expected answers agree with the decision: equal after
  ``normalize_answer`` for a HIT (the cached answer is the answer), different
  for a MISS (otherwise the cached answer would have served).

A payload that breaks any consistency rule gives an undecided check (binary
None), so a mislabelled or hand-edited row surfaces as a disagreement.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from typing import Any

from ..schema import HIT, MISS, Row
from .result import Check
from .textnorm import normalize_answer

METHODS = ("exact_match", "rubric")
ROLES = ("user", "assistant")


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def _str_list(value: object, *, allow_empty: bool) -> list[str] | None:
    if not isinstance(value, list) or (not value and not allow_empty):
        return None
    if not all(isinstance(v, str) and v.strip() for v in value):
        return None
    return list(value)


def _side_text(query: str, context: Sequence[dict[str, Any]] | None) -> str:
    parts = [str(t.get("content", "")) for t in context or ()]
    parts.append(query)
    return _fold("\n".join(parts))


def _absent(items: list[str], text: str) -> list[str]:
    return [s for s in items if _fold(s) not in text]


def _substantive(
    context: Sequence[dict[str, Any]] | None, small_talk: list[int]
) -> list[tuple[str, str]]:
    """The turns that are not declared small talk, as (role, normalised content)."""
    skip = set(small_talk)
    return [
        (str(t.get("role")), normalize_answer(str(t.get("content", ""))))
        for i, t in enumerate(context or ())
        if i not in skip
    ]


def check(row: Row) -> Check:
    p = row.verification_payload or {}
    final = p.get("final")
    keys = ("normalized_a", "normalized_b", "intent_a", "intent_b")
    if not isinstance(final, dict) or not all(isinstance(final.get(k), str) for k in keys):
        return Check(None, "multi_turn payload needs final.{normalized,intent}_{a,b} strings")
    refs_a = _str_list(p.get("referents_a"), allow_empty=False)
    refs_b = _str_list(p.get("referents_b"), allow_empty=False)
    cons_a = _str_list(p.get("constraints_a"), allow_empty=True)
    cons_b = _str_list(p.get("constraints_b"), allow_empty=True)
    if refs_a is None or refs_b is None or cons_a is None or cons_b is None:
        return Check(
            None, "referents_a/b must be non-empty string lists; constraints_a/b string lists"
        )
    if row.verification_method not in METHODS:
        return Check(None, f"multi_turn payload on a {row.verification_method!r} row")
    if row.expected_answer_a is None or row.expected_answer_b is None:
        return Check(None, "expected answers are missing")
    for side, context in (("a", row.context_a), ("b", row.context_b)):
        for i, turn in enumerate(context or ()):
            if turn.get("role") not in ROLES:
                return Check(None, f"context_{side}[{i}] has role {turn.get('role')!r}")

    # Final-message part.
    for side, query in (("a", row.query_a), ("b", row.query_b)):
        if final[f"normalized_{side}"] != normalize_answer(query):
            return Check(None, f"final.normalized_{side} is not the normalised query_{side}")
    same_text = final["normalized_a"] == final["normalized_b"]
    same_intent = final["intent_a"] == final["intent_b"]
    if same_text and not same_intent:
        return Check(None, "identical final messages carry different intent ids")
    want_method = "exact_match" if same_text else "rubric"
    if row.verification_method != want_method:
        return Check(None, f"method should be {want_method} (normalised finals equal: {same_text})")

    # Context part: every listed item is grounded in its own side.
    text_a = _side_text(row.query_a, row.context_a)
    text_b = _side_text(row.query_b, row.context_b)
    sides = (
        ("a", text_a, refs_a, cons_a, row.expected_answer_a),
        ("b", text_b, refs_b, cons_b, row.expected_answer_b),
    )
    for side, text, refs, cons, answer in sides:
        missing = _absent(refs + cons, text)
        if missing:
            return Check(None, f"side {side} lists {missing} but its conversation never says so")
        unnamed = _absent(refs, _fold(answer))
        if unnamed:
            return Check(None, f"expected_answer_{side} does not mention its referent(s) {unnamed}")
    # A constraint present in both conversations but listed for one side only would
    # make the sides look different when they are not.
    for side, cons, other, other_text in (
        ("a", cons_a, cons_b, text_b),
        ("b", cons_b, cons_a, text_a),
    ):
        folded_other = {_fold(s) for s in other}
        unlisted = [s for s in cons if _fold(s) not in folded_other and _fold(s) in other_text]
        if unlisted:
            peer = "b" if side == "a" else "a"
            return Check(None, f"constraint(s) {unlisted} of side {side} also occur on side {peer}")
    everything = [_fold(s) for s in refs_a + refs_b + cons_a + cons_b]
    small: dict[str, list[int]] = {}
    for side, context in (("a", row.context_a), ("b", row.context_b)):
        idx = p.get(f"small_talk_{side}", [])
        if not isinstance(idx, list) or not all(
            isinstance(i, int) and not isinstance(i, bool) for i in idx
        ):
            return Check(None, f"small_talk_{side} must be a list of turn indices")
        turns = context or ()
        for i in idx:
            if not 0 <= i < len(turns):
                return Check(None, f"small_talk_{side} index {i} is outside context_{side}")
            content = _fold(str(turns[i].get("content", "")))
            hits = [s for s in everything if s in content]
            if hits:
                return Check(None, f"small-talk turn {side}[{i}] mentions {hits}")
        small[side] = idx

    # Decision.
    if not same_intent:
        decided = Check(MISS, f"final requests differ ({final['intent_a']} vs {final['intent_b']})")
    elif {_fold(s) for s in refs_a} != {_fold(s) for s in refs_b}:
        decided = Check(MISS, f"same request about different referents: {refs_a} vs {refs_b}")
    elif {_fold(s) for s in cons_a} != {_fold(s) for s in cons_b}:
        decided = Check(MISS, f"history sets different constraints: {cons_a} vs {cons_b}")
    else:
        if _substantive(row.context_a, small["a"]) != _substantive(row.context_b, small["b"]):
            return Check(None, "histories differ outside the declared small talk")
        how = "identical" if same_text else "paraphrased"
        decided = Check(HIT, f"{how} final request with the same referents and constraints")

    # The expected answers must agree with the decision.
    same_answer = normalize_answer(row.expected_answer_a) == normalize_answer(row.expected_answer_b)
    if decided.binary == HIT and not same_answer:
        return Check(None, "a HIT row whose expected answers differ")
    if decided.binary == MISS and same_answer:
        return Check(None, "a MISS row whose expected answers are the same")
    return decided
