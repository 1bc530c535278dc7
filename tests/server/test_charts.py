"""The leaderboard's server-side SVG charts: well-formed, one mark per value,
escaped names, and no inline style (the pages' CSP forbids it)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from cacheeval.server.charts import board_points, board_svg, domain_fhr_svg, levels_svg


def parse(svg: str) -> ET.Element:
    return ET.fromstring(svg.replace("<svg ", '<svg xmlns="http://www.w3.org/2000/svg" ', 1))


def est(value: float | None, lo: float | None = None, hi: float | None = None) -> dict:
    return {"value": value, "ci_low": lo, "ci_high": hi, "numerator": 0, "denominator": 0}


def test_domain_fhr_chart() -> None:
    per_domain = [
        {"domain": "math", "n": 10, "fhr": est(0.2, 0.05, 0.5)},
        {"domain": "code", "n": 10, "fhr": est(0.0, 0.0, 0.3)},
        {"domain": "creative", "n": 4, "fhr": est(None)},
    ]
    svg = domain_fhr_svg(per_domain)
    root = parse(svg)
    ns = "{http://www.w3.org/2000/svg}"
    bars = [r for r in root.iter(f"{ns}rect") if r.get("class") == "bar"]
    assert len(bars) == 2
    widths = [float(b.get("width", "nan")) for b in bars]
    assert widths[0] > widths[1] == 0.0  # 0.2 of the plot width, then 0
    assert "n/a (no MISS rows)" in svg
    assert "style" not in svg and "<script" not in svg


def test_board_chart_escapes_names() -> None:
    scores = {"confusion": {"tp": 30, "fp": 10, "fn": 20, "tn": 40}}
    points = board_points([(1, '<script>alert("x")</script>', scores), (2, "b", scores)])
    assert points[0]["precision"] == 0.75 and points[0]["chr"] == 0.4 and points[0]["p"] == 0.5
    svg = board_svg(points)
    root = parse(svg)
    assert "<script>" not in svg and "&lt;script&gt;" in svg
    groups = [g for g in root.iter() if g.get("class") == "point"]
    assert len(groups) == 4  # two submissions, two panels
    assert len(re.findall(r'class="ceiling"', svg)) == 1
    assert "style=" not in svg


def test_board_points_skip_submissions_that_never_serve() -> None:
    never = {"confusion": {"tp": 0, "fp": 0, "fn": 5, "tn": 5}}
    assert board_points([(1, "miss", never)]) == []
    assert board_svg([]).startswith('<svg id="board-chart"')


def test_board_points_carry_the_sweep_when_the_report_has_one() -> None:
    report = {
        "confusion": {"tp": 2, "fp": 2, "fn": 0, "tn": 0},
        "curves": {"n": 4, "n_positive": 2, "score_curve": [
            {"threshold": 0.9, "n_fired": 1, "tp": 1, "fp": 0},
            {"threshold": 0.1, "n_fired": 4, "tp": 2, "fp": 2}]},
    }  # fmt: skip
    (pt,) = board_points([(1, "x", report)])
    assert pt["curve"] == [(0.5, 0.25, 1.0), (1.0, 1.0, 0.5)]
    assert board_svg([pt]).count('class="curve"') == 2  # one per panel


def test_levels_chart() -> None:
    entries = [
        {"rank": 1, "name": "good", "level": "L5", "within_budget": True,
         "fhr_interval": [0.0, 0.05], "recall_interval": [0.8, 1.0]},
        {"rank": 2, "name": "<b>bad</b>", "level": "L1", "within_budget": False,
         "fhr_interval": [0.2, 0.5], "recall_interval": None},
    ]  # fmt: skip
    svg = levels_svg(entries)
    root = parse(svg)
    boxes = [g for g in root.iter() if g.get("class") == "level"]
    assert len(boxes) == 2
    assert "&lt;b&gt;bad&lt;/b&gt;" in svg and "<b>" not in svg and "style=" not in svg


def test_levels_chart_never_prints_a_rank_over_another() -> None:
    # five entries at one level (the same box), two at boxes with close middles
    same = {"level": "L2", "within_budget": False, "fhr_interval": [0.05, 0.1],
            "recall_interval": [0.2, 0.4]}  # fmt: skip
    entries = [{"rank": r, "name": f"e{r}", **same} for r in range(1, 6)]
    entries += [
        {"rank": 6, "name": "f", "level": "L3", "within_budget": True,
         "fhr_interval": [0.0, 0.05], "recall_interval": [0.4, 0.6]},
        {"rank": 7, "name": "g", "level": "L3", "within_budget": True,
         "fhr_interval": [0.0, 0.05], "recall_interval": [0.38, 0.62]},
    ]  # fmt: skip
    root = parse(levels_svg(entries))
    boxes = [g for g in root.iter() if g.get("class") == "level"]
    assert len(boxes) == 7  # one box per entry, as before
    group = next(g for g in root.iter() if g.get("class") == "level-ranks")
    labels = [(float(t.get("x")), float(t.get("y")), t.text or "") for t in group]
    assert sorted(text for _, _, text in labels) == ["1, 2, 3, 4, 5", "6", "7"]
    spans = [(x - 3.1 * len(s), y - 10, x + 3.1 * len(s), y + 2) for x, y, s in labels]
    for i, a in enumerate(spans):
        for b in spans[i + 1 :]:
            assert min(a[2], b[2]) <= max(a[0], b[0]) or min(a[3], b[3]) <= max(a[1], b[1])
