"""Deterministic train/dev/test assignment by family group, never by row.

A benchmark whose test rows are near-copies of its train rows measures
memorisation. So splits are assigned to whole *groups* of rows that must stay
together, and the algorithm (pure; the same rows always get the same splits)
is:

1. **Groups.** Two rows belong to one group when they share a template family
   (the ``source`` field: a fixture path plus ``#item``) or a normalised query
   text (:func:`fold_text` of ``query_a`` or ``query_b``: Unicode NFKC,
   case-folded, punctuation and whitespace folded). Groups are the connected
   components of that relation (union-find over sources and texts), so no
   family and no normalised text can ever sit in two splits. A group is named
   by its smallest ``source``.
2. **Targets.** With ``N`` rows and shares ``p_s`` from
   :data:`~cacheeval.schema.SPLIT_SIZES` (50/25/25), split ``s`` should hold
   ``T_s`` rows (:func:`split_totals`, largest remainder) and each
   (domain, label) cell of ``n_c`` rows ``n_c p_s`` of them.
3. **Packing.** Groups are packed into splits by a seeded search that
   minimises the packing cost (:class:`_State`): the squared relative
   deviation of every cell's split counts from its proportional share, plus
   the squared deviation of the split totals (in units of
   :data:`TOTAL_TOLERANCE` rows), plus :data:`PENALTY` for every row by which a
   cell leaves its :data:`CELL_TOLERANCE` band or a split total its
   :data:`TOTAL_TOLERANCE`. Each domain is packed on its own first (its totals
   term uses the domain's own split totals): a domain of at most
   :data:`EXHAUSTIVE_MAX` groups by trying every assignment; a larger one by
   :data:`RESTARTS` starts, each a greedy placement (largest group first,
   seeded tie order), then :data:`ANNEAL_STEPS` steps of seeded simulated
   annealing on a softened cost (:data:`SOFT_PENALTY` per row outside a band),
   then a local search of single-group moves, same-domain swaps and, when
   those stall, same-domain moves of two groups at once, until no move lowers
   the cost; the lowest-cost start wins (ties: the earliest). A final local
   search over all groups brings the global split totals within tolerance.

Whether the tolerances are met depends on the data (a group too large for its
cells cannot be placed within them); :func:`split_stats` measures it, the
manifest records it and the integrity tests pin it on the shipped data.
"""

from __future__ import annotations

import itertools
import math
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ..schema import DOMAINS, LABELS, SPLIT_SIZES, SPLITS
from ..support.layout import rng

Cell = tuple[str, str]

#: Name and version of the algorithm, recorded in the manifest.
ALGORITHM = "family-group-pack/1"
#: Share of each split, exact: SPLIT_SIZES[s] / sum(SPLIT_SIZES).
SHARES: dict[str, Fraction] = {
    s: Fraction(SPLIT_SIZES[s], sum(SPLIT_SIZES.values())) for s in SPLITS
}
#: A cell's share of each split may be off its target share by at most this much.
CELL_TOLERANCE = Fraction(5, 100)
#: A split may hold at most this many rows more or fewer than its target total.
TOTAL_TOLERANCE = 10
#: Local-search starts per domain; the best result wins.
RESTARTS = 4
#: A domain with at most this many groups is packed by trying every assignment.
EXHAUSTIVE_MAX = 6
#: Annealing: steps per start, start and end temperature, and the cost of one
#: row outside a tolerance band while annealing (the final cost uses PENALTY).
ANNEAL_STEPS = 4000
ANNEAL_T0 = 0.5
ANNEAL_T1 = 0.0005
SOFT_PENALTY = 0.2
#: Weight of one row outside a tolerance band, against the quadratic terms.
PENALTY = 1000.0
SEED = "split-pack"


def fold_text(text: str) -> str:
    """The normalised form under which two query texts count as the same:
    Unicode NFKC, case-folded, every punctuation character a space, whitespace
    runs collapsed.

    >>> fold_text("  What's the  CAPITAL of France?! ")
    'what s the capital of france'
    >>> fold_text("Ｑ１：２＋２") == fold_text("q1 2+2")
    True
    """
    text = unicodedata.normalize("NFKC", text).casefold()
    folded = "".join(" " if unicodedata.category(ch).startswith("P") else ch for ch in text)
    return " ".join(folded.split())


