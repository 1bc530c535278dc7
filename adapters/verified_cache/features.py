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

The embedding cosines (queries, the two sides of a short substitution, prior
turns) are computed by the cache (they need the model) and passed in; this
module only says which spans differ (:func:`substitution_spans`).

The rule behind every extractor: if the answer will contain a token from the
prompt, that token is answer-determining, so the features describe *which
kinds* of tokens differ (a number, a variable, a direction, a language...), not
how the wording looks: lengths, raw overlap counts and word order describe a
template's style and do not carry over to requests people write. Each feature
has a direction (:func:`direction`): similarities may only raise P(HIT),
differences only lower it.
"""

from __future__ import annotations

import difflib
import functools
import json
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cacheeval.schema import Request

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

#: Contracted endings: "long'll" -> "long will".
_SUFFIXES: dict[str, str] = {"'ll": "will", "'re": "are", "'ve": "have", "'d": "would", "'m": "am"}

#: Informal spellings a user types for a common word.
_ABBREVIATIONS: dict[str, str] = {
    "em": "them", "shld": "should", "wk": "week", "wks": "weeks", "cmd": "command",
    "msg": "message",
    "pic": "picture", "pics": "pictures", "tho": "though",
    "u": "you", "ur": "your", "r": "are", "pls": "please", "plz": "please",
    "thx": "thanks", "bday": "birthday", "yr": "year", "yrs": "year", "abt": "about",
    "w": "with", "b4": "before", "tmrw": "tomorrow", "tmr": "tomorrow", "tonite": "tonight",
    "approx": "approximately", "info": "information", "govt": "government",
    "neighbour": "neighbor", "neighbours": "neighbor", "neighbourhood": "neighborhood",
    "colour": "color", "favourite": "favorite", "centre": "center", "theatre": "theater",
    "organise": "organize", "realise": "realize", "apologise": "apologize",
    "programme": "program", "traveller": "traveler", "café": "cafe", "insta": "instagram",
    "func": "function",
}  # fmt: skip

#: Multi-word names and their common abbreviations, one canonical token each
#: ("United States" == "US" == "U.S."; "World War I" == "WW1" == "First World War").
#: Matched on lower-cased surface tokens before number words are read.
_PHRASES: dict[tuple[str, ...], str] = {
    tuple(phrase.split()): canon
    for canon, phrases in (
        ("usa", "united states of america|united states|usa"),
        ("uk", "united kingdom|uk"),
        ("uae", "united arab emirates|uae"),
        ("ussr", "soviet union|ussr"),
        ("ww1", "world war i|world war 1|world war one|first world war|ww1|wwi|ww i"),
        ("ww2", "world war ii|world war 2|world war two|second world war|ww2|wwii|ww ii"),
        ("un", "united nations"),
        ("eu", "european union"),
        ("nyc", "new york city"),
        ("ai", "artificial intelligence"),
        ("percent", "per cent"),
    )
    for phrase in phrases.split("|")
}
_PHRASE_FIRST = frozenset(k[0] for k in _PHRASES) | {"us"}
_PHRASE_MAX = max(len(k) for k in _PHRASES)
_PHRASE_CANON = frozenset(_PHRASES.values())
#: Words before which a lower-case "us" is the pronoun, not the country.
_US_PRONOUN_BEFORE = frozenset(
    "of for tell to from with let give show help join ask among both all send told".split()
)

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
    "percentage": "percent",
    # the same units in German, French, Spanish, Italian, Portuguese and Dutch
    # (accents folded: "kilómetro" is read as "kilometro")
    "meile": "mile", "meilen": "mile", "milla": "mile", "millas": "mile",
    "miglio": "mile", "miglia": "mile", "milha": "mile", "milhas": "mile", "mijl": "mile",
    "kilometro": "km", "kilometros": "km", "chilometro": "km", "chilometri": "km",
    "quilometro": "km", "quilometros": "km", "metros": "meter", "metri": "meter",
    "zentimeter": "cm", "centimetro": "cm", "centimetros": "cm", "centimetri": "cm",
    "gramm": "g", "gramme": "g", "grammes": "g", "gramo": "g", "gramos": "g",
    "grammo": "g", "grammi": "g", "grama": "g", "gramas": "g",
    "kilogramm": "kg", "kilogramme": "kg", "kilogrammes": "kg", "kilogramo": "kg",
    "kilogramos": "kg", "chilogrammo": "kg", "chilogrammi": "kg", "quilograma": "kg",
    "quilogramas": "kg", "litro": "l", "litros": "l", "litri": "l", "pfund": "lb",
    "libras": "lb", "pulgada": "inch", "pulgadas": "inch", "stunde": "hour",
    "stunden": "hour", "heure": "hour", "heures": "hour", "hora": "hour", "horas": "hour",
    "minuten": "minute", "minuto": "minute", "minutos": "minute", "minuti": "minute",
    "sekunde": "second", "sekunden": "second", "seconde": "second",
    "secondes": "second", "segundos": "second", "secondi": "second",
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
#: one side and another word of the same group on the other is a swap, unless
#: the two are synonyms (written ``a/b``: "largest/biggest", "effect/impact").
_CONTRAST_SPECS: tuple[str, ...] = (
    "derivative/differentiate/differentiation integral/integrate/antiderivative limit",
    "encode encoding decode decoding encrypt encryption decrypt decryption",
    "compress decompress serialize deserialize parse stringify",
    "ascending/asc/increasing descending/desc/decreasing",
    "minimum/min/smallest/lowest/least maximum/max/largest/biggest/highest/most/greatest",
    "big/large/大/grande/grand/groß/gross small/tiny/小/pequeño/pequeno/petit/klein/piccolo",
    "mayor/más/mas/plus/mehr/più/piu menor/menos/moins/weniger/meno",
    "first last",
    "before after",
    "above below over under",
    "upper/uppercase lower/lowercase",
    "add/addition subtract/subtraction multiply/multiplication divide/division",
    "plus minus times",
    "sum product difference quotient",
    "mean/average median mode",
    "sin/sine cos/cosine tan/tangent",
    "log ln",
    "sync/synchronous async/asynchronous",
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
    "true false",
    "even odd",
    "prime composite",
    "formal casual/informal funny",
    "sad happy",
    "hot cold warm cool",
    "spring summer autumn/fall winter",
    "morning afternoon evening night",
    "economy business",
    "indoors/indoor outdoors/outdoor",
    "vegetarian vegan",
    "love hate",
    "celsius fahrenheit kelvin",
    "inner outer",
    "union intersection",
    "row column",
    "horizontal vertical",
    "input output",
    "send receive",
    "in out",
    "to from",
    "arrive/arrival depart/departure",
    "oldest newest",
    "earliest latest",
    "shortest longest",
    "cheapest expensive",
    "rhyme/rhymes/rhyming",
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
    # asking why something happens vs what follows from it
    "cause/causing/caused effect/consequence/impact",
)
CONTRAST_GROUPS: tuple[frozenset[str], ...] = tuple(
    frozenset(g.replace("/", " ").split()) for g in _CONTRAST_SPECS
)
#: Each contrast word's synonym class (its first spelling in the group).
_CONTRAST_CLASS: dict[str, str] = {
    w: alt.split("/")[0] for g in _CONTRAST_SPECS for alt in g.split() for w in alt.split("/")
}
_CONTRAST_OF: dict[str, int] = {w: i for i, g in enumerate(CONTRAST_GROUPS) for w in g}

NEGATIONS = frozenset(
    {"not", "no", "never", "without", "none", "nobody", "nothing", "neither", "nor", "cannot"}
)
WH_WORDS = frozenset({"what", "which", "who", "whom", "whose", "when", "where", "why", "how"})
#: Question words that do not name the kind of answer (not content tokens).
_GENERIC_WH = frozenset({"what", "which"})

#: Words that carry no answer-determining content: function words and the
#: generic request verbs people pad a request with. Contrast words (to/from,
#: on/off, not...) are deliberately absent.
FILLER = (
    frozenset(
        """a an the of is are was were be been being am do does did done i me my mine myself
    we us our you your yours it its this that these those there here please can could would
    will shall should may might must let just some any and or so for with at by about as
    than then hey hi hello thanks thank quick question one give tell show get got find help
    want need like know make write create generate implement provide list explain describe
    also really very quite bit little kindly maybe perhaps pretty okay ok oh well actually
    something anything stuff thing things way ways good nice sure again also too if
    into onto have has had having he she him her his hers they them their theirs whats
    following below above ugh oh hmm um uh wow yo hiya heya dear btw fyi lol ah ha haha hah
    yeah yep yup okay furthermore moreover anyway anyways besides basically honestly
    seriously frankly convert compute calculate""".split()
    )
    - NEGATIONS
)

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
#: Other spellings of one programming language (dialects such as MySQL vs
#: PostgreSQL stay distinct: they change the answer).
_PROG_ALIASES: dict[str, str] = {
    "js": "javascript", "nodejs": "node", "ts": "typescript", "py": "python",
    "python3": "python", "golang": "go", "postgres": "postgresql", "cpp": "c++",
    "csharp": "c#",
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
        (
            "en",
            "the and is are of to what how for with you my it this that where when which who "
            "why do does did can from many much your have",
        ),
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

#: Prepositions kept out of the content tokens (their swaps are seen by the
#: contrast and order features, which read every token).
_PREPOSITIONS = frozenset({"on", "in", "at", "to", "from", "into", "onto", "of", "per", "via"})
_DEGREE_WORDS = frozenset({"degree", "degrees"})
_BE_VERBS = frozenset({"is", "are", "was", "were"})
#: Math function names: "ln(20)" is "ln 20", not a call of a code identifier.
_MATH_FUNCTIONS = frozenset("ln log lg exp sqrt sin cos tan abs floor ceil".split())
#: Unit words that are also ordinary words ("set foot on"): units only after a number.
_UNITS_AFTER_NUMBER = frozenset(
    {"foot", "feet", "ft", "yard", "yards", "min", "mins", "sec", "secs", "mi", "pint", "pints"}
    | {"quart", "quarts", "cup", "cups", "pound", "pounds", "degree", "degrees"}
)

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
#: Han, kana and Hangul: scripts written without spaces between words.
_CJK_RE = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]")
_CJK_SPLIT_RE = re.compile(
    r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]|\d+|[^\W\d_]+"
)
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


_SUPERSCRIPTS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹", "0123456789")


def normalise_text(text: str) -> str:
    """Superscript powers as ``^n``, NFKC, straight quotes and hyphens, "π" as "pi",
    no zero-width characters."""
    text = re.sub(r"[⁰¹²³⁴⁵⁶⁷⁸⁹]+", lambda m: "^" + m.group().translate(_SUPERSCRIPTS), text)
    text = unicodedata.normalize("NFKC", text).replace("π", " pi ")
    text = re.sub(r"\bw/o\b", "without", text, flags=re.IGNORECASE)
    text = re.sub(r"\bw/(?=\s)", "with", text, flags=re.IGNORECASE)
    for src, dst in (("’", "'"), ("‘", "'"), ("–", "-"), ("—", " - "), ("−", "-"), ("\u200b", "")):
        text = text.replace(src, dst)
    return text


_CODE_FENCE_RE = re.compile(r"```.*?(?:```|$)", re.S)
#: "U.S." / "U.K." as one word.
_DOTTED_ABBREV_RE = re.compile(r"\b([UE])\.\s?([SKAU])\.(?:\s?A\.)?")
#: "x**2" is "x^2"; "5*x" (a number times a single letter) is "5x".
_POWER_RE = re.compile(r"\*\*")
#: "log10(x)", "log_2 x", "log base 2 of x": one notation, "log base 2 x".
_LOG_BASE_RE = re.compile(r"\blog_?(\d+)(?=\s*\(|\s+\d)|\blog_\{(\d+)\}")
_COEFF_RE = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s*\*\s*([A-Za-z])(?![\w(])")


def _notation(text: str) -> str:
    """Math and abbreviation notation under one spelling, outside code blocks only
    (in code ``**`` and ``^`` differ): ``**`` -> ``^``, ``5*x`` -> ``5x``, "U.S." ->
    "US". Applied after :func:`normalise_text` by the tokenizer."""
    if "." not in text and "*" not in text and "log" not in text:
        return text

    def prose(part: str) -> str:
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
        if t.kind == "word" and t.canon in _PHRASE_FIRST:
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
            if low == "one" and not _counts_one(tokens, i):
                out.append(Token("word", t.raw, "one", t.start, t.end))
                i += 1
                continue
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
    return out


def _counts_one(tokens: list[Token], i: int) -> bool:
    """Whether "one" at ``tokens[i]`` is the number 1 ("one hour", "twenty one") rather
    than a pronoun ("quick one", "one of those", "this one")."""
    prev = tokens[i - 1].raw.lower() if i > 0 else ""
    if prev in ("this", "that", "which", "the", "each", "every", "any", "no", "quick", "a"):
        return False
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
            if (
                low == "-"
                and j + 1 < len(tokens)
                and j > i
                and tokens[j + 1].canon in (_UNITS_SMALL.keys() | _ORDINALS.keys())
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
            # "nineteen eighty-four", "twenty twenty": a year read as two pairs
            current = current * 100 + _TENS[low] if 10 <= current <= 99 else current + _TENS[low]
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


@functools.lru_cache(maxsize=1 << 16)
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
    history: Side | None  # the prior turns analysed like a query (None: no turns)
    system_key: str
    tool_names: tuple[str, ...]
    tool_intent: str
    tool_defs: tuple[tuple[str, str], ...]  # (name, canonical JSON) of each offered tool


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


def tool_defs(request: Request) -> tuple[tuple[str, str], ...]:
    """(name, canonical JSON) of each offered tool, sorted by name: two requests
    offer the same tool only when the whole definition (schema included) is equal."""
    out = []
    for tool in request.tools or ():
        fn = tool.get("function") if isinstance(tool.get("function"), Mapping) else tool
        assert isinstance(fn, Mapping)
        out.append((str(fn.get("name", "")), json.dumps(tool, sort_keys=True, default=str)))
    return tuple(sorted(out))


def _schema_words(node: Any, key: str = "", out: set[str] | None = None) -> set[str]:
    """Words of a tool definition a request can name: the tool's name and
    description, parameter names, their descriptions and enum values."""
    out = set() if out is None else out
    if isinstance(node, Mapping):
        for k, v in node.items():
            if key == "properties":
                out.update(re.split(r"[_\W]+", str(k).lower()))
            _schema_words(v, str(k), out)
    elif isinstance(node, list):
        for v in node:
            _schema_words(v, key, out)
    elif isinstance(node, str) and key in ("name", "description", "enum"):
        out.update(re.findall(r"[^\W\d_]+", node.lower()))
    return out


_TOOL_VOCAB: dict[str, frozenset[str]] = {}


def _tool_vocab(fn: Mapping[str, Any]) -> frozenset[str]:
    """Stemmed content words of one tool definition, memoised by its JSON (a cache
    sees the same few tool sets over and over)."""
    key = json.dumps(fn, sort_keys=True, default=str)
    vocab = _TOOL_VOCAB.get(key)
    if vocab is None:
        vocab = frozenset(_stem(w) for w in _schema_words(fn) if w and w not in FILLER)
        if len(_TOOL_VOCAB) >= 4096:
            _TOOL_VOCAB.clear()
        _TOOL_VOCAB[key] = vocab
    return vocab


def tool_intent(request: Request, content: Sequence[str]) -> str:
    """The offered tool the query most plausibly calls: the one whose definition
    (name, description, parameter names and descriptions, enum values) shares most
    content words with the query ("" when none shares any; ties go to the first
    name). Units and currencies count by name ("u:minute" as "minute")."""
    if not request.tools:
        return ""
    words = {w.rpartition(":")[2] for w in content if w not in WH_WORDS}
    best, best_score = "", 0
    scored = []
    for tool in request.tools:
        fn = tool.get("function") if isinstance(tool.get("function"), Mapping) else tool
        assert isinstance(fn, Mapping)
        scored.append((str(fn.get("name", "")), len(words & _tool_vocab(fn))))
    for name, score in sorted(scored):
        if score > best_score:
            best, best_score = name, score
    return best


_MATH_NEIGHBOURS = frozenset("()^=")
_QUOTE_OPENERS = frozenset("'\"“‘(`")


def _digits(tok: Token) -> bool:
    """A number token written in digits (possibly signed), not in words."""
    return tok.kind == "num" and tok.raw.lstrip("-")[:1].isdigit()


def _is_math_operand(tok: Token | None) -> bool:
    """A number written in digits, a single letter, or a bracket."""
    if tok is None:
        return False
    if tok.kind == "num":
        return _digits(tok)
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


def _turn_text(request: Request) -> str:
    """The contents of the prior turns, one per line (roles left out: they are the
    same on both sides of any comparison that matters)."""
    return "\n".join(str(t.get("content", "")) for t in request.context or ())


def context_only(request: Request) -> str:
    """The prior turns alone, one ``role: content`` line each."""
    return "\n".join(f"{t.get('role', '')}: {t.get('content', '')}" for t in request.context or ())


def _cased_lang(raw: str, low: str) -> bool:
    # "Go", "R", "C", "Rust" name a language; "go", "rust" are ordinary words
    if low in ("r", "c"):
        return raw.isupper()
    return raw[:1].isupper()


_MATH_SIGNS_RE = re.compile(r"[=+^<>]")


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
    best, best_n = "en", sum(1 for w in words if w in _LANG_STOPWORDS["en"])
    for lang in sorted(_LANG_STOPWORDS):
        n = sum(1 for w in words if w in _LANG_STOPWORDS[lang])
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
            return _stem(t.canon)
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


def _typo_pair(x: str, y: str, *, names: bool = False) -> bool:
    """Two differing words that are one typo apart. Never numbers or codes, never
    two answer-determining contrast words (sync/async), and for capitalised names
    only a dropped, added or swapped letter in a word of 5+ letters (Austira ->
    Austria) - never a changed letter (Iran -> Iraq)."""
    if not (x.isalpha() and y.isalpha()):
        return False
    if x in _CONTRAST_OF and y in _CONTRAST_OF:
        return False
    shortest = min(len(x), len(y))
    if shortest < 4 or x[0] != y[0]:
        return False
    if names:
        if shortest < 5:
            return False
        if len(x) == len(y) and sorted(x) != sorted(y):
            return False  # a substitution, not a transposition
    limit = 2 if shortest >= 8 and not names else 1
    return _edit_distance(x, y, limit) <= limit


@dataclass(frozen=True, slots=True)
class Diff:
    """Content tokens on one side only (after plural stemming and typo matching),
    in order of appearance, with their surface forms; ``typos`` counts pairs
    matched as one-typo variants; ``joined`` pairs split/joined words
    ("home town" vs "hometown"); ``a_typo_numbers``/``b_typo_numbers`` the numbers
    (written in words) matched with a misspelling of the same word on the other
    side ("first" vs "fisrt"): a typo, not a change of number."""

    a_only: tuple[str, ...]
    b_only: tuple[str, ...]
    a_surface: tuple[str, ...]
    b_surface: tuple[str, ...]
    typos: int
    joined: int
    a_typo_numbers: tuple[str, ...] = ()
    b_typo_numbers: tuple[str, ...] = ()


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


def _surplus(side: Side, other: Side) -> list[int]:
    """Indices of ``side``'s content tokens left over after matching each against an
    equal token of ``other`` (a multiset difference, in order of appearance)."""
    left = Counter(other.content)
    out = []
    for i, w in enumerate(side.content):
        if left[w] > 0:
            left[w] -= 1
        else:
            out.append(i)
    return out


_UMLAUT_RE = re.compile(r"(?<=[a-z])(?:ae|oe|ue)|^(?:ae|oe|ue)(?=[a-z])")


def _umlaut_key(word: str) -> str:
    """German umlauts typed as "ae"/"oe"/"ue" ("fuer") and typed without their dots
    ("fur", how "für" is folded) under one key."""
    return _UMLAUT_RE.sub(lambda m: m.group()[0], word) if word.isascii() else word


def _pair_transliterations(idx: list[int], side: Side, other: Side, other_idx: list[int]) -> None:
    """Remove from both index lists the pairs of words that are one transliteration
    apart ("für" vs "fuer"); the same word, not a typo."""
    if not idx or not other_idx:
        return
    keys = {j: _umlaut_key(other.content[j]) for j in other_idx}
    for i in list(idx):
        key = _umlaut_key(side.content[i])
        j = next((j for j in other_idx if keys[j] == key), None)
        if j is not None:
            idx.remove(i)
            other_idx.remove(j)


def _pair_inflections(idx: list[int], side: Side, other: Side, other_idx: list[int]) -> None:
    """Remove from both index lists the pairs of words that are inflections of one
    word ("writing" vs "write", "smiled" vs "smiling"): the same word, not a
    change. Numbers, codes and contrast words never pair this way."""
    if not idx or not other_idx:
        return
    keys = {j: _lemma(other.content[j]) for j in other_idx if other.content[j].isalpha()}
    for i in list(idx):
        word = side.content[i]
        if not word.isalpha() or word in _CONTRAST_OF or len(word) < 4:
            continue
        key = _lemma(word)
        j = next((j for j, k in keys.items() if k == key and j in other_idx), None)
        if j is not None and other.content[j] not in _CONTRAST_OF:
            idx.remove(i)
            other_idx.remove(j)


def content_diff(a: Side, b: Side) -> Diff:
    """The multiset symmetric difference of the two sides' content tokens, after
    pairing split/joined words and one-typo variants."""
    a_idx = _surplus(a, b)
    b_idx = _surplus(b, a)
    joined = _unglue(a_idx, a, b, b_idx) + _unglue(b_idx, b, a, a_idx)
    _pair_transliterations(a_idx, a, b, b_idx)
    _pair_inflections(a_idx, a, b, b_idx)
    names_a, names_b = set(a.entities), set(b.entities)
    typos = 0
    typo_a: list[str] = []
    typo_b: list[str] = []
    keep_a: list[int] = []
    for i in a_idx:
        x, sx = a.content[i], a.surface[i]
        match = next(
            (
                j
                for j in b_idx
                if _typo_pair(x, b.content[j], names=x in names_a or b.content[j] in names_b)
                or _typo_pair(sx, b.surface[j], names=sx in names_a or b.surface[j] in names_b)
            ),
            None,
        )
        if match is None:
            keep_a.append(i)
        else:
            b_idx.remove(match)
            typos += 1
            if x in a.numbers:
                typo_a.append(x)
            if b.content[match] in b.numbers:
                typo_b.append(b.content[match])
    # a misspelt filler word ("shoud") has no content partner: match it against the
    # other side's filler words
    filler_a = [w for w in a.tokens if w in FILLER]
    filler_b = [w for w in b.tokens if w in FILLER]
    # ... or an inflection of one ("writing" vs "write")
    lem_a = {_lemma(w) for w in filler_a if len(w) >= 4}
    lem_b = {_lemma(w) for w in filler_b if len(w) >= 4}

    def filler_variant(word: str, fillers: list[str], lemmas: set[str]) -> bool:
        if any(_typo_pair(word, w) for w in fillers):
            return True
        return word.isalpha() and len(word) >= 4 and _lemma(word) in lemmas

    kept_a = [i for i in keep_a if not filler_variant(a.surface[i], filler_b, lem_b)]
    kept_b = [j for j in b_idx if not filler_variant(b.surface[j], filler_a, lem_a)]
    typos += len(keep_a) - len(kept_a) + len(b_idx) - len(kept_b)
    keep_a, b_idx = kept_a, kept_b
    return Diff(
        a_only=tuple(a.content[i] for i in keep_a),
        b_only=tuple(b.content[j] for j in b_idx),
        a_surface=tuple(a.surface[i] for i in keep_a),
        b_surface=tuple(b.surface[j] for j in b_idx),
        typos=typos,
        joined=joined,
        a_typo_numbers=tuple(typo_a),
        b_typo_numbers=tuple(typo_b),
    )


#: A substitution this short (content words on each side) is a swap of one thing
#: for another, whose meaning the embedding of the two spans can compare; longer
#: differing spans are rewordings, whose pieces mean little apart.
SHORT_SPAN = 2


def substitution_spans(d: Diff) -> tuple[str, str]:
    """The two differing spans of ``d`` when it is a short substitution (each side
    1 to :data:`SHORT_SPAN` content words), else ``("", "")`` (nothing to compare:
    their cosine is then 1.0)."""
    if 0 < len(d.a_only) <= SHORT_SPAN and 0 < len(d.b_only) <= SHORT_SPAN:
        return " ".join(d.a_surface), " ".join(d.b_surface)
    return "", ""


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
    nums_a, nums_b = _without(a.numbers, d.a_typo_numbers), _without(b.numbers, d.b_typo_numbers)
    n_diff = _multiset_diff(nums_a, nums_b)
    same_set = Counter(nums_a) == Counter(nums_b)
    ords_a, ords_b = _without(a.ordinals, d.a_typo_numbers), _without(b.ordinals, d.b_typo_numbers)
    return {
        "num_diff": float(n_diff),
        "num_any_diff": _flag(n_diff > 0),
        "num_order_swap": _flag(same_set and nums_a != nums_b),
        "ordinal_diff": _flag(Counter(ords_a) != Counter(ords_b)),
    }


def _without(items: tuple[str, ...], drop: tuple[str, ...]) -> tuple[str, ...]:
    """``items`` minus one occurrence of each of ``drop`` (order kept)."""
    if not drop:
        return items
    left = Counter(drop)
    out = []
    for x in items:
        if left[x] > 0:
            left[x] -= 1
        else:
            out.append(x)
    return tuple(out)


def _is_function_word(word: str) -> bool:
    return word in FILLER or word in _PREPOSITIONS or word in NEGATIONS


def _contrast_group(word: str) -> int:
    return _CONTRAST_OF.get(word, _CONTRAST_OF.get(word + "s", -1))


#: Words that negate the next few words: the negations plus verbs and
#: prepositions that stop, prevent or leave out what follows.
_NEGATORS = NEGATIONS | {"stop", "stops", "stopping", "prevent", "prevents", "avoid", "except"}
_NEG_SCOPE = 3


def _lemma(word: str) -> str:
    """A rough lemma for matching a word under a negation with its plain use:
    "melting" == "melt", "numbers" == "number", "making" == "make"."""
    w = _stem(word)
    if w.endswith("ing") and len(w) > 5:
        w = w[:-3]
    elif w.endswith("ed") and len(w) > 4:
        w = w[:-2]
    return w[:-1] if w.endswith("e") and len(w) > 3 else w


def _negated(tokens: Sequence[str]) -> set[str]:
    """Lemmas of the content words within a few words after a negator ("without any
    numbers", "stop melting ice")."""
    out: set[str] = set()
    for i, w in enumerate(tokens):
        if w in _NEGATORS:
            scope = [x for x in tokens[i + 1 : i + 3 + _NEG_SCOPE] if x not in FILLER]
            out.update(_lemma(x) for x in scope[:_NEG_SCOPE])
    return out


def _negation_flips(x: Sequence[str], y: Sequence[str]) -> int:
    """Words both sides use, negated on one side only: "salt melts ice" vs "salt
    stops melting ice", "with numbers" vs "without any numbers"."""
    neg_x, neg_y = _negated(x), _negated(y)
    if not neg_x and not neg_y:
        return 0
    both = {_lemma(w) for w in x if w not in FILLER} & {_lemma(w) for w in y if w not in FILLER}
    return len((neg_x ^ neg_y) & both - _NEGATORS)


def _contrast_class(word: str) -> str:
    return _CONTRAST_CLASS.get(word, _CONTRAST_CLASS.get(word + "s", word))


def _one_sided_groups(mine: Counter[str], other: Counter[str], only: set[str]) -> set[int]:
    """Contrast groups with a synonym class more frequent in ``mine`` than in
    ``other``, one of whose words on this side the content diff kept (or is a
    function word)."""
    cm = Counter(_contrast_class(w) for w in mine.elements())
    co = Counter(_contrast_class(w) for w in other.elements())
    surplus = cm - co
    return {
        _contrast_group(w)
        for w in mine
        if _contrast_class(w) in surplus and (w in only or _is_function_word(w))
    }


def operator_features(a: Side, b: Side, d: Diff) -> Features:
    """Math operators and answer-determining function words (derivative/integral,
    encode/decode, asc/desc, not/never...): swaps within a contrast group (a
    contrast word present on one side only is mostly rewording: "150 lb in kg" vs
    "convert 150 lb to kg"), negation count difference, negated scope."""
    # read every token (prepositions included), not only the content tokens
    ca = Counter(_stem(w) for w in a.tokens if _stem(w) in _CONTRAST_OF or w in _CONTRAST_OF)
    cb = Counter(_stem(w) for w in b.tokens if _stem(w) in _CONTRAST_OF or w in _CONTRAST_OF)
    # a contrast word that is a content token only counts when the content diff
    # kept it (a typo of "solve" is not a change of operation)
    only_a, only_b = set(d.a_only), set(d.b_only)
    groups_a = _one_sided_groups(ca, cb, only_a)
    groups_b = _one_sided_groups(cb, ca, only_b)
    swaps = len(groups_a & groups_b)
    return {
        "op_diff": float(_multiset_diff(a.operators, b.operators)),
        "contrast_swap": float(swaps),
        "neg_diff": float(abs(a.negations - b.negations)),
        "neg_scope_flip": float(_negation_flips(a.tokens, b.tokens)),
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
        "ident_diff": float(id_diff),
    }


def entity_features(a: Side, b: Side, d: Diff) -> Features:
    """Capitalised tokens (names, places, acronyms) missing from the other side
    (case-insensitive, so a lower-cased retype is not a change)."""
    only_a, only_b = set(d.a_only), set(d.b_only)
    miss_a = [e for e in a.entities if e in only_a or _stem(e) in only_a]
    miss_b = [e for e in b.entities if e in only_b or _stem(e) in only_b]
    return {
        "entity_diff": float(len(miss_a) + len(miss_b)),
        "entity_both_changed": _flag(bool(miss_a) and bool(miss_b)),
        "quoted_diff": _flag(Counter(a.quoted) != Counter(b.quoted)),
    }


def order_features(a: Side, b: Side, d: Diff) -> Features:
    """Direction swaps: a token that is a source on one side and a destination on
    the other (NYC->FL vs FL->NYC), or preferred on one side and the alternative
    on the other ("tea over coffee" vs "coffee over tea")."""
    roles_a: dict[str, set[str]] = {}
    for tok, role in a.roles:
        roles_a.setdefault(tok, set()).add(role)
    swapped = 0
    for tok, role in b.roles:
        other = roles_a.get(tok)
        if other and role not in other:
            swapped += 1
    return {"direction_swap": float(swapped)}


def language_features(a: Side, b: Side, d: Diff) -> Features:
    """Natural language of the text and languages named in it; programming
    languages named or recognisable by syntax."""
    pa, pb = set(a.prog_langs), set(b.prog_langs)
    na, nb = set(a.nat_langs), set(b.nat_langs)
    return {
        "text_lang_diff": _flag(a.text_lang != b.text_lang),
        "nat_lang_conflict": _flag(bool(na) and bool(nb) and na != nb),
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
    }


def context_features(a: Side, b: Side, d: Diff) -> Features:
    """Prior turns and system prompt: equal or not, present or not, and what differs
    between the two histories (the same content diff and answer-determining items
    as for the queries: "my last three commits" vs "my last two commits")."""
    ha, hb = a.history, b.history
    if ha is not None and hb is not None:
        dh = content_diff(ha, hb)
        ctx_diff = float(len(dh.a_only) + len(dh.b_only))
        ctx_critical = critical_features(ha, hb, dh)["critical_diff"]
        ctx_entities = entity_features(ha, hb, dh)["entity_diff"]
        ctx_numbers = number_features(ha, hb, dh)["num_diff"]
        ctx_ratio = difflib.SequenceMatcher(None, ha.tokens, hb.tokens, autojunk=False).ratio()
        # one history is the other plus extra turns (small talk), not a substitution
        ctx_added = _flag(ctx_diff > 0 and (not dh.a_only or not dh.b_only))
    elif ha is None and hb is None:
        ctx_diff = ctx_critical = ctx_entities = ctx_numbers = ctx_added = 0.0
        ctx_ratio = 1.0
    else:
        only = ha if ha is not None else hb
        assert only is not None
        ctx_diff, ctx_critical, ctx_added = float(len(only.content)), 1.0, 1.0
        ctx_entities, ctx_numbers, ctx_ratio = float(len(only.entities)), 0.0, 0.0
    return {
        "ctx_equal": _flag(a.context_key == b.context_key),
        "ctx_present": _flag(bool(a.context_key or b.context_key)),
        "ctx_turns_diff": float(abs(a.context_turns - b.context_turns)),
        "ctx_diff": ctx_diff,
        "ctx_critical": ctx_critical,
        "ctx_entity_diff": ctx_entities,
        "ctx_num_diff": ctx_numbers,
        "ctx_seq_ratio": ctx_ratio,
        "ctx_added_only": ctx_added,
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
        "tool_needed_changed": _flag(_tool_needed_changed(a, b)),
    }


def _tool_needed_changed(a: Side, b: Side) -> bool:
    """The tool one side's query needs is not offered on the other side, or is
    offered with another definition (a changed schema changes the call)."""
    defs_a, defs_b = dict(a.tool_defs), dict(b.tool_defs)
    for needed, mine, other in ((a.tool_intent, defs_a, defs_b), (b.tool_intent, defs_b, defs_a)):
        if needed and other.get(needed) != mine.get(needed):
            return True
    return False


def difference_features(a: Side, b: Side, d: Diff) -> Features:
    """Whether any content differs at all, after case, punctuation, filler words,
    typos, inflections and transliterations are set aside.

    (The number of content words one side adds - "largest mammal" vs "largest land
    mammal" - was tried as a veto and dropped: it bought CacheEval recall (test
    0.59 -> 0.70 at FHR <= 0.04) but on real paraphrase pairs the added words are
    mostly asides and greetings: on the forum pairs its recall at the cache's FHR
    fell from 0.42 to 0.17 where the cosine has 0.38, and MRPC's ROC-AUC from 0.743
    to 0.732. The ablation rule keeps a feature only when it helps both.)"""
    return {"content_equal": _flag(not d.a_only and not d.b_only)}


def critical_features(a: Side, b: Side, d: Diff) -> Features:
    """How many kinds of answer-determining item differ: numbers, operators,
    variables, identifiers, dates, times, quoted spans, both-sided name changes,
    direction swaps, contrast swaps, negation, languages, units, the tool the query
    needs. Each kind alone is rare in training data; pooled, the verifier learns one
    effect from all."""
    feats: Features = {}
    for ex in _CRITICAL_SOURCES:
        feats.update(ex(a, b, d))
    return _critical_from(feats)


def _critical_from(f: Features) -> Features:
    """:func:`critical_features` from the other extractors' outputs."""
    parts = (
        f["num_any_diff"],
        _flag(f["op_diff"] > 0),
        _flag(f["var_diff"] > 0),
        _flag(f["ident_diff"] > 0),
        f["date_diff"],
        f["time_diff"],
        f["quoted_diff"],
        f["entity_both_changed"],
        _flag(f["direction_swap"] > 0),
        _flag(f["contrast_swap"] > 0),
        _flag(f["neg_diff"] > 0 or f["neg_scope_flip"] > 0),
        f["prog_lang_conflict"],
        f["nat_lang_conflict"],
        f["text_lang_diff"],
        f["unit_diff"],
        f["tool_needed_changed"],
    )
    return {"critical_diff": float(sum(parts))}


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
    difference_features,
    critical_features,
)

