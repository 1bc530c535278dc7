"""Pure, deterministic features of a pair of requests: what differs between the
stored request (side a) and the new one (side b).

Everything here is a function of the two *requests* only - query, prior turns,
system prompt, offered tools. Nothing reads a label, an id, a domain or any
benchmark metadata, because a production cache has none of them.

Two steps:

1. :func:`analyze` turns one :class:`Request` into a :class:`Side`: canonical
   tokens (case-folded, contractions expanded, number words as digits, units
   and currencies under one name, typos left alone) plus the answer-determining
   items pulled out of them - numbers, operators, variables, identifiers,
   capitalised names, dates, times, units, languages, quoted spans. A cache
   analyses a stored request once, at ``put`` time.
2. The extractors in :data:`EXTRACTORS` compare two sides. Each returns a small
   ordered dict of floats; :func:`pair_features` concatenates them in the order
   of :data:`FEATURE_NAMES`, the verifier's input vector.

The three embedding cosines (queries, full requests, differing spans) are
computed by the cache (they need the model) and passed in; this module only
says which spans differ (:func:`diff_spans`).

The rule behind every extractor: if the answer will contain a token from the
prompt, that token is answer-determining, so the features describe *which
kinds* of tokens differ (a number, a variable, a direction, a language...) and
how much the rest of the wording differs.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# --- the request -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Request:
    """One request to a cache: the last user message plus what came with it.

    ``context`` holds the prior turns (``{"role", "content"}`` dicts, oldest
    first); ``tools`` the JSON-schema tool definitions offered to the model.
    """

    query: str
    context: tuple[Mapping[str, Any], ...] | None = None
    system_prompt: str | None = None
    tools: tuple[Mapping[str, Any], ...] | None = None

    @classmethod
    def of(cls, value: Request | str) -> Request:
        """``value`` itself, or a bare query string wrapped as a Request."""
        if isinstance(value, Request):
            return value
        if isinstance(value, str):
            return cls(query=value)
        raise TypeError(f"expected a Request or a str, got {type(value).__name__}")


# --- lexicons ----------------------------------------------------------------------

_CONTRACTIONS: dict[str, str] = {
    "what's": "what is", "whats": "what is", "that's": "that is", "thats": "that is",
    "it's": "it is", "there's": "there is", "theres": "there is", "here's": "here is",
    "who's": "who is", "where's": "where is", "how's": "how is", "let's": "let us",
    "i'm": "i am", "im": "i am", "i've": "i have", "ive": "i have", "i'll": "i will",
    "i'd": "i would", "you're": "you are", "youre": "you are", "you've": "you have",
    "you'll": "you will", "we're": "we are", "we've": "we have", "they're": "they are",
    "she's": "she is", "shes": "she is", "he's": "he is",
    "don't": "do not", "dont": "do not", "doesn't": "does not", "doesnt": "does not",
    "didn't": "did not", "didnt": "did not", "isn't": "is not", "isnt": "is not",
    "aren't": "are not", "arent": "are not", "wasn't": "was not", "wasnt": "was not",
    "weren't": "were not", "can't": "cannot", "cant": "cannot", "couldn't": "could not",
    "couldnt": "could not", "won't": "will not", "wont": "will not",
    "wouldn't": "would not", "wouldnt": "would not", "shouldn't": "should not",
    "shouldnt": "should not", "haven't": "have not", "havent": "have not",
    "hasn't": "has not", "hasnt": "has not", "mustn't": "must not",
}  # fmt: skip

#: Informal spellings a user types for a common word.
_ABBREVIATIONS: dict[str, str] = {
    "u": "you", "ur": "your", "r": "are", "pls": "please", "plz": "please",
    "thx": "thanks", "bday": "birthday", "yr": "year", "yrs": "year", "abt": "about",
    "w": "with", "b4": "before", "tmrw": "tomorrow", "tmr": "tomorrow", "tonite": "tonight",
    "approx": "approximately", "info": "information", "govt": "government",
    "neighbour": "neighbor", "neighbours": "neighbor", "neighbourhood": "neighborhood",
    "colour": "color", "favourite": "favorite", "centre": "center", "theatre": "theater",
    "organise": "organize", "realise": "realize", "apologise": "apologize",
    "programme": "program", "traveller": "traveler", "café": "cafe", "insta": "instagram",
}  # fmt: skip

_UNITS_SMALL: dict[str, int] = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
    "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17,
    "eighteen": 18, "nineteen": 19, "dozen": 12,
}  # fmt: skip
_TENS: dict[str, int] = {
    "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60,
    "seventy": 70, "eighty": 80, "ninety": 90,
}  # fmt: skip
_SCALES: dict[str, int] = {"hundred": 100, "thousand": 1000, "million": 1_000_000}
_ORDINALS: dict[str, int] = {
    "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6,
    "seventh": 7, "eighth": 8, "ninth": 9, "tenth": 10, "eleventh": 11, "twelfth": 12,
    "thirteenth": 13, "fourteenth": 14, "fifteenth": 15, "sixteenth": 16,
    "seventeenth": 17, "eighteenth": 18, "nineteenth": 19, "twentieth": 20,
    "thirtieth": 30, "fortieth": 40, "fiftieth": 50, "hundredth": 100,
}  # fmt: skip

#: Surface form -> canonical unit. Single letters only count right after a number.
_UNITS: dict[str, str] = {
    "km": "km", "kms": "km", "kilometre": "km", "kilometres": "km", "kilometer": "km",
    "kilometers": "km", "mi": "mile", "mile": "mile", "miles": "mile",
    "meter": "meter", "meters": "meter", "metre": "meter", "metres": "meter",
    "cm": "cm", "centimeter": "cm", "centimeters": "cm", "centimetre": "cm",
    "centimetres": "cm", "mm": "mm", "millimeter": "mm", "millimeters": "mm",
    "inch": "inch", "inches": "inch", "ft": "foot", "foot": "foot", "feet": "foot",
    "yard": "yard", "yards": "yard", "kg": "kg", "kgs": "kg", "kilogram": "kg",
    "kilograms": "kg", "kilo": "kg", "kilos": "kg", "gram": "g", "grams": "g",
    "lb": "lb", "lbs": "lb", "pound": "lb", "pounds": "lb", "oz": "oz", "ounce": "oz",
    "ounces": "oz", "ml": "ml", "milliliter": "ml", "milliliters": "ml",
    "millilitre": "ml", "millilitres": "ml", "liter": "l", "liters": "l", "litre": "l",
    "litres": "l", "cup": "cup", "cups": "cup", "tablespoon": "tbsp", "tablespoons": "tbsp",
    "tbsp": "tbsp", "teaspoon": "tsp", "teaspoons": "tsp", "tsp": "tsp",
    "celsius": "celsius", "centigrade": "celsius", "fahrenheit": "fahrenheit",
    "kelvin": "kelvin", "percent": "percent", "pct": "percent", "hour": "hour",
    "hours": "hour", "hr": "hour", "hrs": "hour", "minute": "minute", "minutes": "minute",
    "min": "minute", "mins": "minute", "sec": "second", "secs": "second",
    "seconds": "second", "gb": "gb", "gigabyte": "gb", "gigabytes": "gb", "mb": "mb",
    "megabyte": "mb", "megabytes": "mb", "tb": "tb", "kb": "kb", "mph": "mph",
    "kph": "kph", "kwh": "kwh", "calorie": "kcal", "calories": "kcal", "kcal": "kcal",
    "degree": "degree", "degrees": "degree", "acre": "acre", "acres": "acre",
    "hectare": "hectare", "hectares": "hectare", "gallon": "gallon", "gallons": "gallon",
    "quart": "quart", "quarts": "quart", "pint": "pint", "pints": "pint",
}  # fmt: skip
_UNIT_LETTERS: dict[str, str] = {
    "l": "l", "g": "g", "m": "meter", "h": "hour", "c": "celsius", "f": "fahrenheit",
    "k": "thousand",
}  # fmt: skip
_CURRENCIES: dict[str, str] = {
    "$": "usd", "usd": "usd", "dollar": "usd", "dollars": "usd", "buck": "usd",
    "bucks": "usd", "€": "eur", "eur": "eur", "euro": "eur", "euros": "eur", "£": "gbp",
    "gbp": "gbp", "sterling": "gbp", "¥": "jpy", "jpy": "jpy", "yen": "jpy", "₹": "inr",
    "inr": "inr", "rupee": "inr", "rupees": "inr", "cad": "cad", "aud": "aud",
    "chf": "chf", "franc": "chf", "francs": "chf", "cny": "cny", "yuan": "cny",
    "rmb": "cny", "mxn": "mxn", "peso": "mxn", "pesos": "mxn", "krona": "sek",
    "kronor": "sek", "sek": "sek", "won": "krw", "krw": "krw", "btc": "btc",
    "bitcoin": "btc",
}  # fmt: skip

_MONTHS: dict[str, int] = {
    "january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4,
    "apr": 4, "may": 5, "june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8,
    "september": 9, "sep": 9, "sept": 9, "october": 10, "oct": 10, "november": 11,
    "nov": 11, "december": 12, "dec": 12,
}  # fmt: skip
#: Month words that are also ordinary words: months only next to a number.
_AMBIGUOUS_MONTHS = frozenset({"may", "march", "mar", "jan", "dec", "sep", "jun", "jul", "aug"})
_WEEKDAYS: dict[str, str] = {
    "monday": "mon", "tuesday": "tue", "wednesday": "wed", "thursday": "thu",
    "friday": "fri", "saturday": "sat", "sunday": "sun", "mondays": "mon",
    "tuesdays": "tue", "wednesdays": "wed", "thursdays": "thu", "fridays": "fri",
    "saturdays": "sat", "sundays": "sun", "weekday": "weekday", "weekdays": "weekday",
    "weekend": "weekend", "weekends": "weekend",
}  # fmt: skip
_RELATIVE: dict[str, str] = {
    "today": "today", "tonight": "today", "tomorrow": "tomorrow", "yesterday": "yesterday",
    "now": "now", "currently": "now", "latest": "now", "current": "now",
}  # fmt: skip

#: Groups of mutually exclusive, answer-determining words: a word of a group on
#: one side and another word of the same group on the other is a swap.
CONTRAST_GROUPS: tuple[frozenset[str], ...] = tuple(
    frozenset(g.split())
    for g in (
        "derivative differentiate integral integrate antiderivative limit",
        "encode encoding decode decoding encrypt encryption decrypt decryption",
        "compress decompress serialize deserialize parse stringify",
        "ascending asc descending desc increasing decreasing",
        "minimum min maximum max smallest largest biggest lowest highest least most",
        "first last",
        "before after",
        "above below over under",
        "upper lower uppercase lowercase",
        "add addition subtract subtraction multiply multiplication divide division",
        "plus minus times",
        "sum product difference quotient",
        "mean average median mode",
        "sin cos tan sine cosine tangent",
        "log ln",
        "sync async synchronous asynchronous",
        "inclusive exclusive",
        "mutable immutable",
        "stable unstable",
        "metric imperial",
        "north south east west",
        "left right",
        "up down",
        "open close",
        "on off",
        "enable disable",
        "lock unlock",
        "start stop",
        "increase decrease raise lower",
        "buy sell",
        "import export",
        "push pop",
        "read write",
        "true false",
        "even odd",
        "prime composite",
        "formal casual informal funny",
        "sad happy",
        "hot cold warm cool",
        "spring summer autumn fall winter",
        "morning afternoon evening night",
        "economy business",
        "indoors outdoors indoor outdoor",
        "vegetarian vegan",
        "like dislike love hate",
        "celsius fahrenheit kelvin",
        "inner outer",
        "union intersection",
        "row column",
        "horizontal vertical",
        "input output",
        "send receive",
        "in out",
        "to from",
        "arrive depart arrival departure",
        "oldest newest",
        "earliest latest",
        "shortest longest",
        "cheapest expensive",
        "rhyme rhymes rhyming",
        "square cube",
        "area perimeter volume circumference",
        "permutation combination",
        "simple compound",
        "definite indefinite",
        "factor expand solve simplify evaluate",
        "recursive iterative",
        "breadth depth",
        "bfs dfs",
        "stack queue",
        "json csv xml yaml",
        "pass fail",
        "yes no",
    )
)
_CONTRAST_OF: dict[str, int] = {w: i for i, g in enumerate(CONTRAST_GROUPS) for w in g}

NEGATIONS = frozenset(
    {"not", "no", "never", "without", "none", "nobody", "nothing", "neither", "nor", "cannot"}
)
WH_WORDS = frozenset({"what", "which", "who", "whom", "whose", "when", "where", "why", "how"})

#: Words that carry no answer-determining content: function words and the
#: generic request verbs people pad a request with. Contrast words (to/from,
#: on/off, not...) are deliberately absent.
FILLER = frozenset(
    """a an the of is are was were be been being am do does did done i me my mine myself
    we us our you your yours it its this that these those there here please can could would
    will shall should may might must let just some any and or so for with at by about as
    than then hey hi hello thanks thank quick question one give tell show get got find help
    want need like know make write create generate implement provide list explain describe
    also really very quite bit little kindly maybe perhaps pretty okay ok oh well actually
    something anything stuff thing things way ways good nice sure again now also too if
    into onto have has had having he she him her his hers they them their theirs whats
    following below above""".split()
) - _CONTRAST_OF.keys() - NEGATIONS - {"now"}

_PROG_LANGS: dict[str, str] = {
    "python": "python", "py": "python", "python3": "python", "javascript": "javascript",
    "js": "javascript", "node": "javascript", "nodejs": "javascript",
    "typescript": "typescript", "ts": "typescript", "java": "java", "kotlin": "kotlin",
    "rust": "rust", "golang": "go", "ruby": "ruby", "php": "php", "swift": "swift",
    "scala": "scala", "sql": "sql", "postgres": "sql", "postgresql": "sql", "mysql": "sql",
    "sqlite": "sql", "bash": "shell", "shell": "shell", "zsh": "shell",
    "powershell": "powershell", "perl": "perl", "haskell": "haskell", "lua": "lua",
    "julia": "julia", "matlab": "matlab", "dart": "dart", "elixir": "elixir",
    "erlang": "erlang", "clojure": "clojure", "ocaml": "ocaml", "fortran": "fortran",
    "cobol": "cobol", "html": "html", "css": "css", "c++": "cpp", "cpp": "cpp",
    "c#": "csharp", "csharp": "csharp", "r": "r", "c": "c", "go": "go",
}  # fmt: skip
#: Single words that name a language only when written as a proper name.
_CASED_PROG_LANGS = frozenset({"r", "c", "go", "node", "ts", "py", "swift", "rust", "ruby", "dart"})
#: Syntax that gives the language away without naming it.
_PROG_SYNTAX: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\bdef \w+\(|\bimport \w+$|\bprint\(|\belif\b|\bself\.", re.M), "python"),
    (re.compile(r"\bfunction \w*\(|=>|\bconst \w+ =|\bconsole\.log\b|\blet \w+ ="), "javascript"),
    (re.compile(r"\bfn \w+\(|\blet mut\b|&mut\b|\bVec<|::new\("), "rust"),
    (re.compile(r"\bfunc \w+\(|\bpackage main\b|:= "), "go"),
    (re.compile(r"\bpublic (static )?(void|class|int)\b|System\.out"), "java"),
    (re.compile(r"#include\s*<|\bstd::|\bint main\("), "cpp"),
    (re.compile(r"\bSELECT\b.+\bFROM\b|\bINSERT INTO\b|\bCREATE TABLE\b", re.I), "sql"),
)

_NAT_LANGS: dict[str, str] = {
    "english": "en", "spanish": "es", "español": "es", "espanol": "es", "castilian": "es",
    "french": "fr", "français": "fr", "francais": "fr", "german": "de", "deutsch": "de",
    "italian": "it", "italiano": "it", "portuguese": "pt", "português": "pt",
    "dutch": "nl", "japanese": "ja", "chinese": "zh", "mandarin": "zh", "cantonese": "yue",
    "korean": "ko", "russian": "ru", "arabic": "ar", "hindi": "hi", "turkish": "tr",
    "polish": "pl", "swedish": "sv", "norwegian": "no", "danish": "da", "finnish": "fi",
    "greek": "el", "hebrew": "he", "thai": "th", "vietnamese": "vi", "indonesian": "id",
    "ukrainian": "uk", "czech": "cs", "romanian": "ro", "hungarian": "hu", "swahili": "sw",
    "tagalog": "tl", "bengali": "bn", "urdu": "ur", "persian": "fa", "farsi": "fa",
    "latin": "la", "irish": "ga", "welsh": "cy", "catalan": "ca",
}  # fmt: skip
#: A few very frequent words per Latin-script language, to tell the text's language.
_LANG_STOPWORDS: dict[str, frozenset[str]] = {
    lang: frozenset(words.split())
    for lang, words in (
        ("en", "the and is are of to what how for with you my it this that where when which who"),
        ("es", "el los las es son y por para con cómo qué cuál una mi del al está hay dónde"),
        ("fr", "le les est sont et pour avec comment quel quelle une je du des au où ce vous"),
        ("de", "der die das ist sind und zu mit wie was für ein eine ich nicht den dem wo"),
        ("it", "il gli è sono di che per come cosa mio della dove quanto perché non"),
        ("pt", "os é são em com como qual uma um meu não do da onde você"),
        ("nl", "het een zijn van dat voor met hoe wat mijn ik niet waar wanneer"),
    )
}
_SCRIPTS: tuple[tuple[str, str], ...] = (
    ("HIRAGANA", "ja"), ("KATAKANA", "ja"), ("CJK", "zh"), ("HANGUL", "ko"),
    ("CYRILLIC", "ru"), ("ARABIC", "ar"), ("DEVANAGARI", "hi"), ("GREEK", "el"),
    ("HEBREW", "he"), ("THAI", "th"), ("BENGALI", "bn"), ("TAMIL", "ta"),
)  # fmt: skip

_STEM_KEEP = frozenset({"this", "is", "was", "has", "does", "its", "us", "as", "yes", "plus"})

# --- tokenisation ------------------------------------------------------------------

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
_QUOTED_RE = re.compile(
    r"(?<!\w)['‘`](?P<s>[^'‘’`\n]{1,200})['’`](?!\w)|[\"“](?P<d>[^\"“”\n]{1,200})[\"”]"
)
_CAMEL_RE = re.compile(r"[a-z][A-Z]")
_OPERATOR_SYMBOLS = frozenset("+-*/^=<>×÷√≤≥%")
_SENTENCE_BREAK = frozenset(".?!:;\n")


@dataclass(frozen=True, slots=True)
class Token:
    """One token: ``kind`` is word, num, time, date, sym or arrow; ``canon`` the
    canonical form used for comparison; ``raw`` the surface text."""

    kind: str
    raw: str
    canon: str
    start: int
    end: int


def normalise_text(text: str) -> str:
    """NFKC, straight quotes and hyphens, no zero-width characters."""
    text = unicodedata.normalize("NFKC", text)
    for src, dst in (("’", "'"), ("‘", "'"), ("–", "-"), ("—", " - "), ("−", "-"), ("\u200b", "")):
        text = text.replace(src, dst)
    return text


def _canon_number(raw: str) -> tuple[str, bool]:
    """``("1200", False)`` for "1,200"; ``("25", True)`` for "25th"."""
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


def tokenize(text: str) -> list[Token]:
    """Canonical tokens of ``text`` in order (see the module docstring)."""
    text = normalise_text(text)
    raw_tokens: list[Token] = []
    for m in _TOKEN_RE.finditer(text):
        kind = m.lastgroup or "sym"
        raw = m.group()
        if kind == "iso":
            raw_tokens.append(Token("date", raw, "D" + raw, m.start(), m.end()))
        elif kind == "time":
            raw_tokens.append(Token("time", raw, _canon_time(raw), m.start(), m.end()))
        elif kind in ("num", "numw"):
            raw_tokens.append(Token("num", raw, raw, m.start(), m.end()))
        elif kind == "word":
            raw_tokens.append(Token("word", raw, raw.lower(), m.start(), m.end()))
        elif kind == "arrow":
            raw_tokens.append(Token("arrow", raw, "->", m.start(), m.end()))
        else:
            raw_tokens.append(Token("sym", raw, raw, m.start(), m.end()))
    return _canonicalise(raw_tokens)


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
            if low.endswith("n't"):
                out.append(Token("word", t.raw, low[:-3] or "not", t.start, t.end))
                out.append(Token("word", t.raw, "not", t.start, t.end))
                i += 1
                continue
            if low.endswith("'s") and len(low) > 2:
                low = low[:-2]  # possessive: colleague's == colleagues' == colleague
            elif low.endswith("'"):
                low = low[:-1]
            low = _ABBREVIATIONS.get(low, low)
            # number words: "twenty five", "one hundred", "twenty-fifth"
            if low in _UNITS_SMALL or low in _TENS or low in _ORDINALS:
                value, ordinal, j = _read_number_words(tokens, i)
                canon = f"{value}th" if ordinal else str(value)
                out.append(Token("num", t.raw, canon, t.start, tokens[j - 1].end))
                i = j
                continue
            if low == "half":
                out.append(Token("num", t.raw, "0.5", t.start, t.end))
                i += 1
                continue
            out.append(Token("word", t.raw, low, t.start, t.end))
        elif t.kind == "sym" and t.raw == "-" and out and i + 1 < n:
            # a hyphen inside a word ("lo-fi", "6-minute") joins nothing: drop it
            prev, nxt = tokens[i - 1], tokens[i + 1]
            if prev.end == t.start and nxt.start == t.end and (
                prev.kind == "word" or nxt.kind == "word"
            ):
                i += 1
                continue
            out.append(t)
        else:
            out.append(t)
        i += 1
    return out


def _read_number_words(tokens: list[Token], i: int) -> tuple[int, bool, int]:
    """Read a run of number words from ``tokens[i]``; return (value, ordinal, next index)."""
    total = 0
    current = 0
    ordinal = False
    j = i
    while j < len(tokens) and tokens[j].kind in ("word", "sym"):
        tok = tokens[j]
        low = tok.canon if tok.kind == "word" else tok.raw
        if tok.kind == "sym":
            # "twenty-five": a hyphen between two number words
            if low == "-" and j + 1 < len(tokens) and j > i and tokens[j + 1].canon in (
                _UNITS_SMALL.keys() | _ORDINALS.keys()
            ):
                j += 1
                continue
            break
        if low == "and" and j > i and j + 1 < len(tokens) and tokens[j + 1].canon in _UNITS_SMALL:
            j += 1
            continue
        if low in _UNITS_SMALL:
            current += _UNITS_SMALL[low]
        elif low in _TENS:
            current += _TENS[low]
        elif low in _ORDINALS:
            current += _ORDINALS[low]
            ordinal = True
            j += 1
            break
        elif low in _SCALES and j > i:
            current = max(current, 1) * _SCALES[low]
            if _SCALES[low] >= 1000:
                total += current
                current = 0
        else:
            break
        j += 1
    return total + current, ordinal, j


def _stem(word: str) -> str:
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


# --- one side ----------------------------------------------------------------------


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
    system_key: str
    tool_names: tuple[str, ...]
    tool_intent: str


def _norm_key(text: str | None) -> str:
    if not text:
        return ""
    return " ".join(t.canon for t in tokenize(text) if t.kind != "sym")


def context_text(request: Request) -> str:
    """System prompt and prior turns as one string (``role: content`` lines)."""
    lines = []
    if request.system_prompt:
        lines.append(f"system: {request.system_prompt}")
    for turn in request.context or ():
        lines.append(f"{turn.get('role', '')}: {turn.get('content', '')}")
    return "\n".join(lines)


def full_text(request: Request) -> str:
    """The whole request as one string: system prompt, prior turns, then the query."""
    ctx = context_text(request)
    return f"{ctx}\nuser: {request.query}" if ctx else request.query


def tool_names(request: Request) -> tuple[str, ...]:
    """Sorted names of the offered tools (``name`` or ``function.name``)."""
    names = []
    for tool in request.tools or ():
        name = tool.get("name")
        fn = tool.get("function")
        if not isinstance(name, str) and isinstance(fn, Mapping):
            name = fn.get("name")
        if isinstance(name, str):
            names.append(name)
    return tuple(sorted(names))


def _tool_words(tool: Mapping[str, Any]) -> tuple[str, set[str]]:
    fn = tool.get("function") if isinstance(tool.get("function"), Mapping) else tool
    assert isinstance(fn, Mapping)
    name = str(fn.get("name", ""))
    words = set(re.split(r"[_\W]+", name.lower()))
    desc = fn.get("description")
    if isinstance(desc, str):
        words |= {_stem(w) for w in re.findall(r"[a-z]+", desc.lower())}
    return name, {_stem(w) for w in words if w and w not in FILLER}


def tool_intent(request: Request, content: Sequence[str]) -> str:
    """The offered tool whose name and description share most content words with
    the query ("" when none shares any); ties go to the first tool in name order."""
    best, best_score = "", 0
    words = set(content)
    tools = sorted(
        ((name, vocab) for name, vocab in map(_tool_words, request.tools or ())),
        key=lambda nv: nv[0],
    )
    for name, vocab in tools:
        score = len(words & vocab)
        if score > best_score:
            best, best_score = name, score
    return best


_MATH_NEIGHBOURS = frozenset("()^=")
_QUOTE_OPENERS = frozenset("'\"“‘(`")


def _is_math_operand(tok: Token | None) -> bool:
    """A number written in digits, a single letter, or a bracket."""
    if tok is None:
        return False
    if tok.kind == "num":
        return tok.raw[:1].isdigit()
    if tok.kind == "word":
        return len(tok.raw) == 1
    return tok.raw in "()"


def _operator_indices(toks: Sequence[Token]) -> set[int]:
    """Indices of tokens that are math operators. ``-``, ``/``, ``*`` only count
    between two operands ("x - 3", "6/8"), not as a dash ("$50 - what's") or in
    "$500/night"."""
    out: set[int] = set()
    for k, t in enumerate(toks):
        if t.kind != "sym" or t.raw not in _OPERATOR_SYMBOLS or t.raw == "%":
            continue
        if t.raw in "-/*":
            prev = toks[k - 1] if k > 0 else None
            nxt = toks[k + 1] if k + 1 < len(toks) else None
            if not (_is_math_operand(prev) and _is_math_operand(nxt)):
                continue
        out.add(k)
    return out


def _dates(toks: Sequence[Token]) -> tuple[list[str], set[int]]:
    """Calendar dates: a month next to a day number ("July 3", "3rd of July" is not
    handled) as ``Dmm-dd``, a month alone as ``Dmm``; plus the indices used."""
    dates: list[str] = []
    used: set[int] = set()
    for k, t in enumerate(toks):
        if t.kind == "date":
            dates.append(t.canon)
            used.add(k)
            continue
        if t.kind != "word" or t.canon not in _MONTHS:
            continue
        month = _MONTHS[t.canon]
        found = None
        for idx in (k + 1, k - 1):
            if 0 <= idx < len(toks) and toks[idx].kind == "num" and toks[idx].raw[:1].isdigit():
                value, _ = _canon_number(toks[idx].raw)
                if value.isdigit() and 1 <= int(value) <= 31 and idx not in used:
                    found = (int(value), idx)
                    break
        if found is not None:
            dates.append(f"D{month:02d}-{found[0]:02d}")
            used.update({k, found[1]})
        elif t.canon not in _AMBIGUOUS_MONTHS or (t.raw[:1].isupper() and k > 0):
            dates.append(f"D{month:02d}")
            used.add(k)
    return dates, used


def analyze(request: Request | str) -> Side:
    """Analyse one request (pure; the same request always gives the same Side)."""
    req = Request.of(request)
    query = req.query
    toks = tokenize(query)
    norm = normalise_text(query)
    op_idx = _operator_indices(toks)
    dates, in_date = _dates(toks)

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

    for k, t in enumerate(toks):
        prev = toks[k - 1] if k > 0 else None
        nxt = toks[k + 1] if k + 1 < len(toks) else None
        if t.kind in ("sym", "arrow", "date"):
            if t.raw == "%":
                units.append("percent")
            elif t.raw in "$€£¥₹" and t.kind == "sym":
                currencies.append(_CURRENCIES[t.raw])
            sentence_start = t.raw in _SENTENCE_BREAK or t.raw in _QUOTE_OPENERS or (
                sentence_start and t.kind == "sym"
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
            value, ordinal = _canon_number(t.raw if t.raw[:1].isdigit() else t.canon)
            if k not in in_date:
                numbers.append(value)
                if ordinal:
                    ordinals.append(value)
            canon = value + ("th" if ordinal else "")
            words.append(canon)
            content.append(canon)
            surface.append(t.raw.lower())
            continue
        # a word
        low, raw = t.canon, t.raw
        words.append(low)
        after_number = prev is not None and prev.kind == "num" and prev.raw[:1].isdigit()
        after_degree = prev is not None and prev.raw == "°"
        if low in _UNITS:
            units.append(_UNITS[low])
        elif low in _UNIT_LETTERS and low != "k" and (after_number or after_degree):
            units.append(_UNIT_LETTERS[low])
        elif low == "k" and after_number and numbers and prev is not None and prev.end == t.start:
            numbers[-1] = _canon_number(str(float(numbers[-1]) * 1000))[0]
        if low in _CURRENCIES:
            currencies.append(_CURRENCIES[low])
        if low in _WEEKDAYS:
            weekdays.append(_WEEKDAYS[low])
        if low in _RELATIVE:
            relative.append(_RELATIVE[low])
        if low in _NAT_LANGS:
            nat.append(_NAT_LANGS[low])
        if low in _PROG_LANGS and (low not in _CASED_PROG_LANGS or _cased_lang(raw, low)):
            prog.append(_PROG_LANGS[low])
        if low in NEGATIONS:
            negations += 1
        if low in WH_WORDS:
            wh.append(low)
        # single-letter variables: next to an operator or bracket, glued to a
        # coefficient ("3x"), or named ("solve for y"); "a"/"I" only in the first two
        if len(raw) == 1 and raw.isalpha():
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
        # identifiers: snake_case, camelCase, called names f(...), letter-digit codes
        called = norm[t.end : t.end + 1] == "("
        if (
            "_" in raw
            or _CAMEL_RE.search(raw)
            or (called and len(raw) > 1)
            or (len(raw) >= 3 and re.search(r"\d", raw) and re.search(r"[^\W\d_]", raw))
        ):
            identifiers.append(raw)
        # capitalised tokens that are not merely the first word of a sentence
        if raw[:1].isupper() and (not sentence_start_here or (raw.isupper() and len(raw) >= 2)):
            if low not in FILLER and low not in _CURRENCIES and low not in WH_WORDS:
                entities.append(low)
        if low not in FILLER:
            content.append(_stem(low))
            surface.append(low)

    for pattern, lang in _PROG_SYNTAX:
        if pattern.search(query) and lang not in prog:
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
        roles=_roles(toks),
        char3=char3,
        n_chars=len(query),
        context_key=_norm_key(context_only(req)),
        context_turns=len(req.context or ()),
        system_key=_norm_key(req.system_prompt),
        tool_names=tool_names(req),
        tool_intent=tool_intent(req, content),
    )


def context_only(request: Request) -> str:
    """The prior turns alone, one ``role: content`` line each."""
    return "\n".join(f"{t.get('role', '')}: {t.get('content', '')}" for t in request.context or ())


def _cased_lang(raw: str, low: str) -> bool:
    # "Go", "R", "C", "Rust" name a language; "go", "rust" are ordinary words
    if low in ("r", "c"):
        return raw.isupper()
    return raw[:1].isupper()


def detect_language(text: str) -> str:
    """A coarse language tag of ``text``: a non-Latin script when at least 30% of
    the letters are in it, else the Latin-script language whose distinctive
    frequent words occur most ("en" when none does or on a tie with English)."""
    letters = [ch for ch in text if ch.isalpha()]
    counts: Counter[str] = Counter()
    for ch in letters:
        if ord(ch) > 0x24F:
            name = unicodedata.name(ch, "")
            for key, lang in _SCRIPTS:
                if key in name:
                    counts[lang] += 1
                    break
    if counts:
        lang, n = max(sorted(counts.items()), key=lambda kv: kv[1])
        if n >= 0.3 * len(letters):
            return lang
    words = re.findall(r"[^\W\d_]+", text.lower())
    best, best_n = "en", sum(1 for w in words if w in _LANG_STOPWORDS["en"])
    for lang in sorted(_LANG_STOPWORDS):
        n = sum(1 for w in words if w in _LANG_STOPWORDS[lang])
        if n > best_n:
            best, best_n = lang, n
    return best


def _roles(toks: Sequence[Token]) -> tuple[tuple[str, str], ...]:
    """(token, role) pairs: what comes after "from" is a source, after "to"/"into"/an
    arrow a destination; in "X to Y" and "X -> Y" the X is the source."""
    out: list[tuple[str, str]] = []
    items = [t for t in toks if t.kind != "sym"]

    def key(t: Token) -> str:
        if t.kind == "word":
            return _stem(t.canon)
        if t.kind == "num":
            return _canon_number(t.raw if t.raw[:1].isdigit() else t.canon)[0]
        return t.canon

    def next_content(k: int) -> Token | None:
        for t in items[k + 1 : k + 4]:
            if t.kind != "word" or t.canon not in FILLER:
                return t
        return None

    for k, t in enumerate(items):
        low = t.canon
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


# --- comparing two sides -------------------------------------------------------------


def _edit_distance(a: str, b: str, limit: int) -> int:
    """Damerau-Levenshtein (optimal string alignment) distance, capped at ``limit + 1``."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        if min(cur) > limit:
            return limit + 1
        prev2, prev = prev, cur
    return prev[-1]


