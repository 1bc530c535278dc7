"""Generator of the ``math`` shard (160 rows) from the hand-written fixtures in
``sources/math/``.

Fixture layout. Each family file (:data:`FAMILY_FILES`) holds
``{"families": [FAMILY, ...]}``::

    FAMILY  = {"key": str, "grounding": str,
               "base": REQUEST, "variants": [VARIANT, ...]}
    REQUEST = {"q": str, "task": TASK, "answer": str}
    VARIANT = {"id": str, "label": LABEL, "sub": str, "q": str, "note": str,
               "task": TASK, "answer": str,  # optional on HIT variants (default: base's)
               "with": str,                  # optional partner variant id (default: base)
               "grounding": str,             # optional extra grounding for this row
               "flip": bool}                 # optional orientation override

TASK is the machine restatement of a query checked by
:mod:`cacheeval.verify.math`. Every variant yields one row pairing it with its
partner. ``unrelated.json`` holds ``{"pairs": [PAIR, ...]}`` with
``PAIR = {"key", "a", "b", "sub", "note", "grounding"}``; ``a``/``b`` name
requests as ``family/variant`` (``family/base`` for a base request).

Orientation: whether the variant is query_a or query_b is a seeded coin
(``rng("math", family, variant)``) unless the fixture sets ``flip``. Flipping
matters: it puts base requests and perturbed requests on the query_b side of
HIT and MISS rows alike, so query_b alone does not reveal the label.

Rows come out in fixture order (families file by file, variants in order,
then the unrelated pairs) and are numbered ``cb-math-0001`` ... .
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..schema import HIT_LABELS, LABELS, UNRELATED
from ..support.layout import rng
from .common import CONSTRUCTION, DraftRow, FixtureError, fixture_source, read_fixture_json

DOMAIN = "math"
FAMILY_FILES: tuple[str, ...] = ("algebra.json", "calculus.json", "arithmetic.json", "applied.json")
UNRELATED_FILE = "unrelated.json"
METHOD = "sympy"
TOLERANCE = 1e-9

#: Where traffic of each subcategory comes from; joined to the family's grounding.
SUB_GROUNDING: dict[str, str] = {
    "notation_variant": "an exercise arrives typed on a phone or pasted from a PDF with symbols",
    "case_whitespace": "students retyping in a hurry drop capitals, spaces and punctuation",
    "typo": "fast typing leaves a misspelling in an otherwise identical request",
    "contraction": "chatty phrasing contracts words without touching the problem",
    "punctuation": "the same exercise is pasted from different sources with different punctuation",
    "power_notation": "programmers write exponents as ** while textbooks use ^",
    "latex_notation": "students paste LaTeX from Overleaf, lecture notes or homework systems",
    "spelling_variant": "British and American spellings of one unit reach the same assistant",
    "question_rewording": "one user commands, the next asks a question about the same exercise",
    "polite_rewording": "some users wrap the exercise in a polite request",
    "imperative_rewording": "teachers and students name the same operation with different verbs",
    "terminology_variant": "textbooks and users name the same operation differently",
    "verbal_symbolic": "students alternate between worded and symbolic statements of a problem",
    "geometric_rewording": "the same integral is posed as an area in applied courses",
    "variable_rename": "auto-generated worksheets re-letter the same problem for each student",
    "operand_change": "exercise sets repeat one template with different numbers",
    "operator_swap": "neighbouring exercises differ by a single sign or operation",
    "direction_swap": "the same conversion or change is requested in both directions",
    "argument_order": "users swap the order of arguments when typing from memory",
    "output_form_change": "assignments demand exact, fractional, decimal or rounded answers",
    "unit_change": "the same figures appear in metric and imperial versions of a problem",
    "quantity_change": "word problems are reissued with different quantities",
    "relation_swap": "equation and inequality versions of an exercise sit side by side",
    "statistic_variant": "sample and population formulas are often confused in statistics courses",
    "role_swap": "a problem reuses its numbers with their roles exchanged",
    "evaluate_vs_solve": "function-notation exercises follow equation-solving ones",
    "factor_vs_solve": "factoring and root-finding are taught in the same lesson",
    "expand_vs_solve": "students check a factorisation by expanding it back",
    "derived_quantity": "follow-up questions ask for a quantity computed from the first answer",
    "higher_order": "derivative exercises continue to the second derivative",
    "definite_vs_indefinite": "definite and indefinite integrals alternate on problem sets",
    "limit_vs_derivative": "limits and derivatives of the same function are practised together",
    "evaluate_vs_derivative": "curve-sketching exercises ask for both heights and slopes",
    "log_rules": "log-law exercises reuse the same numbers",
    "applied_context": "an abstract calculation is reused inside a practical question",
    "permutation_vs_combination": "counting units contrast ordered and unordered selections",
    "absolute_vs_relative": "people ask for both the dollar change and the percentage change",
    "complementary_quantity": "shoppers ask both what they pay and what they save",
    "intermediate_step": "students ask for an intermediate step before the final result",
    "total_vs_interest": "savers ask for both the interest and the final balance",
    "different_measure": "the same figure is asked about several of its measurements",
    "domain_question": "precalculus exercises ask where an expression is undefined",
    "cross_topic": "one cache serves unrelated math traffic from many users",
    "same_area_different_problem": "consecutive requests in one subject often look alike",
}

_LABEL_TEXT: dict[str, str] = {
    "EQUIV": "surface variation",
    "PARA_SAFE": "rewording",
    "RELATED_UNSAFE": "change of question",
    "ADVERSARIAL": "minimal edit",
}


@dataclass(frozen=True, slots=True)
class Query:
    """One query with its machine restatement and its correct answer."""

    q: str
    task: dict[str, Any]
    answer: str


@dataclass(frozen=True, slots=True)
class Variant:
    """A request derived from a family's base, labelled against its partner."""

    id: str
    label: str
    sub: str
    request: Query
    note: str
    partner: str
    grounding: str | None
    flip: bool | None


