"""Pair similarity for the difficulty calibration: one text per side, three
lexical measures, BM25 (the held-out scorer) and the scorer protocol the
model scorers of ``adapters/difficulty_scorers.py`` also follow.

Everything here is standard library and deterministic: sums use
``math.fsum`` (order-free) and scores are rounded to :data:`SCORE_DECIMALS`
places before any threshold is chosen.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..generators.common import request_text

#: Version of the lexical measures below; bump when their definition changes.
LEXICAL_VERSION = "lexical-1"
#: Similarities are rounded to this many decimals, so that last-bit float
#: differences between machines (BLAS, thread counts) almost never change a score.
SCORE_DECIMALS = 6
#: BM25 parameters (the usual defaults).
BM25_K1 = 1.2
BM25_B = 0.75

Pair = tuple[str, str]


# --- texts ----------------------------------------------------------------------------


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
