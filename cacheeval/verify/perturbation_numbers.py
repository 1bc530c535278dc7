"""The number rules of stress edits (see :mod:`cacheeval.verify.perturbation_rules`):
which numbers, years and number words may change, and into what."""

from __future__ import annotations

import math
import re
from functools import lru_cache

from . import stress_lexicon as lex
from .perturbation_guards import fixed_number_problem
from .perturbation_text import at_word_boundary, inside_quotes_or_code, next_word, part_of_name

_NUMBER = re.compile(
    r"\A[$€£]?\d{1,3}(?:,\d{3})*(?:\.\d+)?\Z"  # 1,200.50
    r"|\A[$€£]?\d+(?:\.\d+)?\Z"  # 1200
    r"|\A\d+/\d+\Z"  # 3/8
)


def number_value(token: str) -> float:
    """The value of a number token ("$1,200" is 1200.0, "3/8" is 0.375)."""
    if "/" in token:
        num, den = token.split("/")
        return int(num) / int(den) if int(den) else float("inf")
    return float(token.lstrip("$€£").replace(",", ""))


_YEAR_TOKEN = re.compile(r"(18|19|20)\d\d")
_DIGIT = re.compile(r"\d")


def is_year(token: str) -> bool:
    """A four-digit year between 1800 and 2099."""
    return _YEAR_TOKEN.fullmatch(token) is not None


def number_shape(token: str) -> str:
    return _DIGIT.sub("9", token)


_MONTH_WORDS = frozenset(
    """jan feb mar apr jun jul aug sep sept oct nov dec january february march april may
    june july august september october november december""".split()
)
_SERIES_AFTER = re.compile(r"\s+(?:series|model|edition|index)\b", re.IGNORECASE)


_WORD_BEFORE = re.compile(r"([A-Za-z][\w'&.]*)\s+\Z")
_YEAR_AFTER = re.compile(r",?\s+(?:18|19|20)\d\d\b")
_CAPITAL_BEFORE = re.compile(r"[A-Z][A-Za-z]*\s*\Z")
_SENTENCE_OPENER_BEFORE = re.compile(r"(?:^|[.?!]\s+)[A-Z][a-z]*\s*\Z")


#: A unit written against its number ("10km", "300g", "2L").
_ATTACHED_UNIT = re.compile(
    r"(?:km|kg|mi|cm|mm|ft|lbs?|oz|g|l|ml|m|h|hrs?|min|gb|mb|tb|[ap]m)\b", re.I
)


@lru_cache(maxsize=256)  # every replacement tried at one span asks again
def number_target(text: str, start: int, end: int) -> str | None:
    """Why the number at [start, end) may not change (None when it may): a whole
    token, not part of a version, a hyphenated compound, an ordinal or an id,
    not 0 or 1 (a noun after it would change number)."""
    token = text[start:end]
    if not _NUMBER.match(token):
        return f"{token!r} is not a number"
    before = text[start - 1] if start else " "
    after = text[end] if end < len(text) else " "
    after2 = text[end + 1] if end + 1 < len(text) else " "
    coefficient = after.islower() and not after2.isalpha() and "/" not in token
    coefficient = coefficient or _ATTACHED_UNIT.match(text, end) is not None  # "10km"
    if before.isalnum() or before in "#.-_/:" or (after.isalnum() and not coefficient):
        return f"{token!r} is part of a longer token"
    if after in "-_/:%":
        return f"{token!r} is part of a longer token"
    if after == "." and end + 1 < len(text) and text[end + 1].isdigit():
        return f"{token!r} is part of a version or a date"
    raw = _WORD_BEFORE.search(text[:start])
    head = text[: raw.start()] if raw else ""
    opens = not head.strip() or head.rstrip()[-1:] in '.?!:;"('
    if raw and raw.group(1)[:1].isupper() and not opens:
        return f"{token!r} follows a name (a version, a model, an index: S&P 500)"
    if raw and raw.group(1).rstrip(".").lower() in _MONTH_WORDS:
        return f"{token!r} is a day of a date"
    if _YEAR_AFTER.match(text[end:]):
        return f"{token!r} is a day of a date"
    if _CAPITAL_BEFORE.search(text[:start]) and not _SENTENCE_OPENER_BEFORE.search(text[:start]):
        return f"{token!r} follows a capitalised name (a version or model number)"
    if _SERIES_AFTER.match(text, end):
        return f"{token!r} names a series or a model"
    if number_value(token) in (0.0, 1.0) and "/" not in token:
        return f"{token!r} is 0 or 1"
    if inside_quotes_or_code(text, start):
        return f"{token!r} is quoted"
    if _EXAMPLE_BEFORE.search(text, 0, start):
        return f"{token!r} illustrates a point (for instance ...): another example, same answer"
    for m in _CITATION.finditer(text):
        if m.start() < start and end < m.end():
            return f"{token!r} is a reference number ({m.group()})"
    for m in _CALL_EXAMPLE.finditer(text):
        if m.start() < start and end <= m.end():
            return f"{token!r} is part of a worked example ({m.group()}): the rest stays"
    return None


