"""Text helpers of the stress-edit rules: word boundaries, neighbouring words,
case forms, proper names, requests."""

from __future__ import annotations

import re
from functools import lru_cache

from .never_cache import ASKING_START

_NEXT_WORD = re.compile(r"\s+([A-Za-z']+)")
_PREVIOUS_WORD = re.compile(r"([A-Za-z']+)\s+\Z")
_WORD_LETTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'")
#: The first run of letters and apostrophes (matched at a text's start).
FIRST_WORD = re.compile(r"[A-Za-z']+")


def at_word_boundary(text: str, start: int, end: int) -> bool:
    """The span starts and ends at word boundaries (letters, digits, ``_+#`` are word).

    >>> at_word_boundary("a C++ b", 2, 5), at_word_boundary("cats", 0, 3)
    (True, False)
    """
    # c.isalnum() or c in "_+#" is re.match(r"[\w+#]", c) for one character (\w is
    # str.isalnum() and "_"; a test holds them equal), without a regex call
    before = text[start - 1] if start > 0 else " "
    after = text[end] if end < len(text) else " "
    return not (before.isalnum() or before in "_+#") and not (after.isalnum() or after in "_+#")


def inside_quotes_or_code(text: str, start: int) -> bool:
    """Whether ``start`` lies inside "...", `...` or a code-looking token."""
    head = text[:start]
    return head.count('"') % 2 == 1 or head.count("`") % 2 == 1


def same_case_form(original: str, replacement: str, a: str, b: str) -> bool:
    """``original``/``replacement`` are ``a``/``b`` in one case form: as written,
    lower case, or with a capital first letter."""
    return any(
        (original, replacement) == (f(a), f(b))
        for f in (str, str.lower, lambda s: s[:1].upper() + s[1:])
    )


_CASE_FORMS = (str, str.lower, lambda s: s[:1].upper() + s[1:])
_PAIR_SETS: dict[tuple[int, int], frozenset[tuple[str, str]]] = {}


def pair_set(pairs: tuple[tuple[str, str], ...], direction: int = 0) -> frozenset[tuple[str, str]]:
    """Every (original, replacement) ``pairs`` allow, in each case form: forward
    (``direction`` +1), backward (-1) or both (0). Built once per table."""
    key = (id(pairs), direction)
    found = _PAIR_SETS.get(key)
    if found is None:
        ways = [(x, y) for x, y in pairs] if direction >= 0 else []
        ways += [(y, x) for x, y in pairs] if direction <= 0 else []
        found = frozenset((f(a), f(b)) for a, b in ways for f in _CASE_FORMS)
        _PAIR_SETS[key] = found
    return found


def pair_in(original: str, replacement: str, pairs: tuple[tuple[str, str], ...]) -> bool:
    """(original, replacement) is one of ``pairs``, read either way, in one case form."""
    return (original, replacement) in pair_set(pairs)


def next_word(text: str, end: int) -> str:
    """The lower-cased word right after ``end`` ("" at the end or before punctuation)."""
    m = _NEXT_WORD.match(text, end)
    return m.group(1).lower() if m else ""


def previous_word(text: str, start: int) -> str:
    """The lower-cased word right before ``start`` ("" at the start)."""
    # _PREVIOUS_WORD.search(text, 0, start), without scanning the text from 0 (a
    # test holds them equal): str.rstrip and the regex's \s both strip what
    # str.isspace calls whitespace
    if start <= 0:
        return ""
    head = text[:start]
    word_end = len(head.rstrip())
    if word_end == len(head):
        return ""
    i = word_end
    while i and head[i - 1] in _WORD_LETTERS:
        i -= 1
    return head[i:word_end].lower()


_NAME_AFTER = re.compile(r"(?:'s)?\s+[A-Z]")
NAME_BEFORE = re.compile(r"[A-Z][\w.&+-]*\s+(?:of\s+(?:the\s+)?)?\Z")
_PLACE_AFTER = re.compile(r",\s+[A-Z][a-z]")
_PLACE_BEFORE = re.compile(r"[A-Z][a-z]+,\s+\Z")


