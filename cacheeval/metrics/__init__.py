"""CacheEval's metrics: pure functions over labels, decisions, scores and
latencies (standard library only). Each reported metric is declared in
:mod:`cacheeval.metrics.registry`; the computation lives in the modules below.

* :mod:`.classification` - confusion counts and rates (accuracy, precision,
  recall, F1, FHR, hit rate), each an :class:`Estimate` with a Wilson interval;
* :mod:`.intervals` - the Wilson score interval;
* :mod:`.slices` - the same rates per domain, label and difficulty;
* :mod:`.sweep` - the threshold sweep (confusion counts at every distinct
  score) and the best operating point under an FHR budget, behind every curve;
* :mod:`.ranking` - threshold-free metrics of a hit score (PR-AUC, ROC-AUC,
  P-CHR AUC, CRR, the gaps, best operating points);
* :mod:`.latency` - latency percentiles and cost per 1,000 decisions;
* :mod:`.usage` - verification-tier usage, errors and timeouts.
"""

from __future__ import annotations

from .classification import (
    Confusion,
    Estimate,
    accuracy,
    confusion,
    f1,
    fhr,
    hit_rate,
    precision,
    proportion,
    recall,
)
from .intervals import Z_95, wilson_interval
from .latency import CostStats, LatencyStats, cost_stats, latency_stats, percentile
from .ranking import DEFAULT_ALPHAS, OperatingPoint, ThresholdFree, threshold_free
from .registry import METRICS, MetricSpec
from .slices import Slice, slice_of, slices
from .sweep import Sweep, best_operating_point, threshold_sweep
from .usage import ErrorExample, ErrorKind, ErrorStats, TierUsage, error_stats, tier_usage

__all__ = [
    "DEFAULT_ALPHAS",
    "METRICS",
    "Z_95",
    "Confusion",
    "CostStats",
    "ErrorExample",
    "ErrorKind",
    "ErrorStats",
    "Estimate",
    "LatencyStats",
    "MetricSpec",
    "OperatingPoint",
    "Slice",
    "Sweep",
    "ThresholdFree",
    "TierUsage",
    "accuracy",
    "best_operating_point",
    "confusion",
    "cost_stats",
    "error_stats",
    "f1",
    "fhr",
    "hit_rate",
    "latency_stats",
    "percentile",
    "precision",
    "proportion",
    "recall",
    "slice_of",
    "slices",
    "threshold_free",
    "threshold_sweep",
    "tier_usage",
    "wilson_interval",
]
