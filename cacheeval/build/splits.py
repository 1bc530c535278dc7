"""Deterministic train/dev/test assignment, stratified by domain x label.

The algorithm (pure; the same rows always get the same splits):

1. **Global totals.** With ``N`` rows and shares ``p_s`` from
   :data:`~cacheeval.schema.SPLIT_SIZES` (1000/500/500 of 2,000, i.e.
   50/25/25), ``T_s`` is the largest-remainder apportionment of ``N * p_s``:
   every split gets ``floor(N p_s)``, and the rows left over go to the largest
   fractional parts (ties in SPLITS order). ``sum T_s = N``; 2,000 rows give
   exactly 1000/500/500.
2. **Cell quotas.** A cell is one (domain, label) with ``n_c`` rows. Its quota
   ``q_cs`` is ``floor(n_c p_s)`` or, where ``n_c p_s`` is fractional,
   ``floor(n_c p_s) + 1``, so ``|q_cs - n_c p_s| < 1`` (within one row of its
   proportional share), with ``sum_s q_cs = n_c`` and ``sum_c q_cs = T_s``.
   Choosing which fractional cells round up is a small bipartite b-matching
   (cells need ``n_c - sum_s floor``, splits offer ``T_s - sum_c floor``);
   it is filled greedily by largest remainder, then completed with augmenting
   paths. With three splits a solution always exists (every floor/ceil
   rounding of the column sums with the right total lies in the integral
   polytope of such tables), and the search raises if it ever fails.
3. **Rows.** Within a cell, rows are sorted by id and shuffled with
   ``random.Random(stable_seed("split", domain, label))``; the first
   ``q_train`` go to train, the next ``q_dev`` to dev, the rest to test.

Adding rows to one cell can move an extra row between splits of other cells
(step 2 rebalances); splits are final once all 2,000 rows exist.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Any

from ..generators.common import rng
from ..schema import DOMAINS, LABELS, SPLIT_SIZES, SPLITS

Cell = tuple[str, str]

#: Share of each split, exact: SPLIT_SIZES[s] / sum(SPLIT_SIZES).
SHARES: dict[str, Fraction] = {
    s: Fraction(SPLIT_SIZES[s], sum(SPLIT_SIZES.values())) for s in SPLITS
}


def _largest_remainder(n: int, shares: Mapping[str, Fraction]) -> dict[str, int]:
    exact = {s: n * shares[s] for s in SPLITS}
    out = {s: int(exact[s]) for s in SPLITS}  # floor: exact values are >= 0
    left = n - sum(out.values())
    # Largest fractional part first; ties go to the earlier split.
    order = sorted(SPLITS, key=lambda s: (-(exact[s] - out[s]), SPLITS.index(s)))
    for s in order[:left]:
        out[s] += 1
    return out


def split_totals(n: int) -> dict[str, int]:
    """Rows per split for ``n`` rows: largest-remainder apportionment of the shares."""
    if n < 0:
        raise ValueError(f"row count must be >= 0, got {n}")
    return _largest_remainder(n, SHARES)


def _cell_order(cell: Cell) -> tuple[int, int, str, str]:
    d, lab = cell
    return (
        DOMAINS.index(d) if d in DOMAINS else len(DOMAINS),
        LABELS.index(lab) if lab in LABELS else len(LABELS),
        d,
        lab,
    )


def cell_quotas(cell_sizes: Mapping[Cell, int]) -> dict[Cell, dict[str, int]]:
    """Rows per split of every cell: ``|q_cs - n_c p_s| < 1``, rows sum to
    ``n_c`` and columns to :func:`split_totals` of the grand total."""
    cells = sorted(cell_sizes, key=_cell_order)
    for c in cells:
        if cell_sizes[c] < 0:
            raise ValueError(f"cell {c} has a negative size")
    totals = split_totals(sum(cell_sizes.values()))
    exact = {c: {s: cell_sizes[c] * SHARES[s] for s in SPLITS} for c in cells}
    quota = {c: {s: int(exact[c][s]) for s in SPLITS} for c in cells}
    # Which (cell, split) may round up: only where the share is fractional.
    can_up = {c: [s for s in SPLITS if exact[c][s] != quota[c][s]] for c in cells}
    need = {c: cell_sizes[c] - sum(quota[c].values()) for c in cells}
    spare = {s: totals[s] - sum(quota[c][s] for c in cells) for s in SPLITS}
    up: dict[Cell, set[str]] = {c: set() for c in cells}

    # Greedy pass: largest remainder first, ties in cell then split order.
    candidates = sorted(
        ((c, s) for c in cells for s in can_up[c]),
        key=lambda cs: (
            -(exact[cs[0]][cs[1]] - quota[cs[0]][cs[1]]),
            _cell_order(cs[0]),
            SPLITS.index(cs[1]),
        ),
    )
    for c, s in candidates:
        if need[c] > 0 and spare[s] > 0:
            up[c].add(s)
            need[c] -= 1
            spare[s] -= 1

    # Augmenting paths for the cells the greedy pass left short.
    for c0 in cells:
        while need[c0] > 0:
            path = _augmenting_path(c0, cells, can_up, up, spare)
            if path is None:
                raise RuntimeError(f"no exact split apportionment for cell {c0}")
            # c0 takes s1; each later c_i gives up s_i for s_{i+1}; sk had room.
            path_cells, path_splits = path
            for i, c in enumerate(path_cells):
                up[c].add(path_splits[i])
                if i > 0:
                    up[c].discard(path_splits[i - 1])
            spare[path_splits[-1]] -= 1
            need[c0] -= 1

    return {c: {s: quota[c][s] + (1 if s in up[c] else 0) for s in SPLITS} for c in cells}


def _augmenting_path(
    c0: Cell,
    cells: list[Cell],
    can_up: Mapping[Cell, list[str]],
    up: Mapping[Cell, set[str]],
    spare: Mapping[str, int],
) -> tuple[list[Cell], list[str]] | None:
    """BFS for c0 -> s1 -> c1 -> s2 ... -> sk with spare[sk] > 0, where each
    c_i (i > 0) rounds up in s_i now and could round up in s_{i+1} instead.
    Returns ([c0 .. c_{k-1}], [s1 .. sk])."""
    via_split: dict[str, Cell] = {}  # split -> the cell it was reached from
    via_cell: dict[Cell, str] = {}  # cell (not c0) -> the split it was reached from
    queue: deque[Cell] = deque([c0])
    while queue:
        c = queue.popleft()
        for s in can_up[c]:
            if s in up[c] or s in via_split:
                continue
            via_split[s] = c
            if spare[s] > 0:
                path_splits = [s]
                path_cells = [c]
                while path_cells[-1] != c0:
                    prev_split = via_cell[path_cells[-1]]
                    path_splits.append(prev_split)
                    path_cells.append(via_split[prev_split])
                return path_cells[::-1], path_splits[::-1]
            for c2 in cells:
                if s in up[c2] and c2 != c0 and c2 not in via_cell:
                    via_cell[c2] = s
                    queue.append(c2)
    return None


def assign_splits(rows: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """``id -> split`` for rows carrying ``id``, ``domain`` and ``label``.

    Independent of input order: cells are keyed by (domain, label) and rows
    within a cell sorted by id before the seeded shuffle.
    """
    by_cell: dict[Cell, list[str]] = {}
    for r in rows:
        by_cell.setdefault((r["domain"], r["label"]), []).append(r["id"])
    quotas = cell_quotas({c: len(ids) for c, ids in by_cell.items()})
    out: dict[str, str] = {}
    for cell in sorted(by_cell, key=_cell_order):
        ids = sorted(by_cell[cell])
        rng("split", *cell).shuffle(ids)
        q = quotas[cell]
        bounds = [0]
        for s in SPLITS:
            bounds.append(bounds[-1] + q[s])
        for s, lo, hi in zip(SPLITS, bounds, bounds[1:], strict=False):
            for rid in ids[lo:hi]:
                if rid in out:
                    raise ValueError(f"duplicate id {rid!r}")
                out[rid] = s
    return out
