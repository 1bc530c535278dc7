"""Math check: recompute both problems with sympy and ask whether the cached
answer is a correct, complete answer to query_b.

Payload::

    {"kind": "sympy",
     "task_a": TASK,          # machine restatement of query_a
     "task_b": TASK,          # machine restatement of query_b
     "tolerance": 1e-9}       # optional; relative numeric tolerance

A TASK is an object with an ``op`` and op-specific keys. Expressions are sympy
syntax (``^`` is accepted for ``**``; ``ln`` is the natural log, ``log(v, b)``
the base-``b`` log; every single letter is a symbol, so write ``exp(1)``, not
``e``). Decimals are read as exact rationals.

==============  ==========================================  ====================
op              keys                                        result
==============  ==========================================  ====================
solve           expr (equation or list), var (name or       solutions; a number
                list); optional target (an expression       when ``target``
                evaluated at the unique solution)           is given
inequality      expr (one inequality), var                  a set of reals
simplify        expr                                        expression
expand          expr                                        expression
factor          expr                                        expression
diff            expr, var; optional order (1), at           expression; a number
                ({var: value})                              when ``at`` is given
integrate       expr, var; optional lower + upper, and      antiderivative; a
                average (true: divide by upper - lower)     number when bounded
limit           expr, var, point (``oo`` allowed);          number
                optional dir ("+" or "-")
evaluate        expr; optional at ({name: value, ...})      number
convert         value, from, to (unit names, see UNITS)     number in ``to``
stat            data (list), stat (mean, median, mode,      number
                range, variance, stdev, zscore); population
                (bool) for variance/stdev/zscore; value
                for zscore
==============  ==========================================  ====================

Every task may also carry ``unit`` (the unit the answer must state; for
``convert`` it defaults to ``to``), ``form`` ("exact", "fraction", "decimal",
"integer") and ``places`` (the answer is rounded to that many decimals).

Answer formats (``expected_answer_a`` / ``expected_answer_b``):

- solutions: ``x = 6``; ``x = 2 or x = 3`` (alternatives); ``x = 6, y = 4``
  (a system). Each name must be the task's variable.
- set: one relation in the variable, ``x >= 6``.
- expression: sympy syntax, ``3*x**2 + 4*x - 5``; an antiderivative carries the
  constant ``C``: ``x**4/4 + C``.
- number: the value, then the unit: ``20``, ``3/4``, ``0.375``, ``25%``,
  ``$315.25`` (``$`` leads), ``8.05 km`` (one space before any other unit).

Decision. Let R_a, R_b be the recomputed results and A the cached answer
(``expected_answer_a``). The row is *inconsistent* (undecided) when a task
cannot be computed or an expected answer does not answer its own task. Else::

    HIT  iff  R_a == R_b  (same kind, same variables, values within tolerance,
                           same unit)
         and  A answers task_b (value, variable names, unit, and the
                           requested form/places all as query_b asks)

Numbers are equal when ``|u - v| <= tolerance * max(1, |v|)``; a rounded
answer (``places = n``) must show exactly n decimals and lie within
``0.5 * 10**-n`` of the exact value. Expressions are equal when their
difference simplifies to 0; ``factor``/``expand``/``simplify`` also require
the answer to be in that form (factored: unchanged by ``factor``; expanded:
unchanged by ``expand``; simplified: no more operations than sympy's result).
An antiderivative answers an integration task when it contains ``C`` and its
derivative is the integrand.

Expression text is screened by a character whitelist before sympy parses it,
and sympy is imported lazily, so importing :mod:`cacheeval.verify` stays cheap.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ..schema import HIT, MISS, Row
from .result import Check

DEFAULT_TOLERANCE = 1e-9

#: Answer forms a task may demand (None: any form of the right value).
FORMS: tuple[str | None, ...] = (None, "exact", "fraction", "decimal", "integer")

#: Exact factors to a base unit per dimension (length m, mass kg, volume L,
#: speed m/s). Temperature is affine and handled separately.
UNITS: dict[str, tuple[str, Fraction]] = {
    "m": ("length", Fraction(1)),
    "km": ("length", Fraction(1000)),
    "cm": ("length", Fraction(1, 100)),
    "mm": ("length", Fraction(1, 1000)),
    "mile": ("length", Fraction("1609.344")),
    "yd": ("length", Fraction("0.9144")),
    "ft": ("length", Fraction("0.3048")),
    "in": ("length", Fraction("0.0254")),
    "kg": ("mass", Fraction(1)),
    "g": ("mass", Fraction(1, 1000)),
    "lb": ("mass", Fraction("0.45359237")),
    "oz": ("mass", Fraction("0.028349523125")),
    "L": ("volume", Fraction(1)),
    "mL": ("volume", Fraction(1, 1000)),
    "gal": ("volume", Fraction("3.785411784")),
    "m/s": ("speed", Fraction(1)),
    "km/h": ("speed", Fraction(1000, 3600)),
    "mph": ("speed", Fraction("1609.344") / 3600),
    "°C": ("temperature", Fraction(1)),
    "°F": ("temperature", Fraction(1)),
    "K": ("temperature", Fraction(1)),
}

#: Spellings of a unit that name the same unit (answer ``3.11 miles`` states "mile").
UNIT_ALIASES: dict[str, str] = {
    "meter": "m",
    "meters": "m",
    "metres": "m",
    "kilometer": "km",
    "kilometers": "km",
    "kilometres": "km",
    "centimeters": "cm",
    "mi": "mile",
    "miles": "mile",
    "feet": "ft",
    "foot": "ft",
    "inches": "in",
    "yards": "yd",
    "kilograms": "kg",
    "grams": "g",
    "lbs": "lb",
    "pounds": "lb",
    "ounces": "oz",
    "liters": "L",
    "litres": "L",
    "gallons": "gal",
    "kph": "km/h",
    "C": "°C",
    "F": "°F",
    "kelvin": "K",
}

_SAFE_TEXT = re.compile(r"^[0-9A-Za-z_+\-*/^().,=<>! ]+$")
_ATTRIBUTE = re.compile(r"\.\s*[A-Za-z_(]")  # a dot may only start decimals, never x.attr
_NAME = re.compile(r"^[A-Za-z]\w*$")
_FRACTION = re.compile(r"^-?\d+/\d+$")
_DECIMAL = re.compile(r"^-?\d+\.\d+$")
_INTEGER = re.compile(r"^-?\d+$")
_FUNCTIONS = (
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "sqrt",
    "exp",
    "log",
    "binomial",
    "factorial",
    "Abs",
    "pi",
    "oo",
    "Rational",
    "lcm",
    "gcd",
)


class TaskError(ValueError):
    """A task or an answer that cannot be parsed or computed."""


@dataclass(frozen=True, slots=True)
class Result:
    """One recomputed task result.

    ``kind``: "number", "solutions", "set", "expr" or "antiderivative".
    ``value``: a sympy number; a tuple of solutions (each a tuple of
    ``(name, value)`` pairs sorted by name); a sympy Set; an expression; or
    the integrand (antiderivative). ``names``: the variable names the answer
    must use. ``unit``: the canonical unit a number carries, or None.
    """

    kind: str
    value: Any
    names: tuple[str, ...] = ()
    unit: str | None = None


# --- parsing ---------------------------------------------------------------------


def unit_key(unit: str) -> str:
    """The canonical name of a unit spelling (unknown units stand for themselves)."""
    u = unit.strip()
    return UNIT_ALIASES.get(u, u)


def _namespace() -> dict[str, Any]:
    import sympy

    ns: dict[str, Any] = {name: getattr(sympy, name) for name in _FUNCTIONS}
    ns["ln"] = sympy.log
    # Every single letter is a plain symbol: sympy's own E, I, N, S, O, Q would
    # otherwise turn a variable into a constant or a function.
    for code in range(ord("a"), ord("z") + 1):
        for ch in (chr(code), chr(code).upper()):
            ns[ch] = sympy.Symbol(ch)
    return ns


def parse(text: Any) -> Any:
    """Parse one expression (``^`` as power, decimals as exact rationals)."""
    from sympy.parsing.sympy_parser import (
        convert_xor,
        parse_expr,
        rationalize,
        standard_transformations,
    )

    if not isinstance(text, str) or not _SAFE_TEXT.match(text) or _ATTRIBUTE.search(text):
        raise TaskError(f"not an expression in the allowed characters: {text!r}")
    from sympy import Expr

    try:
        out = parse_expr(
            text,
            local_dict=_namespace(),
            transformations=(*standard_transformations, convert_xor, rationalize),
        )
    except Exception as e:  # sympy raises many types; all mean "cannot parse"
        raise TaskError(f"cannot parse {text!r}: {type(e).__name__}") from None
    if not isinstance(out, Expr):  # e.g. "x < 2" parses to a relation
        raise TaskError(f"{text!r} is not an expression")
    return out


def parse_relation(text: str) -> Any:
    """Parse ``lhs = rhs`` (an equation) or an inequality with < <= > >=."""
    import sympy

    for op, build in (
        (">=", sympy.Ge),
        ("<=", sympy.Le),
        (">", sympy.Gt),
        ("<", sympy.Lt),
        ("=", sympy.Eq),
    ):
        if op in text:
            lhs, _, rhs = text.partition(op)
            return build(parse(lhs), parse(rhs), evaluate=False)
    raise TaskError(f"no relation sign in {text!r}")


def _number(value: Any) -> Any:
    import sympy

    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise TaskError(f"expected an integer or a numeric string, got {value!r}")
    out = parse(str(value))
    if not isinstance(out, sympy.Expr) or out.free_symbols:
        raise TaskError(f"not a number: {value!r}")
    return out


def _names(task: dict[str, Any]) -> tuple[str, ...]:
    var = task.get("var")
    names = [var] if isinstance(var, str) else var
    if (
        not isinstance(names, list)
        or not names
        or not all(isinstance(n, str) and _NAME.match(n) for n in names)
    ):
        raise TaskError(f"task needs var as a name or a list of names, got {var!r}")
    return tuple(names)


# --- computing a task ---------------------------------------------------------------


def compute(task: Any) -> Result:
    """Recompute one task; raises :class:`TaskError` on a malformed task."""
    import sympy

    if not isinstance(task, dict):
        raise TaskError("task must be an object")
    op = task.get("op")
    unit = task.get("unit")
    if unit is not None and not isinstance(unit, str):
        raise TaskError("unit must be a string")
    unit_k = unit_key(unit) if unit else None
    if task.get("form") not in FORMS:
        raise TaskError(f"unknown form {task.get('form')!r} (expected one of {FORMS[1:]})")
    places = task.get("places")
    if places is not None and (
        isinstance(places, bool) or not isinstance(places, int) or places < 0
    ):
        raise TaskError(f"places must be a non-negative integer, got {places!r}")

    def number(value: Any) -> Result:
        value = sympy.nsimplify(value) if isinstance(value, sympy.Float) else value
        if not isinstance(value, sympy.Expr) or value.free_symbols or not value.is_finite:
            raise TaskError(f"{op} did not produce a finite number: {value}")
        return Result("number", value, (), unit_k)

    if op in ("solve", "inequality"):
        return _solve(task, op, number)

    if op in ("simplify", "expand", "factor"):
        expr = parse(task.get("expr"))
        fn = {"simplify": sympy.simplify, "expand": sympy.expand, "factor": sympy.factor}[op]
        return _expr_result(fn(expr))

    if op in ("diff", "integrate", "limit"):
        return _calculus(task, op, number)

    if op == "evaluate":
        expr = parse(task.get("expr"))
        at = task.get("at")
        if at is not None:
            if not isinstance(at, dict) or not all(isinstance(k, str) for k in at):
                raise TaskError("evaluate at must map names to values")
            expr = expr.subs({sympy.Symbol(k): _number(v) for k, v in sorted(at.items())})
        return number(sympy.simplify(expr))

    if op == "convert":
        src, dst = task.get("from"), task.get("to")
        if not isinstance(src, str) or not isinstance(dst, str):
            raise TaskError("convert needs unit names from and to")
        src_k, dst_k = unit_key(src), unit_key(dst)
        if src_k not in UNITS or dst_k not in UNITS:
            raise TaskError(f"unknown unit in {src!r} -> {dst!r}")
        if UNITS[src_k][0] != UNITS[dst_k][0]:
            raise TaskError(f"cannot convert {src!r} to {dst!r}")
        value = _number(task.get("value"))
        converted = _convert(value, src_k, dst_k)
        return Result("number", converted, (), unit_k or dst_k)

    if op == "stat":
        return number(_statistic(task))

    raise TaskError(f"unknown op {op!r}")


def _solve(task: dict[str, Any], op: str, number: Callable[[Any], Result]) -> Result:
    """``solve`` (equations: every real solution, or ``target`` at the unique
    one) and ``inequality`` (one inequality in one variable: its real set)."""
    import sympy

    names = _names(task)
    syms = [sympy.Symbol(n) for n in names]
    exprs = task.get("expr")
    exprs = [exprs] if isinstance(exprs, str) else exprs
    if not isinstance(exprs, list) or not exprs:
        raise TaskError("solve needs expr as an equation or a list of equations")
    rels = [parse_relation(e) for e in exprs]
    if op == "inequality":
        if len(rels) != 1 or len(syms) != 1 or isinstance(rels[0], sympy.Eq):
            raise TaskError("inequality needs one inequality in one variable")
        return Result("set", sympy.solveset(rels[0], syms[0], sympy.S.Reals), names)
    if not all(isinstance(r, sympy.Eq) for r in rels):
        raise TaskError("solve needs equations (use op inequality for < <= > >=)")
    sols = sympy.solve(rels, syms, dict=True)
    real = [s for s in sols if all(v.is_real for v in s.values())]
    if not real or any(set(s) != set(syms) for s in real):
        raise TaskError(f"solve found no complete real solution for {exprs}")
    if "target" in task:
        if len(real) != 1:
            raise TaskError("target needs a unique solution")
        return number(sympy.simplify(parse(task["target"]).subs(real[0])))
    return Result("solutions", _solution_tuple(real), tuple(sorted(names)))


def _calculus(task: dict[str, Any], op: str, number: Callable[[Any], Result]) -> Result:
    """``diff`` (optionally at a point), ``integrate`` (antiderivative, definite,
    or average over an interval) and ``limit`` (one- or two-sided)."""
    import sympy

    (name,) = _names(task)
    x = sympy.Symbol(name)
    if op == "diff":
        order = task.get("order", 1)
        if not isinstance(order, int) or isinstance(order, bool) or order < 1:
            raise TaskError("diff order must be a positive integer")
        d = sympy.diff(parse(task.get("expr")), x, order)
        at = task.get("at")
        if at is not None:
            if not isinstance(at, dict) or set(at) != {name}:
                raise TaskError(f"diff at must be {{{name!r}: value}}")
            return number(sympy.simplify(d.subs(x, _number(at[name]))))
        return _expr_result(d)
    if op == "integrate":
        f = parse(task.get("expr"))
        lower, upper = task.get("lower"), task.get("upper")
        if (lower is None) != (upper is None):
            raise TaskError("integrate needs both lower and upper, or neither")
        if lower is not None:
            lo, hi = _number(lower), _number(upper)
            area = sympy.integrate(f, (x, lo, hi))
            if task.get("average") is True:
                if lo == hi:
                    raise TaskError("average over an empty interval")
                area = area / (hi - lo)
            return number(sympy.simplify(area))
        return Result("antiderivative", f, (name,))
    direction = task.get("dir", "+-")
    if direction not in ("+", "-", "+-"):
        raise TaskError("limit dir must be '+' or '-'")
    point = task.get("point")
    pt = sympy.oo if point == "oo" else -sympy.oo if point == "-oo" else _number(point)
    if pt.is_infinite:
        direction = "-" if pt == sympy.oo else "+"
    return number(sympy.limit(parse(task.get("expr")), x, pt, direction))


def _expr_result(expr: Any) -> Result:
    return Result("expr", expr, tuple(sorted(str(s) for s in expr.free_symbols)))


def _solution_tuple(sols: Iterable[dict[Any, Any]]) -> tuple[tuple[tuple[str, Any], ...], ...]:
    return tuple(tuple(sorted((str(k), v) for k, v in s.items())) for s in sols)


def _convert(value: Any, src: str, dst: str) -> Any:
    """``value`` in unit ``src`` expressed in ``dst`` (exact arithmetic)."""
    import sympy

    if UNITS[src][0] == "temperature":
        kelvin = {
            "K": lambda v: v,
            "°C": lambda v: v + sympy.Rational(27315, 100),
            "°F": lambda v: (v - 32) * sympy.Rational(5, 9) + sympy.Rational(27315, 100),
        }[src](value)
        return {
            "K": lambda k: k,
            "°C": lambda k: k - sympy.Rational(27315, 100),
            "°F": lambda k: (k - sympy.Rational(27315, 100)) * sympy.Rational(9, 5) + 32,
        }[dst](kelvin)
    ratio = UNITS[src][1] / UNITS[dst][1]
    return value * sympy.Rational(ratio.numerator, ratio.denominator)


def _statistic(task: dict[str, Any]) -> Any:
    """mean = sum/n; median = middle value (mean of the two middle values);
    range = max - min; variance = sum((v - mean)^2) / (n if population else
    n - 1); stdev = sqrt(variance); zscore = (value - mean) / stdev."""
    import sympy

    data = task.get("data")
    if not isinstance(data, list) or len(data) < 2:
        raise TaskError("stat needs a list of at least two numbers as data")
    vals = sorted((_number(v) for v in data), key=lambda v: float(v))
    n = len(vals)
    mean = sum(vals, sympy.Integer(0)) / n
    stat = task.get("stat")
    if stat == "mean":
        return mean
    if stat == "median":
        mid = n // 2
        return vals[mid] if n % 2 else (vals[mid - 1] + vals[mid]) / 2
    if stat == "mode":
        counts = {v: vals.count(v) for v in vals}
        top = max(counts.values())
        modes = [v for v in vals if counts[v] == top]
        if len(set(modes)) != 1:
            raise TaskError("mode is not unique")
        return modes[0]
    if stat == "range":
        return vals[-1] - vals[0]
    if stat in ("variance", "stdev", "zscore"):
        population = task.get("population")
        if not isinstance(population, bool):
            raise TaskError(f"{stat} needs population: true or false")
        ss = sum(((v - mean) ** 2 for v in vals), sympy.Integer(0))
        var = ss / (n if population else n - 1)
        if stat == "variance":
            return var
        if stat == "stdev":
            return sympy.sqrt(var)
        if var == 0:
            raise TaskError("zscore of a data set with no spread")
        return (_number(task.get("value")) - mean) / sympy.sqrt(var)
    raise TaskError(f"unknown stat {stat!r}")


# --- comparing ------------------------------------------------------------------


def _close(u: Any, v: Any, tol: float) -> bool:
    """``|u - v| <= tol * max(1, |v|)``, evaluated at 30 digits."""
    import sympy

    try:
        diff = abs(complex(sympy.N(u - v, 30)))
        scale = max(1.0, abs(complex(sympy.N(v, 30))))
    except (TypeError, ValueError):
        return False
    return diff <= tol * scale


def _same_expr(u: Any, v: Any) -> bool:
    import sympy

    return bool(sympy.simplify(u - v) == 0)


def results_equal(r1: Result, r2: Result, tol: float) -> bool:
    """Same kind, same variable names, same unit, and equal values."""
    if r1.kind != r2.kind or r1.names != r2.names or r1.unit != r2.unit:
        return False
    if r1.kind == "number":
        return _close(r1.value, r2.value, tol)
    if r1.kind == "solutions":
        return _same_solutions(r1.value, r2.value, tol)
    if r1.kind == "set":
        return bool(r1.value == r2.value)
    return _same_expr(r1.value, r2.value)  # expr, antiderivative (integrand)


def _same_solutions(s1: tuple[Any, ...], s2: tuple[Any, ...], tol: float) -> bool:
    if len(s1) != len(s2):
        return False
    left = list(s2)
    for sol in s1:
        match = next(
            (
                other
                for other in left
                if [n for n, _ in other] == [n for n, _ in sol]
                and all(_close(u, v, tol) for (_, u), (_, v) in zip(sol, other, strict=True))
            ),
            None,
        )
        if match is None:
            return False
        left.remove(match)
    return True


def _check_form(text: str, task: dict[str, Any]) -> str | None:
    """Why the literal ``text`` is not in the form the task asks for (None if it is)."""
    form, places = task.get("form"), task.get("places")
    if form == "fraction" and not _FRACTION.match(text):
        return f"{text!r} is not a fraction p/q"
    if form == "decimal" and not _DECIMAL.match(text):
        return f"{text!r} is not a decimal"
    if form == "integer" and not _INTEGER.match(text):
        return f"{text!r} is not an integer"
    if form == "exact" and "." in text:
        return f"{text!r} is not an exact value"
    if places is not None:
        want = _INTEGER if places == 0 else re.compile(rf"^-?\d+\.\d{{{places}}}$")
        if not want.match(text):
            return f"{text!r} is not rounded to {places} decimal places"
    return None


def _value_ok(text: str, exact: Any, task: dict[str, Any], tol: float) -> str | None:
    why = _check_form(text, task)
    if why:
        return why
    got = parse(text)
    if got.free_symbols:
        return f"{text!r} is not a number"
    places = task.get("places")
    if places is not None:
        import sympy

        err = abs(float(sympy.N(got - exact, 30)))
        if err > 0.5 * 10.0 ** (-places) + tol:
            return f"{text} is not {sympy.N(exact, 12)} rounded to {places} places"
        return None
    if not _close(got, exact, tol):
        return f"{text} != {exact}"
    return None


def _split_unit(answer: str) -> tuple[str, str | None]:
    """Split a number answer into (value text, stated canonical unit)."""
    s = answer.strip()
    m = re.match(r"^(-?)\$(\S+)$", s)
    if m:
        return m.group(1) + m.group(2), "$"
    if s.endswith("%"):
        return s[:-1].strip(), "%"
    if " " in s:
        value, _, stated = s.partition(" ")
        return value, unit_key(stated)
    return s, None


def reject(task: dict[str, Any], result: Result, answer: str, tol: float) -> str | None:
    """Why ``answer`` is not a correct, complete answer to ``task`` (None if it is).

    Raises :class:`TaskError` only for a malformed task, never for a bad answer.
    """
    import sympy

    if not isinstance(answer, str) or not answer.strip():
        return "empty answer"
    try:
        if result.kind == "number":
            if "=" in answer:
                return f"{answer!r} is an equation, not a number"
            text, stated = _split_unit(answer)
            if stated != result.unit:
                return f"answer states unit {stated!r}, query asks for {result.unit!r}"
            return _value_ok(text, result.value, task, tol)
        if result.kind == "solutions":
            return _reject_solutions(answer, result, task, tol)
        if result.kind == "set":
            rel = parse_relation(answer)
            names = tuple(sorted(str(s) for s in rel.free_symbols))
            if names != result.names:
                return f"answer is about {', '.join(names)}, query about {result.names[0]}"
            got = sympy.solveset(rel, sympy.Symbol(result.names[0]), sympy.S.Reals)
            return None if got == result.value else f"{answer} is not the solution set"
        if "=" in answer:
            return f"{answer!r} is an equation, not an expression"
        got = parse(answer)
        if result.kind == "antiderivative":
            x = sympy.Symbol(result.names[0])
            if sympy.Symbol("C") not in got.free_symbols:
                return "an indefinite integral needs the constant C"
            if not got.free_symbols <= result.value.free_symbols | {x, sympy.Symbol("C")}:
                return f"{answer} uses a variable the integrand does not"
            if not _same_expr(sympy.diff(got, x), result.value):
                return f"d/d{x} of {answer} is not {result.value}"
            return None
        if not _same_expr(got, result.value):
            return f"{answer} != {result.value}"
        op = task.get("op")
        if op == "factor" and got != sympy.factor(got):
            return f"{answer} is not factored"
        if op == "expand" and got != sympy.expand(got):
            return f"{answer} is not expanded"
        if op == "simplify" and sympy.count_ops(got) > sympy.count_ops(result.value):
            return f"{answer} is not simplified"
        return None
    except TaskError as e:
        return f"cannot read answer: {e}"


def _reject_solutions(answer: str, result: Result, task: dict[str, Any], tol: float) -> str | None:
    sols = []
    for alt in answer.split(" or "):
        pairs = []
        for part in alt.split(","):
            name, eq, text = part.partition("=")
            name, text = name.strip(), text.strip()
            if not eq or not _NAME.match(name):
                return f"{part.strip()!r} is not of the form name = value"
            why = _check_form(text, task)
            if why:
                return why
            pairs.append((name, parse(text)))
        sols.append(tuple(sorted(pairs)))
    named = {n for sol in sols for n, _ in sol}
    if named != set(result.names):
        return f"answer names {', '.join(sorted(named))}, query asks for {', '.join(result.names)}"
    places = task.get("places")
    eff_tol = tol if places is None else 0.5 * 10.0 ** (-places) + tol
    if not _same_solutions(tuple(sols), result.value, eff_tol):
        return f"{answer} is not the solution set"
    return None


# --- the checker --------------------------------------------------------------------


def check(row: Row) -> Check:
    p = row.verification_payload or {}
    task_a, task_b = p.get("task_a"), p.get("task_b")
    if not isinstance(task_a, dict) or not isinstance(task_b, dict):
        return Check(None, "sympy payload needs objects task_a and task_b")
    tol = p.get("tolerance", DEFAULT_TOLERANCE)
    if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not 0 <= tol < 1:
        return Check(None, f"tolerance must be a number in [0, 1), got {tol!r}")
    ans_a, ans_b = row.expected_answer_a, row.expected_answer_b
    if ans_a is None or ans_b is None:
        return Check(None, "expected answers are missing")
    try:
        res_a, res_b = compute(task_a), compute(task_b)
        own_a = reject(task_a, res_a, ans_a, tol)
        if own_a:
            return Check(None, f"expected_answer_a does not answer task_a: {own_a}")
        own_b = reject(task_b, res_b, ans_b, tol)
        if own_b:
            return Check(None, f"expected_answer_b does not answer task_b: {own_b}")
        if not results_equal(res_a, res_b, tol):
            return Check(MISS, f"results differ: {_describe(res_a)} vs {_describe(res_b)}")
        why = reject(task_b, res_b, ans_a, tol)
    except TaskError as e:
        return Check(None, f"bad task: {e}")
    if why:
        return Check(MISS, f"same result, but the cached answer does not fit query_b: {why}")
    return Check(HIT, f"same result ({_describe(res_b)}); the cached answer serves query_b")


def _describe(r: Result) -> str:
    """A short human-readable form of a result for Check.detail."""
    import sympy

    unit = f" {r.unit}" if r.unit else ""
    if r.kind == "number":
        v = r.value
        small = isinstance(v, sympy.Rational) and abs(v.q) < 1000 and abs(v.p) < 10**9
        return f"number {v if small else sympy.N(v, 8)}{unit}"
    if r.kind == "solutions":
        alts = [", ".join(f"{n} = {v}" for n, v in sol) for sol in r.value]
        return "solutions " + " or ".join(alts)
    return f"{r.kind} in {', '.join(r.names) or '-'}: {r.value}"
