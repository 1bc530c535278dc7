"""Aligning the content tokens of two sides: :func:`content_diff` is the multiset
difference after pairing split/joined words, transliterations, inflections and
one-typo variants; :func:`substitution_spans` the two spans of a short swap.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from .canonical import (
    _lemma,
    stem,
)
from .lexicon import (
    _CONTRAST_OF,
    FILLER,
)
from .side import (
    Side,
)


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
        j = next((j for j in other_idx if other.content[j] in (glued, stem(glued))), None)
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
                # equal surfaces with unequal canonical forms differ in a value the
                # surface does not show ("March" in "March 14" vs "March 24"): no typo
                or (
                    sx != b.surface[j]
                    and _typo_pair(sx, b.surface[j], names=sx in names_a or b.surface[j] in names_b)
                )
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
