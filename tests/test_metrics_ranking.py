"""Threshold-free metrics on cases computed by hand."""

from __future__ import annotations

import math

import pytest

from cacheeval.metrics.ranking import (
    fhr_budget,
    perfect_p_chr_auc,
    structural_gap,
    threshold_free,
)

# Six scored rows (score, label):
#   (0.9, 1) (0.8, 1) (0.8, 0) (0.5, 1) (0.3, 0) (0.3, 0)    N=6, P=3, Nn=3, p=1/2
# Distinct thresholds, top down (ties fire together):
#   tau   fired  TP  Prec   R     CHR
#   0.9     1    1   1      1/3   1/6
#   0.8     3    2   2/3    2/3   3/6
#   0.5     4    3   3/4    1     4/6
#   0.3     6    3   1/2    1     1
# AP        = 1/3 * (1 + 2/3 + 3/4 + 0)             = 29/36
# P-CHR AUC = 1/6*1 + 2/6*2/3 + 1/6*3/4 + 2/6*1/2    = 49/72
# ROC-AUC: HIT 0.9 beats 3 MISS; 0.8 ties one (1/2) and beats two; 0.5 beats two
#          -> (3 + 2.5 + 2) / 9 = 5/6
# CRR = (49/72) / (29/36) = 49/58; Delta_op = 29/36 - 49/72 = 1/8
# Delta_str = 1 - 0.5 (1 - ln 0.5) = 0.153426..; Delta_cal = max(0, 1/8 - 0.1534) = 0
Y = [1, 1, 0, 1, 0, 0]
S: list[float | None] = [0.9, 0.8, 0.8, 0.5, 0.3, 0.3]


def test_hand_computed_six_rows() -> None:
    tf = threshold_free(Y, S, alphas=(0.05, 0.34))
    assert tf.n == 6 and tf.n_positive == 3 and tf.n_distinct_scores == 4
    assert tf.positive_rate == 0.5
    assert tf.pr_auc == pytest.approx(29 / 36)
    assert tf.p_chr_auc == pytest.approx(49 / 72)
    assert tf.roc_auc == pytest.approx(5 / 6)
    assert tf.crr == pytest.approx(49 / 58)
    assert tf.delta_op == pytest.approx(1 / 8)
    assert tf.delta_str == pytest.approx(1 - 0.5 * (1 - math.log(0.5)))
    assert tf.delta_cal == 0.0


def test_best_operating_points_hand_computed() -> None:
    tf = threshold_free(Y, S, alphas=(0.05, 0.34))
    strict, loose = tf.operating_points
    # alpha 0.05 of 3 MISS rows admits 0 FP: only tau=0.9 (R 1/3, Prec 1, FHR 0).
    assert strict.alpha == 0.05
    assert (strict.threshold, strict.tp, strict.fp, strict.n_fired) == (0.9, 1, 0, 1)
    assert strict.recall == pytest.approx(1 / 3)
    assert strict.precision == 1.0 and strict.fhr == 0.0
    # alpha 0.34 admits 1 FP: tau=0.5 reaches R=1 with 1 FP (FHR 1/3).
    assert loose.threshold == 0.5
    assert loose.recall == 1.0
    assert loose.precision == pytest.approx(3 / 4)
    assert loose.fhr == pytest.approx(1 / 3)


def test_operating_point_prefers_highest_threshold_at_max_recall() -> None:
    # HIT at 0.9, then two MISS groups: recall never grows after 0.9, so the
    # best point under a loose budget is still 0.9 (no needless false hits).
    tf = threshold_free([1, 0, 0], [0.9, 0.5, 0.4], alphas=(1.0,))
    (op,) = tf.operating_points
    assert op.threshold == 0.9 and op.fp == 0 and op.recall == 1.0


def test_operating_point_never_fire_when_budget_impossible() -> None:
    # The top group mixes a HIT and a MISS: any firing threshold has FHR 1/2.
    tf = threshold_free([1, 0], [0.7, 0.7], alphas=(0.05,))
    (op,) = tf.operating_points
    assert op.threshold is None and op.recall == 0.0 and op.precision is None
    assert op.fhr == 0.0 and op.n_fired == 0


