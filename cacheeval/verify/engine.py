"""Dataset-level verification: re-derive every row's binary label and report
where the checkers disagree with the data.

For each labelled row, :func:`cacheeval.verify.check_row` re-derives HIT/MISS
from the row's payload. A row *agrees* when the re-derived label equals its
``binary_label``; it is *undecided* when the checker returns None (an
inconsistent payload, a missing checker module, a checker crash) and
*disagrees* otherwise. Both undecided and disagreeing rows fail verification.

The tier distribution counts rows per verification tier
(:func:`cacheeval.verify.tier_of` of the row's ``verification_method``):
``share = count / rows`` overall and per domain.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import TextIO

from ..schema import DOMAINS, VERIFICATION_METHODS, Row
from . import Check, check_row, tier_of

TIERS: tuple[str, ...] = ("deterministic", "rubric", "judge")
UNDECIDED = "undecided"


def safe_check(row: Row) -> Check:
    """:func:`check_row`, with anything it raises (a checker module that does
    not exist yet, an import error inside one) turned into an undecided Check."""
    try:
        return check_row(row)
    except Exception as e:  # report per row; one broken checker must not stop the run
        return Check(None, f"checker failed: {type(e).__name__}: {e}")


@dataclass(frozen=True, slots=True)
class RowResult:
    """The verification of one row."""

    row_id: str
    domain: str
    label: str
    binary_label: str
    method: str
    check: Check

    @property
    def tier(self) -> str:
        return tier_of(self.method)

    @property
    def derived(self) -> str:
        """The re-derived binary label, or ``"undecided"``."""
        return self.check.binary if self.check.binary is not None else UNDECIDED

    @property
    def agrees(self) -> bool:
        return self.check.binary == self.binary_label


@dataclass(frozen=True, slots=True)
class TierCounts:
    """Rows per tier for one group of rows (a domain, or all)."""

    rows: int
    by_tier: tuple[tuple[str, int], ...]  # in TIERS order, then "unknown" if any

    def share(self, tier: str) -> float:
        """count / rows (0 for an empty group)."""
        n = dict(self.by_tier).get(tier, 0)
        return n / self.rows if self.rows else 0.0


def result_of(row: Row, check: Check) -> RowResult:
    if row.label is None or row.binary_label is None or row.verification_method is None:
        raise ValueError(f"row {row.id} carries no label (a hidden test row?)")
    return RowResult(
        row.id, row.domain, row.label, row.binary_label, row.verification_method, check
    )


def verify_rows(
    rows: Sequence[Row],
    *,
    jobs: int = 1,
    checker: Callable[[Row], Check] = safe_check,
    progress: Callable[[int, int], None] | None = None,
) -> list[RowResult]:
    """Check every row (in input order). ``jobs > 1`` runs the checker in that
    many worker processes (code sandboxes and sympy are slow and CPU-bound);
    ``progress(done, total)`` is called as rows complete."""
    total = len(rows)
    checks: list[Check] = []
    if jobs <= 1 or total <= 1:
        for i, row in enumerate(rows, 1):
            checks.append(checker(row))
            if progress is not None:
                progress(i, total)
    else:
        chunk = max(1, min(16, total // (jobs * 4)))
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            for i, c in enumerate(pool.map(checker, rows, chunksize=chunk), 1):
                checks.append(c)
                if progress is not None:
                    progress(i, total)
    return [result_of(r, c) for r, c in zip(rows, checks, strict=True)]


def tier_counts(results: Iterable[RowResult]) -> TierCounts:
    """Rows per tier in ``results``."""
    counts = dict.fromkeys(TIERS, 0)
    n = 0
    for r in results:
        n += 1
        counts[r.tier] = counts.get(r.tier, 0) + 1
    order = [*TIERS, *(t for t in sorted(counts) if t not in TIERS)]
    return TierCounts(n, tuple((t, counts[t]) for t in order))


def method_counts(results: Iterable[RowResult]) -> dict[str, int]:
    """Rows per verification method, in VERIFICATION_METHODS order (zeros omitted)."""
    counts: dict[str, int] = {}
    for r in results:
        counts[r.method] = counts.get(r.method, 0) + 1
    known = [m for m in VERIFICATION_METHODS if m in counts]
    return {m: counts[m] for m in [*known, *sorted(set(counts) - set(known))]}


def problems(results: Iterable[RowResult]) -> list[RowResult]:
    """The rows that fail: disagreeing or undecided, in input order."""
    return [r for r in results if not r.agrees]


def format_report(results: Sequence[RowResult]) -> str:
    """The text report: tier distribution (overall and per domain), per-method
    counts, and every disagreement."""
    lines: list[str] = []
    domains = [d for d in DOMAINS if any(r.domain == d for r in results)]
    overall = tier_counts(results)
    tiers = [t for t, _ in overall.by_tier]
    lines.append(f"verified {len(results)} rows in {len(domains)} domain(s)")
    lines.append("")
    lines.append("tier distribution (README target: ~70% deterministic, ~25% rubric, ~5% judge)")
    header = f"  {'domain':<16}{'rows':>6}" + "".join(f"{t:>17}" for t in tiers)
    lines.append(header)
    groups = [(d, tier_counts(r for r in results if r.domain == d)) for d in domains]
    groups.append(("all", overall))
    for name, tc in groups:
        cells = "".join(
            f"{dict(tc.by_tier).get(t, 0):>8} ({100 * tc.share(t):5.1f}%)" for t in tiers
        )
        lines.append(f"  {name:<16}{tc.rows:>6}{cells}")
    lines.append("")
    lines.append("methods")
    for m, n in method_counts(results).items():
        lines.append(f"  {m:<22}{n:>6}  ({tier_of(m)})")
    bad = problems(results)
    lines.append("")
    undecided = sum(1 for r in bad if r.check.binary is None)
    lines.append(
        f"disagreements: {len(bad)} ({len(bad) - undecided} contradicting the label, "
        f"{undecided} undecided)"
    )
    for r in bad:
        row_label = f"{r.label}/{r.binary_label}"
        lines.append(f"  {r.row_id}: label {row_label}, re-derived {r.derived}: {r.check.detail}")
    return "\n".join(lines)


def default_jobs() -> int:
    return os.cpu_count() or 1


def terminal_progress(stream: TextIO | None = None) -> Callable[[int, int], None] | None:
    """A progress callback writing ``\\r verify: done/total`` to ``stream``
    (default stderr), or None when that is not a terminal."""
    err = sys.stderr if stream is None else stream
    if not err.isatty():
        return None

    def report(done: int, total: int) -> None:
        end = "\n" if done == total else ""
        print(f"\rverify: {done}/{total}", end=end, file=err, flush=True)

    return report
