"""Identity edits: one answer-determining detail changed (MISS, ADVERSARIAL).

Every proposal passes the checker's validator for its kind
(:data:`cacheeval.verify.perturbation.VALIDATORS`) before it is used, so the
generator and ``cacheeval verify`` agree by construction on what an edit may do.
"""

from __future__ import annotations

import random
import re

from ...verify import stress_lexicon as lex
from ...verify.perturbation import ENTITY_KINDS, FRAME_SLOT, is_year, number_shape
from ...verify.perturbation_questions import QUESTION_FOCUS
from .edits import Edit, Proposer, TextMemo, alternation, first_valid, sample
from .pairs import PairSwap

_NUMBER = re.compile(r"\d+/\d+|[$€£]?\d[\d,]*(?:\.\d+)?")
_NON_DIGIT = re.compile(r"\D")
_YEAR = re.compile(r"(?<![\w.])(?:18|19|20)\d\d(?![\w.])")


_DELTAS = (1, 2, 3, -1, -2, -3)


def _digit_options(digits: str) -> dict[int, str | None]:
    """Per step of :data:`_DELTAS`: the other value with as many digits (trailing
    zeros kept: 250 -> 350, 40 -> 70) it gives, or None (never 0 or 1)."""
    sig = digits.rstrip("0") or "0"
    zeros = len(digits) - len(sig)
    value = int(sig)
    low = 10 ** (len(sig) - 1) if len(sig) > 1 else 2
    high = 10 ** len(sig) - 1
    out: dict[int, str | None] = {}
    for delta in _DELTAS:
        new = value + delta
        text = None
        if low <= new <= high and new != value:
            text = str(new) + "0" * zeros
            if text.lstrip("0") in ("", "1") or len(text) != len(digits):
                text = None
        out[delta] = text
    return out


def _reshaped(token: str, digits: str) -> str:
    """``digits`` written in ``token``'s shape (symbol, commas, decimal point)."""
    if len(token) == len(digits) and token.isdigit():
        return digits  # what the join below gives, without a generator
    it = iter(digits)
    return "".join(next(it) if c.isdigit() else c for c in token)


#: How a number token changes: None (a year, kind 'year'), a fraction's other
#: numerators over its denominator, or per step of :data:`_DELTAS` the token it
#: becomes in the same shape (None: no such value).
NumberPlan = tuple[str, tuple[str, ...]] | tuple[str, dict[int, str | None]] | None


def _number_plan(token: str) -> NumberPlan:
    if is_year(token.lstrip("$€£")):
        return None
    if "/" in token:
        num, den = (int(x) for x in token.split("/"))
        return "fraction", tuple(f"{n}/{den}" for n in range(1, min(den, 30)) if n != num)
    digits = _NON_DIGIT.sub("", token)
    shape = number_shape(token)
    steps: dict[int, str | None] = {}
    if "." in token:
        whole, frac = token.lstrip("$€£").replace(",", "").split(".")
        if whole.strip("0"):
            news = {d: None if n is None else n + frac for d, n in _digit_options(whole).items()}
        else:
            news = {d: None if f is None else whole + f for d, f in _digit_options(frac).items()}
    else:
        news = _digit_options(digits)
    for delta, new in news.items():
        option = None
        if new is not None and len(new) == len(digits):
            option = _reshaped(token, new)
            if number_shape(option) != shape:
                option = None
        steps[delta] = option
    return "steps", steps


#: :func:`_number_plan` per token (the same numbers recur across prompts).
_NUMBER_PLANS: TextMemo[str, NumberPlan] = TextMemo(_number_plan, limit=4096)


def number(text: str, rng: random.Random) -> Edit | None:
    """A number changed to another in the same format."""
    candidates = []
    for m in _NUMBER.finditer(text):
        token = m.group().rstrip(",.")
        plan = _NUMBER_PLANS(token)
        if plan is None:
            continue
        start, end = m.start(), m.start() + len(token)
        if plan[0] == "fraction":
            fractions = plan[1]
            assert isinstance(fractions, tuple)
            candidates.append((start, end, sample(rng, fractions, min(4, len(fractions)))))
            continue
        steps = plan[1]
        assert isinstance(steps, dict)
        options = [o for d in sample(rng, _DELTAS, 6) if (o := steps[d]) is not None]
        candidates.append((start, end, options))
    return first_valid("number", text, rng, candidates)


