"""What every committed shard owes the dataset, checked once for all ten domains:
each generator is a pure function of its fixtures (the shard is exactly what it
writes, in this process and in a fresh one with another hash seed, so nothing
depends on ``hash()`` or set order); no request pair repeats and no row has two
identical sides; no rationale repeats anywhere in the dataset."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cacheeval.build.checks import pair_key, side_key
from cacheeval.generators.common import DOMAINS_DIR, REPO_ROOT, SOURCES_DIR
from cacheeval.jsonio import iter_jsonl, jsonl_bytes
from cacheeval.schema import DOMAINS
from cacheeval.verify.textnorm import normalize_answer


def shard(domain: str) -> list[dict[str, Any]]:
    return [dict(r) for _, r in iter_jsonl(DOMAINS_DIR / f"{domain}.jsonl")]


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


@pytest.mark.parametrize("domain", DOMAINS)
def test_no_duplicate_pairs_and_no_identical_sides(domain: str) -> None:
    seen: set[str] = set()
    for r in shard(domain):
        assert side_key(r, "a") != side_key(r, "b"), r["id"]
        assert pair_key(r) not in seen and pair_key(r, reverse=True) not in seen, r["id"]
        seen.add(pair_key(r))


def test_rationales_unique_across_the_dataset() -> None:
    owner: dict[str, str] = {}
    clashes = []
    for domain in DOMAINS:
        for r in shard(domain):
            key = normalize_answer(r["rationale"])
            if key in owner:
                clashes.append((owner[key], r["id"]))
            owner.setdefault(key, r["id"])
    assert clashes == []
