"""The label-free part of a stored grade comes from the registry's ``public``
flag, and that flag marks nothing that depends on the hidden labels."""

from __future__ import annotations

import json

from cacheeval.metrics.registry import METRICS, public_metrics
from cacheeval.run.harness import evaluate
from cacheeval.schema import Pair, Row, Verdict
from cacheeval.server.grading import label_free

#: What the board may show of an upload whatever the labels (docs/leaderboard.md):
#: the latency, tier use and errors it reported. Adding to this widens the feedback.
PUBLIC = {
    "latency_n": "latency_ms.n",
    "latency_p50_ms": "latency_ms.p50",
    "latency_p95_ms": "latency_ms.p95",
    "latency_p99_ms": "latency_ms.p99",
    "tier_count": "tiers[tier].count",
    "tier_share": "tiers[tier].share",
    "error_count": "errors.n_errors",
    "timeout_count": "errors.n_timeouts",
}
LABEL_FREE_SECTIONS = {"Latency", "Verification tiers", "Errors and timeouts"}


def test_public_metrics_are_the_label_free_ones() -> None:
    assert {m.name: m.public for m in public_metrics()} == PUBLIC
    assert {m.section for m in public_metrics()} == LABEL_FREE_SECTIONS
    # every metric that reads the labels stays private
    assert all(METRICS[n].public is None for n in ("fhr", "recall", "domain_fhr", "confusion"))


def test_label_free_is_the_stored_grade_shape(mini_rows: list[Row]) -> None:
    def cache(pair: Pair) -> Verdict:
        if "Python" in pair.a.query:
            raise RuntimeError("boom")
        tier = "judge" if any(ch.isdigit() for ch in pair.a.query) else "embedding"
        return Verdict(is_hit=False, tier_used=tier)

    report = evaluate(cache, mini_rows)
    lat = report.latency
    want = {
        "latency_ms": {"n": lat.n, "p50": lat.p50_ms, "p95": lat.p95_ms, "p99": lat.p99_ms},
        "tiers": [{"tier": t.tier, "count": t.count, "share": t.share} for t in report.tiers],
        "errors": {"n_errors": report.errors.n_errors, "n_timeouts": report.errors.n_timeouts},
    }
    assert len(report.tiers) == 3 and report.errors.n_errors > 0  # every part is filled
    got = label_free(report)
    assert json.dumps(got) == json.dumps(want)  # same keys in the same order