def _typo_pair(x: str, y: str) -> bool:
    """Two differing words that are one typo apart (never numbers, codes or
    contrast words, whose small edits change the answer)."""
    if not (x.isalpha() and y.isalpha()) or x in _CONTRAST_OF or y in _CONTRAST_OF:
        return False
    shortest = min(len(x), len(y))
    if shortest < 4 or x[0] != y[0]:
        return False
    limit = 2 if shortest >= 8 else 1
    return _edit_distance(x, y, limit) <= limit


@dataclass(frozen=True, slots=True)
class Diff:
    """Content tokens on one side only (after plural stemming and typo matching),
    in order of appearance, with their surface forms; ``typos`` counts pairs
    matched as one-typo variants; ``joined`` pairs split/joined words
    ("home town" vs "hometown")."""

    a_only: tuple[str, ...]
    b_only: tuple[str, ...]
    a_surface: tuple[str, ...]
    b_surface: tuple[str, ...]
    typos: int
    joined: int


def _unglue(idx: list[int], side: Side, other: Side, other_idx: list[int]) -> int:
    """Match split words on ``side`` with a joined word on ``other`` ("home town" vs
    "hometown"), removing both from the index lists; returns the matches."""
    found = 0
    for i in list(idx):
        if i not in idx or i + 1 not in idx:
            continue
        glued = side.content[i] + side.content[i + 1]
        j = next((j for j in other_idx if other.content[j] in (glued, _stem(glued))), None)
        if j is not None:
            idx.remove(i)
            idx.remove(i + 1)
            other_idx.remove(j)
            found += 1
    return found