#: A worked example of a function: its arguments and the result it gives
#: ("sum_range(1, 4) is 6", "nth_prime(2) == 3", "n=2 gives 3").
_CALL_EXAMPLE = re.compile(
    r"\b\w+\([^()]*\)\s*(?:is|==|=|->|gives|returns|should (?:give|return))\s*-?[\d.]+"
    r"|\b\w+\s*=\s*\d+\s*(?:gives|->|returns|is)\s*-?[\d.]+"
)


#: An example given in passing, after the text has said something: "and not
#: (for instance) 3 or 4", "a small value, e.g. 5". Opening the text, "For example,
#: what is 15% of 80?" is the question itself.
_EXAMPLE_BEFORE = re.compile(r"\S.*?\b(?:for (?:instance|example)|e\.g\.)[^.?!]*\Z", re.I)


#: A parenthesised list of reference numbers ("(1, 2)", "[3]").
_CITATION = re.compile(r"(?<!\w)[(\[]\s*\d+(?:\s*,\s*\d+)*\s*[)\]]")


_TIME_AFTER = re.compile(r"\s*(?:a\.?m\b|p\.?m\b|o'clock)", re.IGNORECASE)
_RANGE_AFTER = re.compile(r"\s*(?:-|–|to|and)\s*\$?(\d[\d,]*(?:\.\d+)?|[a-z]+)", re.IGNORECASE)
_RANGE_BEFORE = re.compile(r"(\d[\d,]*(?:\.\d+)?|[a-z]+)\s*(?:-|–|to|and)\s*\$?\Z", re.IGNORECASE)
_WORD_VALUES = {w: v for v, w in enumerate(("zero", "one", *lex.NUMBER_WORDS[:11]))} | {
    "fifteen": 15, "twenty": 20, "thirty": 30, "fifty": 50,
}  # fmt: skip


#: A request whose answer carries the time it names: a message, a reminder, a booking.
_CARRIES_TIME = re.compile(
    r"\s*(?:please\s+)?(?:text|message|send|remind|schedule|reschedule|book|email|set|"
    r"add|create|move|tell)\b",
    re.IGNORECASE,
)
_HOURS = frozenset(float(h) for h in range(1, 13))


def _value(token: str) -> float | None:
    token = token.lower().lstrip("$€£")
    if token in _WORD_VALUES:
        return float(_WORD_VALUES[token])
    try:
        return float(token.replace(",", ""))
    except ValueError:
        return None


