"""Generator of the ``tool`` domain: request pairs to an assistant that has tools.

Fixtures (all hand-written, under ``sources/tool/``):

* ``tools.json``: the tool library (JSON-schema definitions in the common
  function-calling shape ``{"name", "description", "policy", "parameters"}``;
  ``policy`` is the tool's cache policy, see below), an ``effect`` phrase for
  never-cache tools and ``grounding`` phrases; the ``bundles`` of tools
  offered together; the ``system_prompts``.
* ``axes.json``: per subcategory, the default reason (``why``) and grounding.
* family files (:data:`FAMILY_FILES`): each family is one authored request
  ``q`` with the ``call`` it needs (or ``"call": null`` plus ``no_call``
  ``"refusal"``/``"direct"`` and, for direct answers, ``answer``), its
  ``bundle`` and optional ``system`` prompt key, and ``variants``. A variant
  gives ``label``, ``sub`` (subcategory), ``q``, and optionally ``args`` (same
  tool, other raw arguments), ``call`` (another call, or null), ``tools_b``
  (bundle name or list of tool ids), ``system_b``, ``why`` (row-specific
  reason) and ``method`` (construction-method override). A variant without
  ``args``/``call`` needs the family's call unchanged.
* ``unrelated.json``: hand-picked UNRELATED pairs ``"keyA|keyB"``; a key may be
  ``family#i`` to take that family's i-th variant instead of its request.

Row = (family request, variant), sides swapped by a seeded coin so neither the
authored request nor the variant always sits on the same side. ``source`` is
the family (for an UNRELATED row: the family of its query_b, so grouped
cross-validation keeps every query_b text inside one group).

Cache policy (one rule, stated once in :mod:`cacheeval.verify.tool` and read
from the tool definitions): every definition says ``"policy": "mutation"``
(calling it changes state: alarms, timers, reminders, calendar events, lights,
thermostat, music playback, messages, bookings, payments, cancellations),
``"time_sensitive"`` (it reads the live state of the world: weather, stock
quotes, exchange rates, news, flight and hotel availability, web search,
routes, restaurant listings) or ``"cacheable"`` (its result is a pure function
of its arguments: unit and time-zone conversion, translation, definitions,
calculators, static lookups, formatting). A row whose call on either side uses
a ``mutation`` or ``time_sensitive`` tool is a ``policy_no_cache`` row, binary
MISS whatever its semantic label, with a payload naming the policy and both
calls (:mod:`cacheeval.verify.policy` re-derives the policy from the
definitions). Every other row carries a ``tool_call`` payload; its method is
``json_schema`` when the sides are offered different tool sets or a side
makes no call, else ``canonical_tool_call``.

Every row is checked while generating: the calls must be valid under their
side's tools and the checker's verdict must match the label (for policy rows:
the verdict the calls alone would give must match the semantic label).
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..schema import EQUIV, HIT, HIT_LABELS, LABELS, MISS, POLICY_NO_CACHE, UNRELATED
from ..support.jsonio import dumps
from ..support.layout import rng
from ..verify import check_row
from ..verify import tool as toolcheck
from .common import CONSTRUCTION, DraftRow, FixtureError, fixture_source, read_fixture_json

DOMAIN = "tool"
LIBRARY_FILE = "tools.json"
AXES_FILE = "axes.json"
FAMILY_FILES: tuple[str, ...] = (
    "home.json",
    "organizer.json",
    "travel.json",
    "errands.json",
    "policy.json",
    "reference.json",
)
UNRELATED_FILE = "unrelated.json"

POLICY_KINDS = toolcheck.NEVER_CACHE


@dataclass(frozen=True, slots=True)
class Library:
    """The parsed ``tools.json`` and ``axes.json``."""

    path: Path
    tools: dict[str, dict[str, Any]]
    bundles: dict[str, tuple[str, ...]]
    systems: dict[str, str]
    axes: dict[str, dict[str, str]]


@dataclass(frozen=True, slots=True)
class Side:
    """One side of a pair: the request and the answer the assistant must give."""

    query: str
    call: dict[str, Any] | None
    no_call: str | None
    answer: str | None
    tool_ids: tuple[str, ...]
    system: str | None


@dataclass(frozen=True, slots=True)
class Where:
    """Where an authored item lives, for error messages and ``source``."""

    path: Path
    key: str


def _line_of(path: Path, needle: str) -> int:
    """First line of ``path`` containing ``needle`` as JSON text (1 if not found)."""
    encoded = json.dumps(needle, ensure_ascii=True)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return 1
    for i, line in enumerate(lines, 1):
        if encoded in line or needle in line:
            return i
    return 1


def _fail(path: Path, needle: str, message: str) -> FixtureError:
    return FixtureError(f"{path}:{_line_of(path, needle)}: {message}")


def _load(path: Path) -> Any:
    return read_fixture_json(path)[0]


# --- library ---------------------------------------------------------------------


def load_library(fixture_dir: Path) -> Library:
    """Read and check ``tools.json`` and ``axes.json``."""
    path = fixture_dir / LIBRARY_FILE
    data = _load(path)
    tools = data.get("tools") if isinstance(data, dict) else None
    if not isinstance(tools, dict) or not tools:
        raise FixtureError(f"{path}:1: expected an object with a non-empty 'tools' map")
    for tid, entry in tools.items():
        d = entry.get("definition") if isinstance(entry, dict) else None
        if not isinstance(d, dict) or not isinstance(d.get("name"), str):
            raise _fail(path, tid, f"tool {tid!r} needs a definition with a name")
        if not isinstance(d.get("parameters"), dict):
            raise _fail(path, tid, f"tool {tid!r} needs a parameters schema")
        if "policy" in entry:
            raise _fail(path, tid, f"tool {tid!r}: 'policy' belongs in the definition")
        if toolcheck.tool_policy(d) is None:
            raise _fail(
                path,
                tid,
                f"tool {tid!r} needs a definition policy: " + ", ".join(toolcheck.TOOL_POLICIES),
            )
        if d["policy"] in POLICY_KINDS and not isinstance(entry.get("effect"), str):
            raise _fail(path, tid, f"never-cache tool {tid!r} needs an 'effect' phrase")
        if not entry.get("grounding"):
            raise _fail(path, tid, f"tool {tid!r} needs grounding phrases")
    bundles: dict[str, tuple[str, ...]] = {}
    for name, ids in (data.get("bundles") or {}).items():
        for tid in ids:
            if tid not in tools:
                raise _fail(path, name, f"bundle {name!r} names unknown tool {tid!r}")
        bundles[name] = tuple(ids)
    axes_path = fixture_dir / AXES_FILE
    axes = _load(axes_path).get("axes")
    if not isinstance(axes, dict):
        raise FixtureError(f"{axes_path}:1: expected an object with an 'axes' map")
    return Library(path, tools, bundles, dict(data.get("system_prompts") or {}), axes)


def _tool_ids(lib: Library, spec: Any, where: Where, needle: str) -> tuple[str, ...]:
    if isinstance(spec, str):
        if spec not in lib.bundles:
            raise _fail(where.path, needle, f"{where.key}: unknown bundle {spec!r}")
        return lib.bundles[spec]
    if isinstance(spec, list) and spec and all(s in lib.tools for s in spec):
        return tuple(spec)
    raise _fail(where.path, needle, f"{where.key}: tools must be a bundle name or tool ids")


def _definitions(lib: Library, ids: tuple[str, ...]) -> list[dict[str, Any]]:
    return [copy.deepcopy(lib.tools[t]["definition"]) for t in ids]


def _tool_entry(lib: Library, ids: tuple[str, ...], name: str) -> dict[str, Any]:
    for t in ids:
        if lib.tools[t]["definition"]["name"] == name:
            return lib.tools[t]
    raise KeyError(name)


# --- families ----------------------------------------------------------------------


def _base_side(lib: Library, fam: dict[str, Any], where: Where) -> Side:
    needle = fam["key"]
    if "q" not in fam or "call" not in fam or "bundle" not in fam:
        raise _fail(where.path, needle, f"family {where.key!r} needs q, call and bundle")
    system = fam.get("system")
    if system is not None and system not in lib.systems:
        raise _fail(where.path, needle, f"{where.key}: unknown system prompt {system!r}")
    return Side(
        query=fam["q"],
        call=fam["call"],
        no_call=fam.get("no_call"),
        answer=fam.get("answer"),
        tool_ids=_tool_ids(lib, fam["bundle"], where, needle),
        system=system,
    )


def _variant_side(lib: Library, base: Side, v: dict[str, Any], where: Where) -> Side:
    needle = v.get("q", where.key)
    if not isinstance(v.get("q"), str) or not v["q"]:
        raise _fail(where.path, where.key, f"{where.key}: a variant has no q")
    if v.get("label") not in LABELS or v["label"] == UNRELATED:
        raise _fail(
            where.path, needle, f"{where.key}: variant label {v.get('label')!r} is not a pair label"
        )
    if v.get("sub") not in lib.axes:
        raise _fail(
            where.path, needle, f"{where.key}: subcategory {v.get('sub')!r} is not in axes.json"
        )
    call: dict[str, Any] | None
    if "call" in v:
        call = v["call"]
    elif "args" in v:
        if base.call is None:
            raise _fail(where.path, needle, f"{where.key}: 'args' on a family without a call")
        call = {"name": base.call["name"], "arguments": v["args"]}
    else:
        call = base.call
    system = v.get("system_b", base.system)
    if system is not None and system not in lib.systems:
        raise _fail(where.path, needle, f"{where.key}: unknown system prompt {system!r}")
    tool_ids = _tool_ids(lib, v["tools_b"], where, needle) if "tools_b" in v else base.tool_ids
    if call is None and "call" not in v:
        no_call, answer = base.no_call, base.answer
    else:
        no_call, answer = v.get("no_call"), v.get("answer")
    return Side(v["q"], call, no_call, answer, tool_ids, system)


def _answer(lib: Library, side: Side, where: Where) -> tuple[str, dict[str, Any] | None]:
    """(expected answer, canonical call or None) for a side; checks the call."""
    tools = _definitions(lib, side.tool_ids)
    if side.call is None:
        if side.no_call == "refusal":
            return toolcheck.refusal_text(tools), None
        if side.no_call == "direct" and isinstance(side.answer, str) and side.answer:
            return side.answer, None
        raise _fail(
            where.path,
            side.query,
            f"{where.key}: a null call needs no_call refusal, or direct + answer",
        )
    canon, why = toolcheck.valid_canonical(side.call, tools)
    if canon is None:
        raise _fail(
            where.path, side.query, f"{where.key}: call for {side.query!r} is invalid: {why}"
        )
    return toolcheck.render_call(canon), canon


def _policy_of(lib: Library, side: Side) -> tuple[str, str] | None:
    """(policy, tool name) when the side's call uses a never-cache tool."""
    if side.call is None:
        return None
    policy = _tool_entry(lib, side.tool_ids, side.call["name"])["definition"]["policy"]
    return (policy, side.call["name"]) if policy in POLICY_KINDS else None