def content_diff(a: Side, b: Side) -> Diff:
    """The symmetric difference of the two sides' content tokens."""
    set_a, set_b = set(a.content), set(b.content)
    a_idx = [i for i, w in enumerate(a.content) if w not in set_b]
    b_idx = [i for i, w in enumerate(b.content) if w not in set_a]
    joined = _unglue(a_idx, a, b, b_idx) + _unglue(b_idx, b, a, a_idx)
    typos = 0
    keep_a: list[int] = []
    for i in a_idx:
        match = next((j for j in b_idx if _typo_pair(a.content[i], b.content[j])), None)
        if match is None:
            keep_a.append(i)
        else:
            b_idx.remove(match)
            typos += 1
    return Diff(
        a_only=tuple(a.content[i] for i in keep_a),
        b_only=tuple(b.content[j] for j in b_idx),
        a_surface=tuple(a.surface[i] for i in keep_a),
        b_surface=tuple(b.surface[j] for j in b_idx),
        typos=typos,
        joined=joined,
    )


def diff_spans(a: Side, b: Side) -> tuple[str, str]:
    """The differing spans to embed: each side's content tokens absent from the
    other side, in order, joined by spaces ("" when nothing differs)."""
    d = content_diff(a, b)
    return " ".join(d.a_surface), " ".join(d.b_surface)


