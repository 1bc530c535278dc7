"""The loader: the fixture loads; every bad line is reported as path:LINE."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cacheeval.dataset import load_bench, load_test_labels, row_problem
from cacheeval.schema import HIDDEN_TEST_FIELDS, LABELS
from cacheeval.support.jsonio import JsonlError, iter_jsonl
from tests.conftest import MINI_BENCH, MINI_LABELS


def _lines() -> list[dict[str, Any]]:
    return [value for _, value in iter_jsonl(MINI_BENCH)]


def _write(tmp_path: Path, records: list[Any], raw: dict[int, str] | None = None) -> Path:
    texts = [json.dumps(r, ensure_ascii=False) for r in records]
    for i, text in (raw or {}).items():
        texts[i] = text
    path = tmp_path / "bench.jsonl"
    path.write_text("\n".join(texts) + "\n", encoding="utf-8")
    return path


def test_fixture_shape(mini_rows: list[Any], public_rows: list[Any]) -> None:
    assert len(mini_rows) == len(public_rows) == 32
    assert Counter(r.label for r in mini_rows) == {
        "EQUIV": 9, "PARA_SAFE": 7, "RELATED_UNSAFE": 3, "ADVERSARIAL": 9, "UNRELATED": 4,
    }  # fmt: skip
    assert set(r.label for r in mini_rows) == set(LABELS)
    assert Counter(r.split for r in mini_rows) == {"train": 19, "dev": 8, "test": 5}
    assert len({r.domain for r in mini_rows}) == 10
    assert sum(r.binary_label == "HIT" for r in mini_rows) == 12
    assert any(r.verification_method == "policy_no_cache" for r in mini_rows)
    assert any(r.context_a for r in mini_rows) and any(r.tools_a for r in mini_rows)
    assert any(r.system_prompt_a for r in mini_rows)
    hidden = [r for r in public_rows if not r.is_labelled]
    assert [r.split for r in hidden] == ["test"] * 5
    assert all(getattr(r, f) is None for r in hidden for f in HIDDEN_TEST_FIELDS)
    for _, data in iter_jsonl(MINI_BENCH):
        assert row_problem(data) is None


def test_labels_file_restores_hidden_fields(mini_rows: list[Any]) -> None:
    labels = load_test_labels(MINI_LABELS)
    assert sorted(labels) == sorted(r.id for r in mini_rows if r.split == "test")
    by_id = {r.id: r for r in mini_rows}
    for rid, fields in labels.items():
        for f, value in fields.items():
            got = getattr(by_id[rid], f)
            assert (list(got) if isinstance(got, tuple) else got) == value


def _set(field: str, value: Any) -> Callable[[dict[str, Any]], dict[str, Any]]:
    return lambda r: {**r, field: value}


@pytest.mark.parametrize(
    ("mutate", "fragment"),
    [
        (_set("label", "SIMILAR"), "unknown label 'SIMILAR'"),
        (_set("domain", "poetry"), "unknown domain 'poetry'"),
        (_set("split", "holdout"), "unknown split 'holdout'"),
        (_set("binary_label", "HIT"), "binary_label HIT is inconsistent with label ADVERSARIAL"),
        (lambda r: {k: v for k, v in r.items() if k != "rationale"}, "missing field(s): rationale"),
        (_set("extra", 1), "unknown field(s): extra"),
        (_set("id", "cb-math-1"), "does not match cb-<domain>-<4 digits, or more"),
        (_set("id", "cb-math-01234"), "without a leading zero"),
        (_set("query_b", ""), "'query_b' must be a non-empty string"),
        (_set("context_a", [{"role": "user"}]), "context_a must be null or a list"),
        (_set("difficulty", "brutal"), "unknown difficulty 'brutal'"),
        (_set("verification_method", "vibes"), "unknown verification_method 'vibes'"),
    ],
)
def test_bad_row_names_path_and_line(
    tmp_path: Path, mutate: Callable[[dict[str, Any]], dict[str, Any]], fragment: str
) -> None:
    records = _lines()
    assert records[2]["label"] == "ADVERSARIAL"
    records[2] = mutate(records[2])
    path = _write(tmp_path, records)
    with pytest.raises(JsonlError) as info:
        load_bench(path)
    assert str(info.value).startswith(f"{path}:3: ")
    assert fragment in str(info.value)
    assert info.value.line == 3


def test_bad_json_names_line(tmp_path: Path) -> None:
    path = _write(tmp_path, _lines(), raw={4: '{"id": "cb-math-0001",'})
    with pytest.raises(JsonlError, match=rf"^{path}:5: not valid JSON"):
        load_bench(path)


def test_duplicate_id_names_both_lines(tmp_path: Path) -> None:
    records = _lines()
    records[7] = {**records[7], "id": records[1]["id"], "domain": records[1]["domain"]}
    path = _write(tmp_path, records)
    with pytest.raises(
        JsonlError, match=rf"^{path}:8: duplicate id '{records[1]['id']}' \(first on line 2\)"
    ):
        load_bench(path)


def test_duplicates_found_even_when_filtered_out(tmp_path: Path) -> None:
    records = _lines()
    records[7] = {**records[7], "id": records[1]["id"], "domain": records[1]["domain"]}
    path = _write(tmp_path, records)
    with pytest.raises(JsonlError, match="duplicate id"):
        load_bench(path, split="dev")


def test_hidden_row_may_not_leak_labels(tmp_path: Path) -> None:
    records = _lines()
    i = next(i for i, r in enumerate(records) if r["split"] == "test")
    records[i] = {**records[i], "rationale": "leaked"}
    path = _write(tmp_path, records)
    with pytest.raises(
        JsonlError, match=rf":{i + 1}: hidden test row carries withheld field\(s\): rationale"
    ):
        load_bench(path)
    records = _lines()
    j = next(j for j, r in enumerate(records) if r["split"] == "train")
    records[j] = {**records[j], **dict.fromkeys(HIDDEN_TEST_FIELDS)}
    with pytest.raises(JsonlError, match="only test rows may hide labels"):
        load_bench(_write(tmp_path, records))


def test_filters(public_rows: list[Any]) -> None:
    dev = load_bench(MINI_BENCH, split="dev")
    assert len(dev) == 8 and {r.split for r in dev} == {"dev"}
    math = load_bench(MINI_BENCH, domains=["math", "code"])
    assert {r.domain for r in math} == {"math", "code"} and len(math) == 8
    assert [r.id for r in load_bench(MINI_BENCH, split=["train", "dev"])] == [
        r.id for r in public_rows if r.split != "test"
    ]
    with pytest.raises(ValueError, match="unknown split"):
        load_bench(MINI_BENCH, split="holdout")
    with pytest.raises(ValueError, match="unknown domain"):
        load_bench(MINI_BENCH, domains=["poetry"])


def test_bad_labels_file(tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl"
    path.write_text('{"id": "cb-math-0001", "label": "EQUIV"}\n', encoding="utf-8")
    with pytest.raises(JsonlError, match=rf"^{path}:1: missing field\(s\): "):
        load_test_labels(path)
