"""The tool-call checker on small hand-made rows: canonical forms, schema
validation, HIT/MISS decisions, inconsistent payloads (undecided) and the
cache policy read from the tool definitions.

The canonicalisation and decision tests use everyday tools (alarms, timers,
thermostat, flights) whose definitions are marked, as in the dataset, as
mutation or time-sensitive tools: :func:`decide` gives the verdict the calls
alone give, and :func:`check` refuses such rows (they must be policy rows)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from cacheeval.schema import HIT, MISS, Row
from cacheeval.verify import check_row
from cacheeval.verify import tool as T

ALARM: dict[str, Any] = {
    "name": "set_alarm",
    "description": "Create an alarm.",
    "policy": "mutation",
    "parameters": {
        "type": "object",
        "properties": {
            "time": {"type": "string", "format": "time"},
            "label": {"type": "string"},
            "repeat_days": {
                "type": "array",
                "items": {"type": "string", "enum": ["mon", "tue", "wed", "thu", "fri"]},
                "uniqueItems": True,
            },
        },
        "required": ["time"],
        "additionalProperties": False,
    },
}
TIMER: dict[str, Any] = {
    "name": "set_timer",
    "description": "Start a timer.",
    "policy": "mutation",
    "parameters": {
        "type": "object",
        "properties": {
            "duration": {"type": "number", "exclusiveMinimum": 0},
            "unit": {
                "type": "string",
                "enum": ["seconds", "minutes", "hours"],
                "default": "minutes",
            },
        },
        "required": ["duration"],
        "additionalProperties": False,
    },
}
THERMOSTAT: dict[str, Any] = {
    "name": "set_thermostat",
    "description": "Set the thermostat.",
    "policy": "mutation",
    "parameters": {
        "type": "object",
        "properties": {
            "temperature": {"type": "number"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            "mode": {"type": "string", "enum": ["heat", "cool", "auto"], "default": "auto"},
            "room": {"type": "string", "enum": ["living_room", "bedroom"]},
        },
        "required": ["temperature", "unit"],
        "additionalProperties": False,
    },
}
FLIGHTS: dict[str, Any] = {
    "name": "search_flights",
    "description": "Search flights.",
    "policy": "time_sensitive",
    "parameters": {
        "type": "object",
        "properties": {
            "origin": {"type": "string", "pattern": "^[A-Z]{3}$"},
            "destination": {"type": "string", "pattern": "^[A-Z]{3}$"},
            "departure_date": {"type": "string", "format": "date"},
        },
        "required": ["origin", "destination", "departure_date"],
        "additionalProperties": False,
    },
}


CONVERT: dict[str, Any] = {
    "name": "convert_units",
    "description": "Convert a measurement.",
    "policy": "cacheable",
    "parameters": {
        "type": "object",
        "properties": {
            "value": {"type": "number"},
            "from_unit": {"type": "string", "enum": ["km", "mi"]},
            "to_unit": {"type": "string", "enum": ["km", "mi"]},
        },
        "required": ["value", "from_unit", "to_unit"],
        "additionalProperties": False,
    },
}


def alarm(**args: Any) -> dict[str, Any]:
    return {"name": "set_alarm", "arguments": args}


def convert(value: float, src: str, dst: str) -> dict[str, Any]:
    return {
        "name": "convert_units",
        "arguments": {"value": value, "from_unit": src, "to_unit": dst},
    }


def decide(r: Row) -> T.Check:
    """The verdict of the calls alone (the tools here are never-cache tools)."""
    return T.decide(r, r.verification_payload or {})


def expected(call: dict[str, Any] | None, tools: list[dict[str, Any]], no_call: str | None) -> str:
    if call is None:
        return T.refusal_text(tools) if no_call == "refusal" else "Canberra."
    canon, why = T.valid_canonical(call, tools)
    return T.render_call(canon) if canon is not None else f"<invalid: {why}>"


def row(
    call_a: dict[str, Any] | None,
    call_b: dict[str, Any] | None,
    *,
    tools_a: list[dict[str, Any]] | None = None,
    tools_b: list[dict[str, Any]] | None = None,
    method: str = "canonical_tool_call",
    expected_a: str | None = None,
    expected_b: str | None = None,
    **extra: Any,
) -> Row:
    tools_a = [ALARM, TIMER] if tools_a is None else tools_a
    tools_b = tools_a if tools_b is None else tools_b
    payload = {"kind": "tool_call", "call_a": call_a, "call_b": call_b, **extra}
    return Row.from_dict(
        {
            "id": "cb-tool-0001",
            "domain": "tool",
            "subcategory": "test",
            "label": "EQUIV",
            "binary_label": HIT,
            "difficulty": "easy",
            "query_a": "a",
            "query_b": "b",
            "context_a": None,
            "context_b": None,
            "system_prompt_a": None,
            "system_prompt_b": None,
            "tools_a": tools_a,
            "tools_b": tools_b,
            "expected_answer_a": expected_a
            if expected_a is not None
            else expected(call_a, tools_a, extra.get("no_call_a")),
            "expected_answer_b": expected_b
            if expected_b is not None
            else expected(call_b, tools_b, extra.get("no_call_b")),
            "rationale": "r",
            "verification_method": method,
            "verification_payload": payload,
            "construction_method": "curated",
            "source": "s",
            "real_world_grounding": "g",
            "split": "train",
        }
    )


# --- canonical values ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("7am", "07:00"),
        ("7 AM", "07:00"),
        ("7:00 p.m.", "19:00"),
        ("12 am", "00:00"),
        ("12:30 pm", "12:30"),
        ("noon", "12:00"),
        ("midnight", "00:00"),
        ("19:05:00", "19:05"),
        ("0:15", "00:15"),
    ],
)
def test_canonical_time(text: str, want: str) -> None:
    assert T.canonical_time(text) == want


@pytest.mark.parametrize("text", ["13 pm", "0 am", "25:00", "7:60", "seven", "7.30"])
def test_canonical_time_rejects(text: str) -> None:
    with pytest.raises(T.CanonError):
        T.canonical_time(text)


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("2025-06-11", "2025-06-11"),
        ("2025/6/1", "2025-06-01"),
        ("June 11, 2025", "2025-06-11"),
        ("11 June 2025", "2025-06-11"),
        ("Sept 5, 2025", "2025-09-05"),
        ("1st of July 2025", "2025-07-01"),
        ("Jun 11th 2025", "2025-06-11"),
        ("2024-02-29", "2024-02-29"),
    ],
)
def test_canonical_date(text: str, want: str) -> None:
    assert T.canonical_date(text) == want


@pytest.mark.parametrize(
    "text", ["2025-02-29", "2025-02-30", "tomorrow", "June 2025", "11/06/2025"]
)
def test_canonical_date_rejects(text: str) -> None:
    with pytest.raises(T.CanonError):
        T.canonical_date(text)


def test_quantity_pairs_convert_to_base_units() -> None:
    timer = T.canonical_call(
        {"name": "set_timer", "arguments": {"duration": 1.5, "unit": "hours"}}, TIMER
    )
    assert timer["arguments"] == {"duration": 5400, "unit": "seconds"}
    # the unit default (minutes) is filled in before converting
    assert T.canonical_call({"name": "set_timer", "arguments": {"duration": 90}}, TIMER) == timer
    f68 = {"name": "set_thermostat", "arguments": {"temperature": 68, "unit": "fahrenheit"}}
    c20 = {"name": "set_thermostat", "arguments": {"temperature": 20.0, "unit": "Celsius"}}
    assert T.canonical_call(f68, THERMOSTAT) == T.canonical_call(c20, THERMOSTAT)
    f72 = {"name": "set_thermostat", "arguments": {"temperature": 72, "unit": "fahrenheit"}}
    assert T.canonical_call(f72, THERMOSTAT)["arguments"]["temperature"] == 22.22


def test_enum_case_defaults_sets_and_key_order() -> None:
    canon = T.canonical_call(
        {
            "name": "set_thermostat",
            "arguments": {"room": "Living Room", "unit": "CELSIUS", "temperature": 21.0},
        },
        THERMOSTAT,
    )
    assert canon["arguments"] == {
        "mode": "auto",
        "room": "living_room",
        "temperature": 21,
        "unit": "celsius",
    }
    assert list(canon["arguments"]) == sorted(canon["arguments"])
    days = T.canonical_call(alarm(time="6:30", repeat_days=["fri", "mon", "wed"]), ALARM)
    assert days["arguments"]["repeat_days"] == ["fri", "mon", "wed"]
    assert T.render_call(days) == (
        '{"name": "set_alarm", "arguments": '
        '{"repeat_days": ["fri", "mon", "wed"], "time": "06:30"}}'
    )


def test_free_text_is_case_and_space_insensitive_patterned_is_not() -> None:
    a = T.canonical_call(alarm(time="7:00", label="  Call  Mum\u2019s phone "), ALARM)
    b = T.canonical_call(alarm(time="07:00", label="call mum's phone"), ALARM)
    assert a == b
    ok, _ = T.valid_canonical(
        {
            "name": "search_flights",
            "arguments": {"origin": "NYC", "destination": "MIA", "departure_date": "2025-07-03"},
        },
        [FLIGHTS],
    )
    low, why = T.valid_canonical(
        {
            "name": "search_flights",
            "arguments": {"origin": "nyc", "destination": "MIA", "departure_date": "2025-07-03"},
        },
        [FLIGHTS],
    )
    assert ok is not None and ok["arguments"]["origin"] == "NYC"
    assert low is None and "does not match" in why


# --- decisions ---------------------------------------------------------------------------


def test_hit_on_equal_canonical_calls() -> None:
    r = row(alarm(time="7 am"), alarm(time="07:00"))
    got = decide(r)
    assert got.binary == HIT, got.detail
    assert r.expected_answer_a == r.expected_answer_b


def test_miss_on_different_argument() -> None:
    got = decide(row(alarm(time="7 am"), alarm(time="7 pm")))
    assert got.binary == MISS
    assert "19:00" in got.detail


def test_miss_when_query_b_lacks_the_tool() -> None:
    got = decide(
        row(alarm(time="7 am"), None, tools_b=[TIMER], method="json_schema", no_call_b="refusal")
    )
    assert got.binary == MISS


def test_miss_when_query_b_tool_is_stricter() -> None:
    strict = copy.deepcopy(ALARM)
    strict["parameters"]["properties"]["time"] = {
        "type": "string",
        "pattern": "^[0-9]{2}:[0-9]{2}$",
    }
    got = decide(
        row(alarm(time="7 am"), alarm(time="07:00"), tools_b=[strict], method="json_schema")
    )
    assert got.binary == MISS
    assert "not valid for query_b" in got.detail


def test_extra_tools_on_query_b_do_not_matter() -> None:
    got = decide(
        row(
            alarm(time="7 am"),
            alarm(time="07:00"),
            tools_b=[TIMER, THERMOSTAT, ALARM],
            method="json_schema",
        )
    )
    assert got.binary == HIT


def test_refusals_hit_only_with_the_same_tool_set() -> None:
    same = row(None, None, method="json_schema", no_call_a="refusal", no_call_b="refusal")
    assert decide(same).binary == HIT
    other = row(
        None, None, tools_b=[TIMER], method="json_schema", no_call_a="refusal", no_call_b="refusal"
    )
    assert decide(other).binary == MISS
    assert T.refusal_text([ALARM, TIMER]) != T.refusal_text([TIMER])


def test_direct_answers_compare_text() -> None:
    same = row(None, None, method="json_schema", no_call_a="direct", no_call_b="direct")
    assert decide(same).binary == HIT
    differ = row(
        None,
        None,
        method="json_schema",
        no_call_a="direct",
        no_call_b="direct",
        expected_b="Sydney.",
    )
    assert decide(differ).binary == MISS


def test_one_null_call_is_miss() -> None:
    got = decide(row(None, alarm(time="7 am"), method="json_schema", no_call_a="refusal"))
    assert got.binary == MISS


# --- inconsistent payloads: undecided ---------------------------------------------------


def test_expected_answer_must_be_the_canonical_call() -> None:
    r = row(
        alarm(time="7 am"),
        alarm(time="07:00"),
        expected_a='{"name": "set_alarm", "arguments": {"time": "7 am"}}',
    )
    got = decide(r)
    assert got.binary is None and "canonical JSON" in got.detail


def test_invalid_call_is_undecided() -> None:
    missing = decide(row({"name": "set_alarm", "arguments": {"label": "gym"}}, alarm(time="07:00")))
    assert missing.binary is None and "schema" in missing.detail
    extra = decide(row(alarm(time="07:00", snooze=True), alarm(time="07:00")))
    assert extra.binary is None
    bad_time = decide(row(alarm(time="seven-ish"), alarm(time="07:00")))
    assert bad_time.binary is None and "time of day" in bad_time.detail


def test_call_for_a_tool_not_offered_on_its_own_side_is_undecided() -> None:
    got = decide(row(alarm(time="07:00"), alarm(time="07:00"), tools_a=[TIMER], tools_b=[ALARM]))
    assert got.binary is None and "not offered" in got.detail


def test_payload_shape_problems_are_undecided() -> None:
    assert (
        T.check(row(alarm(time="07:00"), alarm(time="07:00"), method="exact_match")).binary is None
    )
    no_kind = row(None, alarm(time="07:00"), method="json_schema")  # no no_call_a
    assert decide(no_kind).binary is None
    wrong_refusal = row(
        None, None, method="json_schema", no_call_a="refusal", no_call_b="refusal", expected_a="No."
    )
    assert decide(wrong_refusal).binary is None
    broken = copy.deepcopy(ALARM)
    broken["parameters"]["properties"]["time"]["type"] = "clock"
    got = decide(row(alarm(time="07:00"), alarm(time="07:00"), tools_a=[broken], tools_b=[broken]))
    assert got.binary is None and "invalid parameters schema" in got.detail


def test_integer_fields_keep_their_unit_when_conversion_is_fractional() -> None:
    whole = copy.deepcopy(THERMOSTAT)
    whole["parameters"]["properties"]["temperature"] = {"type": "integer"}
    f72 = {"name": "set_thermostat", "arguments": {"temperature": 72, "unit": "fahrenheit"}}
    f68 = {"name": "set_thermostat", "arguments": {"temperature": 68, "unit": "fahrenheit"}}
    assert T.canonical_call(f72, whole)["arguments"]["unit"] == "fahrenheit"
    assert T.canonical_call(f68, whole)["arguments"] == {
        "mode": "auto",
        "temperature": 20,
        "unit": "celsius",
    }
    assert T.valid_canonical(f72, [whole])[0] is not None


# --- cache policy, from the tool definitions ---------------------------------------------


def test_cacheable_tool_rows_are_decided_by_check() -> None:
    same = row(convert(10, "km", "mi"), convert(10.0, "KM", "mi"), tools_a=[CONVERT, TIMER])
    got = T.check(same)
    assert got.binary == HIT, got.detail
    assert check_row(same) == got  # the registry dispatches kind tool_call here
    swapped = row(convert(10, "km", "mi"), convert(10, "mi", "km"), tools_a=[CONVERT])
    assert T.check(swapped).binary == MISS


@pytest.mark.parametrize(
    ("call_a", "call_b", "named"),
    [
        (alarm(time="7 am"), alarm(time="07:00"), "set_alarm is a mutation tool"),
        (
            {
                "name": "search_flights",
                "arguments": {
                    "origin": "NYC",
                    "destination": "MIA",
                    "departure_date": "2025-07-03",
                },
            },
            {
                "name": "search_flights",
                "arguments": {
                    "origin": "NYC",
                    "destination": "MIA",
                    "departure_date": "2025-07-03",
                },
            },
            "search_flights is a time_sensitive tool",
        ),
        (convert(10, "km", "mi"), alarm(time="7 am"), "set_alarm is a mutation tool"),
    ],
)
def test_never_cache_tools_make_a_tool_call_row_undecided(
    call_a: dict[str, Any], call_b: dict[str, Any], named: str
) -> None:
    tools = [ALARM, FLIGHTS, CONVERT]
    r = row(call_a, call_b, tools_a=tools)
    got = T.check(r)
    assert got.binary is None
    assert named in got.detail and "policy_no_cache" in got.detail
    # The calls alone still have a verdict; only the policy forbids serving it.
    assert decide(r).binary in (HIT, MISS)


def test_a_called_tool_without_a_policy_is_undecided() -> None:
    bare = {k: v for k, v in CONVERT.items() if k != "policy"}
    r = row(convert(10, "km", "mi"), convert(10, "km", "mi"), tools_a=[bare])
    got = T.check(r)
    assert got.binary is None and "carries no policy" in got.detail
    wrong = {**CONVERT, "policy": "sometimes"}
    assert (
        T.check(row(convert(1, "km", "mi"), convert(1, "km", "mi"), tools_a=[wrong])).binary is None
    )


def test_strongest_never_cache_policy_wins() -> None:
    assert T.never_cache([("cacheable", "a"), ("time_sensitive", "b"), ("mutation", "c")]) == (
        "mutation",
        "c",
    )
    assert T.never_cache([("time_sensitive", "b")]) == ("time_sensitive", "b")
    assert T.never_cache([("cacheable", "a")]) is None
