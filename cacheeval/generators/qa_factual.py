"""qa_factual: short factual questions whose answers are checked against alias sets.

Fixtures (``sources/qa_factual/*.json``) are hand-written *families*. A family
is a few questions about one subject; each question has a canonical answer,
its accepted aliases and several hand-written surface *forms*; the family's
``pairs`` say which two forms make a row and with which label::

    {"families": [
      {"key": "australia_austria",
       "grounding": "geography homework and pub-quiz practice",
       "questions": {
         "australia": {"asks": "the capital of Australia",
                       "answer": "Canberra",
                       "aliases": ["Canberra", "Canberra, Australia"],
                       "forms": {"base": "What is the capital of Australia?",
                                 "casual": "whats the capital of australia"}},
         ...},
       "pairs": [
         ["australia.casual", "australia.base", "EQUIV", "case_punctuation"],
         ["australia.base", "austria.base", "ADVERSARIAL", "near_homonym"],
         ["australia.base", "@nobel_women.lit.base", "UNRELATED", "cross_topic"]]}]}

A pair is ``[ref_a, ref_b, label, subcategory]`` with an optional fifth item,
a note for the rationale. ``question.form`` names a form of the same family;
``@family.question.form`` a form of another family (UNRELATED rows only).
HIT labels join two forms of one question; RELATED_UNSAFE and ADVERSARIAL two
questions of one family; UNRELATED a question of this family with one of
another; partner families are chosen in pairs (each names the other), so
families linked by UNRELATED rows form small groups that the split packer
(:mod:`cacheeval.pipeline.splits`) keeps in one split. ``source`` is
``<fixture>#<family key>``: the family is the group of grouped cross-validation.

Every form must be used by some pair, no two pairs may join the same two
texts (in either order), and the two sides of a pair never have the same text.

Each row's payload is ``{"kind": "alias_set", "aliases_a": [...],
"aliases_b": [...], "lang_a": "en", "lang_b": "en"}`` for the ``alias_set``
checker (method ``exact_match``): HIT iff ``normalize(answer_a)`` is in
``normalize(aliases_b)``. The generator runs that checker on every row and
rejects a pair whose label disagrees, naming the fixture line.

Row text that is not authored is derived, never invented: the rationale is one
sentence built from the two questions' ``asks`` and answers plus an exact
word-level description of the edit (:func:`describe_edit`, :func:`new_wording`);
``real_world_grounding`` joins the family's grounding with the subcategory's;
``construction_method`` follows the label (:data:`CONSTRUCTION`). Rows are
ordered by a content-keyed hash (:func:`order_rows`), so ids reveal neither
label nor family, and the output is byte-identical on every run.

The pair-graph machinery here (fixture loading, reference resolution, edit
descriptions, ordering) is shared with :mod:`cacheeval.generators.qa_open`.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from ..schema import (
    ADVERSARIAL,
    EQUIV,
    HIT_LABELS,
    LABELS,
    PARA_SAFE,
    RELATED_UNSAFE,
    UNRELATED,
)
from ..support.layout import stable_seed
from ..verify import check_row
from ..verify.textnorm import normalize_answer
from .common import (
    CONSTRUCTION,
    DraftRow,
    FixtureError,
    fixture_files,
    fixture_source,
    lower_first,
    read_fixture_json,
)

DOMAIN = "qa_factual"

#: subcategory -> (label it belongs to, where such traffic comes from).
SUBCATEGORIES: dict[str, tuple[str, str]] = {
    "case_punctuation": (
        EQUIV,
        "search-box style typing drops capitals and the question mark",
    ),
    "typo": (EQUIV, "a slipped key on a phone keyboard leaves one misspelt word"),
    "contraction": (EQUIV, "people alternate between contracted and spelt-out forms"),
    "keyword_fragment": (
        EQUIV,
        "search-engine habits reduce a question to its key words",
    ),
    "notation_variant": (
        EQUIV,
        "the same term is written in another notation (numerals, symbols, abbreviations)",
    ),
    "lexical_paraphrase": (
        PARA_SAFE,
        "different users word the same lookup with their own vocabulary",
    ),
    "imperative_form": (
        PARA_SAFE,
        "quiz writers and students phrase the lookup as an instruction",
    ),
    "structural_rewrite": (
        PARA_SAFE,
        "the same question arrives with its clauses rearranged",
    ),
    "conversational_framing": (
        PARA_SAFE,
        "chat users wrap the question in a bit of context or a greeting",
    ),
    "entity_swap": (
        ADVERSARIAL,
        "template-like questions recur with one named entity exchanged",
    ),
    "ordinal_swap": (
        ADVERSARIAL,
        "list-style trivia walks through the first, second and later holders",
    ),
    "unit_swap": (ADVERSARIAL, "the same quantity is asked for in the unit the user lives with"),
    "quantity_change": (
        ADVERSARIAL,
        "conversion questions recur with another amount of the same unit",
    ),
    "time_scope": (
        ADVERSARIAL,
        "history questions repeat for a different year or period",
    ),
    "attribute_swap": (
        ADVERSARIAL,
        "follow-up lookups ask a different property of the same thing",
    ),
    "near_homonym": (
        ADVERSARIAL,
        "similar-looking names are confused in typing and in embeddings",
    ),
    "direction_swap": (
        ADVERSARIAL,
        "paired concepts (in/out, give/receive, rise/fall) are asked one after the other",
    ),
    "superlative_swap": (
        ADVERSARIAL,
        "opposite superlatives (largest/smallest) are asked about the same set of things",
    ),
    "antonym_swap": (
        ADVERSARIAL,
        "one adjective is replaced by its opposite (hot/cold) in an otherwise identical question",
    ),
    "qualifier_insertion": (
        ADVERSARIAL,
        "one qualifying word narrows a superlative question to another answer",
    ),
    "same_entity_other_fact": (
        RELATED_UNSAFE,
        "a reader keeps asking about the same subject, one fact at a time",
    ),
    "same_event_other_detail": (
        RELATED_UNSAFE,
        "questions about one event come in a burst, each for another detail",
    ),
    "neighbouring_topic": (
        RELATED_UNSAFE,
        "a study session drifts to an adjacent fact of the same topic",
    ),
    "cross_topic": (UNRELATED, "a general-knowledge assistant sees unrelated lookups side by side"),
}


# --- fixture errors and line lookup ------------------------------------------------


@dataclass(frozen=True, slots=True)
class Locator:
    """Maps fixture items back to line numbers of the raw JSON text, so every
    error can name ``path:LINE`` (the json module keeps no positions)."""

    path: Path
    lines: tuple[str, ...]

    def line_of(self, *needles: str, start: int = 1) -> int:
        """First line at or after ``start`` containing every needle (or ``start``)."""
        for i in range(max(start, 1) - 1, len(self.lines)):
            if all(n in self.lines[i] for n in needles):
                return i + 1
        return max(start, 1)

    def fail(self, line: int, message: str) -> FixtureError:
        return FixtureError.at(self.path, line, message)


# --- the pair-graph records ----------------------------------------------------------


class QuestionLike(Protocol):
    """What the shared machinery needs from a domain's question record."""

    @property
    def key(self) -> str: ...
    @property
    def asks(self) -> str: ...
    @property
    def answer(self) -> str: ...
    @property
    def forms(self) -> tuple[tuple[str, str], ...]: ...


