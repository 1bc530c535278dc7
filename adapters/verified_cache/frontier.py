"""How far the verified cache can follow its embedding: the verifier's odds mixed
with the query cosine's, re-certified on dev at every mix.

The shipped cache serves a pair when the verifier's P(HIT) ``p`` clears a
threshold certified on dev; the embedding alone would serve by the query cosine.
Between the two lies one family of scores, a weight ``w`` in [0, 1]:

    z_w = (1 - w) * logit(p) + w * (a + b * cos)
    s_w = sigmoid(z_w)

where ``a + b * cos`` is the cosine's own log-odds of HIT, a logistic fit on the
train split's pairs that reach the verifier (:func:`fit_cosine_odds`), so both
terms are log-odds on the same rows. ``w = 0`` is the shipped verifier's P(HIT);
``w = 1`` an increasing function of the cosine, ranking exactly as the embedding
does. Only pairs that reach the verifier are mixed: a policy refusal or a pair
below the recall gate is never served, an exact repeat always is (the tiers of
:func:`~.model.decide`). Every ``s_w`` gets its own threshold certified on dev by
the shipped rule (:func:`~.model.certify_threshold`), so each point of the
frontier carries the same false-hit guarantee, and what it costs CacheEval and
what it gives on other pair files can be read side by side
(``scripts/ablate_verified_cache.py``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cacheeval.metrics.sweep import OperatingPoint

from .model import Certificate, certify_threshold
from .training import Scored, pair_file_figures, scored_at, summarize

#: Probabilities are clipped this far from 0 and 1 before taking log-odds.
EPS = 1e-9

#: The mixing weights the ablation report walks (0: the verifier, 1: the cosine).
WEIGHTS: tuple[float, ...] = (0.0, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9, 1.0)


def _logit(q: float) -> float:
    q = min(max(q, EPS), 1.0 - EPS)
    return math.log(q / (1.0 - q))


def _sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))


def fit_cosine_odds(
    cosines: Sequence[float], labels: Sequence[int], l2: float = 1e-3, steps: int = 50
) -> tuple[float, float]:
    """``(a, b)`` of the logistic regression ``P(HIT) = sigmoid(a + b * cos)``
    (Newton's method on the mean log-loss plus ``l2 * b**2 / 2``).

    >>> a, b = fit_cosine_odds([0.2, 0.4, 0.6, 0.8], [0, 1, 0, 1])
    >>> b > 0 and abs(a + 0.5 * b) < 1e-6  # symmetric about cos = 0.5
    True
    """
    if len(cosines) != len(labels) or not cosines:
        raise ValueError("need as many labels as cosines, and at least one")
    a = b = 0.0
    n = len(cosines)
    for _ in range(steps):
        ga, gb, haa, hab, hbb = 0.0, l2 * b, 0.0, 0.0, l2
        for x, y in zip(cosines, labels, strict=True):
            q = _sigmoid(a + b * x)
            w = q * (1.0 - q) / n
            ga += (q - y) / n
            gb += (q - y) * x / n
            haa, hab, hbb = haa + w, hab + w * x, hbb + w * x * x
        det = haa * hbb - hab * hab
        if det <= 0.0:
            break
        da, db = (hbb * ga - hab * gb) / det, (haa * gb - hab * ga) / det
        a, b = a - da, b - db
        if abs(da) + abs(db) < 1e-12:
            break
    return a, b


@dataclass(frozen=True, slots=True)
class Mix:
    """A cache mixing the verifier's log-odds with the cosine's at ``weight``."""

    weight: float
    a: float
    b: float

    def __post_init__(self) -> None:
        if not 0.0 <= self.weight <= 1.0:
            raise ValueError(f"weight must be in [0, 1], got {self.weight}")

    def score(self, p: float, cosine: float) -> float:
        """``s_w`` of a pair that reached the verifier (module docstring).

        >>> Mix(0.0, 1.0, 2.0).score(0.8, 0.3)  # the verifier's own P(HIT)
        0.8
        >>> round(Mix(1.0, -1.0, 2.0).score(0.8, 0.5), 6)  # sigmoid(-1 + 2 * 0.5)
        0.5
        >>> round(Mix(0.5, 0.0, 2.0).score(0.5, 0.5), 6)  # z = 0.5 * 0 + 0.5 * 1
        0.622459
        """
        if self.weight == 0.0:
            return p
        z = (1.0 - self.weight) * _logit(p) + self.weight * (self.a + self.b * cosine)
        return _sigmoid(z)

    def tier_score(self, s: Scored) -> float:
        """The score this cache certifies a pair of the shipped model's scored
        rows on: ``s_w`` when it reached the verifier; otherwise the tier's own
        raw score (:func:`~.training.case_score`: 1.0 exact, 0.0 never served)."""
        return self.score(s.raw, s.case.cos_query) if s.tier == "verifier" else s.raw

    def certify(self, dev: Sequence[Scored]) -> Certificate:
        """The threshold on ``s_w`` certified on the dev pairs (FHR upper bound
        within the shipped budget)."""
        return certify_threshold([self.tier_score(s) for s in dev], [s.case.y for s in dev])

    def rescore(self, scored: Sequence[Scored], point: OperatingPoint) -> list[Scored]:
        """The shipped model's scored pairs decided again by this cache at
        ``point``, by the cache's tier rule (:func:`~.training.scored_at`):
        ``raw`` becomes ``s_w``."""
        return [scored_at(s.case, self.tier_score(s), s.tier, point) for s in scored]


def frontier(
    scored: Sequence[Scored],
    pair_files: Mapping[str, tuple[Sequence[Scored], Sequence[float]]],
    weights: Sequence[float] = WEIGHTS,
    oof: Sequence[Scored] = (),
) -> list[dict[str, Any]]:
    """One row per weight: the certificate on the dev pairs of ``scored`` (the
    shipped model's scored CacheEval rows), the test split's FHR, recall and
    ADVERSARIAL FHR at it, and on each pair file (its shipped-model scored pairs
    and their MiniLM cosines) :func:`~.training.pair_file_figures`. With ``oof``
    (cross-fitted scores of every labelled row), also their FHR and recall at a
    threshold certified on themselves, as the out-of-fold report certifies
    (:func:`~.training.out_of_fold`)."""
    train = [s for s in scored if s.case.split == "train" and s.tier == "verifier"]
    a, b = fit_cosine_odds([s.case.cos_query for s in train], [s.case.y for s in train])
    dev = [s for s in scored if s.case.split == "dev"]
    test = [s for s in scored if s.case.split == "test"]
    rows = []
    for w in weights:
        mix = Mix(w, a, b)
        cert = mix.certify(dev)
        t = summarize(mix.rescore(test, cert.point))
        row: dict[str, Any] = {
            "weight": w,
            "cosine_log_odds": [a, b],
            "certified": cert.certified,
            "threshold": cert.point.threshold,
            "dev_fp": cert.fp,
            "dev_fhr_upper": cert.fhr_upper,
            "test": {"fhr": t["fhr"], "recall": t["recall"],
                     "adversarial_fhr": t["adversarial"]["fhr"]},
            "external": {},
        }  # fmt: skip
        if oof:
            o = summarize(mix.rescore(oof, mix.certify(oof).point))
            row["oof"] = {"fhr": o["fhr"], "recall": o["recall"]}
        for name, (pairs, cosines) in pair_files.items():
            row["external"][name] = pair_file_figures(mix.rescore(pairs, cert.point), cosines)
        rows.append(row)
    return rows
