"""The training corpus: fixture families written to train the verified cache, never
graded.

``sources/training/<domain>/`` holds hand-written fixture families in exactly the
format of that domain's public fixtures (``sources/<domain>/``, documented in
:mod:`cacheeval.generators`), as the held-out pools do (:mod:`.heldout`). They are
aimed at what the verified cache refuses (``reports/VERIFIED_MISSES.md``): the same
quantity in other words or units ("a week" / "seven days", "half a litre" /
"0.5 L"), long chatty rewrites, typos - each family with its adversarial siblings
(another quantity, another unit) so the corpus teaches precision, not to fire less.

:func:`corpus` builds the rows with the domain's own generator (which re-runs the
label checker of :mod:`cacheeval.verify` on every row and refuses a
disagreement), then marks them as what they are: ids ``tr-<domain>-<n>`` (never a
benchmark id), split ``train``, ``construction_method`` prefixed ``training_``,
``source`` naming the training fixture. No row of it is in ``cachebench.jsonl``
or ``domains/``, and :func:`disjointness_problems` checks it shares neither a
family nor a normalised text with the dev and test rows or the held-out pools.

:func:`manifest` summarises the corpus (``sources/training/manifest.json``: size,
label mix, adversarial share, construction methods, sha256 of the rows), so a
change to the corpus shows in review.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..schema import normalize_text
from ..support.jsonio import jsonl_bytes, sha256_bytes
from ..support.layout import SOURCES_DIR
from .domains import SPECS
from .generate import generate_shard

#: The training-only fixture families, one directory per domain.
TRAINING_DIR = SOURCES_DIR / "training"
MANIFEST_FILE = "manifest.json"
MANIFEST_FORMAT = "cacheeval-training-corpus/1"
#: What every corpus row's ``construction_method`` starts with.
METHOD_PREFIX = "training_"
ID_PREFIX = "tr"


def corpus_domains(training_dir: Path = TRAINING_DIR) -> list[str]:
    """The domains with a training fixture directory, in sorted order."""
    if not training_dir.is_dir():
        return []
    return sorted(p.name for p in training_dir.iterdir() if p.is_dir() and p.name in SPECS)


def corpus(training_dir: Path = TRAINING_DIR) -> list[dict[str, Any]]:
    """Every corpus row (full row dicts, split ``train``), domain by domain, each
    built and verified by its domain's generator. Raises the generator's
    FixtureError (a ValueError naming ``path:LINE``) for a broken fixture."""
    out: list[dict[str, Any]] = []
    for domain in corpus_domains(training_dir):
        for i, row in enumerate(generate_shard(domain, training_dir / domain,
                                               check_matrix=False), start=1):  # fmt: skip
            row = dict(row)
            row["id"] = f"{ID_PREFIX}-{domain}-{i:04d}"
            row["construction_method"] = METHOD_PREFIX + str(row["construction_method"])
            row["split"] = "train"
            out.append(row)
    return out


def family_of(source: str | None) -> str:
    """The family key of a row's ``source`` (``<fixture>#<family>``): the part after
    the last ``#``; "" for no source.

    >>> family_of("sources/qa_factual/geography.json#capitals")
    'capitals'
    """
    if not source:
        return ""
    return source.rsplit("#", 1)[-1]


def texts_of(row: Mapping[str, Any]) -> set[str]:
    """The normalised texts of a row (:func:`~cacheeval.schema.normalize_text`):
    both queries, every prior turn's content, both system prompts."""
    out = {normalize_text(row.get("query_a")), normalize_text(row.get("query_b"))}
    for side in ("a", "b"):
        for turn in row.get(f"context_{side}") or ():
            out.add(normalize_text(turn.get("content")))
        out.add(normalize_text(row.get(f"system_prompt_{side}")))
    out.discard("")
    return out


def disjointness_problems(
    corpus_rows: Sequence[Mapping[str, Any]],
    graded: Iterable[Mapping[str, Any]],
    families: Iterable[str],
) -> list[str]:
    """What the corpus shares with what is graded: one line per corpus row whose
    family key is in ``families`` (every family of the public fixtures and of the
    held-out pools) or whose normalised text is in a row of ``graded`` (the dev
    and test rows and the held-out pools); [] when disjoint."""
    taken = set(families)
    seen: dict[str, str] = {}
    for row in graded:
        for t in texts_of(row):
            seen.setdefault(t, str(row.get("id") or row.get("source") or "?"))
    problems: list[str] = []
    for row in corpus_rows:
        fam = family_of(row.get("source"))
        if fam in taken:
            problems.append(f"{row['id']}: family {fam!r} is also a graded family")
        for t in sorted(texts_of(row)):
            if t in seen:
                problems.append(f"{row['id']}: text {t!r} is also in {seen[t]}")
    return problems


def manifest(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The corpus's manifest: overall and per-domain row counts, label mix, HIT and
    ADVERSARIAL shares, construction methods, family counts, sha256 of the rows'
    canonical JSONL."""

    def summary(part: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        labels = Counter(str(r["label"]) for r in part)
        n = len(part)
        return {
            "rows": n,
            "families": len({family_of(r.get("source")) for r in part}),
            "labels": dict(sorted(labels.items())),
            "hit_share": round(sum(r["binary_label"] == "HIT" for r in part) / n, 4) if n else None,
            "adversarial_share": round(labels["ADVERSARIAL"] / n, 4) if n else None,
            "construction_methods": dict(
                sorted(Counter(str(r["construction_method"]) for r in part).items())
            ),
        }

    domains = sorted({str(r["domain"]) for r in rows})
    return {
        "format": MANIFEST_FORMAT,
        "use": "training only: never graded, never in cachebench.jsonl or domains/",
        "sha256": sha256_bytes(jsonl_bytes(rows)),
        **summary(rows),
        "domains": {d: summary([r for r in rows if r["domain"] == d]) for d in domains},
    }


def graded_reference(
    bench: Path, domains_dir: Path, heldout_dir: Path | None = None
) -> tuple[list[dict[str, Any]], set[str]]:
    """What the corpus must stay apart from: the dev and test rows of ``bench``,
    every held-out pool row and every line of the shipped stress prompts
    (``sources/stress/prompts.txt``: ``reports/STRESS.md`` grades caches on rows
    made from them) (texts), and the family keys of every public shard row in
    ``domains_dir`` (all splits) and of the held-out pools."""
    from ..support.jsonio import iter_jsonl
    from .heldout import HELDOUT_DIR, pool

    graded = [r for _, r in iter_jsonl(bench) if r.get("split") in ("dev", "test")]
    stress_prompts = SOURCES_DIR / "stress" / "prompts.txt"
    for n, line in enumerate(stress_prompts.read_text("utf-8").splitlines(), 1):
        if line.strip():
            graded.append({"id": f"sources/stress/prompts.txt:{n}", "query_a": line})
    families: set[str] = set()
    for path in sorted(domains_dir.glob("*.jsonl")):
        families.update(family_of(r.get("source")) for _, r in iter_jsonl(path))
    for domain in SPECS:
        rows = pool(domain, heldout_dir or HELDOUT_DIR)
        graded += rows
        families.update(family_of(r.get("source")) for r in rows)
    families.discard("")
    return graded, families
