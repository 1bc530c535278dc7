"""The word lists the feature extractors read: contractions, abbreviations and
multi-word names; number words; units, currencies, months, weekdays and relative
days; contrast groups of mutually exclusive answer-determining words; negations,
question words and filler; programming and natural languages.

Data only: no function here. Names with a leading underscore are private to the
:mod:`adapters.verified_cache.features` package.
"""

from __future__ import annotations

import re

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
    "func": "function", "veggie": "vegetable", "veggies": "vegetables", "sq": "square",
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
        # a number base by its number or its name ("255 in base 16" == "255 in hex")
        ("hexadecimal", "base 16|base sixteen|hexadecimal"),
        ("octal", "base 8|base eight|octal"),
        ("binary", "base 2|base two|binary"),
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
    "big/large/bigger/larger/大/grande/grand/groß/gross "
    "small/tiny/smaller/小/pequeño/pequeno/petit/klein/piccolo",
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
    # "higher" pairs with "lower" here ("higher than" / "lower than"; a word
    # belongs to one group)
    "increase decrease raise/higher lower",
    # comparatives and gradable adjectives ("high blood pressure" / "low")
    "high low",
    "more less/fewer",
    "better worse",
    "faster/quicker slower",
    "cheaper dearer",
    "older younger/newer",
    "longer shorter",
    "heavier lighter",
    "stronger weaker",
    "easier harder",
    "safer riskier",
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
        # question words typed with or without accents ("quien pinto la mona lisa")
        (
            "es",
            "el los las es son y por para con cómo qué cuál una mi del al está hay dónde "
            "quién quien quiénes cuánto cuanto cuánta cuántos cuantos cuántas cuantas cuándo "
            "muy pero también sobre entre",
        ),
        (
            "fr",
            "le les est sont et pour avec comment quel quelle une je du des au où ce vous "
            "qui quels quelles c'est qu'est l'auteur aussi mais très sur entre "
            "combien pourquoi quand quoi",
        ),
        (
            "de",
            "der die das ist sind und zu mit wie was für ein eine ich nicht den dem wo "
            "wer welche welcher welches welchem welchen wieviel viele auch aber sehr über "
            "zwischen wann wurde",
        ),
        (
            "it",
            "il gli è sono di che per come cosa mio della dove quanto perché non "
            "chi quale quali dello degli delle nel nella sul sulla anche ma molto",
        ),
        (
            "pt",
            "os é são em com como qual uma um meu não do da onde você "
            "quem quanto quantos quantas também mas muito sobre entre",
        ),
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


#: Honorifics and titles as written before a name, abbreviated ("Mr.", "Gen.",
#: "Sen."): the period after one ends no sentence, and the word names no one.
TITLES = frozenset(
    "mr mrs ms dr prof st gen gov sen rep lt col capt sgt maj adm cmdr pres rev hon".split()
)

#: Capitalised words that name no entity of their own: honorifics and titles
#: ("Mr. Perroud" is "Perroud", "Gen. Petraeus" is "Petraeus") and company-form
#: suffixes ("Secure Computing Inc." is "Secure Computing").
NON_ENTITY_CAPITALS = TITLES | frozenset(
    "miss sir dame inc corp co ltd llc plc ag sa gmbh nv bv".split()
)

#: Demonyms and adjectives of place, each with the place it names: "the American
#: civil administrator" and "the U.S. civil administrator" name the same country.
_PLACE_OF_SPECS: tuple[str, ...] = (
    "usa: american americans us",
    "uk: british britain",
    "iraq: iraqi iraqis",
    "japan: japanese",
    "china: chinese",
    "france: french",
    "germany: german germans",
    "canada: canadian canadians",
    "russia: russian russians",
    "israel: israeli israelis",
    "palestine: palestinian palestinians",
    "afghanistan: afghan afghans",
    "iran: iranian iranians",
    "india: indian indians",
    "mexico: mexican mexicans",
    "italy: italian italians",
    "spain: spanish",
    "australia: australian australians",
    "korea: korean koreans",
    "europe: european europeans",
    "egypt: egyptian egyptians",
    "syria: syrian syrians",
    "pakistan: pakistani pakistanis",
    "turkey: turkish",
    "switzerland: swiss",
    "netherlands: dutch",
    "ireland: irish",
    "scotland: scottish",
    "wales: welsh",
    "brazil: brazilian brazilians",
    "africa: african africans",
    "asia: asian asians",
    "sweden: swedish",
    "poland: polish",
    "greece: greek greeks",
    "cuba: cuban cubans",
    "philippines: filipino filipinos philippine",
    "vietnam: vietnamese",
    "thailand: thai",
    "indonesia: indonesian indonesians",
    "nigeria: nigerian nigerians",
    "kenya: kenyan kenyans",
    "ukraine: ukrainian ukrainians",
    "norway: norwegian norwegians",
    "denmark: danish",
    "finland: finnish",
    "belgium: belgian belgians",
    "austria: austrian austrians",
    "portugal: portuguese",
    "argentina: argentine argentinian argentinians",
    "chile: chilean chileans",
    "colombia: colombian colombians",
    "venezuela: venezuelan venezuelans",
    "peru: peruvian peruvians",
    "saudi arabia: saudi saudis",
)
PLACE_OF: dict[str, str] = {
    word: place for spec in _PLACE_OF_SPECS
    for place, words in [spec.split(": ")] for word in words.split()
}  # fmt: skip
