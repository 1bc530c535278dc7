"""compare(reports): headlines, differences and domains of runs side by side, on
two runs whose every number follows from the labels (always serve, never
serve); and reports/VERIFIED_vs_GPTCACHE.md re-renders from its JSON through it."""

from __future__ import annotations

import json

import pytest

from cacheeval.reporting.compare import (
    DomainRates,
    SystemHeadline,
    compare,
    difference,
    differences_table,
    domain_table,
    headline_table,
    to_markdown,
)
from cacheeval.reporting.report import Report
from cacheeval.run.harness import evaluate
from cacheeval.schema import Row, Verdict

from .conftest import REPO_ROOT


@pytest.fixture(scope="module")
def always_vs_never(mini_rows: list[Row]) -> tuple[Report, Report]:
    always = evaluate(lambda pair: Verdict(is_hit=True), mini_rows, cache_name="always")
    never = evaluate(lambda pair: Verdict(is_hit=False), mini_rows, cache_name="never")
    return always, never


def test_headlines_and_differences(mini_rows: list[Row], always_vs_never) -> None:
    n, p = len(mini_rows), sum(r.y for r in mini_rows)
    c = compare({"always": always_vs_never[0], "never": always_vs_never[1]})
    a, b = c.headlines
    assert c.names == ("always", "never")
    assert (a.n, a.tp, a.fp, a.fn, a.tn) == (n, p, n - p, 0, 0)
    assert (b.n, b.tp, b.fp, b.fn, b.tn) == (n, 0, 0, p, n - p)
    assert (a.fhr, a.recall, a.precision) == (1.0, 1.0, p / n)
    assert (b.fhr, b.recall, b.precision) == (0.0, 0.0, None)
    diff = {d.metric: d for d in c.differences}
    assert list(diff) == ["accuracy", "f1", "fhr", "adversarial_fhr", "precision", "recall"]
    assert diff["fhr"].values == (1.0, 0.0)
    assert diff["fhr"].deltas == (0.0, -1.0) and diff["fhr"].ratios == (1.0, 0.0)
    assert diff["precision"].deltas == (0.0, None)  # never serving has no precision
    assert diff["accuracy"].deltas[1] == pytest.approx((n - p) / n - p / n)


def test_difference_against_a_zero_or_missing_reference() -> None:
    d = difference("fhr", [0.0, 0.5])
    assert d.deltas == (0.0, 0.5) and d.ratios == (None, None)
    missing = difference("precision", [None, 0.5])
    assert missing.deltas == (None, None) and missing.ratios == (None, None)


def test_domains(mini_rows: list[Row], always_vs_never) -> None:
    c = compare({"always": always_vs_never[0], "never": always_vs_never[1]})
    math_rows = [r for r in mini_rows if r.domain == "math"]
    neg = sum(1 for r in math_rows if not r.y)
    always_math, never_math = c.domains[0]["math"], c.domains[1]["math"]
    assert (always_math.n, always_math.fp, always_math.negatives) == (len(math_rows), neg, neg)
    assert (always_math.fhr, never_math.fhr, never_math.fp) == (1.0, 0.0, 0)
    assert always_math.fhr_ci[0] is not None and always_math.fhr_ci[0] < 1.0


def test_json_round_trip(always_vs_never) -> None:
    c = compare({"always": always_vs_never[0], "never": always_vs_never[1]})
    for h in c.headlines:
        assert SystemHeadline.from_dict(json.loads(json.dumps(h.to_dict()))) == h
    for domains in c.domains:
        for d in domains.values():
            assert DomainRates.from_dict(json.loads(json.dumps(d.to_dict()))) == d


def test_renderers(mini_rows: list[Row], always_vs_never) -> None:
    n = len(mini_rows)
    c = compare({"always": always_vs_never[0], "never": always_vs_never[1]})
    head = headline_table(c)
    assert head[0].startswith("| system | rows | accuracy | F1 | FHR | ADV-FHR |")
    assert head[3].startswith(f"| never | {n} | ") and "| 0.000 | 0.000 | n/a | 0.000 |" in head[3]
    diffs = differences_table(c)
    assert diffs[0] == "| metric | always | never | never - always |"
    assert "| FHR | 1.000 | 0.000 | -1.000 |" in diffs
    dom = domain_table(c, [(0, "fhr"), (1, "recall")], names=["A", "N"])
    assert dom[0] == "| domain | rows | A FHR | N recall |"
    neg = sum(1 for r in mini_rows if r.domain == "math" and not r.y)
    rows = sum(1 for r in mini_rows if r.domain == "math")
    assert f"| math | {rows} | 1.000 ({neg}/{neg}) | 0.000 |" in dom
    text = to_markdown(c)
    assert "## Differences to always" in text and text.endswith("|\n")


def test_committed_verified_vs_gptcache_renders_from_its_json() -> None:
    from scripts.run_verified_vs_gptcache import markdown, part_comparison, part_json

    data = json.loads((REPO_ROOT / "reports" / "VERIFIED_vs_GPTCACHE.json").read_text("utf-8"))
    md = (REPO_ROOT / "reports" / "VERIFIED_vs_GPTCACHE.md").read_text("utf-8")
    assert markdown(data) == md
    for part in (data["test"], data["oof"]):
        # the JSON holds exactly what compare() writes (plus the live run's extras)
        written = part_json(part_comparison(part))
        assert written["gptcache"] == part["gptcache"]
        assert list(written["gptcache"]) == list(part["gptcache"])  # key order too
        assert written["verified_per_domain"] == part["verified_per_domain"]
        extra = set(part["verified"]) - set(written["verified"])
        assert {k: part["verified"][k] for k in written["verified"]} == written["verified"]
        assert extra <= {
            "embedding_p50_ms",
            "embedding_p95_ms",
            "interleaved_get_p50_ms",
            "interleaved_get_p95_ms",
            "latency_ratio_p50",
            "latency_ratio_p95",
        }


def test_a_comparison_carries_the_sub_scores_when_every_run_has_them(mini_rows: list) -> None:  # type: ignore[type-arg]
    import dataclasses

    from cacheeval import evaluate
    from cacheeval.baselines import AlwaysHit, ExactMatch
    from cacheeval.reporting.compare import compare, subscore_rates, to_markdown

    exact = evaluate(ExactMatch(), mini_rows, cache_name="exact")
    hit = evaluate(AlwaysHit(), mini_rows, cache_name="hit")
    c = compare({"exact": exact, "hit": hit})
    assert [list(s) for s in c.subscores] == [["query", "context", "policy"]] * 2
    # always_hit serves all 5 policy rows, exact_match the 3 verbatim ones
    assert (c.subscores[0]["policy"].fp, c.subscores[1]["policy"].fp) == (3, 5)
    md = to_markdown(c)
    assert "## Per sub-score" in md and "| policy | 5 |" in md
    old = dataclasses.replace(hit, per_subscore=None)  # a report from before sub-scores
    assert subscore_rates(old) == {}
    assert "## Per sub-score" not in to_markdown(compare({"exact": exact, "old": old}))
