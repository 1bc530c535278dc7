"""The threshold sweep behind every curve and every operating point.

A threshold tau turns a continuous hit score into decisions: the cache *fires*
(serves) on every row with ``score >= tau``. Sweeping tau over the distinct
scores from the highest down gives the confusion counts at every threshold
(scikit-learn's ``confusion_matrix_at_thresholds``). Rows sharing a score fire
together, so each distinct score is one point ("ties grouped"). At the k-th
distinct score ``s_k`` from the top (k = 1..K; the empty point k = 0 fires
nothing):

    n_fired_k = #{i : score_i >= s_k}
    TP_k      = #{i : score_i >= s_k and y_i = 1}
    FP_k      = n_fired_k - TP_k
    FN_k      = P - TP_k,  TN_k = Nn - FP_k

with N rows, P of them HIT and Nn = N - P MISS. A row whose score is None
never fires: it counts in N and P but in no point. One sort of the distinct
scores, one pass: O(n log n).

The best operating point under a budget on false hits (:func:`best_operating_point`)
is chosen among the *admissible prefix*: the points before the first one whose
FP breaks the budget (FP only grows as tau falls, so for a budget monotone in
FP these are exactly the admissible points). The budget is either a maximum
FHR alpha (``FP / Nn <= alpha``, :func:`fhr_budget`) or a predicate
``admissible(fp, n_negative)``, e.g. a Clopper-Pearson upper bound of FHR at
most alpha.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import compress
from typing import Literal, cast

from .classification import Confusion

#: A budget on false hits: a maximum FHR, or ``admissible(fp, n_negative)``.
Budget = float | Callable[[int, int], bool]


@dataclass(frozen=True, slots=True)
class CurvePoint:
    """The confusion counts at threshold ``score >= threshold``: ``n_fired`` rows
    fire, ``tp`` of them HIT rows and ``fp = n_fired - tp`` MISS rows."""

    threshold: float
    n_fired: int
    tp: int
    fp: int


@dataclass(frozen=True, slots=True)
class Sweep:
    """Every point of the sweep, highest threshold first (see the module docstring).

    ``n`` and ``n_positive`` count every row, scored or not; FN and TN at a
    point are ``n_positive - tp`` and ``n_negative - fp``.
    """

    n: int
    n_positive: int
    points: tuple[CurvePoint, ...]

    @property
    def n_negative(self) -> int:
        """MISS rows: ``n - n_positive``."""
        return self.n - self.n_positive

    def at(self, threshold: float) -> CurvePoint:
        """The counts when firing on ``score >= threshold`` (the last point whose
        score reaches it; nothing fires above the top score).

        >>> sw = threshold_sweep([1, 0, 1], [0.9, 0.5, 0.5])
        >>> sw.at(0.7), sw.at(0.5).n_fired, sw.at(2.0).n_fired
        (CurvePoint(threshold=0.9, n_fired=1, tp=1, fp=0), 3, 0)
        """
        return self.where(lambda score: score >= threshold, threshold)

    def where(self, fires: Callable[[float], bool], label: float = math.inf) -> CurvePoint:
        """The counts when the cache fires on the rows whose score passes ``fires``,
        a rule that holds on every score above one that passes it (a cut, however
        the cache writes it). ``label`` is the threshold of the empty point.

        >>> threshold_sweep([1, 0, 1], [0.9, 0.5, 0.5]).where(lambda s: 2 * s > 1.5)
        CurvePoint(threshold=0.9, n_fired=1, tp=1, fp=0)
        """
        k = bisect_left(self.points, True, key=lambda p: not fires(p.threshold))
        return self.points[k - 1] if k else CurvePoint(label, 0, 0, 0)

    def confusion(self, point: CurvePoint) -> Confusion:
        """The confusion matrix at a point: FN = P - TP, TN = Nn - FP.

        >>> sw = threshold_sweep([1, 0, 1], [0.9, 0.5, 0.5])
        >>> sw.confusion(sw.at(0.7))
        Confusion(tp=1, fp=0, fn=1, tn=1)
        """
        return Confusion(point.tp, point.fp, self.n_positive - point.tp, self.n_negative - point.fp)


@dataclass(frozen=True, slots=True)
class OperatingPoint:
    """One threshold chosen under an FHR budget ``alpha``: serve when
    ``score >= threshold``.

    ``threshold`` is None when no threshold fits the budget (for the
    ``max_recall`` rule: none with a non-zero recall): the cache should then
    never fire (recall 0, FHR 0). ``recall``/``fhr`` are None when there are no
    HIT/MISS rows; ``precision`` is None when nothing fires.
    """

    alpha: float
    threshold: float | None
    recall: float | None
    precision: float | None
    fhr: float | None
    n_fired: int
    tp: int
    fp: int


def threshold_sweep(y_true: Sequence[int | bool], scores: Sequence[float | None]) -> Sweep:
    """The confusion counts at every distinct score (the module docstring's formulas).

    ``y_true[i]`` is 1/True for a HIT row; ``scores[i]`` its finite score, or
    None for a row that never fires.

    >>> sw = threshold_sweep([1, 0, 1, 0, 1], [0.9, 0.8, 0.8, None, 0.1])
    >>> sw.n, sw.n_positive, sw.n_negative
    (5, 3, 2)
    >>> [(p.threshold, p.n_fired, p.tp, p.fp) for p in sw.points]
    [(0.9, 1, 1, 0), (0.8, 3, 2, 1), (0.1, 4, 3, 1)]
    """
    n = len(y_true)
    if len(scores) != n:
        raise ValueError(f"{n} labels but {len(scores)} scores")
    if not set(y_true) <= {0, 1}:
        raise ValueError("labels must be 0/1 or bool")
    all_count: Counter[float | None] = Counter(scores)
    pos_count: Counter[float | None] = Counter(compress(scores, y_true))
    all_count.pop(None, None)
    keys: list[float] = sorted(cast("Counter[float]", all_count), reverse=True)  # the one sort
    if not all(map(math.isfinite, keys)):
        raise ValueError("scores must be finite numbers (or None)")
    points = []
    fired = tp = 0
    get_pos = pos_count.get
    for k in keys:
        fired += all_count[k]
        tp += get_pos(k, 0)
        points.append(CurvePoint(k, fired, tp, fired - tp))
    return Sweep(n, int(sum(y_true)), tuple(points))


def fhr_budget(alpha: float, n_negative: int) -> int:
    """The largest false-positive count FP with ``FP / n_negative <= alpha``.

    Computed with the same float division the reported FHR uses, so the chosen
    point never shows an FHR above alpha through rounding.

    >>> fhr_budget(0.05, 100), fhr_budget(0.34, 3), fhr_budget(0.05, 0)
    (5, 1, 0)
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


def _admissible(budget: Budget, n_negative: int) -> Callable[[int], bool]:
    """``fp -> bool`` for a budget; a predicate is asked once per distinct FP."""
    if not callable(budget):
        # Without MISS rows no threshold can serve a false hit: all admissible.
        limit = fhr_budget(budget, n_negative) if n_negative else math.inf
        return lambda fp: fp <= limit
    memo: dict[int, bool] = {}

    def ok(fp: int) -> bool:
        if fp not in memo:
            memo[fp] = bool(budget(fp, n_negative))
        return memo[fp]

    return ok


def best_operating_point(
    sweep: Sweep,
    budget: Budget,
    *,
    alpha: float | None = None,
    rule: Literal["max_recall", "lowest"] = "max_recall",
) -> OperatingPoint:
    """The operating point of ``sweep`` under ``budget`` (a maximum FHR, or a
    predicate ``admissible(fp, n_negative)`` that only turns false as FP grows).

    Among the admissible prefix of the sweep (the module docstring):

    * ``rule="max_recall"`` - the largest TP, at the highest threshold reaching
      it (no needless false hits); no threshold when that TP is 0;
    * ``rule="lowest"`` - the last admissible point: the lowest threshold, the
      most rows served (a certification's rule); no threshold when even the top
      point breaks the budget.

    ``alpha`` is recorded in the result (default: the budget when it is a number).

    Six rows (0.9, HIT) (0.8, HIT) (0.8, MISS) (0.5, HIT) (0.3, MISS) (0.3, MISS):
    points (tau, fired, TP, FP) = (0.9, 1, 1, 0) (0.8, 3, 2, 1) (0.5, 4, 3, 1)
    (0.3, 6, 3, 3). FHR <= 0.05 of 3 MISS rows admits FP 0: only tau 0.9; FHR <=
    0.34 admits FP 1: tau 0.8 and 0.5, TP 3 at 0.5 (recall 1, precision 3/4).

    >>> sw = threshold_sweep([1, 1, 0, 1, 0, 0], [0.9, 0.8, 0.8, 0.5, 0.3, 0.3])
    >>> best_operating_point(sw, 0.05)  # doctest: +NORMALIZE_WHITESPACE
    OperatingPoint(alpha=0.05, threshold=0.9, recall=0.3333333333333333, precision=1.0,
                   fhr=0.0, n_fired=1, tp=1, fp=0)
    >>> op = best_operating_point(sw, 0.34)
    >>> op.threshold, op.recall, op.precision, op.n_fired
    (0.5, 1.0, 0.75, 4)
    >>> op = best_operating_point(sw, lambda fp, nn: fp <= 2, alpha=0.7, rule="lowest")
    >>> op.threshold, op.fp  # 0.3 would make FP 3
    (0.5, 1)
    """
    if rule not in ("max_recall", "lowest"):
        raise ValueError(f"unknown rule {rule!r}")
    if alpha is None:
        if callable(budget):
            raise ValueError("give alpha with a predicate budget")
        alpha = budget
    n_pos, n_neg = sweep.n_positive, sweep.n_negative
    ok = _admissible(budget, n_neg)
    best: CurvePoint | None = None
    if ok(0):
        for point in sweep.points:
            if not ok(point.fp):
                break
            if rule == "lowest" or (best is None and point.tp) or (best and point.tp > best.tp):
                best = point
    if best is None:
        best = CurvePoint(math.nan, 0, 0, 0)
    return OperatingPoint(
        alpha=alpha,
        threshold=None if best.n_fired == 0 else best.threshold,
        recall=best.tp / n_pos if n_pos else None,
        precision=best.tp / best.n_fired if best.n_fired else None,
        fhr=best.fp / n_neg if n_neg else None,
        n_fired=best.n_fired,
        tp=best.tp,
        fp=best.fp,
    )
