"""The private slice: rows from held-out families, drawn with a secret seed.

The public test labels can be re-derived by anyone who runs the build from the
committed shards; this slice is the unseen test. Its rows come from the
held-out pools of :mod:`cacheeval.pipeline.heldout` (``sources/heldout/<domain>/``:
hand-written fixture families in the public formats that no public generator
reads), so no slice row shares a template family with the public set.

:func:`generate_slice` takes ``per_domain`` rows from each domain. Within a
domain the label counts follow the domain's row of :data:`cacheeval.pipeline.domains.MATRIX`
scaled to ``per_domain`` (:func:`quotas`, largest remainder). For each
(domain, label) the pool rows are put in a seeded order,
``random.Random(stable_seed("slice", SECRET, domain, label))``, and the first
``quota`` are kept, so the same secret gives the same slice and a larger
``per_domain`` extends a smaller one. A pool row is eligible only when

* none of its texts (queries, prior turns, system prompts), normalised by
  :func:`normalise_text` (NFKC, case-folded, punctuation and whitespace
  folded), equals a normalised text of any public row, and
* :func:`cacheeval.dataset.row_problem` accepts it and
  :func:`cacheeval.verify.check_row` re-derives its binary label (a
  disagreement is a fixture bug and raises :class:`SliceError`).

*Adversarial-evolving* slices (:func:`generate_adversarial_slice`): the whole
eligible pool of each domain is the candidate set; the named cache predicts
every candidate (through :func:`cacheeval.run.harness.predict`, which shows it
only the two requests), and within each (domain, label) quota the candidates
it gets wrong are kept first (in the seeded order), then the ones it gets
right. The slice's header records the cache, its version and its error rate
on the kept rows.

Output: a header line (:data:`cacheeval.dataset.SLICE_HEADER_KEY`) then the
rows, ids ``cb-<domain>-9NNN`` (never a public id), split ``test``, in DOMAINS
order then id. ``cacheeval eval --bench`` reads the file directly.
"""

from __future__ import annotations

import hashlib
import random
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

from ..dataset import SLICE_HEADER_KEY, iter_bench, row_problem
from ..pipeline.domains import MATRIX
from ..pipeline.heldout import HELDOUT_DIR, PoolError, pool
from ..schema import DOMAINS, LABELS, ROW_FIELDS, Row
from ..support.jsonio import dumps
from ..support.layout import REPO_ROOT, stable_seed
from ..verify import check_row

#: Rows per domain unless told otherwise (the issue's floor is 40).
DEFAULT_PER_DOMAIN = 40
#: Slice ids are cb-<domain>-9001 ... cb-<domain>-9999.
ID_OFFSET = 9000
MAX_PER_DOMAIN = 999
SPLIT = "test"
SLICE_FORMAT = "1"

_SPACE = re.compile(r"\s+")


class SliceError(ValueError):
    """The slice cannot be generated (bad arguments, a pool too small, a fixture bug)."""


def normalise_text(text: str) -> str:
    """The form in which slice and public texts are compared: NFKC, case-folded,
    every punctuation character (Unicode category P*) turned into a space,
    whitespace collapsed.

    >>> normalise_text("  What's the  CAPITAL of Perú? ")
    'what s the capital of perú'
    >>> normalise_text("Solve 3x - 7 = 11.") == normalise_text("solve 3x -7 = 11")
    True
    """
    text = unicodedata.normalize("NFKC", text).casefold()
    text = "".join(" " if unicodedata.category(c).startswith("P") else c for c in text)
    return _SPACE.sub(" ", text).strip()


def row_texts(row: Row | Mapping[str, Any]) -> set[str]:
    """Every normalised text of a row: both queries, every prior turn, both
    system prompts (empty strings dropped)."""
    data = row.to_dict() if isinstance(row, Row) else row
    texts = [data["query_a"], data["query_b"]]
    for side in ("a", "b"):
        texts += [str(t.get("content", "")) for t in data.get(f"context_{side}") or ()]
        texts.append(data.get(f"system_prompt_{side}") or "")
    return {n for n in (normalise_text(t) for t in texts) if n}


