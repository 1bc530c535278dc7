"""Thresholded HIT/MISS classification metrics.

HIT is the positive class: a true positive (TP) is a HIT row the cache served,
a false positive (FP) a MISS row it served (a *false hit*: the user gets a
wrong cached answer), a false negative (FN) a HIT row it did not serve, a true
negative (TN) a MISS row it did not serve.

Every rate is an :class:`Estimate`: the value, its 95% Wilson interval, and
the numerator and denominator it came from. A zero denominator gives
``value=None`` (and no interval) rather than an exception or a made-up 0.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .intervals import wilson_interval


@dataclass(frozen=True, slots=True)
class Confusion:
    """The four counts of a binary confusion matrix (HIT = positive)."""

    tp: int
    fp: int
    fn: int
    tn: int

    @property
    def n(self) -> int:
        """All rows: tp + fp + fn + tn."""
        return self.tp + self.fp + self.fn + self.tn

    def __add__(self, other: Confusion) -> Confusion:
        return Confusion(
            self.tp + other.tp, self.fp + other.fp, self.fn + other.fn, self.tn + other.tn
        )


@dataclass(frozen=True, slots=True)
class Estimate:
    """A rate ``numerator / denominator`` with its 95% Wilson interval.

    ``value``, ``ci_low`` and ``ci_high`` are None when the denominator is 0.
    """

    value: float | None
    ci_low: float | None
    ci_high: float | None
    numerator: float
    denominator: float


def confusion(y_true: Iterable[int | bool], y_pred: Iterable[bool]) -> Confusion:
    """Count TP, FP, FN, TN from paired truths (1/True = HIT) and decisions.

    The two sequences must have the same length; values must be 0/1 or bools.
    """
    tp = fp = fn = tn = 0
    sentinel = object()
    it_pred = iter(y_pred)
    for t in y_true:
        p = next(it_pred, sentinel)
        if p is sentinel:
            raise ValueError("y_true is longer than y_pred")
        if t not in (0, 1) or p not in (0, 1):
            raise ValueError(f"labels must be 0/1 or bool, got y_true={t!r}, y_pred={p!r}")
        if t:
            if p:
                tp += 1
            else:
                fn += 1
        elif p:
            fp += 1
        else:
            tn += 1
    if next(it_pred, sentinel) is not sentinel:
        raise ValueError("y_pred is longer than y_true")
    return Confusion(tp, fp, fn, tn)


def proportion(numerator: float, denominator: float) -> Estimate:
    """``numerator / denominator`` with its Wilson interval; None when denominator = 0."""
    if denominator == 0:
        return Estimate(None, None, None, numerator, denominator)
    ci = wilson_interval(numerator, denominator)
    assert ci is not None
    return Estimate(numerator / denominator, ci[0], ci[1], numerator, denominator)


def accuracy(c: Confusion) -> Estimate:
    """Accuracy = (TP + TN) / (TP + FP + FN + TN)."""
    return proportion(c.tp + c.tn, c.n)


def precision(c: Confusion) -> Estimate:
    """Precision = TP / (TP + FP): the share of served rows that were safe to serve."""
    return proportion(c.tp, c.tp + c.fp)


def recall(c: Confusion) -> Estimate:
    """Recall = TP / (TP + FN): the share of servable rows that were served."""
    return proportion(c.tp, c.tp + c.fn)


def fhr(c: Confusion) -> Estimate:
    """False-hit rate FHR = FP / (FP + TN): the share of must-miss rows that were served."""
    return proportion(c.fp, c.fp + c.tn)


def hit_rate(c: Confusion) -> Estimate:
    """Hit rate = (TP + FP) / (TP + FP + FN + TN): the share of rows served, right or wrong."""
    return proportion(c.tp + c.fp, c.n)


def f1(c: Confusion) -> Estimate:
    """F1 = 2 TP / (2 TP + FP + FN), the harmonic mean of precision and recall.

    F1 is not a binomial proportion, so its interval is an approximation: the
    Wilson interval of TP successes in n_eff = TP + (FP + FN) / 2 trials (F1
    equals TP / n_eff exactly). ``numerator``/``denominator`` are TP and n_eff.
    """
    return proportion(c.tp, c.tp + (c.fp + c.fn) / 2)