# --- wording -------------------------------------------------------------------------


def _q(text: str) -> str:
    return f"\u201c{text}\u201d"


def _fmt(value: Any) -> str:
    return dumps(value)


def _summary(canon: dict[str, Any], tool_def: dict[str, Any]) -> str:
    """``name(k=v, ...)`` leaving out arguments equal to their schema default."""
    props = tool_def.get("parameters", {}).get("properties", {})
    parts = [
        f"{k}={_fmt(v)}"
        for k, v in canon["arguments"].items()
        if not ("default" in props.get(k, {}) and props[k]["default"] == v)
    ]
    return f"{canon['name']}({', '.join(parts)})"


def _diff(a: dict[str, Any], b: dict[str, Any]) -> tuple[str, str]:
    keys = sorted(set(a) | set(b))
    da = [f"{k}={_fmt(a[k])}" if k in a else f"no {k}" for k in keys if a.get(k) != b.get(k)]
    db = [f"{k}={_fmt(b[k])}" if k in b else f"no {k}" for k in keys if a.get(k) != b.get(k)]
    return ", ".join(da), ", ".join(db)


def _no_call_phrase(side: Side) -> str:
    if side.no_call == "refusal":
        return "a refusal (no offered tool applies)"
    return f"the direct reply {_q(side.answer or '')}"


