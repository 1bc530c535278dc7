"""Does one benchmark's ranking of caches predict another's? Kendall's tau
between two orderings of the same pool of caches, and a bootstrap interval
over the pairs of the set being predicted.

Formulas (``n`` caches, pairs ``i < j``):

* concordant ``C``: ``(x_i - x_j)(y_i - y_j) > 0``; discordant ``D``: ``< 0``;
* ``n0 = n (n - 1) / 2``, ``n1`` the pairs tied in ``x``, ``n2`` tied in ``y``;
* **tau-b** ``= (C - D) / sqrt((n0 - n1)(n0 - n2))``: 1 for the same order, -1
  for the reverse, None when either side is all ties (or fewer than two
  caches have both values).

The per-cache metrics are a set's ROC-AUC (:func:`roc_auc`) and its best
recall at FHR <= 5% (:func:`best_recall`), computed from each cache's scores.
Standard library only.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping, Sequence

from .paired import percentile
from .ranking import threshold_free
from .sweep import best_operating_point, threshold_sweep

#: A cache's results on one set: the rows' truth (1 = HIT) and the cache's scores.
Scored = tuple[Sequence[int], Sequence[float | None]]


def kendall_tau(x: Sequence[float | None], y: Sequence[float | None]) -> float | None:
    """Kendall's tau-b of two orderings (positions where either is None are
    left out).

    Four caches ranked 1 2 3 4 and 1 3 2 4: 6 pairs, 5 concordant, 1 discordant,
    tau = 4/6.

    >>> kendall_tau([1, 2, 3, 4], [1, 3, 2, 4])
    0.6666666666666666
    >>> kendall_tau([1, 2, 3], [3, 2, 1]), kendall_tau([1, 1, 1], [1, 2, 3])
    (-1.0, None)
    >>> kendall_tau([1, 2, 2], [1, 2, 3])  # one tie in x: (2 - 0) / sqrt(2 * 3)
    0.8164965809277261
    """
    pairs = [(a, b) for a, b in zip(x, y, strict=True) if a is not None and b is not None]
    n = len(pairs)
    if n < 2:
        return None
    concordant = discordant = tied_x = tied_y = 0
    for i in range(n):
        for j in range(i + 1, n):
            dx = pairs[i][0] - pairs[j][0]
            dy = pairs[i][1] - pairs[j][1]
            if dx == 0:
                tied_x += 1
            if dy == 0:
                tied_y += 1
            if dx * dy > 0:
                concordant += 1
            elif dx * dy < 0:
                discordant += 1
    n0 = n * (n - 1) // 2
    denominator = math.sqrt((n0 - tied_x) * (n0 - tied_y))
    return None if denominator == 0 else (concordant - discordant) / denominator


def roc_auc(y: Sequence[int], scores: Sequence[float | None]) -> float | None:
    """ROC-AUC of ``scores`` (unscored rows never fire: ranked last), None
    without both classes (:func:`~cacheeval.metrics.ranking.threshold_free`)."""
    if not any(s is not None for s in scores):
        return None
    return threshold_free(y, scores).roc_auc


def best_recall(
    y: Sequence[int], scores: Sequence[float | None], alpha: float = 0.05
) -> float | None:
    """The largest recall with FHR <= ``alpha`` (None without HIT rows).

    >>> best_recall([1, 1, 0, 0], [0.9, 0.7, 0.8, 0.1])
    0.5
    """
    return best_operating_point(threshold_sweep(y, scores), alpha).recall


def tau_interval(
    reference: Mapping[str, float | None],
    scored: Mapping[str, Scored],
    metric: Callable[[Sequence[int], Sequence[float | None]], float | None],
    *,
    n_resamples: int = 200,
    seed: int = 0,
    confidence: float = 0.95,
) -> tuple[float | None, tuple[float, float] | None]:
    """Kendall's tau between ``reference`` (cache -> its value on the
    benchmark) and ``metric`` of each cache on the set ``scored`` (cache ->
    the set's truth and the cache's scores, rows in the same order for every
    cache), and a percentile bootstrap interval: the set's rows resampled with
    replacement (seeded ``random.Random(seed)``), the same draw for every cache.
    """
    names = [n for n in reference if n in scored]
    point = kendall_tau([reference[n] for n in names], [metric(*scored[n]) for n in names])
    if n_resamples <= 0 or not names:
        return point, None
    n_rows = len(scored[names[0]][0])
    rng = random.Random(seed)
    draws: list[float] = []
    for _ in range(n_resamples):
        idx = [rng.randrange(n_rows) for _ in range(n_rows)]
        values = []
        for n in names:
            y, s = scored[n]
            values.append(metric([y[i] for i in idx], [s[i] for i in idx]))
        tau = kendall_tau([reference[n] for n in names], values)
        if tau is not None:
            draws.append(tau)
    if not draws:
        return point, None
    tail = (1 - confidence) / 2
    return point, (percentile(draws, tail), percentile(draws, 1 - tail))
