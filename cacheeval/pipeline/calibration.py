"""Calibrating difficulty from scores: best-F1 thresholds, correct votes,
buckets, the held-out scorer's buckets and Cohen's kappa, and the contents
of ``sources/difficulty.json``.

Each scorer predicts HIT when ``s >= t``, with ``t`` its own best-F1
threshold over the calibrated rows (:func:`best_f1_threshold`); it decides a
row correctly when that prediction equals the row's ``binary_label``. The
number of ensemble members that decide a row correctly gives its bucket
(:func:`cacheeval.pipeline.difficulty.bucket`).

Agreement check: a held-out scorer outside the ensemble (BM25 over word
tokens, :func:`cacheeval.pipeline.similarity.bm25_similarities`) is bucketed
from its own margin (:func:`held_out_buckets`), and :func:`cohen_kappa`
compares its buckets with the ensemble's. Exact comparisons use Fractions.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ..schema import DIFFICULTIES, DOMAINS, HIT, LABELS
from .difficulty import (
    EASY_MIN_CORRECT,
    FORMAT,
    MEDIUM_MIN_CORRECT,
    N_SCORERS,
    Entry,
    bucket,
    content_key,
)
from .similarity import SCORE_DECIMALS

#: Half-width, as a share of the held-out scorer's own score distribution
#: (0.1 = ten percentile points), of the band around its threshold that counts
#: as "medium". Exact, so a row exactly on the band's edge is never a rounding call.
HELD_OUT_DELTA = Fraction(1, 10)


# --- thresholds, votes, buckets ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Threshold:
    """A best-F1 operating point: predict HIT when ``score >= threshold``."""

    threshold: float
    tp: int
    fp: int
    fn: int
    tn: int

    @property
    def f1(self) -> float:
        """``2 TP / (2 TP + FP + FN)``."""
        return 2 * self.tp / (2 * self.tp + self.fp + self.fn)

    @property
    def accuracy(self) -> float:
        return (self.tp + self.tn) / (self.tp + self.fp + self.fn + self.tn)

    @property
    def fhr(self) -> float:
        """False-hit rate ``FP / (FP + TN)``; 0.0 without MISS rows."""
        return self.fp / (self.fp + self.tn) if self.fp + self.tn else 0.0


def best_f1_threshold(scores: Sequence[float], hits: Sequence[bool]) -> Threshold:
    """The threshold among the observed scores that maximises F1 of
    ``predict HIT iff score >= t`` against ``hits``; ties go to the higher
    threshold (fewer hits served). Raises ValueError without any HIT row."""
    if len(scores) != len(hits):
        raise ValueError(f"{len(scores)} scores for {len(hits)} labels")
    positives = sum(1 for h in hits if h)
    if positives == 0:
        raise ValueError("best-F1 threshold needs at least one HIT row")
    order = sorted(range(len(scores)), key=lambda i: -scores[i])
    tp = fp = 0
    best: tuple[Fraction, float, int, int] | None = None
    i = 0
    while i < len(order):
        value = scores[order[i]]
        # Every row at this score is predicted HIT together.
        while i < len(order) and scores[order[i]] == value:
            if hits[order[i]]:
                tp += 1
            else:
                fp += 1
            i += 1
        f1 = Fraction(2 * tp, tp + fp + positives)
        if best is None or f1 > best[0]:
            best = (f1, value, tp, fp)
    assert best is not None  # at least one HIT row, so at least one score
    _, value, tp, fp = best
    negatives = len(hits) - positives
    return Threshold(value, tp, fp, positives - tp, negatives - fp)


def correct_votes(scores: Sequence[float], hits: Sequence[bool], threshold: float) -> list[bool]:
    """Per row: does ``score >= threshold`` agree with the row being a HIT?"""
    return [(s >= threshold) == h for s, h in zip(scores, hits, strict=True)]


def midrank_cdf(sorted_scores: Sequence[float], value: float) -> Fraction:
    """Share of scores below ``value`` plus half the share equal to it (exact)."""
    lo = bisect.bisect_left(sorted_scores, value)
    hi = bisect.bisect_right(sorted_scores, value)
    return Fraction(lo + hi, 2 * len(sorted_scores))


def held_out_buckets(
    scores: Sequence[float],
    hits: Sequence[bool],
    threshold: float,
    delta: Fraction = HELD_OUT_DELTA,
) -> list[str]:
    """Three-level buckets from one scorer's margin.

    With ``F`` the mid-rank empirical CDF of ``scores`` (:func:`midrank_cdf`)
    and ``m = |F(score) - F(threshold)|`` the distance from the threshold in
    percentile points: ``m < delta`` is medium (too close to call either
    way); otherwise easy when the scorer decides the row correctly, hard when
    it does not. Percentiles make ``delta`` mean the same for any score scale.
    """
    ordered = sorted(scores)
    at_threshold = midrank_cdf(ordered, threshold)
    out = []
    for ok, s in zip(correct_votes(scores, hits, threshold), scores, strict=True):
        if abs(midrank_cdf(ordered, s) - at_threshold) < delta:
            out.append("medium")
        else:
            out.append("easy" if ok else "hard")
    return out


def cohen_kappa(
    a: Sequence[str], b: Sequence[str], categories: Sequence[str], *, weights: str = "none"
) -> float:
    """Cohen's kappa of two raters over the same items.

    With ``O`` the observed and ``E`` the chance table (product of the two
    marginals), all as shares, and disagreement weights ``w``::

        kappa = 1 - sum(w * O) / sum(w * E)

    ``weights="none"``: ``w = 1`` off the diagonal, which is the familiar
    ``(p_o - p_e) / (1 - p_e)``; ``"linear"``: ``w_ij = |i - j| / (k - 1)``
    for ordered ``categories``. Raises ValueError on unequal lengths, no
    items, an unknown category, or when chance disagreement is zero (kappa
    undefined: both raters use one and the same category throughout).
    """
    if len(a) != len(b):
        raise ValueError(f"raters rated {len(a)} and {len(b)} items")
    if not a:
        raise ValueError("kappa needs at least one item")
    index = {c: i for i, c in enumerate(categories)}
    k = len(categories)
    for value in (*a, *b):
        if value not in index:
            raise ValueError(f"category {value!r} not in {list(categories)}")
    if weights == "none":

        def w(i: int, j: int) -> Fraction:
            return Fraction(int(i != j))

    elif weights == "linear":

        def w(i: int, j: int) -> Fraction:
            return Fraction(abs(i - j), max(k - 1, 1))

    else:
        raise ValueError(f"weights must be 'none' or 'linear', got {weights!r}")
    n = len(a)
    observed = Counter((index[x], index[y]) for x, y in zip(a, b, strict=True))
    row = Counter(index[x] for x in a)
    col = Counter(index[y] for y in b)
    disagree_obs = sum((w(i, j) * c for (i, j), c in observed.items()), Fraction(0)) / n
    disagree_exp = sum(
        (w(i, j) * row[i] * col[j] for i in range(k) for j in range(k)), Fraction(0)
    ) / (n * n)
    if disagree_exp == 0:
        raise ValueError("kappa is undefined: no disagreement is possible by chance")
    return float(1 - disagree_obs / disagree_exp)


# --- calibration -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ScorerResult:
    """One scorer over the calibrated rows: its scores and best-F1 operating point."""

    name: str
    version: str
    scores: tuple[float, ...]
    point: Threshold

    def summary(self) -> dict[str, Any]:
        p = self.point
        return {
            "name": self.name,
            "version": self.version,
            "threshold": p.threshold,
            "best_f1": round(p.f1, 4),
            "accuracy": round(p.accuracy, 4),
            "fhr": round(p.fhr, 4),
        }


@dataclass(frozen=True, slots=True)
class Calibration:
    """A calibration run over ``rows`` (full labelled rows, in build order)."""

    rows: tuple[Mapping[str, Any], ...]
    ensemble: tuple[ScorerResult, ...]
    held_out: ScorerResult
    n_correct: tuple[int, ...]
    difficulty: tuple[str, ...]
    held_out_bucket: tuple[str, ...]
    domains: tuple[str, ...]

    @property
    def entries(self) -> dict[str, Entry]:
        """content key -> entry, sorted by key."""
        pairs = [
            (content_key(r), Entry(d, k, r["binary_label"]))
            for r, d, k in zip(self.rows, self.difficulty, self.n_correct, strict=True)
        ]
        return dict(sorted(pairs))

    def kappa(self, *, weights: str = "none") -> float | None:
        """Cohen's kappa between the ensemble's and the held-out scorer's buckets
        (None when undefined: both put every row in one and the same bucket)."""
        return _kappa_or_none(self.difficulty, self.held_out_bucket, DIFFICULTIES, weights)

    def kappa_binary(self) -> float | None:
        """Cohen's kappa between "the ensemble's majority decides correctly"
        (``n_correct >= 3``) and "the held-out scorer decides correctly"."""
        hits = [r["binary_label"] == HIT for r in self.rows]
        held = correct_votes(self.held_out.scores, hits, self.held_out.point.threshold)
        majority = [k > N_SCORERS // 2 for k in self.n_correct]
        as_text = [["wrong", "right"][int(x)] for x in majority]
        held_text = [["wrong", "right"][int(x)] for x in held]
        return _kappa_or_none(as_text, held_text, ("wrong", "right"), "none")

    def by_label(self) -> dict[str, dict[str, int]]:
        """label -> difficulty -> rows (every label and difficulty listed)."""
        table = {lab: dict.fromkeys(DIFFICULTIES, 0) for lab in LABELS}
        for r, d in zip(self.rows, self.difficulty, strict=True):
            table[r["label"]][d] += 1
        return table

    def by_domain(self) -> dict[str, dict[str, int]]:
        """domain -> difficulty -> rows, for the calibrated domains."""
        table = {dom: dict.fromkeys(DIFFICULTIES, 0) for dom in self.domains}
        for r, d in zip(self.rows, self.difficulty, strict=True):
            table[r["domain"]][d] += 1
        return table

    def counts(self) -> dict[str, int]:
        c = Counter(self.difficulty)
        return {d: c[d] for d in DIFFICULTIES}

    def adversarial_hard_share(self) -> float | None:
        """Share of ADVERSARIAL rows whose difficulty is hard (None without any)."""
        row = self.by_label()["ADVERSARIAL"]
        total = sum(row.values())
        return row["hard"] / total if total else None


def _kappa_or_none(
    a: Sequence[str], b: Sequence[str], categories: Sequence[str], weights: str
) -> float | None:
    try:
        return cohen_kappa(a, b, categories, weights=weights)
    except ValueError:
        return None  # undefined on degenerate data; reported as such, not a crash


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


def _fmt(x: float | None) -> str:
    return "undefined" if x is None else f"{x:.4f}"


@dataclass(frozen=True, slots=True)
class Scored:
    """A scorer's name and version with its (rounded) scores of the rows."""

    name: str
    version: str
    scores: Sequence[float]