def _rationale(
    lib: Library,
    label: str,
    a: Side,
    b: Side,
    canon_a: dict[str, Any] | None,
    canon_b: dict[str, Any] | None,
    why: str,
) -> str:
    qa, qb = _q(a.query), _q(b.query)
    if canon_a is not None:
        def_a = _tool_entry(lib, a.tool_ids, canon_a["name"])["definition"]
    if canon_b is not None:
        def_b = _tool_entry(lib, b.tool_ids, canon_b["name"])["definition"]
    if canon_a is None and canon_b is None:
        if label not in HIT_LABELS:
            return f"{qa} gets {_no_call_phrase(a)} and {qb} gets {_no_call_phrase(b)}: {why}."
        if a.no_call == b.no_call == "refusal":
            return (
                f"Neither {qa} nor {qb} can be served by the offered tools, "
                f"so both get the same refusal: {why}."
            )
        reply = _q(a.answer or "")
        return f"{qa} and {qb} need no tool, and the direct reply {reply} answers both: {why}."
    if canon_a is None:
        assert canon_b is not None
        return (
            f"The cached answer to {qa} is {_no_call_phrase(a)}, but {qb} needs "
            f"{_summary(canon_b, def_b)}: {why}."
        )
    if canon_b is None:
        return (
            f"{qb} must get {_no_call_phrase(b)}, not the cached {_summary(canon_a, def_a)} "
            f"made for {qa}: {why}."
        )
    if label in HIT_LABELS or label == UNRELATED:
        if canon_a == canon_b:
            return f"{qa} and {qb} resolve to the same call, {_summary(canon_a, def_a)}: {why}."
        sa, sb = _summary(canon_a, def_a), _summary(canon_b, def_b)
        return f"{qa} asks for {sa} while {qb} asks for {sb}: {why}."
    if canon_a["name"] == canon_b["name"] and canon_a["arguments"] != canon_b["arguments"]:
        da, db = _diff(canon_a["arguments"], canon_b["arguments"])
        return f"The cached {canon_a['name']} call for {qa} has {da}, but {qb} needs {db}: {why}."
    if canon_a == canon_b:
        return f"{qa} and {qb} would make the same call, {_summary(canon_a, def_a)}, but {why}."
    sa, sb = _summary(canon_a, def_a), _summary(canon_b, def_b)
    return f"{qa} needs {sa}, whereas {qb} needs {sb}: {why}."


