"""Guards every identity edit of a stress row passes (see
:mod:`cacheeval.verify.perturbation_rules`): where the text around a swap would
make the variant read as something no person sends.

A blind audit of rows made from real forum sentences found the unnatural
identity variants in three places, each guarded here:

* **statements of fact**: a swapped year, place or opposite turns a claim about
  the world into a false one ("the bridge opened in 1932" -> "in 1928"). A statement
  is edited only when it speaks of the writer's own life, and never by a kind
  that reverses what it says (an antonym, an added negation, with/without);
* **a word that repeats the swapped one**: the same name elsewhere in the text
  (a link, an alias) or a word of its family ("Ukrainian ... eastern Ukraine");
* **fixed phrases and neighbours** a kind's own rule does not see: "the lesser
  of two evils", "Red October", "eclipse glasses ... the Sun", "$50 to euros".
"""

from __future__ import annotations

import re
from functools import lru_cache

from . import stress_guard_words as gw
from . import stress_lexicon as lex
from .perturbation_text import asks_for_something, is_personal, lower_words, previous_word

#: Kinds that reverse what a statement says: only ever applied to a request.
REQUEST_ONLY = frozenset(
    {"antonym", "negation_add", "negation_remove", "with_without", "operator_frame",
     "comparison", "direction", "question_focus"}
)  # fmt: skip
#: Kinds whose span names a thing by its name: a word of its family elsewhere
#: in the text ties the text to it.
NAMED_KINDS = frozenset(
    {"city", "country", "us_state", "continent", "language", "translate_target", "cuisine",
     "company", "landmark", "celestial", "software", "proglang"}
)  # fmt: skip


@lru_cache(maxsize=256)  # every replacement tried at one span asks again
def statement_problem(kind: str, text: str) -> str | None:
    """Why an identity edit of ``kind`` may not touch ``text`` because the text is
    a statement (None for a request, or a statement about the writer's own life
    that the kind does not reverse)."""
    if asks_for_something(text):
        return None
    if kind in REQUEST_ONLY:
        return f"a {kind} edit of a statement contradicts the rest of it"
    if not is_personal(text):
        return "a statement of fact about the world: the swap makes it false, not another request"
    return None


#: A product of factors ("(x + 3)(x + 3)").
_FACTORS = re.compile(r"\([a-z]\s*[-+]\s*\d+\)\s*\(")


#: Kinds that name a fact a "why" question takes for granted (software and a
#: programming language name the asker's own setup, not a fact of the world).
_PRESUPPOSED = (NAMED_KINDS - {"software", "proglang"}) | {
    "year", "month", "weekday", "event", "work", "colour", "animal", "element", "nature",
    "food", "drink", "material", "phenomenon",
}  # fmt: skip


_WHY = re.compile(r"\W*why\b", re.IGNORECASE)


@lru_cache(maxsize=256)  # every replacement tried at one span asks again
def presupposition_problem(kind: str, text: str) -> str | None:
    """A "why" question about the world takes its facts for granted: "Why is the
    sky blue?" or "Why did remote work spread so quickly in 2020?" becomes a false
    premise with another colour or year. About the asker's own things ("Why does
    my battery drain on Windows?") the swap asks a new question."""
    why = _WHY.match(text)
    if kind in _PRESUPPOSED and why and not is_personal(text):
        return "a why-question presupposes the fact the swap changes"
    if kind == "event" and lower_words(text, "[a-z-]+") & gw.EVENT_TIES:
        return "the text names something of that event only (the axis powers)"
    return None


def lookalike_problem(o: str, r: str) -> str | None:
    """Two words one letter apart ("hotel" / "hostel") read as a typo of each
    other: an annotator, and a cache, may take the swap for noise."""
    if not (o.isalpha() and r.isalpha() and min(len(o), len(r)) >= 4):
        return None
    if len(o) == len(r):
        close = sum(a != b for a, b in zip(o, r, strict=True)) <= 1
    else:
        short, long_ = sorted((o, r), key=len)
        close = len(long_) - len(short) == 1 and any(
            long_[:i] + long_[i + 1 :] == short for i in range(len(long_))
        )
    return f"{r!r} reads as a typo of {o!r}" if close else None


#: Words that point back into a conversation ("How do I move them ...?", "the
#: code", "the second coat": a follow-up's definite things were named before).
_BACK_REFERENCE = re.compile(
    r"\b(?:it|its|them|they|their|that|this|those|these|there|he|she|him|her|the)\b|'em\b",
    re.IGNORECASE,
)


def back_reference_problem(query: str) -> str | None:
    """A query that points back into its own conversation reads as nonsense after
    another conversation's turns."""
    m = _BACK_REFERENCE.search(query)
    return f"{m.group()!r} points back into the conversation" if m else None


