"""Markdown table cells and numbers, shared by every report renderer.

Formatting only: each function turns a number a metric function produced
into text, never computes one.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..metrics.classification import Estimate


def num(x: float | None, digits: int = 3) -> str:
    """``x`` to ``digits`` decimals; ``null`` for None.

    >>> num(0.12345), num(0.12345, 4), num(None)
    ('0.123', '0.1235', 'null')
    """
    return "null" if x is None else f"{x:.{digits}f}"


def count(x: float) -> str:
    """A count (possibly fractional, e.g. an effective n) without trailing zeros.

    >>> count(3.0), count(2.5)
    ('3', '2.5')
    """
    return f"{x:g}"


def estimate(e: Estimate) -> str:
    """A rate with its 95% CI; ``null (num/den)`` when undefined.

    >>> estimate(Estimate(0.5, 0.25, 0.75, 2, 4))
    '0.500 [0.250, 0.750]'
    >>> estimate(Estimate(None, None, None, 0, 0))
    'null (0/0)'
    """
    if e.value is None:
        return f"null ({count(e.numerator)}/{count(e.denominator)})"
    return f"{e.value:.3f} [{num(e.ci_low)}, {num(e.ci_high)}]"


def fraction(e: Estimate) -> str:
    """The counts of a rate, ``num/den``.

    >>> fraction(Estimate(0.5, 0.25, 0.75, 2, 4))
    '2/4'
    """
    return f"{count(e.numerator)}/{count(e.denominator)}"


def cell(text: str) -> str:
    """``text`` safe inside a table cell: backslashes and pipes escaped,
    newlines flattened.

    >>> cell("a|b\\nc")
    'a\\\\|b c'
    """
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """A Markdown table's lines; body cells are escaped with :func:`cell`.

    >>> table(["a", "b"], [["1", "x|y"]])
    ['| a | b |', '|---|---|', '| 1 | x\\\\|y |']
    """
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return out
