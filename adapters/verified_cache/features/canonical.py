"""Tokenisation and canonicalisation of one text: :func:`tokenize` turns a text
into :class:`Token` s whose ``canon`` forms compare equal across surface
variation - case, accents, contractions, number words ("twenty five" == "25"),
multi-word names ("United States" == "US"), math notation ("x**2" == "x^2"),
Chinese numerals - while typos are left alone. Also the light stemmer and lemma
the comparisons use.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass

# One text normalisation for the core's never-cache rules and the features.
from cacheeval.verify.never_cache import normalise_text

from .lexicon import (
    _ABBREVIATIONS,
    _CONTRACTIONS,
    _ORDINALS,
    _PHRASE_FIRST,
    _PHRASE_MAX,
    _PHRASES,
    _PREPOSITIONS,
    _SCALES,
    _STEM_KEEP,
    _SUFFIXES,
    _TENS,
    _UNITS_SMALL,
    _US_PRONOUN_BEFORE,
    FILLER,
    NEGATIONS,
)

_TOKEN_RE = re.compile(
    r"(?P<iso>\b\d{4}-\d{2}-\d{2}\b)"
    r"|(?P<time>\b\d{1,2}(?::\d{2})?\s*(?:a\.\s?m\.?|p\.\s?m\.?|am|pm)(?![a-z])|\b\d{1,2}:\d{2}\b)"
    r"|(?P<num>\d+(?:[.,]\d+)*(?:st|nd|rd|th)?(?![\w]))"
    r"|(?P<numw>\d+)"
    r"|(?P<word>[^\W_][\w]*(?:['’][^\W\d_]+)?|_\w+)"
    r"|(?P<arrow>->|→|=>|⟶)"
    r"|(?P<sym>[^\w\s])",
    re.IGNORECASE,
)

#: Han, kana and Hangul: scripts written without spaces between words.
_CJK_RE = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]")

_CJK_SPLIT_RE = re.compile(
    r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]|\d+|[^\W\d_]+"
)


@dataclass(frozen=True, slots=True)
class Token:
    """One token: ``kind`` is word, num, time, date, sym or arrow; ``canon`` the
    canonical form used for comparison; ``raw`` the surface text."""

    kind: str
    raw: str
    canon: str
    start: int
    end: int


_CODE_FENCE_RE = re.compile(r"```.*?(?:```|$)", re.S)

#: "U.S." / "U.K." as one word.
_DOTTED_ABBREV_RE = re.compile(r"\b([UE])\.\s?([SKAU])\.(?:\s?A\.)?")

#: "x**2" is "x^2"; "5*x" (a number times a single letter) is "5x".
_POWER_RE = re.compile(r"\*\*")

#: "log10(x)", "log_2 x", "log base 2 of x": one notation, "log base 2 x".
_LOG_BASE_RE = re.compile(r"\blog_?(\d+)(?=\s*\(|\s+\d)|\blog_\{(\d+)\}")

_COEFF_RE = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s*\*\s*([A-Za-z])(?![\w(])")


#: LaTeX commands read as the words or symbols a request in prose uses for them
#: ("\\cdot" is "*", "\\le" is "<="); a command not listed reads as its name.
_LATEX_WORDS: dict[str, str] = {
    "cdot": "*", "times": "*", "div": "/", "le": "<=", "leq": "<=", "ge": ">=", "geq": ">=",
    "ne": "!=", "neq": "!=", "int": "integral", "sum": "sum", "prod": "product",
    "infty": "infinity", "left": "", "right": "", "quad": "", "qquad": "", "displaystyle": "",
}  # fmt: skip

#: A LaTeX group argument or a single token: ``{n+1}`` or ``3``.
_LATEX_ARG = r"(\{[^{}]*\}|[^\s{}^_\\]+)"
#: A bounded integral, sum or product: "\int_0^3", "\sum_{i=1}^{n}".
_LATEX_BOUNDS_RE = re.compile(r"\\(int|sum|prod)\s*_\s*" + _LATEX_ARG + r"\s*\^\s*" + _LATEX_ARG)
_LATEX_FRAC_RE = re.compile(r"\\[dt]?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}")
_LATEX_SQRT_RE = re.compile(r"\\sqrt\s*\{([^{}]*)\}")
_LATEX_COMMAND_RE = re.compile(r"\\([A-Za-z]+|[,;:! ])")
#: ``$...$`` around math with a command or a power in it: delimiters, not dollars.
_LATEX_DOLLARS_RE = re.compile(r"\$\$?([^$]*[\\^_][^$]*)\$?\$")

#: A unit of length with a power: "40 m^2" (normalised from "m²") is "40 square metres".
_UNIT_POWER_RE = re.compile(r"(\d)\s*(km|cm|mm|m|ft|in|mi|yd)\^([23])(?![\w^])")
_LENGTH_WORDS = {"km": "kilometres", "cm": "centimetres", "mm": "millimetres", "m": "metres",
                 "ft": "feet", "in": "inches", "mi": "miles", "yd": "yards"}  # fmt: skip


def _latex(text: str) -> str:
    r"""LaTeX math as the prose a request types for it: "\int_1^4 (2x+1) \, dx" is
    "integral from 1 to 4 (2x+1) dx", "\frac{5}{6}" is "(5)/(6)", "\le" "<=",
    group braces dropped.

    >>> " ".join(_latex(r"Evaluate \int_0^{3} x^{2} \, dx").split())
    'Evaluate integral from 0 to 3 x^2 dx'
    >>> " ".join(_latex(r"$\frac{1}{2} \cdot 4$").split())
    '(1)/(2) * 4'
    """
    text = _LATEX_DOLLARS_RE.sub(lambda m: m.group(1), text)

    def arg(x: str) -> str:
        return x[1:-1] if x.startswith("{") else x

    text = _LATEX_BOUNDS_RE.sub(
        lambda m: f" {_LATEX_WORDS[m.group(1)]} from {arg(m.group(2))} to {arg(m.group(3))} ",
        text,
    )
    text = _LATEX_FRAC_RE.sub(lambda m: f"({m.group(1)})/({m.group(2)})", text)
    text = _LATEX_SQRT_RE.sub(lambda m: f"sqrt({m.group(1)})", text)
    text = re.sub(
        r"\^\{([^{}]*)\}",
        lambda m: "^" + (m.group(1) if len(m.group(1)) == 1 else f"({m.group(1)})"),
        text,
    )
    return _LATEX_COMMAND_RE.sub(
        lambda m: (
            " " + _LATEX_WORDS.get(m.group(1), m.group(1) if m.group(1).isalpha() else "") + " "
        ),
        text,
    )


#: Comparison signs as the two characters typed for them.
_COMPARISONS = str.maketrans({"≥": ">=", "≤": "<=", "≠": "!="})


def _notation(text: str) -> str:
    """Math and abbreviation notation under one spelling, outside code blocks only
    (in code ``**`` and ``^`` differ): ``**`` -> ``^``, ``5*x`` -> ``5x``, "U.S." ->
    "US", "≥" -> ">=", LaTeX as prose (:func:`_latex`), "m^2" after a number as
    "square metres". Applied after :func:`normalise_text` by the tokenizer."""
    if not any(c in text for c in ".*\\^≥≤≠") and "log" not in text:
        return text

    def prose(part: str) -> str:
        if "\\" in part:
            part = _latex(part)
        if "^" in part:
            part = _UNIT_POWER_RE.sub(
                lambda m: (
                    f"{m.group(1)} {'square' if m.group(3) == '2' else 'cubic'} "
                    f"{_LENGTH_WORDS[m.group(2)]}"
                ),
                part,
            )
        part = part.translate(_COMPARISONS)
        part = _DOTTED_ABBREV_RE.sub(lambda m: m.group(1) + m.group(2), part)
        if "log" in part:
            part = _LOG_BASE_RE.sub(lambda m: f"log base {m.group(1) or m.group(2)} ", part)
        if "*" in part:
            part = _COEFF_RE.sub(r"\1\2", _POWER_RE.sub("^", part))
        return part

    if "```" not in text:
        return prose(text)
    out, last = [], 0
    for m in _CODE_FENCE_RE.finditer(text):
        out.append(prose(text[last : m.start()]))
        out.append(m.group())
        last = m.end()
    out.append(prose(text[last:]))
    return "".join(out)


def _prepare(text: str) -> str:
    """The text the tokenizer reads: :func:`normalise_text` then :func:`_notation`."""
    return _notation(normalise_text(text))


#: Transliterations that are spelling variants, not different letters: German
#: "ß" is written "ss" (Swiss spelling) and Russian "ё" is routinely written "е".
_TRANSLIT = str.maketrans({"ß": "ss", "ё": "е", "Ё": "Е"})


def _fold_accents(word: str) -> str:
    """ "cuántas" -> "cuantas": drop accents from Latin-script words only (in other
    scripts a combining mark changes the letter); "ß" -> "ss", "ё" -> "е"."""
    if word.isascii():
        return word
    word = word.translate(_TRANSLIT)
    decomposed = unicodedata.normalize("NFD", word)
    base = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    if all(ord(ch) < 0x250 for ch in base):
        return base
    return word


def _canon_number(raw: str) -> tuple[str, bool]:
    """``("1200", False)`` for "1,200"; ``("25", True)`` for "25th"; ``("-2", False)``
    for "-2"."""
    if raw.startswith("-"):
        value, ordinal = _canon_number(raw[1:])
        return ("-" + value if value != "0" else value), ordinal
    low = raw.lower()
    ordinal = low.endswith(("st", "nd", "rd", "th"))
    if ordinal:
        low = low[:-2]
    if re.fullmatch(r"\d{1,3}(,\d{3})+(\.\d+)?", low):
        low = low.replace(",", "")
    low = low.replace(",", ".")
    if "." in low:
        whole, _, frac = low.partition(".")
        frac = frac.rstrip("0")
        low = f"{int(whole or '0')}.{frac}" if frac else str(int(whole or "0"))
    elif low.isdigit():
        low = str(int(low))
    return low, ordinal


def _canon_time(raw: str) -> str:
    """``T07:00`` for "7 am"/"07:00"; ``T~6:30`` for an hour without am/pm (could be
    either half of the day)."""
    low = raw.lower().replace(".", "").replace(" ", "")
    m = re.fullmatch(r"(\d{1,2})(?::(\d{2}))?(am|pm)?", low)
    if not m:
        return "T?" + low
    hour, minute, half = int(m.group(1)), int(m.group(2) or 0), m.group(3)
    if half == "am":
        hour = 0 if hour == 12 else hour
    elif half == "pm":
        hour = hour if hour == 12 else hour + 12
    elif hour <= 12 and not raw.startswith("0"):
        return f"T~{hour}:{minute:02d}"
    return f"T{hour:02d}:{minute:02d}"


_LIST_RE = re.compile(r"\d+(?:,\d+){2,}")


def _number_tokens(raw: str, start: int) -> list[Token]:
    """One number token, or one per item of a comma list written without spaces
    ("4,8,15,16" is four numbers; "1,200,000" with its three-digit groups and "3,5"
    stay one)."""
    if _LIST_RE.fullmatch(raw) and not re.fullmatch(r"\d{1,3}(,\d{3})+", raw):
        out, pos = [], start
        for part in raw.split(","):
            out.append(Token("num", part, part, pos, pos + len(part)))
            pos += len(part) + 1
        return out
    return [Token("num", raw, raw, start, start + len(raw))]


def tokenize(text: str) -> list[Token]:
    """Canonical tokens of ``text`` in order (see the module docstring)."""
    text = _prepare(text)
    raw_tokens: list[Token] = []
    for m in _TOKEN_RE.finditer(text):
        kind = m.lastgroup or "sym"
        raw = m.group()
        if kind == "iso":
            # 2025-06-10: the same date as "10 June 2025" (D06-10 plus the year)
            year, month, day = raw.split("-")
            raw_tokens.append(Token("date", raw, f"D{month}-{day}", m.start(), m.end()))
            raw_tokens.append(Token("num", year, year, m.start(), m.start() + 4))
        elif kind == "time":
            raw_tokens.append(Token("time", raw, _canon_time(raw), m.start(), m.end()))
        elif kind in ("num", "numw"):
            raw_tokens.extend(_number_tokens(raw, m.start()))
        elif kind == "word":
            if _CJK_RE.search(raw):
                # no spaces between words in these scripts: one token per character
                # (a run of Latin letters or digits inside stays whole)
                raw_tokens.extend(_cjk_tokens(raw, m.start()))
                continue
            raw_tokens.append(Token("word", raw, _fold_accents(raw.lower()), m.start(), m.end()))
        elif kind == "arrow":
            raw_tokens.append(Token("arrow", raw, "->", m.start(), m.end()))
        else:
            raw_tokens.append(Token("sym", raw, raw, m.start(), m.end()))
    return _canonicalise(_merge_phrases(raw_tokens))


#: Chinese numerals (digits and multipliers) and the measure words after which a
#: run of them is a count ("三个小时" == "3小时", "一公里" == "1公里"); elsewhere
#: they are part of a word (一样, 一番) and stay as written. "个", the generic
#: classifier, is dropped after any number.
_CJK_DIGITS: dict[str, int] = {
    "〇": 0, "零": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5,
    "六": 6, "七": 7, "八": 8, "九": 9,
}  # fmt: skip

_CJK_MULTIPLIERS: dict[str, int] = {"十": 10, "百": 100, "千": 1000, "万": 10000}

_CJK_MEASURES = frozenset("个只本张条件位名次天年月周岁小分秒米公英克升斤元块杯瓶辆台倍颗种")


def _cjk_value(run: str) -> int | None:
    """The value of a run of Chinese numerals ("二十三" -> 23), None if malformed."""
    total, current = 0, 0
    for ch in run:
        if ch in _CJK_DIGITS:
            current = current * 10 + _CJK_DIGITS[ch] if current else _CJK_DIGITS[ch]
        else:
            total += max(current, 1) * _CJK_MULTIPLIERS[ch]
            current = 0
    return total + current


def _cjk_tokens(raw: str, offset: int) -> list[Token]:
    """One token per Han/kana/Hangul character (no spaces between words in these
    scripts); a run of Latin letters or digits stays whole; Chinese numerals
    before a measure word become one number."""
    pieces = [(cm.group(), offset + cm.start()) for cm in _CJK_SPLIT_RE.finditer(raw)]
    out: list[Token] = []
    i = 0
    while i < len(pieces):
        piece, start = pieces[i]
        if piece in _CJK_DIGITS or piece in _CJK_MULTIPLIERS:
            j = i
            while j < len(pieces) and (
                pieces[j][0] in _CJK_DIGITS or pieces[j][0] in _CJK_MULTIPLIERS
            ):
                j += 1
            value = _cjk_value("".join(p for p, _ in pieces[i:j]))
            if j < len(pieces) and pieces[j][0] in _CJK_MEASURES and value is not None:
                end = pieces[j - 1][1] + 1
                out.append(Token("num", str(value), str(value), start, end))
                i = j
                continue
        if piece == "个" and out and out[-1].kind == "num":
            i += 1
            continue
        kind = "num" if piece.isdigit() else "word"
        out.append(Token(kind, piece, piece.lower(), start, start + len(piece)))
        i += 1
    return out


def _merge_phrases(tokens: list[Token]) -> list[Token]:
    """Replace each multi-word name or abbreviation of :data:`_PHRASES` by one word
    token with its canonical form (raw: the surface text, so capitalisation is
    kept). A lower-case "us" is the country only where it cannot be the pronoun."""
    if not any(t.kind == "word" and t.canon in _PHRASE_FIRST for t in tokens):
        return tokens
    out: list[Token] = []
    i, n = 0, len(tokens)
    while i < n:
        t = tokens[i]
        # "log base 2" is a logarithm's base, not the binary system
        after_log = t.canon == "base" and bool(out) and out[-1].canon == "log"
        if t.kind == "word" and t.canon in _PHRASE_FIRST and not after_log:
            for length in range(min(_PHRASE_MAX, n - i), 0, -1):
                key = tuple(x.canon for x in tokens[i : i + length])
                canon = _PHRASES.get(key)
                if canon is not None and all(
                    x.kind in ("word", "num") for x in tokens[i : i + length]
                ):
                    last = tokens[i + length - 1]
                    raw = " ".join(x.raw for x in tokens[i : i + length])
                    out.append(Token("word", raw, canon, t.start, last.end))
                    i += length
                    break
            else:
                if t.canon == "us" and _is_country_us(tokens, i):
                    out.append(Token("word", t.raw, "usa", t.start, t.end))
                else:
                    out.append(t)
                i += 1
            continue
        out.append(t)
        i += 1
    return out


def _is_country_us(tokens: list[Token], i: int) -> bool:
    """Whether "us" at ``tokens[i]`` is the country: "US"/"U.S." (except in "US
    dollars"); a lower-case "us" after "the" ("the us constitution") or before a
    content word when not after a word that takes the pronoun ("who was us
    president" but not "five of us at home")."""
    raw = tokens[i].raw
    if i + 1 < len(tokens) and tokens[i + 1].canon in ("dollar", "dollars"):
        return False  # "US dollars": the currency says it
    if raw == "US":
        return True
    if raw != "us":
        return False
    prev = tokens[i - 1].canon if i > 0 and tokens[i - 1].kind == "word" else ""
    if prev == "the":
        return True
    if prev in _US_PRONOUN_BEFORE or i + 1 >= len(tokens):
        return False
    nxt = tokens[i + 1]
    return (
        nxt.kind == "word"
        and nxt.canon not in FILLER
        and nxt.canon not in _PREPOSITIONS
        and nxt.canon not in NEGATIONS
    )


def _canonicalise(tokens: list[Token]) -> list[Token]:
    out: list[Token] = []
    i = 0
    n = len(tokens)
    while i < n:
        t = tokens[i]
        if t.kind == "word":
            low = t.canon
            if low in _CONTRACTIONS:
                for part in _CONTRACTIONS[low].split():
                    out.append(Token("word", t.raw, part, t.start, t.end))
                i += 1
                continue
            suffix = next((x for x in _SUFFIXES if low.endswith(x) and len(low) > len(x)), None)
            if suffix is not None and low not in _CONTRACTIONS:
                out.append(Token("word", t.raw, low[: -len(suffix)], t.start, t.end))
                out.append(Token("word", t.raw, _SUFFIXES[suffix], t.start, t.end))
                i += 1
                continue
            if low.endswith("n't"):
                out.append(Token("word", t.raw, low[:-3] or "not", t.start, t.end))
                out.append(Token("word", t.raw, "not", t.start, t.end))
                i += 1
                continue
            if len(low) == 4 and low[1] == "'" and low[2:] in ("th", "st", "nd", "rd"):
                low = low[0] + low[2:]  # "n'th" -> "nth"
            elif low.endswith("'s") and len(low) > 2:
                low = low[:-2]  # possessive: colleague's == colleagues' == colleague
            elif low.endswith("'"):
                low = low[:-1]
            low = _ABBREVIATIONS.get(low, low)
            # number words: "twenty five", "one hundred", "twenty-fifth"
            if low == "one" and not _counts_one(tokens, i) and not _and_a_half(tokens, i + 1):
                out.append(Token("word", t.raw, "one", t.start, t.end))
                i += 1
                continue
            scale_after_a = low in ("a", "an") and i + 1 < n and tokens[i + 1].canon in _SCALES
            if low in _UNITS_SMALL or low in _TENS or low in _ORDINALS or scale_after_a:
                value, ordinal, j = _read_number_words(tokens, i + 1 if scale_after_a else i)
                fraction = _fraction(tokens, i, value, ordinal, j)
                if fraction is not None and fraction[1] == 0:
                    out.append(Token("num", t.raw, "1", t.start, t.end))
                    i += 1
                    continue
                if fraction is not None:
                    numerator, denominator, j = fraction
                    end = tokens[j - 1].end
                    out.append(Token("num", t.raw, str(numerator), t.start, end))
                    out.append(Token("sym", "/", "/", t.start, end))
                    out.append(Token("num", tokens[j - 1].raw, str(denominator), t.start, end))
                    i = j
                    continue
                canon = f"{value}th" if ordinal else str(value)
                if not ordinal and _and_a_half(tokens, j):
                    canon, j = f"{value}.5", j + 3  # "two and a half" is 2.5
                out.append(Token("num", t.raw, canon, t.start, tokens[j - 1].end))
                i = j
                continue
            if low == "half":
                out.append(Token("num", t.raw, "0.5", t.start, t.end))
                i += 1
                continue
            out.append(Token("word", t.raw, low, t.start, t.end))
        elif (
            t.kind == "sym"
            and t.raw == "-"
            and i + 1 < n
            and tokens[i + 1].kind == "num"
            and tokens[i + 1].start == t.end
            and tokens[i + 1].raw[:1].isdigit()
            and (not out or out[-1].kind == "sym" and out[-1].raw in "=(,<>*/^+:")
        ):
            # a sign, not a minus: "x = -2", "(-3, 4)"
            nxt = tokens[i + 1]
            out.append(Token("num", "-" + nxt.raw, "-" + nxt.raw, t.start, nxt.end))
            i += 2
            continue
        elif t.kind == "sym" and t.raw == "-" and out and i + 1 < n:
            # a hyphen inside a word ("lo-fi", "6-minute") joins nothing: drop it
            prev, nxt = tokens[i - 1], tokens[i + 1]
            if (
                prev.end == t.start
                and nxt.start == t.end
                and (prev.kind == "word" or nxt.kind == "word")
            ):
                i += 1
                continue
            out.append(t)
        else:
            out.append(t)
        i += 1
    return _power_words(_math_words(out))


def _power_words(tokens: list[Token]) -> list[Token]:
    """A power in words as the symbol, after an operand: "4 raised to the 6th
    power", "x to the fourth power" and "2 to the power of 10" read as "^" and
    the exponent ("4^6"). Elsewhere the words stay ("the power of habit").

    >>> [t.canon for t in tokenize("four raised to the sixth power, x to the power of 10")]
    ['4', '^', '6', ',', 'x', '^', '10']
    >>> [t.canon for t in tokenize("the fifth power plant, the power of 2 habits")]
    ['the', '5th', 'power', 'plant', ',', 'the', 'power', 'of', '2', 'habits']
    """
    if not any(t.canon == "power" for t in tokens):
        return tokens
    out: list[Token] = []
    i, n = 0, len(tokens)
    while i < n:
        t = tokens[i]
        j = i + 1 if t.canon == "raised" else i
        words = [x.canon for x in tokens[j : j + 5]]
        exponent: Token | None = None
        if out and _math_operand(out[-1], True) and words[:2] == ["to", "the"]:
            if (
                len(words) >= 4
                and tokens[j + 2].kind == "num"
                and words[2].endswith("th")
                and words[3] == "power"
            ):
                exponent, end = tokens[j + 2], j + 4
            elif words[2:4] == ["power", "of"] and len(words) == 5 and tokens[j + 4].kind == "num":
                exponent, end = tokens[j + 4], j + 5
        if exponent is None:
            out.append(t)
            i += 1
            continue
        value = exponent.canon.removesuffix("th")
        out.append(Token("sym", "^", "^", t.start, tokens[end - 1].end))
        out.append(Token("num", value, value, exponent.start, exponent.end))
        i = end
    return out


#: Math written in words, read as the symbols ("x minus y equals 2" == "x - y = 2",
#: "t squared" == "t^2"): (words, symbols), longest first.
_MATH_PHRASES: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = (
    (("is", "equal", "to"), ("=",)), (("is", "less", "than"), ("<",)),
    (("is", "greater", "than"), (">",)), (("multiplied", "by"), ("*",)),
    (("divided", "by"), ("/",)), (("equal", "to"), ("=",)), (("less", "than"), ("<",)),
    (("greater", "than"), (">",)), (("equals",), ("=",)), (("equal",), ("=",)),
    (("plus",), ("+",)), (("minus",), ("-",)), (("times",), ("*",)),
    (("squared",), ("^", "2")), (("cubed",), ("^", "3")),
)  # fmt: skip


def _math_operand(tok: Token, before: bool) -> bool:
    """A number, a single-letter variable (not "a" or "I", which are words) or a
    bracket closing (``before`` the operator) or opening (after it)."""
    if tok.kind == "num":
        return True
    if tok.kind == "word":
        return (
            len(tok.raw) == 1 and tok.raw.isascii() and tok.raw.isalpha() and tok.raw not in "aAI"
        )
    return tok.raw == (")" if before else "(")


def _math_words(tokens: list[Token]) -> list[Token]:
    """Operators written in words as symbols, where they stand between two operands
    (a comma before the word is dropped: "n, minus 7" is "n - 7"); "squared" and
    "cubed" after an operand as powers. Elsewhere the words stay ("five times a
    day", "less than a week")."""
    if not any(t.kind == "word" and t.canon in _MATH_WORDS for t in tokens):
        return tokens
    out: list[Token] = []
    i, n = 0, len(tokens)
    while i < n:
        t = tokens[i]
        prev = out[-2] if len(out) >= 2 and out[-1].raw == "," else (out[-1] if out else None)
        if (
            t.kind == "word"
            and t.canon in _MATH_WORDS
            and prev is not None
            and _math_operand(prev, True)
        ):
            for words, symbols in _MATH_PHRASES:
                j = i + len(words)
                if tuple(x.canon for x in tokens[i:j]) != words:
                    continue
                power = symbols[0] == "^"
                if not power and (j >= n or not _math_operand(tokens[j], False)):
                    continue
                if out[-1].raw == ",":
                    out.pop()
                end = tokens[j - 1].end
                out.append(Token("sym", symbols[0], symbols[0], t.start, end))
                if power:
                    out.append(Token("num", symbols[1], symbols[1], t.start, end))
                i = j
                break
            else:
                out.append(t)
                i += 1
            continue
        out.append(t)
        i += 1
    return out


_MATH_WORDS = frozenset(words[0] for words, _ in _MATH_PHRASES)


def _counts_one(tokens: list[Token], i: int) -> bool:
    """Whether "one" at ``tokens[i]`` is the number 1 ("one hour", "twenty one") rather
    than a pronoun ("quick one", "one of those", "this one") or one of a pair ("one
    hand ... the other").

    >>> [t.canon for t in tokenize("one hour or two")][:2]
    ['1', 'hour']
    >>> [t.canon for t in tokenize("night on one side, day on the other")][2:4]
    ['one', 'side']
    """
    prev = tokens[i - 1].raw.lower() if i > 0 else ""
    if prev in ("this", "that", "which", "the", "each", "every", "any", "no", "quick", "a"):
        return False
    if any(
        tokens[j].canon == "other" and tokens[j - 1].canon == "the"
        for j in range(i + 2, len(tokens))
    ):
        return False  # "on one side ... on the other": one of two, no count
    nxt = tokens[i + 1] if i + 1 < len(tokens) else None
    if (
        nxt is not None
        and nxt.raw == "-"
        and i + 2 < len(tokens)
        and tokens[i + 2].kind == "word"
        and tokens[i].end == nxt.start == tokens[i + 2].start - 1
    ):
        nxt = tokens[i + 2]  # "one-liner" reads like "one liner"
    if nxt is None or nxt.kind == "sym":
        return prev in _TENS
    return nxt.kind == "num" or nxt.raw.lower() not in FILLER


def _and_a_half(tokens: list[Token], j: int) -> bool:
    """Whether ``tokens[j:]`` opens with "and a half" ("two and a half hours")."""
    return [t.canon for t in tokens[j : j + 3]] == ["and", "a", "half"]


def _read_number_words(tokens: list[Token], i: int) -> tuple[int, bool, int]:
    """Read a run of number words from ``tokens[i]``; return (value, ordinal, next
    index). A run may open with a scale word after "a" ("a hundred and twenty")
    and joins "and" after a scale ("two hundred and forty" is 240).

    >>> from .canonical import tokenize
    >>> [t.canon for t in tokenize("two hundred and forty, a hundred and twenty")]
    ['240', ',', '120']
    >>> [t.canon for t in tokenize("two and a half hours, one and a half cups")]
    ['2.5', 'hours', ',', '1.5', 'cups']
    """
    total = 0
    current = 0
    ordinal = False
    j = i
    while j < len(tokens) and tokens[j].kind in ("word", "sym"):
        tok = tokens[j]
        low = tok.canon if tok.kind == "word" else tok.raw
        if tok.kind == "sym":
            # "twenty-five": a hyphen between two number words
            if (
                low == "-"
                and j + 1 < len(tokens)
                and j > i
                and tokens[j + 1].canon in (_UNITS_SMALL.keys() | _ORDINALS.keys())
            ):
                j += 1
                continue
            break
        if (
            low == "and"
            and j > i
            and j + 1 < len(tokens)
            and (
                tokens[j + 1].canon in _UNITS_SMALL
                or tokens[j + 1].canon in _TENS
                and tokens[j - 1].canon in _SCALES
            )
        ):
            j += 1
            continue
        if low in _UNITS_SMALL:
            current += _UNITS_SMALL[low]
        elif low in _TENS:
            # "nineteen eighty-four", "twenty twenty": a year read as two pairs
            current = current * 100 + _TENS[low] if 10 <= current <= 99 else current + _TENS[low]
        elif low in _ORDINALS:
            current += _ORDINALS[low]
            ordinal = True
            j += 1
            break
        elif low in _SCALES and (j > i or tokens[j - 1].canon in ("a", "an")):
            current = max(current, 1) * _SCALES[low]
            if _SCALES[low] >= 1000:
                total += current
                current = 0
        else:
            break
        j += 1
    return total + current, ordinal, j


#: Denominators written in words that are never an ordinal after a count: "a
#: quarter", "two halves"; "second" is left out ("one second" is a time).
_FRACTION_WORDS: dict[str, int] = {"half": 2, "halves": 2, "quarter": 4, "quarters": 4}


def _denominator(word: str, plural_only: bool) -> int | None:
    """The denominator a fraction word names ("thirds" 3, "quarter" 4), or None;
    with ``plural_only`` an ordinal counts only in the plural ("five sixths")."""
    if word in _FRACTION_WORDS:
        return _FRACTION_WORDS[word]
    if word.endswith("s") and _ORDINALS.get(word[:-1], 0) > 2:
        return _ORDINALS[word[:-1]]
    if not plural_only and _ORDINALS.get(word, 0) > 2:
        return _ORDINALS[word]
    return None


def _fraction(
    tokens: list[Token], i: int, value: int, ordinal: bool, j: int
) -> tuple[int, int, int] | None:
    """(numerator, denominator, next index) when the number words read from
    ``tokens[i]`` (``value``, ``ordinal``, up to ``j``, as :func:`_read_number_words`
    gives them) are a fraction: a count before a plural denominator ("five
    sixths", "two thirds", "three quarters") or "one" before a singular one ("one
    third", "one-fifth", "one quarter", "one half"). A count before a singular
    ordinal is an ordinal ("twenty third"), as is "the third".

    >>> [t.canon for t in tokenize("one third of five sixths, one-fifth, three quarters")]
    ['1', '/', '3', 'of', '5', '/', '6', ',', '1', '/', '5', ',', '3', '/', '4']
    >>> [t.canon for t in tokenize("the third, twenty third, one second, one of the thirds")]
    ['the', '3th', ',', '23th', ',', '1', '2th', ',', 'one', 'of', 'the', 'thirds']
    """
    if tokens[i].canon != "one" or j - i not in (2, 3):
        if ordinal or j >= len(tokens) or j == i:
            return None
        den = _denominator(tokens[j].canon, plural_only=True)
        return None if den is None else (value, den, j + 1)
    if ordinal:
        # "one third" was read as 1 + 3 = 4th; "one-third" with its hyphen. No
        # ordinal opens with "one": "one second" is a count (denominator 0: the
        # caller reads the ordinal word again)
        den = _denominator(tokens[j - 1].canon, plural_only=False)
        return (1, 0, i + 1) if den is None else (1, den, j)
    if j < len(tokens) and j == i + 1:
        den = _denominator(tokens[j].canon, plural_only=False)
        return None if den is None else (1, den, j + 1)
    return None


@functools.lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """A light plural stemmer: "days" -> "day", "boxes" -> "box"; short words unchanged."""
    if len(word) <= 3 or word in _STEM_KEEP or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("ches", "shes", "sses", "xes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def _lemma(word: str) -> str:
    """A rough lemma for matching a word under a negation with its plain use:
    "melting" == "melt", "numbers" == "number", "making" == "make"."""
    w = stem(word)
    if w.endswith("ing") and len(w) > 5:
        w = w[:-3]
    elif w.endswith("ed") and len(w) > 4:
        w = w[:-2]
    return w[:-1] if w.endswith("e") and len(w) > 3 else w