def _grounding(lib: Library, a: Side, b: Side, sub: str, seed: tuple[str | int, ...]) -> str:
    pick = rng(DOMAIN, "grounding", *seed)
    lead = b if b.call is not None else a
    if lead.call is not None:
        phrases = _tool_entry(lib, lead.tool_ids, lead.call["name"])["grounding"]
    else:
        phrases = [
            "Tool-equipped assistants regularly receive requests their tools cannot serve",
            "Assistants with a fixed tool list still get everyday questions to answer or decline",
        ]
    tool_phrase = phrases[pick.randrange(len(phrases))]
    if sub == "cross_intent":
        other = a if lead is b else b
        before = f"a {other.call['name']} request" if other.call else "a request no tool serves"
        return f"{tool_phrase}; here it follows {before} in the same assistant's traffic."
    return f"{tool_phrase}; {lib.axes[sub]['grounding']}."


# --- rows -----------------------------------------------------------------------------


def _build_row(
    lib: Library,
    *,
    label: str,
    sub: str,
    a: Side,
    b: Side,
    why: str,
    construction: str,
    source: str,
    where: Where,
    seed: tuple[str | int, ...],
) -> DraftRow:
    ans_a, canon_a = _answer(lib, a, where)
    ans_b, canon_b = _answer(lib, b, where)
    tools_a = tuple(_definitions(lib, a.tool_ids))
    tools_b = tuple(_definitions(lib, b.tool_ids))
    if (a.query, a.system, a.tool_ids) == (b.query, b.system, b.tool_ids):
        raise _fail(where.path, b.query, f"{where.key}: the two sides are identical")
    if label == EQUIV and a.query == b.query and a.tool_ids == b.tool_ids and a.system == b.system:
        raise _fail(where.path, b.query, f"{where.key}: EQUIV sides are byte-identical")
    rationale = _rationale(lib, label, a, b, canon_a, canon_b, why)
    policies = [p for p in (_policy_of(lib, b), _policy_of(lib, a)) if p]
    payload: dict[str, Any]
    if policies:
        kind = "mutation" if any(p[0] == "mutation" for p in policies) else "time_sensitive"
        name = next(p[1] for p in policies if p[0] == kind)
        # Name the side whose call carries the policy, and both queries, so the
        # sentence is specific to this row (rows of one family share a query).
        pol_b = _policy_of(lib, b)
        on_b = pol_b is not None and pol_b[1] == name
        entry = _tool_entry(lib, b.tool_ids if on_b else a.tool_ids, name)
        if on_b:
            tail = (
                f"so {_q(b.query)} is never answered from a cache, not even with the reply "
                f"stored for {_q(a.query)}."
            )
        else:
            tail = (
                f"so the reply to {_q(a.query)} is never stored for reuse, let alone served "
                f"for {_q(b.query)}."
            )
        rationale += f" Besides, {name} {entry['effect']}, {tail}"
        method = POLICY_NO_CACHE
        payload = {
            "kind": "policy",
            "policy": kind,
            "reason": f"{name} {entry['effect']}",
            "call_a": a.call,
            "call_b": b.call,
        }
        if a.call is None:
            payload["no_call_a"] = a.no_call
        if b.call is None:
            payload["no_call_b"] = b.no_call
    else:
        method = (
            "json_schema"
            if a.tool_ids != b.tool_ids or a.call is None or b.call is None
            else "canonical_tool_call"
        )
        payload = {"kind": "tool_call", "call_a": a.call, "call_b": b.call}
        if a.call is None:
            payload["no_call_a"] = a.no_call
        if b.call is None:
            payload["no_call_b"] = b.no_call
    row = DraftRow(
        domain=DOMAIN,
        subcategory=sub,
        label=label,
        query_a=a.query,
        query_b=b.query,
        expected_answer_a=ans_a,
        expected_answer_b=ans_b,
        rationale=rationale,
        verification_method=method,
        verification_payload=payload,
        construction_method=construction,
        source=source,
        real_world_grounding=_grounding(lib, a, b, sub, seed),
        system_prompt_a=lib.systems[a.system] if a.system else None,
        system_prompt_b=lib.systems[b.system] if b.system else None,
        tools_a=tools_a,
        tools_b=tools_b,
    )
    _self_check(row, label, where, b.query)
    return row


