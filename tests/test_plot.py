"""Figures: each type drawn from a small report is a valid, non-empty SVG and
PNG with the expected number of series (``series-<k>-...`` ids), the SVG is
byte-for-byte reproducible, and ``cacheeval plot`` writes them all."""

from __future__ import annotations

import re
import struct
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

from cacheeval.cli import main  # noqa: E402
from cacheeval.replay.engine import replay  # noqa: E402
from cacheeval.replay.report import build_replay_report  # noqa: E402
from cacheeval.replay.shared_baselines import SharedAlwaysHit  # noqa: E402
from cacheeval.reporting import plot  # noqa: E402
from cacheeval.reporting.plotdata import pareto_front, read_source  # noqa: E402
from cacheeval.run.harness import evaluate  # noqa: E402
from cacheeval.schema import Pair, Row, Verdict  # noqa: E402
from cacheeval.support.jsonio import write_bytes_atomic  # noqa: E402

SVG_NS = "{http://www.w3.org/2000/svg}"


def series_in_svg(path: Path) -> int:
    """Distinct series drawn: ids ``series-<k>-<part>`` of the SVG's groups."""
    root = ET.parse(path).getroot()
    assert root.tag == f"{SVG_NS}svg"
    ids = [el.get("id", "") for el in root.iter()]
    return len({m.group(1) for i in ids if (m := re.fullmatch(r"series-(\d+)-.*", i))})


def check_png(path: Path) -> None:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    assert width > 100 and height > 100 and len(data) > 5000


def check(fig: plot.Figure, expected_series: int) -> None:
    svg, png = fig.paths
    assert svg.suffix == ".svg" and png.suffix == ".png"
    assert svg.stat().st_size > 1000
    assert series_in_svg(svg) == expected_series == fig.n_series
    check_png(png)


