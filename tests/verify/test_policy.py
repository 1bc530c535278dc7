"""The never-cache policy checker (creative, personalized, and tool rows whose
policy the tool definitions decide)."""

from __future__ import annotations

from typing import Any

import pytest

from cacheeval.schema import MISS, POLICY_NO_CACHE, Row
from cacheeval.verify import check_row
from cacheeval.verify.policy import POLICIES, check
from cacheeval.verify.tool import NEVER_CACHE

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


@pytest.mark.parametrize("policy", [p for p in POLICIES if p not in NEVER_CACHE])
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


# --- tool policies: decided by the tool definitions, not by the payload -------------------


def _tool(name: str, policy: str | None) -> dict[str, Any]:
    tool: dict[str, Any] = {
        "name": name,
        "description": name,
        "parameters": {"type": "object", "properties": {"x": {"type": "string"}}},
    }
    if policy is not None:
        tool["policy"] = policy
    return tool


TOOLS = [
    _tool("set_alarm", "mutation"),
    _tool("get_weather", "time_sensitive"),
    _tool("define_word", "cacheable"),
    _tool("legacy", None),
]


def _tool_row(policy: str, call_a: str | None, call_b: str | None, **extra: Any) -> Row:
    payload: dict[str, Any] = {
        "kind": "policy",
        "policy": policy,
        "reason": "never cached",
        "call_a": None if call_a is None else {"name": call_a, "arguments": {"x": "1"}},
        "call_b": None if call_b is None else {"name": call_b, "arguments": {"x": "1"}},
        **extra,
    }
    return make(
        label="EQUIV",
        method=POLICY_NO_CACHE,
        payload=payload,
        domain="tool",
        rid="cb-tool-0001",
        tools_a=TOOLS,
        tools_b=TOOLS,
    )


@pytest.mark.parametrize(
    ("policy", "call_a", "call_b"),
    [
        ("mutation", "set_alarm", "set_alarm"),
        ("mutation", "define_word", "set_alarm"),
        ("mutation", "set_alarm", "get_weather"),  # mutation is the stronger policy
        ("time_sensitive", "get_weather", None),
        ("time_sensitive", "define_word", "get_weather"),
    ],
)
def test_tool_policy_rows_agree_with_the_definitions(
    policy: str, call_a: str | None, call_b: str | None
) -> None:
    c = check(_tool_row(policy, call_a, call_b))
    assert c.binary == MISS, c.detail


@pytest.mark.parametrize(
    ("policy", "call_a", "call_b", "detail"),
    [
        ("mutation", "define_word", "define_word", "no called tool is a never-cache tool"),
        ("time_sensitive", None, None, "no called tool is a never-cache tool"),
        ("time_sensitive", "set_alarm", "get_weather", "makes this a mutation row"),
        ("mutation", "get_weather", "get_weather", "makes this a time_sensitive row"),
        ("mutation", "legacy", "set_alarm", "carries no policy"),
        ("mutation", "book_table", "set_alarm", "not offered"),
    ],
)
def test_tool_policy_rows_that_contradict_the_definitions_are_undecided(
    policy: str, call_a: str | None, call_b: str | None, detail: str
) -> None:
    c = check(_tool_row(policy, call_a, call_b))
    assert c.binary is None
    assert detail in c.detail


def test_tool_policy_payload_needs_both_calls() -> None:
    row = _tool_row("mutation", "set_alarm", "set_alarm")
    payload = dict(row.verification_payload or {})
    del payload["call_b"]
    c = check(
        make(
            label="EQUIV",
            method=POLICY_NO_CACHE,
            payload=payload,
            domain="tool",
            rid="cb-tool-0001",
            tools_a=TOOLS,
            tools_b=TOOLS,
        )
    )
    assert c.binary is None and "needs call_a and call_b" in c.detail
