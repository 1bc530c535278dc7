"""Metrics of a shared-cache replay (top-1 retrieval over a whole store).

In a replay every row's side a is stored in one cache and every row's side b
is looked up against all of it (see :mod:`cacheeval.replay.engine`). The labels say,
for each lookup, which stored entries are *acceptable* (serving their answer
is right) and which are *judged wrong*; :mod:`cacheeval.replay.engine` derives both
from the benchmark's labelled pairs. Every other entry is *unjudged*: no label
relates it to the request (it may well be a correct answer - the same question
worded alike - or a wrong one). A lookup is *servable* when it has an
acceptable entry. A lookup *fires* when the cache returns an entry; the
outcome is

* ``"valid"``: the entry is acceptable;
* ``"partner"``: the entry is the row's own partner but not acceptable (the
  false hit pair mode also counts);
* ``"wrong_entry"``: another entry judged wrong for this request;
* ``"unjudged"``: another entry no label judges;
* ``"none"``: nothing was returned.

"Wrong-entry hits" are the last two together: fires on an entry other than
the acceptable ones and the row's own partner (a retrieval error pair mode
cannot see, or an unlabelled near-copy). With N lookups, P of them servable
and Nn = N - P not (seeds' "Closing the Calibration Gap in Semantic Caching",
section 3.2, appendix D):

* ``CHR = fired / N``, ``VCHR = valid / N``, ``precision = VCHR / CHR = valid / fired``;
* ``FHR = fired on unservable lookups / Nn`` (no fire of those is acceptable);
  ``judged FHR`` counts only the fires on a judged-wrong entry or the own
  partner (unjudged fires left out): the two bound the true FHR;
* ``wrong-entry hit rate = (wrong_entry + unjudged) / N``, of which
  ``unjudged / N``; ``recall = valid / P``.

Unjudged fires count against precision and FHR, so both are conservative
(lower and upper bounds) when the store holds unlabelled near-copies.

Threshold sweep: a lookup has a candidate (the entry it would serve) with a
score; at threshold tau it fires when ``score >= tau``. At the k-th distinct
score from the top, ``fired_k`` lookups fire and ``valid_k`` are valid, and

    ``P-CHR AUC = sum_k (fired_k - fired_{k-1}) / N * valid_k / fired_k``,

the area under precision against CHR (a perfect ranker tends to
``p (1 - ln p)`` with ``p = P / N``). The best operating point under an FHR
budget alpha is the threshold with the most valid fires among those whose
``FHR <= alpha`` (the highest such threshold on ties). Lookups without a
candidate never fire.
"""

from __future__ import annotations

import math
from collections.abc import Container, Sequence
from dataclasses import dataclass

from .classification import Estimate, proportion
from .ranking import fhr_budget

VALID = "valid"
PARTNER = "partner"
WRONG_ENTRY = "wrong_entry"
UNJUDGED = "unjudged"
NONE = "none"
#: Every outcome of a lookup, in table order.
OUTCOMES: tuple[str, ...] = (VALID, PARTNER, WRONG_ENTRY, UNJUDGED, NONE)


def lookup_outcome(
    entry: str | None,
    acceptable: Container[str],
    partners: Container[str],
    judged_wrong: Container[str],
) -> str:
    """The outcome of one lookup that returned ``entry`` (None: nothing), given
    its acceptable entries, the row's own partner entries and the entries
    judged wrong for it.

    >>> lookup_outcome("e1", {"e1"}, {"e1"}, set()), lookup_outcome("e1", set(), {"e1"}, {"e1"})
    ('valid', 'partner')
    >>> lookup_outcome("e2", {"e1"}, {"e1"}, {"e2"}), lookup_outcome("e3", {"e1"}, {"e1"}, {"e2"})
    ('wrong_entry', 'unjudged')
    >>> lookup_outcome(None, {"e1"}, {"e1"}, set())
    'none'
    """
    if entry is None:
        return NONE
    if entry in acceptable:
        return VALID
    if entry in partners:
        return PARTNER
    if entry in judged_wrong:
        return WRONG_ENTRY
    return UNJUDGED


@dataclass(frozen=True, slots=True)
class ReplayCounts:
    """Lookups by outcome. ``n_servable`` lookups have an acceptable entry;
    ``fired_miss`` counts fires on the others (none of them acceptable),
    ``fired_miss_unjudged`` those of them on an unjudged entry."""

    n: int
    n_servable: int
    fired: int
    valid: int
    partner: int
    wrong_entry: int
    unjudged: int
    fired_miss: int
    fired_miss_unjudged: int

    @property
    def n_unservable(self) -> int:
        return self.n - self.n_servable


