"""Answer-determining items read from one side's tokens: math operators, calendar
dates, the roles of tokens in a direction ("from X to Y", "X over Y", a unit
given or asked for) and the language the text is written in.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Sequence

from .canonical import (
    Token,
    _canon_number,
    _fold_accents,
    stem,
)
from .lexicon import (
    _AMBIGUOUS_MONTHS,
    _DEGREE_WORDS,
    _LANG_STOPWORDS,
    _MONTHS,
    _SCRIPTS,
    _UNIT_LETTERS,
    _UNITS,
    FILLER,
)

_OPERATOR_SYMBOLS = frozenset("+-*/^=<>×÷√≤≥%")


def _digits(tok: Token) -> bool:
    """A number token written in digits (possibly signed), not in words."""
    return tok.kind == "num" and tok.raw.lstrip("-")[:1].isdigit()


def _is_math_operand(tok: Token | None) -> bool:
    """A number (in digits, or in words: "t squared minus nine"), a single letter,
    or a bracket."""
    if tok is None:
        return False
    if tok.kind == "num":
        return True
    if tok.kind == "word":
        return len(tok.raw) == 1
    return tok.raw in "()"


def _operator_indices(toks: Sequence[Token]) -> set[int]:
    """Indices of tokens that are math operators. ``-``, ``/``, ``*`` only count
    between two operands ("x - 3", "6/8"), not as a dash ("$50 - what's") or in
    "$500/night"."""
    out: set[int] = set()
    labels = _label_separators(toks)
    for k, t in enumerate(toks):
        if t.kind != "sym" or t.raw not in _OPERATOR_SYMBOLS or t.raw == "%" or k in labels:
            continue
        if t.raw in "-/*":
            prev = toks[k - 1] if k > 0 else None
            nxt = toks[k + 1] if k + 1 < len(toks) else None
            if not (_is_math_operand(prev) and _is_math_operand(nxt)):
                continue
        out.add(k)
    return out


def _label_separators(toks: Sequence[Token]) -> set[int]:
    """Indices of the separators in a name made of three or more numbers glued by
    one sign and followed by a content word: "the 50/30/20 rule", "a 4-4-2
    formation" (one thing, written with slashes or dashes alike), not "100/5/2?".

    >>> from .canonical import tokenize
    >>> sorted(_label_separators(tokenize("the 50/30/20 rule or 50-30-20 rule")))
    [2, 4, 9, 11]
    >>> _label_separators(tokenize("compute 100/5/2 and 7-3"))
    set()
    """
    out: set[int] = set()
    k, n = 0, len(toks)
    while k < n:
        j = k
        while (
            j + 2 < n
            and toks[j].kind == "num"
            and toks[j + 1].raw in ("/", "-")
            and toks[j + 1].raw == toks[k + 1].raw
            and toks[j + 2].kind == "num"
            and toks[j].end == toks[j + 1].start
            and toks[j + 1].end == toks[j + 2].start
        ):
            j += 2
        if (
            j - k >= 4
            and j + 1 < n
            and toks[j + 1].kind == "word"
            and toks[j + 1].canon not in FILLER
        ):
            out.update(range(k + 1, j, 2))
        k = max(j, k + 1)
    return out


def _dates(toks: Sequence[Token]) -> tuple[list[str], dict[int, str]]:
    """Calendar dates: a month next to a day number ("July 3", "3 July") as
    ``Dmm-dd``, a month alone as ``Dmm``, ISO dates as written. Also returns, for
    every token index that is part of a date, the date it stands for (on the
    month's index) or "" (on the day number's), so the content tokens hold each
    date once whatever its notation."""
    dates: list[str] = []
    used: dict[int, str] = {}
    for k, t in enumerate(toks):
        if t.kind == "date":
            dates.append(t.canon)
            continue
        if t.kind != "word" or t.canon not in _MONTHS:
            continue
        month = _MONTHS[t.canon]
        found = None
        for idx in (k + 1, k - 1):
            if 0 <= idx < len(toks) and _digits(toks[idx]) and not toks[idx].raw.startswith("-"):
                value, _ = _canon_number(toks[idx].raw)
                if value.isdigit() and 1 <= int(value) <= 31 and idx not in used:
                    found = (int(value), idx)
                    break
        if found is not None:
            date = f"D{month:02d}-{found[0]:02d}"
            dates.append(date)
            used[k] = date
            used[found[1]] = ""
        elif t.canon not in _AMBIGUOUS_MONTHS or (t.raw[:1].isupper() and k > 0):
            date = f"D{month:02d}"
            dates.append(date)
            used[k] = date
    return dates, used


def _cased_lang(raw: str, low: str) -> bool:
    # "Go", "R", "C", "Rust" name a language; "go", "rust" are ordinary words
    if low in ("r", "c"):
        return raw.isupper()
    return raw[:1].isupper()


_MATH_SIGNS_RE = re.compile(r"[=+^<>]")

#: The stopwords of each language with accents folded: a text typed without its
#: accents ("qual e o animal mais rapido") is in the language it is with them.
_FOLDED_STOPWORDS: dict[str, frozenset[str]] = {
    lang: frozenset(_fold_accents(w) for w in words) for lang, words in _LANG_STOPWORDS.items()
}


def _stopword_hits(words: Sequence[str], folded: Sequence[str], lang: str) -> int:
    """How many of ``words`` are stopwords of ``lang``, as typed or accents folded."""
    exact, loose = _LANG_STOPWORDS[lang], _FOLDED_STOPWORDS[lang]
    return sum(1 for w, f in zip(words, folded, strict=True) if w in exact or f in loose)


def detect_language(text: str) -> str:
    """A coarse language tag of ``text``: a non-Latin script when at least 30% of
    the letters are in it, else the Latin-script language whose distinctive
    frequent words occur most ("en" when none does or on a tie with English); kana
    beside Han characters is Japanese."""
    letters = [ch for ch in text if ch.isalpha()]
    counts: Counter[str] = Counter()
    for ch in letters:
        if ord(ch) > 0x24F:
            name = unicodedata.name(ch, "")
            for key, lang in _SCRIPTS:
                if key in name:
                    counts[lang] += 1
                    break
    if counts["ja"] and counts["zh"]:
        # Japanese writes kanji beside kana: any kana makes the Han characters Japanese
        counts["ja"] += counts.pop("zh")
    if counts:
        lang, n = max(sorted(counts.items()), key=lambda kv: kv[1])
        if n >= 0.3 * len(letters):
            return lang
    words = re.findall(r"[^\W\d_]+", text.lower())
    if _MATH_SIGNS_RE.search(text):
        # "x + y = 10": single letters are variables, not the Spanish "y"
        words = [w for w in words if len(w) > 1]
    folded = [_fold_accents(w) for w in words]
    best, best_n = "en", _stopword_hits(words, folded, "en")
    for lang in sorted(_LANG_STOPWORDS):
        n = _stopword_hits(words, folded, lang)
        if n > best_n:
            best, best_n = lang, n
    return best


#: Words between a preferred option and its alternative: "renting over buying",
#: "tea rather than coffee", "walk instead of drive", "faster than light".
_PREFER_PIVOTS = frozenset({"over", "than", "instead", "rather"})

#: Words that give an amount of the unit after them: "a mile", "eine Meile", "per hour".
_AMOUNT_WORDS = frozenset(
    "a an one per each ein eine einen einem einer un une una uno um uma een".split()
)

#: "How many" in the languages of :data:`_LANG_STOPWORDS`: the unit after it is asked for.
_HOW_MANY = frozenset(
    "many much cuantos cuantas cuanto quantos quantas quanto quanti quante viele wieviel "
    "combien hoeveel".split()
)


def _amount_role(toks: Sequence[Token], k: int) -> str:
    """Whether the unit or currency at ``toks[k]`` is given ("src": "5 km", "72°F",
    "twenty minutes", "a full litre", "250 US dollars") or asked for ("dst": "how
    many miles", "in Celsius"): in a conversion the two sides of a direction swap
    differ here. A number or amount word at most two words back gives it."""
    words = 0
    for j in range(k - 1, max(k - 5, -1), -1):
        prev = toks[j]
        if prev.kind == "num" or prev.canon in _AMOUNT_WORDS:
            return "src"
        if prev.raw == "°" or prev.canon == "usa" or prev.canon in _DEGREE_WORDS:
            continue
        words += 1
        if prev.kind != "word" or words >= 2 or prev.canon in _HOW_MANY:
            break
    return "dst"


def _roles(toks: Sequence[Token]) -> tuple[tuple[str, str], ...]:
    """(token, role) pairs: what comes after "from" is a source, after "to"/"into"/an
    arrow a destination; in "X to Y" and "X -> Y" the X is the source; in "X over Y"
    ("than", "instead of", "rather than") X is preferred ("pref") to Y ("alt")."""
    out: list[tuple[str, str]] = []
    items = [t for t in toks if t.kind != "sym"]

    def key(t: Token) -> str:
        if t.kind == "word":
            if t.canon in _UNITS:
                return _UNITS[t.canon]
            if t.canon in ("c", "f"):
                return _UNIT_LETTERS[t.canon]  # "72°C": the degree sign was dropped
            return stem(t.canon)
        if t.kind == "num":
            return _canon_number(t.raw if _digits(t) else t.canon)[0]
        return t.canon

    def next_content(k: int) -> Token | None:
        for t in items[k + 1 : k + 4]:
            if t.kind != "word" or t.canon not in FILLER:
                return t
        return None

    def prev_content(k: int) -> Token | None:
        for t in reversed(items[max(k - 3, 0) : k]):
            if t.kind != "word" or (t.canon not in FILLER and t.canon not in _PREFER_PIVOTS):
                return t
        return None

    for k, t in enumerate(items):
        low = t.canon
        if t.kind == "word" and low in _PREFER_PIVOTS:
            # "X over Y", "X rather than Y", "X instead of Y": X preferred to Y
            nxt = next_content(k)
            if low == "rather" or (nxt is not None and nxt.canon in _PREFER_PIVOTS):
                continue  # "rather than": read at "than"
            before = prev_content(k)
            if before is not None and nxt is not None:
                out.append((key(before), "pref"))
                out.append((key(nxt), "alt"))
            continue
        if t.kind == "arrow" or (t.kind == "word" and low in ("to", "into")):
            dst = next_content(k)
            if dst is not None:
                out.append((key(dst), "dst"))
            if k > 0 and (t.kind == "arrow" or not any(x.canon == "from" for x in items[:k])):
                src = items[k - 1]
                if src.kind != "word" or src.canon not in FILLER:
                    out.append((key(src), "src"))
        elif t.kind == "word" and low == "from":
            origin = next_content(k)
            if origin is not None:
                out.append((key(origin), "src"))
    return tuple(out)
