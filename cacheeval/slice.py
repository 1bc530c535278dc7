"""The evolving private slice: fresh ADVERSARIAL / PARA_SAFE rows drawn with a
secret seed, so maintainers can grade caches on rows no one has seen.

The public test labels can be re-derived by anyone who runs the build from the
committed shards; this slice is the unseen test. :func:`generate_slice` fills
``size`` slots. Slot ``i`` gets the label ``SLICE_LABELS[i % 2]`` and the
domain ``domains[(i // 2) % len(domains)]``; its row is drawn from the
templates of that (domain, label) with the random stream
``rng("slice", secret, i, attempt)`` (seeded by
:func:`cacheeval.generators.common.stable_seed`). A candidate is kept only when

* neither side's query, normalised with
  :func:`cacheeval.verify.textnorm.normalize_answer` (NFKC, case-folded,
  sentence punctuation dropped, whitespace collapsed), equals a normalised
  query of any public row or of an earlier slice row, and
* the row passes :func:`cacheeval.dataset.row_problem` and
  :func:`cacheeval.verify.check_row` re-derives its binary label.

A check that disagrees is a template bug and raises :class:`SliceError`; a
stale candidate is redrawn (``attempt + 1``, at most
:data:`MAX_ATTEMPTS` times). Because every slot has its own stream, the same
secret with a larger ``size`` extends the smaller slice (for the same public
set and domains).

Templates re-sample the values of the patterns the domain generators use:
math (linear equations, percentages, unit conversions, subtractions; rows
built by :func:`cacheeval.generators.math.variant_row`) and tool calls
(alarms, timers, thermostat, lights, flight searches; tool schemas and
wording axes read from ``sources/tool`` with
:func:`cacheeval.generators.tool.load_library`, calls canonicalised by
:mod:`cacheeval.verify.tool`). Ids are ``cb-<domain>-9NNN`` (never a public
id); the split is ``test``; rows come out in DOMAINS order, then id.
"""

from __future__ import annotations

import copy
import datetime
import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

from .dataset import iter_bench, row_problem
from .generators import math as math_gen
from .generators import tool as tool_gen
from .generators.common import SOURCES_DIR, make_row, rng, source_ref
from .schema import ADVERSARIAL, DOMAINS, HIT_LABELS, PARA_SAFE, POLICY_NO_CACHE, ROW_FIELDS, Row
from .verify import check_row
from .verify import tool as toolcheck
from .verify.textnorm import normalize_answer

#: Domains with slice templates, in DOMAINS order.
SLICE_DOMAINS: tuple[str, ...] = ("math", "tool")
#: Labels the slice draws, alternating slot by slot.
SLICE_LABELS: tuple[str, ...] = (ADVERSARIAL, PARA_SAFE)
#: Slice ids are cb-<domain>-9001 ... cb-<domain>-9999.
ID_OFFSET = 9000
MAX_PER_DOMAIN = 999
#: Redraws of one slot before giving up (the public set would have to cover
#: nearly all of a template's value space).
MAX_ATTEMPTS = 200
SPLIT = "test"

_HERE = Path(__file__).resolve()


class SliceError(ValueError):
    """The slice cannot be generated (bad arguments, no fresh rows, a template bug)."""


def normalise_text(text: str) -> str:
    """The form in which slice and public queries are compared (see module doc)."""
    return normalize_answer(text)


def public_texts(rows: Iterable[Row]) -> frozenset[str]:
    """Every normalised ``query_a`` and ``query_b`` of ``rows``."""
    out: set[str] = set()
    for r in rows:
        out.add(normalise_text(r.query_a))
        out.add(normalise_text(r.query_b))
    return frozenset(out)


def load_public_texts(paths: Sequence[str | Path]) -> tuple[frozenset[str], int]:
    """(normalised public queries, number of public rows) of benchmark files.

    Each file is checked line by line (``path:LINE:`` errors, via
    :func:`cacheeval.dataset.iter_bench`); hidden test rows count too.
    """
    texts: set[str] = set()
    n = 0
    for path in paths:
        rows = list(iter_bench(path))
        n += len(rows)
        texts |= public_texts(rows)
    return frozenset(texts), n


# --- helpers ------------------------------------------------------------------------