Q = TypeVar("Q", bound=QuestionLike)


@dataclass(frozen=True, slots=True)
class FormRef:
    """One form of one question: ``family.question.form``."""

    family: str
    question: str
    form: str

    def __str__(self) -> str:
        return f"{self.family}.{self.question}.{self.form}"


@dataclass(frozen=True, slots=True)
class PairSpec:
    """One authored row: two forms, a label, a subcategory, an optional note."""

    a: FormRef
    b: FormRef
    label: str
    subcategory: str
    note: str | None
    line: int


@dataclass(frozen=True, slots=True)
class Family(Generic[Q]):
    """A fixture item: questions about one subject and the rows built from them."""

    key: str
    path: Path
    line: int
    grounding: str
    questions: tuple[tuple[str, Q], ...]
    pairs: tuple[PairSpec, ...]

    def question(self, key: str) -> Q:
        for k, q in self.questions:
            if k == key:
                return q
        raise KeyError(key)


@dataclass(frozen=True, slots=True)
class ResolvedPair(Generic[Q]):
    """A pair with both sides looked up: the family it belongs to, both
    questions and both query texts."""

    family: Family[Q]
    spec: PairSpec
    qa: Q
    qb: Q
    text_a: str
    text_b: str
    grounding_b: str


@dataclass(frozen=True, slots=True)
class FactQuestion:
    """A factual question: canonical answer, accepted aliases, surface forms."""

    key: str
    asks: str
    answer: str
    aliases: tuple[str, ...]
    forms: tuple[tuple[str, str], ...]


