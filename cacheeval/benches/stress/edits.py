"""One controlled edit of a request, and the helpers every family's proposers share."""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from ...verify.perturbation import VALIDATORS


@dataclass(frozen=True, slots=True)
class Edit:
    """Side b = side a's ``field`` with ``original`` at [start, end) replaced by
    ``replacement``; a context edit carries side b's system prompt or turns
    instead (``turn``/``inner``: the prior turn a turns_edit changed, and the
    identity kind applied to it)."""

    kind: str
    start: int
    end: int
    original: str
    replacement: str
    field: str = "query"
    turn: int | None = None
    inner: str | None = None
    system_prompt_b: str | None = None
    turns_b: tuple[dict[str, Any], ...] | None = None

    def apply(self, text: str) -> str:
        """``text`` with the span replaced."""
        return text[: self.start] + self.replacement + text[self.end :]


@dataclass(frozen=True, slots=True)
class Prompt:
    """One unlabelled request: its query, optional system prompt and prior turns,
    where it was read (``line`` of ``source``), and the tool definitions offered
    with it, if any (the never-cache rules read them: "Send $50 to Ana" is never
    served when a money-moving tool is offered)."""

    query: str
    system_prompt: str | None
    turns: tuple[dict[str, Any], ...] | None
    source: str
    line: int
    tools: tuple[dict[str, Any], ...] | None = None


#: A proposer: a text and a seeded generator in, one edit of its kind out (None
#: when the kind cannot apply cleanly).
Proposer = Callable[[str, random.Random], Edit | None]

#: Characters that make a text look like code or carry quoted literals: a whole-
#: text rewrite (case) could change what it asks.
CODE_CHARS = re.compile(r"[\"`'(){}\[\]<>=_/\\|*^~]")


K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

#: Every memo of the generator (:func:`memo_dict`), for :func:`clear_memos`.
_MEMOS: list[dict[Any, Any]] = []


def memo_dict() -> dict[Any, Any]:
    """An empty dict registered as one of the generator's memos."""
    memo: dict[Any, Any] = {}
    _MEMOS.append(memo)
    return memo


def clear_memos() -> None:
    """Empty every memo (the output never depends on them: a test clears them
    to compare cold and warm runs)."""
    for memo in _MEMOS:
        memo.clear()


class TextMemo(Generic[K, V]):
    """A dict of computed values that empties itself when it holds ``limit``
    entries: a hit saves the work, a miss costs one lookup, and the memory it
    takes never grows past ``limit`` entries whatever the input.

    >>> memo = TextMemo[str, int](len, limit=2)
    >>> memo("ab"), memo("ab"), memo("abc"), memo("abcd"), len(memo.values)
    (2, 2, 3, 4, 1)
    """

    __slots__ = ("compute", "limit", "values")

    def __init__(self, compute: Callable[[K], V], *, limit: int) -> None:
        self.compute = compute
        self.limit = limit
        self.values: dict[K, V] = memo_dict()
        TEXT_MEMOS.append(self)

    def __call__(self, key: K) -> V:
        try:
            return self.values[key]
        except KeyError:
            pass
        if len(self.values) >= self.limit:
            self.values.clear()
        value = self.values[key] = self.compute(key)
        return value


def _shuffle_steps(size: int) -> tuple[tuple[int, int, int], ...]:
    """(i, i + 1, bits of i + 1) of each step of a shuffle of ``size`` items."""
    return tuple((i, i + 1, (i + 1).bit_length()) for i in range(size - 1, 0, -1))


#: :func:`_shuffle_steps` of the list sizes the proposers shuffle.
_SHUFFLE_STEPS = [_shuffle_steps(size) for size in range(128)]


#: Every :class:`TextMemo` made (a test shrinks their limits).
TEXT_MEMOS: list[TextMemo[Any, Any]] = []


