"""One request analysed once: :func:`analyze` turns a :class:`Request` into a
:class:`Side` - its canonical tokens plus the answer-determining items pulled out
of them. A cache analyses a stored request once, at ``put`` time.

:func:`analyze` walks the tokens once, in named steps (symbols, times, numbers,
words: units and tags, variables, identifiers, names, content tokens), filling an
:class:`_Items` accumulator.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from cacheeval.schema import Request

from .canonical import (
    _CODE_FENCE_RE,
    Token,
    _canon_number,
    _prepare,
    stem,
    tokenize,
)
from .context import (
    _turn_text,
    context_only,
    tool_defs,
    tool_intent,
    tool_names,
)
from .examples import example_spans, in_spans
from .items import (
    _amount_role,
    _cased_lang,
    _dates,
    _digits,
    _operator_indices,
    _roles,
    detect_language,
)
from .lexicon import (
    _BE_VERBS,
    _CASED_PROG_LANGS,
    _CURRENCIES,
    _DEGREE_WORDS,
    _GENERIC_WH,
    _MATH_FUNCTIONS,
    _MONTHS,
    _NAT_LANGS,
    _PHRASE_CANON,
    _PREPOSITIONS,
    _PROG_ALIASES,
    _PROG_LANGS,
    _PROG_SYNTAX,
    _RELATIVE,
    _UNIT_LETTERS,
    _UNITS,
    _UNITS_AFTER_NUMBER,
    _WEEKDAYS,
    FILLER,
    NEGATIONS,
    TITLES,
    WH_WORDS,
)

_QUOTED_RE = re.compile(
    r"(?<!\w)['‘`](?P<s>[^'‘’`\n]{1,200})['’`](?!\w)|[\"“](?P<d>[^\"“”\n]{1,200})[\"”]"
)

_CAMEL_RE = re.compile(r"[a-z][A-Z]")

_SENTENCE_BREAK = frozenset(".?!:;\n")

_MATH_NEIGHBOURS = frozenset("()^=")

_QUOTE_OPENERS = frozenset("'\"“‘(`")


@dataclass(frozen=True, slots=True)
class Side:
    """The analysis of one request (see :mod:`adapters.verified_cache.features`).

    Tuples keep the order of appearance; multiset comparisons use
    :class:`collections.Counter`, never set iteration order.
    """

    query: str
    text: str  # canonical query text: content and filler tokens joined by spaces
    tokens: tuple[str, ...]  # every canonical word/number token, in order
    content: tuple[str, ...]  # stemmed content tokens (no filler), in order
    surface: tuple[str, ...]  # lower-cased surface form of each content token
    numbers: tuple[str, ...]
    ordinals: tuple[str, ...]
    operators: tuple[str, ...]
    variables: tuple[str, ...]
    identifiers: tuple[str, ...]
    entities: tuple[str, ...]
    dates: tuple[str, ...]
    weekdays: tuple[str, ...]
    times: tuple[str, ...]
    relative: tuple[str, ...]
    units: tuple[str, ...]
    currencies: tuple[str, ...]
    prog_langs: tuple[str, ...]
    nat_langs: tuple[str, ...]
    text_lang: str
    quoted: tuple[str, ...]
    # the numbers, ordinals, quoted spans and names of worked examples (.examples):
    # compared only when both sides give examples (.pair.with_examples)
    example_numbers: tuple[str, ...]
    example_ordinals: tuple[str, ...]
    example_quoted: tuple[str, ...]
    example_entities: tuple[str, ...]
    negations: int
    wh_words: tuple[str, ...]
    roles: tuple[tuple[str, str], ...]  # (token, "src" | "dst")
    char3: frozenset[str]
    n_chars: int
    context_key: str
    context_turns: int
    history: Side | None  # the prior turns analysed like a query (None: no turns)
    system_key: str
    tool_names: tuple[str, ...]
    tool_intent: str
    tool_defs: tuple[tuple[str, str], ...]  # (name, canonical JSON) of each offered tool


#: Verbs asking for an answer, accents folded as the tokens have them ("respóndeme").
_ANSWER_VERBS = frozenset(
    "answer respond reply responde respondeme contesta contestame responda reponds "
    "repondez reponde antworte antworten rispondi risponda".split()
)


def _answer_language(words: Sequence[str], named: Sequence[str]) -> str | None:
    """The language a request asks to be answered in, when it names one language
    and asks for an answer ("¿Cuál es la capital? Answer in English" wants
    English; "What is the capital? Respóndeme en español" Spanish), else None:
    the text's own language decides.

    >>> _answer_language("what is it ? answer in english".split(), ["en"])
    'en'
    >>> _answer_language("do brazilians speak portuguese".split(), ["pt"]) is None
    True
    """
    if len(set(named)) != 1 or not any(w in _ANSWER_VERBS for w in words):
        return None
    return named[0]


def _norm_key(text: str | None) -> str:
    if not text:
        return ""
    return " ".join(t.canon for t in tokenize(text) if t.kind != "sym")


@dataclass(slots=True)
class _Items:
    """What the token walk of :func:`analyze` collects, in order of appearance.
    Mutable on purpose: one walk fills it, token by token, and :func:`analyze`
    freezes it into a :class:`Side`."""

    op_idx: set[int]
    date_of: dict[int, str]
    numbers: list[str] = field(default_factory=list)
    ordinals: list[str] = field(default_factory=list)
    variables: list[str] = field(default_factory=list)
    identifiers: list[str] = field(default_factory=list)
    entities: list[str] = field(default_factory=list)
    example_numbers: list[str] = field(default_factory=list)
    example_ordinals: list[str] = field(default_factory=list)
    example_entities: list[str] = field(default_factory=list)
    weekdays: list[str] = field(default_factory=list)
    times: list[str] = field(default_factory=list)
    relative: list[str] = field(default_factory=list)
    units: list[str] = field(default_factory=list)
    currencies: list[str] = field(default_factory=list)
    prog: list[str] = field(default_factory=list)
    nat: list[str] = field(default_factory=list)
    words: list[str] = field(default_factory=list)
    content: list[str] = field(default_factory=list)
    surface: list[str] = field(default_factory=list)
    wh: list[str] = field(default_factory=list)
    negations: int = 0
    unit_roles: list[tuple[str, str]] = field(default_factory=list)
    german: bool = False  # German capitalises every noun (see _german_noun)
    examples: tuple[tuple[int, int], ...] = ()  # worked examples (.examples)


def analyze(request: Request | str) -> Side:
    """Analyse one request (pure; the same request always gives the same Side)."""
    req = Request.of(request)
    query = req.query
    toks = tokenize(query)
    norm = _prepare(query)
    dates, date_of = _dates(toks)
    lang = detect_language(query)
    examples = example_spans(norm)
    items = _Items(
        op_idx=_operator_indices(toks), date_of=date_of, german=lang == "de", examples=examples
    )
    _walk(items, toks, norm)
    _add_code_languages(items.prog, query)
    units = items.units
    if "fahrenheit" in units or "celsius" in units or "kelvin" in units:
        units = [u for u in units if u != "degree"]

    quoted: list[str] = []
    example_quoted: list[str] = []
    for m in _QUOTED_RE.finditer(norm):
        words = tokenize(m.group("s") or m.group("d") or "")
        quote = " ".join(t.canon for t in words if t.kind != "sym")
        if quote:
            (example_quoted if in_spans(m.start(), examples) else quoted).append(quote)
    text = " ".join(items.words)
    char3 = frozenset(text[i : i + 3] for i in range(max(len(text) - 2, 1)))
    return Side(
        query=query,
        text=text,
        tokens=tuple(items.words),
        content=tuple(items.content),
        surface=tuple(items.surface),
        numbers=tuple(items.numbers),
        ordinals=tuple(items.ordinals),
        operators=tuple(toks[k].raw for k in sorted(items.op_idx)),
        variables=tuple(items.variables),
        identifiers=tuple(items.identifiers),
        entities=tuple(items.entities),
        dates=tuple(dates),
        weekdays=tuple(items.weekdays),
        times=tuple(items.times),
        relative=tuple(items.relative),
        units=tuple(units),
        currencies=tuple(items.currencies),
        prog_langs=tuple(items.prog),
        nat_langs=tuple(items.nat),
        text_lang=_answer_language(items.words, items.nat) or lang,
        quoted=tuple(quoted),
        example_numbers=tuple(items.example_numbers),
        example_ordinals=tuple(items.example_ordinals),
        example_quoted=tuple(example_quoted),
        example_entities=tuple(items.example_entities),
        negations=items.negations,
        wh_words=tuple(items.wh),
        roles=_roles(toks) + tuple(items.unit_roles),
        char3=char3,
        n_chars=len(query),
        context_key=_norm_key(context_only(req)),
        context_turns=len(req.context or ()),
        history=analyze(Request(_turn_text(req))) if req.context else None,
        system_key=_norm_key(req.system_prompt),
        tool_names=tool_names(req),
        tool_intent=tool_intent(req, items.content),
        tool_defs=tool_defs(req),
    )


def _walk(items: _Items, toks: Sequence[Token], norm: str) -> None:
    """One pass over the tokens, each to its step; tracks whether a token starts a
    sentence (after a sentence break, a quote or bracket, or only symbols)."""
    sentence_start = True
    for k, t in enumerate(toks):
        if t.kind in ("sym", "arrow", "date"):
            _symbol(items, toks, k)
            sentence_start = (
                (t.raw in _SENTENCE_BREAK and not _ends_abbreviation(toks, k))
                or t.raw in _QUOTE_OPENERS
                or (sentence_start and t.kind == "sym")
            )
            continue
        sentence_start_here = sentence_start
        sentence_start = False
        if t.kind == "time":
            items.times.append(t.canon)
            items.words.append(t.canon)
            items.content.append(t.canon)
            items.surface.append(t.raw.lower())
        elif t.kind == "num":
            _number(items, t, k)
        else:
            _word(items, toks, k, norm, sentence_start_here)


#: Abbreviations whose period ends no sentence: the name after "Mr." is a name.
_ABBREVIATIONS = TITLES | frozenset("sr jr vs mt ft".split())


def _ends_abbreviation(toks: Sequence[Token], k: int) -> bool:
    """Whether the period at ``toks[k]`` closes an abbreviation ("Mr.", "Dr.")."""
    return toks[k].raw == "." and k > 0 and toks[k - 1].raw.lower() in _ABBREVIATIONS


def _symbol(items: _Items, toks: Sequence[Token], k: int) -> None:
    """A symbol, arrow or ISO date: "%" and currency signs are units and content
    tokens, a date a content token; other symbols leave no item."""
    t = toks[k]
    nxt = toks[k + 1] if k + 1 < len(toks) else None
    if t.raw == "%":
        items.units.append("percent")
        items.unit_roles.append(("u:percent", _amount_role(toks, k)))
        items.content.append("u:percent")
        items.surface.append("%")
    elif t.raw in "$€£¥₹" and t.kind == "sym":
        items.currencies.append(_CURRENCIES[t.raw])
        given = nxt is not None and _digits(nxt)
        items.unit_roles.append(("c:" + _CURRENCIES[t.raw], "src" if given else "dst"))
        items.content.append("c:" + _CURRENCIES[t.raw])
        items.surface.append(t.raw)
    elif t.kind == "date":
        items.content.append(t.canon)
        items.surface.append(t.raw)


def _number(items: _Items, t: Token, k: int) -> None:
    """A number: its canonical value, unless it is the day of a date (then the
    date stands for it in the content tokens)."""
    value, ordinal = _canon_number(t.raw if _digits(t) else t.canon)
    items.words.append(value + ("th" if ordinal else ""))
    if k in items.date_of:
        if items.date_of.get(k):
            items.content.append(items.date_of[k])
            items.surface.append(t.raw.lower())
        return
    # a number in a worked example illustrates the function asked for
    example = in_spans(t.start, items.examples)
    (items.example_numbers if example else items.numbers).append(value)
    if ordinal:
        (items.example_ordinals if example else items.ordinals).append(value)
    items.content.append(value)
    items.surface.append(t.raw.lower())


def _word(items: _Items, toks: Sequence[Token], k: int, norm: str, sentence_start: bool) -> None:
    """A word: its unit/currency/date/language tags, whether it is a variable, an
    identifier or a name, and its content token (none for filler and frames)."""
    t = toks[k]
    prev = toks[k - 1] if k > 0 else None
    nxt = toks[k + 1] if k + 1 < len(toks) else None
    low, raw = t.canon, t.raw
    if _thousands_suffix(items, t, prev):
        return
    after_number = prev is not None and _digits(prev)
    # "72°F", and "degrees F" / "degrees C" (a scale, not the C language)
    after_degree = prev is not None and (prev.raw == "°" or prev.canon in _DEGREE_NAMES)
    unit = _unit(low, after_number, after_degree)
    if (
        unit in _LENGTHS
        and prev is not None
        and prev.canon in ("square", "cubic")
        and k >= 2
        and _digits(toks[k - 2])
    ):
        # "12 square metres" (and "12 m²", written so by the tokenizer) is an area;
        # "the area in square cm" asks for what "6 cm by 9 cm" does
        unit = f"{unit}^{2 if prev.canon == 'square' else 3}"
    # the canonical content token: units, currencies, dates under one name
    canon_content = _tag_word(items, toks, k, unit)
    is_prog = (
        unit is None
        and low in _PROG_LANGS
        and (low not in _CASED_PROG_LANGS or _cased_lang(raw, low))
    )
    if is_prog:
        items.prog.append(_PROG_LANGS[low])
    if low in NEGATIONS:
        items.negations += 1
    frame = _is_frame(low, nxt, sentence_start)
    if low in WH_WORDS:
        items.wh.append(low)
    is_variable = canon_content is None and _is_variable(items, toks, k, after_number)
    if is_variable:
        items.variables.append(raw)
    if canon_content is None and _is_identifier(t, is_prog, norm):
        # a unit or currency is no identifier: "mL" is not camelCase
        items.identifiers.append(raw)
    if _is_entity(t, sentence_start, canon_content) and not (
        items.german and _german_noun(toks, k)
    ):
        example = in_spans(t.start, items.examples)
        entity = _PROG_ALIASES.get(low, low) if is_prog else low
        (items.example_entities if example else items.entities).append(entity)
    if frame:
        # an imperative frame asks what a question asks: "Name X" == "What is X"
        items.wh.append("what")
        return
    if low in _GENERIC_WH:
        # "what"/"which" only say a question is asked; what it asks for is in the
        # rest ("What is the smallest ocean?" == "smallest ocean?" == "Which ocean
        # is the smallest?"), while when/where/who/why/how name the answer's kind
        return
    _add_content(items, t, canon_content, is_variable, is_prog)


def _thousands_suffix(items: _Items, t: Token, prev: Token | None) -> bool:
    """A "k" glued to a number ("5k") multiplies it by 1000 in place; whether it did.
    Not in a request with math operators, where "2k + 5 < 17" has a variable k."""
    if not (
        t.canon == "k"
        and not items.op_idx
        and prev is not None
        and _digits(prev)
        and items.numbers
        and prev.end == t.start
    ):
        return False
    items.numbers[-1] = _canon_number(str(float(items.numbers[-1]) * 1000))[0]
    if items.content:
        items.content[-1] = items.numbers[-1]
    return True


_DEGREE_NAMES = frozenset({"degree", "degrees", "deg"})

#: Units of length, which "square" and "cubic" make an area and a volume.
_LENGTHS = frozenset({"km", "meter", "cm", "mm", "inch", "foot", "yard", "mile"})


def _unit(low: str, after_number: bool, after_degree: bool) -> str | None:
    """The canonical unit a word names, if any: ambiguous unit words and single
    letters only right after a number (letters also after a degree sign)."""
    if low in _UNITS and (low not in _UNITS_AFTER_NUMBER or after_number):
        return _UNITS[low]
    if low in _UNIT_LETTERS and low != "k" and (after_number or after_degree):
        return _UNIT_LETTERS[low]
    return None


def _tag_word(items: _Items, toks: Sequence[Token], k: int, unit: str | None) -> str | None:
    """Record the word's canonical token and its tags (unit, currency, weekday,
    relative day, natural language); return its canonical content token when it
    is a unit, currency, weekday or part of a date ("" for none at all), else None."""
    low = toks[k].canon
    canon_content: str | None = None
    if unit is not None:
        items.units.append(unit)
        if unit != "degree":
            items.unit_roles.append(("u:" + unit, _amount_role(toks, k)))
        # "68 degrees Fahrenheit" == "68°F": the scale names the unit
        canon_content = "" if unit == "degree" else "u:" + unit
    items.words.append(unit if unit is not None and unit != "degree" else low)
    if low in _CURRENCIES:
        items.currencies.append(_CURRENCIES[low])
        items.unit_roles.append(("c:" + _CURRENCIES[low], _amount_role(toks, k)))
        canon_content = "c:" + _CURRENCIES[low]
    if low in _WEEKDAYS:
        items.weekdays.append(_WEEKDAYS[low])
        canon_content = "w:" + _WEEKDAYS[low]
    if k in items.date_of:
        canon_content = items.date_of.get(k, "")
    if low in _RELATIVE:
        items.relative.append(_RELATIVE[low])
    if low in _NAT_LANGS:
        items.nat.append(_NAT_LANGS[low])
    return canon_content


def _is_frame(low: str, nxt: Token | None, sentence_start: bool) -> bool:
    """A question or request frame with no content: "What is X?" == "Give me X"
    == "Name X" == "X?"."""
    return (
        sentence_start
        and nxt is not None
        and nxt.kind in ("word", "num")
        and (
            (low in ("give", "tell", "show") and nxt.canon in ("me", "us"))
            or (low == "name" and nxt.canon not in _BE_VERBS and nxt.canon not in NEGATIONS)
        )
    )


def _is_variable(items: _Items, toks: Sequence[Token], k: int, after_number: bool) -> bool:
    """Single-letter variables: next to an operator or bracket, glued to a
    coefficient ("3x"), or named ("solve for y"); "a"/"I" only in the first two."""
    t = toks[k]
    raw = t.raw
    if not (len(raw) == 1 and raw.isascii() and raw.isalpha()):
        return False
    prev = toks[k - 1] if k > 0 else None
    nxt = toks[k + 1] if k + 1 < len(toks) else None
    by_op = (k - 1) in items.op_idx or (k + 1) in items.op_idx
    by_bracket = (prev is not None and prev.raw in _MATH_NEIGHBOURS) or (
        nxt is not None and nxt.raw in _MATH_NEIGHBOURS
    )
    coefficient = after_number and prev is not None and prev.end == t.start
    named = (
        prev is not None
        and prev.kind == "word"
        and prev.canon in ("for", "variable", "of", "let")
        and raw not in "aAI"
    )
    return bool(by_op or by_bracket or coefficient or named)


def _is_identifier(t: Token, is_prog: bool, norm: str) -> bool:
    """Identifiers: snake_case, camelCase, called names f(...), letter-digit codes."""
    low, raw = t.canon, t.raw
    called = norm[t.end : t.end + 1] == "("
    return bool(
        not is_prog
        and low not in _PHRASE_CANON
        and low not in _MATH_FUNCTIONS
        and (
            "_" in raw
            or _CAMEL_RE.search(raw)
            or (called and len(raw) > 1)
            or (len(raw) >= 3 and re.search(r"\d", raw) and re.search(r"[^\W\d_]", raw))
        )
    )


def _is_entity(t: Token, sentence_start: bool, canon_content: str | None) -> bool:
    """Capitalised tokens that are not merely the first word of a sentence."""
    low, raw = t.canon, t.raw
    return (
        raw[:1].isupper()
        and (not sentence_start or (raw.isupper() and len(raw) >= 2))
        and canon_content is None
        and low not in FILLER
        and low not in WH_WORDS
        and low not in _MONTHS
    )


#: German articles and determiners: a capitalised word after one (an adjective may
#: stand between) is a common noun ("Welche Stadt", "in welchem Jahr", "die
#: chemische Formel"), not a name ("von Peru", "in Berlin").
_GERMAN_DETERMINERS = frozenset(
    "der die das den dem des ein eine einen einem einer eines welche welcher welches "
    "welchem welchen jede jeder jedes jedem jeden kein keine keinen keinem keiner "
    "diese dieser dieses diesem diesen mein meine meinen meinem meiner unser unsere "
    "im am zum zur vom beim ins".split()
)


def _german_noun(toks: Sequence[Token], k: int) -> bool:
    """Whether the capitalised word at ``toks[k]`` of a German text follows an
    article or determiner, with at most one lower-case word between: a common
    noun, which German capitalises.

    >>> from .canonical import tokenize
    >>> t = tokenize("Welche Stadt ist die chemische Hauptstadt von Peru")
    >>> [x.raw for k, x in enumerate(t) if x.raw[:1].isupper() and _german_noun(t, k)]
    ['Stadt', 'Hauptstadt']
    """
    words = [x for x in toks[max(0, k - 2) : k] if x.kind == "word"]
    if not words:
        return False
    if words[-1].canon in _GERMAN_DETERMINERS:
        return True
    return len(words) == 2 and words[0].canon in _GERMAN_DETERMINERS and words[1].raw[:1].islower()


def _add_content(
    items: _Items, t: Token, canon_content: str | None, is_variable: bool, is_prog: bool
) -> None:
    """The word's content token: its canonical tag, the variable as written, the
    language's one name, or its stem; none for filler, prepositions and degrees."""
    low, raw = t.canon, t.raw
    if canon_content is not None:
        if canon_content:
            items.content.append(canon_content)
            items.surface.append(low)
    elif is_variable:
        items.content.append(raw)
        items.surface.append(raw)
    elif is_prog:
        # "JS" == "JavaScript"; "JavaScript (.js)" names it once
        lang = _PROG_ALIASES.get(low, low)
        if not items.content or items.content[-1] != lang:
            items.content.append(lang)
            items.surface.append(low)
    elif low not in FILLER and low not in _PREPOSITIONS and low not in _DEGREE_WORDS:
        items.content.append(stem(low))
        items.surface.append(low)


def _add_code_languages(prog: list[str], query: str) -> None:
    """Languages given away by syntax: read only in code, or when the text names
    none ("a Go func reverse(s []int)" is not JavaScript because it says
    "function f(")."""
    fenced = "```" in query
    if fenced or not prog:
        code = "\n".join(_CODE_FENCE_RE.findall(query)) if fenced else query
        for pattern, lang in _PROG_SYNTAX:
            if pattern.search(code) and lang not in prog:
                prog.append(lang)
