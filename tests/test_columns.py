"""Scoring in columns and in streams: the compact path gives the report the
list path gives, the stream join matches ids whatever the order, and the
streaming predictions writer writes the same bytes as the list writer."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from cacheeval.baselines import ExactMatch
from cacheeval.reporting.report import IdCheck, build_report_from_columns, make_provenance
from cacheeval.results.columns import ScoreColumns, join_stream
from cacheeval.results.predictions import (
    Prediction,
    PredictionsWriter,
    iter_predictions,
    make_header,
    read_predictions,
    write_predictions,
)
from cacheeval.run.harness import predict, score
from cacheeval.schema import Row
from cacheeval.support.idset import IdSet
from tests.conftest import make_row


def _rows() -> list[Row]:
    labels = ("EQUIV", "PARA_SAFE", "RELATED_UNSAFE", "ADVERSARIAL", "UNRELATED")
    return [
        make_row(i, labels[i % 5], domain=("math", "code", "tool")[i % 3],
                 query_a=f"q{i}", query_b=f"q{i}" if i % 4 else f"other {i}")
        for i in range(1, 41)
    ]  # fmt: skip


def _stream_report(rows: list[Row], preds: list[Prediction]) -> tuple[object, object]:
    columns = ScoreColumns()
    seen = join_stream(iter(rows), iter(preds), columns)
    ids = IdCheck(seen.n_missing, tuple(seen.missing_ids), seen.n_extra, tuple(seen.extra_ids))
    prov = make_provenance(n_rows=len(columns), cache_name="c", created="X")
    return build_report_from_columns(columns, provenance=prov, ids=ids), seen


@pytest.mark.parametrize("order", ["same", "reversed", "shuffled"])
def test_stream_join_scores_like_the_list_join(order: str) -> None:
    rows = _rows()
    preds = predict(ExactMatch(), rows)
    kept = [p for i, p in enumerate(preds) if i % 9 != 3]  # 5 rows without a prediction
    kept.insert(5, Prediction("cb-math-9998", True, 1.0, 1.0, "exact", 1.0, None))
    kept.append(Prediction("not-a-row", True, 1.0, 1.0, "exact", 1.0, None))
    if order == "reversed":
        kept.reverse()
    elif order == "shuffled":
        random.Random(7).shuffle(kept)
    expected = score(kept, rows, cache_name="c", created="X")
    report, seen = _stream_report(rows, kept)
    assert report.to_dict()["ids"] == expected.to_dict()["ids"]
    strip = {"provenance", "ids"}
    assert {k: v for k, v in report.to_dict().items() if k not in strip} == {
        k: v for k, v in expected.to_dict().items() if k not in strip
    }
    assert seen.n_missing == 5 and seen.n_extra == 2 and seen.n_rows == 40


def test_stream_join_leaves_hidden_rows_and_their_predictions_out(
    public_rows: list[Row],
) -> None:
    preds = predict(ExactMatch(), public_rows)
    columns = ScoreColumns()
    seen = join_stream(iter(public_rows), iter(preds), columns)
    assert seen.n_hidden == 5 and len(columns) == len(public_rows) - 5
    assert seen.n_extra == 0 and seen.n_missing == 0
    assert seen.hidden_ids == [r.id for r in public_rows if not r.is_labelled]


def test_stream_join_rejects_duplicate_rows() -> None:
    rows = _rows()[:3]
    with pytest.raises(ValueError, match="duplicate row id"):
        join_stream(iter(rows + rows[:1]), iter([]), ScoreColumns())


def test_columns_keep_42_bytes_a_row() -> None:
    columns = ScoreColumns()
    for row, pred in zip(_rows(), predict(ExactMatch(), _rows()), strict=True):
        columns.add_row(row, pred)
    arrays = [getattr(columns, name) for name in ScoreColumns.__slots__]
    per_row = sum(a.itemsize for a in arrays if hasattr(a, "itemsize"))
    # 38 + the sub-score's and the perturbation kind's int16 codes
    assert per_row == 42 and len(columns) == 40


def test_id_set_tells_canonical_and_other_ids_apart() -> None:
    ids = IdSet()
    assert ids.add("cb-math-0007") and ids.add("cb-math-10007") and ids.add("cb-math-00007")
    assert not ids.add("cb-math-0007")
    assert "cb-math-10007" in ids and "cb-math-1007" not in ids and "cb-code-0007" not in ids
    assert "cb-math-00007" in ids and len(ids) == 3  # no canonical number: kept as a string
    big = "cb-math-999999999"  # too large for a bit array: kept as a string too
    assert ids.add(big) and big in ids and not ids.add(big)


def test_streaming_writer_writes_the_list_writers_bytes(tmp_path: Path) -> None:
    rows = _rows()
    preds = predict(ExactMatch(), rows)
    header = make_header(cache_name="exact", created="2026-01-01T00:00:00Z", split=None)
    write_predictions(tmp_path / "list.jsonl", header, preds)
    writer = PredictionsWriter(tmp_path / "stream.jsonl", header)
    for p in preds:
        writer.write(p)
    assert not (tmp_path / "stream.jsonl").exists()  # nothing in place before the end
    writer.commit()
    assert (tmp_path / "stream.jsonl").read_bytes() == (tmp_path / "list.jsonl").read_bytes()
    assert list(tmp_path.glob(".*.tmp")) == []


def test_streaming_writer_final_header_and_partial_file(tmp_path: Path) -> None:
    preds = predict(ExactMatch(), _rows())
    header = make_header(cache_name="exact", created="2026-01-01T00:00:00Z", split=None)
    writer = PredictionsWriter(tmp_path / "p.jsonl", header)
    for p in preds:
        writer.write(p)
    writer.commit(make_header(cache_name="exact", created="2026-01-01T00:00:00Z", split="dev"))
    got, back = read_predictions(tmp_path / "p.jsonl")
    assert got.split == "dev" and got.complete and back == preds
    writer = PredictionsWriter(tmp_path / "q.jsonl", header)
    for p in preds[:7]:
        writer.write(p)
    writer.commit_partial()
    got, back = read_predictions(tmp_path / "q.jsonl")
    assert not got.complete and back == preds[:7]
    writer = PredictionsWriter(tmp_path / "r.jsonl", header)
    writer.write(preds[0])
    writer.discard()
    assert not (tmp_path / "r.jsonl").exists() and list(tmp_path.glob(".*.tmp")) == []


def test_iter_predictions_reads_lazily_and_names_a_duplicate(tmp_path: Path) -> None:
    preds = predict(ExactMatch(), _rows()[:3])
    header = make_header(cache_name="exact", created="X")
    path = tmp_path / "p.jsonl"
    write_predictions(path, header, [*preds, preds[1]])
    got, stream = iter_predictions(path)
    assert got.cache_name == "exact"
    assert [next(stream).id for _ in range(3)] == [p.id for p in preds]  # fine so far
    with pytest.raises(ValueError, match=rf"{path}:5: duplicate id '{preds[1].id}' "
                                         r"\(first on line 3\)"):  # fmt: skip
        next(stream)
    assert json.loads(path.read_text(encoding="utf-8").splitlines()[0])["complete"] is True
