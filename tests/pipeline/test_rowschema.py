"""row.schema.json: committed file == generator output, and it accepts and
rejects exactly what dataset.row_problem does."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from cacheeval.dataset import row_problem
from cacheeval.pipeline.assemble import label_record, public_row
from cacheeval.pipeline.rowschema import SCHEMA_PATH, schema_errors, schema_text, validator
from cacheeval.schema import HIDDEN_TEST_FIELDS, ROW_FIELDS

from .synthetic import synth_row


def _labelled(
    split: str = "train", domain: str = "math", label: str = "ADVERSARIAL"
) -> dict[str, Any]:
    row = synth_row(domain, 7, label).to_shard(f"cb-{domain}-0007")
    return {**row, "split": split}


def test_committed_schema_is_generated() -> None:
    assert SCHEMA_PATH.read_text(encoding="utf-8") == schema_text(), (
        "row.schema.json is stale: run python -m cacheeval.pipeline.rowschema"
    )


def test_root_accepts_labelled_and_public_test_rows() -> None:
    v = validator()
    for split in ("train", "dev", "test"):
        row = _labelled(split)
        assert schema_errors(v, row) == []
        assert row_problem(row) is None
    hidden = public_row(_labelled("test"))
    assert all(hidden[f] is None for f in HIDDEN_TEST_FIELDS)
    assert schema_errors(v, hidden) == []
    assert row_problem(hidden) is None
    assert list(hidden) == list(ROW_FIELDS)
    assert list(label_record(_labelled("test")))[1:] == list(HIDDEN_TEST_FIELDS)


def test_shard_row_definition_has_no_split() -> None:
    shard = validator("shard_row")
    row = _labelled()
    assert schema_errors(shard, row) == [
        "(row): Additional properties are not allowed ('split' was unexpected)"
    ]
    del row["split"]
    assert schema_errors(shard, row) == []
    with pytest.raises(KeyError):
        validator("no_such_def")


def _set(**kv: Any) -> Callable[[dict[str, Any]], None]:
    return lambda r: r.update(kv)


def _delete(field: str) -> Callable[[dict[str, Any]], None]:
    return lambda r: r.pop(field)


# Each mutation makes a row invalid; both the schema and row_problem must say so.
INVALID: list[tuple[str, Callable[[dict[str, Any]], None]]] = [
    ("missing field", _delete("rationale")),
    ("extra field", _set(note="x")),
    ("empty query", _set(query_b="")),
    ("null query", _set(query_a=None)),
    ("bad id", _set(id="math-7")),
    ("id of another domain", _set(id="cb-code-0007")),
    ("id digits", _set(id="cb-math-07")),
    ("unknown domain", _set(domain="poetry", id="cb-poetry-0007")),
    ("unknown split", _set(split="validation")),
    ("unknown label", _set(label="SAME")),
    ("unknown binary", _set(binary_label="YES")),
    ("inconsistent binary", _set(binary_label="HIT")),
    (
        "policy binary",
        _set(label="EQUIV", binary_label="HIT", verification_method="policy_no_cache"),
    ),
    ("unknown difficulty", _set(difficulty="extreme")),
    ("unknown method", _set(verification_method="vibes")),
    ("context not list", _set(context_a={"role": "user", "content": "hi"})),
    ("context turn", _set(context_b=[{"role": "user"}])),
    ("tools not objects", _set(tools_a=["get_weather"])),
    ("payload list", _set(verification_payload=[1])),
    ("subcategory number", _set(subcategory=3)),
    ("hidden on train", _set(**dict.fromkeys(HIDDEN_TEST_FIELDS))),
    ("hidden leaks", _set(split="test", **{**dict.fromkeys(HIDDEN_TEST_FIELDS), "rationale": "x"})),
    ("not an object", lambda r: r.clear()),
]

VALID: list[tuple[str, Callable[[dict[str, Any]], None]]] = [
    ("nullable provenance", _set(subcategory=None, source=None, expected_answer_a=None)),
    (
        "policy miss",
        _set(label="EQUIV", binary_label="MISS", verification_method="policy_no_cache"),
    ),
    ("context", _set(context_a=[{"role": "user", "content": "hi", "name": "u1"}])),
    ("tools", _set(tools_b=[{"type": "function", "function": {"name": "f"}}])),
    ("hidden test", _set(split="test", **dict.fromkeys(HIDDEN_TEST_FIELDS))),
]


@pytest.mark.parametrize("mutate", [m for _, m in INVALID], ids=[n for n, _ in INVALID])
def test_schema_and_row_problem_reject_together(mutate: Callable[[dict[str, Any]], None]) -> None:
    row = copy.deepcopy(_labelled())
    mutate(row)
    assert row_problem(row) is not None
    assert schema_errors(validator(), row) != []


@pytest.mark.parametrize("mutate", [m for _, m in VALID], ids=[n for n, _ in VALID])
def test_schema_and_row_problem_accept_together(mutate: Callable[[dict[str, Any]], None]) -> None:
    row = copy.deepcopy(_labelled())
    mutate(row)
    assert row_problem(row) is None
    assert schema_errors(validator(), row) == []


def test_every_domain_id_rule() -> None:
    from cacheeval.schema import DOMAINS

    v = validator()
    for d in DOMAINS:
        row = _labelled(domain=d, label="UNRELATED")
        assert schema_errors(v, row) == [], d
        other = next(x for x in DOMAINS if x != d)
        row["id"] = f"cb-{other}-0007"
        assert schema_errors(v, row) != [], d
