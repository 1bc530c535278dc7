"""Tool-call check: JSON-Schema validation plus canonical call forms (W5H2-style).

The cached answer of a tool turn is the model's tool call. A cached call serves
query_b iff it is exactly the call query_b needs *and* query_b's request offers
that tool with a schema the call satisfies.

Payload (kind ``tool_call``; method ``json_schema`` or ``canonical_tool_call``)::

    {"kind": "tool_call",
     "call_a": {"name": "set_alarm", "arguments": {"time": "7:00 AM"}} | null,
     "call_b": {"name": "set_alarm", "arguments": {"time": "07:00"}} | null,
     "no_call_a": "refusal" | "direct",   # only when call_a is null
     "no_call_b": "refusal" | "direct"}   # only when call_b is null

``call_*`` is the call the assistant should emit for that side, in any surface
form a model might produce (argument order, ``7:00 AM``, ``June 11, 2025``,
enum case ...). A null call means no offered tool applies: ``refusal`` when
the assistant must decline (its answer is :func:`refusal_text` of that side's
tools) or ``direct`` when it answers from its own knowledge (any non-empty text).
The method names the step that decides the row: ``json_schema`` when the two
sides are offered different tool sets or a side has no call (the verdict
turns on what query_b's tools accept), ``canonical_tool_call`` otherwise.

Procedure, per side: the named tool must be offered on that side; the call is
canonicalised against the tool's ``parameters`` schema (:func:`canonical_call`)
and the canonical form must validate (``jsonschema``); ``expected_answer_*``
must equal :func:`render_call` of the canonical form (or the refusal text).
Any failure makes the row undecided: the payload and the row disagree.

Decision:

* both calls present: HIT iff canon(call_a) == canon(call_b) and call_a,
  canonicalised under query_b's schema for that tool name, validates there and
  is still equal (the tool must be offered to query_b, with a schema that
  accepts the call);
* one call null: MISS (one side needs a call, the other must not make one);
* both null: HIT iff the two expected answers are the same text after
  whitespace/case folding. A refusal lists its side's tool names, so two
  refusals serve each other only when the tool sets match.

Canonical form (why: surface differences a model may emit must not split one
call into two, while every answer-determining value must survive):

* keys sorted; optional properties with a schema ``default`` filled in;
* numbers: integral floats become ints, others are rounded to 6 decimals;
* quantity pairs: an object with a ``unit`` enum and exactly one other numeric
  property is converted to a base unit (time -> seconds, temperature ->
  celsius, rounded to 2 decimals), so ``90 minutes`` == ``1.5 hours`` and
  ``68 F`` == ``20 C``;
* ``format: date`` strings -> ISO ``YYYY-MM-DD`` (accepts ISO, ``2025/06/11``,
  ``June 11, 2025``, ``11 June 2025``, ``Jun 11th 2025``); relative dates are
  not accepted, the assistant resolves them from the system prompt's date;
* ``format: time`` strings (a local time of day, not RFC 3339) -> 24-hour
  ``HH:MM`` (accepts ``7am``, ``7:00 PM``, ``7 p.m.``, ``19:00``, ``19:00:00``,
  ``noon``, ``midnight``);
* ``format: email`` strings are case-folded;
* enum strings are mapped case-insensitively (spaces/hyphens read as ``_``)
  to the declared member;
* arrays with ``uniqueItems`` are sets: items are sorted;
* **case-sensitive** strings: those whose schema has a ``pattern`` (IATA,
  ISO currency and language codes, ticker symbols, confirmation codes); they
  are only stripped, and their pattern pins their case;
* every other string is free text whose case does not change what the tool
  does (reminder text, event titles, search queries, contact names): NFKC,
  curly quotes straightened, whitespace collapsed, case-folded.

Cache policy of a tool (one rule, read from the tool definition). Every tool
definition carries ``"policy"``: ``"mutation"`` when calling it changes state
(alarms, timers, reminders, calendar events, lights, thermostat, music
playback, messages, bookings, payments, cancellations, deletions: the action
must run again), ``"time_sensitive"`` when it reads the live state of the
world (weather, prices and quotes, exchange rates, flight and hotel
availability, web search, news, routes and listings: a stored answer goes
stale), else ``"cacheable"`` (its result is a pure function of its arguments:
unit and time-zone conversion, translation, definitions, calculators, static
reference lookups, formatting). A row whose call on either side uses a
``mutation`` or ``time_sensitive`` tool is never served from a cache: it must
carry the ``policy`` payload (method ``policy_no_cache``, binary MISS), see
:mod:`cacheeval.verify.policy`. This checker reports such a row as undecided
when it arrives with a ``tool_call`` payload, and so does a call to a tool
whose definition has no valid policy; no row can contradict its tools.
"""

