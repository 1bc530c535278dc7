"""Reading unlabelled prompts: a text file (one request per line), JSONL (a
field, and optionally a system-prompt field and a turns field), CSV or TSV (a
column). One prompt at a time, so memory stays flat on any file size.

Every problem names ``path:LINE`` (:class:`~cacheeval.support.jsonio.JsonlError`):
an empty file, binary data, a line that is not UTF-8, a missing field or column.
"""

from __future__ import annotations

import codecs
import csv
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...support.jsonio import JsonlError, iter_jsonl
from .edits import Prompt

FORMATS: tuple[str, ...] = ("text", "jsonl", "csv", "tsv")
#: Longest request kept; a longer line is an error (it is not a request).
MAX_PROMPT_CHARS = 100_000


@dataclass(frozen=True, slots=True)
class PromptSpec:
    """Where the request is in each record: ``field`` (JSONL) or ``column``
    (CSV/TSV); optional ``system_field`` and ``turns_field`` (a list of
    ``{"role", "content"}``) for JSONL; ``where`` keeps only records whose
    field equals a value (``("split", "dev")``); optional ``tools_field`` (a list
    of tool definitions, objects) for JSONL."""

    fmt: str
    field: str | None = None
    system_field: str | None = None
    turns_field: str | None = None
    where: tuple[str, str] | None = None
    tools_field: str | None = None