def test_alphas_reported_in_given_order() -> None:
    tf = threshold_free(Y, S, alphas=(0.34, 0.05))
    assert [op.alpha for op in tf.operating_points] == [0.34, 0.05]
    assert [op.threshold for op in tf.operating_points] == [0.5, 0.9]


def test_unscored_rows_never_fire() -> None:
    # The six rows plus one unscored HIT and one unscored MISS: N=8, P=4, Nn=4.
    # AP = (1/4)(29/12) = 29/48; P-CHR = (1/8)(49/12) = 49/96;
    # ROC: 7.5 scored pairs + 3 (scored HIT over unscored MISS) + 0.5 (unscored tie) = 11/16.
    tf = threshold_free([*Y, 1, 0], [*S, None, None])
    assert tf.n == 8 and tf.n_scored == 6
    assert tf.pr_auc == pytest.approx(29 / 48)
    assert tf.p_chr_auc == pytest.approx(49 / 96)
    assert tf.roc_auc == pytest.approx(11 / 16)


def test_all_tied_scores() -> None:
    # A constant score (always_hit): one group; AP = P-CHR = p, ROC = 1/2.
    y = [1, 0, 0, 1, 0]
    tf = threshold_free(y, [1.0] * 5)
    assert tf.pr_auc == pytest.approx(0.4)
    assert tf.p_chr_auc == pytest.approx(0.4)
    assert tf.roc_auc == 0.5
    assert tf.crr == pytest.approx(1.0)


def test_perfect_ranker_tends_to_p_one_minus_ln_p() -> None:
    n_pos, n_neg = 3000, 7000
    y = [1] * n_pos + [0] * n_neg
    scores: list[float | None] = [float(n_pos + n_neg - i) for i in range(n_pos + n_neg)]
    tf = threshold_free(y, scores)
    p = 0.3
    assert tf.pr_auc == 1.0 and tf.roc_auc == 1.0
    assert tf.p_chr_auc == pytest.approx(p * (1 - math.log(p)), abs=1e-3)
    assert perfect_p_chr_auc(p) == pytest.approx(0.66119, abs=1e-5)
    # Delta_op of a perfect ranker is the structural gap (so Delta_cal ~ 0).
    assert tf.delta_op == pytest.approx(structural_gap(p), abs=1e-3)
    assert tf.delta_cal is not None and tf.delta_cal < 1e-3


def test_paper_structural_gap_value() -> None:
    # Seed paper, appendix D.4: Delta_str ~ 0.191 at p = 0.45.
    gap = structural_gap(0.45)
    assert gap is not None and gap == pytest.approx(0.191, abs=5e-4)
    assert structural_gap(0.0) is None


def test_undefined_cases() -> None:
    only_miss = threshold_free([0, 0], [0.2, 0.1])
    assert only_miss.pr_auc is None and only_miss.roc_auc is None and only_miss.crr is None
    assert only_miss.delta_str is None and only_miss.delta_cal is None
    assert only_miss.p_chr_auc == 0.0
    only_hit = threshold_free([1, 1], [0.2, 0.1])
    assert only_hit.pr_auc == 1.0 and only_hit.roc_auc is None
    (op, _) = only_hit.operating_points
    assert op.fhr is None and op.recall == 1.0  # no MISS rows: every threshold is in budget
    empty = threshold_free([], [])
    assert empty.positive_rate is None and empty.p_chr_auc is None


def test_bad_input() -> None:
    with pytest.raises(ValueError, match="labels"):
        threshold_free([1, 0], [0.1])
    with pytest.raises(ValueError, match="0/1"):
        threshold_free([2], [0.1])
    with pytest.raises(ValueError, match="finite"):
        threshold_free([1, 0], [float("nan"), 0.1])
    with pytest.raises(ValueError, match="finite"):
        threshold_free([1, 0], [float("inf"), 0.1])


def test_fhr_budget_matches_float_fhr() -> None:
    assert fhr_budget(0.05, 100) == 5
    assert fhr_budget(0.05, 3) == 0
    assert fhr_budget(0.01, 1325) == 13
    assert fhr_budget(1.0, 7) == 7
    for n in range(1, 400):
        for alpha in (0.01, 0.05, 0.1, 1 / 3):
            b = fhr_budget(alpha, n)
            assert b / n <= alpha and (b + 1 > n or (b + 1) / n > alpha)
    with pytest.raises(ValueError):
        fhr_budget(1.5, 10)