@lru_cache(maxsize=4096)  # every option of one candidate asks again
def _occurrences(text: str, token: str) -> int:
    """How often ``token`` stands in ``text`` with no letter or digit against it
    (an underscore or a link's punctuation may touch it: "History_of_Delhi")."""
    count, at = 0, text.find(token)
    while at >= 0 and token:
        end = at + len(token)
        if not (at and text[at - 1].isalnum()) and not (end < len(text) and text[end].isalnum()):
            count += 1
        at = text.find(token, at + 1)
    return count


_CAPITALISED = re.compile(r"[A-Z][a-z]+")


@lru_cache(maxsize=256)  # every replacement tried at one span asks again
def repeat_problem(kind: str, text: str, start: int, end: int, o: str) -> str | None:
    """Why the span may not change because the text repeats it: the same token
    again (a link, an alias, a second mention) or, for a name, a word of its
    family ("Ukrainian" beside "Ukraine")."""
    if kind == "number" and _FACTORS.search(text):
        return None  # (x + 3)(x + 3) -> (x + 3)(x + 7): another product, not a contradiction
    if _occurrences(text, o) > 1:
        return f"{o!r} occurs again in the text: one swap would leave the other"
    if kind not in NAMED_KINDS or not o[:1].isupper():
        return None
    rest = text[:start] + " " + text[end:]
    family = {w.lower() for w in gw.DEMONYMS.get(o, ())}
    for word in _CAPITALISED.findall(rest):
        low = word.lower()
        if low in family or (len(o) >= 5 and len(word) >= 5 and low[:4] == o[:4].lower()):
            return f"{word} names the family of {o}"
    return None


#: Number words inside fixed expressions ("the lesser of two evils").
_FIXED_NUMBER_PHRASES = re.compile(
    r"\b(?:lesser of two evils|two cents|two birds|two sides of the same coin|two left feet|"
    r"two peas in a pod|two's company|three's a crowd|two wrongs|takes two to tango|"
    r"two heads are better|seven seas|nine lives|cloud nine|six feet under|"
    r"at sixes and sevens|high five|take five|twenty questions|ten to one|"
    r"catch twenty-two|in two minds|two-faced|one or two|two or three)\b",
    re.IGNORECASE,
)


def fixed_number_problem(text: str, start: int, end: int) -> str | None:
    """A number word in a fixed expression, or counting things the text goes on
    to list ("two suspicions: one, ...", "two of them, X and Y")."""
    for m in _FIXED_NUMBER_PHRASES.finditer(text):
        if m.start() <= start and end <= m.end():
            return f"{m.group()!r} is a fixed expression"
    after = text[end:]
    if ":" in after or re.search(r"\b[A-Z]\w+ (?:and|or) [A-Z]\w+", after):
        return "the text goes on to list what the number counts"
    return None


#: Places, languages and peoples: a statement naming one is tied to it.
_PLACE_WORDS = frozenset(
    w for cls in ("city", "country", "us_state", "continent", "language") for w in lex.ENTITIES[cls]
) | frozenset(w for words in gw.DEMONYMS.values() for w in words)
_PLACE_PATTERN = re.compile(
    r"(?<![\w-])(?:"
    + "|".join(re.escape(w) for w in sorted(_PLACE_WORDS, key=len, reverse=True))
    + r")(?![\w-])"
)
#: A capitalised word that does not open a sentence (a name).
_PROPER_NAME = re.compile(r"(?<=[\w,;)] )[A-Z][\w&.-]+")
_NOT_NAMES = frozenset({"I", "I'm", "I've", "I'd", "I'll"})
_GROUND_TRAVEL = re.compile(r"\b(?:train|trains|drive|driving|bus|coach|ferry|car|walk)\b", re.I)
_REGIONS = frozenset(lex.ENTITIES["country"]) | frozenset(lex.ENTITIES["us_state"])


@lru_cache(maxsize=256)  # asked for every candidate and replacement of one text
def _places(text: str) -> tuple[tuple[int, int, str], ...]:
    return tuple((m.start(), m.end(), m.group()) for m in _PLACE_PATTERN.finditer(text))


@lru_cache(maxsize=256)  # every replacement tried at one span asks again
def place_problem(cls: str, text: str, start: int, end: int) -> str | None:
    """A named place, language or people swapped beside another that anchors it:
    any other in a statement ("a Norwegian who moved to Chile"), a country
    or state beside a city in any text ("Kyoto, in Japan")."""
    if cls not in NAMED_KINDS:
        return None
    others = [w for s, e, w in _places(text) if e <= start or s >= end]
    statement = not asks_for_something(text)
    if others and statement:
        return f"a statement that also names {others[0]}: the swap breaks what it says"
    names = _PROPER_NAME.findall(text[:start] + " " + text[end:])
    if statement and any(n not in _NOT_NAMES for n in names):
        return "a statement that names other things by name: the swap breaks what it says"
    if cls in ("country", "city") and lower_words(text, "[a-z0-9]+") & gw.HISTORY_TIES:
        return "a place in a text about its history (a war, a regime)"
    if cls == "city" and any(o in _REGIONS for o in others):
        return "a city beside the country or state it is in"
    if cls == "city" and others and _GROUND_TRAVEL.search(text):
        return "a trip by land between two named cities (a train from Hong Kong to Paris)"
    return None