def public_texts(rows: Iterable[Row]) -> frozenset[str]:
    """The union of :func:`row_texts` over ``rows``."""
    out: set[str] = set()
    for r in rows:
        out |= row_texts(r)
    return frozenset(out)


def load_public_texts(paths: Sequence[str | Path]) -> tuple[frozenset[str], int]:
    """(normalised public texts, number of public rows) of benchmark or shard
    files. Each file is checked line by line (``path:LINE:`` errors, via
    :func:`cacheeval.dataset.iter_bench`); shard rows lack ``split`` and are
    read as train rows; hidden test rows count too."""
    texts: set[str] = set()
    n = 0
    for path in paths:
        rows = list(_iter_any(Path(path)))
        n += len(rows)
        texts |= public_texts(rows)
    return frozenset(texts), n


def _iter_any(path: Path) -> Iterable[Row]:
    """Rows of a benchmark file, or of a domain shard (rows without ``split``)."""
    from ..support.jsonio import JsonlError, iter_jsonl

    first = next(iter(iter_jsonl(path)), None)
    if first is not None and isinstance(first[1], dict) and "split" not in first[1]:
        for lineno, data in iter_jsonl(path):
            data = {**data, "split": "train"} if isinstance(data, dict) else data
            problem = row_problem(data)
            if problem:
                raise JsonlError(str(path), lineno, problem)
            yield Row.from_dict(data)
        return
    yield from iter_bench(path)


def quotas(domain: str, per_domain: int) -> dict[str, int]:
    """Rows of each label for ``per_domain`` rows of ``domain``: the matrix row
    scaled by largest remainder (ties go to the label first in LABELS).

    >>> quotas("math", 40)
    {'EQUIV': 8, 'PARA_SAFE': 8, 'RELATED_UNSAFE': 7, 'ADVERSARIAL': 12, 'UNRELATED': 5}
    >>> sum(quotas("multilingual", 41).values())
    41
    """
    weights = MATRIX[domain]
    total = sum(weights)
    exact = [Fraction(w * per_domain, total) for w in weights]
    counts = [int(x) for x in exact]
    order = sorted(range(len(LABELS)), key=lambda i: (-(exact[i] - counts[i]), i))
    for i in order[: per_domain - sum(counts)]:
        counts[i] += 1
    return dict(zip(LABELS, counts, strict=True))