# --- generic fixture loading -----------------------------------------------------------

_KEY = re.compile(r"^[a-z0-9_]+$")
_FAMILY_KEYS = frozenset({"key", "grounding", "questions", "pairs"})


def read_fixture(path: Path) -> tuple[Any, Locator]:
    """Parse one JSON fixture (:func:`~.common.read_fixture_json`), with its locator."""
    data, text = read_fixture_json(path)
    return data, Locator(path, tuple(text.splitlines()))


def nonempty_str(value: Any, what: str, loc: Locator, line: int) -> str:
    """``value`` when it is a non-blank string, else a fixture error naming ``what``."""
    if not isinstance(value, str) or not value.strip():
        raise loc.fail(line, f"{what} must be a non-empty string, got {value!r}")
    if value != value.strip():
        raise loc.fail(line, f"{what} has leading or trailing whitespace: {value!r}")
    return value


def parse_forms(raw: Any, where: str, loc: Locator, line: int) -> tuple[tuple[str, str], ...]:
    """The ``forms`` object of a question: at least one, texts distinct."""
    if not isinstance(raw, dict) or not raw:
        raise loc.fail(line, f"{where}: 'forms' must be a non-empty object of name -> text")
    seen: dict[str, str] = {}
    out = []
    for name, text in raw.items():
        if not _KEY.match(name):
            raise loc.fail(line, f"{where}: form name {name!r} must match [a-z0-9_]+")
        flin = loc.line_of(f'"{name}"', start=line)
        text = nonempty_str(text, f"{where}.{name}", loc, flin)
        if text in seen:
            raise loc.fail(flin, f"{where}: forms {seen[text]!r} and {name!r} have the same text")
        seen[text] = name
        out.append((name, text))
    return tuple(out)


def _parse_ref(raw: Any, family: str, loc: Locator, line: int) -> FormRef:
    if not isinstance(raw, str):
        raise loc.fail(line, f"a pair side must be a string reference, got {raw!r}")
    foreign = raw.startswith("@")
    parts = raw[1:].split(".") if foreign else raw.split(".")
    if foreign and len(parts) == 3:
        return FormRef(parts[0], parts[1], parts[2])
    if not foreign and len(parts) == 2:
        return FormRef(family, parts[0], parts[1])
    raise loc.fail(
        line, f"bad reference {raw!r} (expected 'question.form' or '@family.question.form')"
    )


def load_pair_families(
    paths: Sequence[Path],
    parse_question: Callable[[str, Any, Locator, int], Q],
    subcategories: Mapping[str, tuple[str, str]],
) -> list[Family[Q]]:
    """Load and check every family of ``paths`` (in the given order).

    ``parse_question(key, raw, locator, line)`` builds one domain question.
    Checks: family keys unique across files, pair shapes, labels, that each
    subcategory belongs to its label, and that every reference resolves with
    the side constraints of its label (see the module docstring).
    """
    families: list[Family[Q]] = []
    locators: dict[str, Locator] = {}
    for path in paths:
        data, loc = read_fixture(path)
        if (
            not isinstance(data, dict)
            or set(data) != {"families"}
            or not isinstance(data["families"], list)
        ):
            raise loc.fail(1, 'a fixture must be an object {"families": [...]}')
        for raw in data["families"]:
            fam = _parse_family(raw, loc, parse_question, subcategories)
            if fam.key in locators:
                first = locators[fam.key]
                raise loc.fail(
                    fam.line,
                    f"family key {fam.key!r} already used in {first.path}",
                )
            locators[fam.key] = loc
            families.append(fam)
    by_key = {f.key: f for f in families}
    for fam in families:
        loc = locators[fam.key]
        for spec in fam.pairs:
            _check_refs(fam, spec, by_key, loc)
    return families


