"""The test-split vs slice comparison (:mod:`cacheeval.benches.shift`): per-domain
sides computed from confusion counts, shifts, the report renderers, and the
reference predictions files the board grades."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from cacheeval.baselines import make_baseline
from cacheeval.benches.shift import (
    evaluate_shift,
    evaluate_slices,
    render_markdown,
    shift,
    side_of_confusion,
    to_json,
    write_reference_predictions,
)
from cacheeval.metrics.classification import Confusion
from cacheeval.results.predictions import read_predictions
from cacheeval.schema import Row


def test_side_and_shift_by_hand() -> None:
    # test: 8 TP, 1 FP, 2 FN, 9 TN -> accuracy 17/20, FHR 1/10, recall 8/10
    # slice: 5 TP, 3 FP, 5 FN, 7 TN -> accuracy 12/20, FHR 3/10, recall 5/10
    t = side_of_confusion(Confusion(tp=8, fp=1, fn=2, tn=9))
    s = side_of_confusion(Confusion(tp=5, fp=3, fn=5, tn=7))
    assert (t.accuracy.value, t.fhr.value, t.recall.value) == (0.85, 0.1, 0.8)
    assert shift(t.accuracy, s.accuracy) == 0.6 - 0.85
    assert shift(t.fhr, s.fhr) == 0.3 - 0.1
    assert shift(t.recall, s.recall) == 0.5 - 0.8
    no_hit = side_of_confusion(Confusion(tp=0, fp=2, fn=0, tn=3))
    assert no_hit.recall.value is None and shift(t.recall, no_hit.recall) is None


def test_evaluate_shift_per_domain(mini_rows: list[Row], tmp_path: Path) -> None:
    test_rows = mini_rows
    # A "slice": the math rows of the fixture only.
    slice_rows = [dataclasses.replace(r, split="test") for r in mini_rows if r.domain == "math"]
    caches = [(n, lambda n=n: make_baseline(n)) for n in ("always_hit", "always_miss")]
    shifts, reports, preds = evaluate_shift(caches, test_rows, slice_rows)
    hit, miss = shifts
    assert hit.cache == "always_hit" and hit.test.n == len(test_rows)
    assert hit.slice.n == len(slice_rows)
    assert [d.domain for d in hit.domains][0] == "qa_factual"
    math = next(d for d in hit.domains if d.domain == "math")
    assert math.slice is not None and math.test is not None
    assert math.slice.fhr.value == 1.0 and math.slice.recall.value == 1.0
    only_test = next(d for d in miss.domains if d.domain == "qa_factual")
    assert only_test.slice is None and only_test.test is not None
    assert miss.slice.fhr.value == 0.0 and miss.slice.recall.value == 0.0
    assert set(reports) == {"always_hit", "always_miss"}
    assert len(preds["always_hit"]) == len(test_rows)

    meta = {"seed": "demo", "n_test": len(test_rows), "n_slice": len(slice_rows)}
    data = to_json(shifts, meta)
    assert data["caches"][0]["all"]["test"]["fhr"]["value"] == 1.0
    qa = next(d for d in data["caches"][1]["domains"] if d["domain"] == "qa_factual")
    assert qa["slice"] is None and qa["shift"] == {"accuracy": None, "fhr": None, "recall": None}
    md = render_markdown(shifts, meta)
    assert "## always_hit" in md and "| math |" in md and "| **all** |" in md
    assert "`demo`" in md

    written = write_reference_predictions(tmp_path / "refs", preds, "d" * 64)
    assert sorted(p.name for p in written) == ["always-hit.jsonl", "always-miss.jsonl"]
    header, got = read_predictions(tmp_path / "refs" / "always-hit.jsonl")
    assert header.cache_name == "always_hit" and header.split == "test"
    assert [p.id for p in got] == [r.id for r in test_rows] and all(p.is_hit for p in got)
    assert (
        json.loads((tmp_path / "refs" / "always-miss.jsonl").read_text().splitlines()[1])["is_hit"]
        is False
    )


def test_more_seeds_each_get_a_row(mini_rows: list[Row]) -> None:
    test_rows = [dataclasses.replace(r, split="test") for r in mini_rows]
    math = [r for r in test_rows if r.domain == "math"]
    caches = [(n, lambda n=n: make_baseline(n)) for n in ("always_hit", "always_miss")]
    shifts, _, _ = evaluate_shift(caches, test_rows, math)
    # a second "seed": the math rows' MISS rows only, so always_hit's FHR is 1 and its
    # recall n/a there
    misses = [r for r in math if r.y == 0]
    seeds = evaluate_slices(caches, [("second", "s" * 64, misses)])
    assert [x.seed for x in seeds] == ["second"] and seeds[0].n == len(misses)
    hit = seeds[0].sides["always_hit"]
    assert hit.fhr.value == 1.0 and hit.recall.value is None
    meta = {"seed": "demo", "n_test": len(test_rows), "n_slice": len(math)}
    md = render_markdown(shifts, meta, seeds)
    assert "## Every slice seed" in md
    assert f"| always_hit | `second` | {len(misses)} | 1.000 | +0.000 | n/a | n/a |" in md
    assert md.count("| always_miss | `") == 2
    data = to_json(shifts, meta, seeds)
    first = data["seeds"][0]
    assert first["seed"] == "second" and first["n_slice"] == len(misses)
    assert first["caches"][0]["shift"]["recall"] is None
    assert to_json(shifts, meta)["seeds"] == []