def _multiset_diff(x: Sequence[str], y: Sequence[str]) -> int:
    """Size of the multiset symmetric difference of ``x`` and ``y``."""
    cx, cy = Counter(x), Counter(y)
    return sum(((cx - cy) + (cy - cx)).values())


def _flag(value: bool) -> float:
    return 1.0 if value else 0.0


def _jaccard(x: set[str] | frozenset[str], y: set[str] | frozenset[str]) -> float:
    union = len(x | y)
    return len(x & y) / union if union else 1.0


Features = dict[str, float]


def number_features(a: Side, b: Side, d: Diff) -> Features:
    """Numbers and operands: how many numbers differ (as multisets), whether the
    same numbers appear in another order (operand swap), ordinals."""
    n_diff = _multiset_diff(a.numbers, b.numbers)
    same_set = Counter(a.numbers) == Counter(b.numbers)
    return {
        "num_diff": float(n_diff),
        "num_any_diff": _flag(n_diff > 0),
        "num_order_swap": _flag(same_set and a.numbers != b.numbers),
        "num_count": float(max(len(a.numbers), len(b.numbers))),
        "ordinal_diff": _flag(Counter(a.ordinals) != Counter(b.ordinals)),
    }


def operator_features(a: Side, b: Side, d: Diff) -> Features:
    """Math operators and answer-determining function words (derivative/integral,
    encode/decode, asc/desc, not/never...): swaps within a contrast group, contrast
    words present on one side only, negation count difference."""
    groups_a = {_CONTRAST_OF[w] for w in d.a_only if w in _CONTRAST_OF}
    groups_b = {_CONTRAST_OF[w] for w in d.b_only if w in _CONTRAST_OF}
    # "to/from" and "in/out" appear in most requests: a swap there is an order
    # question (see order_features), so they only count one-sided here
    swaps = len(groups_a & groups_b)
    one_sided = len(groups_a ^ groups_b)
    return {
        "op_diff": float(_multiset_diff(a.operators, b.operators)),
        "op_count": float(max(len(a.operators), len(b.operators))),
        "contrast_swap": float(swaps),
        "contrast_one_sided": float(one_sided),
        "neg_diff": float(abs(a.negations - b.negations)),
        "wh_diff": _flag(set(a.wh_words) != set(b.wh_words)),
    }


