"""Hand-computed values of the thresholded metrics, intervals, latency, cost,
tiers and errors."""

from __future__ import annotations

import math

import pytest

from cacheeval.metrics.classification import (
    Confusion,
    accuracy,
    confusion,
    f1,
    fhr,
    hit_rate,
    precision,
    proportion,
    recall,
)
from cacheeval.metrics.intervals import Z_95, wilson_interval
from cacheeval.metrics.latency import cost_stats, latency_stats, percentile
from cacheeval.metrics.slices import slices
from cacheeval.metrics.usage import error_kind, error_stats, tier_usage

# Six rows, computed by hand:
#   y_true  1 1 1 0 0 0
#   y_pred  H H M H M M
#   -> TP=2 (rows 1,2), FN=1 (row 3), FP=1 (row 4), TN=2 (rows 5,6)
#   accuracy 4/6, precision 2/3, recall 2/3, F1 = 4/(4+1+1) = 2/3,
#   FHR 1/3, hit rate (served share) 3/6.
Y6 = [1, 1, 1, 0, 0, 0]
P6 = [True, True, False, True, False, False]


def test_confusion_six_rows() -> None:
    c = confusion(Y6, P6)
    assert c == Confusion(tp=2, fp=1, fn=1, tn=2)
    assert c.n == 6


def test_rates_six_rows() -> None:
    c = confusion(Y6, P6)
    assert accuracy(c).value == pytest.approx(4 / 6)
    assert (accuracy(c).numerator, accuracy(c).denominator) == (4, 6)
    assert precision(c).value == pytest.approx(2 / 3)
    assert recall(c).value == pytest.approx(2 / 3)
    assert f1(c).value == pytest.approx(2 / 3)
    assert fhr(c).value == pytest.approx(1 / 3)
    assert (fhr(c).numerator, fhr(c).denominator) == (1, 3)
    assert hit_rate(c).value == pytest.approx(0.5)


def test_f1_is_harmonic_mean_and_uses_effective_n() -> None:
    c = Confusion(tp=3, fp=1, fn=4, tn=10)
    p, r = 3 / 4, 3 / 7
    e = f1(c)
    assert e.value == pytest.approx(2 * p * r / (p + r))
    assert e.denominator == pytest.approx(3 + (1 + 4) / 2)  # n_eff = TP + (FP+FN)/2
    assert e.ci_low is not None and e.ci_high is not None and e.value is not None
    assert e.ci_low < e.value < e.ci_high


def test_confusion_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="longer"):
        confusion([1, 0], [True])
    with pytest.raises(ValueError, match="longer"):
        confusion([1], [True, False])
    with pytest.raises(ValueError, match="0/1"):
        confusion([2], [True])


def test_zero_denominators_give_none_not_crash() -> None:
    # No MISS rows: FHR undefined. Nothing served: precision undefined.
    c = Confusion(tp=0, fp=0, fn=3, tn=0)
    e = fhr(c)
    assert e.value is None and e.ci_low is None and e.ci_high is None
    assert (e.numerator, e.denominator) == (0, 0)
    assert precision(c).value is None
    assert recall(c).value == 0.0
    assert f1(c).value == 0.0  # 0 / (0 + 3/2): defined, and zero
    empty = Confusion(0, 0, 0, 0)
    for fn_ in (accuracy, precision, recall, f1, fhr, hit_rate):
        assert fn_(empty).value is None


def test_wilson_known_values() -> None:
    # Textbook values: 0/10 -> [0, 0.2775]; 5/10 -> [0.2366, 0.7634]; 10/10 -> [0.7225, 1].
    lo, hi = wilson_interval(0, 10)  # type: ignore[misc]
    assert lo == 0.0 and hi == pytest.approx(0.2775, abs=5e-5)
    lo, hi = wilson_interval(5, 10)  # type: ignore[misc]
    assert (lo, hi) == (pytest.approx(0.2366, abs=5e-5), pytest.approx(0.7634, abs=5e-5))
    lo, hi = wilson_interval(10, 10)  # type: ignore[misc]
    assert lo == pytest.approx(0.7225, abs=5e-5) and hi == 1.0
    # The README's power claim: half-width ~2.2pp at p=0.5 for n=2000.
    lo, hi = wilson_interval(1000, 2000)  # type: ignore[misc]
    assert (hi - lo) / 2 == pytest.approx(0.0219, abs=2e-4)


