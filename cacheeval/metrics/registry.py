"""Every metric CacheEval reports, declared once, with the function computing it.

A :class:`MetricSpec` says what a metric is (name, description, formula,
whether higher or lower is better), which function computes it
(``compute``), where the value lives in the report (``path`` into
``Report.to_dict()`` and the :class:`~cacheeval.reporting.report.Report` object,
``[]`` marking a list of rows), how the Markdown shows it (``section``,
``title``, ``fmt``) and whether the leaderboard's public feedback may show it
(``public``). :func:`cacheeval.reporting.report.build_report_from_columns` computes the
report by calling these ``compute`` functions; the renderers
(:mod:`cacheeval.reporting.report_markdown`) and the leaderboard feedback
(:func:`cacheeval.server.grading.label_free`) read the same declarations.

What ``compute`` is called with depends on the section:

* ``confusion``: ``compute(y_true, y_pred)``;
* Headline and the three slice sections: ``compute(confusion)`` of all rows,
  of the rows of ``over`` (a label), or of one slice's rows; the slice
  sections declare every rate of :class:`~cacheeval.metrics.slices.Slice`;
* the other sections share one ``compute`` that returns their whole block
  (threshold-free metrics come from one sort of the scores, latency
  percentiles from one sort of the latencies): :func:`section_compute`.

The two id counts have no ``compute``: the caller that aligns predictions to
rows counts them and passes them in (``harness.score``, ``commands.score``).
Tests walk this registry, so a metric that is declared but never computed,
reported or hand-checked fails the suite.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from .classification import accuracy, confusion, f1, fhr, hit_rate, precision, recall
from .curves import curves
from .latency import cost_stats, latency_stats
from .ranking import threshold_free
from .slices import slice_operating_points
from .usage import ErrorTally, tier_usage

Direction = Literal["higher", "lower", "neither"]
#: How the Markdown shows a value (see ``cacheeval.reporting.report_markdown.FORMATS``):
#: a rate with its Wilson CI (count ``num/den``; ``estimate_n_eff``: count
#: ``TP x / n_eff y``), the four confusion counts, a number to 3 or 4
#: decimals, an integer, dollars. None: no cell of its own (a list of rows
#: the section lays out, or a JSON-only number).
Format = Literal["estimate", "estimate_n_eff", "confusion", "fixed3", "fixed4", "int", "usd"]


@dataclass(frozen=True, slots=True)
class MetricSpec:
    """The declaration of one reported metric.

    ``over`` names the label whose rows a headline rate is computed over
    (None: all rows). ``public`` is where the leaderboard's public feedback
    puts the value (None: never shown); only label-free numbers may be public.
    Its ``name[key]`` parts are lists whose rows carry their ``key`` field.
    """

    name: str
    title: str
    description: str
    formula: str
    direction: Direction
    path: str
    section: str
    compute: Callable[..., Any] | None
    fmt: Format | None
    public: str | None = None
    over: str | None = None

    @property
    def field(self) -> str:
        """The last name of ``path``: the attribute holding the value.

        >>> METRICS["domain_f1"].field
        'f1'
        """
        return self.path.rsplit(".", 1)[-1].removesuffix("[]")


METRICS: dict[str, MetricSpec] = {}


def register(spec: MetricSpec) -> MetricSpec:
    """Add ``spec`` to :data:`METRICS`; names are unique."""
    if spec.name in METRICS:
        raise ValueError(f"metric {spec.name!r} is already registered")
    if spec.direction not in ("higher", "lower", "neither"):
        raise ValueError(f"metric {spec.name!r}: bad direction {spec.direction!r}")
    METRICS[spec.name] = spec
    return spec


def section_metrics(section: str) -> list[MetricSpec]:
    """The metrics of ``section``, in registration (= column) order.

    >>> [m.name for m in section_metrics("Errors and timeouts")]
    ['error_count', 'timeout_count']
    """
    return [m for m in METRICS.values() if m.section == section]


def section_compute(section: str) -> Callable[..., Any]:
    """The one function computing every metric of ``section``.

    >>> section_compute("Latency").__name__
    'latency_stats'
    """
    found = {m.compute for m in section_metrics(section)}
    if len(found) != 1 or None in found:
        raise ValueError(f"section {section!r} has no single compute: {found}")
    return found.pop()  # type: ignore[return-value]


def public_metrics() -> list[MetricSpec]:
    """The metrics the leaderboard's public feedback shows."""
    return [m for m in METRICS.values() if m.public is not None]


