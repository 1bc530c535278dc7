"""The public-feedback mechanism of the board: a fixed, secret public/private
half split of the test rows, coarse levels, and the Ladder.

Why: exact aggregate feedback leaks labels. Flipping one prediction between
two uploads moves an exact FHR numerator by one exactly when that row is a
MISS row, so ``k`` uploads read back ``k`` labels, and cleverer adaptive
sequences read back many labels per upload. The mechanism below follows the
Ladder of Blum & Hardt ("The Ladder: A Reliable Leaderboard for Machine
Learning Competitions", ICML 2015) on a fixed hold-out half:

1. **Halves** (:func:`split_halves`). The test rows are split once, by a
   server secret (``salt``), into a public and a private half, stratified by
   the binary label. Nothing an upload gets back depends on a private-half
   label.
2. **Levels** (:data:`LEVELS`, :func:`level_of`). On the public half a
   submission's FHR and recall are mapped to one of six totally ordered
   levels: two FHR bands over the 5% budget, then four recall bands within
   it. The board's order is the level: a cache that serves nothing (recall 0)
   sits at "within budget, recall below 50%" under every real cache that
   serves well within the budget, and a cache over budget sits below all of
   them.
3. **Ladder** (:func:`ladder`). Per submitter, a submission's level is
   *released* only when it is strictly above the best level that submitter
   has been shown; otherwise the answer is "not above your best". The
   released levels of one submitter only ever go up, so most uploads of a
   probing attacker return the same answer.

4. **Sub-score bands** (:data:`SUBSCORE_BANDS`, :func:`subscore_band`). With
   a released level come three coarse bands, one per skill of
   :func:`cacheeval.schema.subscore_of` (query, context key, policy), on the
   same public half: over the FHR budget, or within it with recall below or
   at least 50% (policy rows are all never-cache, so their band is the FHR
   verdict alone). They are released only with a level, never otherwise.

**Leak bound** (:func:`leak_bound`). After ``k`` uploads the whole answer
sequence of one submitter is a choice of at most ``L`` strictly increasing
released levels at some of the ``k`` positions, so there are at most
``sum_r C(k, r) C(L, r) = C(k + L, L)`` transcripts (Vandermonde); each of
the at most ``R = min(k, L)`` releases also carries one band per sub-score,
``S = prod_s |bands_s|`` choices. The feedback carries at most
``B = log2 C(k + L, L) + R log2 S`` bits about the labels, whatever the
strategy. If the attacker knows nothing else about the labels
(a priori independent with the base rate ``p``), rate distortion bounds the
expected accuracy ``a`` of any label guess on the ``n`` public-half rows by
``n (H(p) - H(1 - a)) <= B`` (``H`` the binary entropy, ``1 - a <= min(p, 1 - p)``);
the private half stays at the majority rate.

>>> [lv.rank if lv else None for lv in
...  ladder([LEVELS[2], LEVELS[1], LEVELS[2], LEVELS[4], LEVELS[3]])]
[2, None, None, 4, None]
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

#: The false-hit budget of the board.
FHR_BUDGET = 0.05


@dataclass(frozen=True, slots=True)
class Level:
    """One band of the board. ``fhr`` is the FHR interval ``(lo, hi]`` (``[0, hi]``
    for the lowest band) and ``recall`` the recall interval ``[lo, hi)`` (``[lo, 1]``
    for the top band); recall is not banded over budget (None)."""

    rank: int
    name: str
    within_budget: bool
    fhr: tuple[float, float]
    recall: tuple[float, float] | None


#: Lowest first. Six levels: the leak bound's ``L``.
LEVELS: tuple[Level, ...] = (
    Level(0, "over budget: FHR above 20%", False, (0.20, 1.0), None),
    Level(1, "over budget: FHR 5-20%", False, (FHR_BUDGET, 0.20), None),
    Level(2, "FHR within 5%, recall below 50%", True, (0.0, FHR_BUDGET), (0.0, 0.50)),
    Level(3, "FHR within 5%, recall 50-70%", True, (0.0, FHR_BUDGET), (0.50, 0.70)),
    Level(4, "FHR within 5%, recall 70-85%", True, (0.0, FHR_BUDGET), (0.70, 0.85)),
    Level(5, "FHR within 5%, recall 85% or more", True, (0.0, FHR_BUDGET), (0.85, 1.0)),
)
#: The first level within the budget.
FIRST_IN_BUDGET = 2

#: The coarse bands released per sub-score with a level, lowest first. The
#: policy rows are all never-cache (no should-hit row), so only FHR bands them.
SUBSCORE_BANDS: dict[str, tuple[str, ...]] = {
    "query": (
        "over budget",
        "within budget, recall below 50%",
        "within budget, recall 50% or more",
    ),
    "context": (
        "over budget",
        "within budget, recall below 50%",
        "within budget, recall 50% or more",
    ),
    "policy": ("over budget", "within budget"),
}


def subscore_band(subscore: str, tp: int, fp: int, fn: int, tn: int) -> int | None:
    """The band index (in :data:`SUBSCORE_BANDS`) of a sub-score's counts on
    the public half, None when the half has none of its rows. Over budget:
    FHR = FP / (FP + TN) > 5%; within it, recall = TP / (TP + FN) picks the
    band (the policy sub-score has one band within budget).

    >>> subscore_band("query", tp=10, fp=0, fn=10, tn=30)   # recall 0.5
    2
    >>> subscore_band("context", tp=0, fp=2, fn=1, tn=10)   # FHR 2/12
    0
    >>> subscore_band("policy", tp=0, fp=0, fn=0, tn=9), subscore_band("policy", 0, 0, 0, 0)
    (1, None)
    """
    if tp + fp + fn + tn == 0:
        return None
    fhr = fp / (fp + tn) if fp + tn else 0.0
    if fhr > FHR_BUDGET:
        return 0
    bands = SUBSCORE_BANDS[subscore]
    if len(bands) == 2:
        return 1
    recall = tp / (tp + fn) if tp + fn else 0.0
    return 2 if recall >= 0.50 else 1


def subscore_choices() -> int:
    """``S``: how many band triples one release can show.

    >>> subscore_choices()
    18
    """
    return math.prod(len(b) for b in SUBSCORE_BANDS.values())


def level_of(tp: int, fp: int, fn: int, tn: int) -> Level:
    """The level of confusion counts: FHR = FP / (FP + TN) picks the band over
    budget; within budget (FHR <= 5%) recall = TP / (TP + FN) picks the band.
    An empty denominator counts as 0.

    >>> level_of(tp=0, fp=0, fn=40, tn=60).name   # serves nothing
    'FHR within 5%, recall below 50%'
    >>> level_of(tp=36, fp=3, fn=4, tn=57).name   # FHR 0.05, recall 0.9
    'FHR within 5%, recall 85% or more'
    >>> level_of(tp=40, fp=7, fn=0, tn=53).name   # FHR 0.1167
    'over budget: FHR 5-20%'
    """
    fhr = fp / (fp + tn) if fp + tn else 0.0
    if fhr > FHR_BUDGET:
        for lv in LEVELS[:FIRST_IN_BUDGET]:
            if fhr > lv.fhr[0]:
                return lv
    recall = tp / (tp + fn) if tp + fn else 0.0
    for lv in reversed(LEVELS[FIRST_IN_BUDGET:]):
        assert lv.recall is not None
        if recall >= lv.recall[0]:
            return lv
    return LEVELS[FIRST_IN_BUDGET]


def ladder(levels: Iterable[Level]) -> list[Level | None]:
    """The Ladder over one submitter's levels in submission order: each entry
    is the released level, or None when it is not strictly above the best
    released so far."""
    best = -1
    out: list[Level | None] = []
    for lv in levels:
        if lv.rank > best:
            best = lv.rank
            out.append(lv)
        else:
            out.append(None)
    return out


def split_halves(
    ids_by_label: Mapping[str, Sequence[str]], salt: str
) -> tuple[frozenset[str], frozenset[str]]:
    """(public ids, private ids): within each binary label, ids ordered by
    ``sha256(salt, id)`` alternate public/private, so both halves keep the
    label mix. Deterministic in (ids, salt); without the salt the split is
    unknown.

    >>> pub, priv = split_halves({"HIT": ["a", "b"], "MISS": ["c", "d", "e"]}, "s")
    >>> len(pub), len(priv), pub.isdisjoint(priv)
    (3, 2, True)
    """
    if not salt:
        raise ValueError("the hold-out salt must not be empty")
    public: set[str] = set()
    private: set[str] = set()
    for label in sorted(ids_by_label):
        ordered = sorted(
            ids_by_label[label],
            key=lambda i: hashlib.sha256(f"{salt}\x1f{i}".encode()).hexdigest(),
        )
        for n, rid in enumerate(ordered):
            (public if n % 2 == 0 else private).add(rid)
    return frozenset(public), frozenset(private)


# --- the leak bound ----------------------------------------------------------------------------


def binary_entropy(p: float) -> float:
    """H(p) = -p log2 p - (1 - p) log2 (1 - p), with H(0) = H(1) = 0.

    >>> binary_entropy(0.5), binary_entropy(0.0)
    (1.0, 0.0)
    """
    if p <= 0.0 or p >= 1.0:
        return 0.0
    return -p * math.log2(p) - (1.0 - p) * math.log2(1.0 - p)


def transcript_bits(
    k: int, n_levels: int = len(LEVELS), subscore_choices_: int | None = None
) -> float:
    """log2 C(k + L, L) + min(k, L) log2 S: the most information ``k`` answers
    of one submitter can carry (see the module doc); ``S`` defaults to
    :func:`subscore_choices` (1: levels alone).

    >>> round(transcript_bits(100, subscore_choices_=1), 1)   # levels alone
    30.7
    >>> round(transcript_bits(100), 1)   # + 6 releases x log2 18
    55.7
    >>> transcript_bits(0)
    0.0
    """
    s = subscore_choices() if subscore_choices_ is None else subscore_choices_
    return math.log2(math.comb(k + n_levels, n_levels)) + min(k, n_levels) * math.log2(s)


def accuracy_bound(bits: float, n: int, p_majority: float) -> float:
    """The largest expected accuracy ``a`` of a guess of ``n`` labels (prior:
    independent, majority share ``p_majority``) that ``bits`` of information
    allow: the ``a`` with ``n (H(p) - H(1 - a)) = bits``, capped at 1.

    >>> accuracy_bound(0.0, 100, 0.7)
    0.7
    >>> round(accuracy_bound(20.0, 100, 0.7), 3)
    0.819
    """
    if n <= 0:
        return p_majority
    p = max(p_majority, 1.0 - p_majority)
    if bits >= n * binary_entropy(p):
        return 1.0
    lo, hi = p, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2.0
        if n * (binary_entropy(p) - binary_entropy(1.0 - mid)) <= bits:
            lo = mid
        else:
            hi = mid
    return round(lo, 12)


@dataclass(frozen=True, slots=True)
class LeakBound:
    """What ``k`` uploads of one submitter can teach about the test labels."""

    k: int
    n_levels: int
    bits: float
    n_public: int
    n_private: int
    majority_rate: float
    public_accuracy: float
    overall_accuracy: float

    @property
    def points_above_majority(self) -> float:
        """Overall accuracy bound minus the majority rate, in percentage points."""
        return 100.0 * (self.overall_accuracy - self.majority_rate)


def leak_bound(
    k: int,
    n_public: int,
    public_majority: int,
    n_private: int,
    private_majority: int,
    n_levels: int = len(LEVELS),
    subscore_choices_: int | None = None,
) -> LeakBound:
    """The bound of the module doc for ``k`` uploads. ``*_majority`` are the
    counts of the majority binary label in each half (the private half is
    never fed back, so its accuracy stays at its majority rate).

    >>> b = leak_bound(100, 250, 168, 250, 168)
    >>> round(b.bits, 1), round(b.points_above_majority, 1)
    (55.7, 7.2)
    >>> round(leak_bound(100, 250, 168, 250, 168, subscore_choices_=1).points_above_majority, 1)
    4.5
    """
    bits = transcript_bits(k, n_levels, subscore_choices_)
    p_pub = public_majority / n_public if n_public else 0.0
    a_pub = accuracy_bound(bits, n_public, p_pub)
    n = n_public + n_private
    majority = (public_majority + private_majority) / n if n else 0.0
    overall = (a_pub * n_public + private_majority) / n if n else 0.0
    return LeakBound(k, n_levels, bits, n_public, n_private, majority, a_pub, overall)
