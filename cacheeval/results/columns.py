"""Scoring in columns: what a report needs to know about each row, in flat
arrays of machine numbers, so a run of millions of rows is scored in one pass
with memory that does not grow with per-row Python objects.

Per row :class:`ScoreColumns` keeps the truth (HIT/MISS, the five-way label,
the domain and the difficulty, as small codes), the decision, the score, the
confidence, the latency and the tier, with the sub-score and (stress rows)
the perturbation kind: 42 bytes a row, 42 MB for a million
rows. Errors are
tallied as they arrive (:class:`~cacheeval.metrics.usage.ErrorTally`), and so
are the failures when the rows themselves are given (:meth:`ScoreColumns.add_row`,
:class:`~cacheeval.results.failures.FailureTally`: a bounded amount, whatever
the run's length).
:func:`cacheeval.reporting.report.build_report_from_columns` computes the report from
these columns with the same metric functions, so a report scored in columns
is equal, number for number, to one built from lists of rows and
predictions (:func:`cacheeval.reporting.report.build_report` goes through here).

:func:`join_stream` joins a stream of rows to a stream of predictions by id:
in one pass and constant memory when both come in the same order (the
predictions file of a run is in row order), falling back to holding the
out-of-order predictions in a dict when they do not.
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import compress
from typing import TypeVar, overload

from ..metrics.classification import Confusion
from ..metrics.curves import p_hit
from ..metrics.usage import ErrorTally
from ..schema import HIT, POLICY_NO_CACHE, Row, subscore_of
from ..support.idset import IdSet
from .failures import Failures, FailureTally
from .predictions import Prediction

#: The ``construction_method`` of the rows ``cacheeval stress`` makes.
STRESS_PERTURBATION = "stress_perturbation"
#: The families of perturbation kinds, in report order (``policy``: a never-cache source).
KIND_FAMILIES: tuple[str, ...] = ("noise", "identity", "context", "policy")


def perturbation_kind(row: Row) -> str | None:
    """The per-kind key of a stress row, ``family/kind`` (``noise/typo_drop``,
    ``identity/city``, ``context/system_prompt_other``; the kind is the row's
    subcategory, the family its payload's), or ``policy`` for a row made from a
    never-cache prompt (a MISS whatever its edit); None for any other row.

    >>> from cacheeval.schema import ROW_FIELDS
    >>> r = Row.from_dict({f: None for f in ROW_FIELDS} | {"split": "dev",
    ...     "construction_method": "stress_perturbation", "subcategory": "city",
    ...     "binary_label": "MISS", "verification_payload": {"family": "identity"}})
    >>> perturbation_kind(r)
    'identity/city'
    """
    if row.construction_method != STRESS_PERTURBATION:
        return None
    if row.verification_method == POLICY_NO_CACHE:
        return "policy"
    payload = row.verification_payload if isinstance(row.verification_payload, dict) else {}
    family = payload.get("family")
    if not isinstance(family, str) or not family:
        family = "noise" if row.binary_label == HIT else "identity"
    return f"{family}/{row.subcategory}"


#: How many missing/extra/hidden ids a join keeps (the report lists 10).
KEEP_IDS = 10
MISSING_ERROR = "MissingPrediction: no prediction for this row"

T = TypeVar("T")


class _Codes:
    """Strings <-> small integer codes (-1 is None)."""

    __slots__ = ("names", "_index")

    def __init__(self) -> None:
        self.names: list[str] = []
        self._index: dict[str, int] = {}

    def code(self, name: str | None) -> int:
        if name is None:
            return -1
        found = self._index.get(name)
        if found is None:
            found = self._index[name] = len(self.names)
            self.names.append(name)
        return found


class _Column(Sequence[T]):
    """A read-only sequence computed from flat arrays: a subclass gives
    ``__len__``, ``_at`` (one item, from its index) and a fast ``__iter__``."""

    __slots__ = ()

    def _at(self, i: int) -> T:
        raise NotImplementedError

    @overload
    def __getitem__(self, i: int) -> T: ...
    @overload
    def __getitem__(self, i: slice) -> list[T]: ...
    def __getitem__(self, i: int | slice) -> T | list[T]:
        if isinstance(i, slice):
            return list(self)[i]
        return self._at(i)


class Decoded(_Column[str | None]):
    """A read-only sequence of the strings a code column stands for."""

    __slots__ = ("_codes", "_names")

    def __init__(self, codes: array[int], names: Sequence[str]) -> None:
        self._codes = codes
        self._names = names

    def __len__(self) -> int:
        return len(self._codes)

    def _at(self, i: int) -> str | None:
        return self._name(self._codes[i])

    def _name(self, code: int) -> str | None:
        return None if code < 0 else self._names[code]

    def __iter__(self) -> Iterator[str | None]:
        return map(self._name, self._codes)


class Masked(_Column[float | None]):
    """A read-only sequence of ``values[i]`` where ``present[i]``, else None."""

    __slots__ = ("_values", "_present")

    def __init__(self, values: Sequence[float], present: Sequence[int]) -> None:
        self._values = values
        self._present = present

    def __len__(self) -> int:
        return len(self._values)

    def _at(self, i: int) -> float | None:
        return self._values[i] if self._present[i] else None

    def __iter__(self) -> Iterator[float | None]:
        return (v if ok else None for v, ok in zip(self._values, self._present, strict=True))


class HitProbabilities(_Column[float | None]):
    """Each row's predicted probability of HIT
    (:func:`~cacheeval.metrics.curves.p_hit` of its decision and confidence)."""

    __slots__ = ("_hit", "_confidence", "_present")

    def __init__(self, hit: array[int], confidence: array[float], present: array[int]) -> None:
        self._hit, self._confidence, self._present = hit, confidence, present

    def __len__(self) -> int:
        return len(self._hit)

    def _at(self, i: int) -> float | None:
        return p_hit(bool(self._hit[i]), self._confidence[i] if self._present[i] else None)

    def __iter__(self) -> Iterator[float | None]:
        return (
            p_hit(bool(h), c if ok else None)
            for h, c, ok in zip(self._hit, self._confidence, self._present, strict=True)
        )


class ScoreColumns:
    """The columns of one scored run (module docstring). Rows are added in
    order with :meth:`add`; nothing is ever removed."""

    __slots__ = (
        "y",
        "hit",
        "label",
        "domain",
        "difficulty",
        "subscore",
        "kind",
        "score",
        "scored",
        "confidence",
        "has_confidence",
        "latency",
        "timed",
        "called",
        "tier",
        "labels",
        "domains",
        "difficulties",
        "subscores",
        "kinds",
        "tiers",
        "errors",
        "failures",
        "n_ok",
        "n_ok_unscored",
    )

    def __init__(self, *, list_test_failures: bool = False) -> None:
        self.y = array("b")  # 1 = HIT row
        self.hit = array("b")  # 1 = the cache served
        self.label = array("h")  # codes into self.labels
        self.domain = array("h")
        self.difficulty = array("h")
        self.subscore = array("h")  # codes into self.subscores (schema.SUBSCORES)
        self.kind = array("h")  # codes into self.kinds (stress rows' perturbation_kind)
        self.score = array("d")
        self.scored = array("b")  # the score is not None
        self.confidence = array("d")
        self.has_confidence = array("b")  # the confidence is not None
        self.latency = array("d")
        self.timed = array("b")  # the latency counts (called, and not None)
        self.called = array("b")  # the row was decided by a call (counts for cost)
        self.tier = array("H")
        self.labels = _Codes()
        self.domains = _Codes()
        self.difficulties = _Codes()
        self.subscores = _Codes()
        self.kinds = _Codes()
        self.tiers = _Codes()
        self.errors = ErrorTally()
        # fed by add_row only (it needs the row); test-split rows listed only when asked
        self.failures = FailureTally(list_test=list_test_failures)
        self.n_ok = 0  # rows without an error
        self.n_ok_unscored = 0  # ... of which carry no score

    def __len__(self) -> int:
        return len(self.y)

    def add(
        self,
        y: int,
        label: str | None,
        domain: str | None,
        difficulty: str | None,
        prediction: Prediction,
        called: bool = True,
        subscore: str | None = None,
        kind: str | None = None,
    ) -> None:
        """Add one row: its truth (``y`` 1 for HIT), its prediction, whether
        that prediction came from a call (False for a missing one: left out of
        latency and cost), and the skill it tests
        (:func:`~cacheeval.schema.subscore_of`) and, for a stress row, its
        :func:`perturbation_kind`."""
        if y not in (0, 1) or prediction.is_hit not in (0, 1):
            raise ValueError(
                f"labels must be 0/1 or bool, got y_true={y!r}, y_pred={prediction.is_hit!r}"
            )
        self.y.append(y)
        self.hit.append(1 if prediction.is_hit else 0)
        self.label.append(self.labels.code(label))
        self.domain.append(self.domains.code(domain))
        self.difficulty.append(self.difficulties.code(difficulty))
        self.subscore.append(self.subscores.code(subscore))
        self.kind.append(self.kinds.code(kind))
        score = prediction.score
        self.score.append(0.0 if score is None else score)
        self.scored.append(score is not None)
        confidence = prediction.confidence
        self.confidence.append(0.0 if confidence is None else confidence)
        self.has_confidence.append(confidence is not None)
        latency = prediction.latency_ms
        self.latency.append(0.0 if latency is None else latency)
        self.timed.append(called and latency is not None)
        self.called.append(called)
        self.tier.append(self.tiers.code(prediction.tier_used))
        if prediction.error is not None:
            self.errors.add(prediction.id, prediction.error)
        else:
            self.n_ok += 1
            if score is None:
                self.n_ok_unscored += 1

    def add_row(self, row: Row, prediction: Prediction, called: bool = True) -> None:
        """:meth:`add` with the truth read from a labelled row, and the row
        noted in :attr:`failures` when the cache got it wrong."""
        self.add(row.y, row.label, row.domain, row.difficulty, prediction, called,
                 subscore_of(row), perturbation_kind(row))  # fmt: skip
        self.failures.add(row, prediction)

    def collected_failures(self) -> Failures | None:
        """The failures of the run, or None unless every row was noted (rows
        added with :meth:`add` alone, without the row, leave no failures)."""
        if not len(self) or self.failures.n_rows != len(self):
            return None
        return self.failures.result()

    # -- views the metric functions take ------------------------------------------

    def confusions(self, column: str) -> dict[str, Confusion]:
        """The confusion counts of each value of ``label``, ``domain``,
        ``difficulty``, ``subscore`` or ``kind`` (rows where it is None left out)."""
        codes: array[int] = getattr(self, column)
        names = getattr(self, f"{column}s" if column != "difficulty" else "difficulties").names
        counts = Counter(zip(codes, self.y, self.hit, strict=True))
        cells: dict[str, list[int]] = {}
        for (code, t, p), n in counts.items():
            if code < 0:
                continue
            cell = cells.setdefault(names[code], [0, 0, 0, 0])  # tp, fp, fn, tn
            cell[(0 if p else 2) if t else (1 if p else 3)] += n
        return {k: Confusion(*v) for k, v in cells.items()}

    def subscore_keys(self) -> list[str | None]:
        """Each row's sub-score (None where it was not given)."""
        names = self.subscores.names
        return [names[c] if c >= 0 else None for c in self.subscore]

    def scores(self) -> Masked:
        """Each row's score, None where the prediction had none."""
        return Masked(self.score, self.scored)

    def no_scores(self) -> Masked:
        """None for every row (a run whose scores are not used)."""
        return Masked(self.score, bytes(len(self.score)))

    def predicted_hit_probabilities(self) -> HitProbabilities:
        """Each row's predicted P(HIT), for the reliability diagram."""
        return HitProbabilities(self.hit, self.confidence, self.has_confidence)

    def timed_latencies(self) -> Iterator[float]:
        """The latencies of the rows decided by a call that has one."""
        return compress(self.latency, self.timed)

    def called_tiers(self) -> Iterator[str]:
        """The tier of each row decided by a call, in row order."""
        names = self.tiers.names
        return map(names.__getitem__, compress(self.tier, self.called))

    def tier_names(self) -> Decoded:
        """Every row's tier."""
        return Decoded(self.tier, self.tiers.names)


# --- joining streams ---------------------------------------------------------------


@dataclass(slots=True)
class JoinStats:
    """What :func:`join_stream` saw besides the rows it scored (ids: the first
    :data:`KEEP_IDS` of each kind, in order)."""

    n_missing: int = 0
    missing_ids: list[str] = field(default_factory=list)
    n_extra: int = 0
    extra_ids: list[str] = field(default_factory=list)
    n_hidden: int = 0
    hidden_ids: list[str] = field(default_factory=list)
    n_rows: int = 0


def missing_prediction(row_id: str) -> Prediction:
    """The prediction scored for a row that has none: a MISS, tier ``missing``."""
    return Prediction(row_id, False, None, None, "missing", None, MISSING_ERROR)


def join_stream(
    rows: Iterable[Row], predictions: Iterable[Prediction], columns: ScoreColumns
) -> JoinStats:
    """Add every labelled row of ``rows`` to ``columns`` with its prediction,
    matched by id (a row without one gets :func:`missing_prediction`).

    Hidden test rows (no label) are counted in ``n_hidden`` and left out, and
    so are their predictions. Predictions whose id is no row's are counted
    as extra, listed in prediction order. Duplicate row ids raise ValueError
    (duplicate prediction ids are the reader's to reject).

    Rows and predictions in the same order are matched in lockstep; a
    prediction that comes early waits in a dict until its row arrives.
    """
    stats = JoinStats()
    stream = iter(predictions)
    waiting: dict[str, Prediction] = {}
    seen_rows = IdSet()
    exhausted = False
    for row in rows:
        if not seen_rows.add(row.id):
            raise ValueError(f"duplicate row id {row.id!r}")
        stats.n_rows += 1
        found = waiting.pop(row.id, None)
        while found is None and not exhausted:
            nxt = next(stream, None)
            if nxt is None:
                exhausted = True
            elif nxt.id == row.id:
                found = nxt
            else:
                waiting[nxt.id] = nxt
        if not row.is_labelled:
            stats.n_hidden += 1
            if len(stats.hidden_ids) < KEEP_IDS:
                stats.hidden_ids.append(row.id)
            continue
        if found is None:
            stats.n_missing += 1
            if len(stats.missing_ids) < KEEP_IDS:
                stats.missing_ids.append(row.id)
            columns.add_row(row, missing_prediction(row.id), called=False)
        else:
            columns.add_row(row, found)
    # Whatever is left matched no row (a later row would have taken it).
    for extra in _chain_keys(waiting, stream):
        stats.n_extra += 1
        if len(stats.extra_ids) < KEEP_IDS:
            stats.extra_ids.append(extra)
    return stats


def _chain_keys(waiting: dict[str, Prediction], rest: Iterator[Prediction]) -> Iterator[str]:
    yield from waiting
    for p in rest:
        yield p.id
