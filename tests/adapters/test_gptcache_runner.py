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
