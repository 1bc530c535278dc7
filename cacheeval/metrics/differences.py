"""What differs between the two requests of a row, in a fixed vocabulary.

One analysis shared by the reports (failure groups) and the per-pair viewer
(highlighted tokens). It reads only what a row carries: the two requests
(system prompt, prior turns, tools, compared after
:meth:`~cacheeval.schema.Request.key`'s canonicalisation, as
:func:`~cacheeval.schema.subscore_of` does), the token difference of the two
queries, and for never-cache rows the policy their payload names. It is a set
of plain heuristics, not a judge: it says *where* the requests differ and
what kind of token changed, never whether the change matters.

* :func:`changed_tokens` - each query's tokens with a changed flag;
* :func:`what_differs` - the :class:`Difference` list of a row, in
  :data:`DIFFERENCE_KINDS` order, never empty;
* :func:`primary_kind` - the first of them (what a report groups by).
"""

from __future__ import annotations

import difflib
import functools
import json
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..schema import POLICY_NO_CACHE, Row

SYSTEM_PROMPT = "system prompt / user"
PRIOR_TURNS = "prior turns"
TOOLS = "tools"
POLICY_CREATIVE = "policy: creative"
POLICY_LIVE = "policy: live data"
POLICY_STATE = "policy: state change"
POLICY_PERSONAL = "policy: personal data"
NUMBER = "number"
NAME = "name"
OPERATOR = "operator or direction"
LANGUAGE = "language"
MOST_WORDS = "most words differ"
NOTHING = "nothing detected"

#: Every kind :func:`what_differs` reports, in priority order: the request
#: context first (a cache keyed on it never confuses those rows), then the
#: never-cache policies, then what changed inside the query. ``most words
#: differ``: the queries share under half their words, so the finer query
#: kinds are not looked for (they would name noise).
DIFFERENCE_KINDS: tuple[str, ...] = (
    SYSTEM_PROMPT,
    PRIOR_TURNS,
    TOOLS,
    POLICY_CREATIVE,
    POLICY_LIVE,
    POLICY_STATE,
    POLICY_PERSONAL,
    NUMBER,
    NAME,
    OPERATOR,
    LANGUAGE,
    MOST_WORDS,
    NOTHING,
)
_RANK = {k: i for i, k in enumerate(DIFFERENCE_KINDS)}

#: The policy named in a ``policy_no_cache`` payload (``payload["policy"]``).
POLICY_KINDS: dict[str, str] = {
    "creative": POLICY_CREATIVE,
    "time_sensitive": POLICY_LIVE,
    "live": POLICY_LIVE,
    "mutation": POLICY_STATE,
    "personalized": POLICY_PERSONAL,
    "cross_user": POLICY_PERSONAL,
}

#: Below this share of common words the queries count as mostly different.
MOST_WORDS_RATIO = 0.5


@dataclass(frozen=True, slots=True)
class Difference:
    """One kind of difference and the changed span on each side ("" when
    that side has none; several spans are joined with `` … ``)."""

    kind: str
    a: str
    b: str


# --- tokens -------------------------------------------------------------------

_TOKEN = re.compile(r"\s+|\w+|[^\w\s]")


def tokenize(text: str) -> list[str]:
    """Words, single punctuation marks and whitespace runs; joined they give ``text``.

    >>> tokenize("Set it to 7 pm.")
    ['Set', ' ', 'it', ' ', 'to', ' ', '7', ' ', 'pm', '.']
    """
    return _TOKEN.findall(text)


