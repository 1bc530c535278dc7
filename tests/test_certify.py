"""The certificate (cacheeval.metrics.certify): a hand-computed example, the
property that a certified point's bound never exceeds the budget, the rows
needed, and the verified cache's names and numbers kept after the move."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cacheeval.metrics import certify as cert
from cacheeval.metrics.certify import (
    certify,
    certify_threshold,
    fhr_upper_bound,
    max_false_hits,
    miss_rows_needed,
)
from cacheeval.metrics.sweep import threshold_sweep


def test_hand_computed_certificate() -> None:
    # HIT 0.95, 0.9, 0.6; MISS: one at 0.85, 99 at 0.2 (n_negative = 100).
    # Sweep from the top: 0.95 (TP 1, FP 0), 0.9 (TP 2, FP 0), 0.85 (TP 2, FP 1),
    # 0.6 (TP 3, FP 1), 0.2 (TP 3, FP 100).
    # Bounds at 95%: FP 0 -> 1 - 0.05^(1/100) = 0.02951; FP 1 -> 0.04656 (the
    # root of (1-p)^100 + 100 p (1-p)^99 = 0.05); FP 100 -> 1.
    labels = [1, 1, 1, 0] + [0] * 99
    scores = [0.95, 0.9, 0.6, 0.85] + [0.2] * 99
    assert fhr_upper_bound(0, 100) == pytest.approx(1 - 0.05 ** (1 / 100), abs=1e-12)
    p1 = fhr_upper_bound(1, 100)
    assert (1 - p1) ** 100 + 100 * p1 * (1 - p1) ** 99 == pytest.approx(0.05, abs=1e-10)
    assert p1 == pytest.approx(0.04656, abs=1e-5)
    sw = threshold_sweep(labels, scores)
    # Budget 5%: FP 1 is allowed (0.0466 <= 0.05): the most recall is at 0.6.
    c = certify(sw, max_fhr=0.05, rule="max_recall")
    assert (c.point.threshold, c.tp, c.fp, c.certified) == (0.6, 3, 1, True)
    assert c.fhr_upper == pytest.approx(p1)
    # Budget 4%: only FP 0: the most recall is 2 of 3, at 0.9 (not 0.95).
    c = certify(sw, max_fhr=0.04, rule="max_recall")
    assert (c.point.threshold, c.tp, c.fp, c.recall) == (0.9, 2, 0, 2 / 3)
    # Budget 2%: even 0 false hits of 100 bound at 2.95%: nothing certified.
    c = certify(sw, max_fhr=0.02, rule="max_recall")
    assert not c.certified and c.point.threshold is None and c.threshold == cert.NEVER
    # rule "lowest" at 5%: the last admissible point is 0.6 too (0.2 adds 99 FP).
    assert certify(sw, rule="lowest").point.threshold == 0.6


def test_max_recall_prefers_the_higher_threshold_at_equal_recall() -> None:
    # 0.9 HIT, 0.8 MISS, then 60 MISS at 0.1: 0.8 adds a false hit and no recall.
    sw = threshold_sweep([1, 0] + [0] * 200, [0.9, 0.8] + [0.1] * 200)
    assert certify(sw, rule="max_recall").point.threshold == 0.9
    assert certify(sw, rule="lowest").point.threshold == 0.8


def test_miss_rows_needed() -> None:
    assert miss_rows_needed(0) == 59  # 1 - 0.05^(1/59) = 0.0495 <= 0.05 < 0.0503 at 58
    assert 1 - 0.05 ** (1 / 59) <= 0.05 < 1 - 0.05 ** (1 / 58)
    for x in (0, 1, 3, 10):
        n = miss_rows_needed(x, 0.05, 0.95)
        assert n is not None and fhr_upper_bound(x, n) <= 0.05 < fhr_upper_bound(x, n - 1)
        assert max_false_hits(n) >= x
    assert miss_rows_needed(0, 0.0) is None
    assert miss_rows_needed(2, 1.0) == 2
    with pytest.raises(ValueError):
        miss_rows_needed(-1)


def test_no_miss_rows_is_an_error() -> None:
    with pytest.raises(ValueError, match="no must-miss rows"):
        certify(threshold_sweep([1, 1], [0.5, 0.4]))


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 400),
    budget=st.sampled_from([0.01, 0.05, 0.1, 0.2]),
    confidence=st.sampled_from([0.8, 0.9, 0.95, 0.99]),
    rule=st.sampled_from(["lowest", "max_recall"]),
)
def test_a_certified_bound_never_exceeds_the_budget(
    seed: int, n: int, budget: float, confidence: float, rule: str
) -> None:
    rng = random.Random(seed)
    labels = [int(rng.random() < 0.4) for _ in range(n)]
    if all(labels):
        labels[0] = 0
    scores: list[float | None] = [
        None if rng.random() < 0.05 else round(rng.random() * 0.7 + 0.3 * y, 2) for y in labels
    ]
    c = certify(threshold_sweep(labels, scores), max_fhr=budget, confidence=confidence,
                rule=rule)  # type: ignore[arg-type]  # fmt: skip
    n_neg = labels.count(0)
    t = c.point.threshold
    fired = [(y, s) for y, s in zip(labels, scores, strict=True) if t is not None and s is not None
             and s >= t]  # fmt: skip
    fp = sum(1 for y, _ in fired if not y)
    assert fp == c.fp and len(fired) == c.point.n_fired
    assert c.fhr_upper == fhr_upper_bound(fp, n_neg, confidence)
    if c.certified:
        assert c.fhr_upper <= budget
    if t is not None:
        assert c.certified  # a threshold is only ever given with its certificate
    # Nothing certifiable was left behind: one distinct score lower breaks the budget.
    if c.certified and t is not None:
        lower = [s for s in scores if s is not None and s < t]
        if lower and rule == "lowest":
            nxt = max(lower)
            fp_next = sum(1 for y, s in zip(labels, scores, strict=True)
                          if s is not None and s >= nxt and not y)  # fmt: skip
            assert fhr_upper_bound(fp_next, n_neg, confidence) > budget


def test_the_verified_cache_imports_the_same_certificate() -> None:
    pytest.importorskip("lightgbm")
    from adapters.verified_cache import model

    for name in ("Certificate", "certify_threshold", "fhr_upper_bound", "clopper_pearson",
                 "max_false_hits", "beta_ppf", "betainc", "serving_threshold", "NEVER",
                 "MAX_FHR", "CONFIDENCE"):  # fmt: skip
        assert getattr(model, name) is getattr(cert, name), name


def test_the_verified_cache_numbers_are_unchanged() -> None:
    # Recorded with adapters/verified_cache/model.py before the certificate moved.
    rng = random.Random(2026)
    got = []
    for _ in range(6):
        n = rng.randint(80, 400)
        labels = [int(rng.random() < 0.45) for _ in range(n)]
        scores = [
            0.0 if rng.random() < 0.1 else round(min(1.0, rng.random() * 0.8 + 0.25 * y), 3)
            for y in labels
        ]
        c = certify_threshold(scores, labels, max_fhr=0.08)
        got.append((c.threshold, c.tp, c.fp, repr(c.fhr_upper), c.certified))
    assert got == [
        (0.772, 14, 2, "0.0683023413889714", True),
        (0.819, 9, 0, "0.05495548846511156", True),
        (0.904, 9, 0, "0.0617501347110192", True),
        (0.782, 35, 4, "0.07404908220496509", True),
        (0.79, 28, 4, "0.07172873759782306", True),
        (0.768, 51, 7, "0.07508007165279196", True),
    ]
    assert repr(fhr_upper_bound(3, 250)) == "0.030720864145678206"
    assert repr(cert.clopper_pearson(7, 91)) == "(0.03148622318940397, 0.15208752456192087)"
    assert max_false_hits(1000) == 38
    assert math.isclose(cert.NEVER, 1.000001)
