"""Shared fixtures for the reference-cache tests: hand-made rows and offline guards."""

from __future__ import annotations

import dataclasses
import os
import socket
from collections.abc import Iterator

import pytest

from cacheeval.schema import Row

BASE = Row(
    id="cb-qa_factual-0000",
    domain="qa_factual",
    subcategory="probe",
    label="EQUIV",
    binary_label="HIT",
    difficulty="easy",
    query_a="",
    query_b="",
    context_a=None,
    context_b=None,
    system_prompt_a=None,
    system_prompt_b=None,
    tools_a=None,
    tools_b=None,
    expected_answer_a="cached answer",
    expected_answer_b="fresh answer",
    rationale="probe row",
    verification_method="exact_match",
    verification_payload=None,
    construction_method="curated",
    source="tests",
    real_world_grounding="tests",
    split="train",
)


def make_row(i: int, a: str, b: str, label: str, **kw: object) -> Row:
    binary = "HIT" if label in ("EQUIV", "PARA_SAFE") else "MISS"
    return dataclasses.replace(
        BASE,
        id=f"cb-qa_factual-{i:04d}",
        query_a=a,
        query_b=b,
        label=label,
        binary_label=binary,
        **kw,  # type: ignore[arg-type]
    )


#: A dozen hand-made pairs: clear paraphrases and clearly unrelated requests.
PARAPHRASES = [
    ("How do I reset my password?", "How can I reset my password?"),
    ("What is the capital of France?", "What's the capital city of France?"),
    ("Give me a recipe for banana bread", "Can you give me a banana bread recipe?"),
    ("How many legs does a spider have?", "How many legs do spiders have?"),
    ("Translate 'good morning' into Spanish", "Translate good morning to Spanish"),
    ("What time zone is Tokyo in?", "Which time zone is Tokyo in?"),
]
UNRELATED = [
    ("How do I reset my password?", "Best hiking trails near Denver"),
    ("What is the capital of France?", "Write a Python function to reverse a list"),
    ("Give me a recipe for banana bread", "Explain how vaccines train the immune system"),
    ("How many legs does a spider have?", "What is the tax deadline in Canada?"),
    ("Translate 'good morning' into Spanish", "How do I change a flat bicycle tyre?"),
    ("What time zone is Tokyo in?", "Recommend a sci-fi novel for a teenager"),
]


@pytest.fixture
def dozen_rows() -> list[Row]:
    rows = [make_row(i, a, b, "PARA_SAFE") for i, (a, b) in enumerate(PARAPHRASES, 1)]
    rows += [make_row(i, a, b, "UNRELATED") for i, (a, b) in enumerate(UNRELATED, 101)]
    return rows


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[object, ...]]]:
    """Fail any attempt to open a network connection (loopback included)."""
    attempts: list[tuple[object, ...]] = []

    def refuse(self: socket.socket, address: object) -> None:
        attempts.append((address,))
        raise OSError(f"network use in an offline test: connect({address!r})")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    yield attempts
    assert attempts == [], f"network connections attempted: {attempts}"


def offline_env() -> bool:
    return os.environ.get("HF_HUB_OFFLINE") == "1"
