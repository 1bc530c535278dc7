"""Shared fixtures for the reference-cache tests: hand-made rows and offline guards."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator

import pytest

from cacheeval.schema import Row

from ..conftest import make_row as base_make_row


def make_row(i: int, a: str, b: str, label: str, **kw: object) -> Row:
    """A labelled qa_factual row with queries ``a`` / ``b`` (see tests/conftest.py)."""
    kw.setdefault("expected_answer_a", "cached answer")
    kw.setdefault("expected_answer_b", "fresh answer")
    return base_make_row(i, label, query_a=a, query_b=b, **kw)


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
