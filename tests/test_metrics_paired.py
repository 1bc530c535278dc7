"""The paired bootstrap of a cache's gaps to a reference ranker
(cacheeval.metrics.paired): hand-computed weighted figures, agreement with the
point metrics at unit weights, and what the interval must do."""

from __future__ import annotations

import random

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from cacheeval.benches.external import recall_at_fhr
from cacheeval.metrics.paired import (
    _groups,
    paired_difference_interval,
    paired_gap_interval,
    percentile,
    weighted_auc,
    weighted_recall_at_fp,
)
from cacheeval.metrics.ranking import threshold_free


def test_weighted_recall_counts_multiplicities() -> None:
    #            HIT  HIT  MISS HIT  MISS
    groups, _ = _groups([0.9, 0.8, 0.7, 0.6, 0.1])
    y = [1, 1, 0, 1, 0]
    # the top row drawn 3 times, the first MISS twice: with 1 false hit allowed the
    # ranker stops above 0.7 (its 2 copies exceed it): TP = 3 + 1
    assert weighted_recall_at_fp(groups, y, [3, 1, 2, 1, 1], 1) == 4
    # with 2 it reaches 0.6: TP = 3 + 1 + 1
    assert weighted_recall_at_fp(groups, y, [3, 1, 2, 1, 1], 2) == 5
    # a MISS at the top: nothing fits a budget of 0
    top_miss, _ = _groups([0.9, 0.5])
    assert weighted_recall_at_fp(top_miss, [0, 1], [1, 1], 0) == 0


def test_weighted_auc_by_hand() -> None:
    # scores: HIT 0.9 (w 2), MISS 0.8 (w 1), HIT 0.8 (w 1), MISS None (w 3)
    groups, unscored = _groups([0.9, 0.8, 0.8, None])
    y, w = [1, 0, 1, 0], [2, 1, 1, 3]
    # MISS 0.8: 2 HIT above + 1/2 * 1 tied = 2.5, weight 1; MISS None: 3 HIT above, weight 3
    # (2.5 + 9) / (P 3 * N 4)
    assert weighted_auc(groups, unscored, y, w, 3, 4) == pytest.approx(11.5 / 12)
    assert weighted_auc(groups, unscored, y, w, 0, 4) is None


ITEM = st.tuples(st.booleans(), st.one_of(st.none(), st.integers(0, 6).map(lambda k: k / 6)))


@settings(max_examples=120, deadline=None)
@given(st.lists(ITEM, min_size=2, max_size=30), st.integers(0, 30))
def test_unit_weights_give_the_point_metrics(items: list[tuple[bool, float | None]],
                                             max_fp: int) -> None:  # fmt: skip
    y = [int(t) for t, _ in items]
    scores = [s for _, s in items]
    n_pos, n_neg = sum(y), len(y) - sum(y)
    assume(n_pos and n_neg)
    groups, unscored = _groups(scores)
    ones = [1] * len(y)
    auc = weighted_auc(groups, unscored, y, ones, n_pos, n_neg)
    assert auc == pytest.approx(threshold_free(y, scores).roc_auc)
    budget = min(max_fp, n_neg)
    tp = weighted_recall_at_fp(groups, y, ones, budget)
    assert tp / n_pos == pytest.approx(recall_at_fhr(y, scores, budget / n_neg))


def test_percentile_interpolates() -> None:
    assert percentile([1.0, 2.0, 3.0, 4.0, 5.0], 0.25) == 2.0
    assert percentile([0.0, 10.0], 0.975) == pytest.approx(9.75)
    with pytest.raises(ValueError, match="no values"):
        percentile([], 0.5)


def _sample(n: int, seed: int) -> tuple[list[int], list[float], list[float]]:
    rng = random.Random(seed)
    y = [int(rng.random() < 0.4) for _ in range(n)]
    ref = [rng.random() + 0.6 * t for t in y]
    cache = [rng.random() + 0.6 * t for t in y]
    return y, cache, ref


