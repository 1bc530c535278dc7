"""What every committed shard owes the dataset, checked once for all ten domains:
each generator is a pure function of its fixtures (the shard is exactly what it
writes, in this process and in a fresh one with another hash seed, so nothing
depends on ``hash()`` or set order); no request pair repeats and no row has two
identical sides; no rationale repeats anywhere in the dataset."""

from __future__ import annotations

import os
import subprocess
import sys
import unicodedata
from pathlib import Path
from typing import Any

import pytest

from cacheeval.pipeline.checks import pair_key, side_key
from cacheeval.pipeline.domains import SPECS
from cacheeval.pipeline.generate import generate_shard
from cacheeval.schema import DOMAINS
from cacheeval.support.jsonio import dumps, iter_jsonl, jsonl_bytes
from cacheeval.support.layout import DOMAINS_DIR, REPO_ROOT
from cacheeval.verify.textnorm import normalize_answer


def shard(domain: str) -> list[dict[str, Any]]:
    return [dict(r) for _, r in iter_jsonl(DOMAINS_DIR / f"{domain}.jsonl")]


@pytest.mark.parametrize("domain", DOMAINS)
def test_generation_matches_the_committed_shard(domain: str) -> None:
    assert jsonl_bytes(generate_shard(domain)) == (DOMAINS_DIR / f"{domain}.jsonl").read_bytes()


def test_command_writes_the_same_bytes_under_another_hash_seed(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "cacheeval", "generate", "--out-dir", str(tmp_path)],
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONHASHSEED": "12345"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    for domain in DOMAINS:
        written = (tmp_path / f"{domain}.jsonl").read_bytes()
        assert written == (DOMAINS_DIR / f"{domain}.jsonl").read_bytes(), domain


@pytest.mark.parametrize("domain", DOMAINS)
def test_rows_use_only_their_domains_checkers(domain: str) -> None:
    kinds = {r["verification_payload"]["kind"] for r in shard(domain)}
    assert kinds and kinds <= set(SPECS[domain].checkers), kinds


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


def _near_key(r: dict[str, Any]) -> tuple[str, ...]:
    """The pair with case, Unicode form and punctuation folded away (operators kept),
    sides in sorted order; prior turns, system prompt and tools stay part of a side."""

    def fold(text: str | None) -> str:
        text = unicodedata.normalize("NFKC", text or "").casefold().replace("\u2212", "-")
        kept = (
            " " if unicodedata.category(c).startswith("P") and c not in "-/" else c for c in text
        )
        return " ".join("".join(kept).split())

    sides = []
    for s in "ab":
        turns = " | ".join(t["content"] for t in r[f"context_{s}"] or [])
        parts = (fold(r[f"query_{s}"]), fold(turns), fold(r[f"system_prompt_{s}"]))
        sides.append("\x1f".join((*parts, dumps(r[f"tools_{s}"]))))
    return tuple(sorted(sides))


# creative's EQUIV rows vary the case and punctuation of one request on purpose
# (case_change, case_punctuation, punctuation): each is its own never-cache case
@pytest.mark.parametrize("domain", [d for d in DOMAINS if d != "creative"])
def test_no_pair_repeats_modulo_case_and_punctuation(domain: str) -> None:
    # A reversed, re-punctuated copy of a pair adds a row but no new test case.
    seen: dict[tuple[str, ...], str] = {}
    for r in shard(domain):
        key = _near_key(r)
        assert key not in seen, (seen.get(key), r["id"])
        seen[key] = r["id"]
