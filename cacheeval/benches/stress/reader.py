"""Reading unlabelled prompts: a text file (one request per line), JSONL (a
field, and optionally a system-prompt field and a turns field; or a chat
request's ``messages``), CSV or TSV (a column). One prompt at a time, so memory
stays flat on any file size.

Every problem names ``path:LINE`` (:class:`~cacheeval.support.jsonio.JsonlError`):
an empty file, binary data, a line that is not UTF-8, a missing field or column.
A well-formed chat request that holds no text request (its last user message
is an image, or tool calls come before it) is skipped and counted
(:class:`Skipped`), not an error: a log mixes such requests with the others.
"""

from __future__ import annotations

import codecs
import csv
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
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
    #: JSONL: the field holding a chat request's messages (instead of ``field``):
    #: the last user message is the request, system and developer messages the
    #: system prompt, the user and assistant messages before it the turns.
    messages_field: str | None = None


@dataclass
class Skipped:
    """Chat requests left out, per reason, with the line of the first."""

    counts: dict[str, int] = field(default_factory=dict)
    first_line: dict[str, int] = field(default_factory=dict)

    def add(self, reason: str, lineno: int) -> None:
        self.counts[reason] = self.counts.get(reason, 0) + 1
        self.first_line.setdefault(reason, lineno)

    def lines(self, path: str) -> list[str]:
        """One line per reason, for the command's stderr."""
        return [
            f"skipped {n} record(s): {reason} (first at {path}:{self.first_line[reason]})"
            for reason, n in self.counts.items()
        ]


#: Roles whose messages make up the system prompt.
SYSTEM_ROLES = frozenset({"system", "developer"})


def _text_of(content: Any) -> str | None:
    """A message's text: a string, or the text parts of a list of content parts
    joined by newlines; None when it holds anything else (an image, audio)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(
        isinstance(c, dict) and c.get("type") == "text" and isinstance(c.get("text"), str)
        for c in content
    ):
        return "\n".join(c["text"] for c in content)
    return None


ChatRequest = tuple[str, str | None, tuple[dict[str, Any], ...] | None]


def chat_request(spath: str, lineno: int, messages: Any) -> ChatRequest | str:
    """(query, system prompt, turns) of a chat request's ``messages``, or why it
    holds no text request. The request is the last user message (an assistant
    answer logged after it is left out); a ``messages`` value that is not a list
    of objects with a string ``role`` is an error (:class:`JsonlError`).

    >>> chat_request("f", 1, [{"role": "system", "content": "Be brief."},
    ...     {"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"},
    ...     {"role": "user", "content": [{"type": "text", "text": "Capital of Peru?"}]},
    ...     {"role": "assistant", "content": "Lima."}])
    ('Capital of Peru?', 'Be brief.', ({'role': 'user', 'content': 'Hi'}, {'role': 'assistant', 'content': 'Hello!'}))
    >>> chat_request("f", 1, [{"role": "user", "content": [{"type": "image_url"}]}])
    'the request is not text (an image or audio part)'
    """  # noqa: E501
    if not isinstance(messages, list) or not all(
        isinstance(m, dict) and isinstance(m.get("role"), str) for m in messages
    ):
        raise JsonlError(spath, lineno, "messages must be a list of {role, content} objects")
    last = max((i for i, m in enumerate(messages) if m["role"] == "user"), default=None)
    if last is None:
        return "no user message"
    query = _text_of(messages[last].get("content"))
    if query is None:
        return "the request is not text (an image or audio part)"
    system: list[str] = []
    turns: list[dict[str, Any]] = []
    for m in messages[:last]:
        text = _text_of(m.get("content"))
        if m["role"] in SYSTEM_ROLES:
            if text is None:
                return "a system message is not text"
            system.append(text)
        elif m["role"] in ("user", "assistant") and text is not None and not m.get("tool_calls"):
            turns.append({"role": m["role"], "content": text})
        else:
            return "tool calls or non-text messages before the request"
    return query, " ".join(system) or None, tuple(turns) or None


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


def read_prompts(
    path: str | os.PathLike[str], spec: PromptSpec, skipped: Skipped | None = None
) -> Iterator[Prompt]:
    """Every prompt of ``path`` in file order (blank requests skipped; chat
    requests without a text request counted in ``skipped``). Raises
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
        request = _request(spath, lineno, record, spec)
        if isinstance(request, str):
            if skipped is not None:
                skipped.add(request, lineno)
            continue
        query, system, turns = request
        if query is None:
            continue
        tools = _tools(spath, lineno, record.get(spec.tools_field)) if spec.tools_field else None
        found = True
        yield Prompt(query, system, turns, f"{name}:{lineno}", lineno, tools)
    if records and not matched and spec.where is not None:
        key, value = spec.where
        raise JsonlError(spath, 1, f"no record of the {records} has {key}={value} (--where)")
    if not found:
        raise JsonlError(spath, 1, "no prompts in the file (empty, or every request blank)")


def _request(
    spath: str, lineno: int, record: dict[str, Any], spec: PromptSpec
) -> tuple[str | None, str | None, tuple[dict[str, Any], ...] | None] | str:
    """(query, system prompt, turns) of one record (query None: blank), or why
    a chat request holds no text request."""
    if spec.messages_field is not None:
        if spec.messages_field not in record:
            raise JsonlError(
                spath, lineno, f"no field {spec.messages_field!r} (fields: {', '.join(record)})"
            )
        chat = chat_request(spath, lineno, record[spec.messages_field])
        if isinstance(chat, str):
            return chat
        text, system_text, turns = chat
        system = _clean(spath, lineno, system_text, "the system messages") if system_text else None
        return _clean(spath, lineno, text, "the last user message"), system, turns
    key = "" if spec.fmt == "text" else spec.field or ""
    if key not in record:
        raise JsonlError(spath, lineno, f"no field {key!r} (fields: {', '.join(record)})")
    query = _clean(spath, lineno, record[key], key or "the line")
    system = None
    if spec.system_field is not None and record.get(spec.system_field) is not None:
        system = _clean(spath, lineno, record[spec.system_field], spec.system_field)
    turns = _turns(spath, lineno, record.get(spec.turns_field)) if spec.turns_field else None
    return query, system, turns


def _records(
    path: str | os.PathLike[str], spec: PromptSpec
) -> Iterator[tuple[int, dict[str, Any]]]:
    spath = str(path)
    if spec.fmt == "text":
        for lineno, line in _lines(path):
            yield lineno, {"": line}
    elif spec.fmt == "jsonl":
        if not spec.field and not spec.messages_field:
            raise JsonlError(
                spath, 1, "a JSONL file needs --field (the request's field) or --messages-field"
            )
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
