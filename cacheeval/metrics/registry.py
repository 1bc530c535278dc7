"""Every metric CacheEval reports, declared once.

A declaration says what a metric is (name, description, formula, whether
higher or lower is better), where it lives in the report (``path`` into
``Report.to_dict()``, ``[]`` marking a list of rows; ``section`` and ``title``
in the Markdown) and which function computes it. The computation itself
lives in those functions, never here. Tests walk this registry, so a metric
that is declared but never reported or tested fails the suite.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Direction = Literal["higher", "lower", "neither"]


@dataclass(frozen=True, slots=True)
class MetricSpec:
    """The declaration of one reported metric."""

    name: str
    title: str
    description: str
    formula: str
    direction: Direction
    path: str
    section: str
    function: str


METRICS: dict[str, MetricSpec] = {}

_CLS = "cacheeval.metrics.classification"
_RANK = "cacheeval.metrics.ranking.threshold_free"
_LAT = "cacheeval.metrics.latency"
_USE = "cacheeval.metrics.usage"


def register(spec: MetricSpec) -> MetricSpec:
    """Add ``spec`` to :data:`METRICS`; names are unique."""
    if spec.name in METRICS:
        raise ValueError(f"metric {spec.name!r} is already registered")
    if spec.direction not in ("higher", "lower", "neither"):
        raise ValueError(f"metric {spec.name!r}: bad direction {spec.direction!r}")
    METRICS[spec.name] = spec
    return spec


def _m(
    name: str,
    title: str,
    direction: Direction,
    path: str,
    section: str,
    function: str,
    formula: str,
    description: str,
) -> None:
    register(MetricSpec(name, title, description, formula, direction, path, section, function))


# fmt: off
_HEAD = "Headline"
_m("confusion", "Confusion", "neither", "confusion", _HEAD, f"{_CLS}.confusion",
   "TP, FP, FN, TN with HIT as the positive class",
   "The confusion counts every rate below is computed from.")
_m("accuracy", "Accuracy", "higher", "headline.accuracy", _HEAD, f"{_CLS}.accuracy",
   "(TP + TN) / N", "Share of rows decided correctly.")
_m("precision", "Precision", "higher", "headline.precision", _HEAD, f"{_CLS}.precision",
   "TP / (TP + FP)", "Share of served rows that were safe to serve.")
_m("recall", "Recall", "higher", "headline.recall", _HEAD, f"{_CLS}.recall",
   "TP / (TP + FN)", "Share of servable rows that were served.")
_m("f1", "F1", "higher", "headline.f1", _HEAD, f"{_CLS}.f1",
   "2 TP / (2 TP + FP + FN)", "Harmonic mean of precision and recall.")
_m("fhr", "FHR", "lower", "headline.fhr", _HEAD, f"{_CLS}.fhr",
   "FP / (FP + TN)", "False-hit rate: share of must-miss rows that were served.")
_m("adversarial_fhr", "ADVERSARIAL-FHR", "lower", "headline.adversarial_fhr", _HEAD, f"{_CLS}.fhr",
   "FP / (FP + TN) over ADVERSARIAL rows", "False-hit rate on the adversarial class.")

_DOM = "Per domain"
_m("domain_f1", "F1", "higher", "per_domain[].f1", _DOM, f"{_CLS}.f1",
   "F1 over the domain's rows", "F1 of each domain.")
_m("domain_fhr", "FHR", "lower", "per_domain[].fhr", _DOM, f"{_CLS}.fhr",
   "FHR over the domain's rows", "False-hit rate of each domain.")

_LAB = "Per label"
_m("label_fhr", "FHR", "lower", "per_label[].fhr", _LAB, f"{_CLS}.fhr",
   "FP / (FP + TN) over the label's rows",
   "False-hit rate of each label (RELATED_UNSAFE, ADVERSARIAL, UNRELATED; policy rows of"
   " EQUIV/PARA_SAFE).")
_m("label_hit_rate", "Hit rate", "neither", "per_label[].hit_rate", _LAB, f"{_CLS}.hit_rate",
   "(TP + FP) / n over the label's rows",
   "Share of the label's rows served: higher is better on EQUIV/PARA_SAFE, lower on the"
   " MISS classes.")

_DIFF = "Per difficulty"
_m("difficulty_fhr", "FHR", "lower", "per_difficulty[].fhr", _DIFF, f"{_CLS}.fhr",
   "FHR over the difficulty's rows", "False-hit rate of each difficulty.")
_m("difficulty_recall", "Recall", "higher", "per_difficulty[].recall", _DIFF, f"{_CLS}.recall",
   "Recall over the difficulty's rows", "Recall of each difficulty.")

_TF = "Threshold-free"
_m("positive_rate", "Positive rate p", "neither", "threshold_free.positive_rate", _TF, _RANK,
   "P / N", "Share of HIT rows; fixes the structural gap.")
_m("pr_auc", "PR-AUC (AP)", "higher", "threshold_free.pr_auc", _TF, _RANK,
   "sum_k (R_k - R_{k-1}) * Prec_k over distinct scores, ties grouped",
   "Average precision: ranking quality of the hit score.")
_m("roc_auc", "ROC-AUC", "higher", "threshold_free.roc_auc", _TF, _RANK,
   "P(score_HIT > score_MISS) + 1/2 P(tie)", "Mann-Whitney ranking quality.")
_m("p_chr_auc", "P-CHR AUC", "higher", "threshold_free.p_chr_auc", _TF, _RANK,
   "sum_k (CHR_k - CHR_{k-1}) * Prec_k, CHR_k = fired_k / N",
   "Precision integrated over cache-hit ratio: quality usable at a threshold.")
_m("crr", "CRR", "higher", "threshold_free.crr", _TF, _RANK,
   "P-CHR AUC / PR-AUC", "Calibration retention rate: ranking quality kept at deployment.")
_m("delta_str", "Structural gap", "neither", "threshold_free.delta_str", _TF, _RANK,
   "1 - p (1 - ln p)", "The part of the operational gap fixed by the positive rate.")
_m("delta_op", "Operational gap", "lower", "threshold_free.delta_op", _TF, _RANK,
   "PR-AUC - P-CHR AUC", "Offline ranking quality lost at deployment.")
_m("delta_cal", "Calibration gap", "lower", "threshold_free.delta_cal", _TF, _RANK,
   "max(0, Delta_op - Delta_str)", "The recoverable, miscalibration part of the gap.")
_m("best_operating_point", "Best operating point", "higher",
   "threshold_free.operating_points[].recall", _TF, _RANK,
   "max recall over thresholds with FP / (FP + TN) <= alpha",
   "Largest recall reachable under an FHR budget alpha, with its threshold.")

_CAL = "Calibration"
_m("ece", "ECE", "lower", "curves.ece", _CAL, "cacheeval.metrics.curves.expected_calibration_error",
   "sum_b (n_b / N) |mean predicted P(HIT)_b - observed HIT share_b|, 10 equal-width bins",
   "Expected calibration error of the predicted P(HIT) (confidence if served, else 1 - it).")

_LAT_S = "Latency"
_m("latency_mean_ms", "mean", "lower", "latency.mean_ms", _LAT_S, f"{_LAT}.latency_stats",
   "sum(latency) / n", "Mean decision latency (ms).")
_m("latency_p50_ms", "p50", "lower", "latency.p50_ms", _LAT_S, f"{_LAT}.percentile",
   "nearest rank: v[ceil(0.50 n) - 1]", "Median decision latency (ms).")
_m("latency_p95_ms", "p95", "lower", "latency.p95_ms", _LAT_S, f"{_LAT}.percentile",
   "nearest rank: v[ceil(0.95 n) - 1]", "95th-percentile decision latency (ms).")
_m("latency_p99_ms", "p99", "lower", "latency.p99_ms", _LAT_S, f"{_LAT}.percentile",
   "nearest rank: v[ceil(0.99 n) - 1]", "99th-percentile decision latency (ms).")

_COST = "Cost"
_m("cost_per_1k_usd", "Cost per 1k decisions", "lower", "cost.per_1k_decisions_usd", _COST,
   f"{_LAT}.cost_stats", "1000 * sum(cost_per_call_usd[tier_used]) / n_decisions",
   "Price of 1,000 decisions from the cache's declared per-tier prices.")

_TIER = "Verification tiers"
_m("tier_count", "Count", "neither", "tiers[].count", _TIER, f"{_USE}.tier_usage",
   "#rows decided by the tier", "Decisions made by each tier.")
_m("tier_share", "Share", "neither", "tiers[].share", _TIER, f"{_USE}.tier_usage",
   "count / N", "Share of decisions made by each tier (exposes judge dependency).")

_ERR = "Errors and timeouts"
_m("error_count", "Errors", "lower", "errors.n_errors", _ERR, f"{_USE}.error_stats",
   "#rows whose call raised, returned an invalid verdict, or had no prediction",
   "Failed decisions (scored MISS).")
_m("timeout_count", "Timeouts", "lower", "errors.n_timeouts", _ERR, f"{_USE}.error_stats",
   "#rows abandoned after timeout_ms", "Calls that exceeded the timeout (scored MISS).")

_IDS = "Missing and extra ids"
_m("missing_ids", "Missing", "lower", "ids.n_missing", _IDS, "cacheeval.harness.score",
   "#labelled rows without a prediction", "Rows the predictions do not cover (scored MISS).")
_m("extra_ids", "Extra", "lower", "ids.n_extra", _IDS, "cacheeval.harness.score",
   "#predictions for ids not among the rows", "Predictions that match no row (ignored).")
# fmt: on