def _parse_family(
    raw: Any,
    loc: Locator,
    parse_question: Callable[[str, Any, Locator, int], Q],
    subcategories: Mapping[str, tuple[str, str]],
) -> Family[Q]:
    if not isinstance(raw, dict):
        raise loc.fail(1, f"a family must be an object, got {type(raw).__name__}")
    key = raw.get("key")
    line = loc.line_of(f'"key": "{key}"') if isinstance(key, str) else 1
    if set(raw) != _FAMILY_KEYS:
        missing = sorted(_FAMILY_KEYS - set(raw))
        extra = sorted(set(raw) - _FAMILY_KEYS)
        raise loc.fail(line, f"family {key!r}: missing {missing}, unknown {extra}")
    if not isinstance(key, str) or not _KEY.match(key):
        raise loc.fail(line, f"family key {key!r} must match [a-z0-9_]+")
    grounding = nonempty_str(raw["grounding"], f"{key}.grounding", loc, line)
    qraw = raw["questions"]
    if not isinstance(qraw, dict) or len(qraw) < 2:
        raise loc.fail(line, f"family {key!r}: 'questions' must be an object with >= 2 questions")
    questions = []
    for qkey, qbody in qraw.items():
        if not _KEY.match(qkey):
            raise loc.fail(line, f"family {key!r}: question key {qkey!r} must match [a-z0-9_]+")
        qline = loc.line_of(f'"{qkey}"', start=line)
        questions.append((qkey, parse_question(f"{key}.{qkey}", qbody, loc, qline)))
    praw = raw["pairs"]
    if not isinstance(praw, list) or not praw:
        raise loc.fail(line, f"family {key!r}: 'pairs' must be a non-empty list")
    pairs_line = loc.line_of('"pairs"', start=line)
    pairs = []
    cursor = pairs_line
    for item in praw:
        if not isinstance(item, list) or len(item) not in (4, 5):
            raise loc.fail(
                cursor, f"family {key!r}: a pair must be [a, b, label, subcategory(, note)]"
            )
        pline = loc.line_of(*(f'"{s}"' for s in item[:2] if isinstance(s, str)), start=cursor)
        cursor = pline
        a = _parse_ref(item[0], key, loc, pline)
        b = _parse_ref(item[1], key, loc, pline)
        label, sub = item[2], item[3]
        if label not in LABELS:
            raise loc.fail(pline, f"unknown label {label!r} (expected one of {', '.join(LABELS)})")
        if sub not in subcategories:
            raise loc.fail(pline, f"unknown subcategory {sub!r}")
        if subcategories[sub][0] != label:
            raise loc.fail(
                pline, f"subcategory {sub!r} belongs to {subcategories[sub][0]}, not {label}"
            )
        note = nonempty_str(item[4], "note", loc, pline) if len(item) == 5 else None
        pairs.append(PairSpec(a, b, label, sub, note, pline))
    return Family(key, loc.path, line, grounding, tuple(questions), tuple(pairs))


def _form_text(fam: Family[Q], ref: FormRef) -> str | None:
    try:
        q = fam.question(ref.question)
    except KeyError:
        return None
    return dict(q.forms).get(ref.form)