#: The extractors whose outputs :func:`critical_features` pools: all but the context,
#: content-difference and pooling ones.
_CRITICAL_SOURCES: tuple[Extractor, ...] = tuple(
    ex for ex in EXTRACTORS if ex not in (context_features, difference_features, critical_features)
)

#: The cosines the cache computes with the embedding model.
EMBEDDING_FEATURES: tuple[str, ...] = ("cos_query", "cos_context", "cos_diff", "cos_ctx_added")
#: Word-piece alignment of the two queries (BERTScore-style, from the same model
#: run as ``cos_query``): every token's best cosine to the other side's tokens.
#: A swapped entity leaves one token with no good partner; a paraphrase does not.
TOKEN_ALIGN_FEATURES: tuple[str, ...] = (
    "tok_align_p",  # mean best match of a's tokens in b
    "tok_align_r",  # mean best match of b's tokens in a
    "tok_align_f",  # harmonic mean of the two
)


def _names() -> tuple[str, ...]:
    probe = analyze("probe")
    d = content_diff(probe, probe)
    names: list[str] = list(EMBEDDING_FEATURES)
    for ex in EXTRACTORS:
        names.extend(ex(probe, probe, d))
    return tuple(names) + TOKEN_ALIGN_FEATURES


#: The verifier's input columns, in order.
FEATURE_NAMES: tuple[str, ...] = _names()