def year(text: str, rng: random.Random) -> Edit | None:
    """A year moved by four or eight years (never past 2099)."""
    candidates = []
    for m in _YEAR.finditer(text):
        y = int(m.group())
        # four-year steps keep a periodic event real (Olympics, World Cups, elections)
        options = [str(y + d) for d in (-8, -4, 4, 8) if 1800 <= y + d <= 2099]
        candidates.append((m.start(), m.end(), options))
    return first_valid("year", text, rng, candidates)


#: What :meth:`EntitySwap.plan` finds in a text.
EntityPlan = tuple[tuple[tuple[int, int], ...], tuple[str, ...], list[str] | None]


class EntitySwap:
    """A member of a curated entity class swapped for another not in the text (in
    an all-lower-case text, lower-case members too, written in lower case)."""

    def __init__(self, kind: str, cls: str) -> None:
        self.kind = kind
        self.cls = cls
        self.members = lex.ENTITIES[cls]
        self.pattern = alternation(self.members)
        self.lower = cls in lex.LOWERCASE_CLASSES
        lowered = [m.lower() for m in self.members if m.lower() not in lex.LOWERCASE_AMBIGUOUS]
        self.lower_pattern = alternation(lowered)
        #: (member, lower-case member, usable in lower case) of every member
        self.lowered = [
            (m, m.lower(), m.lower() not in lex.LOWERCASE_AMBIGUOUS) for m in self.members
        ]
        #: :meth:`plan` per text (a repeated prompt is scanned once)
        self.plans = TextMemo(self.plan, limit=256)

    def plan(self, text: str) -> EntityPlan | None:
        """The members found in ``text`` (start, end), the members it does not
        name (to draw from), and for software the members of the found ones'
        groups; None when no member is found."""
        lower = self.lower and text == text.lower()
        pattern = self.lower_pattern if lower else self.pattern
        found = list(pattern.finditer(text))
        if not found:
            return None
        low = text.lower()
        if lower:
            others = [w for _, w, plain in self.lowered if plain and w not in low]
        else:
            others = [m for m, w, _ in self.lowered if w not in low]
        same_group = None
        if self.cls == "software":  # the same kind of software: an OS for an OS
            groups = [g for g in lex.SOFTWARE_GROUPS if any(m.group() in g for m in found)]
            same_group = sorted({w for g in groups for w in g} - {m.group() for m in found})
        spans = tuple((m.start(), m.end()) for m in found)
        return spans, tuple(others), same_group

    def __call__(self, text: str, rng: random.Random) -> Edit | None:
        plan = self.plans(text)
        if plan is None:
            return None
        spans, others, same_group = plan
        picks = sample(rng, others, min(8, len(others)))
        if same_group is not None:
            picks = same_group
        candidates = [(start, end, picks) for start, end in spans]
        return first_valid(self.kind, text, rng, candidates)


_CJK_ELEMENT = re.compile("[" + "".join(sorted(lex.CJK_ELEMENTS)) + "](?=的)")
_COMPARISON = re.compile(r"(?<=[\w)] )(?:<=|>=|<|>|≤|≥)(?= [\w(-])")
_TURNED = {a: b for x, y in lex.COMPARISONS for a, b in ((x, y), (y, x))}


def comparison(text: str, rng: random.Random) -> Edit | None:
    """A comparison operator turned round ("2k + 5 > 17" -> "2k + 5 < 17")."""
    candidates = [(m.start(), m.end(), [_TURNED[m.group()]]) for m in _COMPARISON.finditer(text)]
    return first_valid("comparison", text, rng, candidates)