#: Words that may stand before a month or weekday opening a sentence ("In May",
#: "On Friday"); any other capitalised word there makes a name ("Red October").
_DATE_OPENERS = frozenset(
    """in on by since until till from to every next last this each early late mid before
    after during through around about and or for of the a is are was what which when how
    does do did will can could should why where who""".split()
)


def date_name_problem(text: str, start: int, end: int) -> str | None:
    """A month or weekday inside a name: a capitalised word before it that does
    not open a date ("Red October"), or one right after it ("October Revolution")."""
    m = re.search(r"([A-Z][A-Za-z']*)\s+\Z", text[:start])
    if m is not None and m.group(1).lower() not in _DATE_OPENERS:
        return f"{m.group(1)} {text[start:end]} is a name"
    if re.match(r"\s+(?!I\b)[A-Z][a-z]", text[end:]):
        return f"{text[start:end]} opens a longer name"
    return None


def company_problem(text: str, end: int) -> str | None:
    """A company named for one of its products ("Google search", "Apple Watch")."""
    nxt = re.match(r"\s+([A-Za-z]+)", text[end:])
    if nxt is not None and nxt.group(1).lower() in gw.COMPANY_PRODUCT_NEXT:
        return f"{text[:end].split()[-1]} {nxt.group(1)} is a product"
    return None


def celestial_problem(text: str, start: int, o: str, r: str) -> str | None:
    """ "the Sun"/"the Moon" keep their article, planets take none ("on Earth" may
    become "on Mars", never "on Sun"); eclipses and orbits tie a body to the text."""
    the = previous_word(text, start) == "the"
    with_article = gw.CELESTIAL_WITH_ARTICLE
    if the and not (o in with_article or o == "Earth") or the and r not in with_article:
        return f"'the {r}' is not how the body is named"
    if not the and (o in with_article or r in with_article):
        return f"{o if o in with_article else r} needs 'the'"
    if lower_words(text, "[a-z]+") & gw.CELESTIAL_TIED:
        return "the text ties the body to its role (an eclipse, an orbit)"
    return None


#: Currency symbols and the currency words and codes each may stand for.
_SYMBOL_CURRENCIES = {
    "$": {"dollars", "USD", "CAD", "AUD"},
    "€": {"euros", "EUR"},
    "£": {"GBP"},
    "¥": {"yen", "JPY"},
    "₹": {"rupees", "INR"},
}


def currency_problem(text: str, r: str) -> str | None:
    """A conversion into the currency a symbol in the text already names ("$50
    to euros" never becomes "$50 to dollars")."""
    for symbol, currencies in _SYMBOL_CURRENCIES.items():
        if symbol in text and r in currencies:
            return f"the text already names {r} by its symbol {symbol}"
    return None


def negation_add_problem(text: str, start: int) -> str | None:
    """ "that are"/"who is" must open a relative clause after a noun, not ask a
    question ("Who is the author of ...?") or follow a verb or a comma."""
    head = text[:start].rstrip()
    prev = previous_word(text, start)
    if not head or head[-1:] in ",;:.?!(" or not prev:
        return "not a relative clause after a noun"
    if prev in gw.NOT_BEFORE_RELATIVE:
        return f"'{prev}' before it: not a relative clause after a noun"
    return None


#: Identity kinds whose value a later reply may have computed with.
_NUMERIC_KINDS = frozenset({"number", "year", "number_word", "unit", "currency"})


def later_turn_problem(
    turns: list[dict[str, object]], turn: int, inner: str, o: str, r: str, query: str
) -> str | None:
    """Why a prior user turn may not be edited: a later turn repeats the detail
    (the assistant's "Got it - 8 hours to New York") or, for a number, works with
    numbers (the reply computed from the old value), or the query names the old
    or the new detail ("the first coat went on at 9" -> "the second coat ...",
    then "When can I put the second coat on?"), so the conversation would
    contradict itself."""
    for word in (o, r):
        if re.search(rf"(?<![^\W_]){re.escape(word)}(?![^\W_])", query, re.IGNORECASE):
            return f"the query names {word!r}"
    for later in turns[turn + 1 :]:
        content = str(later.get("content", ""))
        if re.search(rf"(?<![^\W_]){re.escape(o)}(?![^\W_])", content, re.IGNORECASE):
            return f"a later turn repeats {o!r}"
        if inner in _NUMERIC_KINDS and re.search(r"\d", content):
            return "a later turn works with the numbers of the edited one"
    return None
