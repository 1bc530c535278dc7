"""The policy tier: requests a cache must never answer from memory, whatever the
similarity of the stored request.

Deterministic rules on the request itself (query, system prompt, offered tools),
never on labels or benchmark metadata:

``mutation``
    A tool with side effects on other people, money or external records is
    offered (its name carries a verb such as send, transfer, pay, delete,
    cancel, book, reserve, buy, order, post, share) *and* the query asks for that
    action ("Email Dana...", "Text Marco...", "Send $50 to Ana", "Cancel my
    reservation"). Replaying a cached call would repeat the effect, or skip it.
    Without tools nothing can be mutated (the model can only draft text), and
    tools that set the user's own device state (alarms, timers, lights,
    reminders, calendar entries) are not mutating by name alone: replaying the
    same call leaves the same state - unless the definition says otherwise (see
    ``declared``).
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
    The offered tool the query most plausibly calls (the one whose definition
    shares most content words with it, :func:`~.features.tool_intent`) declares
    ``"policy": "mutation"`` or ``"policy": "time_sensitive"`` in its definition:
    the application that wrote the tool says its result must never be replayed
    (a device action such as an alarm or the lights, live listings or
    availability). The verdict carries the declared policy as its rule.
``cross_user``
    The stored request was made under another system prompt (another user, app
    or persona): a cached answer never crosses that boundary. The cache keys its
    entries by system prompt, so such an entry is never even a candidate.

Every rule returns a :class:`PolicyVerdict` whose ``reason`` names what fired.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from cacheeval.schema import Request

from .features import Side, analyze, normalise_text

RULES: tuple[str, ...] = ("mutation", "time_sensitive", "creative", "personal_data", "cross_user")


@dataclass(frozen=True, slots=True)
class PolicyVerdict:
    """``allowed`` False means: never serve (``rule`` and ``reason`` say why)."""

    allowed: bool
    rule: str = ""
    reason: str = ""


ALLOWED = PolicyVerdict(True)


def _words(pattern: str) -> re.Pattern[str]:
    return re.compile(rf"\b(?:{pattern})\b", re.IGNORECASE)


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
_MONEY_MOVE = re.compile(
    r"\b(?:send|move|transfer|wire|pay|give)\b.{0,40}?(?:[$€£¥₹]\s?\d|\b\d[\d,.]*\s?"
    r"(?:dollars?|euros?|pounds?|bucks|usd|eur|gbp)\b|\b(?:fifty|hundred|thousand)\b.{0,12}"
    r"(?:dollars?|euros?|pounds?|bucks))",
    re.IGNORECASE,
)


def _tool_name(tool: Mapping[str, Any]) -> str:
    fn = tool.get("function")
    name = tool.get("name")
    if not isinstance(name, str) and isinstance(fn, Mapping):
        name = fn.get("name")
    return name if isinstance(name, str) else ""


def _declared_policy(tool: Mapping[str, Any]) -> str:
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
        if _declared_policy(tool) == "cacheable":
            continue
        name = _tool_name(tool)
        parts = set(re.split(r"[_\W]+", name.lower()))
        if parts & MUTATING_VERBS:
            out.append(name)
    return tuple(sorted(out))


def mutation(request: Request, side: Side | None = None) -> PolicyVerdict:
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


# --- declared by the tool ------------------------------------------------------------

#: Declared tool policies that forbid replaying a call's result.
NEVER_CACHE_POLICIES = frozenset({"mutation", "time_sensitive"})


def declared(request: Request, side: Side | None = None) -> PolicyVerdict:
    """Never serve a request whose most plausible tool declares a never-cache policy.

    Only the tool the query calls counts: a bundle that offers ``set_alarm`` beside
    ``convert_units`` still lets "Convert 10 km to miles" be cached. ``side``: the
    request already analysed (:func:`~.features.analyze`), else it is analysed
    here - only when some offered tool declares such a policy."""
    declared_by = {_tool_name(t): _declared_policy(t) for t in request.tools or ()}
    if not NEVER_CACHE_POLICIES & set(declared_by.values()):
        return ALLOWED
    name = (side or analyze(request)).tool_intent
    policy = declared_by.get(name, "")
    if policy in NEVER_CACHE_POLICIES:
        return PolicyVerdict(False, policy, f"calls {name}, whose definition declares {policy}")
    return ALLOWED


# --- time-sensitive ----------------------------------------------------------------

_LIVE_MARKER = r"now|right now|at the moment|currently|today|tonight|tomorrow|this (?:morning|afternoon|evening|week|weekend)|day after tomorrow|next few days"  # noqa: E501
_WEATHER = _words(r"weather|forecast|humidity|uv index|pollen count|air quality|wind chill")
_WEATHER_STATE = re.compile(
    rf"\b(?:rain|raining|rainy|snow|snowing|sunny|windy|storm|stormy|hot|cold|warm|chilly|"
    rf"temperature)\b.{{0,60}}\b(?:{_LIVE_MARKER})\b|\b(?:{_LIVE_MARKER})\b.{{0,60}}\b(?:rain|"
    rf"raining|snow|snowing|sunny|windy|storm|temperature)\b",
    re.IGNORECASE,
)
_MARKET = _words(
    r"stock price|share price|stock quote|ticker|quote for|nasdaq|dow jones|s&p 500|market cap|"
    r"exchange rate|forex|crypto(?:currency)? price|bitcoin price|trading at|"
    r"stocks? (?:is |are )?trading|stocks? (?:today|right now|now)|stock market today"
)
_NEWS = _words(r"news|headlines?|breaking news|top stories")
_LIVE_EVENTS = re.compile(
    rf"\b(?:score|scores|traffic|delays?|queue|wait time|open right now)\b.{{0,40}}"
    rf"\b(?:{_LIVE_MARKER})\b|\bwho(?:'s| is) winning\b|\blive (?:score|results)\b",
    re.IGNORECASE,
)
#: A currency: a symbol before an amount, or a currency word or code.
_CURRENCY_NAMES = re.compile(
    r"[$€£¥₹](?=\s?\d)|\b(?:usd|eur|gbp|jpy|inr|cad|aud|chf|cny|mxn|dollars?|euros?|yen|"
    r"rupees?|francs?|pesos?|yuan|sterling|bitcoin|btc)\b",
    re.IGNORECASE,
)
_MONEY_AMOUNT = re.compile(
    r"[$€£¥₹]\s?\d|\b\d[\d,.]*\s?(?:usd|eur|gbp|jpy|inr|cad|aud|chf|dollars?|euros?|yen|"
    r"rupees?|francs?|pesos?|pounds)\b",
    re.IGNORECASE,
)
_CURRENCY_CANON = {
    "$": "usd", "dollar": "usd", "dollars": "usd", "usd": "usd", "€": "eur", "euro": "eur",
    "euros": "eur", "eur": "eur", "£": "gbp", "gbp": "gbp", "sterling": "gbp", "¥": "jpy",
    "yen": "jpy", "jpy": "jpy", "₹": "inr", "rupee": "inr", "rupees": "inr", "inr": "inr",
}  # fmt: skip


def _currencies(text: str) -> set[str]:
    found = set()
    for m in _CURRENCY_NAMES.finditer(text):
        word = m.group().lower()
        found.add(_CURRENCY_CANON.get(word, word.rstrip("s")))
    return found


#: First words of a request that asks for something: question words, auxiliaries
#: opening a yes/no question, and imperative verbs.
_ASKING_START = frozenset(
    """what what's whats which who who's whom whose when where where's why how how's is are
    was were will would can could should shall do does did has have may might any show get
    give tell find check convert look fetch list give pull bring display send read let
    please""".split()
)
#: A bare keyword request ("Top headlines in Canada", "AAPL stock price").
_SHORT_REQUEST_WORDS = 6


def asks(query: str) -> bool:
    """Whether ``query`` asks for something (a question, an imperative, or a short
    keyword request) rather than reporting it: "What's the Nasdaq at?", "Latest
    news about Apple" ask; "The Nasdaq closed 10.73 points higher on Friday." does
    not (a statement about a past figure needs no live data)."""
    words = re.findall(r"[^\W_]+(?:'[^\W_]+)?", query.lower())
    if "?" in query or len(words) <= _SHORT_REQUEST_WORDS:
        return True
    return bool(words) and words[0] in _ASKING_START


def time_sensitive(request: Request, side: Side | None = None) -> PolicyVerdict:
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
    if len(_currencies(q)) >= 2 or (
        re.search(r"\b(?:convert|exchange)\b", q, re.I) and _MONEY_AMOUNT.search(q)
    ):
        return PolicyVerdict(False, "time_sensitive", "exchange rates change daily")
    if _NEWS.search(q):
        return PolicyVerdict(False, "time_sensitive", "news is new every hour")
    if _LIVE_EVENTS.search(q):
        return PolicyVerdict(False, "time_sensitive", "a live event or status")
    return ALLOWED


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


def creative(request: Request, side: Side | None = None) -> PolicyVerdict:
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
    r"account holder|policyholder|subscriber|player|guest)\s*:\s*[A-Z]"
    r"|\b(?i:talking|speaking|chatting) (?i:with|to) (?i:verified |the )?(?i:member |customer |"
    r"user |patient )?[A-Z][\w'-]+"
    r"|\bassistant\b[^.]{0,80}?\bfor [A-Z][\w'-]+ [A-Z][\w'-]+",
)


def personal_data(request: Request, side: Side | None = None) -> PolicyVerdict:
    """Never serve a request made under a signed-in user's profile: the answer
    draws on that user's own, changing records."""
    system = request.system_prompt or ""
    if system and _PROFILE.search(system):
        return PolicyVerdict(
            False, "personal_data", "made under a signed-in user's profile and records"
        )
    return ALLOWED


