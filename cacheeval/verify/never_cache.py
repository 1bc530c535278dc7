"""Requests a cache must never answer from memory: the never-cache rules on one
request, whatever the similarity of a stored one.

Deterministic rules on the request itself (query, system prompt, offered tools),
never on labels or benchmark metadata. This module is the one detector: the
verified cache (:mod:`adapters.verified_cache.policy`) and ``cacheeval stress``
both ask it.

``mutation``
    A tool with side effects on other people, money or external records is
    offered (its name carries a verb such as send, transfer, pay, delete,
    cancel, book, reserve, buy, order, post, share) *and* the query asks for that
    action ("Email Dana...", "Text Marco...", "Send $50 to Ana", "Cancel my
    reservation"). Replaying a cached call would repeat the effect, or skip it.
    Without tools nothing can be mutated (the model can only draft text), and
    tools that set the user's own device state (alarms, timers, lights,
    reminders, calendar entries) are not mutating by name alone: replaying the
    same call leaves the same state.
``time_sensitive``
    Live data whose answer changes by the minute: weather and forecasts, stock
    prices and quotes, exchange rates (a conversion between two currencies),
    news and headlines, live scores and traffic.
``creative``
    A request for a new piece of creative writing (poem, haiku, story, joke,
    slogan, tagline, toast, caption, name ideas...): the user expects a fresh
    piece, and a second request deserves a different one.
``personal_data``
    The system prompt carries a signed-in user's profile or records ("Member:
    Chloe Dubois", "talking with Priya Raman"): whatever the query, the answer
    may draw on that user's own, changing records (a balance, a schedule).

``declared``
    The offered tool the query asks for declares ``"policy": "mutation"`` or
    ``"policy": "time_sensitive"`` in its definition: the application that
    wrote the tool says its result must never be replayed (an alarm or a timer
    on the user's device, live flight or hotel listings). The benchmark's tool
    rows are labelled so (the tool checker reads the resolved call's declared
    policy); with unlabelled prompts there is no call, so :func:`declared`
    guesses the tool from the words the query shares with each tool's name and
    description (:func:`asked_tool`), and a question about an action ("How do
    I set a timer?") does not ask a device tool to act. The verified cache has
    its own guess from its request model (:mod:`adapters.verified_cache.policy`).

Every rule returns a :class:`PolicyVerdict` whose ``reason`` names what fired.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ..schema import Request

RULES: tuple[str, ...] = ("mutation", "time_sensitive", "creative", "personal_data")


@dataclass(frozen=True, slots=True)
class PolicyVerdict:
    """``allowed`` False means: never serve (``rule`` and ``reason`` say why)."""

    allowed: bool
    rule: str = ""
    reason: str = ""


ALLOWED = PolicyVerdict(True)

_SUPERSCRIPTS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹", "0123456789")


def normalise_text(text: str) -> str:
    """Superscript powers as ``^n``, NFKC, straight quotes and hyphens, "π" as "pi",
    no zero-width characters (the rules read the text in this form).

    >>> normalise_text("x² – it’s")
    "x^2 - it's"
    """
    if text.isascii() and "w/" not in text.lower():
        return text  # every step below changes only non-ASCII text or "w/"
    text = re.sub(r"[⁰¹²³⁴⁵⁶⁷⁸⁹]+", lambda m: "^" + m.group().translate(_SUPERSCRIPTS), text)
    text = unicodedata.normalize("NFKC", text).replace("π", " pi ")
    text = re.sub(r"\bw/o\b", "without", text, flags=re.IGNORECASE)
    text = re.sub(r"\bw/(?=\s)", "with", text, flags=re.IGNORECASE)
    for src, dst in (("’", "'"), ("‘", "'"), ("–", "-"), ("—", " - "), ("−", "-"), ("\u200b", "")):
        text = text.replace(src, dst)
    return text


class QuickPattern:
    """A case-insensitive regex behind a cheap necessary condition, with the same
    results as the regex: on ASCII text, the pattern with its ``\\b`` dropped
    (which only widens it), matched case-sensitively on the lower-cased text, must
    match before the regex is run. Python's ``re`` scans a case-insensitive
    alternation behind a ``\\b`` at every position, several times slower; most
    requests trigger no rule, so most searches end at the condition. A pattern
    the condition cannot be derived from (not IGNORECASE, an upper-case letter
    outside an escape, an escaped backslash) is always run as it is.

    >>> p = QuickPattern(re.compile(r"\\bnews\\b", re.IGNORECASE))
    >>> p.search("Any NEWS today?").group(), p.search("newsletter"), p.search("Newsroom")
    ('NEWS', None, None)
    """

    __slots__ = ("full", "quick")

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.full = pattern
        src = pattern.pattern
        derivable = (
            bool(pattern.flags & re.IGNORECASE)
            and "\\\\" not in src
            and not re.search("[A-Z]", re.sub(r"\\.", "", src))
        )
        flags = pattern.flags & ~re.IGNORECASE
        self.quick = re.compile(src.replace(r"\b", ""), flags) if derivable else None

    def may_match(self, text: str) -> bool:
        """False only when :meth:`search` would find nothing."""
        quick = self.quick
        return quick is None or not text.isascii() or quick.search(text.lower()) is not None

    def search(self, text: str) -> re.Match[str] | None:
        return self.full.search(text) if self.may_match(text) else None

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        return self.full.finditer(text) if self.may_match(text) else iter(())


@lru_cache(maxsize=1024)  # mutation() builds one per offered tool, per request
def _words(pattern: str) -> QuickPattern:
    return QuickPattern(re.compile(rf"\b(?:{pattern})\b", re.IGNORECASE))


# --- mutation -----------------------------------------------------------------------

#: Verbs in a tool name that make the tool mutating.
MUTATING_VERBS = frozenset(
    """send transfer pay delete remove cancel book reserve buy purchase order post publish
    submit wire withdraw deposit refund share invite reply forward sell trade unsubscribe
    subscribe donate tip charge""".split()
)
#: Words in a query that ask for the action of a tool-name word (the word itself
#: always counts).
_ACTION_WORDS: dict[str, str] = {
    "email": r"e-?mails?|mail",
    "mail": r"e-?mails?|mail",
    "message": r"text|texts|message|sms|dm|whatsapp",
    "sms": r"text|texts|sms",
    "transfer": r"transfer|wire",
    "money": r"transfer|wire",
    "pay": r"pay|payment",
    "delete": r"delete|erase|wipe",
    "remove": r"remove|delete",
    "cancel": r"cancel|cancell?ation",
    "book": r"book|reserve|reservation",
    "booking": r"book|booking|reserve|reservation",
    "reserve": r"reserve|reservation|book",
    "table": r"book|reserve",
    "buy": r"buy|purchase",
    "purchase": r"buy|purchase",
    "order": r"order",
    "post": r"post|tweet|publish",
    "publish": r"publish|post",
    "share": r"share",
    "invite": r"invite",
    "reply": r"reply|respond",
    "forward": r"forward",
    "sell": r"sell",
    "trade": r"trade|sell|buy",
}
#: Moving money: a send/move/pay verb with an amount of money.
_MONEY_MOVE = QuickPattern(
    re.compile(
        r"\b(?:send|move|transfer|wire|pay|give)\b.{0,40}?(?:[$€£¥₹]\s?\d|\b\d[\d,.]*\s?"
        r"(?:dollars?|euros?|pounds?|bucks|usd|eur|gbp)\b|\b(?:fifty|hundred|thousand)\b.{0,12}"
        r"(?:dollars?|euros?|pounds?|bucks))",
        re.IGNORECASE,
    )
)


def tool_name(tool: Mapping[str, Any]) -> str:
    fn = tool.get("function")
    name = tool.get("name")
    if not isinstance(name, str) and isinstance(fn, Mapping):
        name = fn.get("name")
    return name if isinstance(name, str) else ""


def declared_policy(tool: Mapping[str, Any]) -> str:
    """The cache policy a tool definition declares (``policy`` beside ``name``, or in
    ``function``), "" when it declares none."""
    fn = tool.get("function")
    policy = tool.get("policy")
    if not isinstance(policy, str) and isinstance(fn, Mapping):
        policy = fn.get("policy")
    return policy if isinstance(policy, str) else ""


def mutating_tools(request: Request) -> tuple[str, ...]:
    """Names of the offered tools whose name carries a mutating verb, sorted. A tool
    its definition declares ``"policy": "cacheable"`` (a pure function of its
    arguments) is never one, whatever its name says ("calculate_tip" computes a
    tip, it does not give one)."""
    out = []
    for tool in request.tools or ():
        if declared_policy(tool) == "cacheable":
            continue
        name = tool_name(tool)
        parts = set(re.split(r"[_\W]+", name.lower()))
        if parts & MUTATING_VERBS:
            out.append(name)
    return tuple(sorted(out))


def mutation(request: Request) -> PolicyVerdict:
    """Never serve a request that asks an offered mutating tool to act."""
    query = normalise_text(request.query)
    for name in mutating_tools(request):
        parts = [p for p in re.split(r"[_\W]+", name.lower()) if p]
        alternatives = [re.escape(p) for p in parts] + [
            _ACTION_WORDS[p] for p in parts if p in _ACTION_WORDS
        ]
        if _words("|".join(alternatives)).search(query):
            return PolicyVerdict(False, "mutation", f"asks the mutating tool {name} to act")
        if parts[0] in {"transfer", "pay", "send", "wire"} and _MONEY_MOVE.search(query):
            if {"money", "payment", "funds", "transfer", "pay"} & set(parts):
                return PolicyVerdict(False, "mutation", f"moves money with {name}")
    return ALLOWED


# --- time-sensitive ----------------------------------------------------------------

_LIVE_MARKER = r"now|right now|at the moment|currently|today|tonight|tomorrow|this (?:morning|afternoon|evening|week|weekend)|day after tomorrow|next few days"  # noqa: E501
_WEATHER = _words(r"weather|forecast|humidity|uv index|pollen count|air quality|wind chill")
_WEATHER_STATE = QuickPattern(
    re.compile(
        rf"\b(?:rain|raining|rainy|snow|snowing|sunny|windy|storm|stormy|hot|cold|warm|chilly|"
        rf"temperature)\b.{{0,60}}\b(?:{_LIVE_MARKER})\b|\b(?:{_LIVE_MARKER})\b.{{0,60}}\b(?:rain|"
        rf"raining|snow|snowing|sunny|windy|storm|temperature)\b",
        re.IGNORECASE,
    )
)
_MARKET = _words(
    r"stock price|share price|stock quote|ticker|quote for|nasdaq|dow jones|s&p 500|market cap|"
    r"exchange rate|forex|crypto(?:currency)? price|bitcoin price|trading at|"
    r"stocks? (?:is |are )?trading|stocks? (?:today|right now|now)|stock market today"
)
_NEWS = _words(r"news|headlines?|breaking news|top stories")
_LIVE_EVENTS = QuickPattern(
    re.compile(
        rf"\b(?:score|scores|traffic|delays?|queue|wait time|open right now)\b.{{0,40}}"
        rf"\b(?:{_LIVE_MARKER})\b|\bwho(?:'s| is) winning\b|\blive (?:score|results)\b",
        re.IGNORECASE,
    )
)
#: A currency: a symbol before an amount, or a currency word or code.
_CURRENCY_NAMES = QuickPattern(
    re.compile(
        r"[$€£¥₹](?=\s?\d)|\b(?:usd|eur|gbp|jpy|inr|cad|aud|chf|cny|mxn|dollars?|euros?|yen|"
        r"rupees?|francs?|pesos?|yuan|sterling|bitcoin|btc)\b",
        re.IGNORECASE,
    )
)
_MONEY_AMOUNT = QuickPattern(
    re.compile(
        r"[$€£¥₹]\s?\d|\b\d[\d,.]*\s?(?:usd|eur|gbp|jpy|inr|cad|aud|chf|dollars?|euros?|yen|"
        r"rupees?|francs?|pesos?|pounds)\b",
        re.IGNORECASE,
    )
)
_CURRENCY_CANON = {
    "$": "usd", "dollar": "usd", "dollars": "usd", "usd": "usd", "€": "eur", "euro": "eur",
    "euros": "eur", "eur": "eur", "£": "gbp", "gbp": "gbp", "sterling": "gbp", "¥": "jpy",
    "yen": "jpy", "jpy": "jpy", "₹": "inr", "rupee": "inr", "rupees": "inr", "inr": "inr",
}  # fmt: skip


_CONVERT = _words("convert|exchange")


def _currencies(text: str) -> set[str]:
    found = set()
    for m in _CURRENCY_NAMES.finditer(text):
        word = m.group().lower()
        found.add(_CURRENCY_CANON.get(word, word.rstrip("s")))
    return found


#: First words of a request that asks for something: question words, auxiliaries
#: opening a yes/no question, and imperative verbs.
ASKING_START = frozenset(
    """what what's whats which who who's whom whose when where where's why how how's is are
    was were will would can could should shall do does did has have may might any show get
    give tell find check convert look fetch list give pull bring display send read let
    please""".split()
)
#: A bare keyword request ("Top headlines in Canada", "AAPL stock price").
_SHORT_REQUEST_WORDS = 6


_ASK_WORDS = re.compile(r"[^\W_]+(?:'[^\W_]+)?")


def asks(query: str) -> bool:
    """Whether ``query`` asks for something (a question, an imperative, or a short
    keyword request) rather than reporting it: "What's the Nasdaq at?", "Latest
    news about Apple" ask; "The Nasdaq closed 10.73 points higher on Friday." does
    not (a statement about a past figure needs no live data)."""
    words = _ASK_WORDS.findall(query.lower())
    if "?" in query or len(words) <= _SHORT_REQUEST_WORDS:
        return True
    return bool(words) and words[0] in ASKING_START


def time_sensitive(request: Request) -> PolicyVerdict:
    """Never serve a request for live data: weather, markets, exchange rates, news,
    live events. A statement that reports such a figure (a past market close, a
    forecast someone made) asks for nothing live and is left to the other tiers."""
    q = normalise_text(request.query)
    if not asks(q):
        return ALLOWED
    if _WEATHER.search(q) or _WEATHER_STATE.search(q):
        return PolicyVerdict(False, "time_sensitive", "weather changes by the hour")
    if _MARKET.search(q):
        return PolicyVerdict(False, "time_sensitive", "market prices change by the minute")
    if len(_currencies(q)) >= 2 or (_CONVERT.search(q) and _MONEY_AMOUNT.search(q)):
        return PolicyVerdict(False, "time_sensitive", "exchange rates change daily")
    if _NEWS.search(q):
        return PolicyVerdict(False, "time_sensitive", "news is new every hour")
    if _LIVE_EVENTS.search(q):
        return PolicyVerdict(False, "time_sensitive", "a live event or status")
    return ALLOWED


# --- declared by the tool ------------------------------------------------------------

#: Declared tool policies that forbid replaying a call's result.
NEVER_CACHE_POLICIES = frozenset({"mutation", "time_sensitive"})
#: Words that say nothing about which tool a query asks for: function words,
#: and the verbs every tool set shares (a "set", "get", "search" or "add" is
#: named by its object: a timer, the weather, flights, an event).
_TOOL_STOP = frozenset(
    """a an the of to in on at by for from with and or no not its it is are be one another
    up out into given user user's users own optionally set get search find look create add
    start turn make show return""".split()
)
#: First words of a question about an action rather than a request to take it.
_QUESTION_START = frozenset(
    "how why what what's whats when where which who whose is are can could should do does".split()
)


def _stem(word: str) -> str:
    """A word without its plural or possessive ending (hotels, hotel's -> hotel;
    cities -> city) or an agent's -er (reminder -> remind), so a query and a tool
    name meet on the same form."""
    word = word.removesuffix("'s")
    if len(word) > 6 and word.endswith("er"):  # reminder -> remind (both sides alike)
        return word[:-2]
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


_TOOL_WORD = re.compile(r"[^\W\d_]+(?:'s)?")


def _tool_words(text: str) -> set[str]:
    return {_stem(w) for w in _TOOL_WORD.findall(text.lower()) if w not in _TOOL_STOP}


@lru_cache(maxsize=4096)
def _words_of_tool(name: str, description: str) -> frozenset[str]:
    return frozenset(_tool_words(name.replace("_", " ") + " " + description))


def _tool_fields(tool: Mapping[str, Any]) -> tuple[str, str]:
    fn = tool.get("function")
    node = fn if isinstance(fn, Mapping) else tool
    description = node.get("description")
    return tool_name(tool), description if isinstance(description, str) else ""


def asked_tool(request: Request) -> tuple[str, str] | None:
    """(name, declared policy) of the offered tool the query asks for, or None:
    the tool whose name and description share most words with the query (a
    plural and its singular meet; function words and the verbs all tools
    share, such as set, get, search, add, do not count; a word with two
    adjacent letters swapped still counts). A never-cache tool is
    asked for only when it shares more words than every other tool, so a tie
    with a cacheable tool ("Convert 10 km to miles" beside ``convert_units`` and
    ``convert_currency``) is not a never-cache request.

    >>> timer = {"name": "set_timer", "description": "Start a countdown timer.",
    ...          "policy": "mutation"}
    >>> units = {"name": "convert_units", "description": "Convert a measurement.",
    ...          "policy": "cacheable"}
    >>> asked_tool(Request("Set a timer for 45 minutes", tools=(timer, units)))
    ('set_timer', 'mutation')
    >>> asked_tool(Request("How many hours is 90 minutes?", tools=(timer, units))) is None
    True
    """
    if not request.tools:
        return None
    query = _tool_words(request.query)
    # a word typed with two letters swapped still names its tool ("alram" an alarm);
    # other one-letter slips make other words ("nights", "lights")
    swapped = {
        w: {w[:i] + w[i + 1] + w[i] + w[i + 2 :] for i in range(len(w) - 1)} - {w}
        for w in query
        if len(w) >= 5
    }
    best: tuple[int, str, str] | None = None  # (words shared, name, policy)
    others = 0
    for tool in request.tools:
        name, description = _tool_fields(tool)
        vocab = _words_of_tool(name, description)
        shared = len(query & vocab)
        shared += sum(1 for w, ws in swapped.items() if w not in vocab and ws & vocab)
        policy = declared_policy(tool)
        if policy not in NEVER_CACHE_POLICIES:
            others = max(others, shared)
        elif shared and (
            best is None or shared > best[0] or (shared == best[0] and name < best[1])
        ):
            best = (shared, name, policy)  # most words shared; a tie to the first name
    if best is None or best[0] <= others:
        return None
    return best[1], best[2]


def declared(request: Request) -> PolicyVerdict:
    """Never serve a request for the offered tool whose definition declares a
    never-cache policy (:func:`asked_tool`). A device or account action
    (``mutation``) is asked for by a request, not by a question about it."""
    asked = asked_tool(request)
    if asked is None:
        return ALLOWED
    name, policy = asked
    if policy == "mutation":
        first = _ASK_WORDS.findall(request.query.lower())[:1]
        if first and first[0] in _QUESTION_START:
            return ALLOWED
    return PolicyVerdict(False, policy, f"asks for {name}, whose definition declares {policy}")


# --- creative ------------------------------------------------------------------------

#: Forms that are creative writing on their own.
_CREATIVE_FORMS = _words(
    r"poems?|poetry|haikus?|limericks?|sonnets?|verses?|free verse|lullab(?:y|ies)|acrostic|"
    r"lyrics|jingles?|raps?|rap lines|chants?|slogans?|taglines?|catchphrases?|mottos?|"
    r"jokes?|knock[- ]knock|puns?|riddles?|fables?|fairy tales?|bedtime stor(?:y|ies)|"
    r"short stor(?:y|ies)|comic strip|screenplay"
)
#: Forms that are creative writing when the user asks for one to be written.
_SOFT_FORMS = _words(
    r"stor(?:y|ies)|tales?|songs?|chorus|toasts?|speech|captions?|tweets?|bios?|blurbs?|"
    r"ad script|radio ad|commercial|name ideas|product names|names? for (?:a|an|my|our|the|this)|"
    r"(?:\d+|a few|some|ten|five|three|good|catchy) (?:\w+ )?names|pep talk|"
    r"motivational (?:message|words)|encouraging words|card message|message for a .{0,30}card|"
    r"something funny|wedding card|greeting card|birthday card|retirement card"
)
_GENERATE = _words(
    r"write|compose|make up|make me|make an?|come up with|give me|tell me|suggest|brainstorm|"
    r"draft|create|can you do|could you do|i need|i'd like|i want|help me with|help me write|"
    r"any ideas|ideas\?|what could|what's something"
)


def creative(request: Request) -> PolicyVerdict:
    """Never serve a request for a new piece of creative writing."""
    q = normalise_text(request.query)
    m = _CREATIVE_FORMS.search(q)
    if m:
        return PolicyVerdict(False, "creative", f"asks for creative writing ({m.group().lower()})")
    m = _SOFT_FORMS.search(q)
    if m and _GENERATE.search(q):
        return PolicyVerdict(False, "creative", f"asks for creative writing ({m.group().lower()})")
    return ALLOWED


# --- personal data -------------------------------------------------------------------

_PROFILE = re.compile(
    r"\b(?i:member|patron|cardholder|customer|customer contact|employee|signed-in user|user|"
    r"traveller|traveler|runner|learner|student|patient|resident|owner|client|parent|"
    r"account holder|policyholder|subscriber|player|guest)(?i: profile)?\s*:\s*[A-Z]"
    r"|\b(?i:talking|speaking|chatting) (?i:with|to) (?i:verified |the )?(?i:member |customer |"
    r"user |patient )?[A-Z][\w'-]+"
)
#: "the scheduling assistant for Lukas Brenner": an assistant for a named person.
_ASSISTANT_FOR = re.compile(r"\bassistant\b[^.]{0,80}?\bfor ([A-Z][\w'-]+) ([A-Z][\w'-]+)")
#: Last words of an organisation's name: "a travel assistant for Acme Air",
#: "for Aurora Bank", "for Saffron Table" serve a business, not one person.
ORGANISATION_WORDS = frozenset(
    """air airline airlines airways bank banking insurance health healthcare clinic hospital
    pharmacy fitness gym mobile telecom wireless logistics shipping analytics labs lab
    software systems technologies tech media group company co corp corporation inc ltd llc
    gmbh partners holdings solutions services consulting university college school academy
    institute library museum hotel hotels resort resorts travel tours table kitchen bistro
    grill cafe café restaurant bakery foods market store stores shop outlet mall court
    apartments homes realty properties energy power utilities motors auto cars rail transit
    games studio studios press publishing news network cloud""".split()
)


def personal_data(request: Request) -> PolicyVerdict:
    """Never serve a request made under a signed-in user's profile: the answer
    draws on that user's own, changing records. An assistant "for" a named
    business is not one user's ("You are a travel assistant for Acme Air")."""
    system = request.system_prompt or ""
    if not system:
        return ALLOWED
    named = _ASSISTANT_FOR.search(system)
    if _PROFILE.search(system) or (
        named is not None and named.group(2).lower() not in ORGANISATION_WORDS
    ):
        return PolicyVerdict(
            False, "personal_data", "made under a signed-in user's profile and records"
        )
    return ALLOWED


# --- entry points -----------------------------------------------------------------------

#: A rule about one request.
RequestRule = Callable[[Request], PolicyVerdict]

#: The rules in the order they are asked; the first that refuses names the verdict.
REQUEST_RULES: tuple[RequestRule, ...] = (
    mutation,
    time_sensitive,
    declared,
    creative,
    personal_data,
)


def request_policy(
    request: Request | str, rules: Sequence[RequestRule] = REQUEST_RULES
) -> PolicyVerdict:
    """May this request be answered from (or stored in) a cache at all?
    ``rules``: the rules to ask, in order (default :data:`REQUEST_RULES`).

    >>> request_policy("Write a haiku about rain").rule
    'creative'
    >>> request_policy("What's the weather in Oslo right now?").rule
    'time_sensitive'
    >>> request_policy("How do I reverse a list in Python?").allowed
    True
    """
    req = Request.of(request)
    for rule in rules:
        verdict = rule(req)
        if not verdict.allowed:
            return verdict
    return ALLOWED
