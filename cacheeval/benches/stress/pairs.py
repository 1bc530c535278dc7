"""Swaps from curated pair lists, in the case form the text uses."""

from __future__ import annotations

import random
import re
from collections.abc import Sequence

from .edits import Edit, TextMemo, alternation, first_valid


class PairSwap:
    """Finds any side of ``pairs`` in a text and proposes the other side, in the
    same case form (as written, lower case, capitalised). ``direction``: +1
    forward only (x -> y), -1 backward only, 0 both ways."""

    def __init__(self, kind: str, pairs: Sequence[tuple[str, str]], direction: int = 0) -> None:
        self.kind = kind
        table: dict[str, list[str]] = {}
        for x, y in pairs:
            ways = [(x, y)] if direction > 0 else [(y, x)] if direction < 0 else [(x, y), (y, x)]
            for a, b in ways:
                for f in (str, str.lower, lambda s: s[:1].upper() + s[1:]):
                    table.setdefault(f(a), [])
                    if f(b) not in table[f(a)]:
                        table[f(a)].append(f(b))
        self.table = table
        self.pattern: re.Pattern[str] = alternation(list(table))
        #: :meth:`spans` per text (a repeated prompt is scanned once)
        self.found = TextMemo(self.spans, limit=512)

    def spans(self, text: str) -> list[tuple[int, int, list[str]]]:
        """Each side found in ``text``: its span and the other sides to try."""
        return [(m.start(), m.end(), self.table[m.group()]) for m in self.pattern.finditer(text)]

    def __call__(self, text: str, rng: random.Random) -> Edit | None:
        return first_valid(self.kind, text, rng, self.found(text))