def seed_commitment(secret: str) -> str:
    """sha256 of the secret seed, published in the header: once the seed is
    revealed anyone can check it is the one the slice was drawn with."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


# --- pools ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Pool:
    """A domain's eligible held-out rows (full rows, verified) and how many
    pool rows were dropped for sharing a text with the public set."""

    domain: str
    rows: tuple[dict[str, Any], ...]
    n_built: int
    n_public_overlap: int


#: (checker, row digest) pairs already verified in this process: a row's
#: verdict depends only on its content and the checker.
_VERIFIED: set[tuple[object, str]] = set()


def _verify(row: dict[str, Any]) -> None:
    problem = row_problem(row, require_labels=True)
    if problem:
        raise SliceError(f"held-out row from {row['source']} is invalid: {problem}")
    key = (check_row, hashlib.sha256(dumps(row).encode("utf-8")).hexdigest())
    if key in _VERIFIED:
        return
    got = check_row(Row.from_dict(row))
    if got.binary != row["binary_label"]:
        raise SliceError(
            f"held-out row from {row['source']} ({row['subcategory']}) is labelled "
            f"{row['binary_label']} but its checker says {got.binary}: {got.detail}"
        )
    _VERIFIED.add(key)


def eligible_pool(domain: str, public: frozenset[str], heldout_dir: Path = HELDOUT_DIR) -> Pool:
    """``domain``'s held-out rows that share no normalised text with ``public``,
    each verified (:class:`SliceError` on a disagreement)."""
    try:
        built = pool(domain, heldout_dir)
    except PoolError as e:
        raise SliceError(str(e)) from None
    keep: list[dict[str, Any]] = []
    for r in built:
        row = {**r, "split": SPLIT}
        row = {f: row[f] for f in ROW_FIELDS}
        _verify(row)
        if not row_texts(row) & public:
            keep.append(row)
    return Pool(domain, tuple(keep), len(built), len(built) - len(keep))


def _seeded(rows: Sequence[dict[str, Any]], secret: str, domain: str, label: str) -> list[Any]:
    """The rows of one (domain, label) in the secret's order (a stable key first,
    so the order does not depend on how the pool listed them)."""
    ordered = sorted(rows, key=lambda r: (r["source"], r["query_a"], r["query_b"]))
    random.Random(stable_seed("slice", secret, domain, label)).shuffle(ordered)
    return ordered


def _check_args(secret: str, per_domain: int, domains: Sequence[str]) -> list[str]:
    if not secret:
        raise SliceError("the secret seed must not be empty")
    if not 1 <= per_domain <= MAX_PER_DOMAIN:
        raise SliceError(f"rows per domain must be 1..{MAX_PER_DOMAIN}, got {per_domain}")
    unknown = [d for d in domains if d not in DOMAINS]
    if unknown or not domains:
        raise SliceError(f"unknown domain(s) {', '.join(unknown) or '(none)'}")
    want = set(domains)
    return [d for d in DOMAINS if d in want]


def _take(
    domain: str, ordered: Mapping[str, list[dict[str, Any]]], per_domain: int
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for label, n in quotas(domain, per_domain).items():
        have = ordered.get(label, [])
        if len(have) < n:
            raise SliceError(
                f"{domain}: the held-out pool has {len(have)} eligible {label} rows, "
                f"{n} needed for {per_domain} rows per domain"
            )
        out += have[:n]
    return out


def _number(rows: list[dict[str, Any]], domains: Sequence[str]) -> list[dict[str, Any]]:
    """Slice ids per domain, in (label, seeded) order; output in DOMAINS order then id."""
    out = []
    for d in domains:
        mine = [r for r in rows if r["domain"] == d]
        for i, r in enumerate(mine, 1):
            out.append({**r, "id": f"cb-{d}-{ID_OFFSET + i:04d}"})
    return out


def generate_slice(
    secret: str,
    public: frozenset[str],
    *,
    per_domain: int = DEFAULT_PER_DOMAIN,
    domains: Sequence[str] = DOMAINS,
    heldout_dir: Path = HELDOUT_DIR,
) -> list[dict[str, Any]]:
    """The slice rows (full rows, labels included); see the module doc.
    Deterministic in (secret, public, per_domain, domains, fixtures)."""
    chosen = _check_args(secret, per_domain, domains)
    rows: list[dict[str, Any]] = []
    for d in chosen:
        p = eligible_pool(d, public, heldout_dir)
        ordered = {
            lab: _seeded([r for r in p.rows if r["label"] == lab], secret, d, lab) for lab in LABELS
        }
        rows += _take(d, ordered, per_domain)
    return _number(rows, chosen)


@dataclass(frozen=True, slots=True)
class Against:
    """What an adversarial slice was selected against (recorded in its header)."""

    cache: str
    version: str
    module: str
    n_candidates: int
    n_candidates_wrong: int
    n_kept_wrong: int
    n_kept: int

    @property
    def error_rate(self) -> float:
        """Share of the kept rows the cache decided wrongly."""
        return self.n_kept_wrong / self.n_kept if self.n_kept else 0.0


def _predict_against(cache: Any, probe: list[Row], heldout_dir: Path) -> tuple[str, str, list[Any]]:
    """The cache's name, version and predictions on the candidates. A
    :class:`~cacheeval.run.blockrun.CacheSpec` (an entrant's cache, from the
    command line) always runs in its own process under bubblewrap, with the
    held-out pools and ``private/`` hidden from it; a cache object (the Python
    API, a cache you trust) runs here."""
    from ..run.blockrun import CacheSpec
    from ..run.harness import cache_name_of, cache_version, predict

    if not isinstance(cache, CacheSpec):
        return cache_name_of(cache), cache_version(cache), predict(cache, probe)
    from ..run.isolate import cache_file_dirs, checked_prefix
    from ..run.parallel import Predictor

    wrap = checked_prefix(hide=[heldout_dir], show=cache_file_dirs(cache.module))
    with Predictor(cache, workers=1, wrap=wrap) as predictor:
        info = predictor.start()
        preds = list(predictor.run(probe))
    return info.name, info.version, preds


def generate_adversarial_slice(
    secret: str,
    public: frozenset[str],
    cache: Any,
    *,
    module: str,
    per_domain: int = DEFAULT_PER_DOMAIN,
    domains: Sequence[str] = DOMAINS,
    heldout_dir: Path = HELDOUT_DIR,
) -> tuple[list[dict[str, Any]], Against]:
    """A slice whose rows ``cache`` gets wrong first (see the module doc).

    Every eligible pool row of the chosen domains is a candidate; the cache
    predicts them all once (errors and timeouts count as MISS decisions, as in
    any run). Returns (rows, the record for the header).
    """
    chosen = _check_args(secret, per_domain, domains)
    pools = {d: eligible_pool(d, public, heldout_dir) for d in chosen}
    candidates = [r for d in chosen for r in pools[d].rows]
    # Candidate ids only for this run: the cache sees an opaque id and two requests.
    probe = [Row.from_dict({**r, "id": f"cand-{i:05d}"}) for i, r in enumerate(candidates)]
    name, version, preds = _predict_against(cache, probe, heldout_dir)
    wrong = {
        i
        for i, (row, pred) in enumerate(zip(probe, preds, strict=True))
        if bool(pred.is_hit) != (row.binary_label == "HIT")
    }
    index = {id(r): i for i, r in enumerate(candidates)}
    rows: list[dict[str, Any]] = []
    for d in chosen:
        ordered = {}
        for lab in LABELS:
            seeded = _seeded([r for r in pools[d].rows if r["label"] == lab], secret, d, lab)
            first = [r for r in seeded if index[id(r)] in wrong]
            ordered[lab] = first + [r for r in seeded if index[id(r)] not in wrong]
        rows += _take(d, ordered, per_domain)
    kept_wrong = sum(1 for r in rows if index[id(r)] in wrong)
    record = Against(
        cache=name,
        version=version,
        module=module,
        n_candidates=len(candidates),
        n_candidates_wrong=len(wrong),
        n_kept_wrong=kept_wrong,
        n_kept=len(rows),
    )
    return _number(rows, chosen), record


def header(
    secret: str,
    rows: Sequence[dict[str, Any]],
    *,
    per_domain: int,
    heldout_dir: Path,
    against: Against | None = None,
) -> dict[str, Any]:
    """The slice file's first line (key order fixed)."""
    try:
        pool_name = heldout_dir.resolve().relative_to(REPO_ROOT).as_posix()
    except ValueError:
        pool_name = "(outside the repository)"
    counts = {d: sum(1 for r in rows if r["domain"] == d) for d in DOMAINS}
    return {
        SLICE_HEADER_KEY: SLICE_FORMAT,
        "seed_sha256": seed_commitment(secret),
        "per_domain": per_domain,
        "n_rows": len(rows),
        "domains": {d: n for d, n in counts.items() if n},
        "pool": pool_name,
        "against": None
        if against is None
        else {
            "cache": against.cache,
            "version": against.version,
            "module": against.module,
            "n_candidates": against.n_candidates,
            "n_candidates_wrong": against.n_candidates_wrong,
            "n_kept": against.n_kept,
            "n_kept_wrong": against.n_kept_wrong,
            "error_rate": round(against.error_rate, 4),
        },
    }


def summary(rows: Sequence[dict[str, Any]]) -> str:
    """``qa_factual 40 (EQUIV 9, PARA_SAFE 9, ...); ...`` in DOMAINS order."""
    parts = []
    for d in DOMAINS:
        mine = [r for r in rows if r["domain"] == d]
        if mine:
            counts = ", ".join(
                f"{lab} {n}" for lab in LABELS if (n := sum(1 for r in mine if r["label"] == lab))
            )
            parts.append(f"{d} {len(mine)} ({counts})")
    return "; ".join(parts)
