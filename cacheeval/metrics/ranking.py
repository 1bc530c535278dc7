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

Everything comes from one sort of the distinct scores and one pass over them,
O(n log n); grouping uses :class:`collections.Counter` (C speed).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import compress
from typing import cast

#: FHR budgets for which the best operating point is reported by default.
DEFAULT_ALPHAS: tuple[float, ...] = (0.05, 0.01)


@dataclass(frozen=True, slots=True)
class OperatingPoint:
    """The best threshold under ``FHR <= alpha``.

    ``threshold`` is None when no threshold meets the budget with a non-zero
    recall: the cache should then never fire (recall 0, FHR 0).
    ``recall``/``fhr`` are None when there are no HIT/MISS rows.
    ``precision`` is None when nothing fires.
    """

    alpha: float
    threshold: float | None
    recall: float | None
    precision: float | None
    fhr: float | None
    n_fired: int
    tp: int
    fp: int


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


def fhr_budget(alpha: float, n_negative: int) -> int:
    """The largest false-positive count FP with ``FP / n_negative <= alpha``.

    Computed with the same float division the reported FHR uses, so the chosen
    point never shows an FHR above alpha through rounding.
    """
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must lie in [0, 1], got {alpha}")
    if n_negative == 0:
        return 0
    limit = math.floor(alpha * n_negative)
    while limit + 1 <= n_negative and (limit + 1) / n_negative <= alpha:
        limit += 1
    while limit > 0 and limit / n_negative > alpha:
        limit -= 1
    return limit


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
    """Compute every threshold-free metric in one sort and one pass.

    ``y_true[i]`` is 1/True for a HIT row; ``scores[i]`` its score, or None
    for a row that never fires. Scores must be finite. Undefined values are
    None: PR-AUC and CRR without HIT rows, ROC-AUC without both classes, every
    curve metric when there are no rows.
    """
    n = len(y_true)
    if len(scores) != n:
        raise ValueError(f"{n} labels but {len(scores)} scores")
    if not set(y_true) <= {0, 1}:
        raise ValueError("labels must be 0/1 or bool")
    n_pos = int(sum(y_true))
    n_neg = n - n_pos

    # Group rows by score: fired count and HIT count per distinct score.
    all_count: Counter[float | None] = Counter(scores)
    pos_count: Counter[float | None] = Counter(compress(scores, y_true))
    unscored = all_count.pop(None, 0)
    unscored_pos = pos_count.pop(None, 0)
    keys: list[float] = sorted(cast("Counter[float]", all_count), reverse=True)  # the one sort
    if not all(map(math.isfinite, keys)):
        raise ValueError("scores must be finite numbers (or None)")

    # FHR budgets, ascending, each mapped to the largest admissible FP count.
    order = sorted(range(len(alphas)), key=lambda i: alphas[i])
    limits = [fhr_budget(alphas[i], n_neg) if n_neg else n for i in order]
    best: list[tuple[float | None, int, int]] = [(None, 0, 0)] * len(limits)
    j = 0
    next_limit = limits[0] if limits else math.inf

    fired = tp = 0
    ap_sum = 0.0  # sum_k pos_k * Prec_k        (AP = ap_sum / P)
    chr_sum = 0.0  # sum_k fired_now_k * Prec_k (P-CHR AUC = chr_sum / N)
    auc_sum = 0.0  # sum over MISS rows of (#HIT above + 1/2 #HIT tied)
    # The last group that added a HIT row: the best point for a budget is the
    # highest threshold reaching the largest admissible TP.
    last_thr: float | None = None
    last_tp = last_fired = 0
    get_pos = pos_count.get
    for k in keys:
        a = all_count[k]
        pos = get_pos(k, 0)
        fired += a
        tp += pos
        prec = tp / fired
        ap_sum += pos * prec
        chr_sum += a * prec
        auc_sum += (a - pos) * (tp - 0.5 * pos)
        while fired - tp > next_limit:  # this group breaks budget j: settle it
            best[j] = (last_thr, last_tp, last_fired)
            j += 1
            next_limit = limits[j] if j < len(limits) else math.inf
        if pos:
            last_thr, last_tp, last_fired = k, tp, fired
    while j < len(limits):
        best[j] = (last_thr, last_tp, last_fired)
        j += 1

    # Unscored rows rank below every scored one, tied among themselves.
    auc_sum += (unscored - unscored_pos) * (n_pos - 0.5 * unscored_pos)

    p = n_pos / n if n else None
    pr_auc = ap_sum / n_pos if n_pos else None
    roc_auc = auc_sum / (n_pos * n_neg) if n_pos and n_neg else None
    p_chr = chr_sum / n if n else None
    crr = p_chr / pr_auc if p_chr is not None and pr_auc else None
    d_str = structural_gap(p) if p is not None else None
    d_op = pr_auc - p_chr if pr_auc is not None and p_chr is not None else None
    d_cal = max(0.0, d_op - d_str) if d_op is not None and d_str is not None else None

    points: list[OperatingPoint | None] = [None] * len(limits)
    for slot, i in enumerate(order):
        thr, b_tp, b_fired = best[slot]
        b_fp = b_fired - b_tp
        points[i] = OperatingPoint(
            alpha=alphas[i],
            threshold=thr,
            recall=b_tp / n_pos if n_pos else None,
            precision=b_tp / b_fired if b_fired else None,
            fhr=b_fp / n_neg if n_neg else None,
            n_fired=b_fired,
            tp=b_tp,
            fp=b_fp,
        )
    return ThresholdFree(
        n=n,
        n_scored=n - unscored,
        n_positive=n_pos,
        n_distinct_scores=len(keys),
        positive_rate=p,
        pr_auc=pr_auc,
        roc_auc=roc_auc,
        p_chr_auc=p_chr,
        crr=crr,
        delta_str=d_str,
        delta_op=d_op,
        delta_cal=d_cal,
        operating_points=tuple(p for p in points if p is not None),
    )