def values_at(data: Any, path: str) -> list[Any]:
    """Values at ``path`` ("a.b", "a[].b") of an object or a dict; a ``[]``
    part expands a list. AttributeError/KeyError when a name is absent.

    >>> values_at({"a": [{"b": 1}, {"b": 2}]}, "a[].b")
    [1, 2]
    """
    values = [data]
    for part in path.split("."):
        name = part.removesuffix("[]")
        values = [v[name] if isinstance(v, dict) else getattr(v, name) for v in values]
        if part.endswith("[]"):
            values = [item for v in values for item in v]
    return values


def _m(
    name: str,
    title: str,
    direction: Direction,
    path: str,
    section: str,
    compute: Callable[..., Any] | None,
    fmt: Format | None,
    formula: str,
    description: str,
    *,
    public: str | None = None,
    over: str | None = None,
) -> None:
    register(
        MetricSpec(
            name, title, description, formula, direction, path, section, compute, fmt, public, over
        )
    )


_RATES: dict[str, tuple[str, Direction, Callable[..., Any], Format | None, str, str]] = {
    # field: (title, direction, compute, fmt, formula, description of each slice's ...)
    "accuracy": ("Accuracy", "higher", accuracy, "estimate", "(TP + TN) / n", "accuracy"),
    "precision": ("Precision", "higher", precision, "estimate", "TP / (TP + FP)", "precision"),
    "recall": ("Recall", "higher", recall, "estimate", "TP / (TP + FN)", "recall"),
    "f1": ("F1", "higher", f1, "estimate", "2 TP / (2 TP + FP + FN)", "F1"),
    "fhr": ("FHR", "lower", fhr, "estimate", "FP / (FP + TN)", "false-hit rate"),
    "hit_rate": ("Hit rate", "neither", hit_rate, "estimate", "(TP + FP) / n", "share served"),
}


def _slice_rates(prefix: str, section: str, what: str, shown: list[str]) -> None:
    """Every rate of the slices of ``section``: ``shown`` in column order, then
    the rates kept in the JSON only."""
    for field in shown + [f for f in _RATES if f not in shown]:
        title, direction, fn, fmt, formula, desc = _RATES[field]
        _m(f"{prefix}_{field}", title, direction, f"{_PATHS[section]}[].{field}", section, fn,
           fmt if field in shown else None, f"{formula} over the {what}'s rows",
           f"The {desc} of each {what}.")  # fmt: skip


_PATHS = {
    "Per domain": "per_domain",
    "Per label": "per_label",
    "Per difficulty": "per_difficulty",
    "Per sub-score": "per_subscore",
    "Per perturbation kind": "per_kind",
}

# fmt: off
_HEAD = "Headline"
_m("accuracy", "Accuracy", "higher", "headline.accuracy", _HEAD, accuracy, "estimate",
   "(TP + TN) / N", "Share of rows decided correctly.")
_m("precision", "Precision", "higher", "headline.precision", _HEAD, precision, "estimate",
   "TP / (TP + FP)", "Share of served rows that were safe to serve.")
_m("recall", "Recall", "higher", "headline.recall", _HEAD, recall, "estimate",
   "TP / (TP + FN)", "Share of servable rows that were served.")
_m("f1", "F1", "higher", "headline.f1", _HEAD, f1, "estimate_n_eff",
   "2 TP / (2 TP + FP + FN)", "Harmonic mean of precision and recall.")
