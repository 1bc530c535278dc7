"""The alias-set checker (qa_factual, multilingual)."""

from __future__ import annotations

from typing import Any

import pytest

from cacheeval.schema import HIT, MISS
from cacheeval.verify import check_row
from cacheeval.verify.alias import check

from .rows import make


def _payload(a: list[Any], b: list[Any], **kw: Any) -> dict[str, Any]:
    return {"kind": "alias_set", "aliases_a": a, "aliases_b": b, **kw}


def test_same_answer_is_a_hit() -> None:
    row = make(payload=_payload(["Canberra", "Canberra, Australia"], ["Canberra"]))
    c = check(row)
    assert c.binary == HIT
    assert "accepted answer" in c.detail


def test_normalisation_ignores_case_punctuation_and_spacing() -> None:
    row = make(
        answer_a="canberra,  australia.",
        answer_b="CANBERRA",
        payload=_payload(["Canberra, Australia"], ["Canberra", "Canberra Australia"]),
    )
    assert check(row).binary == HIT


def test_different_answer_is_a_miss() -> None:
    row = make(
        label="ADVERSARIAL",
        answer_a="Canberra",
        answer_b="Wellington",
        payload=_payload(["Canberra"], ["Wellington"]),
    )
    c = check(row)
    assert c.binary == MISS
    assert "not an accepted answer" in c.detail


def test_accents_are_answer_determining() -> None:
    row = make(
        label="RELATED_UNSAFE",
        answer_a="Paris",
        answer_b="París",
        payload=_payload(["Paris"], ["París"]),
    )
    assert check(row).binary == MISS


def test_language_mismatch_is_a_miss_even_with_the_same_string() -> None:
    row = make(
        label="ADVERSARIAL",
        answer_a="Berlin",
        answer_b="Berlin",
        payload=_payload(["Berlin"], ["Berlin"], lang_a="en", lang_b="de"),
    )
    c = check(row)
    assert c.binary == MISS
    assert "en" in c.detail and "de" in c.detail
    same = make(
        payload=_payload(["Berlin"], ["Berlin"], lang_a="de", lang_b="de"),
        answer_a="Berlin",
        answer_b="Berlin",
    )
    assert check(same).binary == HIT


@pytest.mark.parametrize(
    ("payload", "answers", "detail"),
    [
        (_payload([], ["Canberra"]), ("Canberra", "Canberra"), "non-empty lists"),
        (_payload(["Canberra"], []), ("Canberra", "Canberra"), "non-empty lists"),
        (_payload(["Canberra"], [3]), ("Canberra", "Canberra"), "lists of strings"),
        ({"kind": "alias_set"}, ("Canberra", "Canberra"), "non-empty lists"),
        (_payload(["Canberra"], ["Canberra"]), (None, "Canberra"), "expected answers are missing"),
        (_payload(["Sydney"], ["Canberra"]), ("Canberra", "Canberra"), "not in aliases_a"),
        (_payload(["Canberra"], ["Sydney"]), ("Canberra", "Canberra"), "not in aliases_b"),
    ],
)
def test_inconsistent_rows_are_undecided(
    payload: dict[str, Any], answers: tuple[str | None, str | None], detail: str
) -> None:
    c = check(make(payload=payload, answer_a=answers[0], answer_b=answers[1]))
    assert c.binary is None
    assert detail in c.detail


def test_dispatch_by_kind() -> None:
    row = make(payload=_payload(["Canberra"], ["Canberra"]))
    assert check_row(row) == check(row)