@lru_cache(maxsize=256)  # every replacement tried at one span asks again
def part_of_name(text: str, start: int, end: int) -> bool:
    """Whether the span sits inside a longer proper name: a capitalised word right
    after it ("Sun Microsystems", "Sweden's Karolinska") or right before it, not
    opening a sentence ("Transport Canada", "Bank of England", "Gulf of Mexico"),
    or a hyphen on either side ("Windows-loaded").

    >>> part_of_name("He works at Transport Canada now.", 22, 28)
    True
    >>> part_of_name("Flights from Paris to Rome?", 13, 18)
    False
    """
    if _NAME_AFTER.match(text, end) or text[end : end + 1] == "-" or text[start - 1 : start] == "-":
        return True
    if _PLACE_AFTER.match(text, end) or _PLACE_BEFORE.search(text, 0, start):
        return True  # "Bologna, Italy", "Munich, Germany": a place named with its region
    m = NAME_BEFORE.search(text, 0, start)
    if m is None:
        return False
    head = text[: m.start()].rstrip()
    opens_sentence = not head or head[-1] in ".?!:;\"'(" or head.endswith((" -", "--"))
    return not opens_sentence or " " in m.group().strip()


#: First words of an imperative request.
REQUEST_VERBS = frozenset(
    """explain write show give tell help make create list describe find convert translate
    sort suggest compare summarize summarise draft fix recommend teach calculate compute
    solve plan name define pretend set text send remind book play call open turn add
    remove delete schedule check get buy order walk recommend""".split()
)
#: A question asked inside a longer line ("... fireworks how can i help him").
_EMBEDDED_QUESTION = re.compile(
    r"\b(?:how|what|where|when|why|which) (?:can|could|should|do|does|would|is|are) "
    r"(?:i|we|you|my|it)\b",
    re.IGNORECASE,
)


def is_request(text: str) -> bool:
    """Whether ``text`` asks for something (a question, an imperative, a short
    keyword request) rather than reporting something.

    >>> is_request("Explain compound interest with an example."), is_request(
    ...     "The council says the old bridge will reopen after the repairs.")
    (True, False)
    """
    stripped = text.strip()
    first = FIRST_WORD.match(stripped)
    word = first.group().lower() if first else ""
    if "?" in stripped or word in ASKING_START or word in REQUEST_VERBS:
        return True
    if _EMBEDDED_QUESTION.search(stripped):
        return True
    # typed requests often lack a full stop; reports end with one
    return not stripped.endswith((".", '."', ".'", "!")) and len(stripped.split()) <= 15


#: First words that open a statement, not a request, when no question mark follows
#: ("Let me share my view ...", "Any woman who wants one can get it.").
_STATEMENT_OPENERS = frozenset({"let", "any"})


#: Requests typed as notes: "please", a clause opening with an instruction
#: ("...; scale it for 6"), "Need a ...", "Shell one-liner to ...".
_NOTE_REQUEST = re.compile(
    r"\bplease\b|(?:^|[.;:!?]\s+)(?:" + "|".join(sorted(REQUEST_VERBS)) + r"|scale|need|want"
    r")\b|^(?:an? )?(?:[\w+#-]+ ){0,3}(?:one-liner|function|script|regex|snippet|program|"
    r"query|command|poem|haiku|story|email|letter|summary|outline)s? (?:to|that|which|for)\b",
    re.IGNORECASE,
)


#: Words that open a subordinate clause: without a question mark, a statement.
_SUBORDINATORS = frozenset("when whenever if while as because since although though".split())
#: Verbs that open an instruction, beyond :data:`REQUEST_VERBS`.
_IMPERATIVES = frozenset(
    """select return print count rewrite generate implement refactor parse extract format
    merge split filter group rename reverse replace build design draw outline estimate rank
    classify simplify expand factor integrate differentiate evaluate prove derive multiply
    divide subtract round scale search pick choose sum proofread edit correct
    shorten paraphrase rephrase tidy clean debug optimise optimize""".split()
)


@lru_cache(maxsize=4096)  # asked once per candidate edit of the same text
def asks_for_something(text: str) -> bool:
    """:func:`is_request`, less the statements it lets through by their first word.

    >>> asks_for_something("Let me tell you about my week at the lake."), asks_for_something(
    ...     "Any tips for a first marathon?")
    (False, True)
    """
    first = FIRST_WORD.match(text.strip())
    if first and first.group().lower() in _IMPERATIVES:
        return True
    if first and first.group().lower() in _SUBORDINATORS and "?" not in text:
        return False  # "When you look at the moon, you are not seeing ..."
    if not is_request(text):
        return _NOTE_REQUEST.search(text) is not None
    return "?" in text or not first or first.group().lower() not in _STATEMENT_OPENERS


