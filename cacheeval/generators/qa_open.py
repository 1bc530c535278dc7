"""qa_open: open-ended explanatory questions whose answers are checked by rubric.

Fixtures (``sources/qa_open/*.json``) use the family / pair format of
:mod:`cacheeval.generators.qa_factual` (read its docstring); only the question
record differs. Instead of aliases, an open question carries a short
paragraph answer written by the curator and the three atomic criteria that a
correct answer to it must meet::

    "pros": {
      "asks": "the advantages of solar power",
      "answer": "Solar power produces electricity without burning fuel ...",
      "criteria": [
        {"criterion": "says solar power is clean or emission-free",
         "pattern": "emission|clean|pollut"},
        {"criterion": "...", "pattern": "..."},
        {"criterion": "...", "pattern": "..."}],
      "forms": {"base": "What are the advantages of solar power?", ...}}

``pattern`` is a case-insensitive regular expression that a text meeting the
criterion matches (the ``rubric`` checker's contract). The answer must meet
its own three criteria; the loader rejects it otherwise.

Each row is verified by the ``rubric`` checker (method ``rubric``, the rubric
tier): HIT iff ``answer_a`` meets every criterion of query_b. Two forms of one
question share their criteria, so HIT rows are rewordings with the same
criteria; a MISS row's cached paragraph must fail at least one of query_b's
criteria, and the rationale names the ones it fails.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..schema import ADVERSARIAL, EQUIV, PARA_SAFE, RELATED_UNSAFE, UNRELATED
from .common import DraftRow, fixture_files
from .qa_factual import (
    Family,
    Locator,
    ResolvedPair,
    describe_edit,
    generate_pairs,
    load_pair_families,
    new_wording,
    nonempty_str,
    pair_row,
    parse_forms,
)

DOMAIN = "qa_open"

#: subcategory -> (label it belongs to, where such traffic comes from).
SUBCATEGORIES: dict[str, tuple[str, str]] = {
    "case_punctuation": (EQUIV, "chat users often skip capitals and punctuation"),
    "typo": (EQUIV, "a misspelt word slips in when typing fast"),
    "contraction": (EQUIV, "contracted and spelt-out forms alternate between users"),
    "keyword_fragment": (EQUIV, "search habits cut a question down to its key words"),
    "notation_variant": (
        EQUIV,
        "the same thing is written as an abbreviation, numeral or symbol",
    ),
    "lexical_paraphrase": (
        PARA_SAFE,
        "different people ask for the same explanation in their own words",
    ),
    "imperative_form": (
        PARA_SAFE,
        "requests arrive as instructions ('explain', 'tell me') as often as questions",
    ),
    "structural_rewrite": (
        PARA_SAFE,
        "the same request is phrased with another sentence structure",
    ),
    "conversational_framing": (
        PARA_SAFE,
        "users add a line of personal context before the actual question",
    ),
    "polarity_flip": (
        ADVERSARIAL,
        "users ask for the other side (pros then cons, works then fails) in near-identical words",
    ),
    "scope_change": (
        ADVERSARIAL,
        "a follow-up narrows or widens the subject while keeping the wording",
    ),
    "audience_change": (
        ADVERSARIAL,
        "the same explanation is requested for a very different reader",
    ),
    "format_constraint": (
        ADVERSARIAL,
        "users add a length or format instruction that changes what a good answer is",
    ),
    "cause_effect_swap": (
        ADVERSARIAL,
        "essay prompts ask for causes and for effects of the same phenomenon",
    ),
    "language_swap": (
        ADVERSARIAL,
        "learners ask for the same concept with code in another programming language",
    ),
    "entity_swap": (
        ADVERSARIAL,
        "question templates recur with one subject exchanged for a look-alike",
    ),
    "direction_swap": (
        ADVERSARIAL,
        "comparisons are asked in both directions (A over B, then B over A)",
    ),
    "condition_change": (
        ADVERSARIAL,
        "the same phenomenon is asked about under a different condition",
    ),
    "same_topic_other_question": (
        RELATED_UNSAFE,
        "one topic produces many distinct questions in the same session",
    ),
    "follow_up_question": (
        RELATED_UNSAFE,
        "a user follows an explanation with a practical next question",
    ),
    "adjacent_concept": (
        RELATED_UNSAFE,
        "a neighbouring concept that learners often mix up is asked next",
    ),
    "cross_topic": (
        UNRELATED,
        "a general assistant sees unrelated explanatory requests side by side",
    ),
}


@dataclass(frozen=True, slots=True)
class Criterion:
    """One atomic rubric item: what a correct answer says, and a case-insensitive
    regular expression that such an answer matches."""

    criterion: str
    pattern: str

    def met_by(self, text: str) -> bool:
        return re.search(self.pattern, text, flags=re.IGNORECASE | re.UNICODE) is not None


@dataclass(frozen=True, slots=True)
class OpenQuestion:
    """An explanatory question: the curator's paragraph answer, its three
    criteria, and its surface forms."""

    key: str
    asks: str
    answer: str
    criteria: tuple[Criterion, Criterion, Criterion]
    forms: tuple[tuple[str, str], ...]

    def failed(self, text: str) -> list[Criterion]:
        """The criteria of this question that ``text`` does not meet."""
        return [c for c in self.criteria if not c.met_by(text)]


def parse_open_question(where: str, raw: Any, loc: Locator, line: int) -> OpenQuestion:
    """One open question: ``asks``, ``answer``, exactly three ``criteria``
    (``{criterion, pattern}``, patterns compile, the answer meets all three)
    and ``forms``."""
    want = {"asks", "answer", "criteria", "forms"}
    if not isinstance(raw, dict) or set(raw) != want:
        got = sorted(raw) if isinstance(raw, dict) else type(raw).__name__
        raise loc.fail(line, f"{where}: a question needs exactly {sorted(want)}, got {got}")
    asks = nonempty_str(raw["asks"], f"{where}.asks", loc, line)
    answer = nonempty_str(raw["answer"], f"{where}.answer", loc, line)
    craw = raw["criteria"]
    if not isinstance(craw, list) or len(craw) != 3:
        raise loc.fail(line, f"{where}: 'criteria' must list exactly three items")
    crits: list[Criterion] = []
    for item in craw:
        if not isinstance(item, dict) or set(item) != {"criterion", "pattern"}:
            raise loc.fail(line, f'{where}: a criterion is {{"criterion": ..., "pattern": ...}}')
        text = nonempty_str(item["criterion"], f"{where}.criterion", loc, line)
        pattern = nonempty_str(item["pattern"], f"{where}.pattern", loc, line)
        cline = loc.line_of(text, start=line)
        try:
            re.compile(pattern, flags=re.IGNORECASE | re.UNICODE)
        except re.error as e:
            raise loc.fail(cline, f"{where}: pattern {pattern!r} does not compile ({e})") from None
        crits.append(Criterion(text, pattern))
    if len({c.criterion for c in crits}) != 3:
        raise loc.fail(line, f"{where}: the three criteria must be distinct")
    forms = parse_forms(raw["forms"], where, loc, line)
    q = OpenQuestion(where.split(".")[-1], asks, answer, (crits[0], crits[1], crits[2]), forms)
    own = q.failed(answer)
    if own:
        names = "; ".join(c.criterion for c in own)
        raise loc.fail(line, f"{where}: the answer fails its own criteria: {names}")
    return q


def _quote_failed(crits: list[Criterion]) -> str:
    names = [f"'{c.criterion}'" for c in crits]
    if not names:
        # A mislabelled MISS pair; verify_or_fail rejects the row right after.
        return "none of them"
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def open_rationale(p: ResolvedPair[OpenQuestion]) -> str:
    """One sentence naming what differs and, for MISS rows, which of query_b's
    criteria the cached paragraph fails (computed, so it cannot drift)."""
    qa, qb, label = p.qa, p.qb, p.spec.label
    note = f" ({p.spec.note})" if p.spec.note else ""
    if label == EQUIV:
        return (
            f"Both sides ask for {qa.asks} and {describe_edit(p.text_a, p.text_b)}{note}, so the "
            "cached paragraph still meets query_b's three criteria."
        )
    if label == PARA_SAFE:
        return (
            f"query_b rewords the request with {new_wording(p.text_a, p.text_b)}{note} but keeps "
            f"the same three criteria for {qa.asks}, so the cached paragraph serves it."
        )
    failed = _quote_failed(qb.failed(qa.answer))
    if label == ADVERSARIAL:
        return (
            f"In query_b {describe_edit(p.text_a, p.text_b)}{note}: it asks for {qb.asks}, and "
            f"the cached paragraph on {qa.asks} fails {failed}."
        )
    if label == RELATED_UNSAFE:
        return (
            f"Same topic, different question{note}: the cached paragraph gives {qa.asks}, but "
            f"query_b wants {qb.asks} and the paragraph fails {failed}."
        )
    return (
        f"query_a wants {qa.asks} and query_b wants {qb.asks}{note}; the cached paragraph "
        f"fails {failed}."
    )


def _payload_criteria(q: OpenQuestion) -> list[dict[str, str]]:
    return [{"criterion": c.criterion, "pattern": c.pattern} for c in q.criteria]


def build_open_row(p: ResolvedPair[OpenQuestion]) -> DraftRow:
    """The row of one resolved pair."""
    return pair_row(
        p,
        DOMAIN,
        SUBCATEGORIES,
        rationale=open_rationale(p),
        verification_method="rubric",
        verification_payload={
            "kind": "rubric",
            "criteria_a": _payload_criteria(p.qa),
            "criteria_b": _payload_criteria(p.qb),
        },
    )


def load_families(fixture_dir: Path) -> list[Family[OpenQuestion]]:
    """Every qa_open family of ``fixture_dir/*.json``, checked."""
    return load_pair_families(fixture_files(fixture_dir), parse_open_question, SUBCATEGORIES)


def generate(fixture_dir: Path) -> list[DraftRow]:
    """All qa_open rows of ``fixture_dir/*.json``, each verified against its
    label, in a content-keyed order."""
    return generate_pairs(DOMAIN, load_families(fixture_dir), build_open_row)
