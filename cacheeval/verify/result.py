"""The outcome of verifying one row (imported by every checker module)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Check:
    """Outcome of verifying one row.

    ``binary`` is the re-derived label (HIT/MISS) or None when the checker
    could not decide; ``detail`` says why, briefly.
    """

    binary: str | None
    detail: str
