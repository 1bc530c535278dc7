"""The per-kind rules of stress edits (:mod:`cacheeval.verify.perturbation`): what
each kind of edit may change, as validators ``(text, start, end, original,
replacement) -> problem or None``. The generator (:mod:`cacheeval.benches.stress`)
keeps an edit only when its validator accepts it, and the checker asks the same
validator again, so the two agree by construction.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from . import stress_guard_words as gw
from . import stress_lexicon as lex
from .perturbation_greetings import closer_validator, greeting_validator
from .perturbation_guards import (
    celestial_problem,
    company_problem,
    currency_problem,
    date_name_problem,
    lookalike_problem,
    negation_add_problem,
    place_problem,
    presupposition_problem,
    repeat_problem,
    statement_problem,
)
from .perturbation_numbers import (
    number_rule,
    number_word_rule,
    year_rule,
)
from .perturbation_questions import question_focus_problem
from .perturbation_text import (
    NAME_BEFORE,
    at_word_boundary,
    exact_word,
    found,
    found_before,
    inside_quotes_or_code,
    is_request,
    lower_words,
    names,
    next_word,
    pair_in,
    pair_set,
    part_of_name,
    previous_word,
    punct_comma_problem,
    same_case_form,
)

#: Identity kinds whose span is one member of an entity class.
ENTITY_KINDS: dict[str, str] = {
    "city": "city",
    "country": "country",
    "first_name": "first_name",
    "language": "language",
    "translate_target": "language",
    "proglang": "proglang",
    "currency": "currency",
    "weekday": "weekday",
    "month": "month",
    "us_state": "us_state",
    "continent": "continent",
    "celestial": "celestial",
    "software": "software",
    "cuisine": "cuisine",
    "company": "company",
    "landmark": "landmark",
}

_PUNCT_END = re.compile(r"\A[?.!]*\Z")
FRAME_SLOT = r"((?:[\w'-]+ ){0,3}[\w'-]+)"
_DIRECTION = re.compile(r"\A(from )?(.+?) (to|into) (.+)\Z")
_TYPO_WORD = re.compile(r"[a-z]{5,}")


# --- helpers -------------------------------------------------------------------------


_ENTITY_SETS = {cls: frozenset(members) for cls, members in lex.ENTITIES.items()}
_LOWER_MEMBERS = {cls: {m.lower(): m for m in members} for cls, members in lex.ENTITIES.items()}
_LEXICON_WORDS = frozenset(
    w.lower()
    for group in (
        *lex.ENTITIES.values(),
        lex.NUMBER_WORDS,
        tuple(w for pair in lex.ANTONYMS for w in pair),
        tuple(u for units in lex.UNITS.values() for pair in units for u in pair),
        tuple(w for nouns in lex.NOUNS.values() for pair in nouns for w in pair),
        lex.ORDINALS,
    )
    for w in group
)


def typo_target(text: str, start: int, end: int) -> str | None:
    """Why the word at [start, end) may not carry a typo (None when it may): a
    lower-case word of five letters or more, outside quotes and code, that no
    curated list names and that no answer-deciding word list protects."""
    word = text[start:end]
    if not _TYPO_WORD.fullmatch(word):
        return f"{word!r} is not a lower-case word of five letters or more"
    if not at_word_boundary(text, start, end):
        return f"{word!r} is not a whole word"
    around = (text[start - 1] if start else " ") + (text[end] if end < len(text) else " ")
    if any(c in "._/\\()[]{}<>=-'\"`@$" for c in around):
        return f"{word!r} touches code or quotes"
    if inside_quotes_or_code(text, start):
        return f"{word!r} is quoted"
    if word in lex.TYPO_PROTECTED or word in _LEXICON_WORDS:
        return f"{word!r} decides the answer"
    return None


def unit_dimension(word: str) -> tuple[str, str] | None:
    """(dimension, form) of a unit word: form 'singular', 'plural' or 'abbreviation'.

    >>> unit_dimension("miles"), unit_dimension("kg"), unit_dimension("apple")
    (('length', 'plural'), ('mass', 'abbreviation'), None)
    """
    for dim, units in lex.UNITS.items():
        for singular, plural in units:
            if word == plural:
                return dim, "plural"
            if word == singular:
                return dim, "singular"
    for dim, abbreviations in lex.UNIT_ABBREVIATIONS.items():
        if word in abbreviations:
            return dim, "abbreviation"
    return None


# --- validators: (text, start, end, original, replacement) -> problem or None ----------

Validator = Callable[[str, int, int, str, str], str | None]


def _whole(text: str, start: int, end: int) -> str | None:
    return None if (start, end) == (0, len(text)) else "the span is not the whole text"


def _case_lower(text: str, start: int, end: int, o: str, r: str) -> str | None:
    return _whole(text, start, end) or (None if r == o.lower() else "not the lower-cased text")


def _case_upper(text: str, start: int, end: int, o: str, r: str) -> str | None:
    return _whole(text, start, end) or (None if r == o.upper() else "not the upper-cased text")


def _spacing(text: str, start: int, end: int, o: str, r: str) -> str | None:
    return None if "".join(o.split()) == "".join(r.split()) else "more than whitespace changed"


def _punct_end(text: str, start: int, end: int, o: str, r: str) -> str | None:
    if text[start - 1 : start] in ('"', "'", ")", "]"):
        return "the text ends in a quote or a bracket"
    if end != len(text) or not _PUNCT_END.match(o) or not _PUNCT_END.match(r):
        return "not the final punctuation"
    return None


def _typo(relation: Callable[[str, str], bool]) -> Validator:
    def check(text: str, start: int, end: int, o: str, r: str) -> str | None:
        why = typo_target(text, start, end)
        if why:
            return why
        return None if relation(o, r) else f"{r!r} is not this typo of {o!r}"

    return check


def _transposed(o: str, r: str) -> bool:
    return len(o) == len(r) and any(
        o[i] != o[i + 1] and r == o[:i] + o[i + 1] + o[i] + o[i + 2 :] for i in range(1, len(o) - 1)
    )


def _dropped(o: str, r: str) -> bool:
    return any(r == o[:i] + o[i + 1 :] for i in range(1, len(o))) and r != o


def _doubled(o: str, r: str) -> bool:
    return any(r == o[: i + 1] + o[i:] for i in range(1, len(o)))


def _adjacent(o: str, r: str) -> bool:
    if len(o) != len(r):
        return False
    diff = [i for i in range(len(o)) if o[i] != r[i]]
    return len(diff) == 1 and diff[0] >= 1 and r[diff[0]] in lex.KEY_NEIGHBOURS.get(o[diff[0]], "")


def _pairs(pairs: tuple[tuple[str, str], ...], *, reverse: bool | None = None) -> Validator:
    allowed = pair_set(pairs, +1 if reverse is False else -1 if reverse else 0)

    def check(text: str, start: int, end: int, o: str, r: str) -> str | None:
        if not at_word_boundary(text, start, end):
            return "the span is not whole words"
        return None if (o, r) in allowed else f"{o!r} -> {r!r} is not a curated pair"

    return check


def _contraction(text: str, start: int, end: int, o: str, r: str) -> str | None:
    problem = _pairs(lex.CONTRACTIONS, reverse=False)(text, start, end, o, r)
    if problem:
        return problem
    nxt = next_word(text, end)
    if o.lower().endswith("have") and nxt in ("to", "got"):
        return "'have to' is never contracted (\"I've to wait\")"
    if o.lower() == "i have" and not (nxt.endswith(("ed", "en", "wn")) or nxt in gw.PARTICIPLES):
        return f"'have' owns something here (I have {nxt}): \"I've {nxt}\" reads British at best"
    return None if next_word(text, end) else "nothing follows the contracted words"


#: Words after a noun that show it is not a modifier of the next noun.
FUNCTION_NEXT = frozenset(
    """and or with for in on at near to from of by tonight today tomorrow after before if
    when but is are was were has have had will would can could should so because that
    which who while than as into about without every do does did isn't aren't wasn't
    don't doesn't can't won't i you he she we they my your his her our their it this these
    those please thanks""".split()
)
#: Kinds whose word modifies a noun by nature (a colour, a season, a diet): the
#: compound rule of :func:`_noun` does not apply.
ADJECTIVAL_NOUNS = frozenset(
    {"colour", "season", "diet", "headphone_type", "material", "element", "energy", "phenomenon"}
)
#: Subject pronouns: a noun never follows one ("I wood have" is a misspelling).
SUBJECT_PRONOUNS = frozenset("i you he she we they it".split())


def entity_form(cls: str, word: str, text: str) -> str | None:
    """The class member ``word`` is, as written or (in an all-lower-case text, for
    the classes typed that way) in lower case; None when it is none."""
    if word in _ENTITY_SETS[cls]:
        return word
    if (
        cls in lex.LOWERCASE_CLASSES
        and text == text.lower()
        and word not in lex.LOWERCASE_AMBIGUOUS
        and word in _LOWER_MEMBERS[cls]
    ):
        return _LOWER_MEMBERS[cls][word]
    return None


def _entity(cls: str, *, target: bool = False) -> Validator:
    def check(text: str, start: int, end: int, o: str, r: str) -> str | None:
        if names(text, r):
            return f"the text already names {r!r}"
        lower = text == text.lower() and o == o.lower() and o not in _ENTITY_SETS[cls]
        mo = entity_form(cls, o, text)
        mr = _LOWER_MEMBERS[cls].get(r) if lower else (r if r in _ENTITY_SETS[cls] else None)
        if mo is None or mr is None or mo == mr or (lower and r != r.lower()):
            return f"not one {cls} swapped for another"
        if lower and r in lex.LOWERCASE_AMBIGUOUS:
            return f"{r!r} is ambiguous in lower case"
        if not at_word_boundary(text, start, end):
            return "not a whole word"
        if cls not in ("weekday", "month", "currency", "first_name") and part_of_name(
            text, start, end
        ):
            return f"{o} is part of a longer name"
        if cls == "proglang" and not lower_words(text, "[a-z]+") & lex.CODE_CUES:
            return "the text is not about programming"
        if cls == "proglang" and _CODE_SHOWN.search(text):
            return "the text shows code or an error of that language"
        if cls == "currency" and (o in lex.CURRENCY_CODES) != (r in lex.CURRENCY_CODES):
            return "a currency code swapped for a word"
        if cls == "software" and not any(mo in g and mr in g for g in lex.SOFTWARE_GROUPS):
            return f"{mo} and {mr} are not the same kind of software"
        if cls == "language" and next_word(text, end) in lex.LANGUAGE_FIXED_NEXT:
            return f"{o} {next_word(text, end)} is a fixed expression"
        if cls == "language" and not target and previous_word(text, start) in ("into", "to"):
            return "a target language (kind 'translate_target')"
        if cls == "language" and previous_word(text, start) == "the" and not next_word(text, end):
            return f"the {o} names a people, not a language"
        if cls == "language" and (
            previous_word(text, start) in gw.NATIONALITY_PREVIOUS
            or not (
                previous_word(text, start) in lex.LANGUAGE_PREVIOUS
                or next_word(text, end) in lex.LANGUAGE_NEXT
                or re.match(r"[?.!]|\s*\Z", text[end:])
            )
        ):
            return f"{o} names people or things here, not a language"
        if problem := place_problem(cls, text, start, end):
            return problem
        if cls == "cuisine" and next_word(text, end) not in lex.CUISINE_NEXT:
            return "not a cuisine before a word about food"
        if cls in ("language", "country") and next_word(text, end) in lex.CUISINE_NEXT:
            return "a cuisine (kind 'cuisine')"
        if len(exact_word(o).findall(text)) > 1:
            return f"{o} occurs twice: one swap would leave the other"
        if cls in ("month", "weekday") and sum(
            names(text, m) for m in lex.ENTITIES[cls] if m != mo
        ):
            return f"the text names another {cls} (a range the swap could turn round)"
        if cls in ("month", "weekday") and o == mo:
            problem = date_name_problem(text, start, end)
            if problem:
                return problem
        if cls == "company" and (problem := company_problem(text, end)):
            return problem
        if cls == "celestial" and (problem := celestial_problem(text, start, mo, mr)):
            return problem
        if cls == "currency" and (problem := currency_problem(text, mr)):
            return problem
        if cls == "landmark" and _STATE.search(text) and mr not in gw.US_LANDMARKS:
            return f"{mr} is in no US state"
        if cls in ("city", "country") and found_before(_NAMED_AFTER_NOUN, text, start):
            return f"{o} names a wall, a treaty or a battle here"
        if cls == "country" and found(_DRIVING_SIDE, text):
            if (mo in gw.LEFT_DRIVING) == (mr in gw.LEFT_DRIVING):
                return f"{mo} and {mr} drive on the same side: the answer stays"
        elif found(_EITHER_WAY, text):
            return "a question with two possible answers: the swap may keep the answer"
        if cls == "first_name":
            words = lower_words(text, "[a-z-]+")
            if previous_word(text, start) not in lex.NAME_CUES or not words & lex.WRITING_WORDS:
                return "the name is not the person a message is written to or for"
        return None

    return check


_STATE = re.compile(r"\bstate\b", re.I)
#: Code or an error message in the text: it stays in its own language.
_CODE_SHOWN = re.compile(r"\n|```|Traceback|\b\w+(?:Error|Exception)\b")
#: A place inside the name of a thing ("le mur de Berlin", "the treaty of paris").
_NAMED_AFTER_NOUN = re.compile(
    r"\b(?:mur|muro|wall|treaty|traité|tratado|battle|bataille|batalla|siege|siège|congress|"
    r"university|université|universidad|council|concilio|peace|paix|pace)\s+(?:of|de|di|du)\s+\Z",
    re.IGNORECASE,
)
#: The question of which side of the road a country drives on.
_DRIVING_SIDE = re.compile(
    r"(?=.*\b(?:which side|left or (?:the )?right)\b).*\b(?:drive|driving|road)\b", re.I
)
#: Questions with two answers: another place or name gives the same one half the time.
_EITHER_WAY = re.compile(r"\b(?:which side|left or (?:the )?right|yes or no)\b", re.IGNORECASE)
_MEAL_TIME = re.compile(
    r"\b(?:tonight|this (?:morning|evening)|noon|midnight|\d{1,2}(?::\d\d)? ?[ap]\.?m\b)", re.I
)


def _cjk_element(text: str, start: int, end: int, o: str, r: str) -> str | None:
    """A Chinese element name (one character before 的, in a question about the
    element's symbol or number): word boundaries do not exist in Chinese text."""
    if r not in lex.CJK_ELEMENTS or r == o:
        return "not one Chinese element name swapped for another"
    if text[end : end + 1] != "的" or not any(cue in text for cue in lex.CJK_ELEMENT_CUES):
        return "not an element in a question about the element"
    return None


def noun_form(cls: str, word: str) -> tuple[str, int] | None:
    """(singular, 0 or 1 for singular/plural) of a noun of class ``cls``, lower case."""
    for singular, plural in lex.NOUNS[cls]:
        if plural and word == plural:
            return singular, 1
        if word == singular:
            return singular, 0
    return None


def _noun(cls: str) -> Validator:
    def check(text: str, start: int, end: int, o: str, r: str) -> str | None:
        if cls == "element" and o in lex.CJK_ELEMENTS:
            return _cjk_element(text, start, end, o, r)
        if not is_request(text):
            # in a report a common noun sits in collocations a swap breaks
            # ("guinea pigs", "box-office receipts"): only requests name their object
            return "a common noun in a report, not a request"
        capital = o[:1].isupper() and o not in lex.CAPITALISED_NOUNS
        if capital and (start != 0 or not o[1:].islower() or not r[:1].isupper()):
            return "a capitalised noun that does not open the text"
        if capital and (cls == "family_member" or part_of_name(text, start, end)):
            return f"{o} is a name here (Mom, Red October)"
        if (o in lex.CAPITALISED_NOUNS) != (r in lex.CAPITALISED_NOUNS):
            return "a German noun swapped for a word of another language"
        a = noun_form(cls, o if o in lex.CAPITALISED_NOUNS else o.lower())
        b = noun_form(cls, r if r in lex.CAPITALISED_NOUNS else r.lower())
        if a is None or b is None or a[0] == b[0] or a[1] != b[1]:
            return f"not one {cls} swapped for another in the same number"
        groups = lex.NOUN_GROUPS.get(cls)
        if groups is not None:
            mine = [g for g in groups if a[0] in g]
            if (
                mine
                and not any(b[0] in g for g in mine)
                or not mine
                and any(b[0] in g for g in groups)
            ):
                return f"{a[0]} and {b[0]} are not in one group of {cls}"
        fit = gw.NATURE_SUPERLATIVES.get(previous_word(text, start)) if cls == "nature" else None
        if fit is not None and not (a[0] in fit and b[0] in fit):
            return f"'{previous_word(text, start)} {b[0]}' is not what the superlative measures"
        if cls == "element":
            words = lower_words(text, r"[^\W\d_]+")
            if not words & lex.ELEMENT_CUES:
                return "the question is not about the element itself"
        if not capital and o not in lex.CAPITALISED_NOUNS and (o != o.lower() or r != r.lower()):
            return "not in lower case"
        if any(a[0] in syn and b[0] in syn for syn in lex.NOUN_SYNONYMS):
            return f"{a[0]} and {b[0]} name the same thing"
        if not at_word_boundary(text, start, end) or inside_quotes_or_code(text, start):
            return "not a whole, unquoted word"
        nxt, prev = next_word(text, end), previous_word(text, start)
        if cls == "subject" and nxt in lex.SUBJECT_WORK_NEXT:
            if len(text.split()) > 8 or ":" in text or "\n" in text:
                return f"{o} {nxt} in a longer request: the work itself stays {o}"
        if nxt in lex.NOUN_BLOCKED_NEXT.get(cls, frozenset()):
            return f"{o} {nxt} is a fixed expression"
        required = lex.NOUN_REQUIRED_NEXT.get(cls)
        if required is not None and nxt not in required:
            return f"{o} before {nxt or '(end)'} is not a use the swap keeps"
        if cls == "companion" and re.match(r"\s+[A-Z]", text[end:]):
            return "a relation before a person's name"
        if prev in lex.NOUN_BLOCKED_PREVIOUS.get(cls, frozenset()):
            return f"{prev} {o} is a fixed expression"
        themed = re.match(r"-(?:themed|shaped|print|patterned)\b", text[end:])
        if (
            cls != "headphone_type"
            and not themed
            and (text[end : end + 1] == "-" or (start and text[start - 1] == "-"))
        ):
            return "part of a hyphenated compound"
        if cls == "colour" and nxt == "wine" and {o.lower(), r.lower()} != {"red", "white"}:
            return "wine is red or white"
        # in a report ("a police dog bit him", "mortgage rates fell") a noun is often
        # a modifier or a subject whose swap reads oddly; a request names its object
        if cls not in ADJECTIVAL_NOUNS and nxt and nxt not in FUNCTION_NEXT:
            if text[end : end + 1] == " " and nxt.isalpha() and not is_request(text):
                return f"{o} modifies the next word in a report ({o} {nxt})"
        if prev in SUBJECT_PRONOUNS:
            return f"{o} after a subject pronoun"
        if cls == "family_member" and lower_words(text, "[a-z]+") & lex.WRITING_WORDS:
            return "a message to a relative reads much the same whoever it is for"
        if cls == "meal" and _MEAL_TIME.search(text):  # "lunch is at 8 pm" reads wrong
            return "the text names the time of the meal"
        if cls == "season" and prev not in lex.SEASON_PREVIOUS and nxt not in lex.SEASON_NEXT:
            return "the season does not name a time here"
        if re.search(rf"\b{re.escape(r.lower())}\b", text.lower()):
            return f"the text already names {r!r}"
        return None

    return check


_WORK_MAKER = {
    title: (medium, maker) for medium, works in lex.WORKS.items() for title, maker in works
}
_WORK_LOWER = {title.lower(): value for title, value in _WORK_MAKER.items()}
_WORK_TITLE = {title.lower(): title for title in _WORK_MAKER}


def _work(text: str, start: int, end: int, o: str, r: str) -> str | None:
    lower = text == text.lower()
    a = _WORK_MAKER.get(o) or (_WORK_LOWER.get(o) if lower else None)
    b = _WORK_MAKER.get(r) or (_WORK_LOWER.get(r) if lower else None)
    if lower and r != r.lower():
        return "a lower-case text gets a lower-case title"
    if a is None or b is None or a[0] != b[0] or a[1] == b[1]:
        return "not a work swapped for one of its medium by someone else"
    if names(text, a[1].split()[-1]):
        return f"the text names {a[1]}, the maker of {o}"
    if not at_word_boundary(text, start, end):
        return "not whole words"
    words = lower_words(text, r"[^\W\d_]+")
    langs_o, langs_r = _work_languages(o), _work_languages(r)
    if len(langs_o) > 1:  # a title several languages share: the question's words decide
        cues = {lex.WORK_CUE_LANGUAGES[w] for w in words if w in lex.WORK_CUE_LANGUAGES}
        langs_o = langs_o & cues if len(langs_o & cues) == 1 else langs_o
    if len(langs_o) != 1 or not langs_o <= langs_r or ("en" in langs_o and not text.isascii()):
        return "a title swapped into a question in another language"
    if not words & lex.WORK_CUES:
        return "the question is not about the work's maker or date"
    if words & lex.WORK_PART_WORDS:
        return "a question about one part of the work"
    return None


def _work_languages(title: str) -> frozenset[str]:
    langs = lex.WORK_LANGUAGES.get(title) or lex.WORK_LANGUAGES.get(_WORK_TITLE.get(title, ""))
    return frozenset((langs or "en").split())


_EVENT_ID = dict(lex.EVENTS)
_ACRONYM_GROUP = {a: i for i, group in enumerate(lex.ACRONYM_GROUPS) for a in group}


def _event(text: str, start: int, end: int, o: str, r: str) -> str | None:
    if any(names(text, n) for n, i in lex.EVENTS if i == _EVENT_ID.get(r)):
        return f"the text already names {r!r}"
    a, b = _EVENT_ID.get(o), _EVENT_ID.get(r)
    if a is None or b is None or a == b:
        return "not an event swapped for another event"
    nxt = next_word(text, end)
    if nxt and nxt not in FUNCTION_NEXT and text[end : end + 1] == " " and not is_request(text):
        return f"{o} modifies the next word in a report"
    if o.islower() != r.islower():
        return "the case form changed"
    return None if at_word_boundary(text, start, end) else "not whole words"


def _acronym(text: str, start: int, end: int, o: str, r: str) -> str | None:
    if names(text, r):
        return f"the text already names {r!r}"
    if o not in _ACRONYM_GROUP or _ACRONYM_GROUP.get(r) != _ACRONYM_GROUP[o] or o == r:
        return "not an acronym swapped for another of its group"
    return None if at_word_boundary(text, start, end) else "not a whole word"


def _file_type(text: str, start: int, end: int, o: str, r: str) -> str | None:
    exts = set(lex.FILE_EXTENSIONS)
    if o not in exts or r not in exts or o == r:
        return "not one file extension swapped for another"
    dot_before = text[start - 2] if start >= 2 else " "
    if start == 0 or text[start - 1] != "." or not (dot_before.isalnum() or dot_before in " *"):
        return "not a file extension"
    if end < len(text) and (text[end].isalnum() or text[end] in "_("):
        return "not a whole extension (or a method call: res.json())"
    if inside_quotes_or_code(text, start):
        return "inside code"
    return None


def _audience(text: str, start: int, end: int, o: str, r: str) -> str | None:
    audiences = {a.lower() for a in lex.AUDIENCES}
    if o.lower() not in audiences or r.lower() not in audiences or o.lower() == r.lower():
        return "not one reader swapped for another"
    if any(o.lower() in syn and r.lower() in syn for syn in lex.AUDIENCE_SYNONYMS):
        return f"{o} and {r} are one reader"
    if previous_word(text, start) not in ("to", "for", "like"):
        return "not who the explanation is for"
    return None if at_word_boundary(text, start, end) else "not whole words"


def _ordinal(text: str, start: int, end: int, o: str, r: str) -> str | None:
    words = lex.ORDINALS
    if o.lower() not in words or r.lower() not in words or o.lower() == r.lower():
        return "not one ordinal swapped for another"
    if not same_case_form(o, r, o.lower(), r.lower()) or o[0].isdigit() != r[0].isdigit():
        return "the case form changed, or a word for digits"
    if not at_word_boundary(text, start, end):
        return "not a whole word"
    nxt = text[end:].split(maxsplit=1)
    follower = nxt[0] if nxt else ""
    if not (follower[:1].isupper() or follower.lower().strip("?.,!") in lex.ORDINAL_NEXT):
        return "the ordinal does not pick a thing here"
    step = _ordinal_rank(r) - _ordinal_rank(o)
    if step not in (-1, 1):
        return "an ordinal moved more than one place (the sixth coat of paint)"
    if follower.lower().startswith("coat") and step < 0:
        return "an earlier coat than the one asked about is already on"
    if follower == "World" and _ordinal_rank(r) > 2:
        return "there were two world wars"
    if NAME_BEFORE.search(text, 0, start) and not re.search(
        r"(?:^|[.?!]\s+)\S*\s*\Z", text[:start]
    ):
        return "the ordinal is part of a longer name (Thomson First Call)"
    return None


def _ordinal_rank(word: str) -> int:
    index = lex.ORDINALS.index(word.lower())
    return index % 6 + 1  # six words, then six in digits


def _translate_target(text: str, start: int, end: int, o: str, r: str) -> str | None:
    problem = _entity("language", target=True)(text, start, end, o, r)
    if problem:
        return problem
    if previous_word(text, start) not in ("into", "to", "in"):
        return "the language is not a target (into / to / in)"
    return None


def _unit(text: str, start: int, end: int, o: str, r: str) -> str | None:
    a, b = unit_dimension(o), unit_dimension(r)
    if a is None or a != b or o == r:
        return "not one unit swapped for another of its dimension and form"
    if not at_word_boundary(text, start, end):
        return "not a whole word"
    if text[end : end + 1] == "/" or text[start - 1 : start] == "/":
        return f"{o} is part of a compound unit (km/s)"
    same = _unit_identity(r)
    for m in re.finditer(r"[A-Za-z]+", text):
        if (m.end() <= start or m.start() >= end) and _unit_identity(m.group()) == same:
            return f"the text already names {r} ({m.group()}): a conversion to itself"
    if any((o in scale) != (r in scale) for scale in gw.UNIT_SCALES):
        return f"{o} and {r} measure at different scales (180 cm in miles)"
    if any(o in syn and r in syn for syn in lex.UNIT_SYNONYMS):
        return f"{o} and {r} are one unit"
    if a[0] == "time":
        prev = previous_word(text, start)
        before = text[:start].rstrip()
        counted = prev in ("many", *lex.NUMBER_WORDS) or before[-1:].isdigit()
        counted = counted or before.lower().endswith("number of")
        if not counted or next_word(text, end) in lex.UNIT_BLOCKED_NEXT:
            return "a day, week or month that is not a counted length of time"
        count = re.search(r"(\d+)\s*\Z", before)
        if count is not None and int(count.group(1)) > 12:
            return "a long count of days, weeks or months: the other unit reads absurdly"
        if text[end : end + 1] == "-" or (start and text[start - 1] == "-"):
            return "part of a hyphenated compound"
    return None


def _unit_identities() -> dict[str, str]:
    out: dict[str, str] = {}
    for units in lex.UNITS.values():
        for singular, plural in units:
            out[singular] = out[plural] = singular
    for abbreviations in lex.UNIT_ABBREVIATIONS.values():
        out.update((a, a) for a in abbreviations)
    for syn in lex.UNIT_SYNONYMS:
        out.update((w, min(syn)) for w in syn)
    return out


#: One name per unit: its synonym set's first member, its singular, or itself.
_UNIT_IDENTITY = _unit_identities()


def _unit_identity(word: str) -> str | None:
    return _UNIT_IDENTITY.get(word)


def direction_sensitive(text: str) -> bool:
    """Whether ``from A to B`` asks something that depends on the direction: a
    conversion, a translation, a migration - not a distance or a difference."""
    t = text.lower()
    if re.search(r"\b(?:distance|far|how long|between|difference|time zone|drive)\b", t):
        return False
    return bool(
        re.search(
            r"\b(?:convert|converting|conversion|translate|translating|translation|migrate|"
            r"migrating|migration|port|porting|switch|switching|move|moving|upgrade|"
            r"upgrading|transfer|rewrite|relocate|relocating)\b",
            t,
        )
    )


def _direction(text: str, start: int, end: int, o: str, r: str) -> str | None:
    mo, mr = _DIRECTION.match(o), _DIRECTION.match(r)
    if mo is None or mr is None:
        return "not 'A to B'"
    if mr.groups() != (mo.group(1), mo.group(4), mo.group(3), mo.group(2)) or mo.group(
        2
    ) == mo.group(4):
        return "B to A is not A to B reversed"
    if not at_word_boundary(text, start, end) or not direction_sensitive(text):
        return "the direction does not decide the answer here"
    return None


def antonym_problem(text: str, start: int, end: int, o: str, r: str) -> str | None:
    """Why ``o`` at [start, end) may not become its curated opposite ``r``."""
    if not pair_in(o, r, lex.ANTONYMS):
        return f"{o!r} -> {r!r} is not a curated pair"
    if not at_word_boundary(text, start, end) or inside_quotes_or_code(text, start):
        return "not a whole, unquoted word"
    nxt, prev = next_word(text, end), previous_word(text, start)
    low = o.lower()
    if nxt in lex.PARTICLES and " " not in o:  # "axis powers in" is no phrasal verb
        return f"{o} {nxt} is a phrasal verb"
    allowed = lex.ANTONYM_NEXT.get(low)
    if allowed is not None and nxt not in allowed:
        return f"{o} {nxt or '(end)'} is not a use the swap keeps"
    if prev in lex.ANTONYM_BLOCKED_PREVIOUS.get(low, frozenset()):
        return f"{prev} {o} is a fixed expression"
    if prev in lex.ANTONYM_BLOCKED_ANY_PREVIOUS or re.search(
        r"\b(?:instead of|rather than)\s+\Z", text[:start], re.IGNORECASE
    ):
        return f"{o} after {prev!r} is one side of a contrast the text already draws"
    required = lex.ANTONYM_REQUIRED_PREVIOUS.get(low)
    if required is not None and prev not in required:
        return f"{o} after {prev or '(start)'} is not a use the swap keeps"
    if low in ("donor", "recipient") and not re.search(
        r"\b(?:is|are) the universal \Z", text[:start]
    ):
        return "a donor or recipient that is not what a blood type is"
    if low in ("best", "worst") and nxt in lex.BEST_BLOCKED_NEXT:
        return f"{o} {nxt} is a fixed expression"
    if re.search(rf"\b{re.escape(r.lower())}\b", text.lower()):
        return f"the text already names {r!r}"
    for m in gw.ANTONYM_FIXED.finditer(text):
        if m.start() <= start and end <= m.end():
            return f"{m.group()!r} is a fixed expression"
    if gw.ANTONYM_PRESUPPOSED.match(text, end):
        return f"the rest of the text presupposes {o}"
    after = text[end : end + 1]
    if after in "(._":
        return f"{o} is code"
    return None


def frame_problem(o: str, r: str) -> str | None:
    """Why ``o`` -> ``r`` is not a curated two-sided frame swap (None when it is).

    >>> frame_problem("remove mold from", "add mold to") is None
    True
    >>> frame_problem("remove mold from", "add mold from")
    'not a curated frame swap'
    """
    for x, y in lex.FRAME_SWAPS:
        for a, b in ((x, y), (y, x)):
            pattern = re.escape(a).replace(r"\{X\}", FRAME_SLOT)
            m = re.fullmatch(pattern, o)
            if m is None:
                m = re.fullmatch(pattern, o[:1].lower() + o[1:])
            if m is None:
                continue
            want = b.replace("{X}", m.group(1))
            if r in (want, want[:1].upper() + want[1:]):
                return None
    return "not a curated frame swap"


def _operator_frame(text: str, start: int, end: int, o: str, r: str) -> str | None:
    if not is_request(text):
        return "not a request (in a report the frame names what happened)"
    if not at_word_boundary(text, start, end):
        return "not whole words"
    return frame_problem(o, r)


def _negation_remove(text: str, start: int, end: int, o: str, r: str) -> str | None:
    if not is_request(text):
        return "not a request (in a report a removed negation contradicts the rest)"
    if _pairs(lex.NEGATED_PREFERENCES, reverse=False)(text, start, end, o, r) is None:
        if previous_word(text, start) in ("i", "we"):
            return None
        return "a negated preference that is not the speaker's"
    problem = _pairs(lex.NEGATIONS, reverse=False)(text, start, end, o, r)
    if problem:
        return problem
    if previous_word(text, start) in ("who", "that", "which"):
        return None
    if re.search(r"\bthen\b", text[end:], re.IGNORECASE):
        return "the conditional's 'then' clause presupposes the negation"
    # a yes/no question keeps its answer negated ("Isn't X Y?" asks what "Is X Y?"
    # asks); after why, if or when the negation is the question's content
    words = {w.lower() for w in re.findall(r"[A-Za-z']+", text[:start])}
    if not words & {"why", "if", "when", "whenever", "unless"}:
        return "not a negation after why/if/when or in a relative clause"
    return None


def _comparison(text: str, start: int, end: int, o: str, r: str) -> str | None:
    if (o, r) not in pair_set(lex.COMPARISONS):
        return "not a comparison operator turned round"
    before, after = text[start - 2 : start], text[end : end + 2]
    if not (before[-1:] == " " and after[:1] == " " and before[:1].isalnum() is not None):
        return "not an operator between two operands"
    if not re.search(r"[\w)]\s\Z", text[:start]) or not re.match(r"\s[\w(-]", text[end:]):
        return "not an operator between two operands"
    if not re.match(r"\s-?\d", text[end:]):
        return "not a comparison with a number (an inequality to solve or a threshold)"
    if inside_quotes_or_code(text, start) or "<" in text[end:] + text[:start] and o in "<>":
        if text.count("<") + text.count(">") > 1:
            return "more than one comparison or an angle bracket"
    return None


def _negation_add(text: str, start: int, end: int, o: str, r: str) -> str | None:
    problem = _pairs(lex.NEGATABLE, reverse=False)(text, start, end, o, r)
    if problem:
        return problem
    nxt = next_word(text, end)
    if not nxt or text[end : end + 1] != " ":
        return "nothing the negation could govern follows"
    if nxt in lex.NEGATABLE_BLOCKED_NEXT or (o.endswith("have") and nxt.endswith(("ed", "en"))):
        return f"{o} is an auxiliary here ({o} {nxt})"
    return negation_add_problem(text, start)


def _with_without(text: str, start: int, end: int, o: str, r: str) -> str | None:
    if (o.lower(), r.lower()) == ("without", "with") and same_case_form(o, r, "without", "with"):
        nxt = next_word(text, end)
        if not nxt or nxt.endswith("ing") or nxt in ("a", "an", "the", "any", "using", "me"):
            return "'without' before a word the bare swap does not fit"
        problem = None
    else:
        problem = _pairs(lex.WITH_WITHOUT)(text, start, end, o, r)
    if problem:
        return problem
    prev = previous_word(text, start)
    if prev in lex.WITH_BLOCKED_PREVIOUS or start == 0 or prev.endswith("ed"):
        return "the swap breaks the grammar after this word"
    if len(text.split()) < 5:
        return "too short a text to carry the swap"
    if not is_request(text):
        return "not a request (with/without reads as a report of what happened)"
    return None


VALIDATORS: dict[str, Validator] = {
    "case_lower": _case_lower,
    "case_upper": _case_upper,
    "spacing": _spacing,
    "punct_end": _punct_end,
    "punct_comma": punct_comma_problem,
    "typo_transpose": _typo(_transposed),
    "typo_drop": _typo(_dropped),
    "typo_double": _typo(_doubled),
    "typo_adjacent": _typo(_adjacent),
    "greeting": greeting_validator,
    "closer": closer_validator,
    "contraction": _contraction,
    "expansion": _pairs(lex.CONTRACTIONS, reverse=True),
    "modal_swap": _pairs(lex.MODAL_SWAPS),
    "spelling_variant": _pairs(lex.SPELLINGS),
    "number": number_rule,
    "year": year_rule,
    "number_word": number_word_rule,
    **{kind: _entity(cls) for kind, cls in ENTITY_KINDS.items() if kind != "translate_target"},
    "translate_target": _translate_target,
    **{noun: _noun(noun) for noun in lex.NOUNS},
    "ordinal": _ordinal,
    "work": _work,
    "event": _event,
    "acronym": _acronym,
    "file_type": _file_type,
    "audience": _audience,
    "unit": _unit,
    "direction": _direction,
    "antonym": antonym_problem,
    "operator_frame": _operator_frame,
    "negation_remove": _negation_remove,
    "negation_add": _negation_add,
    "comparison": _comparison,
    "question_focus": question_focus_problem,
    "with_without": _with_without,
}


def article_problem(text: str, start: int, o: str, r: str) -> str | None:
    """Why "a"/"an" before the span no longer fits the replacement (None when it
    does, or when the original did not fit either).

    >>> article_problem("How many protons does a neon atom have?", 24, "neon", "argon")
    "'a argon' needs the other article"
    """
    prev = previous_word(text, start)
    if prev not in ("a", "an") or not r[:1].isalpha():
        return None

    def fits(word: str) -> bool:
        return (prev == "an") == (word[:1].lower() in "aeiou")

    if fits(o) and not fits(r):
        return f"'{prev} {r}' needs the other article"
    return None


def _with_article(validator: Validator) -> Validator:
    def check(text: str, start: int, end: int, o: str, r: str) -> str | None:
        return validator(text, start, end, o, r) or article_problem(text, start, o, r)

    return check


def _guarded(kind: str, validator: Validator) -> Validator:
    def check(text: str, start: int, end: int, o: str, r: str) -> str | None:
        return (
            validator(text, start, end, o, r)
            or statement_problem(kind, text)
            or presupposition_problem(kind, text)
            or repeat_problem(kind, text, start, end, o)
            or lookalike_problem(o, r)
        )

    return check


#: Every validator also checks that "a"/"an" before the span still fits.
VALIDATORS = {
    kind: _with_article(v if kind in gw.NOISE_KINDS else _guarded(kind, v))
    for kind, v in VALIDATORS.items()
}
