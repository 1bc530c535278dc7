"""The rubric checker (qa_open, conversational)."""

from __future__ import annotations

from typing import Any

import pytest

from cacheeval.schema import HIT, MISS, Row
from cacheeval.verify import check_row, tier_of
from cacheeval.verify.rubric import check

from .rows import make

CRIT_A = [
    {"criterion": "names a benefit of unit tests", "pattern": r"catch|regression"},
    {"criterion": "mentions speed", "pattern": r"fast|quick"},
    {"criterion": "mentions documentation", "pattern": r"document"},
]
CRIT_B_SAME = [
    {"criterion": "names a benefit", "pattern": r"regression|bugs"},
    {"criterion": "says tests are quick", "pattern": r"quick|fast"},
    {"criterion": "mentions docs", "pattern": r"document"},
]
CRIT_B_OTHER = [
    {"criterion": "names a cost", "pattern": r"maintenance|time to write"},
    {"criterion": "says tests are quick", "pattern": r"quick|fast"},
    {"criterion": "mentions docs", "pattern": r"document"},
]
ANSWER_A = "Unit tests catch regressions, run fast, and document intended behaviour."
ANSWER_B_COST = "They cost maintenance, but run fast and document behaviour."


def _row(crit_b: list[dict[str, str]], label: str, answer_b: str, **kw: Any) -> Row:
    return make(
        label=label,
        method="rubric",
        domain="qa_open",
        rid="cb-qa_open-0001",
        answer_a=ANSWER_A,
        answer_b=answer_b,
        payload={"kind": "rubric", "criteria_a": kw.pop("crit_a", CRIT_A), "criteria_b": crit_b},
        **kw,
    )


def test_cached_answer_meeting_b_criteria_is_a_hit() -> None:
    c = check(_row(CRIT_B_SAME, "PARA_SAFE", ANSWER_A))
    assert c.binary == HIT


def test_cached_answer_missing_a_b_criterion_is_a_miss_and_names_it() -> None:
    c = check(_row(CRIT_B_OTHER, "RELATED_UNSAFE", ANSWER_B_COST))
    assert c.binary == MISS
    assert "names a cost" in c.detail
    assert "says tests are quick" not in c.detail


def test_patterns_are_case_insensitive() -> None:
    upper = ANSWER_A.upper()
    row = make(
        method="rubric",
        answer_a=upper,
        answer_b=upper,
        payload={"kind": "rubric", "criteria_a": CRIT_A, "criteria_b": CRIT_B_SAME},
    )
    assert check(row).binary == HIT


@pytest.mark.parametrize(
    ("crit_a", "crit_b", "answer_b", "detail"),
    [
        (CRIT_A[:2], CRIT_B_SAME, ANSWER_A, "three {criterion, pattern} items"),
        (CRIT_A, [*CRIT_B_SAME, CRIT_B_SAME[0]], ANSWER_A, "three {criterion, pattern} items"),
        (CRIT_A, [{"criterion": "x"}, *CRIT_B_SAME[1:]], ANSWER_A, "three"),
        (CRIT_A, CRIT_B_OTHER, "Nothing relevant here.", "expected_answer_b fails its own"),
        (
            [{"criterion": "mentions Rust", "pattern": "rust"}, *CRIT_A[1:]],
            CRIT_B_SAME,
            ANSWER_A,
            "expected_answer_a fails its own criteria: ['mentions Rust']",
        ),
    ],
)
def test_inconsistent_rows_are_undecided(
    crit_a: list[dict[str, str]], crit_b: list[dict[str, str]], answer_b: str, detail: str
) -> None:
    c = check(_row(crit_b, "PARA_SAFE", answer_b, crit_a=crit_a))
    assert c.binary is None
    assert detail in c.detail


def test_invalid_pattern_surfaces_as_undecided_through_check_row() -> None:
    bad = [{"criterion": "broken", "pattern": "("}, *CRIT_B_SAME[1:]]
    c = check_row(_row(bad, "PARA_SAFE", ANSWER_A, crit_a=CRIT_A))
    assert c.binary is None
    assert "raised" in c.detail


def test_rubric_is_its_own_tier() -> None:
    assert tier_of("rubric") == "rubric"
    assert tier_of("exact_match") == "deterministic"
    assert tier_of("llm_judge") == "judge"
    assert tier_of(None) == "unknown"
