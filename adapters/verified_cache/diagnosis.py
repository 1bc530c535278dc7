"""Where the verified cache loses recall: why it refuses each servable pair, and
what perfect detector precision would be worth.

A servable (HIT) pair the cache refuses was refused for one of four reasons:
a never-cache policy, a query cosine below the recall gate, the verifier with a
detected difference (a feature that can only lower P(HIT), :func:`~.model.direction`
-1, is non-zero), or the verifier with nothing detected (a rewording its
similarities do not recognise). :func:`refusals` counts them, and how often each
detector fired on the refused pairs.

:func:`detectors_silenced_on_hits` is an oracle for diagnosis, never a model to
ship: it zeroes every detector on the HIT rows only (labels decide), so a model
trained and scored on its output shows what the verifier would reach if no
detector ever fired on a paraphrase.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from .features import FEATURE_NAMES
from .model import direction
from .training import PairCase, Scored, fit_shipped, out_of_fold, summarize

#: Every feature that can only lower P(HIT): the detectors of differences.
DETECTORS: tuple[str, ...] = tuple(n for n in FEATURE_NAMES if direction(n) == -1)

#: Detectors that pool others (named with the ones they pool, not alone).
POOLED: frozenset[str] = frozenset({"critical_diff", "num_any_diff"})

#: Why a servable pair was refused, in report order.
REASONS: tuple[str, ...] = (
    "never-cache policy",
    "below the recall gate",
    "verifier: a difference detected",
    "verifier: nothing detected",
)


def fired(case: PairCase) -> tuple[str, ...]:
    """The detectors (pooled ones left out) that fired on ``case``."""
    if case.features is None:
        return ()
    return tuple(
        n
        for n, v in zip(FEATURE_NAMES, case.features, strict=True)
        if v > 0 and n in DETECTORS and n not in POOLED
    )


def refusal_reason(s: Scored) -> str:
    """Why a refused pair was refused (one of :data:`REASONS`)."""
    if s.hit:
        raise ValueError(f"{s.case.id} was served")
    if s.tier == "policy":
        return REASONS[0]
    if s.tier != "verifier":
        return REASONS[1]
    return REASONS[2] if fired(s.case) else REASONS[3]


def refusals(scored: Sequence[Scored]) -> dict[str, Any]:
    """The servable pairs of ``scored`` and the ones refused, by reason, and how
    many refused pairs each detector fired on (a pair counts once per detector)."""
    refused = [s for s in scored if s.case.y == 1 and not s.hit]
    reasons = Counter(refusal_reason(s) for s in refused)
    detectors = Counter(n for s in refused for n in fired(s.case) if s.tier == "verifier")
    return {
        "servable": sum(1 for s in scored if s.case.y == 1),
        "refused": len(refused),
        "by_reason": {r: reasons[r] for r in REASONS},
        "by_detector": dict(sorted(detectors.items(), key=lambda kv: (-kv[1], kv[0]))),
    }


def zeroed(
    cases: Sequence[PairCase],
    names: Sequence[str],
    where: Callable[[PairCase], bool] = lambda case: True,
) -> list[PairCase]:
    """``cases`` with the feature columns ``names`` set to 0.0 on the cases
    ``where`` selects (all by default); the others, and cases without features,
    unchanged."""
    idx = [FEATURE_NAMES.index(n) for n in names]
    out = []
    for c in cases:
        if c.features is None or not where(c):
            out.append(c)
            continue
        f = list(c.features)
        for i in idx:
            f[i] = 0.0
        out.append(dataclasses.replace(c, features=tuple(f)))
    return out


def detectors_silenced_on_hits(cases: Sequence[PairCase]) -> list[PairCase]:
    """``cases`` with every detector set to 0.0 on the HIT rows (the oracle)."""
    return zeroed(cases, DETECTORS, lambda case: case.y == 1)


def seed_figures(cases: Sequence[PairCase], seed_offsets: Sequence[int]) -> dict[str, Any]:
    """Test-split and out-of-fold FHR and recall of the shipped pipeline retrained
    with each seed offset (:func:`~.training.fit_shipped`,
    :func:`~.training.out_of_fold`; offset 0 is the shipped model), and their means."""
    runs = []
    for k in seed_offsets:
        shipped = fit_shipped(cases, seed_offset=k)
        test = summarize([s for s in shipped.scored if s.case.split == "test"])
        oof = summarize(out_of_fold(cases, seed_offset=k).scored)
        runs.append({"seed_offset": k, "test_fhr": test["fhr"], "test_recall": test["recall"],
                     "oof_fhr": oof["fhr"], "oof_recall": oof["recall"]})  # fmt: skip
    keys = ("test_fhr", "test_recall", "oof_fhr", "oof_recall")
    return {"runs": runs, "mean": {k: _mean([r[k] for r in runs]) for k in keys}}


def _mean(values: Sequence[float | None]) -> float | None:
    """The mean of the values that exist (None when none does: a split with no rows)."""
    present = [v for v in values if v is not None]
    return statistics.fmean(present) if present else None
