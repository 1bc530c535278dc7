"""The embedding-mix frontier of the verified cache (adapters.verified_cache.frontier):
hand-computed scores, decisions and certificates on inline fixtures."""

from __future__ import annotations

import math
import random

import pytest

from adapters.verified_cache.frontier import Mix, fit_cosine_odds, frontier
from adapters.verified_cache.model import FLOOR, certify_threshold
from adapters.verified_cache.training import PairCase, Scored
from cacheeval.metrics.sweep import OperatingPoint


def scored(y: int, raw: float, cos: float, split: str = "test", tier: str = "verifier") -> Scored:
    """A scored pair as the shipped model leaves it: an exact repeat's raw score
    is 1.0 and a policy or gate refusal's 0.0 (training.case_score)."""
    raw = {"exact": 1.0, "policy": 0.0, "embedding": 0.0}.get(tier, raw)
    case = PairCase(id=f"{split}-{y}-{raw}-{cos}-{tier}", y=y, split=split, domain="qa",
                    label="PARAPHRASE" if y else "ADVERSARIAL", family="f", settled="",
                    reason="", cos_query=cos, features=())  # fmt: skip
    return Scored(case, raw, tier, False, raw)


def point(threshold: float | None) -> OperatingPoint:
    return OperatingPoint(alpha=0.05, threshold=threshold, recall=None, precision=None,
                          fhr=None, n_fired=0, tp=0, fp=0)  # fmt: skip


def sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z))


def test_fit_cosine_odds_recovers_a_known_logistic_model() -> None:
    rng = random.Random(7)
    xs = [rng.random() for _ in range(4000)]
    ys = [int(rng.random() < sigmoid(-3.0 + 6.0 * x)) for x in xs]
    a, b = fit_cosine_odds(xs, ys)
    assert abs(a + 3.0) < 0.4 and abs(b - 6.0) < 0.7
    with pytest.raises(ValueError):
        fit_cosine_odds([0.1, 0.2], [1])


def test_mix_scores_by_hand() -> None:
    assert Mix(0.0, -2.0, 4.0).score(0.3, 0.9) == 0.3  # w = 0: the verifier
    # w = 1: sigmoid(a + b cos) = sigmoid(-2 + 4 * 0.75) = sigmoid(1)
    assert Mix(1.0, -2.0, 4.0).score(0.3, 0.75) == pytest.approx(sigmoid(1.0))
    # w = 0.25: z = 0.75 * logit(0.8) + 0.25 * (-2 + 4 * 0.5) = 0.75 * ln 4
    assert Mix(0.25, -2.0, 4.0).score(0.8, 0.5) == pytest.approx(sigmoid(0.75 * math.log(4)))
    with pytest.raises(ValueError):
        Mix(1.5, 0.0, 1.0)


def test_weight_one_ranks_as_the_cosine_and_zero_as_the_verifier() -> None:
    rng = random.Random(3)
    pairs = [(rng.uniform(0.01, 0.99), rng.uniform(0.1, 1.0)) for _ in range(200)]
    by_cos = sorted(pairs, key=lambda pc: pc[1])
    by_p = sorted(pairs, key=lambda pc: pc[0])
    one, zero = Mix(1.0, -1.0, 5.0), Mix(0.0, -1.0, 5.0)
    assert sorted(pairs, key=lambda pc: one.score(*pc)) == by_cos
    assert sorted(pairs, key=lambda pc: zero.score(*pc)) == by_p