def range_or_time_problem(text: str, start: int, end: int, replacement: str = "") -> str | None:
    """Why a number at [start, end) may not become ``replacement`` (None when it
    may): a clock time ("11 p.m."), or one end of a range the change would turn
    round or collapse ("5 to 30 years" never becomes "30 to 30")."""
    new = _value(replacement) if replacement else None
    if _TIME_AFTER.match(text, end):
        # an hour is only answer-determining where the answer repeats it: a message,
        # reminder or booking ("Text Marco that dinner is at 8 pm"); "is 9 pm too late
        # to eat?" reads the same an hour later
        old = _value(text[start:end])
        if not _CARRIES_TIME.match(text) or new is None or new not in _HOURS or old is None:
            return "a clock time"
        if abs(new - old) > 2:  # dinner at 8 pm moves to 9 or 10, not to 4
            return "a clock time moved by more than two hours"
    after, before = _RANGE_AFTER.match(text, end), _RANGE_BEFORE.search(text, 0, start)
    if after is not None and (other := _value(after.group(1))) is not None:
        if new is None or new >= other:
            return "one end of a range the change would turn round"
    if before is not None and (other := _value(before.group(1))) is not None:
        if new is None or new <= other:
            return "one end of a range the change would turn round"
    return None


def number_rule(text: str, start: int, end: int, o: str, r: str) -> str | None:
    why = number_target(text, start, end)
    if why:
        return why
    if is_year(o) or is_year(r):
        return "a year (kind 'year')"
    if not _NUMBER.match(r) or number_shape(o) != number_shape(r):
        return f"{r!r} is not a number in the format of {o!r}"
    if "/" in o:
        if (
            o.split("/")[1] != r.split("/")[1]
            or number_value(r) >= 1
            or number_value(r) == number_value(o)
        ):
            return f"{r!r} is not another proper fraction over the same denominator"
        num, den = (int(x) for x in r.split("/"))
        if math.gcd(num, den) != 1 and math.gcd(*(int(x) for x in o.split("/"))) == 1:
            return f"{r!r} is not in lowest terms (nobody writes 4/8)"
        return None
    if number_value(r) in (0.0, 1.0) or number_value(o) == number_value(r):
        return f"{r!r} does not change the value to another one above 1"
    if "/" not in o:
        return range_or_time_problem(text, start, end, r)
    return None


def year_rule(text: str, start: int, end: int, o: str, r: str) -> str | None:
    if not (is_year(o) and is_year(r) and o != r and at_word_boundary(text, start, end)):
        return "not one year changed to another"
    if text[end : end + 1] in ("-", "–", "/") or text[start - 1 : start] in ("-", "–", "/"):
        return "a year inside a range or a date"
    head = text[:start]
    if re.search(r"[A-Z][\w.&+-]*\s+\Z", head) and not re.search(r"(?:^|[.?!]\s+)\S+\s+\Z", head):
        return "a year in a product's name (Office 2003)"
    return range_or_time_problem(text, start, end, r)


def number_word_rule(text: str, start: int, end: int, o: str, r: str) -> str | None:
    words = set(lex.NUMBER_WORDS)
    if o.lower() not in words or r.lower() not in words or o.lower() == r.lower():
        return "not one number word changed to another"
    order = list(lex.NUMBER_WORDS)
    if abs(order.index(o.lower()) - order.index(r.lower())) > 3:
        return "a number word moved too far to keep the sentence sensible"
    if len(re.findall(rf"\b{o.lower()}\b", text.lower())) > 1:
        return f"{o} counts two things in the text"
    if o[:1].isupper() and part_of_name(text, start, end):
        return "a number word inside a name (the Ten Commandments)"
    if next_word(text, end) in ("dozen", "hundred", "thousand", "million", "billion"):
        return "a number word counting dozens or thousands"
    if re.search(r"\b(?:both|either|neither|each other|pair|couple)\b", text, re.IGNORECASE):
        return "the text counts the same things again (both, either, pair)"
    if not at_word_boundary(text, start, end):
        return "not a whole word"
    if "-" in (text[end : end + 1], text[start - 1 : start]):  # as for digits: "6-year-old"
        return "a number word inside a hyphenated compound (a six-year-old)"
    return fixed_number_problem(text, start, end) or range_or_time_problem(text, start, end, r)