def calibrate(
    rows: Sequence[Mapping[str, Any]], ensemble: Sequence[Scored], held_out: Scored
) -> Calibration:
    """Threshold every scorer at its best F1, count correct ensemble votes per
    row and bucket them; bucket the held-out scorer by its margin. Pure."""
    if len(ensemble) != N_SCORERS:
        raise ValueError(f"the ensemble needs {N_SCORERS} scorers, got {len(ensemble)}")
    names = [s.name for s in (*ensemble, held_out)]
    if len(set(names)) != len(names):
        raise ValueError(f"scorer names repeat: {names}")
    if not rows:
        raise ValueError("no rows to calibrate")
    hits = [r["binary_label"] == HIT for r in rows]

    def fit(s: Scored) -> ScorerResult:
        if len(s.scores) != len(rows):
            raise ValueError(f"{s.name}: {len(s.scores)} scores for {len(rows)} rows")
        return ScorerResult(s.name, s.version, tuple(s.scores), best_f1_threshold(s.scores, hits))

    members = tuple(fit(s) for s in ensemble)
    held = fit(held_out)
    votes = [correct_votes(m.scores, hits, m.point.threshold) for m in members]
    n_correct = tuple(sum(v[i] for v in votes) for i in range(len(rows)))
    present = {r["domain"] for r in rows}
    return Calibration(
        rows=tuple(rows),
        ensemble=members,
        held_out=held,
        n_correct=n_correct,
        difficulty=tuple(bucket(k) for k in n_correct),
        held_out_bucket=tuple(
            held_out_buckets(held.scores, hits, held.point.threshold, HELD_OUT_DELTA)
        ),
        domains=tuple(d for d in DOMAINS if d in present),
    )