@dataclass(frozen=True, slots=True)
class Family:
    """A base request and its variants, authored as one fixture item."""

    key: str
    path: Path
    grounding: str
    base: Query
    variants: tuple[Variant, ...]

    def request(self, vid: str) -> Query:
        """The base (``"base"``) or a variant's request."""
        if vid == "base":
            return self.base
        for v in self.variants:
            if v.id == vid:
                return v.request
        raise KeyError(vid)


# --- fixture reading ---------------------------------------------------------------


def _line_of(text: str, needle: str) -> int:
    """1-based line of the first occurrence of ``needle`` (1 if absent)."""
    idx = text.find(needle)
    return text.count("\n", 0, idx) + 1 if idx >= 0 else 1


def _str(obj: dict[str, Any], key: str, where: str) -> str:
    value = obj.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{where}: '{key}' must be a non-empty string")
    return value


def _request(obj: dict[str, Any], where: str, default: Query | None) -> Query:
    q = _str(obj, "q", where)
    task = obj.get("task", default.task if default else None)
    answer = obj.get("answer", default.answer if default else None)
    if not isinstance(task, dict) or not isinstance(task.get("op"), str):
        raise ValueError(f"{where}: 'task' must be an object with an 'op'")
    if not isinstance(answer, str) or not answer.strip():
        raise ValueError(f"{where}: 'answer' must be a non-empty string")
    return Query(q, task, answer)


