"""How sure is a comparison with a reference ranker? A paired, stratified bootstrap.

External validity (:mod:`cacheeval.benches.external`) compares a cache's operating point
with a reference ranker's (the embedding cosine) on the same rows:

    recall gap = recall - ref_recall_at_fhr(FHR)    AUC gap = ROC-AUC - ref ROC-AUC

where ``ref_recall_at_fhr(f)`` is the reference's best recall among thresholds
whose FHR is at most ``f``. On a few hundred MISS rows one false hit more or
less moves the cache's FHR, and the reference's recall at that FHR can jump with
it (a steep stretch of its curve), so the point figure alone can flip between
"keeps it" and "does not". This module gives the spread.

Each resample draws, with replacement and separately per class (stratified: P
HIT rows from the HIT rows, N MISS rows from the MISS rows, so both class sizes
stay fixed), a multiplicity ``w_i`` for every row; both rankers are scored on
the same draw (paired). With weighted counts

    FHR_b = sum_{y=0} w hit / N        recall_b = sum_{y=1} w hit / P
    ref_recall_b = max { TP_w(t) / P : FP_w(t) <= FP_w(cache) }   t over the ref's distinct scores
    AUC_b = sum_{MISS i} w_i (W_HIT above i + 1/2 W_HIT tied with i) / (P N)

(unscored rows rank below every scored row, tied among themselves, as in
:func:`cacheeval.metrics.ranking.threshold_free`). The interval is the
percentile interval of the resampled gaps (linear interpolation between order
statistics); ``keeps_share`` is the share of resamples in which the recall gap
is >= ``-recall_tolerance`` and the AUC gap >= ``-auc_tolerance``. With every ``w_i = 1`` the
figures are the point figures.

The reference's figure is its *best* recall at the cache's false-hit count,
its threshold chosen on the same resample, so it leans in the reference's
favour, as the point figure does; the interval inherits that lean rather than
correcting it (a cache that keeps the reference here keeps it against the
reference's best threshold in hindsight).

Standard library only; seeded ``random.Random(seed)``: same inputs, same interval.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

__all__ = ["GapInterval", "paired_difference_interval", "paired_gap_interval", "percentile",
           "weighted_auc", "weighted_recall_at_fp"]  # fmt: skip

#: Resamples per comparison unless the caller says otherwise.
DEFAULT_RESAMPLES = 1000


@dataclass(frozen=True, slots=True)
class GapInterval:
    """The bootstrap spread of a cache's gaps to a reference (module docstring).

    ``recall_gap``/``auc_gap`` are (low, high) percentile bounds at
    ``confidence``; None when undefined (no HIT or no MISS rows)."""

    recall_gap: tuple[float, float] | None
    auc_gap: tuple[float, float] | None
    keeps_share: float | None
    n_resamples: int
    confidence: float
    seed: int


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-quantile of ``values`` by linear interpolation between the sorted
    values at positions ``q (n - 1)``.

    >>> percentile([3.0, 1.0, 2.0, 4.0], 0.5)
    2.5
    >>> percentile([5.0], 0.025)
    5.0
    """
    if not values:
        raise ValueError("percentile of no values")
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"q must be in [0, 1], got {q}")
    s = sorted(values)
    pos = q * (len(s) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def _groups(scores: Sequence[float | None]) -> tuple[list[list[int]], list[int]]:
    """Row indices sharing a score, highest score first, and the unscored rows."""
    scored = sorted((i for i, s in enumerate(scores) if s is not None),
                    key=lambda i: -scores[i])  # type: ignore[operator]  # fmt: skip
    groups: list[list[int]] = []
    last: float | None = None
    for i in scored:
        if groups and scores[i] == last:
            groups[-1].append(i)
        else:
            groups.append([i])
            last = scores[i]
    return groups, [i for i, s in enumerate(scores) if s is None]


def weighted_recall_at_fp(
    groups: Sequence[Sequence[int]], y: Sequence[int], w: Sequence[int], max_fp: int
) -> int:
    """The weighted HIT count the ranker fires on at its lowest threshold whose
    weighted MISS count is at most ``max_fp`` (0 when even the top group
    exceeds it); divide by the weighted HIT total for the recall.

    >>> g, _ = _groups([0.9, 0.8, 0.7, 0.6, 0.1])
    >>> weighted_recall_at_fp(g, [1, 1, 0, 1, 0], [1, 1, 1, 1, 1], 0)
    2
    >>> weighted_recall_at_fp(g, [1, 1, 0, 1, 0], [1, 2, 1, 1, 1], 1)
    4
    """
    best = tp = fp = 0
    for g in groups:
        for i in g:
            if y[i]:
                tp += w[i]
            else:
                fp += w[i]
        if fp > max_fp:
            break
        best = tp
    return best


def weighted_auc(
    groups: Sequence[Sequence[int]],
    unscored: Sequence[int],
    y: Sequence[int],
    w: Sequence[int],
    n_pos: int,
    n_neg: int,
) -> float | None:
    """ROC-AUC with row multiplicities ``w`` (None without both classes):
    ``sum_{MISS i} w_i (W_HIT above + 1/2 W_HIT tied) / (n_pos n_neg)``.

    >>> g, u = _groups([0.9, 0.8, 0.8, 0.5, 0.3, 0.3])
    >>> weighted_auc(g, u, [1, 1, 0, 1, 0, 0], [1] * 6, 3, 3) * 6  # threshold_free's 5/6
    5.0
    """
    if not n_pos or not n_neg:
        return None
    total = above = 0.0
    for g in [*groups, unscored]:
        pos = sum(w[i] for i in g if y[i])
        neg = sum(w[i] for i in g if not y[i])
        total += neg * (above + 0.5 * pos)
        above += pos
    return total / (n_pos * n_neg)


def paired_gap_interval(
    y_true: Sequence[int],
    is_hit: Sequence[bool],
    scores: Sequence[float | None],
    ref_scores: Sequence[float | None],
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    confidence: float = 0.95,
    recall_tolerance: float = 0.0,
    auc_tolerance: float = 0.0,
) -> GapInterval:
    """The paired, stratified bootstrap of the recall and AUC gaps (module
    docstring) of a cache (``is_hit`` its decisions, ``scores`` its ranking)
    against a reference ranking ``ref_scores``, all aligned with ``y_true``."""
    n = len(y_true)
    if not len(is_hit) == len(scores) == len(ref_scores) == n:
        raise ValueError("y_true, is_hit, scores and ref_scores must align")
    _check_resampling(n_resamples, confidence)
    y = [1 if v else 0 for v in y_true]
    cache = _Ranked(y, is_hit, scores)
    ref = _Ranked(y, [False] * n, ref_scores)
    recall_gaps: list[float] = []
    auc_gaps: list[float] = []
    keeps = 0
    for w in _stratified_weights(y, n_resamples, seed):
        r_gap, a_gap = cache.gaps(ref, w, ref.auc(w))
        if r_gap is not None:
            recall_gaps.append(r_gap)
        if a_gap is not None:
            auc_gaps.append(a_gap)
        if r_gap is not None and a_gap is not None:
            keeps += r_gap >= -recall_tolerance - 1e-12 and a_gap >= -auc_tolerance - 1e-12
    return GapInterval(
        recall_gap=_bounds(recall_gaps, confidence),
        auc_gap=_bounds(auc_gaps, confidence),
        keeps_share=keeps / n_resamples if recall_gaps and auc_gaps else None,
        n_resamples=n_resamples,
        confidence=confidence,
        seed=seed,
    )


def paired_difference_interval(
    y_true: Sequence[int],
    first: tuple[Sequence[bool], Sequence[float | None]],
    second: tuple[Sequence[bool], Sequence[float | None]],
    ref_scores: Sequence[float | None],
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    confidence: float = 0.95,
) -> tuple[tuple[float, float] | None, tuple[float, float] | None]:
    """Percentile intervals of ``gap(first) - gap(second)`` for the recall gap and
    the AUC gap: two caches (``(is_hit, scores)`` each) on the same rows against
    the same reference, every resample drawn once for both. Paired, so what the
    two share (the rows, the reference's curve) cancels: an ablation's change can
    be told from the sample's noise.

    >>> y = [1, 1, 0, 0]
    >>> same = ([True, True, False, False], [0.9, 0.8, 0.2, 0.1])
    >>> paired_difference_interval(y, same, same, [0.5, 0.6, 0.4, 0.3], n_resamples=20)
    ((0.0, 0.0), (0.0, 0.0))
    """
    n = len(y_true)
    for hits, scores in (first, second):
        if not len(hits) == len(scores) == n or len(ref_scores) != n:
            raise ValueError("y_true, both caches' decisions and scores and ref_scores must align")
    _check_resampling(n_resamples, confidence)
    y = [1 if v else 0 for v in y_true]
    a, b = _Ranked(y, *first), _Ranked(y, *second)
    ref = _Ranked(y, [False] * n, ref_scores)
    recall_d: list[float] = []
    auc_d: list[float] = []
    for w in _stratified_weights(y, n_resamples, seed):
        ref_auc = ref.auc(w)
        (ra, aa), (rb, ab) = a.gaps(ref, w, ref_auc), b.gaps(ref, w, ref_auc)
        if ra is not None and rb is not None:
            recall_d.append(ra - rb)
        if aa is not None and ab is not None:
            auc_d.append(aa - ab)
    return _bounds(recall_d, confidence), _bounds(auc_d, confidence)


def _check_resampling(n_resamples: int, confidence: float) -> None:
    if n_resamples < 1:
        raise ValueError("n_resamples must be at least 1")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")


def _bounds(values: list[float], confidence: float) -> tuple[float, float] | None:
    """The central ``confidence`` percentile interval of ``values`` (None if empty)."""
    if not values:
        return None
    tail = (1.0 - confidence) / 2.0
    return percentile(values, tail), percentile(values, 1.0 - tail)


def _stratified_weights(y: Sequence[int], n_resamples: int, seed: int) -> Iterator[list[int]]:
    """Row multiplicities of each resample: as many draws from the HIT rows as there
    are HIT rows, and likewise for the MISS rows."""
    rng = random.Random(seed)
    pos = [i for i, v in enumerate(y) if v]
    neg = [i for i, v in enumerate(y) if not v]
    for _ in range(n_resamples):
        w = [0] * len(y)
        for group in (pos, neg):
            for i in rng.choices(group, k=len(group)) if group else ():
                w[i] += 1
        yield w


class _Ranked:
    """One ranker's decisions and score groups on rows labelled ``y``."""

    def __init__(
        self, y: Sequence[int], is_hit: Sequence[bool], scores: Sequence[float | None]
    ) -> None:
        self.y = y
        self.pos_hits = [i for i, v in enumerate(y) if v and is_hit[i]]
        self.neg_hits = [i for i, v in enumerate(y) if not v and is_hit[i]]
        self.n_pos = sum(y)
        self.n_neg = len(y) - self.n_pos
        self.groups, self.unscored = _groups(scores)

    def auc(self, w: Sequence[int]) -> float | None:
        return weighted_auc(self.groups, self.unscored, self.y, w, self.n_pos, self.n_neg)

    def gaps(
        self, ref: _Ranked, w: Sequence[int], ref_auc: float | None
    ) -> tuple[float | None, float | None]:
        """(recall gap, AUC gap) to ``ref`` under multiplicities ``w``, given its
        ROC-AUC under them (computed once when two caches share a resample)."""
        r_gap = a_gap = None
        if self.n_pos:
            tp = sum(w[i] for i in self.pos_hits)
            fp = sum(w[i] for i in self.neg_hits)
            r_gap = (tp - weighted_recall_at_fp(ref.groups, self.y, w, fp)) / self.n_pos
        auc = self.auc(w)
        if auc is not None and ref_auc is not None:
            a_gap = auc - ref_auc
        return r_gap, a_gap
