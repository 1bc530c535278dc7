"""Stratified metrics: the classification metrics on one slice of the rows
(a domain, a five-way label, a difficulty)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .classification import (
    Confusion,
    Estimate,
    accuracy,
    confusion,
    f1,
    fhr,
    hit_rate,
    precision,
    recall,
)


@dataclass(frozen=True, slots=True)
class Slice:
    """Every classification metric restricted to the rows whose key is ``key``.

    On a label slice, ``hit_rate`` (share of rows served) is the headline for
    EQUIV/PARA_SAFE and ``fhr`` for the MISS classes; a HIT-label slice can
    still have an FHR when policy rows (``policy_no_cache``) force some of its
    rows to MISS.
    """

    key: str
    n: int
    confusion: Confusion
    accuracy: Estimate
    precision: Estimate
    recall: Estimate
    f1: Estimate
    fhr: Estimate
    hit_rate: Estimate


def slice_of(key: str, c: Confusion) -> Slice:
    """All metrics of one slice from its confusion counts."""
    return Slice(
        key=key,
        n=c.n,
        confusion=c,
        accuracy=accuracy(c),
        precision=precision(c),
        recall=recall(c),
        f1=f1(c),
        fhr=fhr(c),
        hit_rate=hit_rate(c),
    )


def slices(
    keys: Sequence[str | None],
    y_true: Sequence[int],
    y_pred: Sequence[bool],
    order: Sequence[str],
) -> tuple[Slice, ...]:
    """One :class:`Slice` per key present, in ``order`` then alphabetically for
    keys outside it; rows whose key is None are left out."""
    if not len(keys) == len(y_true) == len(y_pred):
        raise ValueError("keys, y_true and y_pred differ in length")
    groups: dict[str, list[int]] = {}
    for i, key in enumerate(keys):
        if key is not None:
            groups.setdefault(key, []).append(i)
    return tuple(
        slice_of(k, confusion([y_true[i] for i in groups[k]], [y_pred[i] for i in groups[k]]))
        for k in slice_order(groups, order)
    )


def slice_order(present: Iterable[str], order: Sequence[str]) -> list[str]:
    """The keys present, in ``order`` first, then alphabetically.

    >>> slice_order({"zeta", "math", "code"}, ("math", "code"))
    ['math', 'code', 'zeta']
    """
    present = set(present)
    known = set(order)
    return [k for k in order if k in present] + sorted(k for k in present if k not in known)


@dataclass(frozen=True, slots=True)
class SliceOperatingPoint:
    """The best operating point of one slice's scores under an FHR budget
    ``alpha`` (:func:`~cacheeval.metrics.sweep.best_operating_point`, the
    largest recall with FHR <= alpha): its threshold (None when no threshold
    fits) and the recall and FHR there, each with its Wilson interval. The
    threshold is chosen on these rows, so the recall leans optimistic."""

    key: str
    alpha: float
    threshold: float | None
    recall: Estimate
    fhr: Estimate


def slice_operating_points(
    keys: Sequence[str | None],
    y_true: Sequence[int],
    scores: Sequence[float | None],
    order: Sequence[str],
    alpha: float = 0.05,
) -> tuple[SliceOperatingPoint, ...]:
    """:class:`SliceOperatingPoint` of every key present (rows whose key is
    None left out), in ``order`` then A-Z.

    Key ``q``: HIT rows scored 0.9, 0.7, MISS rows 0.8, 0.1. FHR <= 0.05 of 2
    MISS rows admits no false hit: threshold 0.9, recall 1/2, FHR 0/2.

    >>> p, = slice_operating_points(["q"] * 4, [1, 1, 0, 0], [0.9, 0.7, 0.8, 0.1], ["q"])
    >>> p.threshold, (p.recall.numerator, p.recall.denominator), p.fhr.value
    (0.9, (1, 2), 0.0)
    """
    from .sweep import best_operating_point, threshold_sweep

    rows: dict[str, tuple[list[int], list[float | None]]] = {}
    for key, y, s in zip(keys, y_true, scores, strict=True):
        if key is not None:
            ys, ss = rows.setdefault(key, ([], []))
            ys.append(int(y))
            ss.append(s)
    out = []
    for key in slice_order(rows, order):
        ys, ss = rows[key]
        op = best_operating_point(threshold_sweep(ys, ss), alpha)
        n_pos, n_neg = sum(ys), len(ys) - sum(ys)
        c = Confusion(op.tp, op.fp, n_pos - op.tp, n_neg - op.fp)
        out.append(SliceOperatingPoint(key, alpha, op.threshold, recall(c), fhr(c)))
    return tuple(out)
