"""The math shard: counts, determinism, verification, uniqueness, counterbalance,
and that each query says what its machine-checkable task says."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from cacheeval.dataset import row_problem
from cacheeval.generators import math as gen
from cacheeval.pipeline.domains import MATRIX
from cacheeval.pipeline.generate import generate_shard
from cacheeval.schema import HIT, LABELS, Row
from cacheeval.support.layout import REPO_ROOT, SOURCES_DIR
from cacheeval.verify import check_row
from cacheeval.verify import math as checker


@pytest.fixture(scope="module")
def rows() -> list[dict[str, Any]]:
    return generate_shard("math")


def sides(rows: list[dict[str, Any]]) -> list[tuple[dict[str, Any], str, dict[str, Any]]]:
    """(row, query, task) for both sides of every row."""
    out = []
    for r in rows:
        p = r["verification_payload"]
        out.append((r, r["query_a"], p["task_a"]))
        out.append((r, r["query_b"], p["task_b"]))
    return out


# --- shape ---------------------------------------------------------------------------------


def test_label_counts_match_matrix(rows: list[dict[str, Any]]) -> None:
    counts = Counter(r["label"] for r in rows)
    assert tuple(counts[label] for label in LABELS) == MATRIX["math"]
    assert len(rows) == sum(MATRIX["math"]) == 160


def test_at_least_eight_subcategories(rows: list[dict[str, Any]]) -> None:
    subs = Counter(r["subcategory"] for r in rows)
    assert len(subs) >= 8
    # the axes the domain exists to test are all present
    for axis in ("variable_rename", "operand_change", "operator_swap", "direction_swap"):
        assert subs[axis] >= 2, axis
    for axis in ("argument_order", "output_form_change", "unit_change", "notation_variant"):
        assert subs[axis] >= 2, axis


def test_ids_sequential_and_unique(rows: list[dict[str, Any]]) -> None:
    assert [r["id"] for r in rows] == [f"cb-math-{i:04d}" for i in range(1, 161)]


def test_every_row_is_valid_and_verifies(rows: list[dict[str, Any]]) -> None:
    disagreements = []
    for r in rows:
        data = {**r, "split": "train"}
        assert row_problem(data) is None, r["id"]
        row = Row.from_dict(data)
        check = check_row(row)
        if check.binary != r["binary_label"]:
            disagreements.append((r["id"], check.detail))
    assert disagreements == []


def test_construction_and_source(rows: list[dict[str, Any]]) -> None:
    for r in rows:
        assert r["construction_method"] == gen.CONSTRUCTION[r["label"]]
        path, _, item = r["source"].partition("#")
        assert path.startswith("sources/math/") and path.endswith(".json") and item
        assert (REPO_ROOT / path).is_file()
        assert r["verification_method"] == "sympy"
        assert r["verification_payload"]["kind"] == "sympy"


# --- uniqueness ----------------------------------------------------------------------------------


def test_rationales_unique_down_to_sentences(rows: list[dict[str, Any]]) -> None:
    assert len({r["rationale"] for r in rows}) == len(rows)
    sentences = Counter(
        s for r in rows for s in re.split(r"(?<=[.!?])\s+(?=[A-Z])", r["rationale"])
    )
    assert [s for s, n in sentences.items() if n > 1] == []


def test_no_duplicate_pairs_or_identical_sides(rows: list[dict[str, Any]]) -> None:
    seen: set[tuple[str, str]] = set()
    for r in rows:
        a, b = r["query_a"], r["query_b"]
        assert a != b, r["id"]
        assert (a, b) not in seen and (b, a) not in seen, r["id"]
        seen.add((a, b))


# --- counterbalance ---------------------------------------------------------------------------


def _names(task: dict[str, Any]) -> set[str]:
    return set(checker.compute(task).names)


def test_variables_of_miss_rows_also_occur_in_hit_rows(rows: list[dict[str, Any]]) -> None:
    hit_names: set[str] = set()
    miss_names: set[str] = set()
    for r, _, task in sides(rows):
        (hit_names if r["binary_label"] == HIT else miss_names).update(_names(task))
    assert {"a", "b", "n", "t", "y"} <= miss_names
    assert miss_names <= hit_names


@pytest.mark.parametrize(
    "token",
    ["derivative", "integral", "fraction", "decimal", "km", "miles", "ln", "log", "choose", "%"],
)
def test_flip_tokens_also_appear_unchanged_in_hit_rows(
    rows: list[dict[str, Any]], token: str
) -> None:
    """A token that separates MISS pairs must also sit on both sides of a HIT pair."""
    hit_both = [
        r
        for r in rows
        if r["binary_label"] == HIT
        and token in r["query_a"].lower()
        and token in r["query_b"].lower()
    ]
    miss_any = [r for r in rows if r["binary_label"] != HIT and token in r["query_b"].lower()]
    assert hit_both and miss_any, token


def test_orientation_is_mixed() -> None:
    """The derived request sits on the query_b side in roughly half of the HIT
    rows and half of the MISS rows, so the perturbed wording is no cue."""
    flipped: dict[str, list[bool]] = {"HIT": [], "MISS": []}
    for fam in gen.load_families(SOURCES_DIR / "math"):
        for v in fam.variants:
            row = gen.variant_row(fam, v)
            flipped[row.binary_label].append(row.query_a == v.request.q)
    for binary, flags in flipped.items():
        assert 0.35 <= sum(flags) / len(flags) <= 0.65, (binary, sum(flags), len(flags))


# --- query text vs machine restatement -----------------------------------------------------------

_OP_WORDS: dict[str, tuple[str, ...]] = {
    "diff": ("derivative", "differentiate", "slope"),
    "integrate": ("integral", "antiderivative", "area under", "\\int", "average value"),
    "limit": ("limit", "lim ", "approach"),
    "factor": ("factor",),
    "expand": ("expand", "multiply out"),
    "simplify": ("simplify", "reduce"),
    "inequality": ("<", ">", "less than", "greater than"),
    "convert": ("convert", "how many", " in "),
}
_STAT_WORDS = {
    "mean": "mean",
    "median": "median",
    "stdev": "standard deviation",
    "zscore": "z-score",
}
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def _query_numbers(query: str) -> set[str]:
    """Numbers a query states, skipping exponents (x^2) and thousands separators."""
    q = re.sub(r"(?<=\d),(?=\d{3})", "", query)
    q = re.sub(r"(\^|\*\*)\{?\d+\}?", " ", q)
    return set(_NUMBER.findall(q)) - {"1"}


def test_variables_named_in_task_appear_in_query(rows: list[dict[str, Any]]) -> None:
    for r, query, task in sides(rows):
        for name in _names(task):
            assert re.search(rf"(?<![A-Za-z]){name}(?![A-Za-z])", query), (r["id"], name, query)


def test_numbers_in_query_appear_in_task(rows: list[dict[str, Any]]) -> None:
    for r, query, task in sides(rows):
        stated = _query_numbers(query)
        in_task = set(_NUMBER.findall(json.dumps(task)))
        assert stated <= in_task, (r["id"], query, stated - in_task)


def test_operation_and_form_are_stated_in_query(rows: list[dict[str, Any]]) -> None:
    for r, query, task in sides(rows):
        q = query.lower()
        words = _OP_WORDS.get(task["op"], ())
        if words:
            assert any(w in q for w in words), (r["id"], task["op"], query)
        if task["op"] == "stat":
            assert _STAT_WORDS[task["stat"]] in q or (task["stat"] == "mean" and "average" in q), (
                r["id"],
                query,
            )
            if "population" in task and task["stat"] != "zscore":
                assert ("population" if task["population"] else "sample") in q, r["id"]
        form = task.get("form")
        if form in ("fraction", "decimal"):
            assert form in q, (r["id"], query)
        if form == "exact":
            assert "pi" in q or "π" in q or "exact" in q, (r["id"], query)
        if task.get("places") is not None and task["op"] != "convert" and not task.get("unit"):
            assert "decimal" in q or "round" in q, (r["id"], query)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("What is 3 choose 7?", {"op": "evaluate", "expr": "binomial(3, 7)"}),
        ("Solve 3a - 7 = 11", {"op": "solve", "expr": "3*a - 7 = 11", "var": "a"}),
        (
            "convert 5 kilometres to miles",
            {"op": "convert", "value": 5, "from": "km", "to": "mile", "unit": "miles", "places": 2},
        ),
        (
            "Evaluate the integral of x^2 from 3 to 0.",
            {"op": "integrate", "expr": "x^2", "var": "x", "lower": 3, "upper": 0},
        ),
        (
            "A price goes from $50 to $40. What's the percentage decrease?",
            {"op": "evaluate", "expr": "(50 - 40)/50*100", "unit": "%"},
        ),
        (
            "Find the second derivative of x^3 + 2x^2 - 5x",
            {"op": "diff", "expr": "x^3 + 2*x^2 - 5*x", "var": "x", "order": 2},
        ),
    ],
)
def test_spot_check_restatements(
    rows: list[dict[str, Any]], query: str, expected: dict[str, Any]
) -> None:
    found = [task for _, q, task in sides(rows) if q == query]
    assert found and all(task == expected for task in found), (query, found)


# --- fixture errors ------------------------------------------------------------------------------


def test_bad_fixture_names_file_and_line(tmp_path: Path) -> None:
    src = tmp_path / "math"
    src.mkdir()
    for name in (*gen.FAMILY_FILES, gen.UNRELATED_FILE):
        (src / name).write_text((SOURCES_DIR / "math" / name).read_text("utf-8"), "utf-8")
    text = (src / "calculus.json").read_text("utf-8")
    broken = text.replace(
        '"label": "ADVERSARIAL", "sub": "operator_swap"', '"label": "ADVERSRIAL"', 1
    )
    (src / "calculus.json").write_text(broken, "utf-8")
    with pytest.raises(gen.FixtureError, match=r"calculus\.json:\d+: family 'derivative-cubic'"):
        gen.generate(tmp_path / "math")
    (src / "calculus.json").write_text(text[:200], "utf-8")
    with pytest.raises(gen.FixtureError, match=r"calculus\.json:\d+: not valid JSON"):
        gen.generate(tmp_path / "math")
