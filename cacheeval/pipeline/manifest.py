"""``domains/manifest.json``: what a build consumed and produced, with hashes.

Layout (key order fixed; every count table lists all of its keys, zeros
included, in the vocabulary order of :mod:`cacheeval.schema`)::

    schema_version, cacheeval_version
    shards:           [{domain, path, sha256, rows}]        (present shards, DOMAINS order)
    missing_domains:  [domain, ...]
    dataset:          {path, sha256, rows}                  (cachebench.jsonl)
    test_labels:      {path, sha256, rows}                  (private/test_labels.jsonl)
    counts:
      by_domain_label:        {domain: {label: n}}
      by_domain_label_split:  {domain: {label: {split: n}}}
      by_split:               {split: n}
      by_binary_label:        {HIT: n, MISS: n}
    verification:
      by_tier:    {deterministic, rubric, judge: n}
      by_method:  {method: n}
    splits:                                                 (see cacheeval.pipeline.splits)
      {algorithm, grouping, cell_tolerance_points, total_tolerance_rows, by_split,
       groups, largest_groups: [{key, rows, families}], max_cell_deviation_points,
       shared_families, shared_texts}
    difficulty_calibration:                                 (see below)
      {path, sha256, <metadata of sources/difficulty.json>, rows_calibrated, rows_in_build}

``difficulty_calibration`` comes from the calibration file in effect
(``sources/difficulty.json``, :func:`cacheeval.support.layout.difficulty_file`):
its path and sha256, every metadata key of the file (scorers with versions,
thresholds and best F1, the held-out agreement figures, ...; not the
per-row entries) and how many of the build's rows it calibrates
(:func:`cacheeval.pipeline.difficulty.manifest_block`). When there is no such
file, or it calibrates none of the rows, the previous manifest's block is
carried over verbatim if it had one, else the key is absent.

A grader proves it holds the right hidden labels by hashing its labels file
and comparing with ``test_labels.sha256``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..schema import BINARY_LABELS, DOMAINS, LABELS, SCHEMA_VERSION, SPLITS, VERIFICATION_METHODS
from ..support.layout import difficulty_file
from ..verify import tier_of
from ..version import __version__
from .checks import BuildFailed
from .difficulty import DifficultyFileError, load_calibration, manifest_block
from .splits import split_stats

DATASET_PATH = "cachebench.jsonl"
LABELS_PATH = "private/test_labels.jsonl"
MANIFEST_PATH = "domains/manifest.json"
TIERS: tuple[str, ...] = ("deterministic", "rubric", "judge")
#: Keys another tool owns: carried over from the previous manifest untouched
#: (difficulty_calibration only when the calibration file does not supply it).
PRESERVED_KEYS: tuple[str, ...] = ("difficulty_calibration",)


@dataclass(frozen=True, slots=True)
class FileInfo:
    """A file the manifest vouches for: repo-relative posix path, sha256, rows."""

    path: str
    sha256: str
    rows: int

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "sha256": self.sha256, "rows": self.rows}


def counts(rows: Sequence[Mapping[str, Any]], domains: Sequence[str]) -> dict[str, Any]:
    """The count tables of full (labelled, split-assigned) rows of ``domains``."""
    by_dl = {d: dict.fromkeys(LABELS, 0) for d in domains}
    by_dls = {d: {lab: dict.fromkeys(SPLITS, 0) for lab in LABELS} for d in domains}
    by_split = dict.fromkeys(SPLITS, 0)
    by_binary = dict.fromkeys(BINARY_LABELS, 0)
    for r in rows:
        by_dl[r["domain"]][r["label"]] += 1
        by_dls[r["domain"]][r["label"]][r["split"]] += 1
        by_split[r["split"]] += 1
        by_binary[r["binary_label"]] += 1
    return {
        "by_domain_label": by_dl,
        "by_domain_label_split": by_dls,
        "by_split": by_split,
        "by_binary_label": by_binary,
    }


def verification_counts(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Rows per verification tier (:func:`cacheeval.verify.tier_of`) and per method."""
    by_tier = dict.fromkeys(TIERS, 0)
    by_method = dict.fromkeys(VERIFICATION_METHODS, 0)
    for r in rows:
        method = r["verification_method"]
        by_method[method] += 1
        by_tier[tier_of(method)] += 1
    return {"by_tier": by_tier, "by_method": by_method}


def build_manifest(
    *,
    shards: Sequence[tuple[str, FileInfo]],
    dataset: FileInfo,
    test_labels: FileInfo,
    rows: Sequence[Mapping[str, Any]],
    previous: Mapping[str, Any] | None = None,
    calibration_file: Path | None = None,
) -> dict[str, Any]:
    """The manifest dict. ``shards`` is (domain, info) in DOMAINS order; ``rows``
    the full rows; ``previous`` the manifest being replaced (its
    :data:`PRESERVED_KEYS` are copied unless this build supplies them);
    ``calibration_file`` the difficulty calibration to describe (default: the
    file in effect, :func:`~cacheeval.support.layout.difficulty_file`).

    Raises :class:`~cacheeval.pipeline.checks.BuildFailed` naming ``file:LINE``
    when the calibration file is malformed.
    """
    present = [d for d, _ in shards]
    out: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "cacheeval_version": __version__,
        "shards": [{"domain": d, **info.to_dict()} for d, info in shards],
        "missing_domains": [d for d in DOMAINS if d not in present],
        "dataset": dataset.to_dict(),
        "test_labels": test_labels.to_dict(),
        "counts": counts(rows, present),
        "verification": verification_counts(rows),
        "splits": split_stats(rows),
    }
    block = calibration_block(calibration_file or difficulty_file(), rows)
    if block is not None:
        out["difficulty_calibration"] = block
    for key in PRESERVED_KEYS:
        if key not in out and previous is not None and key in previous:
            out[key] = previous[key]
    return out


def calibration_block(path: Path, rows: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The ``difficulty_calibration`` block for ``rows`` from the calibration file
    at ``path``, or None (no file, or it calibrates none of the rows)."""
    try:
        calibration = load_calibration(path)
    except DifficultyFileError as e:
        raise BuildFailed([str(e)]) from None
    return manifest_block(calibration, rows) if calibration is not None else None
