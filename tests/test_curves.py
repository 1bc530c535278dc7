"""The curves a report keeps for plotting: the threshold sweep, the reliability
diagram and the ECE, on tiny hand-computed runs; and reports written before
the field existed still load and render as before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cacheeval.metrics.curves import (
    CurvePoint,
    expected_calibration_error,
    p_hit,
    reliability,
    score_curve,
)
from cacheeval.reporting.report import Report
from cacheeval.run.harness import evaluate
from cacheeval.schema import Pair, Row, Verdict

from .conftest import REPO_ROOT


def test_score_curve_hand_computed() -> None:
    y = [1, 1, 0, 1, 0, 0]
    s = [0.9, 0.7, 0.7, 0.4, 0.2, None]
    assert score_curve(y, s) == (
        CurvePoint(0.9, 1, 1, 0),
        CurvePoint(0.7, 3, 2, 1),
        CurvePoint(0.4, 4, 3, 1),
        CurvePoint(0.2, 5, 3, 2),
    )
    # thinned to steps of n / 2 = 3 rows: first, first past 3 fired, last
    assert [p.n_fired for p in score_curve(y, s, max_points=2)] == [1, 3, 5]
    assert score_curve([1, 0], [None, None]) == ()
    with pytest.raises(ValueError):
        score_curve([1], [float("nan")])


def test_reliability_and_ece_hand_computed() -> None:
    # predicted P(HIT): 0.1 (MISS), 0.15 (HIT), 0.8 (HIT), 0.9 (HIT), 1.0 (MISS)
    y = [0, 1, 1, 1, 0]
    q = [0.1, 0.15, 0.8, 0.9, 1.0]
    bins = reliability(y, q, n_bins=4)  # [0, .25) [.25, .5) [.5, .75) [.75, 1]
    assert [(b.n, b.n_hit) for b in bins] == [(2, 1), (0, 0), (0, 0), (3, 2)]
    assert bins[0].mean_predicted == pytest.approx(0.125)
    assert bins[3].mean_predicted == pytest.approx(0.9)
    assert bins[1].mean_predicted is None and bins[1].observed.value is None
    assert bins[3].observed.value == pytest.approx(2 / 3)
    # ECE = 2/5 |0.125 - 1/2| + 3/5 |0.9 - 2/3|
    assert expected_calibration_error(bins) == pytest.approx(0.4 * 0.375 + 0.6 * (0.9 - 2 / 3))
    assert expected_calibration_error(reliability([1], [None])) is None
    assert p_hit(False, 0.25) == 0.75 and p_hit(True, 0.25) == 0.25
    with pytest.raises(ValueError):
        reliability([1], [1.5])


def test_report_carries_curves(mini_rows: list[Row]) -> None:
    def cache(pair: Pair) -> Verdict:
        k = int(pair.id[-1])
        return Verdict(is_hit=k > 4, confidence=0.7, tier_used="embedding", score=k / 10)

    report = evaluate(cache, mini_rows)
    c = report.curves
    assert c is not None and c.n == len(mini_rows)
    assert c.n_positive == sum(r.y for r in mini_rows)
    last = c.score_curve[-1]
    assert last.n_fired == len(mini_rows) and last.tp == c.n_positive
    assert sum(b.n for b in c.reliability) == len(mini_rows)
    # every row predicts 0.7 (served) or 0.3 (not served)
    assert {b.lo for b in c.reliability if b.n} == {0.3, 0.7}
    assert Report.from_dict(report.to_dict()) == report
    assert "## Calibration" in report.to_markdown()


def test_unscored_run_has_reliability_but_no_sweep(mini_rows: list[Row]) -> None:
    report = evaluate(lambda pair: Verdict(is_hit=False), mini_rows)
    assert report.curves is not None and report.curves.score_curve == ()
    assert report.curves.ece is not None


def test_reports_written_without_curves_still_load_and_render_the_same(
    mini_rows: list[Row],
) -> None:
    report = evaluate(lambda pair: Verdict(is_hit=False, score=0.5), mini_rows)
    data = report.to_dict()
    old = {k: v for k, v in data.items() if k != "curves"}  # as written before curves existed
    loaded = Report.from_dict(old)
    assert loaded.curves is None and "## Calibration" not in loaded.to_markdown()
    assert loaded.to_dict() == {**old, "curves": None}
    assert Report.from_dict(data) == report


def test_committed_markdown_matches_its_json() -> None:
    for md in sorted(Path(REPO_ROOT / "reports").glob("baseline_*.md")):
        data = json.loads(md.with_suffix(".json").read_text(encoding="utf-8"))
        assert Report.from_dict(data).to_markdown() == md.read_text(encoding="utf-8")