def identifier_features(a: Side, b: Side, d: Diff) -> Features:
    """Variable names (single letters in math) and code identifiers
    (snake_case, camelCase, called names, letter-digit codes), case-sensitive."""
    var_diff = _multiset_diff(a.variables, b.variables)
    id_diff = _multiset_diff(a.identifiers, b.identifiers)
    return {
        "var_diff": float(var_diff),
        "var_rename": _flag(
            var_diff > 0 and len(a.variables) == len(b.variables) and len(a.variables) > 0
        ),
        "var_count": float(max(len(a.variables), len(b.variables))),
        "ident_diff": float(id_diff),
        "ident_count": float(max(len(a.identifiers), len(b.identifiers))),
    }


def entity_features(a: Side, b: Side, d: Diff) -> Features:
    """Capitalised tokens (names, places, acronyms) missing from the other side
    (case-insensitive, so a lower-cased retype is not a change)."""
    tok_a = set(a.tokens) | set(a.content)
    tok_b = set(b.tokens) | set(b.content)
    miss_a = [e for e in a.entities if e not in tok_b and _stem(e) not in tok_b]
    miss_b = [e for e in b.entities if e not in tok_a and _stem(e) not in tok_a]
    return {
        "entity_diff": float(len(miss_a) + len(miss_b)),
        "entity_both_changed": _flag(bool(miss_a) and bool(miss_b)),
        "entity_count": float(max(len(a.entities), len(b.entities))),
        "quoted_diff": _flag(Counter(a.quoted) != Counter(b.quoted)),
    }


