"""Why the verified cache refuses servable pairs, and the detector oracle
(adapters.verified_cache.diagnosis): counted by hand on inline fixtures; seed
offsets checked on the synthetic rows of test_verified_cache."""

from __future__ import annotations

import dataclasses
import statistics

import pytest

pytest.importorskip("lightgbm")

from adapters.verified_cache.cache import Resources  # noqa: E402
from adapters.verified_cache.diagnosis import (  # noqa: E402
    DETECTORS,
    REASONS,
    detectors_silenced_on_hits,
    fired,
    refusal_reason,
    refusals,
    seed_figures,
)
from adapters.verified_cache.features import FEATURE_NAMES  # noqa: E402
from adapters.verified_cache.model import default_params, seeded_params  # noqa: E402
from adapters.verified_cache.training import (  # noqa: E402
    PairCase,
    Scored,
    build_cases,
    fit_shipped,
    out_of_fold,
    summarize,
)

from .test_verified_cache import HashEmbedder, synthetic_rows  # noqa: E402


def features(**values: float) -> tuple[float, ...]:
    """A feature vector: similarities at 0.9, detectors at 0, then ``values``."""
    base = {n: (0.0 if n in DETECTORS else 0.9) for n in FEATURE_NAMES}
    base.update(values)
    return tuple(base[n] for n in FEATURE_NAMES)


def scored(y: int, hit: bool, tier: str = "verifier", **values: float) -> Scored:
    case = PairCase(id=f"r{len(values)}{y}{hit}{tier}{sorted(values)}", y=y, split="train",
                    domain="qa", label="PARAPHRASE" if y else "ADVERSARIAL", family="f",
                    settled="policy" if tier == "policy" else "", reason="", cos_query=0.9,
                    features=None if tier == "policy" else features(**values))  # fmt: skip
    return Scored(case, 0.5, tier, hit, 0.5)


def test_refusals_by_hand() -> None:
    rows = [
        scored(1, True, num_diff=1.0),  # served: not a refusal
        scored(1, False, "policy"),
        scored(1, False, "embedding"),
        scored(1, False, num_diff=1.0, num_any_diff=1.0, critical_diff=1.0),
        scored(1, False, entity_diff=1.0, num_diff=2.0, critical_diff=2.0),
        scored(1, False),  # nothing detected
        scored(0, False, num_diff=1.0),  # a must-miss pair refused: right
    ]
    r = refusals(rows)
    assert r["servable"] == 6 and r["refused"] == 5
    assert r["by_reason"] == dict(zip(REASONS, [1, 1, 2, 1], strict=True))
    # pooled counts (critical_diff, num_any_diff) are not named on their own
    assert r["by_detector"] == {"num_diff": 2, "entity_diff": 1}
    assert fired(rows[4].case) == tuple(
        n for n in FEATURE_NAMES if n in ("num_diff", "entity_diff")
    )
    with pytest.raises(ValueError):
        refusal_reason(rows[0])


def test_the_oracle_silences_detectors_on_hit_rows_only() -> None:
    hit, miss = scored(1, False, num_diff=1.0), scored(0, False, num_diff=1.0)
    policy = scored(1, False, "policy")
    out = detectors_silenced_on_hits([hit.case, miss.case, policy.case])
    assert out[0].features == features()  # every detector 0, similarities kept
    assert out[1] == miss.case and out[2] == policy.case
    assert dataclasses.replace(out[0], features=hit.case.features) == hit.case


def test_seed_offsets_retrain_with_other_draws() -> None:
    assert seeded_params(0) == default_params()
    moved = seeded_params(100)
    assert {k for k in moved if moved[k] != default_params()[k]} == {
        "seed", "bagging_seed", "feature_fraction_seed", "data_random_seed", "extra_seed",
    }  # fmt: skip
    rows = synthetic_rows()
    # a quarter of the dev rows become test rows, so the test split has figures
    rows = [dataclasses.replace(r, split="test") if r.split == "dev" and i % 4 == 0 else r
            for i, r in enumerate(rows)]  # fmt: skip
    cases = build_cases(rows, Resources(embedder=HashEmbedder()))
    zero, other = fit_shipped(cases), fit_shipped(cases, seed_offset=100)
    assert zero.verifier.model_string() != other.verifier.model_string()
    assert other.verifier.meta.training["params"]["bagging_seed"] == moved["bagging_seed"]
    fig = seed_figures(cases, [0, 100])
    first = fig["runs"][0]
    test = summarize([s for s in zero.scored if s.case.split == "test"])
    oof = summarize(out_of_fold(cases).scored)
    assert (first["test_fhr"], first["test_recall"]) == (test["fhr"], test["recall"])
    assert (first["oof_fhr"], first["oof_recall"]) == (oof["fhr"], oof["recall"])
    for key, mean in fig["mean"].items():
        assert mean == statistics.fmean(run[key] for run in fig["runs"])


def test_misses_report_renders_every_figure() -> None:
    from scripts.diagnose_verified_cache import markdown

    run = {"seed_offset": 0, "test_fhr": 0.03, "test_recall": 0.82, "oof_fhr": 0.04,
           "oof_recall": 0.812}  # fmt: skip
    oracle = {"seed_offset": 0, "test_fhr": 0.032, "test_recall": 0.9, "oof_fhr": 0.04,
              "oof_recall": 0.92}  # fmt: skip
    report = {
        "refusals": {"servable": 10, "refused": 3, "by_reason": dict.fromkeys(REASONS, 1) | {
            REASONS[3]: 0}, "by_detector": {"num_diff": 2}},
        "reference": {"runs": [run], "mean": {k: v for k, v in run.items() if k != "seed_offset"}},
        "oracle": {"runs": [oracle], "mean": {"test_fhr": 0.032, "test_recall": 0.9,
                                              "oof_fhr": None, "oof_recall": 0.92}},
    }  # fmt: skip
    md = markdown(report, "2026-11-27T00:00:00Z")
    assert "3 of 10 servable pairs refused" in md
    assert "| verifier: nothing detected | 0 |" in md and "| `num_diff` | 2 |" in md
    assert "| as shipped | 0 | 0.030 | 0.820 | 0.040 | 0.812 |" in md
    assert "| detectors silenced on HIT rows | **mean** | 0.032 | 0.900 | n/a | 0.920 |" in md


def test_zeroed_touches_only_the_named_columns_of_the_selected_rows() -> None:
    from adapters.verified_cache.diagnosis import zeroed

    a, b = scored(1, False, num_diff=2.0), scored(0, False, num_diff=2.0)
    out = zeroed([a.case, b.case], ["num_diff", "cos_query"], lambda c: c.y == 0)
    assert out[0] == a.case
    i, j = FEATURE_NAMES.index("num_diff"), FEATURE_NAMES.index("cos_query")
    new, old = out[1].features, b.case.features
    assert new is not None and old is not None and new[i] == new[j] == 0.0
    changed = [n for n, x, y in zip(FEATURE_NAMES, new, old, strict=True) if x != y]
    assert changed == [n for n in FEATURE_NAMES if n in ("num_diff", "cos_query")]
