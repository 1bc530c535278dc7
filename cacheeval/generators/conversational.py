"""Generator of the ``conversational`` shard: small talk, advice, recommendations
and how-to chat, verified with the rubric checker.

Fixtures
--------
Every ``sources/conversational/*.json`` file (read in name order) holds::

    {"families": {
        "<family>": {                      # one authored item = one CV family
            "grounding": "where such traffic occurs",
            "requests": {
                "<request>": {
                    "gist": "what the request asks for, used in rationales",
                    "answer": "the short reply a good assistant gives",
                    "criteria": [["criterion", "case-insensitive regex"], x3],
                    "phrasings": {"base": "the request",
                                  "<key>": ["a variant", "how it differs from base"]}}},
            "rows": [["LABEL", "subcategory", "<request>.<phrasing>",
                      "<request>.<phrasing>" | "<family>:<request>.<phrasing>"], ...]}}}

The first reference of a row is query_a and must name a request of the row's own
family; the second is query_b. HIT rows (EQUIV, PARA_SAFE) pair two phrasings of
one request; RELATED_UNSAFE and ADVERSARIAL pair two requests of one family;
UNRELATED rows take query_b from another family: its partner (families pair up,
one triple, so that families linked by UNRELATED rows form small groups the
split packer keeps in one split).

Verification
------------
Payload ``{"kind": "rubric", "criteria_a": [...], "criteria_b": [...]}`` with
three ``{"criterion", "pattern"}`` items per side (see
:mod:`cacheeval.verify.rubric`): HIT iff the cached reply (``expected_answer_a``)
matches every pattern of query_b. The generator re-runs that check on every row
and refuses to emit a row whose label the checker does not reproduce, so the
shard never carries a disagreement.

Rationales are built from the row's own content: the gists, the phrasing notes,
the words an adversarial edit changed, and the first query_b criterion the
cached reply fails.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from ..dataset import row_problem
from ..schema import (
    ADVERSARIAL,
    EQUIV,
    HIT_LABELS,
    LABELS,
    PARA_SAFE,
    RELATED_UNSAFE,
    UNRELATED,
)
from ..support.layout import display_path
from ..verify import check_row
from .common import (
    CONSTRUCTION,
    DraftRow,
    FixtureError,
    fixture_files,
    fixture_source,
    read_fixture_json,
)

DOMAIN = "conversational"

#: subcategory -> (label it belongs to, where such a pair shows up in real traffic).
SUBCATEGORIES: dict[str, tuple[str, str]] = {
    "case_punctuation_variant": (
        EQUIV,
        "the same request is often retyped in lower case, without apostrophes or "
        "with doubled punctuation on a phone keyboard",
    ),
    "abbreviation_variant": (
        EQUIV,
        "chat users shorten words (u, yr, bday, min) without changing what they ask",
    ),
    "notation_variant": (
        EQUIV,
        "numbers, units and spellings are written differently (500ml, 3 for three, neighbour) "
        "in otherwise identical requests",
    ),
    "chatty_rewording": (
        PARA_SAFE,
        "people describe their own situation instead of typing a search-style question",
    ),
    "greeting_padding": (
        PARA_SAFE,
        "chat openers often wrap an unchanged request in a greeting such as 'hey, quick one'",
    ),
    "diet_constraint_change": (
        ADVERSARIAL,
        "diet restrictions are stated in near-identical wording but change which dishes fit",
    ),
    "age_change": (
        ADVERSARIAL,
        "parents reuse the same question for children of different ages",
    ),
    "budget_change": (
        ADVERSARIAL,
        "gift shoppers retype the same request with a different price ceiling",
    ),
    "tone_change": (
        ADVERSARIAL,
        "people ask for the same message in a different register for a different audience",
    ),
    "persona_change": (
        ADVERSARIAL,
        "playful requests swap the requested voice while keeping the task word for word",
    ),
    "negated_preference": (
        ADVERSARIAL,
        "a single 'not' or 'don't' flips the stated preference the advice must follow",
    ),
    "quantity_change": (
        ADVERSARIAL,
        "the same how-to question comes with a different amount that changes the numbers",
    ),
    "date_change": (
        ADVERSARIAL,
        "templated requests are resent with a different date that the reply must quote",
    ),
    "household_change": (
        ADVERSARIAL,
        "the same money-saving question comes from very different households",
    ),
    "material_change": (
        ADVERSARIAL,
        "the same cleaning question is asked about a different surface or fabric",
    ),
    "symptom_change": (
        ADVERSARIAL,
        "plant owners describe a slightly different symptom with a different cause",
    ),
    "recipient_change": (
        ADVERSARIAL,
        "the same message request is addressed to a different person",
    ),
    "entity_swap": (
        ADVERSARIAL,
        "the same request names a different animal, object or event the reply must address",
    ),
    "field_change": (
        ADVERSARIAL,
        "job seekers in different professions ask the identical interview question",
    ),
    "setting_change": (
        ADVERSARIAL,
        "the same social request is made for a different occasion",
    ),
    "opposite_problem": (
        ADVERSARIAL,
        "remote workers describe the opposite habit in almost the same words",
    ),
    "equipment_change": (
        ADVERSARIAL,
        "fitness requests differ only in the equipment available",
    ),
    "season_change": (
        ADVERSARIAL,
        "trip and outing plans are asked for a different time of year",
    ),
    "location_change": (
        ADVERSARIAL,
        "the same recommendation request names a different place",
    ),
    "language_change": (
        ADVERSARIAL,
        "learners ask the same study-plan question about a different language",
    ),
    "follow_up_question": (
        RELATED_UNSAFE,
        "users come back with the next question on the same problem",
    ),
    "related_task": (
        RELATED_UNSAFE,
        "a neighbouring task on the same topic needs a different reply",
    ),
    "unrelated_request": (
        UNRELATED,
        "a general assistant receives unrelated everyday requests back to back",
    ),
}


class FixtureText:
    """The raw text of one fixture, used to point errors at a line.

    JSON loading loses positions, so a location is recovered by searching the
    quoted keys and values that lead to the faulty item, in order.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.data, self.text = read_fixture_json(path, display_path(path))

    def load(self) -> Any:
        """The decoded JSON (a syntax error was a :class:`FixtureError` already)."""
        return self.data

    def find(self, needles: tuple[str, ...], start: int = 0) -> int:
        """Offset of the last of ``needles`` (JSON-quoted) found one after another
        from ``start``; ``start`` when the first is not found."""
        pos = found = start
        for needle in needles:
            i = self.text.find(json.dumps(needle, ensure_ascii=False), pos)
            if i < 0:
                break
            found, pos = i, i + 1
        return found

    def line_at(self, offset: int) -> int:
        return self.text.count("\n", 0, offset) + 1

    def error(self, message: str, *needles: str, offset: int | None = None) -> FixtureError:
        """An error pointing at ``offset`` or at the line the ``needles`` lead to."""
        at = offset if offset is not None else self.find(needles)
        return FixtureError(f"{display_path(self.path)}:{self.line_at(at)}: {message}")

    def row_offsets(self, family: str, rows: list[Any]) -> list[int]:
        """Offset of each row spec of ``family``, found by searching its strings in order."""
        cursor = self.find((family, "rows"))
        out = []
        for spec in rows:
            out.append(cursor)
            parts = tuple(p for p in spec if isinstance(p, str)) if isinstance(spec, list) else ()
            if parts:
                first = self.find(parts[:1], cursor)
                out[-1] = first
                cursor = self.find(parts, cursor) + 1
        return out