def split_totals(n: int) -> dict[str, int]:
    """Rows per split for ``n`` rows: largest-remainder apportionment of the shares
    (ties go to the earlier split)."""
    if n < 0:
        raise ValueError(f"row count must be >= 0, got {n}")
    exact = {s: n * SHARES[s] for s in SPLITS}
    out = {s: int(exact[s]) for s in SPLITS}
    left = n - sum(out.values())
    order = sorted(SPLITS, key=lambda s: (-(exact[s] - out[s]), SPLITS.index(s)))
    for s in order[:left]:
        out[s] += 1
    return out


# --- groups ------------------------------------------------------------------------------


class _UnionFind:
    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, x: str) -> str:
        root = self.parent.setdefault(x, x)
        while root != self.parent[root]:
            root = self.parent[root]
        while x != root:  # path compression
            self.parent[x], x = root, self.parent[x]
        return root

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            # The smaller key becomes the root: the result is independent of order.
            lo, hi = sorted((ra, rb))
            self.parent[hi] = lo


@dataclass(frozen=True, slots=True)
class Group:
    """Rows that must share a split: ``key`` is the group's smallest source."""

    key: str
    ids: tuple[str, ...]
    sources: tuple[str, ...]
    cells: tuple[tuple[Cell, int], ...]

    @property
    def size(self) -> int:
        return len(self.ids)

    @property
    def domains(self) -> tuple[str, ...]:
        return tuple(sorted({d for (d, _), _ in self.cells}))


def row_source(row: Mapping[str, Any]) -> str:
    """The family of a row: its ``source`` (a row without one is its own family)."""
    src = row.get("source")
    return src if isinstance(src, str) and src else f"<row {row['id']}>"


def family_groups(rows: Iterable[Mapping[str, Any]]) -> list[Group]:
    """The groups of step 1, sorted by key. Rows need ``id``, ``domain``,
    ``label``, ``source``, ``query_a`` and ``query_b``."""
    uf = _UnionFind()
    rows = list(rows)
    seen: set[str] = set()
    for r in rows:
        if r["id"] in seen:
            raise ValueError(f"duplicate id {r['id']!r}")
        seen.add(r["id"])
        fam = "S\x1f" + row_source(r)
        uf.find(fam)
        for side in ("query_a", "query_b"):
            text = r.get(side)
            if isinstance(text, str):
                uf.union(fam, "T\x1f" + fold_text(text))
    members: dict[str, list[Mapping[str, Any]]] = {}
    for r in rows:
        members.setdefault(uf.find("S\x1f" + row_source(r)), []).append(r)
    groups = []
    for rs in members.values():
        sources = tuple(sorted({row_source(r) for r in rs}))
        cells = Counter((r["domain"], r["label"]) for r in rs)
        groups.append(
            Group(
                key=sources[0],
                ids=tuple(sorted(r["id"] for r in rs)),
                sources=sources,
                cells=tuple(sorted(cells.items(), key=lambda kv: _cell_order(kv[0]))),
            )
        )
    return sorted(groups, key=lambda g: g.key)


def _cell_order(cell: Cell) -> tuple[int, int, str, str]:
    d, lab = cell
    return (
        DOMAINS.index(d) if d in DOMAINS else len(DOMAINS),
        LABELS.index(lab) if lab in LABELS else len(LABELS),
        d,
        lab,
    )


# --- packing -----------------------------------------------------------------------------

#: Common denominator of the shares: ``Q * p_s`` is an integer for every split
#: (50/25/25 -> Q = 4, 2/1/1), so targets are exact in units of 1/Q row.
_Q = math.lcm(*(share.denominator for share in SHARES.values()))
_K = {s: int(SHARES[s] * _Q) for s in SPLITS}
#: Tolerance as an integer ratio: |Q x - K n| * _TOL_DEN <= n * _TOL_NUM * Q.
_TOL_NUM, _TOL_DEN = CELL_TOLERANCE.numerator, CELL_TOLERANCE.denominator