def test_a_cache_deciding_by_the_reference_never_beats_it() -> None:
    y, _, ref = _sample(200, 1)
    hits = [s >= 1.0 for s in ref]
    gi = paired_gap_interval(y, hits, ref, ref, n_resamples=200, seed=3)
    # it serves a prefix of the reference's ranking, so the reference's best recall at
    # the same false hits is at least its recall in every resample; equal ROC-AUCs
    assert gi.recall_gap is not None and gi.recall_gap[1] == 0.0
    assert gi.auc_gap == (0.0, 0.0)
    assert gi.keeps_share is not None and gi.keeps_share > 0.0


def test_interval_covers_the_point_gap_and_narrows_with_more_rows() -> None:
    widths = []
    for n in (200, 2000):
        y, cache, ref = _sample(n, 7)
        hits = [s >= 1.1 for s in cache]
        gi = paired_gap_interval(y, hits, cache, ref, n_resamples=300, seed=0)
        tp = sum(1 for t, h in zip(y, hits, strict=True) if h and t)
        fp = sum(1 for t, h in zip(y, hits, strict=True) if h and not t)
        point = (tp - weighted_recall_at_fp(_groups(ref)[0], y, [1] * n, fp)) / sum(y)
        assert gi.recall_gap is not None and gi.recall_gap[0] <= point <= gi.recall_gap[1]
        widths.append(gi.recall_gap[1] - gi.recall_gap[0])
    assert widths[1] < widths[0] / 2  # ~1/sqrt(10) of the width


def test_a_clearly_worse_cache_never_keeps_the_reference() -> None:
    y, _, ref = _sample(400, 2)
    noise = random.Random(5)
    cache = [noise.random() for _ in y]  # unrelated to the label
    gi = paired_gap_interval(y, [s >= 0.5 for s in cache], cache, ref, n_resamples=200)
    assert gi.recall_gap is not None and gi.recall_gap[1] < 0
    assert gi.auc_gap is not None and gi.auc_gap[1] < -0.2
    assert gi.keeps_share == 0.0


def test_same_seed_same_interval_and_bad_arguments() -> None:
    y, cache, ref = _sample(100, 4)
    hits = [s >= 1.0 for s in cache]
    a = paired_gap_interval(y, hits, cache, ref, n_resamples=50, seed=9)
    assert a == paired_gap_interval(y, hits, cache, ref, n_resamples=50, seed=9)
    assert a != paired_gap_interval(y, hits, cache, ref, n_resamples=50, seed=10)
    with pytest.raises(ValueError, match="align"):
        paired_gap_interval(y, hits[:-1], cache, ref)
    with pytest.raises(ValueError, match="n_resamples"):
        paired_gap_interval(y, hits, cache, ref, n_resamples=0)


def test_one_class_only_gives_no_interval() -> None:
    gi = paired_gap_interval([1, 1], [True, False], [0.9, 0.1], [0.5, 0.4], n_resamples=20)
    assert gi.auc_gap is None and gi.keeps_share is None
    assert gi.recall_gap is not None  # recall is defined; with no MISS row FHR budget is 0


def test_difference_of_two_caches_against_the_same_reference() -> None:
    y, cache, ref = _sample(300, 11)
    base_hits = [s >= 1.2 for s in cache]
    # the second cache serves everything the first does plus every HIT row between
    # 1.0 and 1.2: the same false hits, more recall in every resample
    more = [h or (t == 1 and s >= 1.0) for h, t, s in zip(base_hits, y, cache, strict=True)]
    recall_d, auc_d = paired_difference_interval(
        y, (more, cache), (base_hits, cache), ref, n_resamples=200, seed=1
    )
    assert recall_d is not None and recall_d[0] > 0.0
    assert auc_d == (0.0, 0.0)  # same scores, same ranking
    # swapping the two flips the interval
    back, _ = paired_difference_interval(
        y, (base_hits, cache), (more, cache), ref, n_resamples=200, seed=1
    )
    assert back == pytest.approx((-recall_d[1], -recall_d[0]))
    with pytest.raises(ValueError, match="align"):
        paired_difference_interval(y, (more[:-1], cache), (base_hits, cache), ref)
    with pytest.raises(ValueError, match="confidence"):
        paired_difference_interval(y, (more, cache), (base_hits, cache), ref, confidence=1.0)
