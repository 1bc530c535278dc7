"""A run's failures, kept while it is scored: the worst false hits and missed
hits with both queries, and every failure grouped by what differs.

A *false hit* is a MISS row the cache served (FP); a *missed hit* a HIT row it
did not serve (FN). "Worst" means the cache was surest of the wrong decision:
false hits by highest score, missed hits by lowest score (the confidence
stands in when a prediction has no score; unscored rows come last; ties by
id). Missed hits whose call failed or had no prediction are counted but not
listed or grouped: the report's error section lists them.

Test-split rows are counted and grouped but not listed (no id, no query)
unless the tally is told to list them: the benchmark hides their labels, and a
committed report that listed its test failures would publish them. A run
whose test rows carry labels of their own (pairs a user imported) lists them
(``cacheeval eval``/``score`` without ``--labels``).

:class:`FailureTally` is fed one row and its prediction at a time (by
:class:`~cacheeval.results.columns.ScoreColumns`) and keeps a bounded amount:
the current worst :data:`MAX_EXAMPLES` of each list, the count and a few ids
per group. Only failed rows are analysed (:func:`~cacheeval.metrics.differences.what_differs`,
well under a millisecond a row).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from ..metrics.differences import DIFFERENCE_KINDS, Difference, what_differs
from ..schema import Row
from .predictions import Prediction

#: Rows listed per failure list.
MAX_EXAMPLES = 10
#: Example ids listed per group.
MAX_GROUP_IDS = 3


@dataclass(frozen=True, slots=True)
class FailureExample:
    """One failed row: its truth, the cache's decision, both queries in full
    and what differs between the two requests (first: the row's group)."""

    id: str
    label: str | None
    subcategory: str | None
    domain: str
    score: float | None
    confidence: float | None
    tier: str
    query_a: str
    query_b: str
    differences: tuple[Difference, ...]


@dataclass(frozen=True, slots=True)
class FailureGroup:
    """The failures whose first difference is ``kind``: how many, their
    share of the list's analysed failures, and the worst few ids."""

    kind: str
    count: int
    share: float
    example_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class TopScore:
    """The rows at the highest score of the run: any threshold that serves
    one of them serves them all, so the false hits among them are the ones
    no threshold removes."""

    score: float
    n_rows: int
    n_served: int
    n_false_hits: int
    false_hit_groups: tuple[FailureGroup, ...]


@dataclass(frozen=True, slots=True)
class Failures:
    """The failures of one run (module docstring). ``n_failed_calls``: the
    missed hits left out of the lists and groups (error, timeout, missing
    prediction). ``n_unlisted``: failures on test-split rows, grouped but
    never listed. ``top_score`` is None when no prediction has a score."""

    n_false_hits: int
    n_missed_hits: int
    n_failed_calls: int
    n_unlisted: int
    false_hits: tuple[FailureExample, ...]
    missed_hits: tuple[FailureExample, ...]
    false_hit_groups: tuple[FailureGroup, ...]
    missed_hit_groups: tuple[FailureGroup, ...]
    top_score: TopScore | None


def sureness(prediction: Prediction, served: bool) -> float:
    """How sure the cache was of its decision, higher = surer: the score for
    a served row, minus the score for a refused one, else the confidence,
    else -inf.

    >>> sureness(Prediction("r", True, 0.6, 0.9, "t", None, None), True)
    0.9
    >>> sureness(Prediction("r", False, 0.7, None, "t", None, None), False)
    0.7
    """
    if prediction.score is not None:
        return prediction.score if served else -prediction.score
    if prediction.confidence is not None:
        return prediction.confidence
    return -math.inf


class _Worst:
    """The ``size`` worst items seen, by (sureness desc, id asc)."""

    __slots__ = ("size", "items")

    def __init__(self, size: int) -> None:
        self.size = size
        self.items: list[tuple[float, str, FailureExample]] = []

    def add(self, sure: float, example: FailureExample) -> None:
        self.items.append((sure, example.id, example))
        if len(self.items) > 4 * self.size:
            self._trim()

    def _trim(self) -> None:
        self.items.sort(key=lambda t: (-t[0], t[1]))
        del self.items[self.size :]

    def result(self) -> tuple[FailureExample, ...]:
        self._trim()
        return tuple(t[2] for t in self.items)


class _Groups:
    """Count per kind and the worst :data:`MAX_GROUP_IDS` ids of each."""

    __slots__ = ("counts", "worst")

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.worst: dict[str, list[tuple[float, str]]] = {}

    def add(self, kind: str, sure: float, row_id: str | None) -> None:
        """Count one failure of ``kind``; ``row_id`` None: count it, never list it."""
        self.counts[kind] += 1
        ids = self.worst.setdefault(kind, [])
        if row_id is None:
            return
        ids.append((sure, row_id))
        if len(ids) > 4 * MAX_GROUP_IDS:
            ids.sort(key=lambda t: (-t[0], t[1]))
            del ids[MAX_GROUP_IDS:]

    def result(self) -> tuple[FailureGroup, ...]:
        return groups_of(self.counts, self.worst)


def groups_of(
    counts: Counter[str], worst: dict[str, list[tuple[float, str]]]
) -> tuple[FailureGroup, ...]:
    """One group per kind, largest first (ties in vocabulary order); shares
    of the sum of ``counts``; each group's ids the surest first.

    >>> [(g.kind, g.count, g.share, g.example_ids) for g in groups_of(
    ...     Counter({"number": 1, "name": 3}),
    ...     {"number": [(0.5, "r1")], "name": [(0.2, "r2"), (0.9, "r4"), (0.2, "r3")]})]
    [('name', 3, 0.75, ('r4', 'r2', 'r3')), ('number', 1, 0.25, ('r1',))]
    """
    total = sum(counts.values())
    rank = {k: i for i, k in enumerate(DIFFERENCE_KINDS)}
    out = []
    for kind in sorted(counts, key=lambda k: (-counts[k], rank.get(k, len(rank)), k)):
        ids = sorted(worst.get(kind, []), key=lambda t: (-t[0], t[1]))[:MAX_GROUP_IDS]
        out.append(FailureGroup(kind, counts[kind], counts[kind] / total, tuple(i for _, i in ids)))
    return tuple(out)


class FailureTally:
    """Collects a run's :class:`Failures` one row at a time (module docstring)."""

    __slots__ = (
        "list_test",
        "n_rows",
        "n_false_hits",
        "n_missed_hits",
        "n_failed_calls",
        "n_unlisted",
        "_false",
        "_missed",
        "_false_groups",
        "_missed_groups",
        "_top",
        "_top_rows",
        "_top_served",
        "_top_groups",
    )

    def __init__(self, *, list_test: bool = False) -> None:
        self.list_test = list_test  # list test-split rows too (module docstring)
        self.n_rows = 0
        self.n_false_hits = 0
        self.n_missed_hits = 0
        self.n_failed_calls = 0
        self.n_unlisted = 0
        self._false = _Worst(MAX_EXAMPLES)
        self._missed = _Worst(MAX_EXAMPLES)
        self._false_groups = _Groups()
        self._missed_groups = _Groups()
        self._top: float | None = None
        self._top_rows = 0
        self._top_served = 0
        self._top_groups = _Groups()

    def add(self, row: Row, prediction: Prediction) -> None:
        """Note one labelled row and the cache's prediction for it."""
        self.n_rows += 1
        served = bool(prediction.is_hit) and prediction.error is None
        false_hit = served and row.y == 0
        score = prediction.score if prediction.error is None else None
        at_top = self._at_top(score, served)
        if not false_hit and (served or row.y == 0):
            return  # a correct decision
        if false_hit:
            self.n_false_hits += 1
        else:
            self.n_missed_hits += 1
            if prediction.error is not None:
                self.n_failed_calls += 1
                return
        differences = what_differs(row)
        sure = sureness(prediction, served)
        kind = differences[0].kind
        if not self.list_test and row.split == "test":
            self.n_unlisted += 1
            groups = self._false_groups if false_hit else self._missed_groups
            groups.add(kind, sure, None)
            if false_hit and at_top:
                self._top_groups.add(kind, sure, None)
            return
        example = FailureExample(
            id=row.id,
            label=row.label,
            subcategory=row.subcategory,
            domain=row.domain,
            score=prediction.score,
            confidence=prediction.confidence,
            tier=prediction.tier_used,
            query_a=row.query_a,
            query_b=row.query_b,
            differences=differences,
        )
        if false_hit:
            self._false.add(sure, example)
            self._false_groups.add(kind, sure, row.id)
            if at_top:
                self._top_groups.add(kind, sure, row.id)
        else:
            self._missed.add(sure, example)
            self._missed_groups.add(kind, sure, row.id)

    def _at_top(self, score: float | None, served: bool) -> bool:
        """Count a scored row towards the top score; True when it is at it."""
        if score is None:
            return False
        if self._top is None or score > self._top:
            self._top, self._top_rows, self._top_served = score, 0, 0
            self._top_groups = _Groups()
        if score < self._top:
            return False
        self._top_rows += 1
        self._top_served += served
        return True

    def result(self) -> Failures:
        """The failures of every row added so far."""
        top = None
        if self._top is not None:
            top = TopScore(
                score=self._top,
                n_rows=self._top_rows,
                n_served=self._top_served,
                n_false_hits=sum(self._top_groups.counts.values()),
                false_hit_groups=self._top_groups.result(),
            )
        return Failures(
            n_false_hits=self.n_false_hits,
            n_missed_hits=self.n_missed_hits,
            n_failed_calls=self.n_failed_calls,
            n_unlisted=self.n_unlisted,
            false_hits=self._false.result(),
            missed_hits=self._missed.result(),
            false_hit_groups=self._false_groups.result(),
            missed_hit_groups=self._missed_groups.result(),
            top_score=top,
        )


def failures_of(
    rows: Sequence[Row], predictions: Sequence[Prediction], *, list_test: bool = False
) -> Failures:
    """:class:`Failures` of ``predictions[i]`` against labelled ``rows[i]``."""
    tally = FailureTally(list_test=list_test)
    for row, prediction in zip(rows, predictions, strict=True):
        tally.add(row, prediction)
    return tally.result()
