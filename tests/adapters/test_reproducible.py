"""The verified cache's model comes out the same on any CPU: features at a fixed
precision (idempotent, stable under noise away from rounding midpoints), the same
model bytes and training-data hash when every feature moves by 1e-9, the committed
feature table read back bit for bit, the committed-model check that lists what
differs and never rewrites a file unless told to, and training-corpus rows that
train with their weight, replay from the table and are never scored out of fold."""

from __future__ import annotations

import dataclasses
import math
import random
from pathlib import Path

import pytest

pytest.importorskip("lightgbm")
np = pytest.importorskip("numpy")

from adapters.verified_cache.cache import Resources  # noqa: E402
from adapters.verified_cache.features import FEATURE_NAMES, quantize, quantize_features  # noqa: E402
from adapters.verified_cache.features.precision import DECIMALS, STEP  # noqa: E402
from adapters.verified_cache.model import data_sha256, train_booster  # noqa: E402
from adapters.verified_cache.reproduce import (  # noqa: E402
    GATE_COSINE,
    TABLE_FILE,
    check_committed,
    compare,
    read_table,
)
from adapters.verified_cache.training import (  # noqa: E402
    CORPUS_WEIGHT,
    PairCase,
    build_cases,
    case_from_record,
    fit_shipped,
    is_corpus,
    out_of_fold,
    table_bytes,
    table_records,
)

from .test_verified_cache import HashEmbedder, synthetic_rows  # noqa: E402

# --- the precision ----------------------------------------------------------------------


def test_quantize_is_idempotent() -> None:
    rnd = random.Random(11)
    values = [rnd.uniform(-1, 1) for _ in range(2000)] + [rnd.uniform(-50, 50) for _ in range(500)]
    for x in values:
        q = quantize(x)
        assert quantize(q) == q
        assert abs(q - x) <= STEP / 2 + 1e-12
        # on the decimal grid: printed with DECIMALS places it reads back exactly
        assert float(f"{q:.{DECIMALS}f}") == q


def test_quantize_is_stable_near_grid_points_and_splits_at_midpoints() -> None:
    for k in range(-10_000, 10_001, 37):
        grid = quantize(k * STEP)
        for noise in (1e-9, -1e-9, 3e-7, -3e-7, 4e-5, -4e-5):
            assert quantize(k * STEP + noise) == grid, (k, noise)
    # a value within the noise of a midpoint is the one case rounding cannot settle:
    # the committed feature table reports it (reproduce.compare)
    assert quantize(0.00015 - 1e-9) == 0.0001 and quantize(0.00015 + 1e-9) == 0.0002
    assert quantize(0.98765 - 1e-9) == 0.9876 and quantize(0.98765 + 1e-9) == 0.9877


def test_quantize_signs_and_missing_values() -> None:
    assert repr(quantize(-1e-9)) == "0.0" and repr(quantize(-0.0)) == "0.0"
    assert quantize(-0.123456) == -0.1235
    assert math.isnan(quantize(float("nan"))) and quantize(math.inf) == math.inf
    assert quantize_features([0.11111, 2, float("nan")])[:2] == (0.1111, 2.0)


# --- the same model from features 1e-9 apart ------------------------------------------


def _nudged(cases: list[PairCase], seed: int) -> list[PairCase]:
    """Every feature and query cosine moved by +-1e-9 (signs from a seeded RNG)."""
    rnd = random.Random(seed)

    def nudge(v: float) -> float:
        return v if math.isnan(v) else v + rnd.choice((-1e-9, 1e-9))

    return [
        dataclasses.replace(
            c,
            cos_query=nudge(c.cos_query),
            features=None if c.features is None else tuple(nudge(v) for v in c.features),
        )
        for c in cases
    ]


@pytest.fixture(scope="module")
def cases() -> list[PairCase]:
    return build_cases(synthetic_rows(), Resources(embedder=HashEmbedder()))


def test_features_perturbed_by_1e9_give_the_same_model(cases) -> None:
    base = fit_shipped(cases, data_id="d", embedder="hash")
    for seed in (1, 2):
        nudged = _nudged(cases, seed)
        assert any(n.features != c.features for n, c in zip(nudged, cases, strict=True))
        other = fit_shipped(nudged, data_id="d", embedder="hash")
        assert other.verifier.model_string() == base.verifier.model_string()
        assert other.verifier.meta == base.verifier.meta  # data and table sha256 included
        assert [s.raw for s in other.scored] == [s.raw for s in base.scored]


