"""Threshold-free metrics and the threshold sweep behind them, on cases computed
by hand and against brute force on random small inputs."""

from __future__ import annotations

import math
import random
from functools import partial

import pytest

from cacheeval.metrics.classification import Confusion, confusion
from cacheeval.metrics.ranking import (
    fhr_budget,
    perfect_p_chr_auc,
    structural_gap,
    threshold_free,
)
from cacheeval.metrics.sweep import best_operating_point, threshold_sweep

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


# --- the sweep behind them: threshold_sweep and best_operating_point ----------------------


def _random_case(rng: random.Random) -> tuple[list[int], list[float | None]]:
    """Up to 25 rows on a coarse grid (many ties), a tenth unscored."""
    n = rng.randint(0, 25)
    y = [rng.randint(0, 1) for _ in range(n)]
    scores: list[float | None] = [
        None if rng.random() < 0.1 else rng.choice([0.1, 0.25, 0.5, 0.75, 0.9, rng.random()])
        for _ in range(n)
    ]
    return y, scores


def _fp_at_most(limit: float, fp: int, n_negative: int) -> bool:
    return fp <= limit


def _brute_counts(y: list[int], scores: list[float | None], tau: float) -> tuple[int, int]:
    """(fired, TP) when firing on ``score >= tau``, row by row."""
    fired = [t for t, s in zip(y, scores, strict=True) if s is not None and s >= tau]
    return len(fired), sum(fired)


def test_sweep_hand_computed() -> None:
    sw = threshold_sweep(Y, S)
    assert (sw.n, sw.n_positive, sw.n_negative) == (6, 3, 3)
    assert [(p.threshold, p.n_fired, p.tp, p.fp) for p in sw.points] == [
        (0.9, 1, 1, 0),
        (0.8, 3, 2, 1),
        (0.5, 4, 3, 1),
        (0.3, 6, 3, 3),
    ]
    assert sw.confusion(sw.at(0.6)) == Confusion(tp=2, fp=1, fn=1, tn=2)
    assert sw.at(0.95).n_fired == 0 and sw.at(0.0).n_fired == 6
    with pytest.raises(ValueError, match="finite"):
        threshold_sweep([1], [math.nan])


def test_sweep_counts_agree_with_brute_force() -> None:
    rng = random.Random(16)
    for _ in range(300):
        y, scores = _random_case(rng)
        sw = threshold_sweep(y, scores)
        distinct = sorted({s for s in scores if s is not None}, reverse=True)
        assert [p.threshold for p in sw.points] == distinct  # one point per distinct score
        for p in sw.points:
            assert (p.n_fired, p.tp) == _brute_counts(y, scores, p.threshold)
            assert p.fp == p.n_fired - p.tp
        for tau in (-1.0, 0.0, 0.3, 0.5, 0.75, 0.99, 2.0):
            c = sw.confusion(sw.at(tau))
            fired, tp = _brute_counts(y, scores, tau)
            assert c == confusion(y, [s is not None and s >= tau for s in scores]), (y, scores, tau)
            assert (c.tp + c.fp, c.tp) == (fired, tp)


def test_best_operating_point_agrees_with_brute_force() -> None:
    rng = random.Random(61)
    for _ in range(300):
        y, scores = _random_case(rng)
        sw = threshold_sweep(y, scores)
        n_neg = len(y) - sum(y)
        alpha = rng.choice([0.0, 0.05, 0.2, 0.34, 0.5, 1.0])
        limit = fhr_budget(alpha, n_neg) if n_neg else len(y)
        # every threshold in budget (FP only grows as tau falls: a prefix)
        cands = sorted({s for s in scores if s is not None}, reverse=True)
        ok = []
        for tau in cands:
            fired, tp = _brute_counts(y, scores, tau)
            if fired - tp > limit:
                break
            ok.append((tau, fired, tp))
        best = best_operating_point(sw, alpha)
        top_tp = max((tp for _, _, tp in ok), default=0)
        if top_tp == 0:
            assert best.threshold is None and best.n_fired == 0
        else:  # the largest TP, at the highest threshold reaching it
            assert best.threshold == next(t for t, _, tp in ok if tp == top_tp)
            assert best.tp == top_tp
        within = partial(_fp_at_most, limit)
        lowest = best_operating_point(sw, within, alpha=alpha, rule="lowest")
        assert lowest.threshold == (ok[-1][0] if ok else None)
        assert lowest.n_fired == (ok[-1][1] if ok else 0)


def test_best_operating_point_predicate_budget() -> None:
    sw = threshold_sweep(Y, S)  # points (0.9, FP 0) (0.8, FP 1) (0.5, FP 1) (0.3, FP 3)
    asked: list[int] = []

    def within(fp: int, n_negative: int) -> bool:
        asked.append(fp)
        return fp / n_negative <= 0.5

    op = best_operating_point(sw, within, alpha=0.5)
    assert (op.alpha, op.threshold, op.tp, op.fp) == (0.5, 0.5, 3, 1)
    assert asked == [0, 1, 3]  # once per distinct FP, stopping at the first refusal
    never = best_operating_point(sw, lambda fp, nn: False, alpha=0.0, rule="lowest")
    assert never.threshold is None and never.n_fired == 0 and never.fhr == 0.0
    with pytest.raises(ValueError, match="alpha"):
        best_operating_point(sw, within)
    with pytest.raises(ValueError, match="rule"):
        best_operating_point(sw, 0.1, rule="middle")  # type: ignore[arg-type]
