"""Fixtures of the grading-service tests: a tiny build (every mini-benchmark row
moved to the test split, hidden fields nulled, labels file and manifest with
their sha256), prediction files, DB snapshots and a real ``cacheeval serve``
subprocess on a free port."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import random
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from cacheeval.dataset import load_bench
from cacheeval.pipeline.assemble import label_record, public_row
from cacheeval.results.predictions import Prediction, make_header, write_predictions
from cacheeval.schema import Row
from cacheeval.support.jsonio import sha256_file, write_json, write_jsonl
from tests.conftest import MINI_BENCH, MINI_LABELS, REPO_ROOT

#: Every key of the public feedback, in order: no count, rate or breakdown.
FEEDBACK_KEYS = [
    "mechanism",
    "fhr_budget",
    "n_rows",
    "n_public_rows",
    "released",
    "level",
    "best_level",
    "subscores",
    "submission_number",
    "latency_ms",
    "tiers",
    "errors",
]


@dataclass(frozen=True)
class MiniBuild:
    """A build whose test split is all 32 mini rows, over 10 domains and 5 labels."""

    root: Path
    bench: Path
    labels: Path
    manifest: Path
    rows: tuple[Row, ...]  # labelled test rows, file order

    @property
    def ids(self) -> list[str]:
        return [r.id for r in self.rows]


def write_build(root: Path, rows: list[Row]) -> MiniBuild:
    """Write bench, private labels and a manifest for ``rows`` (all test rows)."""
    full = [dataclasses.replace(r, split="test").to_dict() for r in rows]
    bench = root / "cachebench.jsonl"
    labels = root / "private" / "test_labels.jsonl"
    manifest = root / "domains" / "manifest.json"
    write_jsonl(bench, [public_row(r) for r in full])
    write_jsonl(labels, [label_record(r) for r in full])
    write_json(
        manifest,
        {
            "dataset": {
                "path": "cachebench.jsonl",
                "sha256": sha256_file(bench),
                "rows": len(full),
            },
            "test_labels": {
                "path": "private/test_labels.jsonl",
                "sha256": sha256_file(labels),
                "rows": len(full),
            },
        },
    )
    labelled = load_bench(bench, labels_path=labels)
    return MiniBuild(root, bench, labels, manifest, tuple(labelled))


@pytest.fixture(scope="session")
def build(tmp_path_factory: pytest.TempPathFactory) -> MiniBuild:
    rows = load_bench(MINI_BENCH, labels_path=MINI_LABELS)
    return write_build(tmp_path_factory.mktemp("build"), rows)


def random_predictions(ids: list[str], seed: int) -> list[Prediction]:
    """A seeded, well-formed prediction per id (random decisions and latencies)."""
    r = random.Random(seed)
    out = []
    for rid in ids:
        s = r.random()
        out.append(
            Prediction(rid, s >= 0.5, 0.9, round(s, 6), "embedding", round(r.uniform(0.1, 9.0), 3))
        )
    return out


def write_prediction_file(path: Path, preds: list[Prediction], name: str = "random") -> Path:
    header = make_header(cache_name=name, created="2026-01-01T00:00:00Z", split="test")
    write_predictions(path, header, preds)
    return path


def db_snapshot(db: Path) -> list[str]:
    """Every statement that would rebuild the database (schema and rows)."""
    conn = sqlite3.connect(db)
    try:
        return list(conn.iterdump())
    finally:
        conn.close()


def count_submissions(db: Path) -> int:
    conn = sqlite3.connect(db)
    try:
        return int(conn.execute("SELECT COUNT(*) FROM submissions").fetchone()[0])
    finally:
        conn.close()


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """Run ``cacheeval ARGS`` in a fresh interpreter."""
    return subprocess.run(
        [sys.executable, "-m", "cacheeval.cli", *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def add_submitter(db: Path, name: str) -> str:
    done = cli("serve", "--db", str(db), "--add-submitter", name)
    assert done.returncode == 0, done.stderr
    token = done.stdout.strip()
    assert token.startswith("cet_")
    return token


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def running_server(build: MiniBuild, db: Path, *extra: str) -> Iterator[str]:
    """``cacheeval serve`` on 127.0.0.1 and a free port; yields the base URL
    once /healthz answers, and stops the process afterwards."""
    port = free_port()
    log = db.with_suffix(f".{port}.log")
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with open(log, "w", encoding="utf-8") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "cacheeval.cli",
                "serve",
                "--bench", str(build.bench),
                "--labels", str(build.labels),
                "--manifest", str(build.manifest),
                "--db", str(db),
                "--host", "127.0.0.1",
                "--port", str(port),
                *extra,
            ],
            cwd=REPO_ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )  # fmt: skip
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 30
            while True:
                if proc.poll() is not None:
                    raise AssertionError(f"server exited early:\n{log.read_text()}")
                try:
                    with urllib.request.urlopen(base + "/healthz", timeout=1) as r:
                        if r.status == 200:
                            break
                except OSError:
                    pass
                if time.monotonic() > deadline:
                    raise AssertionError(f"server did not come up:\n{log.read_text()}")
                time.sleep(0.1)
            yield base
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)


@pytest.fixture
def snapshot() -> Callable[[Path], list[str]]:
    return db_snapshot