def test_booster_bytes_and_data_hash_ignore_1e9_noise() -> None:
    rnd = random.Random(5)
    X = [[rnd.uniform(-1, 1) for _ in FEATURE_NAMES] for _ in range(120)]
    y = [int(row[0] + row[1] > 0) for row in X]
    ids = [f"r{i}" for i in range(len(X))]
    noisy = [[v + rnd.choice((-1e-9, 1e-9)) for v in row] for row in X]
    params = {"monotone_constraints": [0] * len(FEATURE_NAMES)}
    a = train_booster(X, y, params=params, num_boost_round=30).model_to_string()
    b = train_booster(noisy, y, params=params, num_boost_round=30).model_to_string()
    assert a == b
    assert data_sha256(X, y, ids) == data_sha256(noisy, y, ids)
    # while an unrounded hash would have told them apart
    assert repr(X[0][0]) != repr(noisy[0][0])


# --- the committed feature table and the check ------------------------------------------


def test_feature_table_reads_back_bit_for_bit(tmp_path: Path, cases) -> None:
    (tmp_path / TABLE_FILE).write_bytes(table_bytes(cases))
    table = read_table(tmp_path)
    assert table_bytes(table) == table_bytes(cases)
    assert compare(cases, table).empty
    assert {c.split for c in table} == {"train", "dev"}  # never the test rows
    (tmp_path / TABLE_FILE).write_text('{"id": "x", "split": "train"}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=rf"{TABLE_FILE}:1: missing key"):
        read_table(tmp_path)


def _shifted(cases: list[PairCase], by: float) -> tuple[list[PairCase], str]:
    """``cases`` with the span cosine of the first train row that has features
    moved by ``by``; and that row's id."""
    i = next(i for i, c in enumerate(cases) if c.split == "train" and c.features is not None)
    feats = list(cases[i].features or ())
    k = FEATURE_NAMES.index("cos_context")
    feats[k] = quantize(feats[k] - by)
    out = list(cases)
    out[i] = dataclasses.replace(cases[i], features=tuple(feats))
    return out, cases[i].id


def _snapshot(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


def test_check_writes_only_when_told_and_then_reproduces(tmp_path: Path, cases) -> None:
    first = check_committed(cases, tmp_path, data_id="d", embedder="hash")
    assert not first.on_disk and not first.wrote and list(tmp_path.iterdir()) == []
    assert "--write-model" in first.status
    wrote = check_committed(cases, tmp_path, data_id="d", embedder="hash", write=True)
    assert wrote.wrote and wrote.on_disk
    files = _snapshot(tmp_path)
    assert set(files) == {"verifier.txt", "meta.json", TABLE_FILE}
    again = check_committed(cases, tmp_path, data_id="d", embedder="hash", write=True)
    assert again.status.startswith("reproduced:") and not again.wrote
    assert again.drift is not None and again.drift.empty
    assert _snapshot(tmp_path) == files


def test_cpu_noise_keeps_the_committed_model_and_says_what_differs(tmp_path: Path, cases) -> None:
    check_committed(cases, tmp_path, data_id="d", embedder="hash", write=True)
    files = _snapshot(tmp_path)
    noisy, rid = _shifted(cases, STEP)
    check = check_committed(noisy, tmp_path, data_id="d", embedder="hash")
    assert check.status.startswith("reproduced from the committed feature table")
    assert check.on_disk and not check.wrote
    assert check.shipped.verifier.model_string() == files["verifier.txt"].decode()
    assert check.drift is not None and check.drift.is_noise
    assert check.drift.lines() == [
        f"cos_context: 1 row(s) differ, max |difference| 0.0001 (row {rid})"
    ]
    # even when told to write: the committed model was reproduced from its table
    check_committed(noisy, tmp_path, data_id="d", embedder="hash", write=True)
    assert _snapshot(tmp_path) == files


def test_other_data_is_listed_and_never_written_silently(tmp_path: Path, cases) -> None:
    check_committed(cases, tmp_path, data_id="d", embedder="hash", write=True)
    files = _snapshot(tmp_path)
    changed, rid = _shifted(cases, 0.25)
    dropped = [c for c in changed if c.id != cases[-1].id]
    check = check_committed(dropped, tmp_path, data_id="d", embedder="hash")
    assert check.status.startswith("the committed model was trained on other data")
    assert not check.on_disk and not check.wrote
    assert _snapshot(tmp_path) == files
    assert check.drift is not None and not check.drift.is_noise
    lines = check.drift.lines()
    assert f"cos_context: 1 row(s) differ, max |difference| 0.25 (row {rid})" in lines
    if cases[-1].split in ("train", "dev"):
        assert lines[0] == f"1 rows only in the committed table ({cases[-1].id})"
    check_committed(dropped, tmp_path, data_id="d", embedder="hash", write=True)
    assert _snapshot(tmp_path) != files


def test_differences_are_named_per_feature_and_per_row() -> None:
    feats = (0.5,) + (0.0,) * (len(FEATURE_NAMES) - 1)
    a = PairCase("r", 1, "dev", "", "", "", "", "", 0.5, feats)
    b = dataclasses.replace(a, cos_query=0.4999, features=(0.4999,) + feats[1:])
    drift = compare([b], [a])
    assert drift.is_noise and drift.values == 1
    assert [f.name for f in drift.features] == ["cos_query"]
    # a row settled before the verifier keeps only its query cosine
    s = PairCase("s", 0, "dev", "", "", "", "exact", "", 1.0, None)
    drift = compare([dataclasses.replace(s, cos_query=0.99)], [s])
    assert not drift.is_noise and drift.features[0].name == GATE_COSINE
    # a tier or label that differs is a change of data, not noise
    drift = compare([dataclasses.replace(a, settled="policy", features=None)], [a])
    assert drift.changed == ("r",) and not drift.is_noise


# --- the training corpus: trains the model, weighted, never scored out of fold -----------


def _as_corpus(cases: list[PairCase], n: int) -> list[PairCase]:
    """The first ``n`` train cases again, as training-corpus rows (ids ``tr-...``,
    families of their own)."""
    train = [c for c in cases if c.split == "train"][:n]
    return [
        dataclasses.replace(c, id=f"tr-{c.domain}-{i:04d}", family=f"corpus#{i}")
        for i, c in enumerate(train, start=1)
    ]


def test_corpus_rows_train_the_model_with_their_weight_and_are_recorded(cases) -> None:
    extra = _as_corpus(cases, 40)
    assert all(is_corpus(c) for c in extra) and not any(is_corpus(c) for c in cases)
    plain = fit_shipped(cases, data_id="d", embedder="hash")
    both = fit_shipped(cases + extra, data_id="d", embedder="hash")
    training = both.verifier.meta.training
    assert training["corpus_rows_total"] == 40 and training["corpus_weight"] == CORPUS_WEIGHT
    assert plain.verifier.meta.training["corpus_rows_total"] == 0
    assert both.verifier.model_string() != plain.verifier.model_string()
    # the weight is part of the model: the same rows at full weight train another one
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("adapters.verified_cache.training.CORPUS_WEIGHT", 1.0)
        full = fit_shipped(cases + extra, data_id="d", embedder="hash")
    assert full.verifier.model_string() != both.verifier.model_string()
    # and the feature table (ids included) replays it byte for byte
    replay = fit_shipped(
        [case_from_record(r) for r in table_records(cases + extra)], data_id="d", embedder="hash"
    )
    assert replay.verifier.model_string() == both.verifier.model_string()
    assert replay.verifier.meta == both.verifier.meta
    # and features 1e-9 away give it too
    nudged = fit_shipped(_nudged(cases + extra, 3), data_id="d", embedder="hash")
    assert nudged.verifier.model_string() == both.verifier.model_string()
    assert nudged.verifier.meta == both.verifier.meta


def test_out_of_fold_never_scores_a_corpus_row(cases) -> None:
    extra = _as_corpus(cases, 40)
    oof = out_of_fold(cases + extra)
    assert [s.case.id for s in oof.scored] == [c.id for c in cases]
    assert set(oof.folds) == {c.id for c in cases}