# --- entry points -----------------------------------------------------------------------

#: A rule about one request. Every rule takes the request's analysis
#: (:func:`~.features.analyze`) when the caller already has it, so no rule analyses
#: a request twice; a rule that reads it and gets None analyses the request itself.
RequestRule = Callable[[Request, Side | None], PolicyVerdict]

_REQUEST_RULES: tuple[RequestRule, ...] = (
    mutation,
    time_sensitive,
    declared,
    creative,
    personal_data,
)


def request_policy(request: Request | str, side: Side | None = None) -> PolicyVerdict:
    """May this request be answered from (or stored in) a cache at all? ``side``:
    the request already analysed (see :data:`RequestRule`)."""
    req = Request.of(request)
    for rule in _REQUEST_RULES:
        verdict = rule(req, side)
        if not verdict.allowed:
            return verdict
    return ALLOWED


def scope_key(request: Request) -> str:
    """The scope a cached answer lives in: the system prompt, whitespace-normalised.
    Requests under different system prompts (users, apps, personas) never share
    cached answers."""
    return " ".join((request.system_prompt or "").split())


def pair_policy(stored: Request, new: Request) -> PolicyVerdict:
    """May an answer stored for ``stored`` be served for ``new``? (Both requests
    must also pass :func:`request_policy`.)"""
    if scope_key(stored) != scope_key(new):
        return PolicyVerdict(
            False, "cross_user", "stored under another system prompt (user, app or persona)"
        )
    return ALLOWED


def check(stored: Request, new: Request, sides: tuple[Side, Side] | None = None) -> PolicyVerdict:
    """Every policy rule for serving ``stored``'s answer to ``new`` (``sides``: the
    two requests already analysed, stored first)."""
    side_stored, side_new = sides or (None, None)
    for verdict in (
        request_policy(new, side_new),
        request_policy(stored, side_stored),
        pair_policy(stored, new),
    ):
        if not verdict.allowed:
            return verdict
    return ALLOWED