#: The direction in which each feature may move P(HIT) (LightGBM monotone
#: constraints): +1 for a similarity (more similar never lowers P(HIT)), -1 for a
#: detected difference (a difference never raises it), 0 for a fact about the pair
#: that is neither. With every difference at zero the verifier is a non-decreasing
#: function of the similarities: it can only veto what the embedding would serve.
SIMILARITIES: frozenset[str] = frozenset(
    {"cos_query", "cos_context", "cos_diff", "ctx_equal", "ctx_seq_ratio", "sys_equal",
     "tools_equal", "tools_jaccard", "content_equal", *TOKEN_ALIGN_FEATURES}
)  # fmt: skip
NEUTRAL: frozenset[str] = frozenset(
    {"cos_ctx_added", "ctx_present", "ctx_added_only", "sys_present", "tools_present"}
)


def direction(name: str) -> int:
    """+1, -1 or 0: how feature ``name`` may move P(HIT) (see :data:`SIMILARITIES`)."""
    if name in SIMILARITIES:
        return 1
    return 0 if name in NEUTRAL else -1


def history_diff_spans(a: Side, b: Side) -> tuple[str, str]:
    """What each history has that the other lacks (surplus content words, in order):
    ``("", "")`` when the histories are equal or neither side has one."""
    if a.history is None and b.history is None:
        return "", ""
    if a.history is None or b.history is None:
        only = a.history if a.history is not None else b.history
        assert only is not None
        text = " ".join(only.surface)
        return ("", text) if a.history is None else (text, "")
    d = content_diff(a.history, b.history)
    return " ".join(d.a_surface), " ".join(d.b_surface)