#: Words (with inner apostrophes) and single punctuation marks, so that an edit
#: reads 'vegetarian' -> 'vegan' rather than 'vegetarian.' -> 'vegan.'.
_WORD = re.compile(r"\w+(?:['’]\w+)*|[^\w\s]", re.UNICODE)
_SPACE_BEFORE_PUNCT = re.compile(r" ([,.;:!?])")


def edit_description(text_a: str, text_b: str, unspaced: bool = False, limit: int = 2) -> str:
    """The spans an edit replaced, inserted or deleted, e.g. ``'vegetarian' -> 'vegan'``.

    Spans are words, or characters for scripts written without spaces
    (``unspaced``: Japanese, Chinese). At most ``limit`` spans are listed.
    """
    ta: list[str] = list(text_a) if unspaced else _WORD.findall(text_a)
    tb: list[str] = list(text_b) if unspaced else _WORD.findall(text_b)

    def join(tokens: list[str]) -> str:
        if unspaced:
            return "".join(tokens)
        return _SPACE_BEFORE_PUNCT.sub(r"\1", " ".join(tokens))

    parts = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=ta, b=tb, autojunk=False).get_opcodes():
        old, new = join(ta[i1:i2]), join(tb[j1:j2])
        if op == "replace":
            parts.append(f"'{old}' -> '{new}'")
        elif op == "insert":
            parts.append(f"adds '{new}'")
        elif op == "delete":
            parts.append(f"drops '{old}'")
    if len(parts) > limit:
        parts = parts[:limit] + ["more"]
    return ", ".join(parts) if parts else "no visible change"