class _State:
    """Counts of one assignment and its cost, updated move by move."""

    def __init__(
        self, groups: Sequence[Group], cell_sizes: Mapping[Cell, int], penalty: float = PENALTY
    ) -> None:
        self.groups = groups
        self.penalty = penalty
        self.n = {c: cell_sizes[c] for c in cell_sizes}
        self.totals = split_totals(sum(cell_sizes.values()))
        self.x: dict[tuple[Cell, str], int] = {(c, s): 0 for c in cell_sizes for s in SPLITS}
        self.tot = dict.fromkeys(SPLITS, 0)
        self.where: list[str | None] = [None] * len(groups)
        self._terms: dict[tuple[Cell, str, int], float] = {}

    def cell_term(self, c: Cell, s: str, x: int) -> float:
        """(share - target share)^2, plus PENALTY per row outside the band."""
        key = (c, s, x)
        term = self._terms.get(key)
        if term is None:
            n = self.n[c]
            e = abs(_Q * x - _K[s] * n)  # Q times the deviation in rows, exact
            dev = e / (_Q * n)
            over = e * _TOL_DEN - n * _TOL_NUM * _Q  # > 0: outside the band
            term = dev * dev + (self.penalty * over / (_Q * _TOL_DEN) if over > 0 else 0.0)
            self._terms[key] = term
        return term

    def total_term(self, s: str, t: int) -> float:
        dev = t - self.totals[s]
        over = abs(dev) - TOTAL_TOLERANCE
        return (dev / TOTAL_TOLERANCE) ** 2 + (self.penalty * over if over > 0 else 0.0)

    def cost(self) -> float:
        out = 0.0
        for (c, s), x in sorted(self.x.items(), key=lambda kv: (_cell_order(kv[0][0]), kv[0][1])):
            out += self.cell_term(c, s, x)
        for s in SPLITS:
            out += self.total_term(s, self.tot[s])
        return out

    def delta(self, moves: Sequence[tuple[int, str | None, str | None]]) -> float:
        """Cost change of moving each group i from split ``a`` (None: unplaced)
        to ``b`` (None: unplace), all together."""
        if len(moves) == 1:
            return self._delta_one(*moves[0])
        dx: dict[tuple[Cell, str], int] = {}
        dt: dict[str, int] = {}
        for i, a, b in moves:
            g = self.groups[i]
            for c, k in g.cells:
                if a is not None:
                    dx[(c, a)] = dx.get((c, a), 0) - k
                if b is not None:
                    dx[(c, b)] = dx.get((c, b), 0) + k
            if a is not None:
                dt[a] = dt.get(a, 0) - g.size
            if b is not None:
                dt[b] = dt.get(b, 0) + g.size
        out = 0.0
        for (c, s), d in dx.items():
            if d:
                x = self.x[(c, s)]
                out += self.cell_term(c, s, x + d) - self.cell_term(c, s, x)
        for s, d in dt.items():
            if d:
                out += self.total_term(s, self.tot[s] + d) - self.total_term(s, self.tot[s])
        return out

    def _delta_one(self, i: int, a: str | None, b: str | None) -> float:
        g = self.groups[i]
        term, x = self.cell_term, self.x
        out = 0.0
        for c, k in g.cells:
            if a is not None:
                xa = x[(c, a)]
                out += term(c, a, xa - k) - term(c, a, xa)
            if b is not None:
                xb = x[(c, b)]
                out += term(c, b, xb + k) - term(c, b, xb)
        if a is not None:
            out += self.total_term(a, self.tot[a] - g.size) - self.total_term(a, self.tot[a])
        if b is not None:
            out += self.total_term(b, self.tot[b] + g.size) - self.total_term(b, self.tot[b])
        return out

    def move(self, i: int, b: str | None) -> None:
        a = self.where[i]
        g = self.groups[i]
        for c, k in g.cells:
            if a is not None:
                self.x[(c, a)] -= k
            if b is not None:
                self.x[(c, b)] += k
        if a is not None:
            self.tot[a] -= g.size
        if b is not None:
            self.tot[b] += g.size
        self.where[i] = b


_EPS = 1e-12


def _local_search(state: _State, order: Sequence[int], by_domain: Mapping[str, list[int]]) -> None:
    """Until no move lowers the cost: single-group moves, then same-domain swaps,
    then (only when neither helps) same-domain moves of two groups at once."""
    while _single_moves(state, order) | _swaps(state, by_domain) or _pair_moves(state, by_domain):
        pass


def _single_moves(state: _State, order: Sequence[int]) -> bool:
    improved = False
    for i in order:
        a = state.where[i]
        best, best_s = -_EPS, None
        for s in SPLITS:
            if s != a:
                d = state.delta([(i, a, s)])
                if d < best:
                    best, best_s = d, s
        if best_s is not None:
            state.move(i, best_s)
            improved = True
    return improved


