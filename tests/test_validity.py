"""Kendall's tau and the validity report (cacheeval.metrics.agreement,
cacheeval.benches.validity) on small inputs computed by hand."""

from __future__ import annotations

import random

import pytest

from cacheeval.benches.validity import render_markdown, subset, to_record, validity_taus
from cacheeval.metrics.agreement import best_recall, kendall_tau, roc_auc, tau_interval


def test_tau_is_one_for_the_same_order_and_minus_one_reversed() -> None:
    rng = random.Random(3)
    for _ in range(50):
        x = rng.sample(range(100), 6)
        assert kendall_tau(x, [2 * v + 1 for v in x]) == pytest.approx(1.0)
        assert kendall_tau(x, [-v for v in x]) == pytest.approx(-1.0)
        y = [rng.random() for _ in x]
        assert kendall_tau(x, y) == pytest.approx(kendall_tau(y, x))  # symmetric
        assert -1.0 <= (kendall_tau(x, y) or 0.0) <= 1.0


def test_tau_leaves_out_caches_without_a_value() -> None:
    # cache 3 has no value on the target: the tau is over caches 1, 2, 4
    assert kendall_tau([1, 2, 3, 4], [1, 2, None, 3]) == 1.0
    assert kendall_tau([1, None], [1, 2]) is None


# Three caches on 8 rows (4 HIT first): A ranks every HIT above every MISS, B
# interleaves them, C ranks them upside down.
Y = [1, 1, 1, 1, 0, 0, 0, 0]
A = [0.9, 0.8, 0.7, 0.6, 0.4, 0.3, 0.2, 0.1]
B = [0.9, 0.3, 0.7, 0.1, 0.8, 0.2, 0.6, 0.4]
C = [0.1, 0.2, 0.3, 0.4, 0.6, 0.7, 0.8, 0.9]


def test_metrics_by_hand() -> None:
    assert (roc_auc(Y, A), roc_auc(Y, C)) == (1.0, 0.0)
    # B: HIT 0.9 beats all 4 MISS, 0.7 beats 3 (0.6, 0.4, 0.2), 0.3 beats 1 (0.2), 0.1 none
    assert roc_auc(Y, B) == pytest.approx((4 + 3 + 1 + 0) / 16)
    assert best_recall(Y, A) == 1.0 and best_recall(Y, C) == 0.0
    assert best_recall(Y, B) == 0.25  # only 0.9 fires before the first MISS (0.8)


def test_a_benchmark_that_orders_the_pool_as_the_target_does_has_tau_one() -> None:
    scored = {"A": (Y, A), "B": (Y, B), "C": (Y, C)}
    tau, interval = tau_interval({"A": 0.9, "B": 0.5, "C": 0.1}, scored, roc_auc, seed=1)
    assert tau == 1.0 and interval is not None and interval[0] > 0
    again = tau_interval({"A": 0.9, "B": 0.5, "C": 0.1}, scored, roc_auc, seed=1)
    assert again == (tau, interval)  # seeded
    reversed_tau, _ = tau_interval({"A": 0.1, "B": 0.5, "C": 0.9}, scored, roc_auc, seed=1)
    assert reversed_tau == -1.0


def test_validity_taus_and_the_report() -> None:
    scores = {
        "A": {"bench": (Y, A), "target": (Y, A)},
        "B": {"bench": (Y, B), "target": (Y, B)},
        "C": {"bench": (Y, C), "target": (Y, C)},
    }
    cells = validity_taus(scores, ["bench"], ["target"], n_resamples=20)
    assert [(c.metric, c.tau, c.n_caches) for c in cells] == [
        ("roc_auc", 1.0, 3),
        ("recall_at_fhr_5", 1.0, 3),
    ]
    record = to_record(
        command="python -m scripts.run_validity",
        caches=["A", "B", "C"],
        sets={"bench": {"pairs": 8, "positives": 4}, "target": {"pairs": 8, "positives": 4}},
        scores=scores,
        taus=cells,
        n_resamples=20,
        seed=0,
    )
    assert record["values"]["B"]["bench"]["roc_auc"] == pytest.approx(0.5)
    md = render_markdown(record)
    assert "| bench | +1.00 [" in md and "## The pool" in md
    assert subset(scores["A"]["bench"], [True] * 4 + [False] * 4) == ([1] * 4, A[:4])


def test_the_committed_report_renders_from_its_json() -> None:
    import json

    from tests.conftest import REPO_ROOT

    path = REPO_ROOT / "reports" / "VALIDITY.json"
    if not path.is_file():
        pytest.skip("no committed VALIDITY.json")
    record = json.loads(path.read_text(encoding="utf-8"))
    assert render_markdown(record) == path.with_suffix(".md").read_text(encoding="utf-8")
    # numbers only: every set is named, no pair text travels
    assert set(record) == {"command", "caches", "sets", "values", "taus", "n_resamples", "seed",
                           "statement"}  # fmt: skip