def test_rescore_keeps_the_tier_rule() -> None:
    mix = Mix(0.5, 0.0, 2.0)
    rows = [scored(1, 0.0, 1.0, tier="exact"), scored(0, 0.0, 0.99, tier="policy"),
            scored(1, 0.0, 0.05, tier="embedding"), scored(1, 0.9, 0.9),
            scored(0, 0.2, 0.3)]  # fmt: skip
    out = mix.rescore(rows, point(0.7))
    assert [s.hit for s in out] == [True, False, False, True, False]
    # served: z = 0.5 * logit(0.9) + 0.5 * (2 * 0.9); that is the new raw score too
    mixed = sigmoid(0.5 * math.log(9) + 0.9)
    assert out[3].raw == pytest.approx(mixed) and out[3].score == pytest.approx(mixed)
    # refused pairs report the cache's served score: exact 1.0, policy 0.0, the
    # others FLOOR * threshold * cosine (z = 0.5 * logit(0.2) + 0.5 * 0.6 < logit(0.7))
    assert out[0].score == 1.0 and out[1].score == 0.0
    assert out[2].score == pytest.approx(FLOOR * 0.7 * 0.05)
    assert out[4].score == pytest.approx(FLOOR * 0.7 * 0.3)
    # an exact repeat is served even when nothing can be certified
    assert mix.rescore(rows[:2], point(None))[0].hit and not mix.rescore(rows, point(None))[3].hit


def test_frontier_by_hand() -> None:
    # train: the cosine's log-odds are fitted on verifier rows only
    train = [scored(y, 0.5, c, "train") for y, c in [(0, 0.2), (1, 0.4), (0, 0.6), (1, 0.8)]]
    train.append(scored(1, 0.5, 0.0, "train", tier="policy"))  # left out of the fit
    # dev: 80 must-miss rows at 0.1 and 3 HIT rows at 0.9: with w = 0 the lowest
    # threshold whose one-sided 95% bound stays <= 0.05 is 0.9 (0 false hits;
    # a threshold of 0.1 would serve all 80)
    dev = [scored(0, 0.1, 0.5, "dev") for _ in range(80)] + [
        scored(1, 0.9, 0.9, "dev") for _ in range(3)
    ]
    test = [scored(1, 0.95, 0.9), scored(1, 0.5, 0.95), scored(0, 0.92, 0.7),
            scored(1, 0.0, 1.0, tier="exact"), scored(0, 0.0, 1.0, tier="policy")]  # fmt: skip
    pairs = [scored(1, 0.95, 0.8, "ext"), scored(0, 0.91, 0.9, "ext"),
             scored(1, 0.2, 0.95, "ext"), scored(0, 0.1, 0.3, "ext")]  # fmt: skip
    cosines = [0.8, 0.9, 0.95, 0.3]
    oof = [*dev, scored(1, 0.5, 0.5, "train"), scored(1, 0.05, 0.5, "train")]
    rows = frontier(train + dev + test, {"p.csv": (pairs, cosines)}, weights=(0.0,), oof=oof)
    (row,) = rows
    a, b = fit_cosine_odds([0.2, 0.4, 0.6, 0.8], [0, 1, 0, 1])
    assert row["cosine_log_odds"] == [a, b]
    expected = certify_threshold([s.raw for s in dev], [s.case.y for s in dev])
    assert row["threshold"] == expected.point.threshold == 0.9 and row["dev_fp"] == 0
    # test at 0.9: HIT 0.95 served, HIT 0.5 not, exact served: recall 2/3;
    # must-miss 0.92 served, the policy row not: FHR 1/2
    assert row["test"]["recall"] == pytest.approx(2 / 3) and row["test"]["fhr"] == 0.5
    # pair file at 0.9: serves the HIT at 0.95 and the must-miss at 0.91: FHR 1/2,
    # recall 1/2; the cosine at FHR 1/2 serves 0.95 (HIT), 0.9 (MISS), 0.8 (HIT): 1.0
    e = row["external"]["p.csv"]
    assert (e["fhr"], e["recall"], e["cos_recall_at_fhr"]) == (0.5, 0.5, 1.0)
    # out of fold, certified on itself: 0.5 is the lowest threshold with no false
    # hit (0.1 serves all 80 must-miss rows): 4 of 5 HIT rows
    assert row["oof"] == {"fhr": 0.0, "recall": 0.8}
    assert "oof" not in frontier(train + dev + test, {}, weights=(0.0,))[0]


