"""Quantities one side states - a number or an article with a unit of time,
length, mass or volume - in one base unit per dimension, so that a quantity
reworded ("90 minutes" / "an hour and a half", "a week" / "seven days", "an
hour" / "1 hr", "half a litre" / "500 ml") is seen as the same quantity
(:func:`restated_numbers`), and its numbers are no change.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from .canonical import stem
from .side import Side

#: Units of time, length, mass and volume as (dimension, size in the dimension's
#: base unit), keyed by the canonical token (:mod:`.side` names units once; days
#: and weeks are plain words).
_QUANTITY_UNITS: dict[str, tuple[str, float]] = {
    "second": ("s", 1), "minute": ("s", 60), "hour": ("s", 3600), "day": ("s", 86400),
    "days": ("s", 86400), "week": ("s", 604800), "weeks": ("s", 604800),
    "fortnight": ("s", 1209600), "mm": ("m", 0.001), "cm": ("m", 0.01), "meter": ("m", 1),
    "km": ("m", 1000), "g": ("g", 1), "kg": ("g", 1000), "ml": ("l", 0.001), "l": ("l", 1),
}  # fmt: skip

_ARTICLES = frozenset({"a", "an", "one"})
_NUMBER_RE = re.compile(r"-?\d+(?:\.\d+)?")


def _quantities(tokens: Sequence[str]) -> list[tuple[tuple[str, float], tuple[str, ...]]]:
    """The quantities a side states, each as ((dimension, value in the base unit),
    the number tokens that state it): "90 minutes", "an hour and a half", "a
    week", "half a litre", "a quarter of an hour". An article stands for one
    ("an hour" is "1 hour").

    >>> [q for q, _ in _quantities("in an hour and a 0.5".split())]
    [('s', 5400.0)]
    >>> _quantities("a quarter of an hour or 7 days".split())
    [(('s', 900.0), ()), (('s', 604800.0), ('7',))]
    """
    out = []
    i, n = 0, len(tokens)
    while i < n:
        w = tokens[i]
        value: float | None = None
        nums: tuple[str, ...] = ()
        j = i + 1
        if _NUMBER_RE.fullmatch(w):
            value, nums = float(w), (w,)
            if w == "0.5" and j < n and tokens[j] in _ARTICLES:
                j += 1  # "half a litre"
        elif w in _ARTICLES:
            value = 1.0
            if list(tokens[j : j + 3]) in (["quarter", "of", "a"], ["quarter", "of", "an"]):
                value, j = 0.25, j + 3
        if value is None or j >= n or tokens[j] not in _QUANTITY_UNITS:
            i += 1
            continue
        dim, size = _QUANTITY_UNITS[tokens[j]]
        j += 1
        if list(tokens[j : j + 3]) in (["and", "a", "0.5"], ["and", "an", "0.5"]):
            value, nums, j = value + 0.5, nums + ("0.5",), j + 3
        out.append(((dim, round(value * size, 6)), nums))
        i = j
    return out


def restated_numbers(a: Side, b: Side) -> tuple[list[str], list[str]]:
    """The numbers of the quantities both sides state alike, in whatever unit or
    words (:func:`_quantities`): "90 minutes" and "an hour and a half", "a week"
    and "seven days", "an hour" and "1 hr". A number that only restates a
    quantity the other side names is no change."""
    qa, qb = _quantities(a.tokens), _quantities(b.tokens)
    drops: tuple[list[str], list[str]] = ([], [])
    if qa or qb:
        common = Counter(q for q, _ in qa) & Counter(q for q, _ in qb)
        for side, qs in zip(drops, (qa, qb), strict=True):
            left = Counter(common)
            for q, nums in qs:
                if left[q] > 0:
                    left[q] -= 1
                    side.extend(nums)
    ones_a, ones_b = a.numbers.count("1"), b.numbers.count("1")
    if ones_a != ones_b:
        more, fewer, side = (a, b, drops[0]) if ones_a > ones_b else (b, a, drops[1])
        surplus = abs(ones_a - ones_b) - side.count("1")
        side.extend(["1"] * min(max(surplus, 0), _singulars(more.tokens, fewer.tokens)))
    return drops


#: Words that say "one" of a thing without the number: "a single sentence".
_SINGULAR = frozenset({"a", "an", "single", "one"})


def _singulars(mine: Sequence[str], other: Sequence[str]) -> int:
    """How many "1 <word>" of ``mine`` the other side says with an article or
    "single" before the same word ("in one sentence" / "in a single sentence",
    "one space" / "single spaces"): one thing, the number unsaid.

    >>> _singulars("in 1 sentence".split(), "in a single sentence".split())
    1
    >>> _singulars("1 sentence".split(), "2 sentences".split())
    0
    """
    said = {stem(w) for k, w in enumerate(other) if k > 0 and other[k - 1] in _SINGULAR}
    return sum(1 for k in range(len(mine) - 1) if mine[k] == "1" and stem(mine[k + 1]) in said)