def _self_check(row: DraftRow, label: str, where: Where, needle: str) -> None:
    """The checkers must re-derive the row: the calls alone must give the verdict
    of the semantic label, and the row's own checker its binary label."""
    data = row.to_row()
    p = row.verification_payload
    calls = {k: v for k, v in p.items() if k.startswith(("call_", "no_call_"))}
    got = toolcheck.decide(data, calls)
    want = HIT if label in HIT_LABELS else MISS
    if got.binary != want:
        raise _fail(
            where.path, needle, f"{where.key}: {label} row checks as {got.binary} ({got.detail})"
        )
    verdict = check_row(data)
    if verdict.binary != row.binary_label:
        raise _fail(
            where.path,
            needle,
            f"{where.key}: the {row.verification_method} checker gives {verdict.binary} "
            f"for a {row.binary_label} row ({verdict.detail})",
        )


def _oriented(a: Side, b: Side, *seed: str | int) -> tuple[Side, Side]:
    """Swap the sides on a seeded coin flip."""
    return (b, a) if rng(DOMAIN, "orient", *seed).random() < 0.5 else (a, b)


def generate(fixture_dir: Path) -> list[DraftRow]:
    """All tool-domain rows of ``fixture_dir``, in fixture order."""
    lib = load_library(fixture_dir)
    families: dict[str, tuple[dict[str, Any], Where, Side]] = {}
    rows: list[DraftRow] = []
    for name in FAMILY_FILES:
        path = fixture_dir / name
        data = _load(path)
        families_list = data.get("families") if isinstance(data, dict) else None
        if not isinstance(families_list, list):
            raise FixtureError(f"{path}:1: expected an object with a 'families' list")
        for fam in families_list:
            if not isinstance(fam, dict) or not all(
                isinstance(v, dict) for v in fam.get("variants", [])
            ):
                raise FixtureError(f"{path}:1: every family and variant must be a JSON object")
            key = fam.get("key")
            if not isinstance(key, str) or key in families:
                raise _fail(path, str(key), f"family key {key!r} is missing or repeated")
            where = Where(path, key)
            base = _base_side(lib, fam, where)
            families[key] = (fam, where, base)
            source = fixture_source(path, key)
            for i, v in enumerate(fam.get("variants", [])):
                other = _variant_side(lib, base, v, where)
                a, b = _oriented(base, other, key, i)
                label, sub = v["label"], v["sub"]
                rows.append(
                    _build_row(
                        lib,
                        label=label,
                        sub=sub,
                        a=a,
                        b=b,
                        why=v.get("why") or lib.axes[sub]["why"],
                        construction=v.get("method") or CONSTRUCTION[label],
                        source=source,
                        where=where,
                        seed=(key, i),
                    )
                )
    rows.extend(_unrelated_rows(lib, fixture_dir, families))
    _check_unique(rows)
    return rows