def _family(item: Any, path: Path) -> Family:
    if not isinstance(item, dict):
        raise ValueError("a family must be an object")
    key = _str(item, "key", "family")
    where = f"family {key!r}"
    base_obj = item.get("base")
    if not isinstance(base_obj, dict):
        raise ValueError(f"{where}: 'base' must be an object")
    base = _request(base_obj, f"{where} base", None)
    raw = item.get("variants")
    if not isinstance(raw, list) or not raw:
        raise ValueError(f"{where}: 'variants' must be a non-empty list")
    variants: list[Variant] = []
    for v in raw:
        if not isinstance(v, dict):
            raise ValueError(f"{where}: every variant must be an object")
        vid = _str(v, "id", f"{where} variant")
        vwhere = f"{where} variant {vid!r}"
        if vid == "base" or any(x.id == vid for x in variants):
            raise ValueError(f"{vwhere}: duplicate or reserved id")
        label = _str(v, "label", vwhere)
        if label not in LABELS or label == UNRELATED:
            raise ValueError(f"{vwhere}: label must be one of {', '.join(LABELS[:4])}")
        hit = label in HIT_LABELS
        if not hit and ("task" not in v or "answer" not in v):
            raise ValueError(f"{vwhere}: a {label} variant needs its own 'task' and 'answer'")
        partner = v.get("with", "base")
        if partner != "base" and not any(x.id == partner for x in variants):
            raise ValueError(f"{vwhere}: 'with' must name an earlier variant, got {partner!r}")
        flip = v.get("flip")
        if flip is not None and not isinstance(flip, bool):
            raise ValueError(f"{vwhere}: 'flip' must be true or false")
        grounding = v.get("grounding")
        if grounding is not None and not isinstance(grounding, str):
            raise ValueError(f"{vwhere}: 'grounding' must be a string")
        sub = _str(v, "sub", vwhere)
        if sub not in SUB_GROUNDING:
            raise ValueError(f"{vwhere}: unknown subcategory {sub!r} (add it to SUB_GROUNDING)")
        variants.append(
            Variant(
                id=vid,
                label=label,
                sub=sub,
                request=_request(v, vwhere, base if hit else None),
                note=_str(v, "note", vwhere),
                partner=partner,
                grounding=grounding,
                flip=flip,
            )
        )
    return Family(key, path, _str(item, "grounding", where), base, tuple(variants))


def load_families(fixture_dir: Path) -> list[Family]:
    """Every family of the family files, in file order; errors name ``path:LINE``."""
    families: list[Family] = []
    for name in FAMILY_FILES:
        path = fixture_dir / name
        data, text = read_fixture_json(path)
        items = data.get("families") if isinstance(data, dict) else None
        if not isinstance(items, list):
            raise FixtureError(f"{path}:1: expected an object with a 'families' list")
        for item in items:
            key = item.get("key") if isinstance(item, dict) else None
            line = _line_of(text, f'"key": "{key}"') if isinstance(key, str) else 1
            try:
                fam = _family(item, path)
            except ValueError as e:
                raise FixtureError(f"{path}:{line}: {e}") from None
            if any(f.key == fam.key for f in families):
                raise FixtureError(f"{path}:{line}: duplicate family key {fam.key!r}")
            families.append(fam)
    return families


# --- row construction --------------------------------------------------------------------


def _quote(answer: str) -> str:
    return f"'{answer}'"


def _sub_words(sub: str) -> str:
    return sub.replace("_", " ")


def _grounding(family_grounding: str, sub: str, extra: str | None) -> str:
    text = f"{family_grounding[0].upper()}{family_grounding[1:]}; {SUB_GROUNDING[sub]}"
    return f"{text}; {extra}." if extra else f"{text}."


def _payload(task_a: dict[str, Any], task_b: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "sympy", "task_a": task_a, "task_b": task_b, "tolerance": TOLERANCE}


def _rationale(label: str, sub: str, note: str, ans_a: str, ans_b: str) -> str:
    """The fixture's hand-written note plus a sentence tying it to this row's answers."""
    kind = _LABEL_TEXT[label]
    if label in HIT_LABELS:
        tail = (
            f"This {kind} ({_sub_words(sub)}) leaves the cached {_quote(ans_a)} "
            "a correct, complete reply to query_b."
        )
    else:
        tail = (
            f"After this {kind} ({_sub_words(sub)}) the cached {_quote(ans_a)} "
            f"would be a false hit, since query_b needs {_quote(ans_b)}."
        )
    return f"{note} {tail}"


def variant_row(family: Family, variant: Variant) -> DraftRow:
    """The row pairing ``variant`` with its partner, oriented by a seeded coin."""
    partner = family.request(variant.partner)
    flip = variant.flip
    if flip is None:
        flip = rng(DOMAIN, family.key, variant.id).random() < 0.5
    side_a, side_b = (variant.request, partner) if flip else (partner, variant.request)
    return DraftRow(
        domain=DOMAIN,
        subcategory=variant.sub,
        label=variant.label,
        query_a=side_a.q,
        query_b=side_b.q,
        expected_answer_a=side_a.answer,
        expected_answer_b=side_b.answer,
        rationale=_rationale(
            variant.label, variant.sub, variant.note, side_a.answer, side_b.answer
        ),
        verification_method=METHOD,
        verification_payload=_payload(side_a.task, side_b.task),
        construction_method=CONSTRUCTION[variant.label],
        source=fixture_source(family.path, family.key),
        real_world_grounding=_grounding(family.grounding, variant.sub, variant.grounding),
    )


