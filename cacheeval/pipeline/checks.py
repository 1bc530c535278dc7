"""Dataset-level validation of the domain shards, run by assemble before it
writes anything.

Every problem becomes a :class:`Violation` naming ``shard:LINE``, the row id
and the reason; :func:`check_shards` collects all of them (it never stops at
the first), in shard order (DOMAINS order, then line). A pipeline step that
cannot go on raises :class:`BuildFailed` with every reason.

Rules, per row:

* the row validates against ``#/$defs/shard_row`` of ``row.schema.json`` and
  passes :func:`cacheeval.dataset.row_problem` (with labels required);
* it sits in its own domain's shard and its id is exactly ``cb-<domain>-NNNN``;
* provenance is non-empty (:data:`PROVENANCE_FIELDS`, plus both expected
  answers when the method compares answers: :data:`METHODS_NEEDING_ANSWERS`),
  and the payload names a known checker ``kind``;
* ``binary_label == derive_binary_label(label, verification_method)``;
* its two sides (query, context, system prompt, tools) differ.

Across the dataset:

* ids are unique;
* no two rows hold the same request pair, in either order;
* rationales are unique after :func:`~cacheeval.verify.textnorm.normalize_answer`;
* each present domain's label counts equal its row of the matrix
  (:data:`cacheeval.pipeline.domains.MATRIX`) exactly
  (and with ``require_all`` every domain must be present).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..dataset import row_problem
from ..generators.common import SHARD_FIELDS
from ..schema import (
    DOMAINS,
    LABELS,
    POLICY_NO_CACHE,
    VERIFICATION_METHODS,
    derive_binary_label,
)
from ..support.jsonio import dumps
from ..verify import CHECKERS
from ..verify.textnorm import normalize_answer
from .domains import MATRIX
from .rowschema import schema_errors, validator
from .shards import ShardRow

#: Provenance every labelled row must carry as a non-empty string.
PROVENANCE_FIELDS: tuple[str, ...] = (
    "subcategory",
    "rationale",
    "construction_method",
    "source",
    "real_world_grounding",
    "verification_method",
)

#: Methods whose checker compares the cached answer with query_b's, so both
#: expected answers must be present: every method but the never-cache policy.
METHODS_NEEDING_ANSWERS: tuple[str, ...] = tuple(
    m for m in VERIFICATION_METHODS if m != POLICY_NO_CACHE
)

#: The fields that make up one side of a request.
SIDE_FIELDS: tuple[str, ...] = ("query", "context", "system_prompt", "tools")


@dataclass(frozen=True, slots=True)
class Violation:
    """One reason the build must stop. ``where`` is ``path:LINE`` (or a path for
    shard-wide problems); ``row_id`` is None when no row is to blame."""

    where: str
    row_id: str | None
    reason: str

    def __str__(self) -> str:
        if self.row_id is None:
            return f"{self.where}: {self.reason}"
        # An id with a newline or control character is shown quoted, on one line.
        rid = self.row_id if self.row_id.isprintable() else repr(self.row_id)
        return f"{self.where}: {rid}: {self.reason}"


class BuildFailed(Exception):
    """The shards do not assemble; ``violations`` says why (all of them)."""

    def __init__(self, violations: Sequence[Violation | str]) -> None:
        self.violations = [str(v) for v in violations]
        super().__init__(f"{len(self.violations)} problem(s):\n" + "\n".join(self.violations))


def side_key(data: Mapping[str, Any], side: str) -> str:
    """One side of a request (query, context, system prompt, tools) as canonical JSON."""
    return dumps([data.get(f"{f}_{side}") for f in SIDE_FIELDS])


def pair_key(data: Mapping[str, Any], *, reverse: bool = False) -> str:
    """The request pair as canonical JSON; ``reverse`` swaps the sides."""
    a, b = side_key(data, "a"), side_key(data, "b")
    return f"[{b}, {a}]" if reverse else f"[{a}, {b}]"


def _blank(value: Any) -> bool:
    return not isinstance(value, str) or not value.strip()


def row_violations(sr: ShardRow, shard_validator: Any) -> list[str]:
    """Reasons one shard row is invalid on its own (empty when it is valid)."""
    data = sr.data
    if not isinstance(data, dict):
        return [f"expected a JSON object, got {type(data).__name__}"]
    out = [f"schema: {e}" for e in schema_errors(shard_validator, data)]
    if "split" in data:
        out.append("shard rows carry no 'split' (assemble assigns it)")
    missing = [f for f in SHARD_FIELDS if f not in data]
    if missing:
        # Everything below reads these fields; the schema errors already say which.
        return out or [f"missing field(s): {', '.join(missing)}"]
    problem = row_problem({**data, "split": "train"}, require_labels=True)
    if problem:
        out.append(f"row_problem: {problem}")
    if data["domain"] != sr.domain:
        out.append(f"row of domain {data['domain']!r} in the {sr.domain} shard")
    if isinstance(data["id"], str) and not re.fullmatch(rf"cb-{sr.domain}-[0-9]{{4}}", data["id"]):
        out.append(f"id {data['id']!r} is not exactly cb-{sr.domain}-NNNN")
    for f in PROVENANCE_FIELDS:
        if _blank(data[f]):
            out.append(f"provenance field {f} is empty")
    method = data["verification_method"]
    if method in METHODS_NEEDING_ANSWERS:
        for f in ("expected_answer_a", "expected_answer_b"):
            if _blank(data[f]):
                out.append(f"{f} is empty but verification_method {method} compares answers")
    payload = data["verification_payload"]
    if not isinstance(payload, dict) or not isinstance(payload.get("kind"), str):
        out.append("verification_payload must be an object with a string 'kind'")
    elif payload["kind"] not in CHECKERS:
        out.append(
            f"verification_payload kind {payload['kind']!r} has no checker "
            f"(known: {', '.join(CHECKERS)})"
        )
    label = data["label"]
    if label in LABELS:
        want = derive_binary_label(label, method if isinstance(method, str) else None)
        if data["binary_label"] != want:
            out.append(
                f"binary_label {data['binary_label']!r} should be {want} "
                f"(label {label}, verification_method {method})"
            )
    if side_key(data, "a") == side_key(data, "b"):
        out.append("the two sides are identical (query, context, system prompt and tools)")
    return out


def matrix_violations(
    domain: str, rows: Sequence[ShardRow], where: str, matrix: Mapping[str, Sequence[int]]
) -> list[Violation]:
    """Label counts of one shard against its matrix row, label by label."""
    if domain not in matrix:
        return [Violation(where, None, f"domain {domain} has no row in the matrix")]
    counts = dict.fromkeys(LABELS, 0)
    for sr in rows:
        if isinstance(sr.data, dict) and sr.data.get("label") in counts:
            counts[sr.data["label"]] += 1
    wrong = [
        f"{lab} {counts[lab]} (want {want})"
        for lab, want in zip(LABELS, matrix[domain], strict=True)
        if counts[lab] != want
    ]
    if not wrong:
        return []
    total, want_total = len(rows), sum(matrix[domain])
    return [
        Violation(
            where,
            None,
            f"label counts differ from the matrix: {', '.join(wrong)}; "
            f"{total} rows (want {want_total})",
        )
    ]


def check_shards(
    shards: Mapping[str, Sequence[ShardRow]],
    *,
    matrix: Mapping[str, Sequence[int]] = MATRIX,
    require_all: bool = False,
    shard_paths: Mapping[str, str] | None = None,
) -> list[Violation]:
    """Every violation in ``shards`` (domain -> rows, as read by
    :func:`~cacheeval.pipeline.shards.read_shards`). Empty means the build may go on.

    ``shard_paths`` gives the path shown for shard-wide problems (default: the
    path of the shard's first row, or ``<domain>.jsonl``).
    """
    v = validator("shard_row")
    found: list[tuple[int, int, Violation]] = []

    def add(sr: ShardRow, reason: str) -> None:
        found.append((DOMAINS.index(sr.domain), sr.line, Violation(sr.where, sr.row_id, reason)))

    first_id: dict[str, ShardRow] = {}
    first_pair: dict[str, ShardRow] = {}
    first_rationale: dict[str, ShardRow] = {}
    for domain in DOMAINS:
        for sr in shards.get(domain, ()):
            for reason in row_violations(sr, v):
                add(sr, reason)
            data = sr.data
            if not isinstance(data, dict):
                continue
            rid = sr.row_id
            if rid is not None:
                if rid in first_id:
                    add(sr, f"duplicate id (first at {first_id[rid].where})")
                else:
                    first_id[rid] = sr
            if all(f"{f}_{s}" in data for f in SIDE_FIELDS for s in "ab"):
                key = pair_key(data)
                if key in first_pair:
                    other = first_pair[key]
                    add(sr, f"same request pair as {other.row_id} ({other.where})")
                else:
                    rev = first_pair.get(pair_key(data, reverse=True))
                    if rev is not None and key != pair_key(data, reverse=True):
                        add(sr, f"same request pair as {rev.row_id} ({rev.where}), sides swapped")
                    first_pair.setdefault(key, sr)
            rationale = data.get("rationale")
            if isinstance(rationale, str) and rationale.strip():
                norm = normalize_answer(rationale)
                if norm in first_rationale:
                    other = first_rationale[norm]
                    add(sr, f"rationale duplicates that of {other.row_id} ({other.where})")
                else:
                    first_rationale[norm] = sr

    last = 1 << 62  # shard-wide problems sort after the shard's rows
    for domain in DOMAINS:
        if domain not in shards:
            if require_all:
                where = (shard_paths or {}).get(domain, f"{domain}.jsonl")
                found.append(
                    (DOMAINS.index(domain), last, Violation(where, None, "shard is missing"))
                )
            continue
        rows = shards[domain]
        default = rows[0].path if rows else f"{domain}.jsonl"
        where = (shard_paths or {}).get(domain, default)
        for viol in matrix_violations(domain, rows, where, matrix):
            found.append((DOMAINS.index(domain), last, viol))
    for domain in shards:
        if domain not in DOMAINS:
            found.append((len(DOMAINS), last, Violation(f"{domain}.jsonl", None, "unknown domain")))
    found.sort(key=lambda t: (t[0], t[1]))  # stable: same-line reasons keep their order
    return [viol for _, _, viol in found]
