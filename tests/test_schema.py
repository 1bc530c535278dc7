"""The record types: binary labels, the policy override, Verdict checks, Row round trips."""

from __future__ import annotations

import math

import pytest

from cacheeval.pipeline.domains import MATRIX
from cacheeval.schema import (
    BINARY_LABELS,
    DOMAINS,
    HIDDEN_TEST_FIELDS,
    LABELS,
    ROW_FIELDS,
    SPLIT_SIZES,
    Row,
    Verdict,
    derive_binary_label,
)


@pytest.mark.parametrize(
    ("label", "method", "binary"),
    [
        ("EQUIV", "exact_match", "HIT"),
        ("PARA_SAFE", "rubric", "HIT"),
        ("RELATED_UNSAFE", "sympy", "MISS"),
        ("ADVERSARIAL", "ast_diff", "MISS"),
        ("UNRELATED", None, "MISS"),
        # The policy override: never served, whatever the label.
        ("EQUIV", "policy_no_cache", "MISS"),
        ("PARA_SAFE", "policy_no_cache", "MISS"),
        ("ADVERSARIAL", "policy_no_cache", "MISS"),
    ],
)
def test_derive_binary_label(label: str, method: str | None, binary: str) -> None:
    assert derive_binary_label(label, method) == binary


def test_derive_binary_label_rejects_unknown() -> None:
    with pytest.raises(ValueError, match="unknown label"):
        derive_binary_label("SIMILAR", None)


def test_vocabulary_and_matrix() -> None:
    assert LABELS == ("EQUIV", "PARA_SAFE", "RELATED_UNSAFE", "ADVERSARIAL", "UNRELATED")
    assert BINARY_LABELS == ("HIT", "MISS")
    assert len(DOMAINS) == 10 and tuple(MATRIX) == DOMAINS
    assert sum(sum(v) for v in MATRIX.values()) == 2000 == sum(SPLIT_SIZES.values())
    # Column totals of the README's sampling matrix.
    totals = [sum(MATRIX[d][i] for d in DOMAINS) for i in range(5)]
    assert totals == [420, 410, 420, 410, 340]
    assert ROW_FIELDS[0] == "id" and ROW_FIELDS[-1] == "split" and len(ROW_FIELDS) == 23
    assert set(HIDDEN_TEST_FIELDS) <= set(ROW_FIELDS)
    assert "query_a" not in HIDDEN_TEST_FIELDS and "split" not in HIDDEN_TEST_FIELDS


@pytest.mark.parametrize(
    ("verdict", "problem"),
    [
        (Verdict(is_hit="yes"), "is_hit is str, not bool"),  # type: ignore[arg-type]
        (Verdict(is_hit=True, confidence=math.nan), "confidence is NaN"),
        (Verdict(is_hit=True, confidence=-0.1), "outside [0, 1]"),
        (Verdict(is_hit=True, confidence=True), "confidence is bool, not a number"),
        (Verdict(is_hit=True, tier_used=3), "tier_used is int, not str"),  # type: ignore[arg-type]
        (Verdict(is_hit=True, score="0.3"), "score is str, not a number"),  # type: ignore[arg-type]
        (Verdict(is_hit=True, score=-math.inf), "score is -inf"),
    ],
)
def test_verdict_problems(verdict: Verdict, problem: str) -> None:
    found = verdict.problems()
    assert any(problem in p for p in found), found


def test_good_verdicts_have_no_problems() -> None:
    assert Verdict(is_hit=False).problems() == []
    assert Verdict(is_hit=True, confidence=0, tier_used="judge", score=-3.5).problems() == []
    assert Verdict(is_hit=True, confidence=1.0, score=7).problems() == []


def test_row_round_trip(mini_rows: list[Row]) -> None:
    for row in mini_rows:
        data = row.to_dict()
        assert list(data) == list(ROW_FIELDS)
        assert Row.from_dict(data) == row
        if row.context_a is not None:
            assert isinstance(data["context_a"], list) and isinstance(row.context_a, tuple)


def test_row_y(mini_rows: list[Row], public_rows: list[Row]) -> None:
    assert sum(r.y for r in mini_rows) == 12
    hidden = next(r for r in public_rows if not r.is_labelled)
    with pytest.raises(ValueError, match="no label"):
        _ = hidden.y


def test_subscores_partition_the_committed_dataset() -> None:
    """On the shards (every field present: the public file withholds the
    test rows' verification method, which the labels file restores)."""
    import json

    from cacheeval.schema import POLICY_NO_CACHE, SUBSCORES, Row, subscore_of
    from tests.conftest import REPO_ROOT

    rows = []
    for path in sorted((REPO_ROOT / "domains").glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            rows.append(Row.from_dict({**json.loads(line), "split": "train"}))
    parts = {name: [r for r in rows if subscore_of(r) == name] for name in SUBSCORES}
    assert sum(len(p) for p in parts.values()) == len(rows) == 2000
    assert {k: len(v) for k, v in parts.items()} == {"query": 1400, "context": 145, "policy": 455}
    assert all(r.verification_method == POLICY_NO_CACHE for r in parts["policy"])
    assert not any(r.verification_method == POLICY_NO_CACHE for r in parts["query"])
    for r in parts["query"]:
        assert r.request("a").key()[1:] == r.request("b").key()[1:]
    for r in parts["context"]:
        assert r.request("a").key()[1:] != r.request("b").key()[1:]