def order_features(a: Side, b: Side, d: Diff) -> Features:
    """Order of aligned tokens: the share of pairs of shared tokens that appear in
    opposite order, and direction swaps (a token that is a source on one side and a
    destination on the other: NYC->FL vs FL->NYC)."""
    ca, cb = Counter(a.content), Counter(b.content)
    shared = [w for w in a.content if ca[w] == 1 and cb.get(w, 0) == 1]
    pos_b = {w: i for i, w in enumerate(b.content) if cb[w] == 1}
    seq = [pos_b[w] for w in shared]
    pairs = len(seq) * (len(seq) - 1) // 2
    inversions = sum(1 for i in range(len(seq)) for j in range(i + 1, len(seq)) if seq[i] > seq[j])
    roles_a: dict[str, set[str]] = {}
    for tok, role in a.roles:
        roles_a.setdefault(tok, set()).add(role)
    swapped = 0
    for tok, role in b.roles:
        other = roles_a.get(tok)
        if other and role not in other:
            swapped += 1
    return {
        "order_inversion": inversions / pairs if pairs else 0.0,
        "order_inversions": float(inversions),
        "direction_swap": float(swapped),
    }


def language_features(a: Side, b: Side, d: Diff) -> Features:
    """Natural language of the text and languages named in it; programming
    languages named or recognisable by syntax."""
    pa, pb = set(a.prog_langs), set(b.prog_langs)
    na, nb = set(a.nat_langs), set(b.nat_langs)
    return {
        "text_lang_diff": _flag(a.text_lang != b.text_lang),
        "nat_lang_conflict": _flag(bool(na) and bool(nb) and na != nb),
        "nat_lang_one_sided": _flag(bool(na) != bool(nb)),
        "prog_lang_conflict": _flag(bool(pa) and bool(pb) and pa != pb),
        "prog_lang_one_sided": _flag(bool(pa) != bool(pb)),
    }


