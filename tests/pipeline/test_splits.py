"""The split assignment: family groups (source + normalised text, union-find),
disjointness, determinism, and the packing's totals and cell shares."""

from __future__ import annotations

from collections import Counter
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cacheeval.pipeline.domains import MATRIX
from cacheeval.pipeline.splits import (
    ALGORITHM,
    CELL_TOLERANCE,
    SHARES,
    TOTAL_TOLERANCE,
    assign_splits,
    family_groups,
    fold_text,
    shared_between_splits,
    split_stats,
    split_totals,
)
from cacheeval.schema import DOMAINS, LABELS, SPLIT_SIZES, SPLITS
from cacheeval.support.layout import rng


def _row(rid: str, source: str, qa: str, qb: str, domain: str = "math", label: str = "EQUIV"):
    return {"id": rid, "domain": domain, "label": label, "source": source, "query_a": qa,
            "query_b": qb}  # fmt: skip


def _full_matrix_rows(family_size: int = 5) -> list[dict[str, Any]]:
    """Every cell of the matrix, cut into families of ``family_size`` rows that
    cycle through the labels, each row with texts of its own family only."""
    rows = []
    for d, counts in MATRIX.items():
        todo = [lab for lab, n in zip(LABELS, counts, strict=True) for _ in range(n)]
        rng("test-families", d).shuffle(todo)
        for i, lab in enumerate(todo):
            fam = f"sources/{d}.json#f{i // family_size}"
            rows.append(_row(f"cb-{d}-{i + 1:04d}", fam, f"{fam} base", f"{fam} row {i}", d, lab))
    return rows


def _by_id(rows: list[dict[str, Any]], splits: dict[str, str]) -> list[dict[str, Any]]:
    return [{**r, "split": splits[r["id"]]} for r in rows]


def test_shares_are_the_readme_split() -> None:
    assert SHARES == {"train": Fraction(1, 2), "dev": Fraction(1, 4), "test": Fraction(1, 4)}
    assert split_totals(2000) == SPLIT_SIZES == {"train": 1000, "dev": 500, "test": 500}


def test_split_totals_small_cases() -> None:
    assert split_totals(0) == {"train": 0, "dev": 0, "test": 0}
    assert split_totals(1) == {"train": 1, "dev": 0, "test": 0}  # remainder .5 beats .25
    assert split_totals(2) == {"train": 1, "dev": 1, "test": 0}  # tie .5/.5: dev before test
    assert split_totals(3) == {"train": 1, "dev": 1, "test": 1}  # .75 .75 beat .5
    assert split_totals(43) == {"train": 21, "dev": 11, "test": 11}
    with pytest.raises(ValueError):
        split_totals(-1)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("What's the capital of France?", "whats the capital of france"),  # no: ' splits a word
        ("Ｑ１：２＋２", "q1 2+2"),  # full-width forms fold under NFKC
        ("  Hello,\tWORLD!! ", "hello world"),
        ("¿Cuál es la capital?", "cuál es la capital"),  # accents are kept
    ],
)
def test_fold_text(a: str, b: str) -> None:
    if a.startswith("What's"):
        assert fold_text(a) == "what s the capital of france" != fold_text(b)
    else:
        assert fold_text(a) == fold_text(b)


def test_groups_join_by_source_and_by_folded_text() -> None:
    rows = [
        _row("r1", "s/a.json#x", "Set a timer", "Set a timer!"),
        _row("r2", "s/a.json#x", "Other", "Another"),  # same family as r1
        _row("r3", "s/b.json#y", "set a TIMER.", "Unrelated text"),  # shares r1's folded text
        _row("r4", "s/c.json#z", "unrelated text", "Fresh"),  # shares r3's text: transitive
        _row("r5", "s/d.json#w", "Alone", "Quite alone"),
    ]
    groups = family_groups(rows)
    assert [(g.key, g.ids) for g in groups] == [
        ("s/a.json#x", ("r1", "r2", "r3", "r4")),
        ("s/d.json#w", ("r5",)),
    ]
    assert groups[0].sources == ("s/a.json#x", "s/b.json#y", "s/c.json#z")
    assert groups[0].cells == ((("math", "EQUIV"), 4),)
    assert family_groups(list(reversed(rows))) == groups
    with pytest.raises(ValueError, match="duplicate id"):
        family_groups([*rows, rows[0]])