from __future__ import annotations

import functools
import json
import re
import unicodedata
from collections.abc import Sequence
from typing import Any

from ..schema import HIT, MISS, Row
from ..support.jsonio import dumps
from .result import Check

METHODS = ("json_schema", "canonical_tool_call")
NO_CALL_KINDS = ("refusal", "direct")
#: The values of a tool definition's ``policy`` field.
CACHEABLE = "cacheable"
MUTATION = "mutation"
TIME_SENSITIVE = "time_sensitive"
TOOL_POLICIES = (CACHEABLE, MUTATION, TIME_SENSITIVE)
#: Never-cache policies, strongest first (a row touching both is a mutation row).
NEVER_CACHE = (MUTATION, TIME_SENSITIVE)

# unit -> (dimension, converter to the dimension's base unit)
_TIME_FACTORS = {"seconds": 1, "minutes": 60, "hours": 3600}
_TEMPERATURE_UNITS = ("celsius", "fahrenheit")

_MONTHS = {
    name: i
    for i, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        1,
    )
    for name in names
}
_ISO_DATE = re.compile(r"^(\d{4})[-/](\d{1,2})[-/](\d{1,2})$")
_MONTH_FIRST = re.compile(r"^([a-z]+)\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})$")
_DAY_FIRST = re.compile(r"^(\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?([a-z]+)\.?,?\s+(\d{4})$")
_TIME_12H = re.compile(r"^(\d{1,2})(?::(\d{2}))?(?::(\d{2}))?\s*([ap])\.?\s*m\.?$")
_TIME_24H = re.compile(r"^(\d{1,2}):(\d{2})(?::(\d{2}))?$")
_SPACE = re.compile(r"\s+")
_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})


class CanonError(ValueError):
    """An argument value the canonicaliser cannot read (e.g. an unparseable date)."""


# --- canonical values ------------------------------------------------------------


def canonical_date(text: str) -> str:
    """``text`` as ISO ``YYYY-MM-DD``; raises :class:`CanonError` if unreadable."""
    import datetime

    s = _SPACE.sub(" ", text.strip().casefold())
    year = month = day = None
    if m := _ISO_DATE.match(s):
        year, month, day = int(m[1]), int(m[2]), int(m[3])
    elif (m := _MONTH_FIRST.match(s)) and m[1] in _MONTHS:
        year, month, day = int(m[3]), _MONTHS[m[1]], int(m[2])
    elif (m := _DAY_FIRST.match(s)) and m[2] in _MONTHS:
        year, month, day = int(m[3]), _MONTHS[m[2]], int(m[1])
    if year is None or month is None or day is None:
        raise CanonError(f"cannot read {text!r} as a calendar date")
    try:
        return datetime.date(year, month, day).isoformat()
    except ValueError:
        raise CanonError(f"{text!r} is not a real date") from None


