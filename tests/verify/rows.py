"""Hand-made rows for the checker tests."""

from __future__ import annotations

from typing import Any

from cacheeval.schema import Row, derive_binary_label


def make(
    *,
    label: str = "EQUIV",
    method: str = "exact_match",
    payload: dict[str, Any] | None = None,
    answer_a: str | None = "Canberra",
    answer_b: str | None = "Canberra",
    domain: str = "qa_factual",
    rid: str = "cb-qa_factual-0001",
    binary_label: str | None = None,
    **extra: Any,
) -> Row:
    """A labelled Row; ``binary_label`` defaults to the derived one."""
    fields: dict[str, Any] = {
        "id": rid,
        "domain": domain,
        "subcategory": "test",
        "label": label,
        "binary_label": binary_label or derive_binary_label(label, method),
        "difficulty": "easy",
        "query_a": "What is the capital of Australia?",
        "query_b": "Capital city of Australia?",
        "context_a": None,
        "context_b": None,
        "system_prompt_a": None,
        "system_prompt_b": None,
        "tools_a": None,
        "tools_b": None,
        "expected_answer_a": answer_a,
        "expected_answer_b": answer_b,
        "rationale": "test row",
        "verification_method": method,
        "verification_payload": payload,
        "construction_method": "curated",
        "source": "tests",
        "real_world_grounding": "tests",
        "split": "train",
    }
    fields.update(extra)
    return Row(**fields)