def unit_features(a: Side, b: Side, d: Diff) -> Features:
    """Units and currencies (canonical names: km = kilometres, $ = USD)."""
    return {
        "unit_diff": _flag(set(a.units) != set(b.units)),
        "currency_diff": _flag(set(a.currencies) != set(b.currencies)),
    }


def _times_match(x: Sequence[str], y: Sequence[str]) -> bool:
    """Same times, where ``T~6:30`` (no am/pm) matches T06:30 and T18:30."""
    if len(x) != len(y):
        return False
    left = list(y)
    for t in x:
        found = next((u for u in left if _time_eq(t, u)), None)
        if found is None:
            return False
        left.remove(found)
    return True


def _time_eq(t: str, u: str) -> bool:
    if t == u:
        return True

    def options(s: str) -> set[str]:
        if s.startswith("T~"):
            h, m = s[2:].split(":")
            return {f"T{int(h):02d}:{m}", f"T{(int(h) % 12) + 12:02d}:{m}"}
        return {s}

    return bool(options(t) & options(u))


def date_features(a: Side, b: Side, d: Diff) -> Features:
    """Dates, weekdays, clock times and relative days (today/tomorrow/now)."""
    return {
        "date_diff": _flag(Counter(a.dates) != Counter(b.dates)),
        "weekday_diff": _flag(set(a.weekdays) != set(b.weekdays)),
        "time_diff": _flag(not _times_match(a.times, b.times)),
        "relative_diff": _flag(set(a.relative) != set(b.relative)),
        "date_any": _flag(bool(a.dates or b.dates or a.times or b.times or a.relative)),
    }


