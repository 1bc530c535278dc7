"""Threshold-free metrics of a continuous hit score.

When a cache gives every verdict a ``score`` (higher = more willing to serve),
a threshold tau turns it into decisions: the cache *fires* (serves) on every
row with ``score >= tau``. Sweeping tau over the distinct scores, from the
highest down, traces the curves below. Rows sharing a score fire together, so
each distinct score is one point ("ties grouped"). Notation at the k-th
distinct score from the top (k = 1..K, with the empty point k = 0 before it):

* ``fired_k`` rows fire, ``TP_k`` of them HIT rows, ``FP_k = fired_k - TP_k``;
* N rows in all, P of them HIT, Nn = N - P MISS; positive rate p = P / N;
* ``R_k = TP_k / P`` (recall), ``Prec_k = TP_k / fired_k`` (precision),
  ``CHR_k = fired_k / N`` (cache-hit ratio), ``FHR_k = FP_k / Nn``.

Metrics (see the seeds' "Closing the Calibration Gap in Semantic Caching",
section 3 and appendix D):

* PR-AUC, as average precision: ``AP = sum_k (R_k - R_{k-1}) * Prec_k``.
* ROC-AUC, the Mann-Whitney statistic: the probability that a random HIT row
  scores above a random MISS row, ties counting 1/2.
* P-CHR AUC: the area under precision against CHR, a step function over the
  distinct-score points: ``sum_k (CHR_k - CHR_{k-1}) * Prec_k``. In the pair
  setting the top candidate is always the labelled one, so the deployment
  precision at tau is ``TP/(TP+FP)`` over the rows with ``score >= tau``. A
  perfect ranker (every HIT above every MISS) tends to ``p (1 - ln p)``.
* CRR = P-CHR AUC / PR-AUC, the share of ranking quality kept at deployment.
* Structural gap ``Delta_str = 1 - p (1 - ln p)`` (fixed by p), operational
  gap ``Delta_op = PR-AUC - P-CHR AUC``, calibration gap
  ``Delta_cal = max(0, Delta_op - Delta_str)``.
* Best operating point under an FHR budget alpha: the threshold with the
  largest recall among those with ``FHR <= alpha`` (the highest such
  threshold when several reach that recall), with its precision and FHR.

A row whose score is None (an error, a timeout, a missing prediction) never
fires: it counts in N and P but no threshold serves it; for ROC-AUC it ranks
below every scored row (tied with the other unscored rows).

Everything comes from one :func:`~.sweep.threshold_sweep` (one sort of the
distinct scores, O(n log n)) and one pass over its points; the operating
points from :func:`~.sweep.best_operating_point` (rule ``max_recall``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from .sweep import OperatingPoint, best_operating_point, fhr_budget, threshold_sweep

__all__ = [
    "DEFAULT_ALPHAS",
    "OperatingPoint",
    "ThresholdFree",
    "fhr_budget",
    "perfect_p_chr_auc",
    "structural_gap",
    "threshold_free",
]

#: FHR budgets for which the best operating point is reported by default.
DEFAULT_ALPHAS: tuple[float, ...] = (0.05, 0.01)


@dataclass(frozen=True, slots=True)
class ThresholdFree:
    """All threshold-free metrics of one scored run (see the module docstring)."""

    n: int
    n_scored: int
    n_positive: int
    n_distinct_scores: int
    positive_rate: float | None
    pr_auc: float | None
    roc_auc: float | None
    p_chr_auc: float | None
    crr: float | None
    delta_str: float | None
    delta_op: float | None
    delta_cal: float | None
    operating_points: tuple[OperatingPoint, ...]


def structural_gap(p: float) -> float | None:
    """``Delta_str = 1 - p (1 - ln p)``; None for p = 0 (no HIT rows)."""
    if p <= 0.0:
        return None
    return 1.0 - p * (1.0 - math.log(p))


def perfect_p_chr_auc(p: float) -> float:
    """The P-CHR AUC limit of a perfect ranker, ``p (1 - ln p)`` (0 at p = 0)."""
    return 0.0 if p <= 0.0 else p * (1.0 - math.log(p))


def threshold_free(
    y_true: Sequence[int | bool],
    scores: Sequence[float | None],
    alphas: Sequence[float] = DEFAULT_ALPHAS,
) -> ThresholdFree:
    """Compute every threshold-free metric from one :func:`~.sweep.threshold_sweep`.

    ``y_true[i]`` is 1/True for a HIT row; ``scores[i]`` its score, or None
    for a row that never fires. Scores must be finite. Undefined values are
    None: PR-AUC and CRR without HIT rows, ROC-AUC without both classes, every
    curve metric when there are no rows. Point k of the sweep adds
    ``a = fired_k - fired_{k-1}`` rows, ``pos = TP_k - TP_{k-1}`` of them HIT rows.

    >>> tf = threshold_free([1, 1, 0, 1, 0, 0], [0.9, 0.8, 0.8, 0.5, 0.3, 0.3])
    >>> round(tf.pr_auc * 36, 9), round(tf.p_chr_auc * 72, 9), round(tf.roc_auc * 6, 9)
    (29.0, 49.0, 5.0)
    """
    sweep = threshold_sweep(y_true, scores)
    n, n_pos, n_neg = sweep.n, sweep.n_positive, sweep.n_negative
    ap_sum = 0.0  # sum_k pos_k * Prec_k        (AP = ap_sum / P)
    chr_sum = 0.0  # sum_k fired_now_k * Prec_k (P-CHR AUC = chr_sum / N)
    auc_sum = 0.0  # sum over MISS rows of (#HIT above + 1/2 #HIT tied)
    fired = tp = 0
    for point in sweep.points:
        a, pos = point.n_fired - fired, point.tp - tp
        fired, tp = point.n_fired, point.tp
        prec = tp / fired
        ap_sum += pos * prec
        chr_sum += a * prec
        auc_sum += (a - pos) * (tp - 0.5 * pos)
    # Unscored rows rank below every scored one, tied among themselves.
    unscored, unscored_pos = n - fired, n_pos - tp
    auc_sum += (unscored - unscored_pos) * (n_pos - 0.5 * unscored_pos)

    p = n_pos / n if n else None
    pr_auc = ap_sum / n_pos if n_pos else None
    roc_auc = auc_sum / (n_pos * n_neg) if n_pos and n_neg else None
    p_chr = chr_sum / n if n else None
    crr = p_chr / pr_auc if p_chr is not None and pr_auc else None
    d_str = structural_gap(p) if p is not None else None
    d_op = pr_auc - p_chr if pr_auc is not None and p_chr is not None else None
    d_cal = max(0.0, d_op - d_str) if d_op is not None and d_str is not None else None
    return ThresholdFree(
        n=n,
        n_scored=fired,
        n_positive=n_pos,
        n_distinct_scores=len(sweep.points),
        positive_rate=p,
        pr_auc=pr_auc,
        roc_auc=roc_auc,
        p_chr_auc=p_chr,
        crr=crr,
        delta_str=d_str,
        delta_op=d_op,
        delta_cal=d_cal,
        operating_points=tuple(best_operating_point(sweep, alpha) for alpha in alphas),
    )
