"""The multi_turn checker on small hand-made rows: HITs, MISSes, and every
consistency rule that makes a row undecided."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from cacheeval.schema import HIT, MISS, Row
from cacheeval.verify import check_row
from cacheeval.verify.multi_turn import check
from cacheeval.verify.textnorm import normalize_answer

from .rows import make

BREAD = [
    {"role": "user", "content": "I'm making banana bread for Sunday lunch."},
    {"role": "assistant", "content": "Lovely - ripe bananas give the best flavour."},
]
CHICKEN = [
    {"role": "user", "content": "I'm making a roast chicken for Sunday lunch."},
    {"role": "assistant", "content": "Great choice - pat the skin dry so it crisps."},
]
SMALL_TALK = [
    {"role": "user", "content": "Sorry, the doorbell rang - where were we?"},
    {"role": "assistant", "content": "No problem at all!"},
]
EGGS = [
    {"role": "user", "content": "My daughter is allergic to eggs, by the way."},
    {"role": "assistant", "content": "Thanks, I'll keep that in mind."},
]
BREAD_ANSWER = "Bake the banana bread at 175 °C for 55-65 minutes."
CHICKEN_ANSWER = "Roast the chicken at 200 °C for about 1 hour 20 minutes."
EGG_FREE_ANSWER = "For egg-free banana bread use a flax egg and bake at 175 °C for 50-60 minutes."


def payload(
    query_a: str,
    query_b: str,
    *,
    intent_a: str = "bake_time",
    intent_b: str = "bake_time",
    refs_a: list[str] | None = None,
    refs_b: list[str] | None = None,
    cons_a: list[str] | None = None,
    cons_b: list[str] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    return {
        "kind": "multi_turn",
        "final": {
            "normalized_a": normalize_answer(query_a),
            "normalized_b": normalize_answer(query_b),
            "intent_a": intent_a,
            "intent_b": intent_b,
        },
        "referents_a": refs_a if refs_a is not None else ["banana bread"],
        "referents_b": refs_b if refs_b is not None else ["banana bread"],
        "constraints_a": cons_a if cons_a is not None else [],
        "constraints_b": cons_b if cons_b is not None else [],
        **extra,
    }


def mt_row(
    *,
    label: str,
    query_a: str = "How long should I bake it?",
    query_b: str = "How long should I bake it?",
    context_a: list[dict[str, str]] | None = None,
    context_b: list[dict[str, str]] | None = None,
    answer_a: str = BREAD_ANSWER,
    answer_b: str = BREAD_ANSWER,
    method: str | None = None,
    payload_: dict[str, Any] | None = None,
    **payload_kw: Any,
) -> Row:
    """A multi_turn row; the method defaults to what the checker expects."""
    if method is None:
        same = normalize_answer(query_a) == normalize_answer(query_b)
        method = "exact_match" if same else "rubric"
    return make(
        label=label,
        method=method,
        payload=payload_ if payload_ is not None else payload(query_a, query_b, **payload_kw),
        answer_a=answer_a,
        answer_b=answer_b,
        domain="multi_turn",
        rid="cb-multi_turn-0001",
        query_a=query_a,
        query_b=query_b,
        context_a=tuple(context_a if context_a is not None else BREAD),
        context_b=tuple(context_b if context_b is not None else BREAD),
    )


# --- decided rows ------------------------------------------------------------------------


def test_surface_variant_of_the_final_is_an_exact_match_hit() -> None:
    row = mt_row(label="EQUIV", query_b="how long should i bake it")
    assert row.verification_method == "exact_match"
    c = check(row)
    assert (c.binary, c.detail) == (
        HIT,
        "identical final request with the same referents and constraints",
    )


def test_declared_paraphrase_is_a_rubric_hit() -> None:
    row = mt_row(label="PARA_SAFE", query_b="What baking time does it need?")
    assert row.verification_method == "rubric"
    c = check(row)
    assert c.binary == HIT
    assert "paraphrased" in c.detail


def test_small_talk_turns_do_not_change_the_answer() -> None:
    row = mt_row(
        label="PARA_SAFE",
        context_b=BREAD + SMALL_TALK,
        small_talk_b=[2, 3],
    )
    assert check(row).binary == HIT
    # Through the registry too.
    assert check_row(row).binary == HIT


def test_same_final_after_a_different_referent_is_a_miss() -> None:
    row = mt_row(
        label="ADVERSARIAL",
        context_b=CHICKEN,
        answer_b=CHICKEN_ANSWER,
        refs_b=["chicken"],
    )
    c = check(row)
    assert c.binary == MISS
    assert "different referents" in c.detail


def test_a_constraint_in_one_history_is_a_miss() -> None:
    row = mt_row(
        label="RELATED_UNSAFE",
        context_b=BREAD + EGGS,
        answer_b=EGG_FREE_ANSWER,
        cons_b=["allergic to eggs"],
    )
    c = check(row)
    assert c.binary == MISS
    assert "different constraints" in c.detail


def test_a_different_follow_up_is_a_miss() -> None:
    row = mt_row(
        label="RELATED_UNSAFE",
        query_b="Can I freeze it?",
        answer_b="Yes, banana bread freezes well for up to 3 months.",
        intent_b="freezing",
    )
    c = check(row)
    assert c.binary == MISS
    assert "bake_time vs freezing" in c.detail


def test_referent_matching_ignores_case() -> None:
    row = mt_row(label="EQUIV", query_b="How long should I bake it ?", refs_b=["Banana Bread"])
    assert check(row).binary == HIT


# --- undecided (inconsistent) rows ----------------------------------------------------------


def _undecided(row: Row, fragment: str) -> None:
    c = check(row)
    assert c.binary is None, c.detail
    assert fragment in c.detail


def test_malformed_payloads_are_undecided() -> None:
    good = payload("How long should I bake it?", "How long should I bake it?")
    no_final = {k: v for k, v in good.items() if k != "final"}
    _undecided(mt_row(label="EQUIV", payload_=no_final), "final.")
    empty_refs = {**good, "referents_a": []}
    _undecided(mt_row(label="EQUIV", payload_=empty_refs), "referents_a/b")
    bad_cons = {**good, "constraints_b": "allergic to eggs"}
    _undecided(mt_row(label="EQUIV", payload_=bad_cons), "constraints_a/b")
    bad_small = {**good, "small_talk_b": ["2"]}
    _undecided(mt_row(label="EQUIV", payload_=bad_small), "turn indices")


def test_normalised_final_must_match_the_query() -> None:
    p = payload("How long should I bake it?", "How long should I bake it?")
    p["final"]["normalized_b"] = "how long should i roast it"
    _undecided(mt_row(label="EQUIV", payload_=p), "final.normalized_b")


def test_identical_finals_with_different_intents_are_inconsistent() -> None:
    row = mt_row(label="RELATED_UNSAFE", intent_b="other", answer_b=CHICKEN_ANSWER)
    _undecided(row, "different intent ids")


@pytest.mark.parametrize(
    ("query_b", "method", "fragment"),
    [
        ("how long should i bake it", "rubric", "method should be exact_match"),
        ("What baking time does it need?", "exact_match", "method should be rubric"),
        ("How long should I bake it?", "policy_no_cache", "on a 'policy_no_cache' row"),
    ],
)
def test_method_must_fit_the_finals(query_b: str, method: str, fragment: str) -> None:
    _undecided(mt_row(label="EQUIV", query_b=query_b, method=method), fragment)


def test_referents_and_constraints_must_be_grounded() -> None:
    # The referent is not in side b's conversation.
    _undecided(mt_row(label="EQUIV", refs_b=["lasagne"]), "never says so")
    # A constraint nobody stated.
    _undecided(
        mt_row(label="RELATED_UNSAFE", cons_b=["allergic to eggs"], answer_b=EGG_FREE_ANSWER),
        "never says so",
    )
    # The expected answer is about something else.
    _undecided(
        mt_row(label="ADVERSARIAL", context_b=CHICKEN, refs_b=["chicken"], answer_b="Bake 1 hour."),
        "does not mention",
    )


def test_a_constraint_stated_on_both_sides_must_be_listed_on_both() -> None:
    row = mt_row(
        label="RELATED_UNSAFE",
        context_a=BREAD + EGGS,
        context_b=BREAD + EGGS,
        answer_b=EGG_FREE_ANSWER,
        cons_b=["allergic to eggs"],
    )
    _undecided(row, "also occur on side a")


def test_small_talk_must_exist_and_be_irrelevant() -> None:
    _undecided(
        mt_row(label="PARA_SAFE", context_b=BREAD + SMALL_TALK, small_talk_b=[4]),
        "outside context_b",
    )
    # Declaring the turn that names the referent as small talk is a lie.
    _undecided(
        mt_row(label="PARA_SAFE", context_b=BREAD + SMALL_TALK, small_talk_b=[0, 2, 3]),
        "mentions",
    )


def test_a_hit_needs_the_same_substantive_history() -> None:
    # The extra turns are not declared small talk: they could hide a constraint.
    row = mt_row(label="PARA_SAFE", context_b=BREAD + SMALL_TALK)
    _undecided(row, "histories differ outside the declared small talk")
    reworded = copy.deepcopy(BREAD)
    reworded[1]["content"] = "Ripe bananas are the secret."
    _undecided(mt_row(label="EQUIV", context_b=reworded), "histories differ")
    # Case and punctuation differences in a turn are not a difference.
    shouted = copy.deepcopy(BREAD)
    shouted[0]["content"] = shouted[0]["content"].upper().rstrip(".")
    assert check(mt_row(label="EQUIV", context_b=shouted)).binary == HIT


def test_expected_answers_must_agree_with_the_decision() -> None:
    _undecided(mt_row(label="EQUIV", answer_b="Bake the banana bread for an hour."), "a HIT row")
    same = "Bake the banana bread or the chicken for an hour."
    row = mt_row(
        label="ADVERSARIAL",
        context_b=CHICKEN,
        refs_a=["banana bread"],
        refs_b=["chicken"],
        answer_a=same,
        answer_b=same,
    )
    _undecided(row, "a MISS row whose expected answers are the same")


def test_roles_and_missing_answers() -> None:
    bad = copy.deepcopy(BREAD)
    bad[1]["role"] = "system"
    _undecided(mt_row(label="EQUIV", context_b=bad), "has role 'system'")
    row = make(
        label="EQUIV",
        method="exact_match",
        payload=payload("How long should I bake it?", "How long should I bake it?"),
        answer_a=None,
        answer_b=None,
        domain="multi_turn",
        rid="cb-multi_turn-0001",
        query_a="How long should I bake it?",
        query_b="How long should I bake it?",
        context_a=tuple(BREAD),
        context_b=tuple(BREAD),
    )
    _undecided(row, "expected answers are missing")


def test_a_checker_disagreement_surfaces_through_check_row() -> None:
    # A mislabelled row: the label says HIT, the payload says the referents differ.
    row = mt_row(label="EQUIV", context_b=CHICKEN, refs_b=["chicken"], answer_b=CHICKEN_ANSWER)
    assert row.binary_label == HIT
    assert check_row(row).binary == MISS