def pair_features(
    a: Side,
    b: Side,
    *,
    cos_query: float,
    cos_context: float,
    cos_diff: float,
    cos_ctx_added: float = 0.0,
    token_align: Sequence[float] | None = None,
    diff: Diff | None = None,
) -> tuple[float, ...]:
    """The feature vector of a pair, in :data:`FEATURE_NAMES` order.

    The cosines come from the cache's embedding model: ``cos_query`` of the two
    queries; ``cos_diff`` of the two spans of a short substitution
    (:func:`substitution_spans`; 1.0 when the difference is no such swap);
    ``cos_context`` of the two histories' differing spans
    (:func:`history_diff_spans`: 1.0 when nothing differs, -1.0 when only one
    history has a differing span); ``cos_ctx_added``: the highest cosine between a
    history's differing span and the new query - is the extra or changed turn
    about the question (a constraint) or small talk? (0.0 when the histories do
    not differ). ``token_align``: the :data:`TOKEN_ALIGN_FEATURES` (NaN - missing
    to LightGBM - when the embedder gives no word-piece vectors).
    """
    if token_align is None:
        token_align = (float("nan"),) * len(TOKEN_ALIGN_FEATURES)
    elif len(token_align) != len(TOKEN_ALIGN_FEATURES):
        raise ValueError(f"expected {len(TOKEN_ALIGN_FEATURES)} token-alignment values")
    d = content_diff(a, b) if diff is None else diff
    out = [float(cos_query), float(cos_context), float(cos_diff), float(cos_ctx_added)]
    seen: Features = {}
    for ex in EXTRACTORS:
        # critical_features pools the others: reuse their values, not recompute them
        f = _critical_from(seen) if ex is critical_features else ex(a, b, d)
        seen.update(f)
        out.extend(f.values())
    out.extend(float(v) for v in token_align)
    return tuple(out)


def feature_dict(values: Sequence[float]) -> dict[str, float]:
    """A feature vector as ``{name: value}`` (for reports and tests)."""
    if len(values) != len(FEATURE_NAMES):
        raise ValueError(f"expected {len(FEATURE_NAMES)} features, got {len(values)}")
    return dict(zip(FEATURE_NAMES, values, strict=True))
