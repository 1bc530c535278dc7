"""The certified operating point: a threshold whose false-hit rate is bounded
with a stated confidence, from labelled rows the threshold was chosen on.

With ``n`` MISS rows of which ``x`` would be served, the exact (Clopper-Pearson)
binomial bound caps the true false-hit rate. The certificate uses the one-sided
upper bound - "FHR <= 5% with 95% confidence" - while :func:`clopper_pearson`
gives the usual two-sided interval for reports:

    upper_1sided(x, n) = BetaInv(confidence; x + 1, n - x)       (1 when x = n)
    two-sided:  [BetaInv(alpha/2; x, n - x + 1), BetaInv(1 - alpha/2; x + 1, n - x)]

With no false hit the one-sided bound is ``1 - (1 - confidence)^(1/n)``, so a
5% budget at 95% confidence needs at least 59 MISS rows (:func:`miss_rows_needed`).

``BetaInv`` is found by bisection on the regularized incomplete beta function
``I_z(a, b)``, itself evaluated with its continued fraction (modified Lentz)
and ``math.lgamma``: the standard library only, no scipy.

The threshold walks the one sweep of :mod:`.sweep` from the highest score down;
FP (and so its bound) only grows as the threshold falls, so the certifiable
thresholds are the sweep's prefix before the first point whose bound breaks
the budget (testing them in that fixed order, stopping at the first failure,
keeps the overall confidence). :func:`certify` picks the point of that prefix
by a rule of :func:`~.sweep.best_operating_point`: ``lowest`` (the most rows
served: the verified cache's rule) or ``max_recall`` (the most HIT rows served,
at the highest threshold reaching them: ``cacheeval tune``'s rule).

The verified cache (``adapters/verified_cache/model.py``) and ``cacheeval tune``
share this module: one certificate.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from .classification import Confusion, Estimate, fhr, recall
from .sweep import OperatingPoint, Sweep, best_operating_point, threshold_sweep

#: Default FHR budget and confidence of the certified operating point.
MAX_FHR = 0.05
CONFIDENCE = 0.95

# --- Clopper-Pearson ------------------------------------------------------------------


def _betacf(a: float, b: float, z: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = 1.0
    d = 1.0 - qab * z / qap
    d = tiny if abs(d) < tiny else d
    d = 1.0 / d
    h = d
    for m in range(1, 10_000):
        m2 = 2 * m
        # even step
        aa = m * (b - m) * z / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = tiny if abs(d) < tiny else d
        c = 1.0 + aa / c
        c = tiny if abs(c) < tiny else c
        d = 1.0 / d
        h *= d * c
        # odd step
        aa = -(a + m) * (qab + m) * z / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = tiny if abs(d) < tiny else d
        c = 1.0 + aa / c
        c = tiny if abs(c) < tiny else c
        d = 1.0 / d
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            return h
    raise ArithmeticError(f"incomplete beta continued fraction did not converge (a={a}, b={b})")


def betainc(a: float, b: float, z: float) -> float:
    """The regularized incomplete beta function ``I_z(a, b)`` for a, b > 0, z in [0, 1].

    ``I_z(a,b) = z^a (1-z)^b / (a B(a,b)) * CF(a,b,z)``, using the symmetry
    ``I_z(a,b) = 1 - I_{1-z}(b,a)`` where the continued fraction converges slowly.
    """
    if a <= 0 or b <= 0:
        raise ValueError(f"betainc needs a, b > 0 (got a={a}, b={b})")
    if not 0.0 <= z <= 1.0:
        raise ValueError(f"betainc needs z in [0, 1] (got {z})")
    if z == 0.0 or z == 1.0:
        return z
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(z) + b * math.log1p(-z)
    )
    front = math.exp(log_front)
    if z < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, z) / a
    return 1.0 - front * _betacf(b, a, 1.0 - z) / b


def beta_ppf(q: float, a: float, b: float, *, tol: float = 1e-12) -> float:
    """The ``q``-quantile of Beta(a, b): the z with ``I_z(a, b) = q``, by bisection
    (I_z is increasing in z, so bisection always converges)."""
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"quantile must be in [0, 1], got {q}")
    if q == 0.0:
        return 0.0
    if q == 1.0:
        return 1.0
    lo, hi = 0.0, 1.0
    while hi - lo > tol:
        mid = (lo + hi) / 2.0
        if betainc(a, b, mid) < q:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2.0


def clopper_pearson(x: int, n: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The two-sided Clopper-Pearson interval of a binomial proportion ``x / n``."""
    if n <= 0 or not 0 <= x <= n:
        raise ValueError(f"need 0 <= x <= n and n > 0 (got x={x}, n={n})")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    alpha = 1.0 - confidence
    lower = 0.0 if x == 0 else beta_ppf(alpha / 2.0, x, n - x + 1)
    upper = 1.0 if x == n else beta_ppf(1.0 - alpha / 2.0, x + 1, n - x)
    return lower, upper