def unrelated_rows(fixture_dir: Path, families: list[Family]) -> list[DraftRow]:
    """Rows of the hand-picked UNRELATED pairs."""
    path = fixture_dir / UNRELATED_FILE
    data, text = read_fixture_json(path)
    pairs = data.get("pairs") if isinstance(data, dict) else None
    if not isinstance(pairs, list):
        raise FixtureError(f"{path}:1: expected an object with a 'pairs' list")
    by_key = {f.key: f for f in families}
    rows: list[DraftRow] = []
    for pair in pairs:
        key = pair.get("key") if isinstance(pair, dict) else None
        line = _line_of(text, f'"key": "{key}"') if isinstance(key, str) else 1
        try:
            if not isinstance(pair, dict) or not isinstance(key, str):
                raise ValueError("a pair must be an object with a string 'key'")
            where = f"pair {key!r}"
            sides = [_lookup(by_key, _str(pair, s, where), where) for s in ("a", "b")]
            (fam_a, req_a), (fam_b, req_b) = sides
            if fam_a.key == fam_b.key:
                raise ValueError(f"{where}: both sides come from family {fam_a.key!r}")
            sub = _str(pair, "sub", where)
            if sub not in ("cross_topic", "same_area_different_problem"):
                raise ValueError(f"{where}: sub must be cross_topic or same_area_different_problem")
            note = _str(pair, "note", where)
            grounding = _str(pair, "grounding", where)
        except ValueError as e:
            raise FixtureError(f"{path}:{line}: {e}") from None
        tail = (
            f"Query_b needs {_quote(req_b.answer)}, so the cached "
            f"{_quote(req_a.answer)} cannot serve it."
        )
        rows.append(
            DraftRow(
                domain=DOMAIN,
                subcategory=sub,
                label=UNRELATED,
                query_a=req_a.q,
                query_b=req_b.q,
                expected_answer_a=req_a.answer,
                expected_answer_b=req_b.answer,
                rationale=f"{note} {tail}",
                verification_method=METHOD,
                verification_payload=_payload(req_a.task, req_b.task),
                construction_method=CONSTRUCTION[UNRELATED],
                source=fixture_source(path, key),
                real_world_grounding=_grounding(grounding, sub, None),
            )
        )
    return rows


def _lookup(by_key: dict[str, Family], ref: str, where: str) -> tuple[Family, Query]:
    fam_key, _, vid = ref.partition("/")
    fam = by_key.get(fam_key)
    if fam is None or not vid:
        raise ValueError(f"{where}: {ref!r} is not family/variant")
    try:
        return fam, fam.request(vid)
    except KeyError:
        raise ValueError(f"{where}: family {fam_key!r} has no variant {vid!r}") from None


# --- the shard ----------------------------------------------------------------------------


def _pair_key(row: DraftRow, swap: bool) -> str:
    sides = [
        (
            getattr(row, f"query_{s}"),
            getattr(row, f"context_{s}"),
            getattr(row, f"system_prompt_{s}"),
            getattr(row, f"tools_{s}"),
        )
        for s in ("a", "b")
    ]
    if swap:
        sides.reverse()
    return json.dumps(sides, ensure_ascii=False)


def check_shard(rows: list[DraftRow]) -> None:
    """Raise :class:`FixtureError` when the rows break a shard-wide rule: a pair
    repeats (either order), or a row has identical sides. (Label counts against
    the matrix are the pipeline's check.)"""
    seen: dict[str, str] = {}
    for r in rows:
        key = _pair_key(r, False)
        if _pair_key(r, True) == key:
            raise FixtureError(f"{r.source}:0: both sides are identical: {r.query_a!r}")
        for k in (key, _pair_key(r, True)):
            if k in seen:
                raise FixtureError(f"{r.source}:0: pair repeats a row from {seen[k]}")
        seen[key] = r.source


def generate(fixture_dir: Path) -> list[DraftRow]:
    """All math rows of ``fixture_dir``, in fixture order."""
    families = load_families(fixture_dir)
    rows = [variant_row(f, v) for f in families for v in f.variants]
    rows += unrelated_rows(fixture_dir, families)
    check_shard(rows)
    return rows