def calibration_metadata(cal: Calibration) -> dict[str, Any]:
    """Everything in ``sources/difficulty.json`` but the entries (date-free)."""
    share = cal.adversarial_hard_share()
    return {
        "format": FORMAT,
        "content_key": "sha256 of the canonical JSON (cacheeval.support.jsonio.dumps) of [query_a, "
        "query_b, context_a, context_b, system_prompt_a, system_prompt_b, tools_a, tools_b]",
        "text_per_side": "system prompt, prior turns and query joined by newlines "
        "(cacheeval.generators.common.request_text)",
        "decision": "a scorer predicts HIT when similarity >= its threshold; the threshold "
        "maximises F1 against binary_label over the calibrated rows (ties: the higher one); "
        f"similarities rounded to {SCORE_DECIMALS} decimals",
        "rule": {
            "easy": f"n_correct >= {EASY_MIN_CORRECT}",
            "medium": f"{MEDIUM_MIN_CORRECT} <= n_correct <= {EASY_MIN_CORRECT - 1}",
            "hard": f"n_correct <= {MEDIUM_MIN_CORRECT - 1}",
        },
        "rows": len(cal.rows),
        "domains": list(cal.domains),
        "missing_domains": [d for d in DOMAINS if d not in cal.domains],
        "scorers": [m.summary() for m in cal.ensemble],
        "difficulty_counts": cal.counts(),
        "difficulty_by_label": cal.by_label(),
        "adversarial_hard_share": None if share is None else round(share, 4),
        "held_out": {
            **cal.held_out.summary(),
            "bucket_rule": "medium when the score lies within delta percentile points of the "
            "threshold (mid-rank CDF of the scorer's own scores); otherwise easy when it decides "
            "the row correctly, hard when not",
            "delta": float(HELD_OUT_DELTA),
            "kappa": _round(cal.kappa()),
            "kappa_linear": _round(cal.kappa(weights="linear")),
            "kappa_binary": _round(cal.kappa_binary()),
        },
    }


def calibration_document(cal: Calibration) -> dict[str, Any]:
    """The contents of ``sources/difficulty.json``: metadata, then ``entries``."""
    return {
        **calibration_metadata(cal),
        "entries": {k: e.to_dict() for k, e in cal.entries.items()},
    }
