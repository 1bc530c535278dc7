"""Reference caches every report can be read against.

* ``always_miss`` never serves: FHR 0 (the floor), recall 0.
* ``always_hit`` always serves: recall 1 (the ceiling) and the worst FHR, 1.
* ``exact_match`` serves only a verbatim repeat of the whole request: query,
  prior turns, system prompt and tools, each compared after collapsing
  whitespace and case-folding (tier ``exact``).

Each baseline also gives a score (1.0 = would serve, 0.0 = would not), so the
threshold-free block of a report is filled for them too.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from .schema import Row, Verdict

_SPACE = re.compile(r"\s+")


def normalize_text(text: str | None) -> str:
    """Whitespace runs collapsed to one space, trimmed, case-folded ("" for None)."""
    if text is None:
        return ""
    return _SPACE.sub(" ", text).strip().casefold()


def request_key(
    query: str,
    context: tuple[dict[str, Any], ...] | None,
    system_prompt: str | None,
    tools: tuple[dict[str, Any], ...] | None,
) -> tuple[str, tuple[tuple[str, str], ...], str, str]:
    """What ``exact_match`` compares: the normalised query, each prior turn
    (role, content), system prompt, and the tools as key-sorted JSON.

    None and empty are the same (no context / no system prompt / no tools).
    """
    turns = tuple(
        (normalize_text(str(t.get("role", ""))), normalize_text(str(t.get("content", ""))))
        for t in context or ()
    )
    # Tool definitions are compared as data: key order must not matter.
    tools_text = json.dumps(list(tools or ()), sort_keys=True, ensure_ascii=False)
    return normalize_text(query), turns, normalize_text(system_prompt), normalize_text(tools_text)


class AlwaysMiss:
    """Never serve from the cache."""

    name = "always_miss"

    def __call__(self, row: Row) -> Verdict:
        return Verdict(is_hit=False, confidence=1.0, tier_used="baseline", score=0.0)


class AlwaysHit:
    """Always serve from the cache."""

    name = "always_hit"

    def __call__(self, row: Row) -> Verdict:
        return Verdict(is_hit=True, confidence=1.0, tier_used="baseline", score=1.0)


class ExactMatch:
    """Serve only when the two whole requests are identical after normalisation."""

    name = "exact_match"

    def __call__(self, row: Row) -> Verdict:
        same = request_key(row.query_a, row.context_a, row.system_prompt_a, row.tools_a) == (
            request_key(row.query_b, row.context_b, row.system_prompt_b, row.tools_b)
        )
        return Verdict(is_hit=same, confidence=1.0, tier_used="exact", score=1.0 if same else 0.0)


#: Baseline name -> factory building a fresh cache.
BASELINES: dict[str, Callable[[], Any]] = {
    "always_miss": AlwaysMiss,
    "always_hit": AlwaysHit,
    "exact_match": ExactMatch,
}


def make_baseline(name: str) -> Any:
    """A fresh instance of the named baseline; ValueError naming the choices."""
    try:
        factory = BASELINES[name]
    except KeyError:
        raise ValueError(
            f"unknown baseline {name!r} (expected one of {', '.join(BASELINES)})"
        ) from None
    return factory()
