"""Noise edits: the same request typed differently. The answer is kept (HIT)."""

from __future__ import annotations

import random
import re

from ...verify import stress_lexicon as lex
from ...verify.perturbation import LOWERABLE_OPENERS, typo_target
from ...verify.perturbation_text import FIRST_WORD
from .edits import CODE_CHARS, Edit, Proposer, TextMemo, first_valid, sample, shuffle, verdict
from .pairs import PairSwap

_WORD = re.compile(r"[a-z]{5,}")
_QUESTION_START = re.compile(
    r"\A(?:(?:in|on|at|for|from|by|to|of|with) (?:what|which|whom)|how|what|whats|why|when|where|"
    r"which|who|can|could|is|are|do|does|did|should|would|will)\b",
    re.IGNORECASE,
)
_GREETING_START = re.compile(r"\A(?:hi|hey|hello|good (?:morning|evening|afternoon))\b", re.I)


def case_lower(text: str, rng: random.Random) -> Edit | None:
    """The whole request in lower case (never one with quotes or code)."""
    low = text.lower()
    if low == text or CODE_CHARS.search(text):
        return None
    return Edit("case_lower", 0, len(text), text, low)


def case_upper(text: str, rng: random.Random) -> Edit | None:
    """The whole request in capitals (short requests, no quotes or code)."""
    up = text.upper()
    if up == text or CODE_CHARS.search(text) or len(text.split()) > 14:
        return None
    return Edit("case_upper", 0, len(text), text, up)


_INNER_SPACE = re.compile(r"(?<=\w) (?=\w)")
_PUNCT_TAIL = re.compile(r"[?.!]*\Z")
_COMMA = re.compile(r",(?= )")


def spacing(text: str, rng: random.Random) -> Edit | None:
    """One space doubled, or a space put before the final question mark."""
    spaces = [m.start() for m in _INNER_SPACE.finditer(text)]
    options: list[tuple[int, int, str]] = []
    if spaces:
        i = spaces[rng.randrange(len(spaces))]
        if text[:i].count('"') % 2 == 0 and text[:i].count("`") % 2 == 0:
            options.append((i, i + 1, "  "))
    if text.endswith("?") and len(text) > 1 and text[-2].isalnum():
        options.append((len(text) - 1, len(text) - 1, " "))
    if not options:
        return None
    start, end, repl = options[rng.randrange(len(options))]
    return Edit("spacing", start, end, text[start:end], repl)


def punct_end(text: str, rng: random.Random) -> Edit | None:
    """The final punctuation dropped, doubled, or added when missing."""
    m = _PUNCT_TAIL.search(text)
    assert m is not None
    tail = m.group()
    if text[: m.start()].rstrip() != text[: m.start()] or not text[: m.start()]:
        return None
    if not tail:
        repl = "?" if _QUESTION_START.match(text) else "."
    elif tail in ("?", "!"):
        repl = rng.choice(["", tail * 2])
    elif tail == ".":
        repl = ""
    else:
        repl = tail[0]
    if verdict("punct_end", text, m.start(), len(text), tail, repl) is not None:
        return None
    return Edit("punct_end", m.start(), len(text), tail, repl)


def punct_comma(text: str, rng: random.Random) -> Edit | None:
    """One comma before a space dropped (never one inside a number)."""
    candidates = [(m.start(), m.start() + 1, [""]) for m in _COMMA.finditer(text)]
    return first_valid("punct_comma", text, rng, candidates)


class _TypoWords:
    """The candidate words of one text (start, end, word) and, filled in as they
    are asked, whether each may carry a typo (:func:`typo_target`)."""

    __slots__ = ("text", "words", "fits")

    def __init__(self, text: str) -> None:
        self.text = text
        self.words = [(m.start(), m.end(), m.group()) for m in _WORD.finditer(text)]
        self.fits: list[bool | None] = [None] * len(self.words)

    def fit(self, i: int) -> bool:
        fit = self.fits[i]
        if fit is None:
            start, end, _ = self.words[i]
            fit = self.fits[i] = typo_target(self.text, start, end) is None
        return fit


#: :class:`_TypoWords` per text: the four typo kinds (and a repeated prompt) share it.
_TYPO_WORDS = TextMemo(_TypoWords, limit=4096)


def _typo(kind: str) -> Proposer:
    def propose(text: str, rng: random.Random) -> Edit | None:
        words = _TYPO_WORDS(text)
        order = list(range(len(words.words)))
        shuffle(rng, order)  # try words in a seeded order; the first fit is typed wrong
        i = next((i for i in order if words.fit(i)), None)
        if i is None:
            return None
        start, end, w = words.words[i]
        i = rng.randrange(1, len(w) - 1)
        if kind == "typo_transpose":
            if w[i] == w[i + 1]:
                return None
            typo = w[:i] + w[i + 1] + w[i] + w[i + 2 :]
        elif kind == "typo_drop":
            typo = w[:i] + w[i + 1 :]
        elif kind == "typo_double":
            typo = w[: i + 1] + w[i:]
        else:
            typo = w[:i] + rng.choice(lex.KEY_NEIGHBOURS[w[i]]) + w[i + 1 :]
        return first_valid(kind, text, rng, [(start, end, [typo])])

    return propose


def greeting(text: str, rng: random.Random) -> Edit | None:
    """A greeting or politeness opener before the request."""
    m = FIRST_WORD.match(text)
    if m is None or _GREETING_START.match(text):
        return None
    word, end = m.group(), m.end()
    lowerable = word in LOWERABLE_OPENERS
    for g in sample(rng, lex.GREETINGS, len(lex.GREETINGS)):  # the first that fits the text
        lowered = lowerable and g.endswith((", ", ": "))
        replacement = g + (word.lower() if lowered else word)
        if verdict("greeting", text, 0, end, word, replacement) is None:
            return Edit("greeting", 0, end, word, replacement)
    return None


def closer(text: str, rng: random.Random) -> Edit | None:
    """A thanks after a finished request."""
    if not text.endswith(("?", ".", "!")) or "thank" in text.lower():
        return None
    thanks = rng.choice(lex.CLOSERS)
    if verdict("closer", text, len(text), len(text), "", thanks) is not None:
        return None
    return Edit("closer", len(text), len(text), "", thanks)


NOISE: dict[str, Proposer] = {
    "case_lower": case_lower,
    "case_upper": case_upper,
    "spacing": spacing,
    "punct_end": punct_end,
    "punct_comma": punct_comma,
    "typo_transpose": _typo("typo_transpose"),
    "typo_drop": _typo("typo_drop"),
    "typo_double": _typo("typo_double"),
    "typo_adjacent": _typo("typo_adjacent"),
    "greeting": greeting,
    "closer": closer,
    "contraction": PairSwap("contraction", lex.CONTRACTIONS, +1),
    "expansion": PairSwap("expansion", lex.CONTRACTIONS, -1),
    "modal_swap": PairSwap("modal_swap", lex.MODAL_SWAPS),
    "spelling_variant": PairSwap("spelling_variant", lex.SPELLINGS),
}