def strip_end(text: str) -> str:
    """``text`` without trailing sentence punctuation (for embedding in a sentence)."""
    return text.rstrip(" .!?")


def expect(fx: FixtureText, cond: bool, message: str, *needles: str) -> None:
    if not cond:
        raise fx.error(message, *needles)


# --- fixture model ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Phrasing:
    """One way of typing a request; ``note`` says how it differs from ``base``."""

    text: str
    note: str | None


@dataclass(frozen=True, slots=True)
class Intent:
    key: str
    gist: str
    answer: str
    criteria: tuple[tuple[str, str], ...]
    phrasings: dict[str, Phrasing]


@dataclass(frozen=True, slots=True)
class RowSpec:
    label: str
    subcategory: str
    ref_a: str
    ref_b: str
    offset: int


@dataclass(frozen=True, slots=True)
class Family:
    key: str
    path: Path
    fx: FixtureText
    grounding: str
    requests: dict[str, Intent]
    rows: tuple[RowSpec, ...]


def _phrasing(fx: FixtureText, fam: str, req: str, key: str, value: Any) -> Phrasing:
    where = (fam, "requests", req, "phrasings", key)
    if key == "base":
        expect(
            fx,
            isinstance(value, str) and bool(value.strip()),
            "base must be a non-empty string",
            *where,
        )
        return Phrasing(value, None)
    ok = (
        isinstance(value, list)
        and len(value) == 2
        and all(isinstance(v, str) and v.strip() for v in value)
    )
    expect(fx, ok, f"phrasing {key!r} must be [text, note]", *where)
    return Phrasing(value[0], value[1])


def _request(fx: FixtureText, fam: str, key: str, data: Any) -> Intent:
    where = (fam, "requests", key)
    expect(fx, isinstance(data, dict), f"request {key!r} must be an object", *where)
    for field in ("gist", "answer"):
        expect(
            fx,
            isinstance(data.get(field), str) and bool(data[field].strip()),
            f"request {key!r} needs a non-empty {field!r}",
            *where,
        )
    crit = data.get("criteria")
    ok = isinstance(crit, list) and len(crit) == 3
    ok = ok and all(
        isinstance(c, list) and len(c) == 2 and all(isinstance(s, str) for s in c) for c in crit
    )
    expect(fx, ok, f"request {key!r} needs exactly three [criterion, pattern] criteria", *where)
    for _, pattern in crit:
        try:
            re.compile(pattern)
        except re.error as e:
            raise fx.error(
                f"bad pattern {pattern!r} in request {key!r}: {e}", *where, pattern
            ) from None
    phr = data.get("phrasings")
    expect(
        fx,
        isinstance(phr, dict) and "base" in phr,
        f"request {key!r} needs phrasings with a 'base'",
        *where,
    )
    phrasings = {k: _phrasing(fx, fam, key, k, v) for k, v in phr.items()}
    return Intent(key, data["gist"], data["answer"], tuple((c, p) for c, p in crit), phrasings)