def replay_counts(outcomes: Sequence[str], servable: Sequence[bool]) -> ReplayCounts:
    """Count the outcomes of N lookups (``servable[i]``: lookup i has an acceptable entry).

    >>> replay_counts(["valid", "wrong_entry", "partner", "unjudged", "none"],
    ...               [True, True, False, False, False])  # doctest: +NORMALIZE_WHITESPACE
    ReplayCounts(n=5, n_servable=2, fired=4, valid=1, partner=1, wrong_entry=1, unjudged=1,
                 fired_miss=2, fired_miss_unjudged=1)
    """
    if len(outcomes) != len(servable):
        raise ValueError(f"{len(outcomes)} outcomes but {len(servable)} servable flags")
    tally = dict.fromkeys(OUTCOMES, 0)
    fired_miss = fired_miss_unjudged = 0
    for o, ok in zip(outcomes, servable, strict=True):
        if o not in tally:
            raise ValueError(f"unknown outcome {o!r}")
        if o == VALID and not ok:
            raise ValueError("a lookup without an acceptable entry cannot be valid")
        tally[o] += 1
        fired_miss += o != NONE and not ok
        fired_miss_unjudged += o == UNJUDGED and not ok
    n = len(outcomes)
    return ReplayCounts(
        n=n,
        n_servable=sum(map(bool, servable)),
        fired=n - tally[NONE],
        valid=tally[VALID],
        partner=tally[PARTNER],
        wrong_entry=tally[WRONG_ENTRY],
        unjudged=tally[UNJUDGED],
        fired_miss=fired_miss,
        fired_miss_unjudged=fired_miss_unjudged,
    )


@dataclass(frozen=True, slots=True)
class ReplayRates:
    """The rates of a replay (module docstring), each with its Wilson interval."""

    chr: Estimate
    vchr: Estimate
    precision: Estimate
    fhr: Estimate
    fhr_judged: Estimate
    wrong_entry_rate: Estimate
    unjudged_rate: Estimate
    recall: Estimate


def replay_rates(c: ReplayCounts) -> ReplayRates:
    """``CHR = fired/N``, ``VCHR = valid/N``, ``precision = valid/fired``,
    ``FHR = fired_miss/Nn``, ``judged FHR = (fired_miss - fired_miss_unjudged)/Nn``,
    ``wrong-entry hit rate = (wrong_entry + unjudged)/N``,
    ``unjudged rate = unjudged/N``, ``recall = valid/P``.

    A store giving a wrong-entry hit and a valid hit on two servable lookups, a
    fire on a MISS row's own partner and nothing on another MISS row:

    >>> r = replay_rates(ReplayCounts(4, 2, fired=3, valid=1, partner=1, wrong_entry=1,
    ...                               unjudged=0, fired_miss=1, fired_miss_unjudged=0))
    >>> r.chr.value, r.vchr.value, r.precision.value, r.fhr.value, r.fhr_judged.value
    (0.75, 0.25, 0.3333333333333333, 0.5, 0.5)
    >>> r.wrong_entry_rate.value, r.unjudged_rate.value, r.recall.value
    (0.25, 0.0, 0.5)
    """
    return ReplayRates(
        chr=proportion(c.fired, c.n),
        vchr=proportion(c.valid, c.n),
        precision=proportion(c.valid, c.fired),
        fhr=proportion(c.fired_miss, c.n_unservable),
        fhr_judged=proportion(c.fired_miss - c.fired_miss_unjudged, c.n_unservable),
        wrong_entry_rate=proportion(c.wrong_entry + c.unjudged, c.n),
        unjudged_rate=proportion(c.unjudged, c.n),
        recall=proportion(c.valid, c.n_servable),
    )


@dataclass(frozen=True, slots=True)
class ReplayPoint:
    """The replay at threshold ``score >= threshold``: lookups fired, valid
    fires, fires on unservable lookups, wrong-entry fires (judged or not)."""

    threshold: float
    fired: int
    valid: int
    fired_miss: int
    wrong_entry: int


@dataclass(frozen=True, slots=True)
class ReplayOperatingPoint:
    """The best threshold under ``FHR <= alpha`` (None: never fire)."""

    alpha: float
    threshold: float | None
    chr: float | None
    vchr: float | None
    precision: float | None
    fhr: float | None
    wrong_entry_rate: float | None