texts = st.sampled_from(["alpha", "Alpha!", "beta", "gamma", "delta", "Delta", "eps", "zeta"])
rows_strategy = st.lists(
    st.tuples(
        st.integers(0, 9), texts, texts, st.sampled_from(DOMAINS[:3]), st.sampled_from(LABELS)
    ),
    min_size=1,
    max_size=40,
)


@settings(max_examples=60, deadline=None)
@given(rows_strategy, st.integers(min_value=0, max_value=2**32))
def test_assignment_is_family_and_text_disjoint_deterministic_and_order_free(
    spec: list[tuple[int, str, str, str, str]], seed: int
) -> None:
    rows = [
        _row(f"r{i:03d}", f"s/f.json#{fam}", qa, qb, d, lab)
        for i, (fam, qa, qb, d, lab) in enumerate(spec)
    ]
    splits = assign_splits(rows)
    assert set(splits) == {r["id"] for r in rows}
    full = _by_id(rows, splits)
    assert shared_between_splits(full, "source") == []
    assert shared_between_splits(full, "text") == []
    shuffled = list(rows)
    rng("order", seed).shuffle(shuffled)
    assert assign_splits(shuffled) == splits


def test_full_matrix_of_small_families_packs_within_tolerance() -> None:
    rows = _full_matrix_rows()
    splits = assign_splits(rows)
    full = _by_id(rows, splits)
    stats = split_stats(full)
    assert stats["algorithm"] == ALGORITHM
    assert stats["shared_families"] == stats["shared_texts"] == 0
    for s in SPLITS:
        assert abs(stats["by_split"][s] - SPLIT_SIZES[s]) <= TOTAL_TOLERANCE
    cells: dict[tuple[str, str], Counter[str]] = {}
    for r in full:
        cells.setdefault((r["domain"], r["label"]), Counter())[r["split"]] += 1
    for cell, cnt in cells.items():
        n = sum(cnt.values())
        for s in SPLITS:
            assert abs(Fraction(cnt[s], n) - SHARES[s]) <= CELL_TOLERANCE, (cell, dict(cnt))
    assert stats["max_cell_deviation_points"] <= 5.0
    assert assign_splits(list(reversed(rows))) == splits


def test_a_group_too_big_for_its_cells_stays_whole_and_is_reported() -> None:
    # One family holds 8 of the 10 rows: it cannot be cut, so the shares suffer.
    rows = [_row(f"r{i}", "s/big.json#x", f"q{i}", f"p{i}") for i in range(8)]
    rows += [_row(f"s{i}", f"s/small.json#{i}", f"u{i}", f"v{i}") for i in range(2)]
    full = _by_id(rows, assign_splits(rows))
    assert len({r["split"] for r in full if r["source"] == "s/big.json#x"}) == 1
    stats = split_stats(full)
    assert stats["groups"] == 3
    assert stats["largest_groups"][0] == {"key": "s/big.json#x", "rows": 8, "families": 1}
    assert stats["max_cell_deviation_points"] > 5.0


def test_split_stats_on_a_hand_made_assignment() -> None:
    rows = [
        {**_row("r1", "s/a#1", "One", "Two"), "split": "train"},
        {**_row("r2", "s/a#1", "Three", "Four"), "split": "test"},  # family crosses
        {**_row("r3", "s/b#1", "one!", "Five"), "split": "dev"},  # text 'one' crosses
        {**_row("r4", "s/c#1", "Six", "Seven"), "split": "train"},
    ]
    assert shared_between_splits(rows, "source") == ["s/a#1"]
    assert shared_between_splits(rows, "text") == ["one"]
    stats = split_stats(rows)
    assert stats["by_split"] == {"train": 2, "dev": 1, "test": 1}
    assert stats["groups"] == 2  # {r1, r2, r3} joined by family and text, {r4}
    # One cell (math, EQUIV) of 4 rows: shares 2/4, 1/4, 1/4 are exactly on target.
    assert stats["max_cell_deviation_points"] == 0.0
    assert (stats["shared_families"], stats["shared_texts"]) == (1, 1)
