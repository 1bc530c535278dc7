"""The GPTCache runner's threshold sweep (one sorted sweep of the ranks, read at
every threshold) against GPTCache's own rule applied row by row, and the
summary's pure parts. No model and no GPTCache run: the ranks are made up."""

from __future__ import annotations

import random
from types import SimpleNamespace
from typing import Any

from adapters.gptcache_adapter import MAX_DISTANCE, gptcache_hit
from adapters.gptcache_runner import SWEEP, best_f1_by_embedder, sweep_points
from cacheeval.metrics import confusion, f1, fhr, precision, recall


def _row_by_row(rows: list[Any], ranks: list[float], t: float) -> dict[str, float | None]:
    """GPTCache's decision on every row, counted row by row."""
    hits = [gptcache_hit(r, t) for r in ranks]
    c = confusion([r.y for r in rows], hits)
    adv = [i for i, r in enumerate(rows) if r.label == "ADVERSARIAL"]
    c_adv = confusion([rows[i].y for i in adv], [hits[i] for i in adv])
    rates = {m.__name__: m(c).value for m in (precision, recall, f1, fhr)}
    rates["adversarial_fhr"] = fhr(c_adv).value
    rates["chr"] = sum(hits) / len(hits) if hits else None
    return rates


def test_sweep_points_equal_gptcache_rule_row_by_row() -> None:
    rng = random.Random(44)
    cuts = [MAX_DISTANCE * t for t in SWEEP]  # ranks sitting exactly on a threshold
    for _ in range(60):
        n = rng.randint(0, 60)
        rows = [
            SimpleNamespace(y=rng.randint(0, 1), label=rng.choice(["ADVERSARIAL", "EQUIV"]))
            for _ in range(n)
        ]
        ranks = [rng.choice([rng.choice(cuts), rng.uniform(1.5, 4.0), 4.0]) for _ in range(n)]
        points = sweep_points(rows, ranks, "emb", "query")  # type: ignore[arg-type]
        assert [p["threshold"] for p in points] == SWEEP
        for p in points:
            expected = _row_by_row(rows, ranks, p["threshold"])
            assert {k: p[k] for k in expected} == expected
            assert p["cosine_cut"] == round(2 * p["threshold"] - 1, 2)


def test_best_f1_by_embedder_takes_the_first_largest() -> None:
    points = [
        {"embedder": "a", "threshold": 0.5, "f1": 0.4},
        {"embedder": "a", "threshold": 0.6, "f1": 0.7},
        {"embedder": "a", "threshold": 0.7, "f1": 0.7},
        {"embedder": "b", "threshold": 0.5, "f1": None},
        {"embedder": "b", "threshold": 0.6, "f1": 0.1},
        {"embedder": "c", "threshold": 0.5, "f1": None},
    ]
    best = best_f1_by_embedder(points)
    assert {k: v["threshold"] for k, v in best.items()} == {"a": 0.6, "b": 0.6}


# --- the real path's saved predictions ---------------------------------------------


def _preds(ids: list[str]) -> list[Any]:
    from cacheeval.results.predictions import Prediction

    return [
        Prediction(id=i, is_hit=n % 2 == 0, confidence=0.5, score=0.1 * n,
                   tier_used="embedding", latency_ms=1.0 + n, error=None)
        for n, i in enumerate(ids)
    ]  # fmt: skip


def test_saved_real_predictions_are_read_back_only_for_the_same_data_and_config(
    tmp_path: Any,
) -> None:
    from adapters.gptcache_adapter import CONFIGS
    from adapters.gptcache_runner import load_real_predictions, save_real_predictions

    bench = tmp_path / "bench.jsonl"
    bench.write_text('{"id": "r1"}\n', encoding="utf-8")
    saved = tmp_path / "p" / "gptcache_minilm@0.80.jsonl"
    ids = ["r1", "r2", "r3"]
    cfg = CONFIGS["minilm@0.80"]
    save_real_predictions(cfg, bench, _preds(ids), saved)

    got = load_real_predictions(cfg, bench, ["r3", "r1"], saved)
    assert got is not None and [p.id for p in got] == ["r3", "r1"]
    assert got[0].score == _preds(ids)[2].score and got[0].latency_ms == 3.0
    # an id the file lacks, another configuration, another dataset, no file: run GPTCache
    assert load_real_predictions(cfg, bench, ["r1", "r9"], saved) is None
    assert load_real_predictions(CONFIGS["minilm@0.85"], bench, ids, saved) is None
    assert load_real_predictions(cfg, bench, ids, tmp_path / "missing.jsonl") is None
    bench.write_text('{"id": "r1", "changed": true}\n', encoding="utf-8")
    assert load_real_predictions(cfg, bench, ids, saved) is None


def test_a_corrupt_saved_file_means_run_gptcache(tmp_path: Any) -> None:
    from adapters.gptcache_adapter import CONFIGS
    from adapters.gptcache_runner import load_real_predictions

    bench = tmp_path / "bench.jsonl"
    bench.write_text("{}\n", encoding="utf-8")
    saved = tmp_path / "bad.jsonl"
    saved.write_text("not json\n", encoding="utf-8")
    assert load_real_predictions(CONFIGS["minilm@0.80"], bench, ["a"], saved) is None