def replay_curve(
    scores: Sequence[float | None], outcomes: Sequence[str], servable: Sequence[bool]
) -> tuple[ReplayPoint, ...]:
    """One point per distinct candidate score, highest first. ``outcomes[i]``
    is what lookup i returns once it fires (``"none"``: no candidate, never
    fires, like a None score).

    >>> replay_curve([0.9, 0.8, 0.7, None], ["valid", "wrong_entry", "partner", "none"],
    ...              [True, True, False, False])  # doctest: +NORMALIZE_WHITESPACE
    (ReplayPoint(threshold=0.9, fired=1, valid=1, fired_miss=0, wrong_entry=0),
     ReplayPoint(threshold=0.8, fired=2, valid=1, fired_miss=0, wrong_entry=1),
     ReplayPoint(threshold=0.7, fired=3, valid=1, fired_miss=1, wrong_entry=1))
    """
    if not len(scores) == len(outcomes) == len(servable):
        raise ValueError("scores, outcomes and servable differ in length")
    replay_counts(outcomes, servable)  # validates the outcomes
    groups: dict[float, list[int]] = {}
    for s, o, hit in zip(scores, outcomes, servable, strict=True):
        if s is None or o == NONE:
            continue
        if not math.isfinite(s):
            raise ValueError("scores must be finite numbers (or None)")
        g = groups.setdefault(s, [0, 0, 0, 0])
        g[0] += 1
        g[1] += o == VALID
        g[2] += not hit
        g[3] += o in (WRONG_ENTRY, UNJUDGED)
    out: list[ReplayPoint] = []
    fired = valid = miss = wrong = 0
    for s in sorted(groups, reverse=True):
        a, v, m, w = groups[s]
        fired, valid, miss, wrong = fired + a, valid + v, miss + m, wrong + w
        out.append(ReplayPoint(s, fired, valid, miss, wrong))
    return tuple(out)


def replay_p_chr_auc(points: Sequence[ReplayPoint], n: int) -> float | None:
    """``sum_k (fired_k - fired_{k-1}) / N * valid_k / fired_k`` over the
    curve's points (None for N = 0).

    >>> pts = replay_curve([0.9, 0.8, 0.7, None], ["valid", "wrong_entry", "partner", "none"],
    ...                    [True, True, False, False])
    >>> replay_p_chr_auc(pts, 4)  # 1/4 * 1/1 + 1/4 * 1/2 + 1/4 * 1/3
    0.4583333333333333
    """
    if n == 0:
        return None
    area = 0.0
    before = 0
    for p in points:
        area += (p.fired - before) * p.valid / p.fired
        before = p.fired
    return area / n


def best_replay_point(
    points: Sequence[ReplayPoint], n: int, n_unservable: int, alpha: float
) -> ReplayOperatingPoint:
    """The threshold with the most valid fires among those with
    ``fired_miss / n_unservable <= alpha`` (highest threshold on ties; None
    when no admissible threshold has a valid fire).

    >>> pts = replay_curve([0.9, 0.8, 0.7, None], ["valid", "wrong_entry", "partner", "none"],
    ...                    [True, True, False, False])
    >>> best_replay_point(pts, 4, 2, 0.0)  # doctest: +NORMALIZE_WHITESPACE
    ReplayOperatingPoint(alpha=0.0, threshold=0.9, chr=0.25, vchr=0.25, precision=1.0, fhr=0.0,
                         wrong_entry_rate=0.0)
    """
    limit = fhr_budget(alpha, n_unservable) if n_unservable else n
    best: ReplayPoint | None = None
    for p in points:
        if p.fired_miss > limit:
            break
        if p.valid and (best is None or p.valid > best.valid):
            best = p
    if best is None:
        return ReplayOperatingPoint(
            alpha=alpha,
            threshold=None,
            chr=0.0 if n else None,
            vchr=0.0 if n else None,
            precision=None,
            fhr=0.0 if n_unservable else None,
            wrong_entry_rate=0.0 if n else None,
        )
    return ReplayOperatingPoint(
        alpha=alpha,
        threshold=best.threshold,
        chr=best.fired / n,
        vchr=best.valid / n,
        precision=best.valid / best.fired,
        fhr=best.fired_miss / n_unservable if n_unservable else None,
        wrong_entry_rate=best.wrong_entry / n,
    )


def thin_curve(
    points: Sequence[ReplayPoint], n: int, max_points: int = 200
) -> tuple[ReplayPoint, ...]:
    """At most ``max_points + 1`` of ``points`` for drawing: the first, the last,
    and the first point past each ``n / max_points`` step of ``fired``.

    >>> pts = [ReplayPoint(1 - i / 10, i + 1, i, 0, 0) for i in range(10)]
    >>> [p.fired for p in thin_curve(pts, 10, max_points=4)]
    [1, 3, 5, 8, 10]
    """
    if max_points < 1:
        raise ValueError("max_points must be at least 1")
    step = n / max_points
    out: list[ReplayPoint] = []
    mark = step
    for i, p in enumerate(points):
        if i == 0 or i == len(points) - 1 or p.fired >= mark:
            out.append(p)
            while mark <= p.fired:
                mark += step
    return tuple(out)