def context_features(a: Side, b: Side, d: Diff) -> Features:
    """Prior turns and system prompt: equal or not, present or not."""
    return {
        "ctx_equal": _flag(a.context_key == b.context_key),
        "ctx_present": _flag(bool(a.context_key or b.context_key)),
        "ctx_turns_diff": float(abs(a.context_turns - b.context_turns)),
        "sys_equal": _flag(a.system_key == b.system_key),
        "sys_present": _flag(bool(a.system_key or b.system_key)),
    }


def tool_features(a: Side, b: Side, d: Diff) -> Features:
    """Tool-call canonical forms: the offered tool sets and the tool each query
    most plausibly calls (its words against the tools' names and descriptions)."""
    ta, tb = set(a.tool_names), set(b.tool_names)
    return {
        "tools_present": _flag(bool(ta or tb)),
        "tools_equal": _flag(ta == tb),
        "tools_jaccard": _jaccard(ta, tb),
        "tool_intent_diff": _flag(a.tool_intent != b.tool_intent),
    }


def lexical_features(a: Side, b: Side, d: Diff) -> Features:
    """Overlap: char 3-gram and token Jaccard, containment, length ratios, the
    sequence-matcher ratio, and the size and kind of the content difference."""
    sa, sb = set(a.content), set(b.content)
    inter = len(sa & sb)
    smaller = min(len(sa), len(sb))
    ratio = difflib.SequenceMatcher(None, a.tokens, b.tokens, autojunk=False).ratio()
    n_only = len(d.a_only) + len(d.b_only)
    longest = max(a.n_chars, b.n_chars)
    longest_toks = max(len(a.tokens), len(b.tokens))
    return {
        "char3_jaccard": _jaccard(a.char3, b.char3),
        "tok_jaccard": _jaccard(sa, sb),
        "containment": inter / smaller if smaller else 1.0,
        "len_ratio": min(a.n_chars, b.n_chars) / longest if longest else 1.0,
        "tok_len_ratio": min(len(a.tokens), len(b.tokens)) / longest_toks if longest_toks else 1.0,
        "seq_ratio": ratio,
        "diff_a": float(len(d.a_only)),
        "diff_b": float(len(d.b_only)),
        "diff_total": float(n_only),
        "diff_one_sided": _flag((len(d.a_only) == 0) != (len(d.b_only) == 0)),
        "diff_share": n_only / max(len(a.content) + len(b.content), 1),
        "typos": float(d.typos + d.joined),
        "same_words": _flag(a.text == b.text),
        "n_tokens": float(longest_toks),
    }


Extractor = Callable[[Side, Side, Diff], Features]

#: Every extractor, in feature-vector order.
EXTRACTORS: tuple[Extractor, ...] = (
    number_features,
    operator_features,
    identifier_features,
    entity_features,
    order_features,
    language_features,
    unit_features,
    date_features,
    context_features,
    tool_features,
    lexical_features,
)

#: The cosines the cache computes with the embedding model.
EMBEDDING_FEATURES: tuple[str, ...] = ("cos_query", "cos_full", "cos_diff")


def _names() -> tuple[str, ...]:
    probe = analyze("probe")
    d = content_diff(probe, probe)
    names: list[str] = list(EMBEDDING_FEATURES)
    for ex in EXTRACTORS:
        names.extend(ex(probe, probe, d))
    return tuple(names)


#: The verifier's input columns, in order.
FEATURE_NAMES: tuple[str, ...] = _names()


def pair_features(
    a: Side, b: Side, *, cos_query: float, cos_full: float, cos_diff: float
) -> tuple[float, ...]:
    """The feature vector of a pair, in :data:`FEATURE_NAMES` order.

    ``cos_query``: cosine of the two queries' embeddings; ``cos_full``: of the whole
    requests (system prompt and prior turns included; equal to ``cos_query`` when
    neither has any); ``cos_diff``: of the two differing spans (1.0 when nothing
    differs, -1.0 when only one side has a differing span).
    """
    d = content_diff(a, b)
    out = [float(cos_query), float(cos_full), float(cos_diff)]
    for ex in EXTRACTORS:
        out.extend(ex(a, b, d).values())
    return tuple(out)


def feature_dict(values: Sequence[float]) -> dict[str, float]:
    """A feature vector as ``{name: value}`` (for reports and tests)."""
    if len(values) != len(FEATURE_NAMES):
        raise ValueError(f"expected {len(FEATURE_NAMES)} features, got {len(values)}")
    return dict(zip(FEATURE_NAMES, values, strict=True))
