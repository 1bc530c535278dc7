"""No metric forgotten: every registered metric has a hand-checked test, a
computing function, a place in the report dict and in the Markdown."""

from __future__ import annotations

import importlib
from typing import Any

import pytest

from cacheeval.harness import evaluate
from cacheeval.metrics.registry import METRICS, MetricSpec, register
from cacheeval.report import Report
from cacheeval.schema import Pair, Row, Verdict

#: metric name -> "module::test" that checks its value by hand.
HAND_CHECKED: dict[str, str] = {
    "confusion": "test_metrics::test_confusion_six_rows",
    "accuracy": "test_metrics::test_rates_six_rows",
    "precision": "test_metrics::test_rates_six_rows",
    "recall": "test_metrics::test_rates_six_rows",
    "f1": "test_metrics::test_f1_is_harmonic_mean_and_uses_effective_n",
    "fhr": "test_metrics::test_rates_six_rows",
    "adversarial_fhr": "test_report::test_headline_on_fixture_hand_counted",
    "domain_f1": "test_report::test_per_domain_hand_counted",
    "domain_fhr": "test_report::test_per_domain_hand_counted",
    "label_fhr": "test_report::test_per_label_hand_counted",
    "label_hit_rate": "test_report::test_per_label_hand_counted",
    "difficulty_fhr": "test_report::test_per_difficulty_hand_counted",
    "difficulty_recall": "test_report::test_per_difficulty_hand_counted",
    "positive_rate": "test_metrics_ranking::test_hand_computed_six_rows",
    "pr_auc": "test_metrics_ranking::test_hand_computed_six_rows",
    "roc_auc": "test_metrics_ranking::test_hand_computed_six_rows",
    "p_chr_auc": "test_metrics_ranking::test_perfect_ranker_tends_to_p_one_minus_ln_p",
    "crr": "test_metrics_ranking::test_hand_computed_six_rows",
    "delta_str": "test_metrics_ranking::test_paper_structural_gap_value",
    "delta_op": "test_metrics_ranking::test_hand_computed_six_rows",
    "delta_cal": "test_metrics_ranking::test_hand_computed_six_rows",
    "best_operating_point": "test_metrics_ranking::test_best_operating_points_hand_computed",
    "ece": "test_curves::test_reliability_and_ece_hand_computed",
    "latency_mean_ms": "test_metrics::test_latency_stats",
    "latency_p50_ms": "test_metrics::test_percentile_nearest_rank",
    "latency_p95_ms": "test_metrics::test_percentile_nearest_rank",
    "latency_p99_ms": "test_metrics::test_percentile_nearest_rank",
    "cost_per_1k_usd": "test_metrics::test_cost_per_1k",
    "tier_count": "test_metrics::test_tier_usage_counts_shares_and_order",
    "tier_share": "test_metrics::test_tier_usage_counts_shares_and_order",
    "error_count": "test_harness::test_raising_cache_is_scored_miss_and_reported",
    "timeout_count": "test_harness::test_hanging_cache_times_out_and_run_completes",
    "missing_ids": "test_harness::test_missing_and_extra_ids",
    "extra_ids": "test_harness::test_missing_and_extra_ids",
}


def test_every_metric_is_hand_checked() -> None:
    assert set(HAND_CHECKED) == set(METRICS)
    for name, ref in HAND_CHECKED.items():
        module, test = ref.split("::")
        mod = importlib.import_module(f"tests.{module}")
        assert callable(getattr(mod, test, None)), f"{name}: {ref} does not exist"


@pytest.mark.parametrize("spec", list(METRICS.values()), ids=list(METRICS))
def test_declaration_is_complete(spec: MetricSpec) -> None:
    assert spec.direction in ("higher", "lower", "neither")
    assert spec.title and spec.description and spec.formula and spec.section
    module, _, attr = spec.function.rpartition(".")
    assert callable(getattr(importlib.import_module(module), attr))


def test_duplicate_registration_rejected() -> None:
    with pytest.raises(ValueError, match="already registered"):
        register(METRICS["fhr"])


@pytest.fixture(scope="module")
def full_report(mini_rows: list[Row]) -> Report:
    """A report with every block filled: scores, errors, tiers, costs."""

    class Cache:
        cost_per_call_usd = {"judge": 0.003}

        def __call__(self, pair: Pair) -> Verdict:
            if "Python" in pair.a.query:  # the code rows
                raise RuntimeError("boom")
            tier = "judge" if any(ch.isdigit() for ch in pair.a.query) else "embedding"
            k = int(pair.id[-1])
            return Verdict(is_hit=k % 2 == 1, confidence=0.8, tier_used=tier, score=k / 10)

    return evaluate(Cache(), mini_rows)


def _resolve(data: Any, path: str) -> list[Any]:
    """Values at ``path`` ("a.b", "a[].b"); KeyError when a key is absent."""
    values = [data]
    for part in path.split("."):
        many = part.endswith("[]")
        key = part.removesuffix("[]")
        values = [v[key] for v in values]
        if many:
            assert all(isinstance(v, list) and v for v in values), path
            values = [item for v in values for item in v]
    return values


@pytest.mark.parametrize("spec", list(METRICS.values()), ids=list(METRICS))
def test_metric_appears_in_report(full_report: Report, spec: MetricSpec) -> None:
    values = _resolve(full_report.to_dict(), spec.path)
    assert values
    md = full_report.to_markdown()
    assert f"## {spec.section}" in md
    assert spec.title in md