#: Phrases where "I"/"me"/"my" only frame an opinion about the world ("I think the
#: academic year starts in September"): the statement is still one of fact.
_HEDGES = re.compile(
    r"\b(?:I (?:think|guess|believe|agree|suppose|assume|doubt|mean|reckon|know|heard|read|"
    r"remember|would say|'d say)|I'd say|let me|in my (?:opinion|view|experience)|"
    r"my (?:opinion|view|point|guess)|to me|as far as I know)\b",
    re.IGNORECASE,
)
#: "us" only in lower case ("the US" is a country).
_FIRST_PERSON = re.compile(
    r"\b(?:[Ii](?:'m|'ve|'d|'ll|m|ve)?|us|Us)\b|\b(?i:my|me|we|we're|we've|our|ours)\b"
)


@lru_cache(maxsize=4096)
def is_personal(text: str) -> bool:
    """Whether ``text`` speaks of the writer's own life (a first-person pronoun
    outside a hedge such as "I think" or "in my opinion").

    >>> is_personal("In my 200 litre tank, fish get harassed."), is_personal(
    ...     "I think the academic year starts in September in the USA.")
    (True, False)
    """
    return _FIRST_PERSON.search(_HEDGES.sub(" ", text)) is not None


@lru_cache(maxsize=256)  # the validators of one prompt ask about its text again and again
def lower_words(text: str, pattern: str) -> frozenset[str]:
    """The matches of ``pattern`` in ``text`` lower-cased (``set(re.findall(pattern,
    text.lower()))``, computed once per text).

    >>> sorted(lower_words("Sort a List in Python", "[a-z]+"))
    ['a', 'in', 'list', 'python', 'sort']
    """
    return frozenset(re.findall(pattern, text.lower()))


@lru_cache(maxsize=4096)  # the same words are looked for in many texts
def exact_word(word: str) -> re.Pattern[str]:
    """``word`` as a whole word, case-sensitive (letters, digits, ``_+#`` are word)."""
    return re.compile(rf"(?<![\w+#]){re.escape(word)}(?![\w+#])")


@lru_cache(maxsize=256)  # every candidate and replacement of one text asks again
def found(pattern: re.Pattern[str], text: str) -> bool:
    """``pattern.search(text) is not None``, computed once per text."""
    return pattern.search(text) is not None


@lru_cache(maxsize=256)
def found_before(pattern: re.Pattern[str], text: str, end: int) -> bool:
    """``pattern.search(text, 0, end) is not None``, computed once per span."""
    return pattern.search(text, 0, end) is not None


def names(text: str, word: str) -> bool:
    """Whether ``text`` already holds ``word`` as a whole word (any case).

    >>> names("TCP and UDP", "udp"), names("Pythonic", "Python")
    (True, False)
    """
    if text.isascii() and word.isascii() and word.lower() not in text.lower():
        return False  # ASCII case folding is lower(): no match (saves the regex)
    return _whole_word(word).search(text) is not None


@lru_cache(maxsize=4096)  # a word is looked for in many texts: compile it once
def _whole_word(word: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w+#]){re.escape(word)}(?![\w+#])", re.IGNORECASE)


#: A comma between items of a list: "square, lunges and calf raises" read without
#: it is one exercise fewer ("square lunges"), so the answer changes.
_SERIES_AFTER = re.compile(r",\s+[\w'-]+(?:\s+[\w'-]+)?(?:,|,?\s+(?:and|or)\s+\w)")
_SERIES_BEFORE = re.compile(r"\w+,\s+[\w'-]+(?:\s+[\w'-]+)?\Z")


def punct_comma_problem(text: str, start: int, end: int, o: str, r: str) -> str | None:
    """Why dropping the comma at [start, end) may change the request (None when it
    keeps it): a comma inside a number, a quoted one, or one between list items."""
    if (o, r) != (",", ""):
        return "not one comma dropped"
    before = text[start - 1] if start else " "
    after = text[end] if end < len(text) else " "
    if before.isdigit() and after.isdigit():
        return "the comma is part of a number"
    if inside_quotes_or_code(text, start):
        return "the comma is quoted"
    if _SERIES_AFTER.match(text, start) or _SERIES_BEFORE.search(text, 0, start):
        return "the comma separates items of a list (square, lunges and calf raises)"
    return None
