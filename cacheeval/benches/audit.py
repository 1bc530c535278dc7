"""One-side-only leakage audit.

A pair benchmark leaks when one side alone gives the label away (e.g. every
ADVERSARIAL query_b contains "instead"): a cache could then score well without
comparing the two requests. Per domain, this module measures how well a
classifier that sees ONLY query_b (and, separately, ONLY query_a) predicts
``binary_label``.

Model (standard library only): multinomial naive Bayes with add-one smoothing
over word unigrams, word bigrams and character 3-grams of the casefolded,
NFKC-normalised query::

    predict(x) = argmax_y  log P(y) + sum_f count_f(x) * log((n_yf + 1) / (n_y + |V|))

where ``n_yf`` is the count of feature f in training rows of class y, ``n_y``
the total feature count of class y and ``V`` the training vocabulary (features
unseen in training are ignored). Ties go to the class first in BINARY_LABELS.

Evaluation: k-fold cross-validation (k = 5) *grouped by family*: rows sharing
a ``source`` string form one group and a group is never split across folds
(otherwise near-duplicate rows of one authored item would leak between train
and test). Groups are shuffled with ``rng("audit-folds", domain)`` and dealt,
largest first, to the fold with the fewest rows. With fewer than two groups
no accuracy is reported.

Reported per domain: ``n``, the majority-class rate ``m`` (share of the most
common binary label), the out-of-fold accuracies ``acc_b`` and ``acc_a``, and
``gap = acc - m``. A gap above 0.10 is flagged: one side predicts the label
better than chance-by-prior, which a cache could exploit.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..schema import BINARY_LABELS, DOMAINS, POLICY_NO_CACHE
from ..support.layout import rng

DEFAULT_FOLDS = 5
DEFAULT_FLAG_GAP = 0.10
_WORD = re.compile(r"\w+", re.UNICODE)
_SPACE = re.compile(r"\s+")


def features(text: str) -> Counter[str]:
    """Bag of ``w:`` unigrams, ``b:`` bigrams and ``c:`` character 3-grams."""
    t = unicodedata.normalize("NFKC", text).casefold()
    words = _WORD.findall(t)
    out: Counter[str] = Counter()
    out.update("w:" + w for w in words)
    out.update(f"b:{x} {y}" for x, y in zip(words, words[1:], strict=False))
    padded = f" {_SPACE.sub(' ', t).strip()} "
    out.update("c:" + padded[i : i + 3] for i in range(len(padded) - 2))
    return out


@dataclass(frozen=True, slots=True)
class NaiveBayes:
    """A trained multinomial naive Bayes model (see the module docstring)."""

    classes: tuple[str, ...]
    log_prior: tuple[float, ...]
    log_likelihood: tuple[Mapping[str, float], ...]

    @classmethod
    def fit(cls, xs: Sequence[Counter[str]], ys: Sequence[str]) -> NaiveBayes:
        classes = tuple(c for c in BINARY_LABELS if c in ys)
        vocab: set[str] = set()
        for x in xs:
            vocab.update(x)
        v = len(vocab)
        priors, likelihoods = [], []
        for c in classes:
            counts: Counter[str] = Counter()
            n_rows = 0
            for x, y in zip(xs, ys, strict=True):
                if y == c:
                    counts.update(x)
                    n_rows += 1
            total = sum(counts.values())
            denom = math.log(total + v)
            priors.append(math.log(n_rows / len(ys)))
            # Every vocabulary feature gets a smoothed estimate, seen in class c or not.
            likelihoods.append({f: math.log(counts[f] + 1) - denom for f in sorted(vocab)})
        return cls(classes, tuple(priors), tuple(likelihoods))

    def predict(self, x: Counter[str]) -> str:
        best, best_score = self.classes[0], -math.inf
        for c, prior, ll in zip(self.classes, self.log_prior, self.log_likelihood, strict=True):
            score = prior
            for f, n in x.items():
                if f in ll:
                    score += n * ll[f]
            if score > best_score:
                best, best_score = c, score
        return best


def group_folds(groups: Sequence[str], k: int, *seed: str) -> list[int]:
    """Fold index (0..k'-1) of every row, k' = min(k, number of groups); a group's
    rows share one fold. Seeded by ``rng("audit-folds", *seed)``."""
    sizes = Counter(groups)
    names = sorted(sizes)
    rng("audit-folds", *seed).shuffle(names)
    names.sort(key=lambda g: -sizes[g])  # stable: equal sizes keep the shuffled order
    k_eff = min(k, len(names))
    load = [0] * k_eff
    fold_of: dict[str, int] = {}
    for g in names:
        f = min(range(k_eff), key=lambda i: (load[i], i))
        fold_of[g] = f
        load[f] += sizes[g]
    return [fold_of[g] for g in groups]


def cv_accuracy(texts: Sequence[str], ys: Sequence[str], folds: Sequence[int]) -> float | None:
    """Out-of-fold accuracy of naive Bayes over the given fold assignment
    (None with fewer than two folds)."""
    k = len(set(folds))
    if k < 2:
        return None
    xs = [features(t) for t in texts]
    correct = 0
    for f in sorted(set(folds)):
        train = [i for i, fi in enumerate(folds) if fi != f]
        model = NaiveBayes.fit([xs[i] for i in train], [ys[i] for i in train])
        correct += sum(1 for i, fi in enumerate(folds) if fi == f and model.predict(xs[i]) == ys[i])
    return correct / len(ys)


@dataclass(frozen=True, slots=True)
class DomainAudit:
    """The audit of one domain; accuracies are None when CV was impossible."""

    domain: str
    rows: int
    groups: int
    folds: int
    majority_label: str
    majority: float
    acc_b: float | None
    acc_a: float | None
    note: str

    @property
    def gap_b(self) -> float | None:
        return None if self.acc_b is None else self.acc_b - self.majority

    @property
    def gap_a(self) -> float | None:
        return None if self.acc_a is None else self.acc_a - self.majority

    @property
    def max_gap(self) -> float | None:
        gaps = [g for g in (self.gap_b, self.gap_a) if g is not None]
        return max(gaps) if gaps else None


def family(row: Mapping[str, Any]) -> str:
    """The CV group of a row: its ``source``, or the row itself when it has none."""
    src = row.get("source")
    return src if isinstance(src, str) and src.strip() else f"row:{row.get('id')}"


def audit_domain(
    domain: str, rows: Sequence[Mapping[str, Any]], *, folds: int = DEFAULT_FOLDS
) -> DomainAudit:
    """Audit the rows of one domain (each needs query_a, query_b, binary_label)."""
    ys = [r["binary_label"] for r in rows]
    counts = Counter(ys)
    majority_label = max(BINARY_LABELS, key=lambda c: (counts[c], -BINARY_LABELS.index(c)))
    majority = counts[majority_label] / len(ys) if ys else 0.0
    groups = [family(r) for r in rows]
    fold_ids = group_folds(groups, folds, domain)
    n_folds = len(set(fold_ids))
    notes = []
    if len(counts) == 1:
        if all(r.get("verification_method") == POLICY_NO_CACHE for r in rows):
            notes.append(f"policy domain, every row {majority_label}: trivially majority")
        else:
            notes.append(f"single class ({majority_label}): trivially majority")
    if n_folds < 2:
        notes.append(f"{len(set(groups))} group(s): cannot cross-validate")
    return DomainAudit(
        domain=domain,
        rows=len(rows),
        groups=len(set(groups)),
        folds=n_folds if n_folds >= 2 else 0,
        majority_label=majority_label,
        majority=majority,
        acc_b=cv_accuracy([r["query_b"] for r in rows], ys, fold_ids),
        acc_a=cv_accuracy([r["query_a"] for r in rows], ys, fold_ids),
        note="; ".join(notes),
    )


def audit_rows(
    rows: Sequence[Mapping[str, Any]], *, folds: int = DEFAULT_FOLDS
) -> list[DomainAudit]:
    """Audit every domain present in ``rows`` (DOMAINS order, then others sorted)."""
    by_domain: dict[str, list[Mapping[str, Any]]] = {}
    for r in rows:
        by_domain.setdefault(r["domain"], []).append(r)
    order = [d for d in DOMAINS if d in by_domain] + sorted(set(by_domain) - set(DOMAINS))
    return [audit_domain(d, by_domain[d], folds=folds) for d in order]


def _fmt(x: float | None, signed: bool = False) -> str:
    if x is None:
        return "n/a"
    return f"{x:+.3f}" if signed else f"{x:.3f}"


def format_audit(results: Sequence[DomainAudit], *, flag_gap: float = DEFAULT_FLAG_GAP) -> str:
    """The audit as a text table, flagged domains marked and listed."""
    lines = [
        "one-side leakage audit: naive Bayes on word 1-2-grams + char 3-grams of ONE query,",
        "cross-validated with folds grouped by source family; gap = accuracy - majority rate",
        "",
        f"  {'domain':<16}{'n':>6}{'groups':>8}{'majority':>10}"
        f"{'acc(b)':>9}{'acc(a)':>9}{'gap(b)':>9}{'gap(a)':>9}",
    ]
    flagged = []
    for r in results:
        flag = r.max_gap is not None and r.max_gap > flag_gap
        if flag:
            flagged.append(r.domain)
        line = (
            f"  {r.domain:<16}{r.rows:>6}{r.groups:>8}{r.majority:>10.3f}"
            f"{_fmt(r.acc_b):>9}{_fmt(r.acc_a):>9}"
            f"{_fmt(r.gap_b, True):>9}{_fmt(r.gap_a, True):>9}"
        )
        if flag:
            line += f"  <- gap > {flag_gap:.2f}"
        if r.note:
            line += f"  ({r.note})"
        lines.append(line)
    lines.append("")
    if flagged:
        lines.append(
            f"flagged ({len(flagged)}): {', '.join(flagged)}: one query alone predicts the "
            "label; review the wording of these rows"
        )
    else:
        lines.append(f"no domain's one-side gap exceeds {flag_gap:.2f}")
    return "\n".join(lines)