def _check_refs(
    fam: Family[Q], spec: PairSpec, by_key: Mapping[str, Family[Q]], loc: Locator
) -> None:
    for side, ref in (("a", spec.a), ("b", spec.b)):
        other = by_key.get(ref.family)
        if other is None:
            raise loc.fail(spec.line, f"side {side}: unknown family in reference {ref}")
        if _form_text(other, ref) is None:
            raise loc.fail(spec.line, f"side {side}: no form {ref}")
    if spec.a.family != fam.key:
        raise loc.fail(spec.line, "side a must be a form of the family itself")
    if spec.label == UNRELATED:
        if spec.b.family == fam.key:
            raise loc.fail(spec.line, "an UNRELATED pair takes side b from another family ('@...')")
    elif spec.b.family != fam.key:
        raise loc.fail(spec.line, f"a {spec.label} pair must stay inside its family")
    same_question = spec.a.question == spec.b.question and spec.a.family == spec.b.family
    if spec.label in HIT_LABELS and not same_question:
        raise loc.fail(spec.line, f"a {spec.label} pair joins two forms of ONE question")
    if spec.label not in HIT_LABELS and same_question:
        raise loc.fail(spec.line, f"a {spec.label} pair joins two DIFFERENT questions")
    if spec.a == spec.b:
        raise loc.fail(spec.line, "both sides are the same form")


def resolve_pairs(families: Sequence[Family[Q]]) -> list[ResolvedPair[Q]]:
    """Every pair with its texts, after checking that no two pairs are the same
    request pair (in either order) across the whole domain."""
    by_key = {f.key: f for f in families}
    seen: dict[frozenset[str], tuple[Path, int]] = {}
    out: list[ResolvedPair[Q]] = []
    for fam in families:
        for spec in fam.pairs:
            other = by_key[spec.b.family]
            qa, qb = fam.question(spec.a.question), other.question(spec.b.question)
            text_a, text_b = dict(qa.forms)[spec.a.form], dict(qb.forms)[spec.b.form]
            if text_a == text_b:
                raise FixtureError.at(fam.path, spec.line, "the two sides are byte-identical")
            key = frozenset((text_a, text_b))
            if key in seen:
                path, line = seen[key]
                raise FixtureError.at(
                    fam.path,
                    spec.line,
                    f"the same pair of requests is already used at {path}:{line}",
                )
            seen[key] = (fam.path, spec.line)
            out.append(ResolvedPair(fam, spec, qa, qb, text_a, text_b, other.grounding))
    used = {(p.family.key, p.spec.a.question, p.spec.a.form) for p in out}
    used |= {(p.spec.b.family, p.spec.b.question, p.spec.b.form) for p in out}
    for fam in families:
        for qkey, q in fam.questions:
            for form, _ in q.forms:
                if (fam.key, qkey, form) not in used:
                    # Dead fixture text is either a forgotten row or a stale edit.
                    raise FixtureError.at(
                        fam.path, fam.line, f"form {fam.key}.{qkey}.{form} is never used"
                    )
    return out


# --- describing what changed between two requests ------------------------------------------

_WORD = re.compile(r"[\w°]+(?:[-.,'’/][\w°]+)*", re.UNICODE)
_STOP = frozenset(
    "a an the of in on at to for is are was were be do does did what which who whom how why "
    "when where and or with by from that this it its me my i you your please can could would "
    "so there i'm im".split()
)


def _words(text: str) -> list[str]:
    return _WORD.findall(text)


