"""Curves of a scored run, kept in the report so they can be drawn: the
threshold sweep behind PR and P-CHR curves, and the reliability diagram.

Score curve (:func:`~.sweep.threshold_sweep`, as in :mod:`.ranking`): the
cache fires on every row with ``score >= tau``; at the k-th distinct score
from the top, ``n_fired_k`` rows fire, ``tp_k`` of them HIT rows and
``fp_k = n_fired_k - tp_k`` MISS rows. With N rows, P HIT rows and
Nn = N - P MISS rows, a point gives

* precision ``tp / n_fired``, recall ``tp / P`` (the PR curve),
* CHR ``n_fired / N`` (the P-CHR curve), FHR ``fp / Nn``.

Rows with no score never fire. A report keeps at most ``max_points`` points:
the first and last distinct scores and, in between, the first point past
each ``N / max_points`` step of ``n_fired`` (the curve is drawn, the AUCs are
computed exactly in :mod:`.ranking`).

Reliability: each row's predicted probability that it is a HIT row is the
verdict's confidence when it served (``is_hit``) and one minus it when it did
not. Rows are binned by that probability into ``n_bins`` equal-width bins
(the last bin closed at 1.0); per bin the mean predicted probability is set
against the observed share of HIT rows, with its Wilson interval. The
expected calibration error is ``ECE = sum_b (n_b / N) |mean_pred_b - obs_b|``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from .classification import Estimate, proportion
from .sweep import CurvePoint, threshold_sweep

__all__ = [
    "MAX_CURVE_POINTS",
    "RELIABILITY_BINS",
    "CurvePoint",
    "Curves",
    "ReliabilityBin",
    "curves",
    "expected_calibration_error",
    "p_hit",
    "reliability",
    "score_curve",
]

#: Points a report keeps per score curve.
MAX_CURVE_POINTS = 200
#: Equal-width bins of the reliability diagram.
RELIABILITY_BINS = 10


@dataclass(frozen=True, slots=True)
class ReliabilityBin:
    """Rows whose predicted P(HIT) lies in ``[lo, hi)`` (``[lo, 1]`` for the last bin).

    ``mean_predicted`` is None for an empty bin; ``observed`` is the share of
    HIT rows in the bin (``n_hit / n``) with its Wilson interval.
    """

    lo: float
    hi: float
    n: int
    mean_predicted: float | None
    n_hit: int
    observed: Estimate


@dataclass(frozen=True, slots=True)
class Curves:
    """What a report keeps to draw its curves (see the module docstring).

    ``n``/``n_positive`` are the rows and HIT rows the curve is taken over
    (recall = tp / n_positive, CHR = n_fired / n). ``score_curve`` is empty
    when the run has no scores; ``ece`` is None when no row has a confidence.
    """

    n: int
    n_positive: int
    score_curve: tuple[CurvePoint, ...]
    reliability: tuple[ReliabilityBin, ...]
    ece: float | None


def score_curve(
    y_true: Sequence[int | bool],
    scores: Sequence[float | None],
    max_points: int = MAX_CURVE_POINTS,
) -> tuple[CurvePoint, ...]:
    """The threshold sweep: one :class:`CurvePoint` per distinct score, highest
    first, thinned to at most ``max_points + 1`` points (first and last kept).

    >>> score_curve([1, 0, 1, 0], [0.9, 0.8, 0.8, None])  # doctest: +NORMALIZE_WHITESPACE
    (CurvePoint(threshold=0.9, n_fired=1, tp=1, fp=0),
     CurvePoint(threshold=0.8, n_fired=3, tp=2, fp=1))
    """
    if max_points < 1:
        raise ValueError("max_points must be at least 1")
    points = threshold_sweep(y_true, scores).points
    step = len(scores) / max_points
    out: list[CurvePoint] = []
    next_mark = step
    for i, point in enumerate(points):
        if i == 0 or i == len(points) - 1 or point.n_fired >= next_mark:
            out.append(point)
            while next_mark <= point.n_fired:
                next_mark += step
    return tuple(out)


def p_hit(is_hit: bool, confidence: float | None) -> float | None:
    """The predicted probability of HIT: ``confidence`` when the cache served,
    ``1 - confidence`` when it did not (None without a confidence).

    >>> p_hit(True, 0.8), p_hit(False, 0.8), p_hit(False, None)
    (0.8, 0.19999999999999996, None)
    """
    if confidence is None:
        return None
    return confidence if is_hit else 1.0 - confidence


def reliability(
    y_true: Sequence[int | bool],
    predicted: Sequence[float | None],
    n_bins: int = RELIABILITY_BINS,
) -> tuple[ReliabilityBin, ...]:
    """Bin rows by predicted P(HIT) into ``n_bins`` equal-width bins; rows with
    None are left out. Bin b covers ``[b/n_bins, (b+1)/n_bins)``; 1.0 falls in
    the last bin.

    >>> bins = reliability([1, 0, 1, 1], [0.05, 0.95, 0.9, None], n_bins=2)
    >>> [(b.lo, b.hi, b.n, b.mean_predicted, b.n_hit) for b in bins]
    [(0.0, 0.5, 1, 0.05, 1), (0.5, 1.0, 2, 0.925, 1)]
    """
    if len(y_true) != len(predicted):
        raise ValueError(f"{len(y_true)} labels but {len(predicted)} probabilities")
    if n_bins < 1:
        raise ValueError("n_bins must be at least 1")
    count = [0] * n_bins
    hits = [0] * n_bins
    total = [0.0] * n_bins
    for y, q in zip(y_true, predicted, strict=True):
        if q is None:
            continue
        if not 0.0 <= q <= 1.0:
            raise ValueError(f"predicted probability {q!r} is outside [0, 1]")
        b = min(int(q * n_bins), n_bins - 1)
        count[b] += 1
        hits[b] += int(bool(y))
        total[b] += q
    return tuple(
        ReliabilityBin(
            lo=b / n_bins,
            hi=(b + 1) / n_bins,
            n=count[b],
            mean_predicted=total[b] / count[b] if count[b] else None,
            n_hit=hits[b],
            observed=proportion(hits[b], count[b]),
        )
        for b in range(n_bins)
    )


def expected_calibration_error(bins: Sequence[ReliabilityBin]) -> float | None:
    """``ECE = sum_b (n_b / N) |mean_pred_b - n_hit_b / n_b|`` over non-empty
    bins, N the rows in all bins; None when every bin is empty.

    >>> bins = reliability([1, 0, 1, 1], [0.05, 0.95, 0.9, None], n_bins=2)
    >>> round(expected_calibration_error(bins), 4)  # (1*|0.05-1| + 2*|0.925-0.5|) / 3
    0.6
    """
    n = sum(b.n for b in bins)
    if n == 0:
        return None
    return math.fsum(
        b.n / n * abs(b.mean_predicted - b.n_hit / b.n)
        for b in bins
        if b.n and b.mean_predicted is not None
    )


def curves(
    y_true: Sequence[int | bool],
    scores: Sequence[float | None],
    predicted: Sequence[float | None],
    max_points: int = MAX_CURVE_POINTS,
    n_bins: int = RELIABILITY_BINS,
) -> Curves:
    """The score curve and the reliability diagram of one run."""
    bins = reliability(y_true, predicted, n_bins)
    return Curves(
        n=len(y_true),
        n_positive=int(sum(y_true)),
        score_curve=score_curve(y_true, scores, max_points),
        reliability=bins,
        ece=expected_calibration_error(bins),
    )