@pytest.fixture(scope="module")
def reports(mini_rows: list[Row], tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Two pair reports (scored caches with different prices) and one replay report."""
    out = tmp_path_factory.mktemp("reports")

    class Scored:
        name = "scored"
        cost_per_call_usd = {"embedding": 0.001}

        def __call__(self, pair: Pair) -> Verdict:
            k = int(pair.id[-1])
            return Verdict(is_hit=k >= 5, confidence=0.6 + k / 25, tier_used="embedding",
                           score=k / 10)  # fmt: skip

    def flat(pair: Pair) -> Verdict:
        same = pair.a.key() == pair.b.key()
        return Verdict(is_hit=same, tier_used="exact", score=float(same))

    paths = []
    for name, cache in (("scored", Scored()), ("flat", flat)):
        report = evaluate(cache, mini_rows, cache_name=name)
        paths.append(out / f"{name}.json")
        write_bytes_atomic(paths[-1], report.to_json().encode())
    rep = build_replay_report(replay(SharedAlwaysHit(), mini_rows, cache_name="lexical"))
    paths.append(out / "replay.json")
    write_bytes_atomic(paths[-1], rep.to_json().encode())
    return paths


def test_pr_pchr(reports: list[Path], tmp_path: Path) -> None:
    sources = [read_source(p) for p in reports]
    fig = plot.pr_pchr(sources, tmp_path)
    # three caches (two pair, one replay) and one ceiling per distinct positive rate
    rates = {round(s.data.get("positive_rate") or s.data["threshold_free"]["positive_rate"], 4)
             for s in sources}  # fmt: skip
    check(fig, 3 + len(rates))
    text = fig.paths[0].read_text()
    assert "p(1 - ln p)" in text and "scored (AP " in text  # legend entries


def test_reliability(reports: list[Path], tmp_path: Path) -> None:
    fig = plot.reliability(read_source(reports[0]), tmp_path)
    check(fig, 3)  # diagonal, observed curve, rows per bin
    assert fig.paths[0].name == "reliability_scored.svg"


def test_domain_fhr(reports: list[Path], tmp_path: Path) -> None:
    fig = plot.domain_fhr([read_source(p) for p in reports], tmp_path)
    check(fig, 3)


def test_subscore_fhr(reports: list[Path], tmp_path: Path) -> None:
    sources = [read_source(p) for p in reports]  # two pair reports and a replay report
    fig = plot.subscore_fhr(sources, tmp_path)
    check(fig, 2)  # the replay report has no sub-scores: left out
    assert "FHR per sub-score" in fig.paths[0].read_text()


def test_threshold_sweep(tmp_path: Path) -> None:
    csv_path = tmp_path / "sweep.csv"
    lines = ["embedder,embed,threshold,cosine_cut,precision,recall,f1,fhr,adversarial_fhr,chr"]
    for emb in ("minilm", "e5-small"):
        for t in (0.5, 0.7, 0.9):
            lines.append(f"{emb},query,{t},0,0.5,{1 - t / 2},0.5,{1 - t},0.5,0.5")
    lines.append("minilm,full,0.5,0,0.5,1,0.5,1,0.5,0.5")  # full-request rows are left out
    csv_path.write_text("\n".join(lines) + "\n")
    check(plot.threshold_sweep(csv_path, tmp_path / "out"), 4)  # 2 embedders x (FHR, recall)


def test_clq(reports: list[Path], tmp_path: Path) -> None:
    sources = [read_source(p) for p in reports]
    fig = plot.clq(sources, tmp_path)
    # two pair reports and the replay in two panels, plus each panel's Pareto
    # front when it joins two points or more (which depends on the timings)
    assert 3 + 3 <= fig.n_series <= 3 + 3 + 2
    check(fig, fig.n_series)


def test_svg_is_reproducible(reports: list[Path], tmp_path: Path) -> None:
    sources = [read_source(p) for p in reports]
    a = plot.domain_fhr(sources, tmp_path / "a", formats=("svg",)).paths[0].read_bytes()
    b = plot.domain_fhr(sources, tmp_path / "b", formats=("svg",)).paths[0].read_bytes()
    assert a == b


def test_pareto_front() -> None:
    # (latency, quality, cost): C is slower and worse than B; D is dominated by A
    pts = [(1.0, 0.5, 0.0), (2.0, 0.9, 0.0), (3.0, 0.8, 0.0), (1.0, 0.4, 0.0), (0.5, 0.9, 5.0)]
    assert pareto_front(pts) == [4, 0, 1]


def test_plot_command(
    reports: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "figs"
    args = [f"{reports[0]}=Scored cache", str(reports[1]), str(reports[2])]
    assert main(["plot", *args, "--out", str(out), "--format", "svg"]) == 0
    names = sorted(p.name for p in out.iterdir())
    assert names == ["clq.svg", "domain_fhr.svg", "pr_pchr.svg", "reliability_Scored-cache.svg",
                     "reliability_flat.svg", "subscore_fhr.svg"]  # fmt: skip
    assert "pr_pchr: 4 series" in capsys.readouterr().out


def test_plot_command_rejects_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"hello": 1}')
    assert main(["plot", str(bad), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "neither a CacheEval report nor a replay report" in err and len(err.splitlines()) == 1
    assert main(["plot", str(tmp_path / "missing.json"), "--out", str(tmp_path)]) == 2
    capsys.readouterr()
    # a file that is not JSON, or not UTF-8, is named with the line at fault
    for name, data, where in (
        ("lines.json", b'{"a": 1}\n{"b": 2}\n', ":2: not valid JSON (Extra data at column 1)"),
        ("empty.json", b"", ":1: not valid JSON (Expecting value at column 1)"),
        (
            "binary.json",
            b'{"a":\n "\xff\xfe"}',
            ":2: not UTF-8 text (byte 3 of the line: invalid start byte)",
        ),
    ):
        path = tmp_path / name
        path.write_bytes(data)
        assert main(["plot", str(path), "--out", str(tmp_path)]) == 2
        err = capsys.readouterr().err
        assert f"{path}{where}" in err and len(err.splitlines()) == 1, err


@pytest.mark.parametrize(
    ("which", "damage", "what"),
    [
        (0, lambda d: d.pop("headline"), "(no field 'headline')"),
        (0, lambda d: d["per_domain"][0].pop("fhr"), "(no field 'fhr')"),
        (0, lambda d: d["latency"].update(p95_ms="soon"), "(could not convert string to float"),
        (2, lambda d: d["curve"][0].pop("fired"), "(no field 'fired')"),
    ],
)  # fmt: skip
def test_plot_names_a_damaged_report(
    reports: list[Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    which: int,
    damage: object,
    what: str,
) -> None:
    # a report with a field missing or of the wrong type was a KeyError
    # traceback (exit 1) in the middle of drawing
    import json

    data = json.loads(reports[which].read_text(encoding="utf-8"))
    damage(data)  # type: ignore[operator]
    bad = tmp_path / "damaged.json"
    bad.write_text(json.dumps(data), encoding="utf-8")
    out = tmp_path / "figs"
    assert main(["plot", str(reports[1]), str(bad), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"cacheeval plot: error: {bad}:1: an incomplete or damaged report {what}")
    assert len(err.splitlines()) == 1 and not out.exists()


def _pair_report(name: str, p95_ms: float, fhr: float, f1: float) -> dict[str, object]:
    """The fields of a pair report the cost-latency-quality view reads."""
    return {
        "cacheeval_report": "1.4",
        "provenance": {"cache_name": name},
        "headline": {"f1": {"value": f1}, "fhr": {"value": fhr}},
        "latency": {"p95_ms": p95_ms},
        "cost": {"per_1k_decisions_usd": 0.0},
        "threshold_free": None,
    }


def test_clq_keeps_replays_and_draws_no_all_zero_panel(reports: list[Path], tmp_path: Path) -> None:
    from cacheeval.reporting.plotdata import clq_point

    sources = [read_source(p) for p in reports]
    points = [clq_point(s) for s in sources]
    assert [p.kind for p in points if p is not None] == ["pair", "pair", "replay"]
    fig, n, _ = plot.clq_figure(sources)
    try:
        for ax, (attr, _, _) in zip(fig.axes, plot.CLQ_PANELS, strict=True):
            ys = [y for coll in ax.collections for _, y in coll.get_offsets()]
            assert len(ys) == 3, attr  # both pair reports and the replay
            assert any(y != 0 for y in ys), attr  # no panel of zeros only
        assert plot.overlapping_texts(fig) == []
    finally:
        plot.pyplot().close(fig)


def test_clq_labels_never_overlap(tmp_path: Path) -> None:
    # latencies within one decade used to label the minor ticks, which collide
    from cacheeval.reporting.plotdata import PAIR, Source

    sources = [
        Source(f"cache {i} with a long display name", PAIR,
               _pair_report(f"c{i}", 2.0 + i * 0.3, 0.02 * i, 0.5 + 0.03 * i))
        for i in range(14)
    ]  # fmt: skip
    fig, n, notes = plot.clq_figure(sources)
    try:
        assert plot.overlapping_texts(fig) == []
        ticks = [t.get_text() for t in fig.axes[0].get_xticklabels(minor=True) if t.get_text()]
        assert ticks == []  # decades only
    finally:
        plot.pyplot().close(fig)
    assert notes == ()


def test_overlapping_texts_finds_a_clash() -> None:
    plt = plot.pyplot()
    fig, ax = plt.subplots()
    ax.text(0.5, 0.5, "first label")
    ax.text(0.5, 0.5, "second label")
    try:
        assert ("first label", "second label") in plot.overlapping_texts(fig)
    finally:
        plt.close(fig)


def test_identical_curves_are_drawn_once_and_named_together(
    reports: list[Path], tmp_path: Path
) -> None:
    twin = read_source(reports[0], "twin")  # the same report under another name
    sources = [read_source(reports[0]), twin, read_source(reports[1])]
    fig = plot.pr_pchr(sources, tmp_path)
    rates = {round(s.data["threshold_free"]["positive_rate"], 4) for s in sources}
    check(fig, 2 + len(rates))  # scored = twin, flat, and the ceilings
    text = fig.paths[0].read_text()
    assert "scored = twin (AP " in text and "scored = twin (AUC " in text
    assert "twin: the same curve as scored, drawn once" in fig.notes