class NounSwap:
    """A common noun of a curated kind swapped for another of the kind, same number."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        forms: dict[str, list[str]] = {}
        pairs = lex.NOUNS[kind]
        for singular, plural in pairs:
            forms.setdefault(singular, []).extend(s for s, _ in pairs if s != singular)
            if plural and plural != singular:
                forms.setdefault(plural, []).extend(p for _, p in pairs if p and p != plural)
        self.forms = forms
        words = [*forms, *(w.capitalize() for w in forms if w not in lex.CAPITALISED_NOUNS)]
        self.pattern = alternation(words)

    def __call__(self, text: str, rng: random.Random) -> Edit | None:
        candidates = []
        if self.kind == "element":  # Chinese has no word boundaries
            for m in _CJK_ELEMENT.finditer(text):
                candidates.append((m.start(), m.end(), sorted(lex.CJK_ELEMENTS - {m.group()})))
        for m in self.pattern.finditer(text):
            word = m.group()
            key = word if word in self.forms else word.lower()
            options = sorted(set(self.forms[key]))
            if word[:1].isupper() and word not in lex.CAPITALISED_NOUNS:
                options = [o.capitalize() for o in options]
            candidates.append((m.start(), m.end(), options))
        return first_valid(self.kind, text, rng, candidates)


_WORKS = {
    medium: alternation([*(t for t, _ in works), *(t.lower() for t, _ in works)])
    for medium, works in lex.WORKS.items()
}


def work(text: str, rng: random.Random) -> Edit | None:
    """A famous work swapped for one of its medium by someone else, in a question
    about its maker or date."""
    candidates = []
    for medium, pattern in _WORKS.items():
        titles = [t for t, _ in lex.WORKS[medium]]
        for m in pattern.finditer(text):
            options = [t.lower() for t in titles] if text == text.lower() else titles
            candidates.append((m.start(), m.end(), options))
    return first_valid("work", text, rng, candidates)


_AUDIENCE = re.compile(
    r"\b(?:to|for|like) (" + "|".join(re.escape(a) for a in lex.AUDIENCES) + r")\b",
    re.IGNORECASE,
)


def audience(text: str, rng: random.Random) -> Edit | None:
    """The reader an explanation is for changed ("to a medical student" -> "to a child")."""
    candidates = [(m.start(1), m.end(1), list(lex.AUDIENCES)) for m in _AUDIENCE.finditer(text)]
    return first_valid("audience", text, rng, candidates)


_EVENTS = alternation([name for name, _ in lex.EVENTS])
_ACRONYMS = alternation([a for group in lex.ACRONYM_GROUPS for a in group])
_EXTENSION = re.compile(r"(?<=[\w *]\.)(?:" + "|".join(lex.FILE_EXTENSIONS) + r")\b")


def event(text: str, rng: random.Random) -> Edit | None:
    """A historical event swapped for another ("World War I" -> "the Cold War")."""
    names = [n for n, _ in lex.EVENTS]
    candidates = []
    for m in _EVENTS.finditer(text):
        word = m.group()
        options = [n for n in names if n.islower() == word.islower()]
        if word.startswith("the ") or word.startswith("The "):
            options = [n for n in options if n.startswith("the ")]
        candidates.append((m.start(), m.end(), options))
    return first_valid("event", text, rng, candidates)


def acronym(text: str, rng: random.Random) -> Edit | None:
    """An acronym swapped for another of its group ("APR" -> "APY")."""
    candidates = []
    for m in _ACRONYMS.finditer(text):
        group = next(g for g in lex.ACRONYM_GROUPS if m.group() in g)
        candidates.append((m.start(), m.end(), [a for a in group if a != m.group()]))
    return first_valid("acronym", text, rng, candidates)


def file_type(text: str, rng: random.Random) -> Edit | None:
    """A file extension swapped (".py files" -> ".js files")."""
    candidates = [
        (m.start(), m.end(), list(lex.FILE_EXTENSIONS)) for m in _EXTENSION.finditer(text)
    ]
    return first_valid("file_type", text, rng, candidates)


_ORDINALS = alternation([*lex.ORDINALS, *(w.capitalize() for w in lex.ORDINALS)])


def ordinal(text: str, rng: random.Random) -> Edit | None:
    """An ordinal that picks a thing changed ("the Second World War" -> "First")."""
    candidates = []
    for m in _ORDINALS.finditer(text):
        word = m.group()
        same_form = [w for w in lex.ORDINALS if w[0].isdigit() == word[0].isdigit()]
        options = [w if word.islower() else w.capitalize() for w in same_form]
        candidates.append((m.start(), m.end(), [o for o in options if o.lower() != word.lower()]))
    return first_valid("ordinal", text, rng, candidates)


def _number_word(text: str, rng: random.Random) -> Edit | None:
    pattern = _NUMBER_WORDS
    candidates = []
    for m in pattern.finditer(text):
        w = m.group()
        options = [x if w.islower() else x.capitalize() for x in lex.NUMBER_WORDS]
        candidates.append((m.start(), m.end(), [o for o in options if o.lower() != w.lower()]))
    return first_valid("number_word", text, rng, candidates)


_NUMBER_WORDS = alternation([*lex.NUMBER_WORDS, *(w.capitalize() for w in lex.NUMBER_WORDS)])

_UNIT_FORMS: dict[str, list[str]] = {}
for _dim, _units in lex.UNITS.items():
    for _i, (_s, _p) in enumerate(_units):
        _UNIT_FORMS[_s] = [s for s, _ in _units if s != _s]
        _UNIT_FORMS[_p] = [p for _, p in _units if p != _p]
for _dim, _abbreviations in lex.UNIT_ABBREVIATIONS.items():
    for _a in _abbreviations:
        _UNIT_FORMS[_a] = [x for x in _abbreviations if x != _a]
_UNIT = alternation(list(_UNIT_FORMS))


def unit(text: str, rng: random.Random) -> Edit | None:
    """A unit swapped for another of its dimension, in the same form."""
    candidates = [(m.start(), m.end(), _UNIT_FORMS[m.group()]) for m in _UNIT.finditer(text)]
    return first_valid("unit", text, rng, candidates)


ENDPOINT_WORDS = [
    *(w for members in lex.ENTITIES.values() for w in members),
    *(w for units in lex.UNITS.values() for pair in units for w in pair),
]
_ENDPOINT = "|".join(re.escape(w) for w in sorted(set(ENDPOINT_WORDS), key=lambda w: -len(w)))
_DIRECTION = re.compile(
    rf"(?<![\w+#])(from )?({_ENDPOINT}) (to|into) ({_ENDPOINT})(?![\w+#])", re.IGNORECASE
)


def _direction_spans(text: str) -> list[tuple[int, int, list[str]]]:
    candidates = []
    for m in _DIRECTION.finditer(text):
        frm, a, to, b = m.groups()
        swapped = f"{frm or ''}{b} {to} {a}"
        candidates.append((m.start(), m.end(), [swapped]))
    return candidates


#: :func:`_direction_spans` per text (its regex is a long case-insensitive alternation).
_DIRECTION_SPANS = TextMemo(_direction_spans, limit=1024)


def direction(text: str, rng: random.Random) -> Edit | None:
    """``from A to B`` / ``A to B`` turned round, where the direction decides the answer."""
    return first_valid("direction", text, rng, _DIRECTION_SPANS(text))


def _frame_table() -> list[tuple[re.Pattern[str], str]]:
    out = []
    for x, y in lex.FRAME_SWAPS:
        for a, b in ((x, y), (y, x)):
            pattern = re.escape(a).replace(r"\{X\}", FRAME_SLOT)
            out.append((re.compile(rf"\b{pattern}\b", re.IGNORECASE), b))
    return out


_FRAMES = _frame_table()


def operator_frame(text: str, rng: random.Random) -> Edit | None:
    """A curated two-sided frame swapped: "remove X from" <-> "add X to"."""
    candidates = []
    for pattern, target in _FRAMES:
        for m in pattern.finditer(text):
            want = target.replace("{X}", m.group(1))
            if m.group()[:1].isupper():
                want = want[:1].upper() + want[1:]
            candidates.append((m.start(), m.end(), [want]))
    return first_valid("operator_frame", text, rng, candidates)


def _entity_swaps() -> dict[str, Proposer]:
    out: dict[str, Proposer] = {}
    for kind, cls in ENTITY_KINDS.items():
        out[kind] = EntitySwap(kind, cls)
    for noun in lex.NOUNS:
        out[noun] = NounSwap(noun)
    out["ordinal"] = ordinal
    out["work"] = work
    out["event"] = event
    out["acronym"] = acronym
    out["file_type"] = file_type
    out["comparison"] = comparison
    out["audience"] = audience
    return out


IDENTITY: dict[str, Proposer] = {
    "number": number,
    "year": year,
    "number_word": _number_word,
    **_entity_swaps(),
    "unit": unit,
    "direction": direction,
    "antonym": PairSwap("antonym", lex.ANTONYMS),
    "operator_frame": operator_frame,
    "negation_remove": PairSwap("negation_remove", (*lex.NEGATIONS, *lex.NEGATED_PREFERENCES), +1),
    "negation_add": PairSwap("negation_add", lex.NEGATABLE, +1),
    "with_without": PairSwap("with_without", (*lex.WITH_WITHOUT, ("without", "with")), +0),
    "question_focus": PairSwap("question_focus", QUESTION_FOCUS, +1),
}