def fixture_families(fixture_dir: Path) -> Iterator[tuple[FixtureText, str, Any]]:
    """``(fixture, family key, body)`` for every family of every ``*.json`` fixture in
    ``fixture_dir`` (files in name order), after the checks every family-based
    fixture shares: a top-level ``families`` object, family keys unique across
    files, each body an object with a non-empty ``grounding``."""
    seen: dict[str, str] = {}
    for path in fixture_files(fixture_dir):
        fx = FixtureText(path)
        data = fx.load()
        expect(
            fx,
            isinstance(data, dict) and isinstance(data.get("families"), dict),
            "top level needs 'families'",
        )
        for fam, body in data["families"].items():
            expect(fx, fam not in seen, f"family {fam!r} already defined in {seen.get(fam)}", fam)
            seen[fam] = display_path(path)
            expect(fx, isinstance(body, dict), f"family {fam!r} must be an object", fam)
            expect(
                fx,
                isinstance(body.get("grounding"), str) and bool(body["grounding"].strip()),
                f"family {fam!r} needs a grounding",
                fam,
            )
            yield fx, fam, body


def row_specs(fx: FixtureText, fam: str, body: Any) -> tuple[RowSpec, ...]:
    """The family's ``rows``: each ``[label, subcategory, ref_a, ref_b]``, with its offset
    in the file for error messages."""
    rows = body.get("rows")
    expect(fx, isinstance(rows, list) and bool(rows), f"family {fam!r} needs rows", fam)
    specs = []
    for spec, off in zip(rows, fx.row_offsets(fam, rows), strict=True):
        ok = isinstance(spec, list) and len(spec) == 4 and all(isinstance(s, str) for s in spec)
        if not ok:
            raise fx.error("row must be [label, subcategory, ref_a, ref_b]", offset=off)
        specs.append(RowSpec(spec[0], spec[1], spec[2], spec[3], off))
    return tuple(specs)


def load_families(fixture_dir: Path) -> list[Family]:
    """Every family of every fixture file in ``fixture_dir``, in file then file order."""
    families: list[Family] = []
    for fx, fam, body in fixture_families(fixture_dir):
        reqs = body.get("requests")
        expect(fx, isinstance(reqs, dict) and bool(reqs), f"family {fam!r} needs requests", fam)
        requests = {k: _request(fx, fam, k, v) for k, v in reqs.items()}
        specs = row_specs(fx, fam, body)
        families.append(Family(fam, fx.path, fx, body["grounding"], requests, specs))
    return families


# --- rows -----------------------------------------------------------------------------


def _resolve(
    ref: str, home: Family, by_key: dict[str, Family], spec: RowSpec
) -> tuple[Family, Intent, Phrasing, str]:
    fam, local = ref_family(ref, home, by_key, spec)
    req_key, _, phr_key = local.partition(".")
    req = fam.requests.get(req_key)
    if req is None or phr_key not in req.phrasings:
        raise home.fx.error(f"reference {ref!r} names no request phrasing", offset=spec.offset)
    return fam, req, req.phrasings[phr_key], phr_key


def _hit_difference(pa: Phrasing, pb: Phrasing) -> str:
    if pa.note and pb.note:
        return f"query_a {pa.note} while query_b {pb.note}"
    if pb.note:
        return f"query_b {pb.note}"
    return f"query_a {pa.note}"


def _criteria_payload(req: Intent) -> list[dict[str, str]]:
    return [{"criterion": c, "pattern": p} for c, p in req.criteria]


def _failed(answer: str, req: Intent) -> list[str]:
    return [c for c, p in req.criteria if not re.search(p, answer, re.IGNORECASE | re.UNICODE)]


