"""Per-submitter limit on graded submissions in a sliding window.

A submitter may have at most ``limit`` graded submissions whose time ``t``
satisfies ``t > now - window_s``. When the window is full the next slot
opens when the oldest submission that must leave does:
``retry_after = recent[used - limit] + window_s - now`` (``recent`` sorted
ascending), rounded up to whole seconds. The decision is a pure function of
the stored times; the store applies it inside the insert transaction so
concurrent uploads cannot overrun it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

DEFAULT_LIMIT = 5
DEFAULT_WINDOW_HOURS = 24.0


@dataclass(frozen=True, slots=True)
class Decision:
    """The outcome for one more submission: allowed or not, how many of the
    window's slots are used (before it), and when to retry when refused."""

    allowed: bool
    used: int
    remaining: int
    retry_after_s: int | None


@dataclass(frozen=True, slots=True)
class RateLimit:
    """``limit`` graded submissions per ``window_s`` seconds per submitter."""

    limit: int = DEFAULT_LIMIT
    window_s: float = DEFAULT_WINDOW_HOURS * 3600.0

    def __post_init__(self) -> None:
        if isinstance(self.limit, bool) or not isinstance(self.limit, int) or self.limit < 1:
            raise ValueError(f"rate limit must be a positive integer, got {self.limit!r}")
        if not (math.isfinite(self.window_s) and self.window_s > 0):
            raise ValueError(
                f"rate window must be a positive number of seconds, got {self.window_s!r}"
            )

    def since(self, now: float) -> float:
        """Start of the window ending at ``now`` (exclusive)."""
        return now - self.window_s

    def decide(self, times: Iterable[float], now: float) -> Decision:
        """May a submitter whose graded submissions were at ``times`` submit at ``now``?"""
        start = self.since(now)
        # Times after ``now`` count too: a concurrent upload that read the clock
        # later may commit first, and it must still take its slot.
        recent = sorted(t for t in times if t > start)
        used = len(recent)
        if used < self.limit:
            return Decision(True, used, self.limit - used - 1, None)
        frees_at = recent[used - self.limit] + self.window_s
        return Decision(False, used, 0, max(1, math.ceil(frees_at - now)))

    def describe(self) -> str:
        """``5 per 24 h``."""
        hours = self.window_s / 3600.0
        return f"{self.limit} per {hours:g} h"