def canonical_time(text: str) -> str:
    """``text`` as a 24-hour ``HH:MM`` time of day; raises :class:`CanonError`."""
    s = _SPACE.sub(" ", text.strip().casefold())
    if s == "noon":
        return "12:00"
    if s == "midnight":
        return "00:00"
    if m := _TIME_12H.match(s):
        hour, minute = int(m[1]), int(m[2] or 0)
        if not 1 <= hour <= 12 or minute > 59 or int(m[3] or 0) > 59:
            raise CanonError(f"{text!r} is not a valid 12-hour time")
        hour = hour % 12 + (12 if m[4] == "p" else 0)
        return f"{hour:02d}:{minute:02d}"
    if m := _TIME_24H.match(s):
        hour, minute = int(m[1]), int(m[2])
        if hour > 23 or minute > 59 or int(m[3] or 0) > 59:
            raise CanonError(f"{text!r} is not a valid 24-hour time")
        return f"{hour:02d}:{minute:02d}"
    raise CanonError(f"cannot read {text!r} as a time of day")


def canonical_number(value: int | float) -> int | float:
    """Integral floats as ints (``20.0`` -> ``20``); others rounded to 6 decimals."""
    if isinstance(value, float):
        if value.is_integer():
            return int(value)
        return round(value, 6)
    return value


def free_text(text: str) -> str:
    """Free-text argument form: NFKC, straight quotes, collapsed whitespace, case-folded."""
    text = unicodedata.normalize("NFKC", text).translate(_QUOTES)
    return _SPACE.sub(" ", text).strip().casefold()


def _enum_key(value: str) -> str:
    return re.sub(r"[\s\-]+", "_", value.strip().casefold())


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def canonical_value(value: Any, schema: dict[str, Any]) -> Any:
    """The canonical form of one argument value under its property ``schema``."""
    if isinstance(value, dict):
        return _canonical_object(value, schema)
    if isinstance(value, list):
        items_schema = schema.get("items")
        item_schema: dict[str, Any] = items_schema if isinstance(items_schema, dict) else {}
        items = [canonical_value(v, item_schema) for v in value]
        if schema.get("uniqueItems"):
            items = sorted(items, key=dumps)
        return items
    if _is_number(value):
        return canonical_number(value)
    if not isinstance(value, str):
        return value
    enum = schema.get("enum")
    if isinstance(enum, list):
        key = _enum_key(value)
        for member in enum:
            if isinstance(member, str) and _enum_key(member) == key:
                return member
        return value  # not a member: validation reports it
    fmt = schema.get("format")
    if fmt == "date":
        return canonical_date(value)
    if fmt == "time":
        return canonical_time(value)
    if fmt == "email":
        return value.strip().casefold()
    if "pattern" in schema:
        return value.strip()
    return free_text(value)


