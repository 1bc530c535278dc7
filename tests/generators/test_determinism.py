"""Every domain generator is a pure function of its fixtures: the committed shard is
exactly what it writes, in this process and in a fresh one with another hash seed
(so nothing depends on ``hash()`` or set iteration order)."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cacheeval.generators.common import DOMAINS_DIR, REPO_ROOT, SOURCES_DIR
from cacheeval.jsonio import jsonl_bytes
from cacheeval.schema import DOMAINS


@pytest.mark.parametrize("domain", DOMAINS)
def test_generation_matches_the_committed_shard(domain: str) -> None:
    gen = importlib.import_module(f"cacheeval.generators.{domain}")
    assert jsonl_bytes(gen.generate(SOURCES_DIR)) == (DOMAINS_DIR / f"{domain}.jsonl").read_bytes()


@pytest.mark.parametrize("domain", DOMAINS)
def test_script_writes_the_same_bytes_under_another_hash_seed(domain: str, tmp_path: Path) -> None:
    out = tmp_path / f"{domain}.jsonl"
    done = subprocess.run(
        [sys.executable, str(REPO_ROOT / "scripts" / f"gen_{domain}.py"), "--out", str(out)],
        env={**os.environ, "PYTHONHASHSEED": "12345"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert out.read_bytes() == (DOMAINS_DIR / f"{domain}.jsonl").read_bytes()