def _rationale(spec: RowSpec, ra: Intent, rb: Intent, pa: Phrasing, pb: Phrasing) -> str:
    if spec.label in HIT_LABELS:
        change = "surface change" if spec.label == EQUIV else "rewording"
        return (
            f"Both sides ask for {ra.gist}, and {_hit_difference(pa, pb)}; that {change} leaves "
            f"the advice unchanged, so the cached reply meets all three of query_b's criteria."
        )
    missed = _failed(ra.answer, rb)
    miss = (
        f"the cached reply fails query_b's criterion '{missed[0]}'"
        if missed
        else "no criterion fails"
    )
    if spec.label == ADVERSARIAL:
        return (
            f"A minimal edit ({edit_description(pa.text, pb.text)}) turns a request for {ra.gist} "
            f"into one for {rb.gist}; {miss}."
        )
    quoted = f'"{strip_end(pb.text)}"'
    if spec.label == RELATED_UNSAFE:
        return (
            f"Query_b ({quoted}) stays on query_a's topic but wants {rb.gist} "
            f"rather than {ra.gist}; {miss}."
        )
    return (
        f"Query_a wants {ra.gist} while query_b ({quoted}) wants {rb.gist}, "
        f"an unrelated request; {miss}."
    )


def _build(spec: RowSpec, home: Family, by_key: dict[str, Family]) -> DraftRow:
    fx = home.fx

    def fail(message: str) -> FixtureError:
        return fx.error(message, offset=spec.offset)

    sub = spec_subcategory(spec, home, SUBCATEGORIES)
    _, ra, pa, _ = _resolve(spec.ref_a, home, by_key, spec)
    fb, rb, pb, _ = _resolve(spec.ref_b, home, by_key, spec)
    if spec.label in HIT_LABELS and (fb is not home or rb is not ra):
        raise fail(f"a {spec.label} row must pair two phrasings of one request")
    if spec.label in (RELATED_UNSAFE, ADVERSARIAL) and (fb is not home or rb is ra):
        raise fail(f"a {spec.label} row must pair two requests of one family")
    if spec.label == UNRELATED and fb is home:
        raise fail("an UNRELATED row must take query_b from another family")
    if pa.text == pb.text:
        raise fail("the two sides are identical")
    return DraftRow(
        domain=DOMAIN,
        subcategory=spec.subcategory,
        label=spec.label,
        query_a=pa.text,
        query_b=pb.text,
        expected_answer_a=ra.answer,
        expected_answer_b=rb.answer,
        rationale=_rationale(spec, ra, rb, pa, pb),
        verification_method="rubric",
        verification_payload={
            "kind": "rubric",
            "criteria_a": _criteria_payload(ra),
            "criteria_b": _criteria_payload(rb),
        },
        construction_method=CONSTRUCTION[spec.label],
        source=fixture_source(home.path, home.key),
        real_world_grounding=f"{home.grounding}; {sub[1]}.",
    )


