"""How a cache reached its decisions: verification-tier usage and failures."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..schema import KNOWN_TIERS

#: How many failing row ids / examples a summary keeps.
MAX_EXAMPLES = 5


@dataclass(frozen=True, slots=True)
class TierUsage:
    """``count`` decisions were made by ``tier``; ``share = count / n`` of all rows."""

    tier: str
    count: int
    share: float


@dataclass(frozen=True, slots=True)
class ErrorKind:
    """One kind of failure (exception type, ``timeout``, ``InvalidVerdict``, ...).

    ``first_message`` is the full error text of its first occurrence, on row
    ``first_id``.
    """

    kind: str
    count: int
    first_id: str
    first_message: str


@dataclass(frozen=True, slots=True)
class ErrorExample:
    """A row that failed and its error text."""

    id: str
    error: str


@dataclass(frozen=True, slots=True)
class ErrorStats:
    """Failed decisions, each scored MISS.

    ``n_errors`` counts every failure except timeouts (exceptions, invalid
    verdicts, missing predictions); ``n_timeouts`` the calls abandoned after
    the timeout. ``kinds`` groups them by kind in order of first occurrence;
    ``examples`` holds the first few.
    """

    n_errors: int
    n_timeouts: int
    kinds: tuple[ErrorKind, ...]
    examples: tuple[ErrorExample, ...]


def tier_order(tiers: Iterable[str]) -> list[str]:
    """Known tiers in :data:`KNOWN_TIERS` order, then any others alphabetically."""
    present = set(tiers)
    known = [t for t in KNOWN_TIERS if t in present]
    return known + sorted(present - set(KNOWN_TIERS))


def tier_usage(tiers_used: Sequence[str]) -> tuple[TierUsage, ...]:
    """Count and share (count / number of rows) of each tier used."""
    n = len(tiers_used)
    counts = Counter(tiers_used)
    return tuple(TierUsage(t, counts[t], counts[t] / n) for t in tier_order(counts))


def error_kind(error: str) -> str:
    """The kind of an error string: the text before the first ``:`` ("timeout
    after N ms" is kind ``timeout``)."""
    if error.startswith("timeout"):
        return "timeout"
    head, sep, _ = error.partition(":")
    return head.strip() if sep and head.strip() else "error"


def error_stats(ids: Sequence[str], errors: Sequence[str | None]) -> ErrorStats:
    """Summarise per-row error strings (None = the row succeeded)."""
    tally = ErrorTally()
    for rid, err in zip(ids, errors, strict=True):
        if err is not None:
            tally.add(rid, err)
    return tally.stats()


class ErrorTally:
    """:func:`error_stats` one failed row at a time, in memory that does not
    grow with the rows: counts per kind, each kind's first occurrence and the
    first :data:`MAX_EXAMPLES` failures."""

    __slots__ = ("_counts", "_first", "_examples", "_n_errors", "_n_timeouts")

    def __init__(self) -> None:
        self._counts: Counter[str] = Counter()
        self._first: dict[str, tuple[str, str]] = {}  # insertion order = first occurrence
        self._examples: list[ErrorExample] = []
        self._n_errors = self._n_timeouts = 0

    def add(self, rid: str, error: str) -> None:
        """Count the failed row ``rid`` with its error text."""
        kind = error_kind(error)
        if kind == "timeout":
            self._n_timeouts += 1
        else:
            self._n_errors += 1
        self._counts[kind] += 1
        self._first.setdefault(kind, (rid, error))
        if len(self._examples) < MAX_EXAMPLES:
            self._examples.append(ErrorExample(rid, error))

    def stats(self) -> ErrorStats:
        """The summary of the rows added so far."""
        return ErrorStats(
            n_errors=self._n_errors,
            n_timeouts=self._n_timeouts,
            kinds=tuple(
                ErrorKind(k, self._counts[k], rid, msg) for k, (rid, msg) in self._first.items()
            ),
            examples=tuple(self._examples),
        )
