"""Generator of the ``multilingual`` shard: one question asked in many languages,
verified by exact match on the answer sentence in the query's language.

The rule the shard tests: the answer comes back in the language the request
asks for, so the same question in two languages is a MISS (ADVERSARIAL: their
multilingual embeddings are nearly identical), while surface variants (EQUIV)
and rewordings (PARA_SAFE) inside one language are HITs. A code-switched
request (English mixed with another language) is answered in the language it
asks for: it is a MISS against a request answered in another language and a
HIT against one answered in the same language. An entity, number, unit or
direction change inside one language is an ADVERSARIAL MISS.

Fixtures
--------
Every ``sources/multilingual/*.json`` file (read in name order) holds::

    {"families": {
        "<family>": {                          # one authored item = one CV family
            "grounding": "where such traffic occurs",
            "questions": {
                "<question>": {
                    "gist": "what is asked, in English, for rationales",
                    "langs": {
                        "<ISO 639-1 answer language>": {
                            "answers": ["accepted answer sentence", ...],   # first = expected
                            "phrasings": {"base": "the question",
                                          "<key>": ["a variant", "how it differs"]}}}}},
            "rows": [["LABEL", "subcategory", "<question>.<lang>.<phrasing>",
                      "<question>.<lang>.<phrasing>" | "<family>:<question>.<lang>.<phrasing>"]]}}}

A phrasing lives under the language its answer must be in: a code-switched
request such as "What's the capital of Australia? Contéstame en español" sits
under ``es``, and one written partly in another language but answered in
English (phrasing key ``cs``) sits under ``en``.

Every row has a non-English side: a side answered in another language, or a
code-switched side (subcategories ``code_switch_*``); a pair of two plain
English requests belongs to the English domains, and the generator refuses
it. UNRELATED rows take query_b from a fixed partner family (the families form
pairs and triples), so families linked by UNRELATED rows form small groups the
split packer (:mod:`cacheeval.pipeline.splits`) keeps in one split.

Verification
------------
Payload ``{"kind": "alias_set", "aliases_a": [...], "aliases_b": [...],
"lang_a": "<iso>", "lang_b": "<iso>"}`` with method ``exact_match`` (see
:mod:`cacheeval.verify.alias`): the aliases are the accepted answer sentences of
each side in its own language; HIT iff both languages are equal and the
cached answer (``expected_answer_a``) is one of query_b's accepted answers
after normalisation. The generator re-runs the checker on every row and
refuses to emit a row it does not reproduce.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..schema import (
    ADVERSARIAL,
    EQUIV,
    HIT_LABELS,
    PARA_SAFE,
    RELATED_UNSAFE,
    UNRELATED,
)
from .common import CONSTRUCTION, DraftRow, FixtureError, fixture_source

# The fixture machinery (error locations, row checks) is shared with the
# conversational generator rather than copied.
from .conversational import (
    FixtureText,
    Phrasing,
    RowSpec,
    build_rows,
    edit_description,
    expect,
    fixture_families,
    ref_family,
    row_specs,
    spec_subcategory,
    strip_end,
)

__all__ = ["DOMAIN", "LANGUAGES", "SUBCATEGORIES", "FixtureError", "generate", "load_families"]

DOMAIN = "multilingual"

#: ISO 639-1 code -> English name, for rationales. Only these codes are accepted.
LANGUAGES: dict[str, str] = {
    "en": "English",
    "es": "Spanish",
    "fr": "French",
    "de": "German",
    "pt": "Portuguese",
    "it": "Italian",
    "ja": "Japanese",
    "ru": "Russian",
    "zh": "Chinese",
}

#: Scripts written without spaces between words: edits are described per character.
_UNSPACED = frozenset({"ja", "zh"})

#: Whether a subcategory pairs the same question (True), different questions (False).
_SAME_Q = "same_question"
_OTHER_Q = "other_question"
#: Whether it pairs the same answer language, different ones, or either.
_SAME_L = "same_language"
_OTHER_L = "other_language"

#: subcategory -> (label, question relation, language relation, grounding clause).
SUBCATEGORIES: dict[str, tuple[str, str, str, str]] = {
    "accent_punctuation_variant": (
        EQUIV,
        _SAME_Q,
        _SAME_L,
        "people on phones or foreign keyboards drop accents and inverted punctuation",
    ),
    "case_punctuation_variant": (
        EQUIV,
        _SAME_Q,
        _SAME_L,
        "the same question is retyped in lower case or without its question mark",
    ),
    "script_width_variant": (
        EQUIV,
        _SAME_Q,
        _SAME_L,
        "Chinese and Japanese input methods switch between full-width and half-width "
        "punctuation and digits",
    ),
    "notation_variant": (
        EQUIV,
        _SAME_Q,
        _SAME_L,
        "one word has several accepted written forms (kana or kanji, oe for ö, е for ё, 1 for 一)",
    ),
    "spelling_variant": (
        EQUIV,
        _SAME_Q,
        _SAME_L,
        "regional or informal spellings of the same word arrive for the same question",
    ),
    "same_language_paraphrase": (
        PARA_SAFE,
        _SAME_Q,
        _SAME_L,
        "native speakers phrase the same question in their own words",
    ),
    "code_switch_same_language": (
        PARA_SAFE,
        _SAME_Q,
        _SAME_L,
        "bilingual users mix English into a request but ask for an answer in the same "
        "language as the other request",
    ),
    "cross_language_same_question": (
        ADVERSARIAL,
        _SAME_Q,
        _OTHER_L,
        "multilingual products receive the same question in several languages, and "
        "multilingual embeddings place the translations almost on top of each other",
    ),
    "code_switch_language_change": (
        ADVERSARIAL,
        _SAME_Q,
        _OTHER_L,
        "bilingual users append a request to answer in another language to an otherwise "
        "identical question",
    ),
    "entity_swap": (
        ADVERSARIAL,
        _OTHER_Q,
        _SAME_L,
        "quiz and homework questions are reused with a different country, work or element",
    ),
    "number_change": (
        ADVERSARIAL,
        _OTHER_Q,
        _SAME_L,
        "arithmetic and conversion questions come back with one number changed",
    ),
    "unit_change": (
        ADVERSARIAL,
        _OTHER_Q,
        _SAME_L,
        "the same measurement question is asked for a different unit",
    ),
    "direction_swap": (
        ADVERSARIAL,
        _OTHER_Q,
        _SAME_L,
        "a superlative or a conversion direction is flipped in otherwise identical words",
    ),
    "event_swap": (
        ADVERSARIAL,
        _OTHER_Q,
        _SAME_L,
        "history questions ask for the year of a different event in the same words",
    ),
    "related_question_same_language": (
        RELATED_UNSAFE,
        _OTHER_Q,
        _SAME_L,
        "learners follow up with a neighbouring question on the same subject",
    ),
    "related_question_other_language": (
        RELATED_UNSAFE,
        _OTHER_Q,
        _OTHER_L,
        "multilingual users ask neighbouring questions on one subject in different languages",
    ),
    "unrelated_same_language": (
        UNRELATED,
        _OTHER_Q,
        _SAME_L,
        "an assistant receives unrelated questions from speakers of the same language",
    ),
    "unrelated_other_language": (
        UNRELATED,
        _OTHER_Q,
        _OTHER_L,
        "an assistant receives unrelated questions in different languages",
    ),
}


@dataclass(frozen=True, slots=True)
class Version:
    """One question in one answer language: its accepted answers and phrasings."""

    lang: str
    answers: tuple[str, ...]
    phrasings: dict[str, Phrasing]


@dataclass(frozen=True, slots=True)
class Question:
    key: str
    gist: str
    langs: dict[str, Version]


@dataclass(frozen=True, slots=True)
class Family:
    key: str
    path: Path
    fx: FixtureText
    grounding: str
    questions: dict[str, Question]
    rows: tuple[RowSpec, ...]


def _nonempty(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _version(fx: FixtureText, where: tuple[str, ...], lang: str, data: Any) -> Version:
    expect(
        fx,
        lang in LANGUAGES,
        f"unknown language code {lang!r} (known: {', '.join(LANGUAGES)})",
        *where,
    )
    expect(fx, isinstance(data, dict), f"language {lang!r} must be an object", *where)
    answers = data.get("answers")
    expect(
        fx,
        isinstance(answers, list) and bool(answers) and all(_nonempty(a) for a in answers),
        f"language {lang!r} needs a non-empty list of answer sentences",
        *where,
    )
    phr = data.get("phrasings")
    expect(
        fx,
        isinstance(phr, dict) and _nonempty(phr.get("base")),
        f"language {lang!r} needs a base phrasing",
        *where,
    )
    phrasings: dict[str, Phrasing] = {}
    for key, value in phr.items():
        if key == "base":
            phrasings[key] = Phrasing(value, None)
            continue
        ok = isinstance(value, list) and len(value) == 2 and all(_nonempty(v) for v in value)
        expect(fx, ok, f"phrasing {key!r} must be [text, note]", *where, key)
        phrasings[key] = Phrasing(value[0], value[1])
    return Version(lang, tuple(answers), phrasings)


def load_families(fixture_dir: Path) -> list[Family]:
    """Every family of every fixture file in ``fixture_dir``, in file then file order."""
    families: list[Family] = []
    for fx, fam, body in fixture_families(fixture_dir):
        qs = body.get("questions")
        expect(fx, isinstance(qs, dict) and bool(qs), f"family {fam!r} needs questions", fam)
        questions: dict[str, Question] = {}
        for qkey, q in qs.items():
            where = (fam, "questions", qkey)
            ok = (
                isinstance(q, dict)
                and _nonempty(q.get("gist"))
                and isinstance(q.get("langs"), dict)
            )
            expect(fx, ok, f"question {qkey!r} needs a gist and langs", *where)
            langs = {lang: _version(fx, (*where, lang), lang, v) for lang, v in q["langs"].items()}
            questions[qkey] = Question(qkey, q["gist"], langs)
        specs = row_specs(fx, fam, body)
        families.append(Family(fam, fx.path, fx, body["grounding"], questions, specs))
    return families


@dataclass(frozen=True, slots=True)
class _Side:
    family: Family
    question: Question
    version: Version
    phrasing: Phrasing

    @property
    def lang_name(self) -> str:
        return LANGUAGES[self.version.lang]

    @property
    def answer(self) -> str:
        return self.version.answers[0]


def _resolve(ref: str, home: Family, by_key: dict[str, Family], spec: RowSpec) -> _Side:
    fam, local = ref_family(ref, home, by_key, spec)
    parts = local.split(".")
    if len(parts) != 3:
        raise home.fx.error(
            f"reference {ref!r} must be <question>.<lang>.<phrasing>", offset=spec.offset
        )
    q = fam.questions.get(parts[0])
    v = q.langs.get(parts[1]) if q else None
    p = v.phrasings.get(parts[2]) if v else None
    if q is None or v is None or p is None:
        raise home.fx.error(f"reference {ref!r} names no question phrasing", offset=spec.offset)
    return _Side(fam, q, v, p)


def _an(word: str) -> str:
    """``word`` with its indefinite article (an English, a Spanish)."""
    return f"{'an' if word[:1] in 'AEIOU' else 'a'} {word}"


def _rationale(spec: RowSpec, sa: _Side, sb: _Side) -> str:
    lang_a, lang_b = sa.lang_name, sb.lang_name
    if spec.label in HIT_LABELS:
        pa, pb = sa.phrasing, sb.phrasing
        if pa.note and pb.note:
            diff = f"query_a {pa.note} while query_b {pb.note}"
        else:
            diff = f"query_b {pb.note}" if pb.note else f"query_a {pa.note}"
        return (
            f"Both sides ask for {sa.question.gist} and want {_an(lang_a)} answer; {diff}, "
            f'so the cached "{sa.answer}" is an accepted answer to query_b.'
        )
    if spec.label == ADVERSARIAL and sa.question is sb.question:
        how = (
            f"query_b {sb.phrasing.note}"
            if sb.phrasing.note
            else f"query_b is the {lang_b} version"
        )
        return (
            f"Both sides ask for {sa.question.gist}, but query_a wants {_an(lang_a)} answer and "
            f'{how}; the cached "{sa.answer}" would come back in the wrong language '
            f'(query_b expects "{sb.answer}").'
        )
    if spec.label == ADVERSARIAL:
        edit = edit_description(sa.phrasing.text, sb.phrasing.text, sa.version.lang in _UNSPACED)
        return (
            f"A minimal {lang_a} edit ({edit}) turns a question about {sa.question.gist} into "
            f'one about {sb.question.gist}; the cached "{sa.answer}" is wrong for it '
            f'(query_b expects "{sb.answer}").'
        )
    quoted = f'"{strip_end(sb.phrasing.text)}"'
    langs = f"both in {lang_a}" if lang_a == lang_b else f"{lang_a} then {lang_b}"
    if spec.label == RELATED_UNSAFE:
        return (
            f"Query_b ({quoted}) asks for {sb.question.gist} instead of {sa.question.gist} "
            f'({langs}); the cached "{sa.answer}" does not answer it.'
        )
    return (
        f"Query_a asks for {sa.question.gist} while query_b ({quoted}) asks for "
        f"{sb.question.gist} ({langs}), an unrelated question; "
        f'the cached "{sa.answer}" is no answer to it.'
    )


def _build(spec: RowSpec, home: Family, by_key: dict[str, Family]) -> DraftRow:
    def fail(message: str) -> FixtureError:
        return home.fx.error(message, offset=spec.offset)

    _, q_rel, l_rel, clause = spec_subcategory(spec, home, SUBCATEGORIES)
    sa = _resolve(spec.ref_a, home, by_key, spec)
    sb = _resolve(spec.ref_b, home, by_key, spec)
    same_q = sa.family is sb.family and sa.question is sb.question
    same_l = sa.version.lang == sb.version.lang
    if (q_rel == _SAME_Q) != same_q:
        want = "the same question" if q_rel == _SAME_Q else "two different questions"
        raise fail(f"{spec.subcategory} needs {want}")
    if (l_rel == _SAME_L) != same_l:
        want = "one answer language" if l_rel == _SAME_L else "two answer languages"
        raise fail(f"{spec.subcategory} needs {want}")
    if spec.label == UNRELATED and sb.family is home:
        raise fail("an UNRELATED row must take query_b from another family")
    if spec.label in (RELATED_UNSAFE, ADVERSARIAL) and sb.family is not home:
        raise fail(f"a {spec.label} row must stay inside its family")
    if sa.phrasing.text == sb.phrasing.text:
        raise fail("the two sides are identical")
    if sa.version.lang == sb.version.lang == "en" and not spec.subcategory.startswith(
        "code_switch"
    ):
        raise fail("both sides are plain English: a multilingual row needs a non-English side")
    return DraftRow(
        domain=DOMAIN,
        subcategory=spec.subcategory,
        label=spec.label,
        query_a=sa.phrasing.text,
        query_b=sb.phrasing.text,
        expected_answer_a=sa.answer,
        expected_answer_b=sb.answer,
        rationale=_rationale(spec, sa, sb),
        verification_method="exact_match",
        verification_payload={
            "kind": "alias_set",
            "aliases_a": list(sa.version.answers),
            "aliases_b": list(sb.version.answers),
            "lang_a": sa.version.lang,
            "lang_b": sb.version.lang,
        },
        construction_method=CONSTRUCTION[spec.label],
        source=fixture_source(home.path, home.key),
        real_world_grounding=f"{home.grounding}; {clause}.",
    )


def generate(fixture_dir: Path) -> list[DraftRow]:
    """All multilingual rows of ``fixture_dir``, in fixture order.

    Raises :class:`FixtureError` (``path:line: what``) on any fixture problem,
    including a row whose label the alias checker does not reproduce.
    """
    return build_rows(DOMAIN, load_families(fixture_dir), _build)
