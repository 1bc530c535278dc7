"""The never-cache policy checker (creative, personalized, tool mutations)."""

from __future__ import annotations

from typing import Any

import pytest

from cacheeval.schema import MISS, POLICY_NO_CACHE, Row
from cacheeval.verify import check_row
from cacheeval.verify.policy import POLICIES, check

from .rows import make


def _row(payload: dict[str, Any], method: str = POLICY_NO_CACHE, label: str = "EQUIV") -> Row:
    return make(
        label=label,
        method=method,
        payload=payload,
        answer_a=None,
        answer_b=None,
        domain="creative",
        rid="cb-creative-0001",
    )


@pytest.mark.parametrize("policy", POLICIES)
def test_every_policy_is_a_miss_even_for_equivalent_requests(policy: str) -> None:
    row = _row({"kind": "policy", "policy": policy, "reason": "fresh output each time"})
    assert row.binary_label == MISS  # derive_binary_label overrides EQUIV
    c = check(row)
    assert c.binary == MISS
    assert policy in c.detail


@pytest.mark.parametrize(
    ("payload", "method", "detail"),
    [
        ({"kind": "policy", "policy": "vibes", "reason": "x"}, POLICY_NO_CACHE, "unknown policy"),
        ({"kind": "policy", "reason": "x"}, POLICY_NO_CACHE, "unknown policy None"),
        ({"kind": "policy", "policy": "creative", "reason": "  "}, POLICY_NO_CACHE, "reason"),
        ({"kind": "policy", "policy": "creative"}, POLICY_NO_CACHE, "reason"),
        (
            {"kind": "policy", "policy": "creative", "reason": "x"},
            "exact_match",
            "on a 'exact_match' row",
        ),
    ],
)
def test_malformed_policy_rows_are_undecided(
    payload: dict[str, Any], method: str, detail: str
) -> None:
    c = check(_row(payload, method=method))
    assert c.binary is None
    assert detail in c.detail


def test_dispatch_and_unknown_kind() -> None:
    row = _row({"kind": "policy", "policy": "personalized", "reason": "per-user"})
    assert check_row(row).binary == MISS
    assert check_row(_row({"kind": "nonsense"})).binary is None
    assert "no checker" in check_row(_row({"kind": "nonsense"})).detail
    assert check_row(_row({})).detail == "verification_payload has no 'kind'"