def json_type(value: Any) -> str:
    """What a parsed JSON value is, in JSON's words.

    >>> json_type(None), json_type(3), json_type(True), json_type([1]), json_type({})
    ('null', 'a number', 'a boolean', 'an array', 'an object')
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def detect_format(path: str | os.PathLike[str]) -> str:
    """``jsonl``, ``csv``, ``tsv`` from the extension, else ``text``.

    >>> detect_format("p.jsonl"), detect_format("p.tsv"), detect_format("prompts.txt")
    ('jsonl', 'tsv', 'text')
    """
    suffix = Path(path).suffix.lower().lstrip(".")
    if suffix in ("jsonl", "ndjson"):
        return "jsonl"
    if suffix in ("csv", "tsv"):
        return suffix
    return "text"


def _lines(path: str | os.PathLike[str]) -> Iterator[tuple[int, str]]:
    """(line, text) of each line, UTF-8 checked and NUL-free, BOM dropped."""
    spath = str(path)
    with open(path, "rb") as f:
        for lineno, raw in enumerate(f, 1):
            if lineno == 1 and raw.startswith(codecs.BOM_UTF8):
                raw = raw[len(codecs.BOM_UTF8) :]
            if b"\x00" in raw:
                raise JsonlError(spath, lineno, "binary data (a NUL byte), not a text file")
            try:
                yield lineno, raw.decode("utf-8")
            except UnicodeDecodeError as e:
                reason = f"not UTF-8 text (byte {e.start + 1} of the line: {e.reason})"
                raise JsonlError(spath, lineno, reason) from None


def _clean(spath: str, lineno: int, text: Any, what: str) -> str | None:
    if not isinstance(text, str):
        raise JsonlError(spath, lineno, f"{what} is {json_type(text)}, not a string")
    text = " ".join(text.split())
    if len(text) > MAX_PROMPT_CHARS:
        raise JsonlError(spath, lineno, f"{what} is longer than {MAX_PROMPT_CHARS} characters")
    return text or None


def _turns(spath: str, lineno: int, value: Any) -> tuple[dict[str, Any], ...] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(
        isinstance(t, dict) and isinstance(t.get("role"), str) and isinstance(t.get("content"), str)
        for t in value
    ):
        raise JsonlError(spath, lineno, "turns must be a list of {role, content} objects")
    return tuple({"role": t["role"], "content": t["content"]} for t in value) or None


def _tools(spath: str, lineno: int, value: Any) -> tuple[dict[str, Any], ...] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(t, dict) for t in value):
        raise JsonlError(spath, lineno, "tools must be a list of tool-definition objects")
    return tuple(value) or None


def read_prompts(path: str | os.PathLike[str], spec: PromptSpec) -> Iterator[Prompt]:
    """Every prompt of ``path`` in file order (blank requests skipped). Raises
    :class:`JsonlError` on the first bad line, and on a file with no prompt."""
    spath = str(path)
    name = Path(path).name
    found = False
    records = matched = 0
    for lineno, record in _records(path, spec):
        records += 1
        if spec.where is not None:
            key, value = spec.where
            if key not in record:
                raise JsonlError(spath, lineno, f"no field {key!r} (for --where)")
            if str(record[key]) != value:
                continue
        matched += 1
        field = "" if spec.fmt == "text" else spec.field or ""
        if field not in record:
            raise JsonlError(spath, lineno, f"no field {field!r} (fields: {', '.join(record)})")
        query = _clean(spath, lineno, record[field], field or "the line")
        if query is None:
            continue
        system = None
        if spec.system_field is not None and record.get(spec.system_field) is not None:
            system = _clean(spath, lineno, record[spec.system_field], spec.system_field)
        turns = _turns(spath, lineno, record.get(spec.turns_field)) if spec.turns_field else None
        tools = _tools(spath, lineno, record.get(spec.tools_field)) if spec.tools_field else None
        found = True
        yield Prompt(query, system, turns, f"{name}:{lineno}", lineno, tools)
    if records and not matched and spec.where is not None:
        key, value = spec.where
        raise JsonlError(spath, 1, f"no record of the {records} has {key}={value} (--where)")
    if not found:
        raise JsonlError(spath, 1, "no prompts in the file (empty, or every request blank)")


def _records(
    path: str | os.PathLike[str], spec: PromptSpec
) -> Iterator[tuple[int, dict[str, Any]]]:
    spath = str(path)
    if spec.fmt == "text":
        for lineno, line in _lines(path):
            yield lineno, {"": line}
    elif spec.fmt == "jsonl":
        if not spec.field:
            raise JsonlError(spath, 1, "a JSONL file needs --field (the request's field)")
        _check_text(path)
        for lineno, value in iter_jsonl(path):
            if not isinstance(value, dict):
                raise JsonlError(spath, lineno, f"expected a JSON object, got {json_type(value)}")
            yield lineno, value
    elif spec.fmt in ("csv", "tsv"):
        yield from _csv(spath, _lines(path), spec)
    else:
        raise JsonlError(
            spath, 1, f"unknown format {spec.fmt!r} (expected one of {', '.join(FORMATS)})"
        )


def _check_text(path: str | os.PathLike[str]) -> None:
    """Binary data gets its own message before JSON parsing calls it bad JSON."""
    with open(path, "rb") as f:
        head = f.read(4096)
    if b"\x00" in head:
        line = head[: head.index(b"\x00")].count(b"\n") + 1
        raise JsonlError(str(path), line, "binary data (a NUL byte), not a text file")


def _csv(
    spath: str, lines: Iterable[tuple[int, str]], spec: PromptSpec
) -> Iterator[tuple[int, dict[str, Any]]]:
    numbered = iter(lines)
    where: dict[str, int] = {"line": 1}

    def texts() -> Iterator[str]:
        for lineno, text in numbered:
            where["line"] = lineno
            yield text

    reader = csv.reader(texts(), delimiter="\t" if spec.fmt == "tsv" else ",", strict=True)
    try:
        header = next(reader)
    except StopIteration:
        raise JsonlError(spath, 1, "empty file (no header line)") from None
    except csv.Error as e:
        raise JsonlError(spath, where["line"], f"not {spec.fmt.upper()} ({e})") from None
    column = spec.field
    if not column:
        raise JsonlError(
            spath, 1, f"a {spec.fmt.upper()} file needs --column (the request's column)"
        )
    if column not in header:
        raise JsonlError(spath, 1, f"no column {column!r} (columns: {', '.join(header)})")
    while True:
        start = where["line"] + 1
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as e:
            raise JsonlError(spath, where["line"], f"not {spec.fmt.upper()} ({e})") from None
        if not any(c.strip() for c in cells):
            continue
        if len(cells) != len(header):
            raise JsonlError(spath, start, f"{len(cells)} cells, the header has {len(header)}")
        yield start, dict(zip(header, cells, strict=True))
