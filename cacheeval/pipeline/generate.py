"""The first step of the pipeline: run a domain's generator and number its rows.

A generator (:attr:`cacheeval.pipeline.domains.DomainSpec.generator`) reads the
domain's fixture directory and returns unnumbered :class:`DraftRow` records
in file order. :func:`generate_shard` checks their label counts against the
domain's row of the matrix and numbers them (:func:`number_rows`): ids
``cb-<domain>-0001`` ... in list order, and the difficulty from the
calibration file in effect (:func:`cacheeval.support.layout.difficulty_file`) where it
holds the row with the row's binary label, else the provisional rule. The
result is the shard, ``domains/<domain>.jsonl`` (:func:`write_shard`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..generators.common import DraftRow, FixtureError
from ..schema import LABELS
from ..support.jsonio import jsonl_bytes, write_bytes_atomic
from ..support.layout import difficulty_file
from .difficulty import apply_calibration, load_calibration
from .domains import DomainSpec, spec


def number_rows(domain: str, drafts: Sequence[DraftRow]) -> list[dict[str, Any]]:
    """The shard rows of ``drafts``: ids ``cb-<domain>-0001`` ... in list order,
    every field in file key order.

    A row whose content key is in the calibration file in effect
    (:func:`~cacheeval.support.layout.difficulty_file`; a missing file means no
    calibration) with the row's binary label takes the calibrated difficulty;
    any other row the provisional one (:attr:`DraftRow.provisional_difficulty`).
    Raises ValueError naming ``file:LINE`` when the calibration file is
    malformed, or when a draft belongs to another domain.
    """
    calibration = load_calibration(difficulty_file())
    out = []
    for i, draft in enumerate(drafts, 1):
        if draft.domain != domain:
            raise ValueError(f"a {draft.domain} row among the {domain} rows ({draft.source})")
        row = draft.to_shard(f"cb-{domain}-{i:04d}")
        if calibration is not None:
            row["difficulty"] = apply_calibration(row, calibration)
        out.append(row)
    return out


def label_count_problem(
    domain_spec: DomainSpec, drafts: Sequence[DraftRow], where: Path | None = None
) -> str | None:
    """Why the drafts' label counts differ from the domain's matrix row (naming
    ``where``, default the spec's fixture directory), or None."""
    got = {label: sum(1 for d in drafts if d.label == label) for label in LABELS}
    want = domain_spec.label_counts()
    if got == want:
        return None
    return f"{where or domain_spec.fixture_dir}: label counts {got} differ from MATRIX {want}"


def generate_shard(
    domain: str | DomainSpec,
    fixture_dir: Path | None = None,
    *,
    check_matrix: bool = True,
) -> list[dict[str, Any]]:
    """The numbered shard rows of ``domain`` from ``fixture_dir`` (default: the
    spec's). ``check_matrix=False`` accepts any label counts (a held-out pool).

    Raises :class:`~cacheeval.generators.common.FixtureError` (a ValueError)
    naming ``path:LINE`` for a fixture problem or label counts that differ from
    the matrix; KeyError for an unknown domain.
    """
    domain_spec = domain if isinstance(domain, DomainSpec) else spec(domain)
    where = fixture_dir if fixture_dir is not None else domain_spec.fixture_dir
    drafts = domain_spec.generator(where)
    if check_matrix:
        problem = label_count_problem(domain_spec, drafts, where)
        if problem is not None:
            raise FixtureError(problem)
    return number_rows(domain_spec.name, drafts)


def write_shard(path: Path, rows: Sequence[dict[str, Any]]) -> bool:
    """Write the shard rows to ``path`` (canonical JSONL) unless the file already
    holds exactly these bytes; True when it was written."""
    data = jsonl_bytes(rows)
    if path.is_file() and path.read_bytes() == data:
        return False
    write_bytes_atomic(path, data)
    return True
