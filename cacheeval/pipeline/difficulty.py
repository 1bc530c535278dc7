"""Calibrated difficulty: the committed calibration file and how a build applies it.

The difficulty of a row is measured, not guessed: five pair scorers
(:mod:`.similarity`) each decide every row at their own best-F1 threshold, and
with ``k`` = the number of scorers that decide a row correctly
(:mod:`.calibration`, :func:`bucket`)::

    easy    k >= 4        medium  2 <= k <= 3        hard  k <= 1

The result is committed as data, ``sources/difficulty.json``: metadata plus a
map from each row's :func:`content_key` to ``{difficulty, n_correct,
binary_label}``. This module reads that file (:func:`load_calibration`) and
applies it (:func:`apply_calibration`, used when the pipeline numbers a
generator's rows, :func:`cacheeval.pipeline.generate.number_rows`), so the
build itself never loads a model. An entry applies only while the row still
carries the binary label it was calibrated with (a relabelled row falls back
to the provisional rule until the next recalibration,
``scripts/recalibrate_difficulty.py`` / :mod:`.recalibrate`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..generators.common import DraftRow
from ..schema import BINARY_LABELS, DIFFICULTIES
from ..support.jsonio import dumps, sha256_bytes

#: Where the calibration lives, relative to the repository root.
DIFFICULTY_PATH = "sources/difficulty.json"
FORMAT = "cacheeval-difficulty/1"
#: Ensemble size and the bucket cut-offs on the number of correct scorers.
N_SCORERS = 5
EASY_MIN_CORRECT = 4
MEDIUM_MIN_CORRECT = 2

#: The fields a content key hashes, in this order.
CONTENT_FIELDS: tuple[str, ...] = (
    "query_a",
    "query_b",
    "context_a",
    "context_b",
    "system_prompt_a",
    "system_prompt_b",
    "tools_a",
    "tools_b",
)


# --- content key ----------------------------------------------------------------------


def _plain(value: Any) -> Any:
    """Tuples (as in :class:`~cacheeval.schema.Row`) become lists, recursively."""
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def content_key(row: Mapping[str, Any] | DraftRow) -> str:
    """sha256 (hex) of ``dumps([query_a, query_b, context_a, context_b,
    system_prompt_a, system_prompt_b, tools_a, tools_b])``.

    The key names the request pair by content, never by id, so renumbering or
    reordering rows cannot attach a difficulty to the wrong pair.
    """
    if isinstance(row, DraftRow):
        values = [getattr(row, f) for f in CONTENT_FIELDS]
    else:
        values = [row[f] for f in CONTENT_FIELDS]
    return sha256_bytes(dumps([_plain(v) for v in values]).encode("utf-8"))


def bucket(n_correct: int) -> str:
    """easy (>= 4 of 5 correct), medium (2-3) or hard (0-1)."""
    if not 0 <= n_correct <= N_SCORERS:
        raise ValueError(f"n_correct {n_correct} outside 0..{N_SCORERS}")
    if n_correct >= EASY_MIN_CORRECT:
        return "easy"
    if n_correct >= MEDIUM_MIN_CORRECT:
        return "medium"
    return "hard"


# --- the committed file -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Entry:
    """The calibrated difficulty of one request pair."""

    difficulty: str
    n_correct: int
    binary_label: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "difficulty": self.difficulty,
            "n_correct": self.n_correct,
            "binary_label": self.binary_label,
        }


class DifficultyFileError(ValueError):
    """A malformed calibration file; the message starts ``path:LINE:``."""


@dataclass(frozen=True, slots=True)
class CommittedCalibration:
    """``sources/difficulty.json`` as read back: metadata, entries, file hash."""

    metadata: Mapping[str, Any]
    entries: Mapping[str, Entry]
    sha256: str


_KEY = re.compile(r"\A[0-9a-f]{64}\Z")


def _line_of(text: str, needle: str) -> int:
    at = text.find(needle)
    return text.count("\n", 0, at) + 1 if at >= 0 else 1


def load_calibration(path: Path) -> CommittedCalibration | None:
    """Read and check a calibration file; None when ``path`` does not exist.

    Raises :class:`DifficultyFileError` (``path:LINE: what``) when the file is
    not JSON, is not this format, or holds a malformed entry.
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    shown = str(path)
    try:
        text = data.decode("utf-8")
        doc = json.loads(text)
    except UnicodeDecodeError as e:
        raise DifficultyFileError(f"{shown}:1: not valid UTF-8 ({e.reason})") from None
    except json.JSONDecodeError as e:
        raise DifficultyFileError(f"{shown}:{e.lineno}: not valid JSON ({e.msg})") from None
    if not isinstance(doc, dict):
        raise DifficultyFileError(f"{shown}:1: expected a JSON object")
    if doc.get("format") != FORMAT:
        line = _line_of(text, '"format"')
        raise DifficultyFileError(
            f"{shown}:{line}: format is {doc.get('format')!r}, expected {FORMAT!r}"
        )
    raw_entries = doc.get("entries")
    if not isinstance(raw_entries, dict):
        raise DifficultyFileError(f"{shown}:1: 'entries' must be an object")
    entries: dict[str, Entry] = {}
    for key, value in raw_entries.items():
        problem = _entry_problem(key, value)
        if problem:
            line = _line_of(text, json.dumps(key))
            raise DifficultyFileError(f"{shown}:{line}: entry {key}: {problem}")
        entries[key] = Entry(value["difficulty"], value["n_correct"], value["binary_label"])
    metadata = {k: v for k, v in doc.items() if k != "entries"}
    return CommittedCalibration(metadata, entries, sha256_bytes(data))


def _entry_problem(key: str, value: Any) -> str | None:
    if not _KEY.match(key):
        return "the key is not a sha256 hex digest"
    if not isinstance(value, dict) or set(value) != {"difficulty", "n_correct", "binary_label"}:
        return "expected an object with difficulty, n_correct and binary_label"
    if value["difficulty"] not in DIFFICULTIES:
        return f"unknown difficulty {value['difficulty']!r}"
    k = value["n_correct"]
    if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k <= N_SCORERS:
        return f"n_correct must be an integer in 0..{N_SCORERS}, got {k!r}"
    if bucket(k) != value["difficulty"]:
        return f"difficulty {value['difficulty']!r} does not match n_correct {k}"
    if value["binary_label"] not in BINARY_LABELS:
        return f"unknown binary_label {value['binary_label']!r}"
    return None


def apply_calibration(row: Mapping[str, Any], calibration: CommittedCalibration) -> str:
    """The difficulty ``row`` should carry: the calibrated one when the file holds
    its content key with the row's binary label, else the row's own."""
    entry = calibration.entries.get(content_key(row))
    if entry is not None and entry.binary_label == row["binary_label"]:
        return entry.difficulty
    current: str = row["difficulty"]
    return current


def manifest_block(
    calibration: CommittedCalibration, rows: Sequence[Mapping[str, Any]]
) -> dict[str, Any] | None:
    """The manifest's ``difficulty_calibration``: the file's path and sha256, its
    metadata, and how many of the build's ``rows`` it calibrates. None when it
    calibrates none of them (the file belongs to other rows)."""
    covered = 0
    for r in rows:
        entry = calibration.entries.get(content_key(r))
        if entry is not None and entry.binary_label == r["binary_label"]:
            covered += 1
    if covered == 0:
        return None
    return {
        "path": DIFFICULTY_PATH,
        "sha256": calibration.sha256,
        **calibration.metadata,
        "rows_calibrated": covered,
        "rows_in_build": len(rows),
    }