def test_wilson_formula_by_hand() -> None:
    k, n, z = 3, 8, Z_95
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    assert wilson_interval(k, n) == (pytest.approx(centre - half), pytest.approx(centre + half))


def test_wilson_edge_cases() -> None:
    assert wilson_interval(0, 0) is None
    with pytest.raises(ValueError):
        wilson_interval(3, 2)
    with pytest.raises(ValueError):
        wilson_interval(-1, 2)
    assert proportion(0, 0).value is None


def test_percentile_nearest_rank() -> None:
    values = [float(v) for v in range(1, 11)]  # 1..10
    assert percentile(values, 50) == 5.0  # rank ceil(5.0) = 5
    assert percentile(values, 95) == 10.0  # rank ceil(9.5) = 10
    assert percentile(values, 99) == 10.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.0  # rank 2, no interpolation
    assert percentile([7.0], 99) == 7.0
    assert percentile([], 50) is None
    # 20 values: p95 is rank 19 exactly (integer arithmetic, no float drift).
    assert percentile([float(v) for v in range(1, 21)], 95) == 19.0
    with pytest.raises(ValueError):
        percentile(values, 0)


def test_latency_stats() -> None:
    s = latency_stats([4.0, 1.0, 3.0, 2.0])
    assert s.n == 4
    assert s.mean_ms == 2.5
    assert (s.p50_ms, s.p95_ms, s.p99_ms, s.max_ms) == (2.0, 4.0, 4.0, 4.0)
    assert s.percentile_method == "nearest-rank"
    empty = latency_stats([])
    assert empty.n == 0 and empty.mean_ms is None and empty.p99_ms is None


def test_cost_per_1k() -> None:
    # 3 decisions: two judge calls at $0.002 and one free exact hit -> $0.004 total,
    # $0.004 / 3 * 1000 = $1.3333 per 1k decisions.
    s = cost_stats(["judge", "exact", "judge"], {"judge": 0.002, "embedding": 0.0001})
    assert s.total_usd == pytest.approx(0.004)
    assert s.per_1k_decisions_usd == pytest.approx(4 / 3)
    assert s.n_decisions == 3
    assert list(s.cost_per_call_usd) == ["embedding", "judge"]  # sorted: deterministic output
    none = cost_stats([], {})
    assert none.per_1k_decisions_usd is None and none.total_usd == 0.0


def test_tier_usage_counts_shares_and_order() -> None:
    usage = tier_usage(["judge", "exact", "zeta", "exact", "alpha", "error"])
    assert [(t.tier, t.count) for t in usage] == [
        ("exact", 2),
        ("judge", 1),
        ("error", 1),
        ("alpha", 1),
        ("zeta", 1),
    ]
    assert usage[0].share == pytest.approx(2 / 6)
    assert sum(t.share for t in usage) == pytest.approx(1.0)


def test_error_stats() -> None:
    ids = ["a", "b", "c", "d", "e"]
    errors = [None, "ValueError: bad", "timeout after 50 ms", "ValueError: worse", None]
    s = error_stats(ids, errors)
    assert (s.n_errors, s.n_timeouts) == (2, 1)
    assert [(k.kind, k.count, k.first_id, k.first_message) for k in s.kinds] == [
        ("ValueError", 2, "b", "ValueError: bad"),
        ("timeout", 1, "c", "timeout after 50 ms"),
    ]
    assert [x.id for x in s.examples] == ["b", "c", "d"]
    assert error_kind("no colon here") == "error"


def test_slices_by_key_in_given_order() -> None:
    keys = ["math", "code", "math", None, "zzz"]
    y = [1, 0, 0, 1, 1]
    p = [True, True, True, False, False]
    out = slices(keys, y, p, ["code", "math"])
    assert [s.key for s in out] == ["code", "math", "zzz"]  # None rows left out
    math_slice = out[1]
    assert math_slice.confusion == Confusion(tp=1, fp=1, fn=0, tn=0)
    assert math_slice.fhr.value == 1.0
    assert out[0].recall.value is None  # no HIT rows in "code"