def test_ablation_report_renders_the_mix_table() -> None:
    from scripts.ablate_verified_cache import markdown

    ext = {"fhr": 0.05, "recall": 0.28, "roc_auc": 0.74, "cos_recall_at_fhr": 0.30,
           "cos_roc_auc": 0.75}  # fmt: skip
    base = {"config": "(none: all features)", "test": {"fhr": 0.03, "recall": 0.8},
            "oof": {"recall": 0.81}, "external": {"m.csv": ext}}  # fmt: skip

    def mix(w: float, thr: float | None, fp: int, recall: float) -> dict[str, object]:
        e = {"fhr": 0.07, "recall": 0.25, "cos_recall_at_fhr": 0.3}
        return {"weight": w, "cosine_log_odds": [-1.5, 3.25], "threshold": thr, "dev_fp": fp,
                "test": {"fhr": 0.03, "recall": recall, "adversarial_fhr": 0.06},
                "oof": {"fhr": 0.04, "recall": recall * 0.99},
                "external": {"m.csv": e}}  # fmt: skip

    md = markdown([base], ["m.csv"], "2026-11-27T00:00:00Z", [mix(0.0, 0.786, 10, 0.82),
                                                              mix(1.0, None, 0, 0.0)])  # fmt: skip
    assert "(-1.50 +3.25 cos)" in md
    lines = md.splitlines()
    assert (
        lines[-2]
        == "| 0.0 | 0.786 (10) | 0.030 | 0.820 | 0.060 | 0.040 | 0.812 | 0.070 | 0.250 | -0.050 |"
    )
    nothing = "| 1.0 | serves nothing (0) | 0.030 | 0.000 | 0.060 | 0.040 | 0.000 |"
    assert lines[-1] == nothing + " 0.070 | 0.250 | -0.050 |"
    # without mixes there is no such section
    assert "Following the embedding" not in markdown([base], ["m.csv"], "t")


def test_ablation_report_renders_the_seed_spread() -> None:
    from scripts.ablate_verified_cache import markdown

    def row(seed: int, recall: float, oof: float, ext_recall: float) -> dict[str, object]:
        ext = {"fhr": 0.07, "recall": ext_recall, "roc_auc": 0.75, "cos_recall_at_fhr": 0.30,
               "cos_roc_auc": 0.74}  # fmt: skip
        return {"config": "(none: all features)", "seed_offset": seed,
                "test": {"fhr": 0.03, "recall": recall, "adversarial_fhr": 0.05},
                "oof": {"recall": oof}, "external": {"m.csv": ext}}  # fmt: skip

    seeds = [row(0, 0.82, 0.812, 0.26), row(100, 0.838, 0.806, 0.27)]
    md = markdown(seeds[:1], ["m.csv"], "t", seeds=seeds)
    # gaps -0.040 and -0.030; spreads read min to max
    assert "test recall 0.820 to 0.838; OOF recall 0.806 to 0.812; " in md
    assert "m.csv recall gap -0.040 to -0.030." in md
    assert "| 100 | 0.030 | 0.838 | 0.050 | 0.806 | 0.070 | -0.030 | +0.010 |" in md


def test_ablation_report_renders_from_its_json_record() -> None:
    from scripts.ablate_verified_cache import markdown, render

    ext = {"fhr": 0.07, "recall": 0.26, "roc_auc": 0.75, "cos_recall_at_fhr": 0.30,
           "cos_roc_auc": 0.74}  # fmt: skip
    row = {"config": "(none: all features)", "seed_offset": 0,
           "test": {"fhr": 0.03, "recall": 0.82, "adversarial_fhr": 0.05},
           "oof": {"recall": 0.81}, "external": {"m.csv": ext}}  # fmt: skip
    record = {"created": "t", "sets": ["m.csv"], "results": [row], "seeds": [row]}
    md = render(record)
    assert md == markdown([row], ["m.csv"], "t", (), [row])
    assert "## Seed noise" in md and "## Following the embedding further" not in md