def describe_edit(a: str, b: str) -> str:
    """A short, exact description of how ``b`` differs from ``a`` word by word,
    e.g. ``"'capital' becomes 'largest city'"``; case and punctuation-only
    differences are reported as such."""
    if a.casefold() == b.casefold():
        return "only the letter case differs"
    wa, wb = _words(a), _words(b)
    fa, fb = [w.casefold() for w in wa], [w.casefold() for w in wb]
    if fa == fb:
        if wa == wb:
            return "only punctuation and spacing differ"
        return "only letter case and punctuation differ"
    if sorted(fa) == sorted(fb):
        moved = [w for w, x in zip(wa, fb, strict=True) if w.casefold() != x]
        return "the words " + " and ".join(f"'{w}'" for w in moved[:2]) + " swap places"
    parts: list[str] = []
    matcher = difflib.SequenceMatcher(a=fa, b=fb, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        old, new = " ".join(wa[i1:i2]), " ".join(wb[j1:j2])
        if op == "replace":
            parts.append(f"'{old}' becomes '{new}'")
        elif op == "delete":
            parts.append(f"'{old}' is dropped")
        elif op == "insert":
            parts.append(f"'{new}' is added")
    if len(parts) > 3:
        parts = parts[:3] + ["more"]
    return ", ".join(parts)


def new_wording(a: str, b: str, limit: int = 3) -> str:
    """The first content words of ``b`` that ``a`` does not use, quoted, e.g.
    ``"'seat', 'government'"`` (``"the same words"`` when there are none)."""
    have = {w.casefold() for w in _words(a)}
    fresh: list[str] = []
    for w in _words(b):
        f = w.casefold()
        if f not in have and f not in _STOP and w not in fresh:
            fresh.append(w)
    if fresh:
        return ", ".join(f"'{w}'" for w in fresh[:limit])
    keep = {w.casefold() for w in _words(b)}
    gone = [w for w in _words(a) if w.casefold() not in keep and w.casefold() not in _STOP]
    if gone:
        return "fewer words (no " + ", ".join(f"'{w}'" for w in gone[:limit]) + ")"
    return "the same words in another order"


def order_rows(domain: str, rows: list[DraftRow]) -> list[DraftRow]:
    """Rows in a stable pseudo-random order keyed on their content, so the ids
    the pipeline gives them in this order say nothing about label or family."""
    return sorted(rows, key=lambda r: (stable_seed(domain, r.query_a, r.query_b), r.query_a))


def grounding_text(
    family_grounding: str, subcategory: str, subcategories: Mapping[str, tuple[str, str]]
) -> str:
    """``real_world_grounding``: where the family's traffic comes from, plus why
    this axis of variation occurs."""
    text = f"{family_grounding}; {subcategories[subcategory][1]}."
    return text[0].upper() + text[1:]


def verify_or_fail(row: DraftRow, path: Path, line: int) -> None:
    """Run the row's checker; a disagreement with the label is a fixture error."""
    got = check_row(row.to_row())
    if got.binary != row.binary_label:
        raise FixtureError.at(
            path,
            line,
            f"labelled {row.label} ({row.binary_label}) but the checker says "
            f"{got.binary}: {got.detail}",
        )


def pair_row(
    p: ResolvedPair[Q],
    domain: str,
    subcategories: Mapping[str, tuple[str, str]],
    *,
    rationale: str,
    verification_method: str,
    verification_payload: dict[str, Any],
) -> DraftRow:
    """The row of one resolved pair: the two forms and answers, the family's
    grounding (an UNRELATED row's joined with the other family's), and the
    domain's rationale and verification."""
    spec = p.spec
    grounding = p.family.grounding
    if spec.label == UNRELATED:
        grounding = f"{grounding} next to {lower_first(p.grounding_b)}"
    return DraftRow(
        domain=domain,
        subcategory=spec.subcategory,
        label=spec.label,
        query_a=p.text_a,
        query_b=p.text_b,
        expected_answer_a=p.qa.answer,
        expected_answer_b=p.qb.answer,
        rationale=rationale,
        verification_method=verification_method,
        verification_payload=verification_payload,
        construction_method=CONSTRUCTION[spec.label],
        source=fixture_source(p.family.path, p.family.key),
        real_world_grounding=grounding_text(grounding, spec.subcategory, subcategories),
    )


def generate_pairs(
    domain: str, families: Sequence[Family[Q]], build: Callable[[ResolvedPair[Q]], DraftRow]
) -> list[DraftRow]:
    """The row ``build`` makes of every resolved pair of ``families``, each
    verified against its label, in a content-keyed order (:func:`order_rows`)."""
    rows = []
    for p in resolve_pairs(families):
        row = build(p)
        verify_or_fail(row, p.family.path, p.spec.line)
        rows.append(row)
    return order_rows(domain, rows)


# --- qa_factual -------------------------------------------------------------------------


def parse_fact_question(where: str, raw: Any, loc: Locator, line: int) -> FactQuestion:
    """One factual question: ``asks``, ``answer``, ``aliases`` (containing the
    answer), ``forms``."""
    want = {"asks", "answer", "aliases", "forms"}
    if not isinstance(raw, dict) or set(raw) != want:
        got = sorted(raw) if isinstance(raw, dict) else type(raw).__name__
        raise loc.fail(line, f"{where}: a question needs exactly {sorted(want)}, got {got}")
    asks = nonempty_str(raw["asks"], f"{where}.asks", loc, line)
    answer = nonempty_str(raw["answer"], f"{where}.answer", loc, line)
    aliases = raw["aliases"]
    if not isinstance(aliases, list) or not aliases:
        raise loc.fail(line, f"{where}: 'aliases' must be a non-empty list")
    clean = tuple(nonempty_str(s, f"{where}.aliases", loc, line) for s in aliases)
    if len({normalize_answer(s) for s in clean}) != len(clean):
        raise loc.fail(line, f"{where}: two aliases normalise to the same string")
    if normalize_answer(answer) not in {normalize_answer(s) for s in clean}:
        raise loc.fail(line, f"{where}: answer {answer!r} is not among its aliases")
    forms = parse_forms(raw["forms"], where, loc, line)
    return FactQuestion(where.split(".")[-1], asks, answer, clean, forms)


def fact_rationale(p: ResolvedPair[FactQuestion]) -> str:
    """One sentence naming what the two sides ask and why the cached answer does
    or does not serve query_b (built from the row's own content)."""
    qa, qb, label = p.qa, p.qb, p.spec.label
    note = f" ({p.spec.note})" if p.spec.note else ""
    if label == EQUIV:
        return (
            f"Both sides ask for {qa.asks} and {describe_edit(p.text_a, p.text_b)}{note}, "
            f"so the cached answer '{qa.answer}' still fits query_b."
        )
    if label == PARA_SAFE:
        return (
            f"query_b rewords the request with {new_wording(p.text_a, p.text_b)}{note} but still "
            f"asks for {qa.asks}, so '{qa.answer}' answers it as well."
        )
    if label == ADVERSARIAL:
        return (
            f"In query_b {describe_edit(p.text_a, p.text_b)}{note}: it asks for {qb.asks} "
            f"('{qb.answer}') rather than {qa.asks}, so the cached '{qa.answer}' would be a "
            "wrong hit."
        )
    if label == RELATED_UNSAFE:
        return (
            f"Same subject, different fact{note}: the cached answer gives {qa.asks} "
            f"('{qa.answer}') but query_b wants {qb.asks} ('{qb.answer}')."
        )
    return (
        f"query_a is about {qa.asks} and query_b about {qb.asks}{note}; the cached "
        f"'{qa.answer}' has nothing to do with the requested '{qb.answer}'."
    )


def build_fact_row(p: ResolvedPair[FactQuestion], domain: str) -> DraftRow:
    """The row of one resolved pair."""
    return pair_row(
        p,
        domain,
        SUBCATEGORIES,
        rationale=fact_rationale(p),
        verification_method="exact_match",
        verification_payload={
            "kind": "alias_set",
            "aliases_a": list(p.qa.aliases),
            "aliases_b": list(p.qb.aliases),
            "lang_a": "en",
            "lang_b": "en",
        },
    )


def load_families(fixture_dir: Path) -> list[Family[FactQuestion]]:
    """Every qa_factual family of ``fixture_dir/*.json``, checked
    (:func:`load_pair_families`)."""
    return load_pair_families(fixture_files(fixture_dir), parse_fact_question, SUBCATEGORIES)


def generate(fixture_dir: Path) -> list[DraftRow]:
    """All qa_factual rows of ``fixture_dir/*.json``, each verified against its
    label, in a content-keyed order."""
    return generate_pairs(DOMAIN, load_families(fixture_dir), lambda p: build_fact_row(p, DOMAIN))