def _domains(by_domain: Mapping[str, list[int]]) -> list[str]:
    return sorted(by_domain, key=lambda x: _cell_order((x, "")))


def _swaps(state: _State, by_domain: Mapping[str, list[int]]) -> bool:
    improved = False
    for d in _domains(by_domain):
        idx = by_domain[d]
        for p, i in enumerate(idx):
            for j in idx[p + 1 :]:
                a, b = state.where[i], state.where[j]
                if a != b and state.delta([(i, a, b), (j, b, a)]) < -_EPS:
                    state.move(i, b)
                    state.move(j, a)
                    improved = True
    return improved


def _pair_moves(state: _State, by_domain: Mapping[str, list[int]]) -> bool:
    """The best joint move of two groups of one domain, if it lowers the cost."""
    best, best_move = -_EPS, None
    for d in _domains(by_domain):
        idx = by_domain[d]
        for p, i in enumerate(idx):
            for j in idx[p + 1 :]:
                a, b = state.where[i], state.where[j]
                for si in SPLITS:
                    for sj in SPLITS:
                        if si == a or sj == b:
                            continue  # a one-group move or a swap: tried already
                        delta = state.delta([(i, a, si), (j, b, sj)])
                        if delta < best:
                            best, best_move = delta, (i, si, j, sj)
    if best_move is None:
        return False
    i, si, j, sj = best_move
    state.move(i, si)
    state.move(j, sj)
    return True


def _search(groups: Sequence[Group], seed: tuple[str | int, ...], restarts: int) -> list[str]:
    """The best assignment of ``groups`` under :class:`_State`'s cost: exhaustive
    for up to :data:`EXHAUSTIVE_MAX` groups, else seeded restarts of greedy
    placement plus local search."""
    cell_sizes: Counter[Cell] = Counter()
    for g in groups:
        for c, k in g.cells:
            cell_sizes[c] += k
    by_domain: dict[str, list[int]] = {}
    for i, g in enumerate(groups):
        by_domain.setdefault(g.domains[0] if g.domains else "", []).append(i)
    if len(groups) <= EXHAUSTIVE_MAX:
        best_cost, best_where = math.inf, [SPLITS[0]] * len(groups)
        for combo in itertools.product(SPLITS, repeat=len(groups)):
            state = _State(groups, cell_sizes)
            for i, s in enumerate(combo):
                state.move(i, s)
            cost = state.cost()
            if cost < best_cost - _EPS:
                best_cost, best_where = cost, list(combo)
        return best_where
    best: tuple[float, list[str]] | None = None
    for r in range(restarts):
        random = rng(*seed, r)
        order = list(range(len(groups)))
        random.shuffle(order)
        # Annealing on a softened cost (a row outside a band costs SOFT_PENALTY),
        # from a greedy start: largest groups first, each where it costs least.
        soft = _State(groups, cell_sizes, penalty=SOFT_PENALTY)
        for i in sorted(order, key=lambda i: -groups[i].size):
            choice = min(SPLITS, key=lambda s: (soft.delta([(i, None, s)]), SPLITS.index(s)))
            soft.move(i, choice)
        _anneal(soft, random)
        state = _State(groups, cell_sizes)
        for i, placed in enumerate(soft.where):
            state.move(i, placed)
        _local_search(state, order, by_domain)
        cost = state.cost()
        if best is None or cost < best[0] - _EPS:
            best = (cost, [w or SPLITS[0] for w in state.where])
    return best[1] if best is not None else []


def _anneal(state: _State, random: Any) -> None:
    """Seeded simulated annealing: :data:`ANNEAL_STEPS` random single-group moves
    or swaps, accepted when they lower the cost or with probability
    exp(-delta / T), T falling geometrically from ANNEAL_T0 to ANNEAL_T1."""
    n = len(state.groups)
    if n < 2:
        return
    steps = ANNEAL_STEPS
    ratio = (ANNEAL_T1 / ANNEAL_T0) ** (1 / steps)
    temp = ANNEAL_T0
    for _ in range(steps):
        i = random.randrange(n)
        a = state.where[i]
        if random.random() < 0.5:
            others = [s for s in SPLITS if s != a]
            b = others[random.randrange(len(others))]
            moves: list[tuple[int, str | None, str | None]] = [(i, a, b)]
        else:
            j = random.randrange(n)
            b = state.where[j]
            if a == b:
                temp *= ratio
                continue
            moves = [(i, a, b), (j, b, a)]
        delta = state.delta(moves)
        if delta < 0 or random.random() < math.exp(-delta / temp):
            for k, _src, dst in moves:
                state.move(k, dst)
        temp *= ratio