def _num(x: Fraction) -> str:
    """A number as an answer: ``6``, ``-4/3``."""
    return str(x.numerator) if x.denominator == 1 else f"{x.numerator}/{x.denominator}"


def _round2(x: Fraction) -> str:
    """``x >= 0`` rounded half up to exactly two decimals."""
    if x < 0:
        raise SliceError("internal: _round2 takes a non-negative value")
    hundredths = int(x * 100 + Fraction(1, 2))
    return f"{hundredths // 100}.{hundredths % 100:02d}"


def _pick_two(r: random.Random, options: Sequence[str]) -> tuple[str, str]:
    first, second = r.sample(range(len(options)), 2)
    return options[first], options[second]


# --- math templates ----------------------------------------------------------------------

_LETTERS = "abcdfghkmnpqrstuvwxyz"


@dataclass(frozen=True, slots=True)
class MathDraw:
    """One drawn math pair: the base request, the variant and how they relate."""

    key: str
    grounding: str
    base: math_gen.Request
    other: math_gen.Request
    sub: str
    note: str


def _linear(r: random.Random, label: str) -> MathDraw:
    """Solve ``k*v + b = c`` (integer root); perturb the letter, c or the sign."""
    v = r.choice(_LETTERS)
    k, s, b = r.randint(2, 12), r.randint(-12, 25), r.randint(1, 40)
    c = k * s + b
    forms = (
        ("imperative", "Solve {eq}"),
        ("imperative", "Solve for {v}: {eq}"),
        ("question", "What value of {v} satisfies {eq}?"),
        ("imperative", "Find {v} if {eq}"),
        ("polite", "Could you solve {eq} for {v}?"),
        ("question", "{eq}. What is {v}?"),
    )

    def request(form: str, letter: str, sign: str, rhs: int) -> math_gen.Request:
        eq = f"{k}{letter} {sign} {b} = {rhs}"
        root = Fraction(rhs - b if sign == "+" else rhs + b, k)
        task = {"op": "solve", "expr": f"{k}*{letter} {sign} {b} = {rhs}", "var": letter}
        return math_gen.Request(form.format(eq=eq, v=letter), task, f"{letter} = {_num(root)}")

    i, j = r.sample(range(len(forms)), 2)
    base = request(forms[i][1], v, "+", c)
    grounding = "algebra homework help, where worksheets repeat one two-step equation template"
    if label == PARA_SAFE:
        kind = forms[j][0]
        sub = {"imperative": "imperative_rewording", "polite": "polite_rewording"}.get(
            kind, "question_rewording"
        )
        note = f"Both requests solve {k}{v} + {b} = {c} for {v}; only the wording around it moves."
        return MathDraw("linear", grounding, base, request(forms[j][1], v, "+", c), sub, note)
    choice = r.randrange(3)
    if choice == 0:
        w = r.choice([x for x in _LETTERS if x != v])
        note = f"The equation keeps every number but writes its unknown as {w}, not {v}."
        return MathDraw(
            "linear", grounding, base, request(forms[i][1], w, "+", c), "variable_rename", note
        )
    if choice == 1:
        d = r.choice([x for x in range(-5, 6) if x != 0])
        rhs = c + k * d
        note = f"Only the right-hand side changes, {c} against {rhs}, which moves {v} by {d}."
        return MathDraw(
            "linear", grounding, base, request(forms[i][1], v, "+", rhs), "operand_change", note
        )
    note = f"A plus turned into a minus in front of {b} changes the root of the equation."
    return MathDraw(
        "linear", grounding, base, request(forms[i][1], v, "-", c), "operator_swap", note
    )