def shuffle(rng: random.Random, items: list[Any]) -> None:
    """``rng.shuffle(items)``, the same permutation from the same draws (a test
    holds them equal), in about half the time: the generator shuffles several
    short lists per prompt, and ``random.shuffle`` calls a Python method per item
    (here each step's bit count is looked up, not computed)."""
    size = len(items)
    steps = _SHUFFLE_STEPS[size] if size < 128 else _shuffle_steps(size)
    getrandbits = rng.getrandbits
    for i, n, k in steps:
        j = getrandbits(k)
        while j >= n:
            j = getrandbits(k)
        items[i], items[j] = items[j], items[i]


def _pool_bound(k: int) -> int:
    """The largest population ``random.sample`` draws ``k`` items from by its pool method."""
    return 21 + (4 ** math.ceil(math.log(k * 3, 4)) if k > 5 else 0)


_POOL_BOUND = [_pool_bound(k) for k in range(64)]


def sample(rng: random.Random, population: Sequence[Any], k: int) -> list[Any]:
    """``rng.sample(population, k)``, the same items from the same draws (a test
    holds them equal), about twice as fast for the short lists the proposers
    draw from: CPython's pool method, written without its per-draw method call.
    A population past the pool's size bound goes to ``rng.sample`` itself."""
    n = len(population)
    setsize = _POOL_BOUND[k] if 0 <= k < 64 else _pool_bound(k) if k > 0 else 21
    if n > setsize or not 0 <= k <= n:
        return rng.sample(population, k)
    getrandbits = rng.getrandbits
    pool = list(population)
    result = []
    for i in range(k):
        m = n - i
        b = m.bit_length()
        j = getrandbits(b)
        while j >= m:
            j = getrandbits(b)
        result.append(pool[j])
        pool[j] = pool[m - 1]
    return result


#: Verdicts of the checker's validators by (kind, text, start, end, original,
#: replacement): a prompt asked again (and every replacement tried again at one
#: span) is judged once. Emptied when full, so memory stays flat.
_VERDICTS: dict[tuple[str, str, int, int, str, str], str | None] = memo_dict()
_VERDICTS_LIMIT = 1 << 14


def verdict(
    kind: str, text: str, start: int, end: int, original: str, replacement: str
) -> str | None:
    """``VALIDATORS[kind](text, start, end, original, replacement)``, memoised
    (a validator is a function of its arguments only)."""
    key = (kind, text, start, end, original, replacement)
    try:
        return _VERDICTS[key]
    except KeyError:
        pass
    if len(_VERDICTS) >= _VERDICTS_LIMIT:
        _VERDICTS.clear()
    problem = _VERDICTS[key] = VALIDATORS[kind](text, start, end, original, replacement)
    return problem


def first_valid(
    kind: str,
    text: str,
    rng: random.Random,
    candidates: Sequence[tuple[int, int, Sequence[str]]],
) -> Edit | None:
    """The first candidate (in a seeded order) whose replacement the checker's
    validator accepts: each candidate is (start, end, replacements to try)."""
    if not candidates:
        return None
    order = list(range(len(candidates)))
    if len(order) > 1:  # a list of one draws nothing
        shuffle(rng, order)
    for i in order:
        start, end, options = candidates[i]
        original = text[start:end]
        opts = list(options)
        if len(opts) > 1:
            shuffle(rng, opts)
        for replacement in opts:
            if (
                replacement != original
                and verdict(kind, text, start, end, original, replacement) is None
            ):
                return Edit(kind, start, end, original, replacement)
    return None


def alternation(words: Sequence[str], *, ignore_case: bool = False) -> re.Pattern[str]:
    """A regex matching any of ``words`` as a whole word (longest first)."""
    body = "|".join(re.escape(w) for w in sorted(set(words), key=lambda w: (-len(w), w)))
    flags = re.IGNORECASE if ignore_case else 0
    return re.compile(rf"(?<![\w+#])(?:{body})(?![\w+#])", flags)


def case_like(template: str, word: str) -> str:
    """``word`` in ``template``'s case form (lower, Capitalised, or as written).

    >>> case_like("Increase", "decrease"), case_like("increase", "decrease")
    ('Decrease', 'decrease')
    """
    if template[:1].isupper() and not template.isupper():
        return word[:1].upper() + word[1:]
    if template.islower():
        return word[:1].lower() + word[1:] if word[:1].isupper() and word[1:].islower() else word
    return word
