"""Shared fixtures: the hand-written mini benchmark and a tiny row builder."""

from __future__ import annotations

import dataclasses
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from cacheeval.dataset import load_bench
from cacheeval.schema import Row, derive_binary_label

# The suite never reaches a model hub.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

REPO_ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
MINI_BENCH = FIXTURES / "mini_bench.jsonl"
MINI_LABELS = FIXTURES / "mini_test_labels.jsonl"

_BASE = Row(
    id="cb-qa_factual-0000",
    domain="qa_factual",
    subcategory="probe",
    label="EQUIV",
    binary_label="HIT",
    difficulty="easy",
    query_a="q",
    query_b="q",
    context_a=None,
    context_b=None,
    system_prompt_a=None,
    system_prompt_b=None,
    tools_a=None,
    tools_b=None,
    expected_answer_a=None,
    expected_answer_b=None,
    rationale=None,
    verification_method="exact_match",
    verification_payload=None,
    construction_method="hand_written",
    source="tests",
    real_world_grounding=None,
    split="train",
)


def make_row(i: int, label: str = "EQUIV", domain: str = "qa_factual", **changes: object) -> Row:
    """A valid labelled row ``cb-<domain>-<i>`` with ``label`` (binary derived)."""
    method = str(changes.pop("verification_method", "exact_match"))
    return dataclasses.replace(
        _BASE,
        id=f"cb-{domain}-{i:04d}",
        domain=domain,
        label=label,
        binary_label=derive_binary_label(label, method),
        verification_method=method,
        **changes,  # type: ignore[arg-type]
    )


@pytest.fixture(scope="session")
def mini_rows() -> list[Row]:
    """All 32 fixture rows, hidden test rows merged with their labels."""
    return load_bench(MINI_BENCH, labels_path=MINI_LABELS)


@pytest.fixture(scope="session")
def public_rows() -> list[Row]:
    """The fixture as the public sees it (5 test rows without labels)."""
    return load_bench(MINI_BENCH)


@pytest.fixture(scope="session")
def mini_predictions(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """exact_match's predictions file for the mini bench (made once; read-only)."""
    from cacheeval.cli import main

    out = tmp_path_factory.mktemp("preds") / "p.jsonl"
    assert main(["predict", "--bench", str(MINI_BENCH), "--baseline", "exact_match",
                 "--out", str(out)]) == 0  # fmt: skip
    return out


def wait_for_child_process(pid: int, timeout: float = 60.0) -> None:
    """Wait until process ``pid`` has started a child (a run's cache process), so a
    signal sent next reaches a run that is under way: a fixed sleep can land while
    a loaded machine is still importing, before the run's signal handlers exist
    (and CPython swallows a KeyboardInterrupt raised in an import-lock callback)."""
    import time

    children = Path(f"/proc/{pid}/task/{pid}/children")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and Path(f"/proc/{pid}").exists():
        if children.is_file() and children.read_text().strip():
            return
        time.sleep(0.05)


def default_sigint() -> None:
    """``preexec_fn`` for a child that must take Ctrl-C: a background job of a
    non-interactive shell (how CI may start the suite) inherits SIGINT ignored,
    and Python keeps ignoring a signal that was ignored when it started."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.fixture
def sigint_default() -> Iterator[None]:
    """Python's default SIGINT handler for the test, whatever this process inherited."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)