_m("fhr", "FHR", "lower", "headline.fhr", _HEAD, fhr, "estimate",
   "FP / (FP + TN)", "False-hit rate: share of must-miss rows that were served.")
_m("adversarial_fhr", "ADVERSARIAL-FHR", "lower", "headline.adversarial_fhr", _HEAD, fhr,
   "estimate", "FP / (FP + TN) over ADVERSARIAL rows", "False-hit rate on the adversarial class.",
   over="ADVERSARIAL")
_m("confusion", "Confusion", "neither", "confusion", _HEAD, confusion, "confusion",
   "TP, FP, FN, TN with HIT as the positive class",
   "The confusion counts every rate is computed from.")

_TF = "Threshold-free"
_m("positive_rate", "Positive rate p", "neither", "threshold_free.positive_rate", _TF,
   threshold_free, "fixed4", "P / N", "Share of HIT rows; fixes the structural gap.")
_m("pr_auc", "PR-AUC (AP)", "higher", "threshold_free.pr_auc", _TF, threshold_free, "fixed4",
   "sum_k (R_k - R_{k-1}) * Prec_k over distinct scores, ties grouped",
   "Average precision: ranking quality of the hit score.")
_m("roc_auc", "ROC-AUC", "higher", "threshold_free.roc_auc", _TF, threshold_free, "fixed4",
   "P(score_HIT > score_MISS) + 1/2 P(tie)", "Mann-Whitney ranking quality.")
_m("p_chr_auc", "P-CHR AUC", "higher", "threshold_free.p_chr_auc", _TF, threshold_free, "fixed4",
   "sum_k (CHR_k - CHR_{k-1}) * Prec_k, CHR_k = fired_k / N",
   "Precision integrated over cache-hit ratio: quality usable at a threshold.")
_m("crr", "CRR", "higher", "threshold_free.crr", _TF, threshold_free, "fixed4",
   "P-CHR AUC / PR-AUC", "Calibration retention rate: ranking quality kept at deployment.")
_m("delta_str", "Structural gap", "neither", "threshold_free.delta_str", _TF, threshold_free,
   "fixed4", "1 - p (1 - ln p)", "The part of the operational gap fixed by the positive rate.")
_m("delta_op", "Operational gap", "lower", "threshold_free.delta_op", _TF, threshold_free,
   "fixed4", "PR-AUC - P-CHR AUC", "Offline ranking quality lost at deployment.")
_m("delta_cal", "Calibration gap", "lower", "threshold_free.delta_cal", _TF, threshold_free,
   "fixed4", "max(0, Delta_op - Delta_str)", "The recoverable, miscalibration part of the gap.")
_m("best_operating_point", "Best operating point", "higher",
   "threshold_free.operating_points[]", _TF, threshold_free, None,
   "max recall over thresholds with FP / (FP + TN) <= alpha",
   "Largest recall reachable under an FHR budget alpha, with its threshold.")

_m("subscore_best_operating_point", "Best operating point per sub-score", "higher",
   "subscore_operating_points[]", "Per sub-score operating point", slice_operating_points, None,
   "max recall over thresholds with FP / (FP + TN) <= 0.05, on the sub-score's rows",
   "Largest recall each skill reaches under a 5% FHR budget, with Wilson intervals.")

_CAL = "Calibration"
_m("ece", "ECE", "lower", "curves.ece", _CAL, curves, "fixed4",
   "sum_b (n_b / N) |mean predicted P(HIT)_b - observed HIT share_b|, 10 equal-width bins",
   "Expected calibration error of the predicted P(HIT) (confidence if served, else 1 - it).")
_m("reliability", "Observed HIT share", "neither", "curves.reliability[]", _CAL, curves, None,
   "per bin of predicted P(HIT): n, mean predicted, HIT share with its Wilson CI",
   "The reliability diagram behind the ECE.")
_m("score_curve", "Threshold sweep", "neither", "curves.score_curve[]", _CAL, curves, None,
   "per distinct score s (thinned): #rows with score >= s, TP and FP among them",
   "The threshold sweep, for plotting (JSON only).")

