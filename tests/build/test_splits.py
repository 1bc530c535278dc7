"""The split assignment: exact totals, per-cell proportionality, determinism."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cacheeval.build.splits import SHARES, assign_splits, cell_quotas, split_totals
from cacheeval.generators.common import rng
from cacheeval.schema import DOMAINS, LABELS, MATRIX, SPLIT_SIZES, SPLITS

FULL_CELLS = {(d, lab): n for d, row in MATRIX.items() for lab, n in zip(LABELS, row, strict=True)}

cells_strategy = st.dictionaries(
    st.tuples(st.sampled_from(DOMAINS), st.sampled_from(LABELS)),
    st.integers(min_value=0, max_value=70),
    min_size=1,
    max_size=50,
)


def _rows(cells: dict[tuple[str, str], int]) -> list[dict[str, str]]:
    return [
        {"id": f"cb-{d}-{lab[:3]}{i:04d}", "domain": d, "label": lab}
        for (d, lab), n in cells.items()
        for i in range(n)
    ]


def test_shares_are_the_readme_split() -> None:
    assert SHARES == {"train": Fraction(1, 2), "dev": Fraction(1, 4), "test": Fraction(1, 4)}
    assert split_totals(2000) == SPLIT_SIZES == {"train": 1000, "dev": 500, "test": 500}


def test_split_totals_small_cases() -> None:
    assert split_totals(0) == {"train": 0, "dev": 0, "test": 0}
    assert split_totals(1) == {"train": 1, "dev": 0, "test": 0}  # remainder .5 beats .25
    assert split_totals(2) == {"train": 1, "dev": 1, "test": 0}  # tie .5/.5: dev before test
    assert split_totals(3) == {"train": 1, "dev": 1, "test": 1}  # .75 .75 beat .5
    assert split_totals(43) == {"train": 21, "dev": 11, "test": 11}


def test_full_matrix_gives_exact_readme_sizes() -> None:
    quotas = cell_quotas(FULL_CELLS)
    assert {s: sum(q[s] for q in quotas.values()) for s in SPLITS} == SPLIT_SIZES
    # A 50-row cell: 25 train and 12/13 or 13/12 dev/test.
    assert quotas[("qa_factual", "EQUIV")]["train"] == 25
    assert sorted(quotas[("qa_factual", "EQUIV")].values()) == [12, 13, 25]
    # A 40-row cell splits exactly 20/10/10.
    assert quotas[("qa_factual", "ADVERSARIAL")] == {"train": 20, "dev": 10, "test": 10}
    splits = assign_splits(_rows(FULL_CELLS))
    assert len(splits) == 2000
    assert {s: list(splits.values()).count(s) for s in SPLITS} == SPLIT_SIZES


@settings(max_examples=300, deadline=None)
@given(cells_strategy)
def test_quotas_exact_totals_and_within_one_row(cells: dict[tuple[str, str], int]) -> None:
    quotas = cell_quotas(cells)
    totals = split_totals(sum(cells.values()))
    assert {s: sum(q[s] for q in quotas.values()) for s in SPLITS} == totals
    for cell, q in quotas.items():
        assert sum(q.values()) == cells[cell]
        for s in SPLITS:
            share = cells[cell] * SHARES[s]
            assert abs(q[s] - share) < 1, (cell, s, q[s], share)


@settings(max_examples=100, deadline=None)
@given(cells_strategy, st.integers(min_value=0, max_value=2**32))
def test_assignment_is_deterministic_and_order_free(
    cells: dict[tuple[str, str], int], seed: int
) -> None:
    rows = _rows(cells)
    first = assign_splits(rows)
    shuffled = list(rows)
    rng("test", seed).shuffle(shuffled)
    assert assign_splits(shuffled) == first
    assert set(first) == {r["id"] for r in rows}
    # Each cell's rows follow its quotas.
    quotas = cell_quotas(cells)
    for (d, lab), q in quotas.items():
        got = [first[r["id"]] for r in rows if r["domain"] == d and r["label"] == lab]
        assert {s: got.count(s) for s in SPLITS} == q


def test_within_cell_order_is_the_seeded_shuffle() -> None:
    cells = {("math", "EQUIV"): 8}
    rows = _rows(cells)
    splits = assign_splits(rows)
    ids = sorted(r["id"] for r in rows)
    rng("split", "math", "EQUIV").shuffle(ids)
    # 8 rows -> 4/2/2, dealt in shuffled order.
    assert [splits[i] for i in ids] == ["train"] * 4 + ["dev"] * 2 + ["test"] * 2
    # And that shuffle is not the identity, so the test is not vacuous.
    assert ids != sorted(ids)


def test_duplicate_ids_are_rejected() -> None:
    rows = _rows({("math", "EQUIV"): 3})
    rows.append(dict(rows[0]))
    with pytest.raises(ValueError, match="duplicate id"):
        assign_splits(rows)