def check_rows(
    domain: str,
    rows: list[DraftRow],
    where: list[tuple[FixtureText, int]],
) -> None:
    """Refuse rows that break the dataset conventions.

    Checks schema validity, the checker's verdict (must equal ``binary_label``),
    duplicate pairs in either order, identical sides, and repeated rationale
    sentences. ``where[i]`` locates row ``i``'s spec. Rows are named by the id
    the pipeline gives them (they are numbered in list order).
    """
    seen_pairs: dict[tuple[Any, ...], int] = {}
    sentences: dict[str, int] = {}
    for i, r in enumerate(rows):
        fx, off = where[i]
        rid = f"cb-{domain}-{i + 1:04d}"
        row = r.to_row(rid)
        problem = row_problem({**r.to_shard(rid), "split": "train"})
        if problem:
            raise fx.error(f"row {rid}: {problem}", offset=off)
        verdict = check_row(row)
        if verdict.binary != row.binary_label:
            raise fx.error(
                f"row {rid} is labelled {row.binary_label} but the checker says "
                f"{verdict.binary}: {verdict.detail}",
                offset=off,
            )
        side_a = tuple(
            json.dumps(getattr(r, f"{k}_a"), ensure_ascii=False)
            for k in ("query", "context", "system_prompt", "tools")
        )
        side_b = tuple(
            json.dumps(getattr(r, f"{k}_b"), ensure_ascii=False)
            for k in ("query", "context", "system_prompt", "tools")
        )
        if side_a == side_b:
            raise fx.error(f"row {rid} has identical sides", offset=off)
        key = tuple(sorted((side_a, side_b)))
        if key in seen_pairs:
            raise fx.error(f"row {rid} repeats the pair of row {seen_pairs[key] + 1}", offset=off)
        seen_pairs[key] = i
        for sentence in re.split(r"(?<=[.!?])\s+(?=[A-Z])", r.rationale):
            if sentence in sentences:
                raise fx.error(
                    f"row {rid} repeats a rationale sentence of row {sentences[sentence] + 1}: "
                    f"{sentence!r}",
                    offset=off,
                )
            sentences[sentence] = i


def generate(fixture_dir: Path) -> list[DraftRow]:
    """All conversational rows of ``fixture_dir``, in fixture order.

    Raises :class:`FixtureError` (``path:line: what``) on any fixture problem,
    including a row whose label the rubric checker does not reproduce.
    """
    return build_rows(DOMAIN, load_families(fixture_dir), _build)


class FamilyLike(Protocol):
    """What :func:`build_rows` needs of a family (conversational and multilingual)."""

    @property
    def key(self) -> str: ...
    @property
    def fx(self) -> FixtureText: ...
    @property
    def rows(self) -> tuple[RowSpec, ...]: ...


F = TypeVar("F", bound=FamilyLike)


def build_rows(
    domain: str,
    families: Sequence[F],
    build: Callable[[RowSpec, F, dict[str, F]], DraftRow],
) -> list[DraftRow]:
    """Every family's rows built by ``build(spec, family, families_by_key)``, in
    fixture order, then checked (:func:`check_rows` names the fixture line of a bad row)."""
    by_key = {f.key: f for f in families}
    rows: list[DraftRow] = []
    where: list[tuple[FixtureText, int]] = []
    for fam in families:
        for spec in fam.rows:
            rows.append(build(spec, fam, by_key))
            where.append((fam.fx, spec.offset))
    check_rows(domain, rows, where)
    return rows


T = TypeVar("T", bound=tuple[str, ...])


def spec_subcategory(spec: RowSpec, home: FamilyLike, subcategories: Mapping[str, T]) -> T:
    """The ``subcategories`` entry of a row spec (its label first), after
    checking the label, the subcategory and that query_a is the family's own."""

    def fail(message: str) -> FixtureError:
        return home.fx.error(message, offset=spec.offset)

    if spec.label not in LABELS:
        raise fail(f"unknown label {spec.label!r}")
    sub = subcategories.get(spec.subcategory)
    if sub is None:
        raise fail(f"unknown subcategory {spec.subcategory!r} (add it to SUBCATEGORIES)")
    if sub[0] != spec.label:
        raise fail(f"subcategory {spec.subcategory!r} belongs to {sub[0]}, not {spec.label}")
    if ":" in spec.ref_a:
        raise fail("query_a must come from the row's own family")
    return sub


def ref_family(ref: str, home: F, by_key: Mapping[str, F], spec: RowSpec) -> tuple[F, str]:
    """The family a reference ``[family:]local`` names (``home`` without a
    ``family:``) and its local part."""
    fam_key, _, local = ref.rpartition(":")
    fam = by_key.get(fam_key) if fam_key else home
    if fam is None:
        raise home.fx.error(f"unknown family {fam_key!r} in reference {ref!r}", offset=spec.offset)
    return fam, local
