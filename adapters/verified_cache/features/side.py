"""One request analysed once: :func:`analyze` turns a :class:`Request` into a
:class:`Side` - its canonical tokens plus the answer-determining items pulled out
of them. A cache analyses a stored request once, at ``put`` time.

:func:`analyze` walks the tokens once, in named steps (symbols, times, numbers,
words: units and tags, variables, identifiers, names, content tokens), filling an
:class:`_Items` accumulator.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cacheeval.schema import Request

from .canonical import (
    _CODE_FENCE_RE,
    _canon_number,
    _prepare,
    _stem,
    tokenize,
)
from .context import (
    _turn_text,
    context_only,
    tool_defs,
    tool_intent,
    tool_names,
)
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
    """The analysis of one request (see the module docstring).

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


def _norm_key(text: str | None) -> str:
    if not text:
        return ""
    return " ".join(t.canon for t in tokenize(text) if t.kind != "sym")


def analyze(request: Request | str) -> Side:
    """Analyse one request (pure; the same request always gives the same Side)."""
    req = Request.of(request)
    query = req.query
    toks = tokenize(query)
    norm = _prepare(query)
    op_idx = _operator_indices(toks)
    dates, date_of = _dates(toks)
    in_date = date_of.keys()

    numbers: list[str] = []
    ordinals: list[str] = []
    variables: list[str] = []
    identifiers: list[str] = []
    entities: list[str] = []
    weekdays: list[str] = []
    times: list[str] = []
    relative: list[str] = []
    units: list[str] = []
    currencies: list[str] = []
    prog: list[str] = []
    nat: list[str] = []
    words: list[str] = []
    content: list[str] = []
    surface: list[str] = []
    wh: list[str] = []
    negations = 0
    sentence_start = True
    unit_roles: list[tuple[str, str]] = []

    for k, t in enumerate(toks):
        prev = toks[k - 1] if k > 0 else None
        nxt = toks[k + 1] if k + 1 < len(toks) else None
        if t.kind in ("sym", "arrow", "date"):
            if t.raw == "%":
                units.append("percent")
                unit_roles.append(("u:percent", _amount_role(toks, k)))
                content.append("u:percent")
                surface.append("%")
            elif t.raw in "$€£¥₹" and t.kind == "sym":
                currencies.append(_CURRENCIES[t.raw])
                given = nxt is not None and _digits(nxt)
                unit_roles.append(("c:" + _CURRENCIES[t.raw], "src" if given else "dst"))
                content.append("c:" + _CURRENCIES[t.raw])
                surface.append(t.raw)
            elif t.kind == "date":
                content.append(t.canon)
                surface.append(t.raw)
            sentence_start = (
                t.raw in _SENTENCE_BREAK
                or t.raw in _QUOTE_OPENERS
                or (sentence_start and t.kind == "sym")
            )
            continue
        sentence_start_here = sentence_start
        sentence_start = False
        if t.kind == "time":
            times.append(t.canon)
            words.append(t.canon)
            content.append(t.canon)
            surface.append(t.raw.lower())
            continue
        if t.kind == "num":
            value, ordinal = _canon_number(t.raw if _digits(t) else t.canon)
            words.append(value + ("th" if ordinal else ""))
            if k in in_date:
                if date_of.get(k):
                    content.append(date_of[k])
                    surface.append(t.raw.lower())
                continue
            numbers.append(value)
            if ordinal:
                ordinals.append(value)
            content.append(value)
            surface.append(t.raw.lower())
            continue
        # a word
        low, raw = t.canon, t.raw
        after_number = prev is not None and _digits(prev)
        after_degree = prev is not None and prev.raw == "°"
        # the canonical content token: units, currencies, dates under one name
        canon_content: str | None = None
        unit = None
        if low in _UNITS and (low not in _UNITS_AFTER_NUMBER or after_number):
            unit = _UNITS[low]
        elif low in _UNIT_LETTERS and low != "k" and (after_number or after_degree):
            unit = _UNIT_LETTERS[low]
        elif low == "k" and after_number and numbers and prev is not None and prev.end == t.start:
            numbers[-1] = _canon_number(str(float(numbers[-1]) * 1000))[0]
            if content:
                content[-1] = numbers[-1]
            continue
        if unit is not None:
            units.append(unit)
            if unit != "degree":
                unit_roles.append(("u:" + unit, _amount_role(toks, k)))
            # "68 degrees Fahrenheit" == "68°F": the scale names the unit
            canon_content = "" if unit == "degree" else "u:" + unit
        words.append(unit if unit is not None and unit != "degree" else low)
        if low in _CURRENCIES:
            currencies.append(_CURRENCIES[low])
            unit_roles.append(("c:" + _CURRENCIES[low], _amount_role(toks, k)))
            canon_content = "c:" + _CURRENCIES[low]
        if low in _WEEKDAYS:
            weekdays.append(_WEEKDAYS[low])
            canon_content = "w:" + _WEEKDAYS[low]
        if k in in_date:
            canon_content = date_of.get(k, "")
        if low in _RELATIVE:
            relative.append(_RELATIVE[low])
        if low in _NAT_LANGS:
            nat.append(_NAT_LANGS[low])
        is_prog = (
            unit is None
            and low in _PROG_LANGS
            and (low not in _CASED_PROG_LANGS or _cased_lang(raw, low))
        )
        if is_prog:
            prog.append(_PROG_LANGS[low])
        if low in NEGATIONS:
            negations += 1
        # a question or request frame with no content: "What is X?" == "Give me X"
        # == "Name X" == "X?"
        frame = (
            sentence_start_here
            and nxt is not None
            and nxt.kind in ("word", "num")
            and (
                (low in ("give", "tell", "show") and nxt.canon in ("me", "us"))
                or (low == "name" and nxt.canon not in _BE_VERBS and nxt.canon not in NEGATIONS)
            )
        )
        if low in WH_WORDS:
            wh.append(low)
        # single-letter variables: next to an operator or bracket, glued to a
        # coefficient ("3x"), or named ("solve for y"); "a"/"I" only in the first two
        is_variable = False
        if len(raw) == 1 and raw.isascii() and raw.isalpha() and canon_content is None:
            by_op = (k - 1) in op_idx or (k + 1) in op_idx
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
            if by_op or by_bracket or coefficient or named:
                variables.append(raw)
                is_variable = True
        # identifiers: snake_case, camelCase, called names f(...), letter-digit codes
        called = norm[t.end : t.end + 1] == "("
        if (
            not is_prog
            and low not in _PHRASE_CANON
            and low not in _MATH_FUNCTIONS
            and (
                "_" in raw
                or _CAMEL_RE.search(raw)
                or (called and len(raw) > 1)
                or (len(raw) >= 3 and re.search(r"\d", raw) and re.search(r"[^\W\d_]", raw))
            )
        ):
            identifiers.append(raw)
        # capitalised tokens that are not merely the first word of a sentence
        if (
            raw[:1].isupper()
            and (not sentence_start_here or (raw.isupper() and len(raw) >= 2))
            and canon_content is None
            and low not in FILLER
            and low not in WH_WORDS
            and low not in _MONTHS
        ):
            entities.append(_PROG_ALIASES.get(low, low) if is_prog else low)
        if frame:
            # an imperative frame asks what a question asks: "Name X" == "What is X"
            wh.append("what")
            continue
        if low in _GENERIC_WH:
            # "what"/"which" only say a question is asked; what it asks for is in the
            # rest ("What is the smallest ocean?" == "smallest ocean?" == "Which ocean
            # is the smallest?"), while when/where/who/why/how name the answer's kind
            continue
        if canon_content is not None:
            if canon_content:
                content.append(canon_content)
                surface.append(low)
        elif is_variable:
            content.append(raw)
            surface.append(raw)
        elif is_prog:
            # "JS" == "JavaScript"; "JavaScript (.js)" names it once
            lang = _PROG_ALIASES.get(low, low)
            if not content or content[-1] != lang:
                content.append(lang)
                surface.append(low)
        elif low not in FILLER and low not in _PREPOSITIONS and low not in _DEGREE_WORDS:
            content.append(_stem(low))
            surface.append(low)

    # syntax names a language only in code, or when the text names none ("a Go func
    # reverse(s []int)" is not JavaScript because it says "function f(")
    fenced = "```" in query
    if fenced or not prog:
        code = "\n".join(_CODE_FENCE_RE.findall(query)) if fenced else query
        for pattern, lang in _PROG_SYNTAX:
            if pattern.search(code) and lang not in prog:
                prog.append(lang)
    if "fahrenheit" in units or "celsius" in units or "kelvin" in units:
        units = [u for u in units if u != "degree"]

    quoted = tuple(
        " ".join(t.canon for t in tokenize(m.group("s") or m.group("d") or "") if t.kind != "sym")
        for m in _QUOTED_RE.finditer(norm)
    )
    text = " ".join(words)
    char3 = frozenset(text[i : i + 3] for i in range(max(len(text) - 2, 1)))
    return Side(
        query=query,
        text=text,
        tokens=tuple(words),
        content=tuple(content),
        surface=tuple(surface),
        numbers=tuple(numbers),
        ordinals=tuple(ordinals),
        operators=tuple(toks[k].raw for k in sorted(op_idx)),
        variables=tuple(variables),
        identifiers=tuple(identifiers),
        entities=tuple(entities),
        dates=tuple(dates),
        weekdays=tuple(weekdays),
        times=tuple(times),
        relative=tuple(relative),
        units=tuple(units),
        currencies=tuple(currencies),
        prog_langs=tuple(prog),
        nat_langs=tuple(nat),
        text_lang=detect_language(query),
        quoted=tuple(q for q in quoted if q),
        negations=negations,
        wh_words=tuple(wh),
        roles=_roles(toks) + tuple(unit_roles),
        char3=char3,
        n_chars=len(query),
        context_key=_norm_key(context_only(req)),
        context_turns=len(req.context or ()),
        history=analyze(Request(_turn_text(req))) if req.context else None,
        system_key=_norm_key(req.system_prompt),
        tool_names=tool_names(req),
        tool_intent=tool_intent(req, content),
        tool_defs=tool_defs(req),
    )