@functools.lru_cache(maxsize=1 << 16)
def _match_key(token: str) -> str:
    # Case, accents and the width of whitespace do not count as a change.
    if token.isspace():
        return " "
    if token.isascii():
        return token.lower()
    decomposed = unicodedata.normalize("NFKD", token.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def _opcodes(ta: Sequence[str], tb: Sequence[str]) -> list[tuple[str, int, int, int, int]]:
    """difflib's non-equal opcodes of the two token lists, matched on their
    words and marks alone (whitespace never anchors a match, so a changed
    phrase stays one span), as token index ranges that take in the
    whitespace inside each span."""
    ia = [i for i, t in enumerate(ta) if not t.isspace()]
    ib = [j for j, t in enumerate(tb) if not t.isspace()]
    matcher = difflib.SequenceMatcher(
        None, [_match_key(ta[i]) for i in ia], [_match_key(tb[j]) for j in ib], autojunk=False
    )

    def span(index: Sequence[int], lo: int, hi: int, size: int) -> tuple[int, int]:
        if hi > lo:
            return index[lo], index[hi - 1] + 1
        at = index[lo] if lo < len(index) else size
        return at, at

    return [
        (tag, *span(ia, i1, i2, len(ta)), *span(ib, j1, j2, len(tb)))
        for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        if tag != "equal"
    ]


def changed_tokens(a: str, b: str) -> tuple[list[tuple[str, bool]], list[tuple[str, bool]]]:
    """Each side's tokens (:func:`tokenize`) with a flag: True where the token
    is not part of the longest matching blocks (difflib.SequenceMatcher over
    case-folded, accent-stripped words and marks; whitespace inside a changed
    span is flagged with it). Joining a side's tokens gives back its text.

    >>> ca, cb = changed_tokens("Set an alarm for 7 pm.", "set an alarm for 7 am")
    >>> [t for t, changed in ca if changed], [t for t, changed in cb if changed]
    (['pm', '.'], ['am'])
    >>> "".join(t for t, _ in cb)
    'set an alarm for 7 am'
    """
    ta, tb = tokenize(a), tokenize(b)
    fa, fb = [False] * len(ta), [False] * len(tb)
    for _, i1, i2, j1, j2 in _opcodes(ta, tb):
        fa[i1:i2] = [True] * (i2 - i1)
        fb[j1:j2] = [True] * (j2 - j1)
    return list(zip(ta, fa, strict=True)), list(zip(tb, fb, strict=True))


# --- vocabularies ---------------------------------------------------------------

_NUMBER_WORDS = frozenset(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen"
    " fourteen fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty"
    " sixty seventy eighty ninety hundred thousand million billion trillion dozen"
    " half halve double twice triple quarter third fourth fifth sixth seventh"
    " eighth ninth tenth eleventh twelfth thirteenth fourteenth fifteenth sixteenth"
    " seventeenth eighteenth nineteenth twentieth thirtieth fortieth fiftieth hundredth".split()
)
_OPERATOR_WORDS = frozenset(
    "increase increases increasing raise raised decrease decreases decreasing reduce lower"
    " up down ascending descending asc desc min max minimum maximum smallest largest biggest"
    " least most highest lowest fewest greatest before after above below over under more"
    " less fewer greater smaller larger bigger shorter longer earliest latest oldest newest"
    " earlier later top bottom left right north south east west forward backward forwards"
    " backwards inside outside add subtract plus minus times multiply multiplied divide"
    " divided sum product difference not no never none without except exclude exclusive"
    " inclusive buy sell send receive encrypt decrypt encode decode import export upload"
    " download push pull start stop lock unlock enable disable off open close am pm"
    " true false yes positive negative past future previous next cheaper dearer faster"
    " slower hotter colder warmer cooler first last"
    # opposites and operations a question turns on
    " hot cold warm cool born die died start end begin finish win lose gain rise fall"
    " enter exit arrive depart accept reject allow deny include improve hurt absorb release"
    " give take lend borrow derivative integral differentiate integrate radius diameter"
    " simple compound compounded perimeter circumference mean median average".split()
)
_OPERATOR_SYMBOLS = frozenset("<>=+*/^%!")
_NATURAL_LANGUAGES = frozenset(
    "english spanish french german italian portuguese dutch russian chinese mandarin"
    " cantonese japanese korean arabic hindi bengali urdu turkish polish swedish norwegian"
    " danish finnish greek hebrew thai vietnamese indonesian malay swahili ukrainian czech"
    " hungarian romanian persian farsi tagalog latin catalan irish welsh español espanol"
    " français francais deutsch italiano português portugues nederlands".split()
)
_PROGRAMMING_LANGUAGES = frozenset(
    "python javascript js typescript ts java kotlin scala rust ruby php swift golang sql"
    " bash shell powershell haskell perl lua julia matlab html css dart elixir erlang"
    " clojure fortran cobol pascal ocaml fsharp cpp csharp numpy pandas react node nodejs".split()
)
#: Capitalised only: as lower-case words they are ordinary English.
_CASED_LANGUAGES = frozenset({"C", "R", "Go"})
#: Capitalised words that open a sentence without naming anything.
_NOT_NAMES = frozenset(
    "i i'm a an the what which who whom whose how why when where is are was were be can could"
    " would should will shall do does did have has had may might must please give tell show"
    " name list explain describe write set make find get put create send book play turn"
    " convert translate summarise summarize compare calculate compute solve sort add remove"
    " let if in on at for to from of by with and or but so my your our their its this that"
    " these those there here it he she we they you any some every each all no not any"
    " hi hello hey thanks ok okay yes also then now just".split()
)
#: Function words of a few languages written in Latin script: enough to tell
#: which language a short query is in when the script does not.
_FUNCTION_WORDS: dict[str, frozenset[str]] = {
    "English": frozenset("the is are of and what how which who in to for a an do does".split()),
    "French": frozenset("le la les est des une un du et quel quelle qui dans pour en".split()),
    "Spanish": frozenset("el la los las es un una del y que qué cuál cómo en por para".split()),
    "German": frozenset("der die das ist ein eine und was wie welche wer im für mit".split()),
    "Italian": frozenset("il lo la gli è un una del e che qual come per di quanto fa".split()),
    "Portuguese": frozenset("o a os as é um uma do da e que qual como para em quanto".split()),
}


def _is_word(token: str) -> bool:
    return bool(token) and (token[0].isalnum() or token[0] == "_")


def _has_number(token: str) -> bool:
    return any(c.isdigit() for c in token) or token.casefold() in _NUMBER_WORDS


def _is_language(token: str) -> bool:
    folded = token.casefold()
    return (
        folded in _NATURAL_LANGUAGES
        or folded in _PROGRAMMING_LANGUAGES
        or token in _CASED_LANGUAGES
    )


def _name_positions(tokens: Sequence[str]) -> set[int]:
    """Indices of tokens that look like names: capitalised words inside a
    sentence, and acronyms anywhere; never a number, a language, an operator
    or a common function word. (A capitalised word opening a sentence is
    usually just the sentence's first word.)"""
    out: set[int] = set()
    sentence_start = True
    for i, token in enumerate(tokens):
        if token.isspace():
            continue
        if not _is_word(token):
            sentence_start = token in ".!?:;" or (sentence_start and token in "\"'(¿¡«")
            continue
        folded = token.casefold()
        ordinary = (
            _has_number(token)
            or _is_language(token)
            or folded in _OPERATOR_WORDS
            or folded in _NOT_NAMES
        )
        acronym = len(token) >= 2 and token.isupper() and token.isalpha()
        if token[0].isupper() and not ordinary and (acronym or not sentence_start):
            out.add(i)
        sentence_start = False
    return out


def _operator_at(tokens: Sequence[str], i: int) -> bool:
    token = tokens[i]
    if token.casefold() in _OPERATOR_WORDS or token in _OPERATOR_SYMBOLS:
        return True
    if token == "-":  # a minus sign beside a number or a variable, not a dash or hyphen
        before = next((t for t in reversed(tokens[:i]) if not t.isspace()), "")
        after = next((t for t in tokens[i + 1 :] if not t.isspace()), "")
        return (
            after[:1].isdigit()
            or before[-1:].isdigit()
            or (0 < len(before) <= 2 and 0 < len(after) <= 2)
        )
    return False


def _script(text: str) -> str | None:
    """The writing system most letters of ``text`` use (first word of their
    Unicode name: LATIN, CYRILLIC, CJK, HIRAGANA, ...), None without letters.

    >>> _script("Сколько будет 15%?"), _script("42")
    ('CYRILLIC', None)
    """
    if text.isascii():  # the common case, without a Unicode name lookup per letter
        return "LATIN" if any(c.isalpha() for c in text) else None
    counts: Counter[str] = Counter()
    for c in text:
        if c.isalpha():
            name = unicodedata.name(c, "")
            counts[name.split(" ")[0] if name else "OTHER"] += 1
    if not counts:
        return None
    best = max(counts.values())
    return min(s for s, n in counts.items() if n == best)


_SCRIPT_NAMES = {
    "CJK": "Han script",
    "HIRAGANA": "Japanese kana",
    "KATAKANA": "Japanese kana",
    "HANGUL": "Korean Hangul",
}


def _latin_language(tokens: Iterable[str]) -> str | None:
    """The language whose function words a Latin-script text uses most (at
    least two of them and more than any other language), else None."""
    words = [t.casefold() for t in tokens if _is_word(t)]
    scores = {lang: sum(w in vocab for w in words) for lang, vocab in _FUNCTION_WORDS.items()}
    ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
    if ranked[0][1] >= 2 and ranked[0][1] > ranked[1][1]:
        return ranked[0][0]
    return None


def _language_of(text: str, ratio: float) -> str | None:
    """The script of ``text`` when it is not Latin, else (when the queries
    share under half their words) the language its function words point to."""
    script = _script(text)
    if script != "LATIN":
        return None if script is None else _SCRIPT_NAMES.get(script, script.title() + " script")
    return _latin_language(tokenize(text)) if ratio < MOST_WORDS_RATIO else None


# --- the analysis -----------------------------------------------------------------


def _join(parts: Iterable[str]) -> str:
    seen: list[str] = []
    for p in parts:
        p = " ".join(p.split())
        if p and p not in seen:
            seen.append(p)
    return " … ".join(seen)


def _span_diff(a: str, b: str) -> tuple[str, str]:
    """The changed spans of two texts, each side's joined with `` … ``."""
    ta, tb = tokenize(a), tokenize(b)
    ops = _opcodes(ta, tb)
    return (
        _join("".join(ta[i1:i2]) for _, i1, i2, _, _ in ops),
        _join("".join(tb[j1:j2]) for _, _, _, j1, j2 in ops),
    )


def _turns_text(turns: Sequence[Mapping[str, Any]] | None) -> str:
    return "\n".join(f"{t.get('role', '')}: {t.get('content', '')}" for t in turns or ())


def _tool_names(tools: Sequence[Mapping[str, Any]] | None) -> list[str]:
    names = []
    for t in tools or ():
        name = t.get("name") or (t.get("function") or {}).get("name")
        names.append(str(name) if name is not None else json.dumps(dict(t), sort_keys=True)[:40])
    return names


def _context_differences(row: Row) -> list[Difference]:
    ka, kb = row.request("a").key(), row.request("b").key()
    out: list[Difference] = []
    if ka[2] != kb[2]:
        out.append(
            Difference(
                SYSTEM_PROMPT, *_span_diff(row.system_prompt_a or "", row.system_prompt_b or "")
            )
        )
    if ka[1] != kb[1]:
        out.append(
            Difference(
                PRIOR_TURNS, *_span_diff(_turns_text(row.context_a), _turns_text(row.context_b))
            )
        )
    if ka[3] != kb[3]:
        names_a, names_b = _tool_names(row.tools_a), _tool_names(row.tools_b)
        only_a = [n for n in names_a if n not in names_b]
        only_b = [n for n in names_b if n not in names_a]
        if only_a or only_b:
            out.append(Difference(TOOLS, ", ".join(only_a), ", ".join(only_b)))
        else:  # same tools, other definitions
            out.append(Difference(TOOLS, *_span_diff(ka[3], kb[3])))
    return out


def policy_kind(row: Row) -> str | None:
    """The policy kind of a never-cache row (None for other rows, or when
    neither its payload nor its subcategory/domain names one).

    >>> from cacheeval.schema import ROW_FIELDS
    >>> r = Row.from_dict({f: None for f in ROW_FIELDS} | {
    ...     "verification_method": "policy_no_cache",
    ...     "verification_payload": {"kind": "policy", "policy": "mutation"}})
    >>> policy_kind(r)
    'policy: state change'
    """
    if row.verification_method != POLICY_NO_CACHE:
        return None
    payload = row.verification_payload or {}
    named = payload.get("policy") if isinstance(payload, Mapping) else None
    if isinstance(named, str) and named in POLICY_KINDS:
        return POLICY_KINDS[named]
    hints = f"{row.subcategory or ''} {row.domain or ''}".casefold()
    for word, kind in (
        ("creative", POLICY_CREATIVE),
        ("live", POLICY_LIVE),
        ("time", POLICY_LIVE),
        ("mutation", POLICY_STATE),
        ("personal", POLICY_PERSONAL),
        ("user", POLICY_PERSONAL),
    ):
        if word in hints:
            return kind
    return None


def _query_differences(a: str, b: str) -> list[Difference]:
    ta, tb = tokenize(a), tokenize(b)
    ops = _opcodes(ta, tb)
    if not ops:
        return []
    out: list[Difference] = []
    words_a = [_match_key(t) for t in ta if _is_word(t)]
    words_b = [_match_key(t) for t in tb if _is_word(t)]
    ratio = difflib.SequenceMatcher(None, words_a, words_b, autojunk=False).ratio()
    # Two Latin-script queries in two languages share few words, so their
    # function words are only counted then.
    lang_a, lang_b = _language_of(a, ratio), _language_of(b, ratio)
    if lang_a and lang_b and lang_a != lang_b:
        out.append(Difference(LANGUAGE, lang_a, lang_b))
    if ratio < MOST_WORDS_RATIO:
        spans = (
            _join("".join(ta[i1:i2]) for _, i1, i2, _, _ in ops),
            _join("".join(tb[j1:j2]) for _, _, _, j1, j2 in ops),
        )
        return out + [Difference(MOST_WORDS, *spans)]
    capitalised = any(
        t[:1].isupper() for _, i1, i2, j1, j2 in ops for t in (*ta[i1:i2], *tb[j1:j2])
    )
    names_a = _name_positions(ta) if capitalised else set()
    names_b = _name_positions(tb) if capitalised else set()
    detectors = {
        NUMBER: (lambda ts, i, names: _has_number(ts[i])),
        NAME: (lambda ts, i, names: i in names),
        OPERATOR: (lambda ts, i, names: _operator_at(ts, i)),
        LANGUAGE: (lambda ts, i, names: _is_language(ts[i])),
    }
    for kind, fires in detectors.items():
        parts_a, parts_b = [], []
        for _, i1, i2, j1, j2 in ops:
            if any(fires(ta, i, names_a) for i in range(i1, i2)) or any(
                fires(tb, j, names_b) for j in range(j1, j2)
            ):
                parts_a.append("".join(ta[i1:i2]))
                parts_b.append("".join(tb[j1:j2]))
        if kind == OPERATOR and not parts_a:
            parts_a, parts_b = _order_swap(ta, tb, ops)
        if parts_a or parts_b:
            out.append(Difference(kind, _join(parts_a), _join(parts_b)))
    return out


def _order_swap(
    ta: Sequence[str], tb: Sequence[str], ops: Sequence[tuple[str, int, int, int, int]]
) -> tuple[list[str], list[str]]:
    """The changed spans when they are the same words in another order ("from
    X to Y" against "from Y to X"), else nothing."""
    changed_a = Counter(
        _match_key(ta[i]) for _, i1, i2, _, _ in ops for i in range(i1, i2) if not ta[i].isspace()
    )
    changed_b = Counter(
        _match_key(tb[j]) for _, _, _, j1, j2 in ops for j in range(j1, j2) if not tb[j].isspace()
    )
    words = [w for w in changed_a if _is_word(w)]
    if words and changed_a == changed_b:
        return (
            ["".join(ta[i1:i2]) for _, i1, i2, _, _ in ops],
            ["".join(tb[j1:j2]) for _, _, _, j1, j2 in ops],
        )
    return [], []


def what_differs(row: Row) -> tuple[Difference, ...]:
    """Every kind of difference between the row's two requests, one
    :class:`Difference` per kind, in :data:`DIFFERENCE_KINDS` order; never
    empty (``nothing detected`` when no detector fires).

    The context kinds compare the canonical request keys (system prompt,
    turns, tools); the policy kind comes from a ``policy_no_cache`` row's
    payload; the query kinds look at the changed tokens of the two queries:
    digits and number words (number), capitalised words and acronyms (name),
    a curated list of operators, comparisons, directions and negations or the
    same words in swapped order (operator or direction), language names or a
    change of script or of function words (language). When the queries share
    under half their words only ``most words differ`` (and a language change)
    is reported.

    >>> from cacheeval.schema import ROW_FIELDS
    >>> r = Row.from_dict({f: None for f in ROW_FIELDS} | {
    ...     "query_a": "Set an alarm for 7 pm.", "query_b": "Set an alarm for 7 am.",
    ...     "system_prompt_a": "User: Ana.", "system_prompt_b": "User: Bo."})
    >>> [(d.kind, d.a, d.b) for d in what_differs(r)]
    [('system prompt / user', 'Ana', 'Bo'), ('operator or direction', 'pm', 'am')]
    """
    found = _context_differences(row)
    policy = policy_kind(row)
    if policy is not None:
        found.append(Difference(policy, "", ""))
    found += _query_differences(row.query_a or "", row.query_b or "")
    if not found:
        return (Difference(NOTHING, "", ""),)
    found.sort(key=lambda d: _RANK[d.kind])
    return tuple(found)


def primary_kind(row: Row) -> str:
    """The first kind :func:`what_differs` reports: what a report groups a row by."""
    return what_differs(row)[0].kind
