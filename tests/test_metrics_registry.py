"""No metric forgotten: every registered metric has a hand-checked test, a
computing function that build_report calls, a place in the report dict and
(when it has a format) in its Markdown section; every number of the report
dict is a registered metric or one of the declared non-metric numbers."""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable
from typing import Any

import pytest

from cacheeval.metrics.registry import METRICS, MetricSpec, register, values_at
from cacheeval.reporting.report import Report
from cacheeval.run.harness import evaluate
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
    **{
        f"{kind}_{rate}": f"test_report::test_per_{kind}_hand_counted"
        for kind in ("domain", "label", "difficulty", "subscore")
        for rate in ("accuracy", "precision", "recall", "f1", "fhr", "hit_rate")
    },
    "positive_rate": "test_metrics_ranking::test_hand_computed_six_rows",
    "pr_auc": "test_metrics_ranking::test_hand_computed_six_rows",
    "roc_auc": "test_metrics_ranking::test_hand_computed_six_rows",
    "p_chr_auc": "test_metrics_ranking::test_perfect_ranker_tends_to_p_one_minus_ln_p",
    "crr": "test_metrics_ranking::test_hand_computed_six_rows",
    "delta_str": "test_metrics_ranking::test_paper_structural_gap_value",
    "delta_op": "test_metrics_ranking::test_hand_computed_six_rows",
    "delta_cal": "test_metrics_ranking::test_hand_computed_six_rows",
    "best_operating_point": "test_metrics_ranking::test_best_operating_points_hand_computed",
    "subscore_best_operating_point": "test_report::test_subscore_operating_points_hand_counted",
    **{
        f"kind_{rate}": "test_report_kinds::test_per_kind_hand_counted"
        for rate in ("accuracy", "precision", "recall", "f1", "fhr", "hit_rate")
    },
    "ece": "test_curves::test_reliability_and_ece_hand_computed",
    "reliability": "test_curves::test_reliability_and_ece_hand_computed",
    "score_curve": "test_curves::test_score_curve_hand_computed",
    "latency_n": "test_metrics::test_latency_stats",
    "latency_mean_ms": "test_metrics::test_latency_stats",
    "latency_p50_ms": "test_metrics::test_percentile_nearest_rank",
    "latency_p95_ms": "test_metrics::test_percentile_nearest_rank",
    "latency_p99_ms": "test_metrics::test_percentile_nearest_rank",
    "latency_max_ms": "test_metrics::test_latency_stats",
    "cost_per_1k_usd": "test_metrics::test_cost_per_1k",
    "cost_total_usd": "test_metrics::test_cost_per_1k",
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
    # only the id counts are inputs of build_report, counted by its callers
    assert callable(spec.compute) or spec.section == "Missing and extra ids"


def test_duplicate_registration_rejected() -> None:
    with pytest.raises(ValueError, match="already registered"):
        register(METRICS["fhr"])


@pytest.fixture(scope="module")
def full_report(mini_rows: list[Row]) -> Report:
    return _full_report(mini_rows)


def _full_report(rows: list[Row]) -> Report:
    """A report with every block filled: scores, errors, tiers, costs."""

    class Cache:
        cost_per_call_usd = {"judge": 0.003}

        def __call__(self, pair: Pair) -> Verdict:
            if "Python" in pair.a.query:  # the code rows
                raise RuntimeError("boom")
            tier = "judge" if any(ch.isdigit() for ch in pair.a.query) else "embedding"
            k = int(pair.id[-1])
            return Verdict(is_hit=k % 2 == 1, confidence=0.8, tier_used=tier, score=k / 10)

    # two stress rows, so the per-kind slices are filled too
    from tests.test_report_kinds import stress_row

    stress = [stress_row(90, "typo_drop", "noise", "EQUIV", query_a="same", query_b="same"),
              stress_row(91, "city", "identity", "ADVERSARIAL")]  # fmt: skip
    return evaluate(Cache(), [*rows, *stress])


#: Numbers of the report dict that are not metrics: what the metrics are over.
NOT_METRICS: dict[str, str] = {
    "provenance": "the run's inputs (rows, cache arguments)",
    **{
        f"per_{k}[].n": "slice sizes" for k in ("domain", "label", "difficulty", "subscore", "kind")
    },
    **{
        f"per_{k}[].confusion": "slice counts"
        for k in ("domain", "label", "difficulty", "subscore", "kind")
    },
    **{f"threshold_free.{f}": "rows scored" for f in ("n", "n_scored", "n_positive")},
    "threshold_free.n_distinct_scores": "distinct scores",
    "curves.n": "rows of the curves",
    "curves.n_positive": "HIT rows of the curves",
    "cost.cost_per_call_usd": "the cache's declared prices",
    "cost.n_decisions": "decisions priced",
    "errors.kinds[].count": "error_count and timeout_count by kind",
    "failures": "the FP and FN rows themselves, their scores and their counts by what differs",
}


def _number_paths(data: Any, path: str = "") -> set[str]:
    """Paths ("a.b", "a[].b") of every number in ``data``."""
    if isinstance(data, dict):
        return {p for k, v in data.items() for p in _number_paths(v, f"{path}.{k}".lstrip("."))}
    if isinstance(data, list):
        return {p for v in data for p in _number_paths(v, f"{path}[]")}
    is_number = isinstance(data, (int, float)) and not isinstance(data, bool)
    return {path} if is_number else set()


def _declared(path: str, prefixes: list[str]) -> bool:
    return any(path == p or path.startswith(p + ".") or path.startswith(p + "[]") for p in prefixes)


def test_every_number_in_the_report_is_declared(full_report: Report) -> None:
    paths = _number_paths(full_report.to_dict())
    assert "headline.fhr.value" in paths and "tiers[].share" in paths
    metric_paths = [m.path for m in METRICS.values()]
    undeclared = [p for p in paths if not _declared(p, metric_paths + list(NOT_METRICS))]
    assert undeclared == []
    # and the non-metric list names only numbers that exist and no metric
    assert all(any(_declared(p, [n]) for p in paths) for n in NOT_METRICS)
    assert not any(_declared(p, metric_paths) for p in NOT_METRICS)


def test_build_report_calls_every_compute(
    full_report: Report, mini_rows: list[Row], monkeypatch: pytest.MonkeyPatch
) -> None:
    called: set[Callable[..., Any]] = set()
    spies: dict[Callable[..., Any], Callable[..., Any]] = {}

    def spy(fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            called.add(fn)
            return fn(*args, **kwargs)

        return spies.setdefault(fn, wrapped)  # one spy per function: sections share one

    for name, spec in list(METRICS.items()):
        if spec.compute is not None:
            monkeypatch.setitem(METRICS, name, dataclasses.replace(spec, compute=spy(spec.compute)))
    again = _full_report(mini_rows)
    assert set(spies) == called
    timed = {"provenance": None, "latency": None}  # the clock and the run differ
    assert again.to_dict() | timed == full_report.to_dict() | timed


def _section_text(md: str, section: str) -> str:
    return md.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]


@pytest.mark.parametrize("spec", list(METRICS.values()), ids=list(METRICS))
def test_metric_appears_in_report(full_report: Report, spec: MetricSpec) -> None:
    values = values_at(full_report.to_dict(), spec.path)
    assert values and all(v is not None for v in values)
    md = full_report.to_markdown()
    if spec.fmt is not None:  # a cell of its own in its section
        assert spec.title in _section_text(md, spec.section)
