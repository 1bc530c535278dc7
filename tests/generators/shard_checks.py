"""Checks the generator tests share: where a needle sits in a fixture, and the
counterbalance of the question-answer shards."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from cacheeval.generators import qa_factual
from cacheeval.schema import ADVERSARIAL, HIT_LABELS

#: A word of a question, with the joiners inside numbers and names ("1,000", "O'Neill").
WORD = re.compile(r"[\w°]+(?:[-.,'’/][\w°]+)*")


def line_of(path: Path, needle: str) -> int:
    """The number of the first line of ``path`` holding ``needle``."""
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if needle in line:
            return n
    raise AssertionError(f"{needle!r} is not in {path}")


def words(text: str) -> set[str]:
    """The content words of ``text``, case-folded (the qa generators' stop words left out)."""
    return {w.casefold() for w in WORD.findall(text)} - qa_factual._STOP


def flip_words_missing_from_hits(rows: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Per ADVERSARIAL row, the words that differ between its sides and stand,
    unchanged on both sides, in no HIT row (so query_b alone would give the
    label away); rows with none are left out."""
    in_hits: set[str] = set()
    for r in rows:
        if r["label"] in HIT_LABELS:
            in_hits |= words(r["query_a"]) & words(r["query_b"])
    uncovered = {
        r["id"]: sorted((words(r["query_a"]) ^ words(r["query_b"])) - in_hits)
        for r in rows
        if r["label"] == ADVERSARIAL
    }
    return {k: v for k, v in uncovered.items() if v}
