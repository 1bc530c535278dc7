"""Which kinds could apply to a text, from one pass over its words.

Trying all ~70 proposers on every prompt costs more than everything else the
generator does. Each lexicon-driven kind has trigger words (any word of any of
its curated entries, in lower case, less the commonest function words); a kind
whose trigger words the text lacks cannot apply and is not tried. Kinds that
need no curated word (case, spacing, punctuation, typos, a greeting, numbers,
context) are gated by a cheap test of the text instead. A trigger is only a
pre-filter: the proposer and the checker's validator still decide.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ...verify import stress_lexicon as lex
from ...verify.perturbation import ENTITY_KINDS, KINDS
from ...verify.perturbation_questions import TRIGGERS as QUESTION_TRIGGERS
from .edits import Prompt

#: Words too common to say anything about a kind.
_STOP = frozenset("the a an of and to in on for with at by is are was i you it".split())
_TOKEN = re.compile(r"[^\W\d_]+|\d+|[+#]+")


def _words(phrases: Iterable[str]) -> set[str]:
    out: set[str] = set()
    for phrase in phrases:
        out.update(w for w in _TOKEN.findall(phrase.lower()) if w not in _STOP)
    return out


def _index() -> dict[str, frozenset[str]]:
    lexicon: dict[str, set[str]] = {}
    for kind, cls in ENTITY_KINDS.items():
        lexicon[kind] = _words(lex.ENTITIES[cls])
    lexicon["proglang"] |= {"c++", "c#"}
    for kind, nouns in lex.NOUNS.items():
        lexicon[kind] = _words(w for pair in nouns for w in pair if w)
    pairs = {
        "contraction": [x for x, _ in lex.CONTRACTIONS],
        "expansion": [y for _, y in lex.CONTRACTIONS],
        "modal_swap": [w for pair in lex.MODAL_SWAPS for w in pair],
        "spelling_variant": [w for pair in lex.SPELLINGS for w in pair],
        "antonym": [w for pair in lex.ANTONYMS for w in pair],
        "operator_frame": ["remove", "delete", "add", "read", "write", "convert"],
        "negation_remove": [x for x, _ in (*lex.NEGATIONS, *lex.NEGATED_PREFERENCES)],
        "negation_add": ["that", "which", "who"],
        "with_without": ["using", "with", "without"],
        "number_word": list(lex.NUMBER_WORDS),
        "unit": [
            *(w for units in lex.UNITS.values() for pair in units for w in pair),
            *(a for abbreviations in lex.UNIT_ABBREVIATIONS.values() for a in abbreviations),
        ],
        "work": [t for works in lex.WORKS.values() for t, _ in works],
        "event": [name for name, _ in lex.EVENTS],
        "acronym": [a for group in lex.ACRONYM_GROUPS for a in group],
        "file_type": list(lex.FILE_EXTENSIONS),
        "audience": list(lex.AUDIENCES),
        "ordinal": list(lex.ORDINALS),
        "direction": ["to", "into"],
        "question_focus": list(QUESTION_TRIGGERS),
    }
    for kind, phrases in pairs.items():
        lexicon[kind] = _words(phrases)
    # "to"/"with"/"that" are stop words elsewhere but these kinds need them
    lexicon["direction"] = {"to", "into"}
    lexicon["with_without"] = {"using", "with", "without", "w"}
    lexicon["negation_add"] = {"that", "which", "who"}
    lexicon["negation_remove"] |= {"is", "are"}
    index: dict[str, set[str]] = {}
    for kind, words in lexicon.items():
        for word in words:
            index.setdefault(word, set()).add(kind)
    return {w: frozenset(k) for w, k in index.items()}


INDEX = _index()
#: Kinds the word index selects.
INDEXED = frozenset(k for kinds in INDEX.values() for k in kinds)
#: Kinds tried on every prompt (their proposers are cheap and rarely refuse).
ALWAYS = frozenset(
    {"case_lower", "case_upper", "spacing", "punct_end", "punct_comma", "greeting", "closer",
     "typo_transpose", "typo_drop", "typo_double", "typo_adjacent", "system_prompt_other"}
)  # fmt: skip
_DIGIT = re.compile(r"\d")
assert INDEXED | ALWAYS | {"number", "year", "comparison", "turns_other", "turns_edit"} == set(
    KINDS
)
_COMPARISON_SIGN = re.compile("[<>≤≥]")
_CJK_ELEMENT = re.compile("[" + "".join(sorted(lex.CJK_ELEMENTS)) + "]")


def candidate_kinds(prompt: Prompt) -> set[str]:
    """The kinds worth trying on ``prompt`` (a superset of those that apply)."""
    words = _TOKEN.findall(prompt.query.lower())
    kinds = set(ALWAYS)
    for word in words:
        found = INDEX.get(word)
        if found is not None:
            kinds |= found
    if _DIGIT.search(prompt.query):
        kinds |= {"number", "year"}
    if _COMPARISON_SIGN.search(prompt.query):
        kinds.add("comparison")
    if _CJK_ELEMENT.search(prompt.query):
        kinds.add("element")
    if prompt.turns:
        kinds |= {"turns_other", "turns_edit"}
    return kinds


class DirectionGuard:
    """False only when the ``direction`` proposer cannot find its pattern,
    ``[from ]A to|into B`` with A and B curated endpoints (case-insensitive): on
    ASCII text, some " to "/" into " must have an endpoint's last word ending the
    word before it and an endpoint's first word starting the word after it. The
    proposer's regex runs a long case-insensitive alternation at every position,
    and "to" is in most requests. When an endpoint holds a non-ASCII letter that
    matches an ASCII one case-insensitively, the guard never refuses."""

    def __init__(self, endpoints: Iterable[str]) -> None:
        words = list(endpoints)
        special = {
            c
            for w in words
            for c in w
            if not c.isascii() and any(re.fullmatch(re.escape(c), chr(x), re.I) for x in range(128))
        }
        ascii_words = [w.lower() for w in words if w.isascii()]
        self.active = not special
        self.last = frozenset(w.rsplit(" ", 1)[-1] for w in ascii_words)
        self.first = frozenset(w.split(" ", 1)[0] for w in ascii_words)

    def __call__(self, text: str) -> bool:
        if not self.active or not text.isascii():
            return True
        low = text.lower()
        for sep in (" to ", " into "):
            i = low.find(sep)
            while i >= 0:
                before = low[:i].rsplit(" ", 1)[-1]
                after = low[i + len(sep) :].split(" ", 1)[0]
                if any(before[k:] in self.last for k in range(len(before))) and any(
                    after[:k] in self.first for k in range(1, len(after) + 1)
                ):
                    return True
                i = low.find(sep, i + 1)
        return False