def pack(groups: Sequence[Group], *, seed: str = SEED, restarts: int = RESTARTS) -> list[str]:
    """The split of each group (step 3), in the order of ``groups``: each domain's
    groups are packed on their own (cell shares, and the domain's own split
    totals), then a local search over all groups brings the global split totals
    within tolerance."""
    by_domain: dict[str, list[int]] = {}
    for i, g in enumerate(groups):
        by_domain.setdefault(g.domains[0] if g.domains else "", []).append(i)
    where: list[str] = [SPLITS[0]] * len(groups)
    for d in sorted(by_domain, key=lambda x: _cell_order((x, ""))):
        idx = by_domain[d]
        for i, s in zip(idx, _search([groups[i] for i in idx], (seed, d), restarts), strict=True):
            where[i] = s
    cell_sizes: Counter[Cell] = Counter()
    for g in groups:
        for c, k in g.cells:
            cell_sizes[c] += k
    state = _State(groups, cell_sizes)
    for i, s in enumerate(where):
        state.move(i, s)
    order = list(range(len(groups)))
    rng(seed, "global").shuffle(order)
    _local_search(state, order, by_domain)
    return [w or SPLITS[0] for w in state.where]


def assign_splits(rows: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """``id -> split`` for rows carrying ``id``, ``domain``, ``label``,
    ``source``, ``query_a`` and ``query_b``. Independent of input order."""
    groups = family_groups(rows)
    out: dict[str, str] = {}
    for g, s in zip(groups, pack(groups), strict=True):
        for rid in g.ids:
            out[rid] = s
    return out


# --- measurement -------------------------------------------------------------------------


def split_stats(rows: Sequence[Mapping[str, Any]], *, largest: int = 5) -> dict[str, Any]:
    """What the manifest records about an assignment of full rows (with ``split``):
    the algorithm, rows per split, the group count and largest groups, the
    worst cell-share deviation (in percentage points, as a string fraction of
    the exact value rounded to 2 decimals) and the shared families/texts
    between splits (0 and 0 when the assignment is family- and text-disjoint).
    """
    groups = family_groups(rows)
    by_split = dict.fromkeys(SPLITS, 0)
    for r in rows:
        by_split[r["split"]] += 1
    cells: dict[Cell, Counter[str]] = {}
    for r in rows:
        cells.setdefault((r["domain"], r["label"]), Counter())[r["split"]] += 1
    worst = Fraction(0)
    for cnt in cells.values():
        n = sum(cnt.values())
        for s in SPLITS:
            worst = max(worst, abs(Fraction(cnt[s], n) - SHARES[s]))
    return {
        "algorithm": ALGORITHM,
        "grouping": "source family + normalised query text (NFKC, casefold, "
        "punctuation and whitespace folded), union-find",
        "cell_tolerance_points": float(CELL_TOLERANCE * 100),
        "total_tolerance_rows": TOTAL_TOLERANCE,
        "by_split": by_split,
        "groups": len(groups),
        "largest_groups": [
            {"key": g.key, "rows": g.size, "families": len(g.sources)}
            for g in sorted(groups, key=lambda g: (-g.size, g.key))[:largest]
        ],
        "max_cell_deviation_points": round(float(worst * 100), 2),
        "shared_families": len(shared_between_splits(rows, "source")),
        "shared_texts": len(shared_between_splits(rows, "text")),
    }


def shared_between_splits(rows: Sequence[Mapping[str, Any]], what: str) -> list[str]:
    """The sources (``what="source"``) or normalised query texts (``"text"``)
    that occur in more than one split, sorted."""
    seen: dict[str, set[str]] = {}
    for r in rows:
        if what == "source":
            keys = [row_source(r)]
        else:
            keys = [fold_text(r[f]) for f in ("query_a", "query_b") if isinstance(r.get(f), str)]
        for k in keys:
            seen.setdefault(k, set()).add(r["split"])
    return sorted(k for k, s in seen.items() if len(s) > 1)