_slice_rates("domain", "Per domain", "domain", ["f1", "fhr", "precision", "recall", "accuracy"])
_slice_rates("label", "Per label", "label", ["hit_rate", "fhr", "recall"])
_slice_rates("difficulty", "Per difficulty", "difficulty", ["fhr", "recall", "f1"])
_slice_rates("subscore", "Per sub-score", "sub-score", ["fhr", "recall", "precision", "f1"])
# shown by the section's own columns, with "-" where a kind has no rows to rate
_slice_rates("kind", "Per perturbation kind", "perturbation kind", [])

_LAT_S = "Latency"
_m("latency_n", "Timed calls", "neither", "latency.n", _LAT_S, latency_stats, None,
   "#rows with a latency that were called", "Calls the latency summary is over.",
   public="latency_ms.n")
_m("latency_mean_ms", "mean", "lower", "latency.mean_ms", _LAT_S, latency_stats, "fixed3",
   "sum(latency) / n", "Mean decision latency (ms).")
_m("latency_p50_ms", "p50", "lower", "latency.p50_ms", _LAT_S, latency_stats, "fixed3",
   "nearest rank: v[ceil(0.50 n) - 1]", "Median decision latency (ms).", public="latency_ms.p50")
_m("latency_p95_ms", "p95", "lower", "latency.p95_ms", _LAT_S, latency_stats, "fixed3",
   "nearest rank: v[ceil(0.95 n) - 1]", "95th-percentile decision latency (ms).",
   public="latency_ms.p95")
_m("latency_p99_ms", "p99", "lower", "latency.p99_ms", _LAT_S, latency_stats, "fixed3",
   "nearest rank: v[ceil(0.99 n) - 1]", "99th-percentile decision latency (ms).",
   public="latency_ms.p99")
_m("latency_max_ms", "max", "lower", "latency.max_ms", _LAT_S, latency_stats, "fixed3",
   "max(latency)", "Slowest decision (ms).")

_COST = "Cost"
_m("cost_per_1k_usd", "Cost per 1k decisions", "lower", "cost.per_1k_decisions_usd", _COST,
   cost_stats, "usd", "1000 * sum(cost_per_call_usd[tier_used]) / n_decisions",
   "Price of 1,000 decisions from the cache's declared per-tier prices.")
_m("cost_total_usd", "Total", "lower", "cost.total_usd", _COST, cost_stats, "usd",
   "sum(cost_per_call_usd[tier_used])", "Price of the run's decisions.")

_TIER = "Verification tiers"
_m("tier_count", "Count", "neither", "tiers[].count", _TIER, tier_usage, "int",
   "#rows decided by the tier", "Decisions made by each tier.", public="tiers[tier].count")
_m("tier_share", "Share", "neither", "tiers[].share", _TIER, tier_usage, "fixed3",
   "count / N", "Share of decisions made by each tier (exposes judge dependency).",
   public="tiers[tier].share")

_ERR = "Errors and timeouts"
_m("error_count", "Errors", "lower", "errors.n_errors", _ERR, ErrorTally.stats, "int",
   "#rows whose call raised, returned an invalid verdict, or had no prediction",
   "Failed decisions (scored MISS).", public="errors.n_errors")
_m("timeout_count", "Timeouts", "lower", "errors.n_timeouts", _ERR, ErrorTally.stats, "int",
   "#rows abandoned after timeout_ms", "Calls that exceeded the timeout (scored MISS).",
   public="errors.n_timeouts")

_IDS = "Missing and extra ids"
_m("missing_ids", "Missing (no prediction; scored MISS)", "lower", "ids.n_missing", _IDS, None,
   "int", "#labelled rows without a prediction",
   "Rows the predictions do not cover (scored MISS).")
_m("extra_ids", "Extra (no such row; ignored)", "lower", "ids.n_extra", _IDS, None, "int",
   "#predictions for ids not among the rows", "Predictions that match no row (ignored).")
# fmt: on