def _pick(
    lib: Library,
    families: dict[str, tuple[dict[str, Any], Where, Side]],
    ref: str,
    path: Path,
) -> tuple[Side, Where]:
    key, _, idx = ref.partition("#")
    if key not in families:
        raise _fail(path, ref, f"unknown family {key!r}")
    fam, where, base = families[key]
    if not idx:
        return base, where
    variants = fam.get("variants", [])
    if not idx.isdigit() or int(idx) >= len(variants):
        raise _fail(path, ref, f"family {key!r} has no variant {idx!r}")
    return _variant_side(lib, base, variants[int(idx)], where), where


def _unrelated_rows(
    lib: Library,
    fixture_dir: Path,
    families: dict[str, tuple[dict[str, Any], Where, Side]],
) -> list[DraftRow]:
    path = fixture_dir / UNRELATED_FILE
    pairs = _load(path).get("pairs", [])
    out = []
    for j, pair in enumerate(pairs):
        left_ref, sep, right_ref = str(pair).partition("|")
        if not sep:
            raise _fail(path, str(pair), f"pair {pair!r} must read 'familyA|familyB'")
        left, left_where = _pick(lib, families, left_ref, path)
        right, right_where = _pick(lib, families, right_ref, path)
        a, b = _oriented(left, right, "unrelated", j)
        where_b = right_where if b is right else left_where
        out.append(
            _build_row(
                lib,
                label=UNRELATED,
                sub="cross_intent",
                a=a,
                b=b,
                why=lib.axes["cross_intent"]["why"],
                construction=CONSTRUCTION[UNRELATED],
                source=fixture_source(where_b.path, where_b.key),
                where=Where(path, str(pair)),
                seed=("unrelated", j),
            )
        )
    return out


def _check_unique(rows: list[DraftRow]) -> None:
    """No two rows may share a pair (in either order); rationales must differ."""
    seen: dict[str, int] = {}
    rationales: dict[str, int] = {}
    for i, r in enumerate(rows):
        side_a = dumps([r.query_a, r.context_a, r.system_prompt_a, r.tools_a])
        side_b = dumps([r.query_b, r.context_b, r.system_prompt_b, r.tools_b])
        key = dumps(sorted([side_a, side_b]))
        if key in seen:
            raise FixtureError(
                f"{r.source}: rows {seen[key] + 1} and {i + 1} repeat the pair "
                f"{r.query_a!r} / {r.query_b!r}"
            )
        seen[key] = i
        if r.rationale in rationales:
            first = rationales[r.rationale] + 1
            raise FixtureError(f"{r.source}: rows {first} and {i + 1} share a rationale")
        rationales[r.rationale] = i
