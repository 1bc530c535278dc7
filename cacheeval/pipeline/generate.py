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
from ..schema import LABELS, Request, derive_binary_label
from ..support.jsonio import jsonl_bytes, write_bytes_atomic
from ..support.layout import difficulty_file
from ..verify.never_cache import request_policy
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


def policy_problem(drafts: Sequence[DraftRow]) -> str | None:
    """Why a HIT draft contradicts the never-cache rules, or None.

    A row may be a HIT only if both of its requests may be served from a cache
    at all (SCHEMA.md, section 2.1): where a rule of
    :func:`~cacheeval.verify.never_cache.request_policy` refuses a side (a
    card message to write is creative writing), the row must carry the policy
    (``policy_no_cache``, MISS) or be rewritten. The label checkers judge the
    answers, not the policy, so without this check such a row passes them
    (one held-out family did). A side with tools is left to the write-tool
    policy, which the tool checker derives from the calls.

    >>> from cacheeval.generators.common import DraftRow
    >>> row = DraftRow(
    ...     domain="conversational", subcategory="case_punctuation_variant", label="EQUIV",
    ...     query_a="Write a haiku about rain.", query_b="write a haiku about rain",
    ...     expected_answer_a=None, expected_answer_b=None, rationale="",
    ...     verification_method="rubric", construction_method="template",
    ...     source="f.json#rain", real_world_grounding="")
    >>> problem = policy_problem([row])
    >>> problem[: problem.index(" (creative")]
    'f.json#rain: a HIT row (EQUIV) whose side a is never cached'
    >>> problem[problem.index("(creative") :]
    '(creative: asks for creative writing (haiku)); label it policy_no_cache or rewrite it'
    """
    for d in drafts:
        if derive_binary_label(d.label, d.verification_method) != "HIT":
            continue
        for side in ("a", "b"):
            if getattr(d, f"tools_{side}"):
                # with tools, the calls decide (the write-tool policy, verify/policy.py): a
                # request no offered tool serves is refused, and "book me a cab" beside
                # book_table is no mutation
                continue
            verdict = request_policy(
                Request(
                    query=getattr(d, f"query_{side}"),
                    context=getattr(d, f"context_{side}"),
                    system_prompt=getattr(d, f"system_prompt_{side}"),
                )
            )
            if not verdict.allowed:
                return (
                    f"{d.source}: a HIT row ({d.label}) whose side {side} is never cached "
                    f"({verdict.rule}: {verdict.reason}); label it policy_no_cache or rewrite it"
                )
    return None


def generate_shard(
    domain: str | DomainSpec,
    fixture_dir: Path | None = None,
    *,
    check_matrix: bool = True,
) -> list[dict[str, Any]]:
    """The numbered shard rows of ``domain`` from ``fixture_dir`` (default: the
    spec's). ``check_matrix=False`` accepts any label counts (a held-out pool).

    Raises :class:`~cacheeval.generators.common.FixtureError` (a ValueError)
    naming ``path:LINE`` for a fixture problem, label counts that differ from
    the matrix, or a HIT row that a never-cache rule refuses
    (:func:`policy_problem`); KeyError for an unknown domain.
    """
    domain_spec = domain if isinstance(domain, DomainSpec) else spec(domain)
    where = fixture_dir if fixture_dir is not None else domain_spec.fixture_dir
    drafts = domain_spec.generator(where)
    if check_matrix:
        problem = label_count_problem(domain_spec, drafts, where)
        if problem is not None:
            raise FixtureError(problem)
    problem = policy_problem(drafts)
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