def _percent(r: random.Random, label: str) -> MathDraw:
    """``p% of n`` with p a multiple of 5 and n of 20 (integer results)."""
    p, n = 5 * r.randint(1, 19), 20 * r.randint(1, 50)
    forms = (
        "What is {p}% of {n}?",
        "Calculate {p}% of {n}",
        "How much is {p} percent of {n}?",
        "Find {p} percent of {n}.",
        "Work out {p}% of {n}",
    )

    def request(form: str, pct: int, total: int) -> math_gen.Request:
        task = {"op": "evaluate", "expr": f"{pct}/100*{total}"}
        return math_gen.Request(form.format(p=pct, n=total), task, str(pct * total // 100))

    f1, f2 = _pick_two(r, forms)
    base = request(f1, p, n)
    grounding = "shoppers and students working out percentages of amounts"
    if label == PARA_SAFE:
        sub = "terminology_variant" if ("%" in f1) != ("%" in f2) else "question_rewording"
        note = f"Both ask for {p} percent of {n}, worded differently."
        return MathDraw("percent", grounding, base, request(f2, p, n), sub, note)
    if r.random() < 0.5:
        p2 = r.choice([x for x in (p - 5, p + 5, p - 10, p + 10) if 5 <= x <= 95])
        note = f"The rate changes from {p}% to {p2}%, so the share of {n} changes too."
        return MathDraw("percent", grounding, base, request(f1, p2, n), "operand_change", note)
    n2 = r.choice([x for x in (n - 20, n + 20, n + 40, n - 40) if 20 <= x <= 1000])
    note = f"The same {p}% is taken of {n2} instead of {n}."
    return MathDraw("percent", grounding, base, request(f1, p, n2), "operand_change", note)


#: (unit, plural name in queries, plural name in answers) pairs that convert
#: into each other; names map to the checker's units via its aliases.
_UNIT_PAIRS: tuple[tuple[tuple[str, str], tuple[str, str]], ...] = (
    (("km", "kilometres"), ("mile", "miles")),
    (("kg", "kilograms"), ("lb", "pounds")),
    (("L", "litres"), ("gal", "gallons")),
    (("m", "metres"), ("ft", "feet")),
)


def _convert(r: random.Random, label: str) -> MathDraw:
    """Convert a whole quantity between two units, rounded to 2 places."""
    (u1, n1), (u2, n2) = r.choice(_UNIT_PAIRS)
    if r.random() < 0.5:
        (u1, n1), (u2, n2) = (u2, n2), (u1, n1)
    value = r.randint(2, 500)
    forms = (
        "Convert {v} {src} to {dst}, rounded to 2 decimal places",
        "How many {dst} is {v} {src}? Round to 2 decimal places.",
        "Express {v} {src} in {dst} (2 decimal places)",
        "{v} {src} in {dst}, to two decimal places?",
    )

    def request(form: str, src: tuple[str, str], dst: tuple[str, str]) -> math_gen.Request:
        ratio = _unit_ratio(src[0], dst[0])
        task = {"op": "convert", "value": value, "from": src[0], "to": dst[0], "places": 2}
        answer = f"{_round2(value * ratio)} {dst[1]}"
        return math_gen.Request(form.format(v=value, src=src[1], dst=dst[1]), task, answer)

    f1, f2 = _pick_two(r, forms)
    base = request(f1, (u1, n1), (u2, n2))
    grounding = "travellers, runners and cooks converting quantities between unit systems"
    if label == PARA_SAFE:
        note = f"Both convert {value} {n1} into {n2} to two decimals, in other words."
        return MathDraw(
            "convert", grounding, base, request(f2, (u1, n1), (u2, n2)), "question_rewording", note
        )
    note = f"The direction flips: {value} {n2} into {n1} instead of {value} {n1} into {n2}."
    return MathDraw(
        "convert", grounding, base, request(f1, (u2, n2), (u1, n1)), "direction_swap", note
    )


def _unit_ratio(src: str, dst: str) -> Fraction:
    """Exact factor from unit ``src`` to unit ``dst`` (the math checker's table)."""
    from .verify.math import UNITS

    return UNITS[src][1] / UNITS[dst][1]


def _difference(r: random.Random, label: str) -> MathDraw:
    """``a - b``; the adversarial edit swaps the operands."""
    a, b = r.sample(range(10, 1000), 2)
    forms = (
        "What is {a} minus {b}?",
        "Subtract {b} from {a}.",
        "Compute {a} - {b}",
        "How much is {a} - {b}?",
        "Take {b} away from {a}",
    )

    def request(form: str, x: int, y: int) -> math_gen.Request:
        task = {"op": "evaluate", "expr": f"{x} - {y}"}
        return math_gen.Request(form.format(a=x, b=y), task, str(x - y))

    f1, f2 = _pick_two(r, forms)
    base = request(f1, a, b)
    grounding = "mental-arithmetic checks typed into an assistant"
    if label == PARA_SAFE:
        note = f"Both ask for {a} minus {b}; only the phrasing differs."
        return MathDraw(
            "difference", grounding, base, request(f2, a, b), "terminology_variant", note
        )
    note = f"The operands trade places, so {b} - {a} is the negative of {a} - {b}."
    return MathDraw("difference", grounding, base, request(f1, b, a), "argument_order", note)


_MATH_TEMPLATES: tuple[Callable[[random.Random, str], MathDraw], ...] = (
    _linear,
    _percent,
    _convert,
    _difference,
)


def _math_row(r: random.Random, label: str, _ctx: _Context) -> dict[str, Any]:
    draw = r.choice(_MATH_TEMPLATES)(r, label)
    family = math_gen.Family(
        key=draw.key, path=_HERE, grounding=draw.grounding, base=draw.base, variants=()
    )
    variant = math_gen.Variant(
        id=draw.sub,
        label=label,
        sub=draw.sub,
        request=draw.other,
        note=draw.note,
        partner="base",
        grounding=None,
        flip=r.random() < 0.5,
    )
    return math_gen.variant_row(family, variant)


# --- tool templates -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ToolSide:
    """One request to a tool-equipped assistant and the call it needs."""

    query: str
    call: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ToolDraw:
    """One drawn tool pair (base, other) offered the same ``bundle``."""

    key: str
    tool: str
    bundle: str
    base: ToolSide
    other: ToolSide
    sub: str


_MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)

#: City name -> IATA code (the search_flights schema takes three capitals).
_CITIES: tuple[tuple[str, str], ...] = (
    ("Seattle", "SEA"),
    ("Denver", "DEN"),
    ("Boston", "BOS"),
    ("Atlanta", "ATL"),
    ("Miami", "MIA"),
    ("Austin", "AUS"),
    ("Portland", "PDX"),
    ("Nashville", "BNA"),
    ("San Diego", "SAN"),
    ("Orlando", "MCO"),
    ("Las Vegas", "LAS"),
    ("Philadelphia", "PHL"),
    ("Phoenix", "PHX"),
    ("Salt Lake City", "SLC"),
    ("Minneapolis", "MSP"),
    ("Detroit", "DTW"),
    ("Charlotte", "CLT"),
    ("Raleigh", "RDU"),
)

_ROOMS: tuple[str, ...] = ("kitchen", "living room", "bedroom", "bathroom", "hallway", "office")


def _say_date(r: random.Random, d: datetime.date) -> str:
    if r.random() < 0.5:
        return f"{_MONTHS[d.month - 1]} {d.day}, {d.year}"
    return f"{d.day} {_MONTHS[d.month - 1]} {d.year}"


def _alarm(r: random.Random, label: str) -> ToolDraw:
    hour, minute = r.randint(1, 12), r.choice((0, 5, 10, 15, 20, 30, 40, 45, 50))
    mer = r.choice(("AM", "PM"))
    forms = (
        "Set an alarm for {t}",
        "Wake me up at {t}",
        "Please set an alarm at {t}",
        "I need an alarm at {t}",
        "Alarm for {t}, please",
    )

    def side(form: str, h: int, m: int, meridiem: str) -> ToolSide:
        t = f"{h}:{m:02d} {meridiem}"
        return ToolSide(form.format(t=t), {"name": "set_alarm", "arguments": {"time": t}})

    f1, f2 = _pick_two(r, forms)
    base = side(f1, hour, minute, mer)
    if label == PARA_SAFE:
        return ToolDraw(
            "alarm", "set_alarm", "home", base, side(f2, hour, minute, mer), "intent_paraphrase"
        )
    if r.random() < 0.5:
        flipped = "PM" if mer == "AM" else "AM"
        return ToolDraw(
            "alarm", "set_alarm", "home", base, side(f1, hour, minute, flipped), "meridiem_flip"
        )
    m2 = r.choice([m for m in (0, 5, 10, 15, 20, 30, 40, 45, 50) if m != minute])
    return ToolDraw("alarm", "set_alarm", "home", base, side(f1, hour, m2, mer), "time_change")


def _timer(r: random.Random, label: str) -> ToolDraw:
    n = r.randint(2, 120)
    forms = (
        "Set a timer for {n} {u}",
        "Start a timer for {n} {u}",
        "Time {n} {u} for me",
        "Give me a timer of {n} {u}",
    )

    def side(form: str, amount: int, unit: str) -> ToolSide:
        call = {"name": "set_timer", "arguments": {"duration": amount, "unit": unit}}
        return ToolSide(form.format(n=amount, u=unit), call)

    f1, f2 = _pick_two(r, forms)
    base = side(f1, n, "minutes")
    if label == PARA_SAFE:
        if r.random() < 0.5:
            return ToolDraw(
                "timer", "set_timer", "home", base, side(f2, n * 60, "seconds"), "unit_equivalent"
            )
        return ToolDraw(
            "timer", "set_timer", "home", base, side(f2, n, "minutes"), "intent_paraphrase"
        )
    if r.random() < 0.5:
        n2 = r.choice([x for x in range(max(2, n - 10), n + 11) if x != n])
        return ToolDraw(
            "timer", "set_timer", "home", base, side(f1, n2, "minutes"), "amount_change"
        )
    unit = r.choice(("seconds", "hours"))
    return ToolDraw("timer", "set_timer", "home", base, side(f1, n, unit), "unit_flip")


def _thermostat(r: random.Random, label: str) -> ToolDraw:
    unit = r.choice(("celsius", "fahrenheit"))
    t = r.randint(16, 28) if unit == "celsius" else r.randint(60, 82)
    forms = (
        "Set the thermostat to {t} degrees {U}",
        "Change the thermostat to {t} degrees {U}",
        "Make it {t} degrees {U} in the house",
        "Adjust the heating to {t} degrees {U}",
    )

    def side(form: str, temp: int, u: str) -> ToolSide:
        call = {"name": "set_thermostat", "arguments": {"temperature": temp, "unit": u}}
        return ToolSide(form.format(t=temp, U=u.capitalize()), call)

    f1, f2 = _pick_two(r, forms)
    base = side(f1, t, unit)
    if label == PARA_SAFE:
        return ToolDraw(
            "thermostat", "set_thermostat", "home", base, side(f2, t, unit), "intent_paraphrase"
        )
    if r.random() < 0.5:
        t2 = r.choice([x for x in range(t - 4, t + 5) if x != t])
        return ToolDraw(
            "thermostat", "set_thermostat", "home", base, side(f1, t2, unit), "amount_change"
        )
    other = "fahrenheit" if unit == "celsius" else "celsius"
    return ToolDraw("thermostat", "set_thermostat", "home", base, side(f1, t, other), "unit_flip")


def _lights(r: random.Random, label: str) -> ToolDraw:
    room, level = r.choice(_ROOMS), 5 * r.randint(2, 20)
    forms = (
        "Turn on the {room} lights at {b}% brightness",
        "Set the {room} lights to {b} percent",
        "Switch on the {room} light, brightness {b}%",
        "{room} lights on at {b}%, please",
    )

    def side(form: str, where: str, b: int) -> ToolSide:
        args = {"room": where, "state": "on", "brightness": b}
        text = form.format(room=where, b=b)
        return ToolSide(text[0].upper() + text[1:], {"name": "set_lights", "arguments": args})

    f1, f2 = _pick_two(r, forms)
    base = side(f1, room, level)
    if label == PARA_SAFE:
        return ToolDraw(
            "lights", "set_lights", "home", base, side(f2, room, level), "intent_paraphrase"
        )
    if r.random() < 0.5:
        room2 = r.choice([x for x in _ROOMS if x != room])
        return ToolDraw(
            "lights", "set_lights", "home", base, side(f1, room2, level), "entity_change"
        )
    level2 = r.choice([x for x in range(10, 101, 5) if x != level])
    return ToolDraw("lights", "set_lights", "home", base, side(f1, room, level2), "amount_change")


def _flights(r: random.Random, label: str) -> ToolDraw:
    (city_a, code_a), (city_b, code_b) = r.sample(_CITIES, 2)
    day = datetime.date(2026, 1, 1) + datetime.timedelta(days=r.randrange(365))
    forms = (
        "Find flights from {a} to {b} on {d}",
        "Search for flights {a} to {b}, departing {d}",
        "Show me flights from {a} to {b} leaving {d}",
        "{d}: which flights go from {a} to {b}?",
    )

    def side(
        form: str, src: tuple[str, str], dst: tuple[str, str], when: datetime.date
    ) -> ToolSide:
        said = _say_date(r, when)
        args = {"origin": src[1], "destination": dst[1], "departure_date": said}
        return ToolSide(
            form.format(a=src[0], b=dst[0], d=said), {"name": "search_flights", "arguments": args}
        )

    f1, f2 = _pick_two(r, forms)
    a, b = (city_a, code_a), (city_b, code_b)
    base = side(f1, a, b, day)
    if label == PARA_SAFE:
        other = side(f2, a, b, day)
        # The same call with its arguments emitted in another order.
        args = dict(reversed(list(other.call["arguments"].items())))
        other = ToolSide(other.query, {"name": "search_flights", "arguments": args})
        return ToolDraw("flights", "search_flights", "travel", base, other, "argument_order")
    if r.random() < 0.5:
        return ToolDraw(
            "flights", "search_flights", "travel", base, side(f1, b, a, day), "direction_swap"
        )
    later = day + datetime.timedelta(days=r.randint(1, 5))
    return ToolDraw(
        "flights", "search_flights", "travel", base, side(f1, a, b, later), "date_shift"
    )


_TOOL_TEMPLATES: tuple[Callable[[random.Random, str], ToolDraw], ...] = (
    _alarm,
    _timer,
    _thermostat,
    _lights,
    _flights,
)


def _q(text: str) -> str:
    return f"\u201c{text}\u201d"


def _tool_row(r: random.Random, label: str, ctx: _Context) -> dict[str, Any]:
    lib = ctx.library()
    draw = r.choice(_TOOL_TEMPLATES)(r, label)
    tools = [copy.deepcopy(lib.tools[t]["definition"]) for t in lib.bundles[draw.bundle]]
    a, b = (draw.other, draw.base) if r.random() < 0.5 else (draw.base, draw.other)
    answers: list[str] = []
    for side in (a, b):
        canon, why = toolcheck.valid_canonical(side.call, tools)
        if canon is None:
            raise SliceError(f"internal: tool template {draw.key!r} made an invalid call: {why}")
        answers.append(toolcheck.render_call(canon))
    why = lib.axes[draw.sub]["why"]
    if label in HIT_LABELS:
        rationale = (
            f"{_q(a.query)} and {_q(b.query)} resolve to the same call, {answers[0]}: {why}."
        )
    else:
        rationale = (
            f"The cached call for {_q(a.query)} is {answers[0]}, but {_q(b.query)} needs "
            f"{answers[1]}: {why}."
        )
    phrases = lib.tools[draw.tool]["grounding"]
    grounding = f"{phrases[r.randrange(len(phrases))]}; {lib.axes[draw.sub]['grounding']}."
    # The write-tool policy (SCHEMA.md §2.1), read from the tool definitions: a
    # call to a mutation or time_sensitive tool makes the row a policy row.
    calls = {"call_a": a.call, "call_b": b.call}
    never = toolcheck.never_cache(
        [
            (toolcheck.tool_policy(toolcheck.find_tool(tools, c["name"])) or "", c["name"])
            for c in (a.call, b.call)
        ]
    )
    method, payload = "canonical_tool_call", {"kind": "tool_call", **calls}
    if never is not None:
        effect = next(
            e["effect"] for e in lib.tools.values() if e["definition"]["name"] == never[1]
        )
        rationale += f" Besides, {never[1]} {effect}, so neither request is served from a cache."
        method = POLICY_NO_CACHE
        payload = {"kind": "policy", "policy": never[0], "reason": f"{never[1]} {effect}", **calls}
    return make_row(
        id="cb-tool-0000",
        domain="tool",
        subcategory=draw.sub,
        label=label,
        query_a=a.query,
        query_b=b.query,
        expected_answer_a=answers[0],
        expected_answer_b=answers[1],
        rationale=rationale,
        verification_method=method,
        verification_payload=payload,
        construction_method=tool_gen.CONSTRUCTION[label],
        source=source_ref(_HERE, draw.key),
        real_world_grounding=grounding,
        tools_a=tools,
        tools_b=copy.deepcopy(tools),
    )


# --- the slice ----------------------------------------------------------------------------


class _Context:
    """Fixtures the templates read, loaded on first use."""

    def __init__(self, sources_dir: Path) -> None:
        self.sources_dir = sources_dir
        self._library: tool_gen.Library | None = None

    def library(self) -> tool_gen.Library:
        if self._library is None:
            try:
                self._library = tool_gen.load_library(self.sources_dir)
            except tool_gen.FixtureError as e:
                raise SliceError(str(e)) from None
        return self._library


_BUILDERS: dict[str, Callable[[random.Random, str, _Context], dict[str, Any]]] = {
    "math": _math_row,
    "tool": _tool_row,
}


def _finish(row: dict[str, Any], rid: str) -> dict[str, Any]:
    """The full row in file order with its slice id and split."""
    data = {**row, "id": rid, "split": SPLIT}
    return {f: data[f] for f in ROW_FIELDS}


def _verify(row: dict[str, Any]) -> None:
    problem = row_problem(row, require_labels=True)
    if problem:
        raise SliceError(f"internal: slice row {row['id']} is invalid: {problem}")
    got = check_row(Row.from_dict(row))
    if got.binary != row["binary_label"]:
        raise SliceError(
            f"internal: slice row {row['id']} ({row['subcategory']}) is labelled "
            f"{row['binary_label']} but its checker says {got.binary}: {got.detail}"
        )


def slots(size: int, domains: Sequence[str]) -> list[tuple[str, str]]:
    """(domain, label) of each slot: labels alternate, domains change every two slots."""
    return [
        (domains[(i // len(SLICE_LABELS)) % len(domains)], SLICE_LABELS[i % len(SLICE_LABELS)])
        for i in range(size)
    ]


def generate_slice(
    secret: str,
    size: int,
    public: frozenset[str],
    *,
    domains: Sequence[str] = SLICE_DOMAINS,
    sources_dir: Path = SOURCES_DIR,
) -> list[dict[str, Any]]:
    """``size`` fresh, verified slice rows (full rows, labels included).

    ``public`` holds the normalised queries no slice query may equal
    (:func:`load_public_texts`). Deterministic in (secret, size, public,
    domains, fixtures). Raises :class:`SliceError`.
    """
    if not secret:
        raise SliceError("the secret seed must not be empty")
    if size < 1:
        raise SliceError(f"size must be at least 1, got {size}")
    unknown = [d for d in domains if d not in _BUILDERS]
    if unknown or not domains:
        raise SliceError(
            f"no slice templates for domain(s) {', '.join(unknown) or '(none)'} "
            f"(available: {', '.join(SLICE_DOMAINS)})"
        )
    plan = slots(size, list(dict.fromkeys(domains)))
    per_domain: dict[str, int] = {}
    for d, _ in plan:
        per_domain[d] = per_domain.get(d, 0) + 1
    too_many = [d for d, n in per_domain.items() if n > MAX_PER_DOMAIN]
    if too_many:
        raise SliceError(f"at most {MAX_PER_DOMAIN} slice rows per domain (ids are 9NNN)")
    ctx = _Context(sources_dir)
    used = set(public)
    counters: dict[str, int] = {}
    rows: list[dict[str, Any]] = []
    for i, (domain, label) in enumerate(plan):
        for attempt in range(MAX_ATTEMPTS):
            candidate = _BUILDERS[domain](rng("slice", secret, i, attempt), label, ctx)
            sides = {normalise_text(candidate["query_a"]), normalise_text(candidate["query_b"])}
            if len(sides) == 2 and not sides & used:
                break
        else:
            raise SliceError(
                f"slot {i + 1} ({domain} {label}): no fresh row in {MAX_ATTEMPTS} draws "
                "(the public set covers the templates' values)"
            )
        used |= sides
        counters[domain] = counters.get(domain, 0) + 1
        row = _finish(candidate, f"cb-{domain}-{ID_OFFSET + counters[domain]:04d}")
        _verify(row)
        rows.append(row)
    order = {d: k for k, d in enumerate(DOMAINS)}
    return sorted(rows, key=lambda r: (order[r["domain"]], r["id"]))


def summary(rows: Sequence[dict[str, Any]]) -> str:
    """``math 25 (ADVERSARIAL 13, PARA_SAFE 12); tool ...`` in DOMAINS order."""
    parts = []
    for d in DOMAINS:
        mine = [r for r in rows if r["domain"] == d]
        if mine:
            counts = ", ".join(
                f"{lab} {sum(1 for r in mine if r['label'] == lab)}" for lab in SLICE_LABELS
            )
            parts.append(f"{d} {len(mine)} ({counts})")
    return "; ".join(parts)
