"""Small, valid synthetic shards for the pipeline tests.

Rows of non-policy domains use an ``alias_set`` payload whose verdict agrees
with the label (HIT rows share the answer, MISS rows do not); the policy
domains (creative, personalized) use a ``policy`` payload. Every row is
distinct, has distinct sides and a unique rationale.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cacheeval.generators.common import DraftRow
from cacheeval.pipeline.generate import number_rows
from cacheeval.schema import HIT_LABELS, LABELS
from cacheeval.support.jsonio import write_jsonl

POLICY_DOMAINS = ("creative", "personalized")

_QUERY_B = {
    "EQUIV": "[{d}] what is the capital of region {i}",
    "PARA_SAFE": "[{d}] Name the capital city of region {i}.",
    "RELATED_UNSAFE": "[{d}] What is the largest city of region {i}?",
    "ADVERSARIAL": "[{d}] What is the capital of region {j}?",
    "UNRELATED": "[{d}] How many legs does insect {i} have?",
}


def synth_row(domain: str, i: int, label: str) -> DraftRow:
    """One valid draft row (:func:`make_shard` numbers rows)."""
    query_a = f"[{domain}] What is the capital of region {i}?"
    query_b = _QUERY_B[label].format(d=domain, i=i, j=i + 1000)
    common: dict[str, Any] = dict(
        domain=domain,
        subcategory="synthetic",
        label=label,
        query_a=query_a,
        query_b=query_b,
        rationale=f"Synthetic {domain} row {i}, a {label} pair.",
        construction_method="lm_generated",
        source=f"sources/synthetic/{domain}.json#item{i // 5}",
        real_world_grounding="A synthetic row for the pipeline tests.",
    )
    if domain in POLICY_DOMAINS:
        return DraftRow(
            **common,
            expected_answer_a=None,
            expected_answer_b=None,
            verification_method="policy_no_cache",
            verification_payload={"kind": "policy", "policy": domain, "reason": "never cached"}
            if domain == "creative"
            else {"kind": "policy", "policy": "personalized", "reason": "per-user answer"},
        )
    ans_a = f"City{i}"
    ans_b = ans_a if label in HIT_LABELS else f"Other{i}"
    return DraftRow(
        **common,
        expected_answer_a=ans_a,
        expected_answer_b=ans_b,
        verification_method="exact_match",
        verification_payload={"kind": "alias_set", "aliases_a": [ans_a], "aliases_b": [ans_b]},
    )


def synth_drafts(domain: str, counts: tuple[int, ...]) -> list[DraftRow]:
    """``counts[k]`` draft rows of ``LABELS[k]``, interleaved so the file is not
    sorted by label."""
    todo = [[lab] * n for lab, n in zip(LABELS, counts, strict=True)]
    order: list[str] = []
    while any(todo):
        for t in todo:
            if t:
                order.append(t.pop())
    return [synth_row(domain, i, lab) for i, lab in enumerate(order)]


def make_shard(domain: str, counts: tuple[int, ...]) -> list[dict[str, Any]]:
    """A numbered shard of :func:`synth_drafts` (under the calibration file in effect)."""
    return number_rows(domain, synth_drafts(domain, counts))


def write_shards(root: Path, matrix: dict[str, tuple[int, ...]]) -> dict[str, list[dict[str, Any]]]:
    """Write ``root/domains/<domain>.jsonl`` for each domain of ``matrix``."""
    out = {}
    for d, counts in matrix.items():
        rows = make_shard(d, counts)
        write_jsonl(root / "domains" / f"{d}.jsonl", rows)
        out[d] = rows
    return out


#: A tiny matrix for fast unit tests (pass it as ``matrix=``).
SMALL_MATRIX: dict[str, tuple[int, ...]] = {
    "qa_factual": (4, 3, 3, 2, 2),
    "math": (2, 2, 3, 5, 2),
    "creative": (3, 3, 3, 2, 4),
}