def fhr_upper_bound(fp: int, n_negative: int, confidence: float = CONFIDENCE) -> float:
    """The one-sided Clopper-Pearson upper confidence bound of FHR = fp / n_negative:
    the true rate is below it with probability ``confidence``."""
    if n_negative <= 0 or not 0 <= fp <= n_negative:
        raise ValueError(f"need 0 <= fp <= n and n > 0 (got fp={fp}, n={n_negative})")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if fp == n_negative:
        return 1.0
    return beta_ppf(confidence, fp + 1, n_negative - fp)


def max_false_hits(
    n_negative: int, max_fhr: float = MAX_FHR, confidence: float = CONFIDENCE
) -> int:
    """The most false hits ``x`` with ``fhr_upper_bound(x, n) <= max_fhr`` (-1 when even
    x = 0 exceeds it: too few must-miss rows to certify anything)."""
    best = -1
    for x in range(n_negative + 1):
        if fhr_upper_bound(x, n_negative, confidence) <= max_fhr:
            best = x
        else:
            break
    return best


# --- the operating point ----------------------------------------------------------------


#: A threshold above every possible score: serve nothing.
NEVER = 1.000001


@dataclass(frozen=True, slots=True)
class Certificate:
    """A certified operating point: ``point`` (serve when ``score >= threshold``,
    its counts over the calibration rows, ``point.alpha`` the FHR budget) and the
    one-sided Clopper-Pearson upper bound ``fhr_upper`` of its FHR at
    ``confidence``; ``certified`` says whether the bound is within the budget."""

    point: OperatingPoint
    confidence: float
    n_positive: int
    n_negative: int
    fhr_upper: float
    certified: bool

    @property
    def threshold(self) -> float:
        """The threshold; :data:`NEVER` when no threshold can be certified."""
        return serving_threshold(self.point)

    @property
    def max_fhr(self) -> float:
        return self.point.alpha

    @property
    def tp(self) -> int:
        return self.point.tp

    @property
    def fp(self) -> int:
        return self.point.fp

    @property
    def fhr(self) -> float | None:
        return self.point.fhr

    @property
    def recall(self) -> float | None:
        return self.point.recall

    def to_dict(self) -> dict[str, Any]:
        """What ``meta.json`` records as ``operating_point``."""
        return {
            "threshold": self.threshold,
            "max_fhr": self.max_fhr,
            "confidence": self.confidence,
            "bound": "one-sided Clopper-Pearson upper confidence bound",
            "n_positive": self.n_positive,
            "n_negative": self.n_negative,
            "tp": self.tp,
            "fp": self.fp,
            "fhr": self.fhr,
            "fhr_upper": self.fhr_upper,
            "recall": self.recall,
            "certified": self.certified,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Certificate:
        """From :meth:`to_dict` output (``meta.json``): the point's precision is
        ``tp / (tp + fp)``, its threshold None for :data:`NEVER`."""
        tp, fp, threshold = int(data["tp"]), int(data["fp"]), float(data["threshold"])
        point = OperatingPoint(
            alpha=float(data["max_fhr"]),
            threshold=None if threshold >= NEVER else threshold,
            recall=data["recall"],
            precision=tp / (tp + fp) if tp + fp else None,
            fhr=data["fhr"],
            n_fired=tp + fp,
            tp=tp,
            fp=fp,
        )
        return cls(
            point=point,
            confidence=float(data["confidence"]),
            n_positive=int(data["n_positive"]),
            n_negative=int(data["n_negative"]),
            fhr_upper=float(data["fhr_upper"]),
            certified=bool(data["certified"]),
        )


def serving_threshold(point: OperatingPoint) -> float:
    """The threshold a cache applies at ``point``: :data:`NEVER` when the point
    has none (serve nothing)."""
    return NEVER if point.threshold is None else float(point.threshold)


def certify(
    sweep: Sweep,
    *,
    max_fhr: float = MAX_FHR,
    confidence: float = CONFIDENCE,
    rule: Literal["lowest", "max_recall"] = "lowest",
) -> Certificate:
    """The certified point of ``sweep``: among its thresholds whose one-sided
    Clopper-Pearson bound ``fhr_upper_bound(FP, Nn)`` is at most ``max_fhr``
    (the prefix of the sweep, see the module docstring), the one ``rule`` picks.

    ``certified`` is False when even the top point breaks the budget (too few
    MISS rows, or false hits at the highest score): the point then serves
    nothing. ValueError without MISS rows (nothing to certify).

    Three HIT rows at 0.9, 0.8, 0.7 and 60 MISS rows at 0.5: no false hit down
    to 0.7, whose bound is 1 - 0.05^(1/60) = 0.0487 <= 0.05.

    >>> sw = threshold_sweep([1, 1, 1] + [0] * 60, [0.9, 0.8, 0.7] + [0.5] * 60)
    >>> c = certify(sw, rule="max_recall")
    >>> c.point.threshold, c.tp, c.fp, round(c.fhr_upper, 4), c.certified
    (0.7, 3, 0, 0.0487, True)
    """
    n_neg = sweep.n_negative
    if n_neg == 0:
        raise ValueError("calibration data has no must-miss rows: nothing to certify")

    def within_budget(fp: int, n_negative: int) -> bool:
        return fhr_upper_bound(fp, n_negative, confidence) <= max_fhr

    point = best_operating_point(sweep, within_budget, alpha=max_fhr, rule=rule)
    upper = fhr_upper_bound(point.fp, n_neg, confidence)
    return Certificate(
        point=point,
        confidence=confidence,
        n_positive=sweep.n_positive,
        n_negative=n_neg,
        fhr_upper=upper,
        certified=upper <= max_fhr,
    )


def certify_threshold(
    scores: Sequence[float],
    labels: Sequence[int],
    *,
    max_fhr: float = MAX_FHR,
    confidence: float = CONFIDENCE,
) -> Certificate:
    """The lowest threshold whose FHR upper bound on (scores, labels) is <= max_fhr
    (the verified cache's certificate).

    ``labels[i]`` is 1 for a HIT row. Rows the cache settles before the verifier
    (policy, recall gate) take score 0 and are never served (the threshold is
    always > 0). On the :func:`~cacheeval.metrics.sweep.threshold_sweep` of the
    positive scores, lowering the threshold only adds served rows, so FP and its
    bound only grow: the certified point is the last one of the sweep with
    ``fhr_upper_bound(FP, Nn) <= max_fhr`` (``rule="lowest"`` of :func:`certify`).
    """
    if len(scores) != len(labels):
        raise ValueError(f"{len(scores)} scores but {len(labels)} labels")
    sweep = threshold_sweep(labels, [s if s > 0.0 else None for s in scores])
    return certify(sweep, max_fhr=max_fhr, confidence=confidence, rule="lowest")


def miss_rows_needed(
    false_hits: int = 0, max_fhr: float = MAX_FHR, confidence: float = CONFIDENCE
) -> int | None:
    """The fewest MISS rows ``n`` with ``fhr_upper_bound(false_hits, n) <= max_fhr``:
    how many must-miss rows a certificate needs when ``false_hits`` of them are
    served (None when no n is enough: ``max_fhr`` is 0). The bound falls as n
    grows, so the answer is found by doubling, then bisection.

    With no false hit the bound is ``1 - (1 - confidence)^(1/n)``: n >= 59 for a
    5% budget at 95% confidence (1 - 0.05^(1/58) = 0.0503, 1 - 0.05^(1/59) = 0.0495).

    >>> miss_rows_needed(0), miss_rows_needed(0, 0.01)
    (59, 299)
    """
    if false_hits < 0:
        raise ValueError(f"false_hits must be >= 0, got {false_hits}")
    if not 0.0 <= max_fhr <= 1.0:
        raise ValueError(f"max_fhr must lie in [0, 1], got {max_fhr}")
    if max_fhr <= 0.0:
        return None
    if max_fhr >= 1.0:
        return max(1, false_hits)  # every bound is <= 1

    def ok(n: int) -> bool:
        return fhr_upper_bound(false_hits, n, confidence) <= max_fhr

    lo, hi = false_hits, max(1, 2 * false_hits)  # ok(lo) is False: x = n bounds at 1
    while not ok(hi):
        lo, hi = hi, 2 * hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi


# --- a certified threshold for any cache with a score -----------------------------------


@dataclass(frozen=True, slots=True)
class TunedPoint:
    """``cacheeval tune``'s answer on one set of rows (``key``: ``all`` or a domain).

    ``threshold`` is the certified threshold (serve when ``score >= threshold``:
    the most recall whose one-sided Clopper-Pearson bound on FHR is within the
    budget), or None when nothing is certified, and then ``reason`` says why.
    Any threshold in ``(next_lower, threshold]`` makes the same decisions on
    these rows (``next_lower`` is the highest score below it; None when none).
    ``recall`` and ``fhr`` (Wilson intervals) are at the certified point (at
    "serve nothing" when there is none). ``top_score`` is the best-scored HIT
    row's score and ``top_false_hits`` the MISS rows scored at least as high,
    served by every threshold that serves a HIT row; ``breaking`` indexes them
    when they are what stops the certificate. ``needed`` is the MISS rows a
    certificate needs with no false hit, ``needed_at_top`` with those false hits
    (None: no number is enough).
    """

    key: str
    n: int
    n_positive: int
    n_negative: int
    max_fhr: float
    confidence: float
    threshold: float | None
    next_lower: float | None
    recall: Estimate
    fhr: Estimate
    fhr_upper: float | None
    reason: str | None
    top_score: float | None
    top_false_hits: int
    needed: int | None
    needed_at_top: int | None
    breaking: tuple[int, ...]

    @property
    def certified(self) -> bool:
        return self.threshold is not None


def tune_threshold(
    y_true: Sequence[int],
    scores: Sequence[float | None],
    *,
    max_fhr: float = MAX_FHR,
    confidence: float = CONFIDENCE,
    key: str = "all",
) -> TunedPoint:
    """The certified threshold of one cache's ``scores`` on labelled rows
    (``y_true[i]`` 1 for HIT; a None score never fires): :func:`certify` with
    ``rule="max_recall"`` on the one :func:`~.sweep.threshold_sweep`, and, when
    nothing can be certified, why and how many MISS rows it would take.

    Every threshold that serves a HIT row serves the MISS rows scored at least
    as high as the best-scored HIT row (``top_score``): when their bound
    breaks the budget, nothing is certified and they are the ``breaking`` rows.

    >>> p = tune_threshold([1, 1, 1] + [0] * 60, [0.9, 0.8, 0.7] + [0.5] * 60)
    >>> p.threshold, p.next_lower, p.recall.value, p.fhr.value, round(p.fhr_upper, 4)
    (0.7, 0.5, 1.0, 0.0, 0.0487)

    Two MISS rows tie with the best HIT row at 1.0: every threshold serves them.

    >>> p = tune_threshold([1, 0, 0, 1] + [0] * 60, [1.0, 1.0, 1.0, 0.9] + [0.1] * 60)
    >>> p.threshold, p.top_false_hits, p.breaking, p.needed, p.needed_at_top
    (None, 2, (1, 2), 59, 124)
    """
    if not 0.0 < max_fhr < 1.0:
        raise ValueError(f"max_fhr must lie in (0, 1), got {max_fhr}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
    sweep = threshold_sweep(y_true, scores)
    n_pos, n_neg = sweep.n_positive, sweep.n_negative
    # the first point of the sweep that serves a HIT row: the best HIT row's score
    top = next((p for p in sweep.points if p.tp), None)
    top_fp = top.fp if top is not None else 0
    common = {
        "key": key, "n": sweep.n, "n_positive": n_pos, "n_negative": n_neg,
        "max_fhr": max_fhr, "confidence": confidence,
        "top_score": None if top is None else top.threshold, "top_false_hits": top_fp,
        "needed": miss_rows_needed(0, max_fhr, confidence),
        "needed_at_top": miss_rows_needed(top_fp, max_fhr, confidence),
    }  # fmt: skip
    nothing = Confusion(0, 0, n_pos, n_neg)

    def refused(reason: str, upper: float | None, breaking: tuple[int, ...] = ()) -> TunedPoint:
        return TunedPoint(threshold=None, next_lower=None, recall=recall(nothing),
                          fhr=fhr(nothing), fhr_upper=upper, reason=reason, breaking=breaking,
                          **common)  # type: ignore[arg-type]  # fmt: skip

    if not sweep.points:
        return refused("no row carries a score: there is no threshold to set", None)
    if n_pos == 0:
        return refused("no HIT rows: there is nothing a threshold should serve", None)
    if top is None:
        return refused("no HIT row carries a score: no threshold serves a HIT row", None)
    if n_neg == 0:
        return refused("no MISS rows: nothing bounds the false-hit rate", None)
    upper = fhr_upper_bound(top_fp, n_neg, confidence)
    if upper > max_fhr:
        bound = f"{top_fp} false hit(s) of {n_neg} MISS rows bound the FHR at {upper:.4f}"
        if top_fp == 0:
            return refused(f"too few MISS rows: even {bound} > {max_fhr:g}", upper)
        at = top.threshold
        breaking = tuple(i for i, (y, s) in enumerate(zip(y_true, scores, strict=True))
                         if not y and s is not None and s >= at)  # fmt: skip
        return refused(
            f"{top_fp} MISS row(s) score at least {at:.6g}, the best-scored HIT row's score, "
            f"so every threshold that serves a HIT row serves them: {bound} > {max_fhr:g}",
            upper,
            breaking,
        )
    c = certify(sweep, max_fhr=max_fhr, confidence=confidence, rule="max_recall")
    assert c.point.threshold is not None and c.tp  # the point at the best HIT row qualifies
    below = [p.threshold for p in sweep.points if p.threshold < c.point.threshold]
    conf = Confusion(c.tp, c.fp, n_pos - c.tp, n_neg - c.fp)
    return TunedPoint(threshold=c.point.threshold, next_lower=below[0] if below else None,
                      recall=recall(conf), fhr=fhr(conf), fhr_upper=c.fhr_upper, reason=None,
                      breaking=(), **common)  # type: ignore[arg-type]  # fmt: skip
