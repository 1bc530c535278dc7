"""Helpers every domain generator uses: row construction in file order, stable
seeds, the provisional difficulty rule, and the shard-writing entry point."""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from ..jsonio import write_jsonl
from ..schema import HIT, ROW_FIELDS, Request, derive_binary_label

REPO_ROOT = Path(__file__).resolve().parents[2]
SOURCES_DIR = REPO_ROOT / "sources"
DOMAINS_DIR = REPO_ROOT / "domains"

#: Shard rows hold every row field but ``split``, which assemble assigns.
SHARD_FIELDS: tuple[str, ...] = tuple(f for f in ROW_FIELDS if f != "split")

#: The calibrated difficulty of every row (written by
#: ``scripts/recalibrate_difficulty.py``); :func:`number_rows` applies it.
DIFFICULTY_FILE = SOURCES_DIR / "difficulty.json"

# Lets the recalibration (and tests) point number_rows at another calibration
# file without changing the generators' signatures; None means DIFFICULTY_FILE.
_difficulty_file: ContextVar[Path | None] = ContextVar("difficulty_file", default=None)


def difficulty_file() -> Path:
    """The calibration file in effect: :data:`DIFFICULTY_FILE` unless overridden
    by :func:`using_difficulty_file`."""
    return _difficulty_file.get() or DIFFICULTY_FILE


@contextmanager
def using_difficulty_file(path: Path) -> Iterator[None]:
    """Within the block, :func:`number_rows` and the manifest read the calibration
    from ``path`` (a missing file means: no calibration, provisional difficulty)."""
    token = _difficulty_file.set(Path(path))
    try:
        yield
    finally:
        _difficulty_file.reset(token)


def stable_seed(*parts: str | int) -> int:
    """A 64-bit seed from strings, identical in every process (unlike ``hash()``)."""
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big")


def rng(*parts: str | int) -> random.Random:
    """A ``random.Random`` seeded from :func:`stable_seed`."""
    return random.Random(stable_seed(*parts))


def load_source(path: Path) -> Any:
    """Read a hand-written JSON fixture."""
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def source_ref(path: Path, item: str | None = None) -> str:
    """The ``source`` field: the fixture's repo-relative path, plus ``#item`` naming
    the authored item a row came from (rows from one item form one family)."""
    rel = path.resolve().relative_to(REPO_ROOT).as_posix()
    return f"{rel}#{item}" if item else rel


_TOKEN = re.compile(r"\w+", re.UNICODE)


def _tokens(text: str) -> set[str]:
    return set(_TOKEN.findall(text.casefold()))


def request_text(
    query: str, context: Sequence[dict[str, str]] | None, system_prompt: str | None
) -> str:
    """The whole request as one string (:meth:`Request.text` of a row's side)."""
    return Request(query, tuple(context) if context else None, system_prompt).text()


def provisional_difficulty(text_a: str, text_b: str, binary_label: str) -> str:
    """Provisional difficulty from token Jaccard similarity of the two requests.

    A HIT pair is hard when the sides share few tokens (a cache must see past
    wording); a MISS pair is hard when they share many (a cache must see the
    small difference). Replaced later by the calibrated ensemble difficulty.
    """
    ta, tb = _tokens(text_a), _tokens(text_b)
    j = len(ta & tb) / len(ta | tb) if ta | tb else 1.0
    if binary_label == HIT:
        return "hard" if j < 0.3 else "medium" if j < 0.6 else "easy"
    return "hard" if j >= 0.7 else "medium" if j >= 0.4 else "easy"


def make_row(
    *,
    id: str,
    domain: str,
    subcategory: str,
    label: str,
    query_a: str,
    query_b: str,
    expected_answer_a: str | None,
    expected_answer_b: str | None,
    rationale: str,
    verification_method: str,
    verification_payload: dict[str, Any],
    construction_method: str,
    source: str,
    real_world_grounding: str,
    context_a: list[dict[str, str]] | None = None,
    context_b: list[dict[str, str]] | None = None,
    system_prompt_a: str | None = None,
    system_prompt_b: str | None = None,
    tools_a: list[dict[str, Any]] | None = None,
    tools_b: list[dict[str, Any]] | None = None,
    difficulty: str | None = None,
) -> dict[str, Any]:
    """One shard row as a dict in file key order. ``binary_label`` is derived
    from label + method; ``difficulty`` defaults to the provisional rule."""
    binary = derive_binary_label(label, verification_method)
    if difficulty is None:
        difficulty = provisional_difficulty(
            request_text(query_a, context_a, system_prompt_a),
            request_text(query_b, context_b, system_prompt_b),
            binary,
        )
    values = {
        "id": id,
        "domain": domain,
        "subcategory": subcategory,
        "label": label,
        "binary_label": binary,
        "difficulty": difficulty,
        "query_a": query_a,
        "query_b": query_b,
        "context_a": context_a,
        "context_b": context_b,
        "system_prompt_a": system_prompt_a,
        "system_prompt_b": system_prompt_b,
        "tools_a": tools_a,
        "tools_b": tools_b,
        "expected_answer_a": expected_answer_a,
        "expected_answer_b": expected_answer_b,
        "rationale": rationale,
        "verification_method": verification_method,
        "verification_payload": verification_payload,
        "construction_method": construction_method,
        "source": source,
        "real_world_grounding": real_world_grounding,
    }
    return {f: values[f] for f in SHARD_FIELDS}


def number_rows(domain: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Give rows their ids ``cb-<domain>-0001`` ... in list order, and their
    calibrated difficulty.

    A row whose content key (:func:`cacheeval.build.difficulty.content_key`) is
    in the calibration file (:func:`difficulty_file`) with the row's binary
    label takes the calibrated difficulty; any other row keeps the one it has
    (the provisional rule of :func:`make_row`). Raises ValueError naming
    ``file:LINE`` when the calibration file is malformed.
    """
    # Imported here: cacheeval.build.difficulty itself imports this module.
    from ..build.difficulty import apply_calibration, load_calibration

    calibration = load_calibration(difficulty_file())
    out = []
    for i, r in enumerate(rows, 1):
        r = dict(r)
        r["id"] = f"cb-{domain}-{i:04d}"
        if calibration is not None:
            r["difficulty"] = apply_calibration(r, calibration)
        out.append({f: r[f] for f in SHARD_FIELDS})
    return out


def run_generator(
    domain: str, generate: Callable[[Path], list[dict[str, Any]]], argv: Sequence[str] | None = None
) -> int:
    """Entry point of ``scripts/gen_<domain>.py``: generate and write the shard."""
    parser = argparse.ArgumentParser(description=f"Generate the {domain} shard.")
    parser.add_argument("--sources-dir", type=Path, default=SOURCES_DIR)
    parser.add_argument("--out", type=Path, default=DOMAINS_DIR / f"{domain}.jsonl")
    args = parser.parse_args(argv)
    try:
        rows = generate(args.sources_dir)
    except (ValueError, KeyError, OSError) as e:
        # A fixture error names the file (and line where known); no traceback.
        print(f"{domain}: cannot generate: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    write_jsonl(args.out, rows)
    print(f"{domain}: wrote {len(rows)} rows to {args.out}", file=sys.stderr)
    return 0
