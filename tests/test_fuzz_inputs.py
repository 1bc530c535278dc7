"""Fuzz (hypothesis) of the file readers: ``load_bench``, the predictions
reader and ``import-pairs`` (CSV, TSV, JSONL) on arbitrary and hostile bytes.
Every outcome is a result or a :class:`~cacheeval.support.jsonio.JsonlError` naming
``path:LINE`` - never another exception - and the CLI turns it into exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cacheeval.benches.importers import ImportSpec, import_pairs
from cacheeval.cli import main
from cacheeval.dataset import load_bench
from cacheeval.results.predictions import read_predictions
from cacheeval.support.jsonio import JsonlError
from tests.conftest import MINI_BENCH
from tests.fuzz_bytes import hostile_bytes, hostile_records

FUZZ = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)

_BENCH_LINES = b"\n".join(MINI_BENCH.read_bytes().split(b"\n")[:3]) + b"\n"
_PREDICTIONS = (
    b'{"cacheeval_predictions": "1.0", "cache_name": "c", "cache_args": {}, '
    b'"package_version": "0", "dataset_sha256": null, "split": "test", '
    b'"created": "2026-01-01T00:00:00Z", "domains": null, "cost_per_call_usd": {}}\n'
    b'{"id": "cb-math-0001", "is_hit": true, "confidence": 0.5, "score": 0.25, '
    b'"tier_used": "embedding", "latency_ms": 1.5, "error": null}\n'
    b'{"id": "cb-math-0002", "is_hit": false, "confidence": null, "score": null, '
    b'"tier_used": "exact", "latency_ms": 0, "error": "Boom: x"}\n'
)
_CSV = b'q1,q2,dup\n"What is 2+2?","what\'s two plus two",1\nhello,"bye, now",0\n'
_TSV = b"q1\tq2\tdup\nWhat is 2+2?\twhat's two plus two\t1\nhello\tbye\t0\n"
_JSONL = b'{"q1": "a", "q2": "b", "dup": 1}\n{"q1": "c", "q2": "d", "dup": "0"}\n'
_BENCH_RECORDS = [json.loads(x) for x in _BENCH_LINES.splitlines()]
_PREDICTION_RECORDS = [json.loads(x) for x in _PREDICTIONS.splitlines()]
_JSONL_RECORDS = [json.loads(x) for x in _JSONL.splitlines()]
SPEC = ImportSpec(text_a="q1", text_b="q2", label="dup", positive="1", domain="qa_factual")


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


def _only_located_errors(path: Path, call: object) -> None:
    assert callable(call)
    try:
        call()
    except JsonlError as e:
        assert str(e).startswith(f"{path}:{e.line}: "), str(e)
        assert e.line >= 1


@FUZZ
@given(data=st.one_of(hostile_bytes(_BENCH_LINES), hostile_records(_BENCH_RECORDS)))
def test_load_bench_never_raises_anything_else(scratch: Path, data: bytes) -> None:
    path = scratch / "bench.jsonl"
    path.write_bytes(data)
    _only_located_errors(path, lambda: load_bench(path))


@FUZZ
@given(data=st.one_of(hostile_bytes(_PREDICTIONS), hostile_records(_PREDICTION_RECORDS)))
def test_read_predictions_never_raises_anything_else(scratch: Path, data: bytes) -> None:
    path = scratch / "predictions.jsonl"
    path.write_bytes(data)
    _only_located_errors(path, lambda: read_predictions(path))


@FUZZ
@given(data=st.one_of(hostile_bytes(_CSV, _TSV, _JSONL), hostile_records(_JSONL_RECORDS)))
@pytest.mark.parametrize("fmt", ["csv", "tsv", "jsonl"])
def test_import_pairs_never_raises_anything_else(scratch: Path, fmt: str, data: bytes) -> None:
    path = scratch / f"pairs.{fmt}"
    path.write_bytes(data)
    _only_located_errors(path, lambda: import_pairs(path, SPEC, fmt))


@settings(
    FUZZ,
    max_examples=40,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=hostile_bytes(_PREDICTIONS, _CSV))
def test_cli_exits_2_with_one_located_line(
    scratch: Path, capsys: pytest.CaptureFixture[str], data: bytes
) -> None:
    path = scratch / "pairs.csv"
    path.write_bytes(data)
    code = main(
        ["import-pairs", str(path), "--text-a", "q1", "--text-b", "q2", "--label", "dup",
         "--positive", "1", "--domain", "qa_factual", "--out", str(scratch / "rows.jsonl")]
    )  # fmt: skip
    err = capsys.readouterr().err
    assert code in (0, 2), err
    assert "Traceback" not in err
    if code == 2:
        assert err.startswith(f"import-pairs: {path}:"), err