def _canonical_object(obj: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    props = schema.get("properties") or {}
    filled = dict(obj)
    for key, prop in props.items():
        if key not in filled and isinstance(prop, dict) and "default" in prop:
            filled[key] = prop["default"]
    out = {key: canonical_value(filled[key], props.get(key) or {}) for key in sorted(filled)}
    return _base_unit(out, props)


def _base_unit(obj: dict[str, Any], props: dict[str, Any]) -> dict[str, Any]:
    """Convert a (number, unit) pair to its base unit; see the module docstring."""
    unit = obj.get("unit")
    unit_enum = (props.get("unit") or {}).get("enum")
    numeric = [
        k
        for k, p in props.items()
        if k != "unit" and isinstance(p, dict) and p.get("type") in ("number", "integer")
    ]
    if not isinstance(unit, str) or not isinstance(unit_enum, list) or len(numeric) != 1:
        return obj
    key = numeric[0]
    value = obj.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return obj
    converted: float
    if unit in _TIME_FACTORS and "seconds" in unit_enum:
        converted = value * _TIME_FACTORS[unit]
        base = "seconds"
    elif unit in _TEMPERATURE_UNITS and "celsius" in unit_enum:
        converted = value if unit == "celsius" else round((value - 32) * 5 / 9, 2)
        base = "celsius"
    else:
        return obj
    if props[key].get("type") == "integer" and not float(converted).is_integer():
        return obj  # an integer-only field keeps its own unit rather than become invalid
    return {**obj, key: canonical_number(float(converted)), "unit": base}


# --- calls and tools -------------------------------------------------------------------


def find_tool(tools: Sequence[dict[str, Any]] | None, name: str) -> dict[str, Any] | None:
    """The tool definition called ``name`` in ``tools`` (first match), or None."""
    for tool in tools or ():
        if tool.get("name") == name:
            return tool
    return None


def canonical_call(call: dict[str, Any], tool: dict[str, Any]) -> dict[str, Any]:
    """``{"name", "arguments"}`` with arguments canonicalised under ``tool``'s schema.

    Raises :class:`CanonError` for an unreadable date or time.
    """
    schema = tool.get("parameters") or {}
    args = call.get("arguments")
    if not isinstance(args, dict):
        raise CanonError("arguments must be an object")
    return {"name": call["name"], "arguments": _canonical_object(args, schema)}


def render_call(canon: dict[str, Any]) -> str:
    """The canonical call as the answer text (canonical compact JSON)."""
    return dumps({"name": canon["name"], "arguments": canon["arguments"]})


def refusal_text(tools: Sequence[dict[str, Any]] | None) -> str:
    """The assistant's answer when no offered tool applies: it names what it can do."""
    names = sorted({str(t.get("name")) for t in tools or ()})
    if not names:
        return "I can't do that here: no tools are available in this conversation."
    return "I can't do that with the tools available here (" + ", ".join(names) + ")."


@functools.lru_cache(maxsize=256)
def _validator(schema_json: str) -> Any:
    """A checked validator for one parameters schema (cached: schemas repeat across rows)."""
    import jsonschema

    schema = json.loads(schema_json)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def schema_errors(args: dict[str, Any], tool: dict[str, Any]) -> list[str]:
    """JSON-Schema violations of ``args`` under ``tool['parameters']`` (empty when valid).

    Raises ``jsonschema.SchemaError`` when the parameters are not a valid schema.
    """
    validator = _validator(json.dumps(tool.get("parameters") or {}, sort_keys=True))
    return sorted(
        f"{'/'.join(str(p) for p in e.absolute_path) or '<root>'}: {e.message}"
        for e in validator.iter_errors(args)
    )


def valid_canonical(
    call: dict[str, Any], tools: Sequence[dict[str, Any]] | None
) -> tuple[dict[str, Any] | None, str]:
    """``(canonical call, "")`` when ``call`` is offered and valid in ``tools``,
    else ``(None, why not)``."""
    if not isinstance(call, dict) or not isinstance(call.get("name"), str):
        return None, "call must be an object with a string name"
    tool = find_tool(tools, call["name"])
    if tool is None:
        return None, f"tool {call['name']!r} is not offered"
    import jsonschema

    try:
        canon = canonical_call(call, tool)
        errors = schema_errors(canon["arguments"], tool)
    except CanonError as e:
        return None, str(e)
    except jsonschema.SchemaError as e:
        return None, f"tool {call['name']!r} has an invalid parameters schema: {e.message}"
    if errors:
        return None, f"{call['name']} arguments violate the schema: {errors[0]}"
    return canon, ""


def tool_policy(tool: dict[str, Any] | None) -> str | None:
    """The ``policy`` of a tool definition, or None when it has no valid one.

    >>> tool_policy({"name": "set_alarm", "policy": "mutation"})
    'mutation'
    >>> tool_policy({"name": "x"}) is None
    True
    """
    policy = tool.get("policy") if isinstance(tool, dict) else None
    return policy if policy in TOOL_POLICIES else None


def called_policies(row: Row, calls: dict[str, Any]) -> tuple[list[tuple[str, str]], str | None]:
    """``([(policy, tool name), ...], problem)`` for the calls ``calls["call_a"]``
    and ``calls["call_b"]`` of ``row``, each looked up in its own side's tools.
    ``problem`` names a call whose tool is not offered or whose definition
    carries no valid policy."""
    found: list[tuple[str, str]] = []
    for side in ("a", "b"):
        call = calls.get(f"call_{side}")
        if call is None:
            continue
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            return found, f"call_{side} must be an object with a string name"
        tool = find_tool(getattr(row, f"tools_{side}"), call["name"])
        if tool is None:
            return found, f"call_{side}: tool {call['name']!r} is not offered in tools_{side}"
        policy = tool_policy(tool)
        if policy is None:
            return found, (
                f"call_{side}: the definition of {call['name']!r} carries no policy "
                f"(one of {', '.join(TOOL_POLICIES)})"
            )
        found.append((policy, call["name"]))
    return found, None


def never_cache(policies: Sequence[tuple[str, str]]) -> tuple[str, str] | None:
    """The strongest never-cache ``(policy, tool name)`` among ``policies``
    (mutation before time_sensitive, then call order), or None."""
    for kind in NEVER_CACHE:
        for policy, name in policies:
            if policy == kind:
                return policy, name
    return None


def _answer_key(text: str) -> str:
    return free_text(text)


def _side(row: Row, p: dict[str, Any], side: str) -> tuple[dict[str, Any] | None, str | None]:
    """(canonical call or None, problem or None) for one side."""
    call = p.get(f"call_{side}")
    tools = getattr(row, f"tools_{side}")
    expected = getattr(row, f"expected_answer_{side}")
    if not isinstance(expected, str) or not expected.strip():
        return None, f"expected_answer_{side} is missing"
    if call is None:
        kind = p.get(f"no_call_{side}")
        if kind not in NO_CALL_KINDS:
            return None, f"call_{side} is null but no_call_{side} is not one of {NO_CALL_KINDS}"
        if kind == "refusal" and expected != refusal_text(tools):
            return None, f"expected_answer_{side} is not the refusal text for tools_{side}"
        return None, None
    canon, why = valid_canonical(call, tools)
    if canon is None:
        return None, f"call_{side} is invalid under tools_{side}: {why}"
    if expected != render_call(canon):
        return None, f"expected_answer_{side} is not the canonical JSON of call_{side}"
    return canon, None


def check(row: Row) -> Check:
    """Re-derive the label of a ``tool_call`` row; a row whose call uses a
    never-cache tool is undecided (it must be a ``policy_no_cache`` row)."""
    p = row.verification_payload or {}
    if row.verification_method not in METHODS:
        return Check(None, f"tool_call payload on a {row.verification_method!r} row")
    if "call_a" not in p or "call_b" not in p:
        return Check(None, "tool_call payload needs call_a and call_b (null for no call)")
    policies, problem = called_policies(row, p)
    if problem:
        return Check(None, problem)
    strongest = never_cache(policies)
    if strongest is not None:
        return Check(
            None,
            f"{strongest[1]} is a {strongest[0]} tool: the row must be policy_no_cache (MISS), "
            "not a tool_call row",
        )
    return decide(row, p)


def decide(row: Row, p: dict[str, Any]) -> Check:
    """The verdict the calls of payload ``p`` alone give, whatever the tools'
    cache policy (the semantic relation of the two requests)."""
    if "call_a" not in p or "call_b" not in p:
        return Check(None, "the payload needs call_a and call_b (null for no call)")
    canon_a, problem = _side(row, p, "a")
    if problem:
        return Check(None, problem)
    canon_b, problem = _side(row, p, "b")
    if problem:
        return Check(None, problem)
    assert row.expected_answer_a is not None and row.expected_answer_b is not None
    if canon_a is None and canon_b is None:
        if _answer_key(row.expected_answer_a) == _answer_key(row.expected_answer_b):
            return Check(HIT, "neither side calls a tool and the cached text answers both")
        return Check(MISS, "neither side calls a tool, but the answers differ")
    if canon_a is None or canon_b is None:
        which = "query_a" if canon_a is None else "query_b"
        return Check(MISS, f"{which} needs no tool call while the other side does")
    if canon_a != canon_b:
        return Check(
            MISS, f"canonical calls differ: {render_call(canon_a)} vs {render_call(canon_b)}"
        )
    under_b, why = valid_canonical(p["call_a"], row.tools_b)
    if under_b is None:
        return Check(MISS, f"the cached call is not valid for query_b's tools: {why}")
    if under_b != canon_b:
        return Check(MISS, "under query_b's schema the cached call canonicalises differently")
    return Check(HIT, f"both sides canonicalise to {render_call(canon_b)}")
