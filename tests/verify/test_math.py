"""The sympy checker on small hand-made rows: HITs, MISSes on every axis the
math domain uses, and inconsistent payloads that must stay undecided."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cacheeval.schema import HIT, MISS, Row
from cacheeval.verify import check_row
from cacheeval.verify import math as m


def make(
    task_a: dict[str, Any],
    ans_a: str,
    task_b: dict[str, Any] | None = None,
    ans_b: str | None = None,
    **payload: Any,
) -> Row:
    """A minimal labelled math row whose payload restates two tasks."""
    return Row(
        id="cb-math-9999",
        domain="math",
        subcategory="test",
        label="EQUIV",
        binary_label=HIT,
        difficulty="easy",
        query_a="query a",
        query_b="query b",
        context_a=None,
        context_b=None,
        system_prompt_a=None,
        system_prompt_b=None,
        tools_a=None,
        tools_b=None,
        expected_answer_a=ans_a,
        expected_answer_b=ans_a if ans_b is None else ans_b,
        rationale="test",
        verification_method="sympy",
        verification_payload={
            "kind": "sympy",
            "task_a": task_a,
            "task_b": task_a if task_b is None else task_b,
            **payload,
        },
        construction_method="curated",
        source="tests",
        real_world_grounding="tests",
        split="train",
    )


def solve(expr: str | list[str], var: str | list[str]) -> dict[str, Any]:
    return {"op": "solve", "expr": expr, "var": var}


def evaluate(expr: str, **extra: Any) -> dict[str, Any]:
    return {"op": "evaluate", "expr": expr, **extra}


# --- HIT ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("task_a", "ans_a", "task_b", "ans_b"),
    [
        (solve("x + 2 = 8", "x"), "x = 6", solve("x + 2 = 8", "x"), "x = 6"),
        # the same equation written differently, same variable
        (solve("3*x - 7 = 11", "x"), "x = 6", solve("3*x = 18", "x"), "x = 6"),
        (solve("x^2 - 5*x + 6 = 0", "x"), "x = 3 or x = 2", None, "x = 2 or x = 3"),
        (solve(["x + y = 10", "x - y = 2"], ["x", "y"]), "y = 4, x = 6", None, "x = 6, y = 4"),
        (evaluate("sin(pi/3)"), "sqrt(3)/2", evaluate("sin(60*pi/180)"), "sqrt(3)/2"),
        (
            evaluate("binomial(7, 3)"),
            "35",
            evaluate("factorial(7)/(factorial(3)*factorial(4))"),
            "35",
        ),
        (
            {"op": "integrate", "expr": "x", "var": "x"},
            "x**2/2 + C",
            {"op": "integrate", "expr": "x", "var": "x"},
            "(x**2 + 1)/2 + C",  # differs by a constant: both are antiderivatives
        ),
        (
            {"op": "convert", "value": 5, "from": "km", "to": "mile", "places": 2},
            "3.11 mi",
            {"op": "convert", "value": 5, "from": "kilometers", "to": "miles", "places": 2},
            "3.11 miles",
        ),
        (
            {"op": "inequality", "expr": "2*k + 5 < 17", "var": "k"},
            "k < 6",
            {"op": "inequality", "expr": "2*k < 12", "var": "k"},
            "k < 6",
        ),
        (evaluate("1/2 + 1/3", form="fraction"), "5/6", None, None),
        (evaluate("120*(1 - 30/100)", unit="$"), "$84", None, None),
    ],
)
def test_hit(
    task_a: dict[str, Any], ans_a: str, task_b: dict[str, Any] | None, ans_b: str | None
) -> None:
    check = m.check(make(task_a, ans_a, task_b, ans_b))
    assert check.binary == HIT, check.detail


# --- MISS -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("task_a", "ans_a", "task_b", "ans_b", "reason"),
    [
        # variable rename: same value, but the answer names the wrong variable
        (solve("x + 2 = 8", "x"), "x = 6", solve("a + 2 = 8", "a"), "a = 6", "results differ"),
        (evaluate("25/100*80"), "20", evaluate("20/100*80"), "16", "results differ"),
        (solve("3*x - 7 = 11", "x"), "x = 6", solve("3*x + 7 = 11", "x"), "x = 4/3", "differ"),
        (
            {"op": "diff", "expr": "x^3", "var": "x"},
            "3*x**2",
            {"op": "integrate", "expr": "x^3", "var": "x"},
            "x**4/4 + C",
            "results differ",
        ),
        (evaluate("log(100, 10)"), "2", evaluate("ln(100)", places=3), "4.605", "differ"),
        (
            {"op": "convert", "value": 5, "from": "mile", "to": "km", "places": 2},
            "8.05 km",
            {"op": "convert", "value": 5, "from": "km", "to": "mile", "places": 2},
            "3.11 miles",
            "results differ",
        ),
        (evaluate("2^10"), "1024", evaluate("10^2"), "100", "results differ"),
        (evaluate("binomial(7, 3)"), "35", evaluate("binomial(3, 7)"), "0", "results differ"),
        # output form: the same value, but a fraction is not a decimal
        (
            evaluate("1/2 + 1/3", form="fraction"),
            "5/6",
            evaluate("1/2 + 1/3", form="decimal", places=2),
            "0.83",
            "not a decimal",
        ),
        # rounding: the same quantity to a different number of places
        (evaluate("ln(20)", places=3), "2.996", evaluate("ln(20)", places=2), "3.00", "rounded"),
        # unit: the same number in a different unit
        (
            evaluate("240/4", unit="mph"),
            "60 mph",
            evaluate("240/4", unit="km/h"),
            "60 km/h",
            "differ",
        ),
        # factored vs expanded: equal expressions, wrong form
        (
            {"op": "expand", "expr": "(x + 3)^2"},
            "x**2 + 6*x + 9",
            {"op": "factor", "expr": "x^2 + 6*x + 9"},
            "(x + 3)**2",
            "not factored",
        ),
        (
            {"op": "inequality", "expr": "2*k + 5 < 17", "var": "k"},
            "k < 6",
            {"op": "inequality", "expr": "2*k + 5 > 17", "var": "k"},
            "k > 6",
            "results differ",
        ),
        (
            {"op": "stat", "stat": "stdev", "population": True, "data": [2, 4, 4, 4, 5, 5, 7, 9]},
            "2",
            {
                "op": "stat",
                "stat": "stdev",
                "population": False,
                "data": [2, 4, 4, 4, 5, 5, 7, 9],
                "places": 2,
            },
            "2.14",
            "results differ",
        ),
    ],
)
def test_miss(
    task_a: dict[str, Any], ans_a: str, task_b: dict[str, Any], ans_b: str, reason: str
) -> None:
    check = m.check(make(task_a, ans_a, task_b, ans_b))
    assert check.binary == MISS, check.detail
    assert reason in check.detail


# --- undecided (inconsistent rows) ---------------------------------------------------------


@pytest.mark.parametrize(
    ("row", "reason"),
    [
        (make(solve("x + 2 = 8", "x"), "x = 5"), "expected_answer_a does not answer"),
        (make(solve("x + 2 = 8", "x"), "a = 6"), "expected_answer_a does not answer"),
        (make(evaluate("3/8", form="decimal"), "3/8"), "not a decimal"),
        (make(evaluate("pi*9", form="exact", unit="cm^2"), "28.27 cm^2"), "not an exact value"),
        (make(evaluate("240/4", unit="mph"), "60"), "unit"),
        (make(evaluate("2^10"), "1024", evaluate("10^2"), "1024"), "expected_answer_b"),
        (make({"op": "frobnicate", "expr": "x"}, "x"), "unknown op"),
        (make(solve("x + 2", "x"), "x = 6"), "no relation sign"),
        (make(evaluate("x.__class__"), "1"), "allowed characters"),
        (make(evaluate("(1).real"), "1"), "allowed characters"),
        (make(evaluate("1/0"), "0"), "finite number"),
        (make(evaluate("2"), "2", tolerance=5), "tolerance"),
        (make({"op": "convert", "value": 5, "from": "kg", "to": "km"}, "5 km"), "cannot convert"),
        (make({"op": "stat", "stat": "variance", "data": [1, 2, 3]}, "1"), "population"),
        (make(evaluate("3/8", form="decimals"), "0.375"), "unknown form"),
        (make(evaluate("3/8", places=-1), "0"), "places"),
    ],
)
def test_undecided(row: Row, reason: str) -> None:
    check = m.check(row)
    assert check.binary is None
    assert reason in check.detail


def test_missing_task_is_undecided() -> None:
    row = make(evaluate("1"), "1")
    payload = {"kind": "sympy", "task_a": evaluate("1")}
    check = m.check(Row.from_dict({**row.to_dict(), "verification_payload": payload}))
    assert check.binary is None and "task_b" in check.detail


def test_registry_dispatches_to_this_checker() -> None:
    row = make(solve("x + 2 = 8", "x"), "x = 6", solve("a + 2 = 8", "a"), "a = 6")
    assert check_row(row).binary == MISS
    assert check_row(make(solve("x + 2 = 8", "x"), "x = 6")).binary == HIT


# --- computing tasks -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("task", "value"),
    [
        ({"op": "stat", "stat": "mean", "data": [4, 8, 15, 16, 23, 42]}, 18),
        ({"op": "stat", "stat": "median", "data": [4, 8, 15, 16, 23, 42]}, 15.5),
        ({"op": "stat", "stat": "range", "data": [2, 9, 1, 15, 3]}, 14),
        ({"op": "stat", "stat": "variance", "population": False, "data": [1, 2, 3, 4]}, 5 / 3),
        (
            {"op": "stat", "stat": "zscore", "value": 7, "population": True, "data": [3, 5, 7]},
            1.224744871391589,
        ),
        ({"op": "convert", "value": 212, "from": "°F", "to": "°C"}, 100),
        ({"op": "convert", "value": 0, "from": "°C", "to": "K"}, 273.15),
        ({"op": "convert", "value": 1, "from": "mile", "to": "ft"}, 5280),
        ({"op": "limit", "expr": "sin(x)/x", "var": "x", "point": 0}, 1),
        ({"op": "limit", "expr": "(1 + 1/n)^n", "var": "n", "point": "oo"}, 2.718281828459045),
        ({"op": "integrate", "expr": "x^2", "var": "x", "lower": 0, "upper": 3}, 9),
        (
            {"op": "integrate", "expr": "x^2", "var": "x", "lower": 0, "upper": 3, "average": True},
            3,
        ),
        ({"op": "diff", "expr": "x^2 + 3*x", "var": "x", "at": {"x": 2}}, 7),
        ({"op": "evaluate", "expr": "3*x - 7", "at": {"x": 11}}, 26),
        (
            {
                "op": "solve",
                "expr": ["x + y = 10", "x - y = 2"],
                "var": ["x", "y"],
                "target": "x*y",
            },
            24,
        ),
    ],
)
def test_compute_numbers(task: dict[str, Any], value: float) -> None:
    result = m.compute(task)
    assert result.kind == "number"
    assert float(result.value) == pytest.approx(value, rel=1e-12)


def test_compute_kinds_and_names() -> None:
    assert m.compute(solve("t^2 - 9 = 0", "t")).kind == "solutions"
    assert m.compute(solve("t^2 - 9 = 0", "t")).names == ("t",)
    assert m.compute({"op": "factor", "expr": "y^2 - 1"}).names == ("y",)
    assert m.compute({"op": "integrate", "expr": "6*t^2", "var": "t"}).kind == "antiderivative"
    assert m.compute({"op": "inequality", "expr": "x > 1", "var": "x"}).kind == "set"
    with pytest.raises(m.TaskError):
        m.compute(solve("x^2 = -1", "x"))  # no real solution


def test_unit_aliases() -> None:
    assert m.unit_key("kilometres") == m.unit_key("km") == "km"
    assert m.unit_key("miles") == m.unit_key("mi") == "mile"
    assert m.unit_key("furlongs") == "furlongs"


@settings(max_examples=40, deadline=None)
@given(
    coef=st.integers(1, 9),
    const=st.integers(-20, 20),
    rhs=st.integers(-20, 20),
    other=st.sampled_from(["a", "n", "t", "y"]),
)
def test_linear_rename_is_always_a_miss(coef: int, const: int, rhs: int, other: str) -> None:
    """For any c*x + d = r the cached 'x = v' serves the identical problem and
    never the same problem re-lettered."""
    from sympy import Rational

    value = Rational(rhs - const, coef)
    task_x = solve(f"{coef}*x + {const} = {rhs}", "x")
    task_o = solve(f"{coef}*{other} + {const} = {rhs}", other)
    assert m.check(make(task_x, f"x = {value}")).binary == HIT
    renamed = m.check(make(task_x, f"x = {value}", task_o, f"{other} = {value}"))
    assert renamed.binary == MISS
