"""Canonical JSON and JSONL: the one place that decides how CacheEval writes data.

Canonical means: keys in the order given (never sorted after the fact, so the
dataclass field order is the file order), UTF-8, ``ensure_ascii=False``,
compact separators, one ``\\n`` after every record, no trailing spaces. The
same records always give the same bytes, on every machine and process.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any


def dumps(obj: Any) -> str:
    """One canonical JSON line (no newline)."""
    return json.dumps(obj, ensure_ascii=False, separators=(", ", ": "), allow_nan=False)


def dumps_pretty(obj: Any) -> str:
    """Canonical indented JSON for small files meant for people (manifests, reports)."""
    return json.dumps(obj, ensure_ascii=False, indent=2, allow_nan=False) + "\n"


def jsonl_bytes(records: Iterable[Any]) -> bytes:
    """Canonical JSONL bytes for ``records``."""
    return "".join(dumps(r) + "\n" for r in records).encode("utf-8")


#: File mode of data meant to be shared, and of private data (labels, slices).
PUBLIC_MODE = 0o644
PRIVATE_MODE = 0o600


def write_bytes_atomic(
    path: str | os.PathLike[str], data: bytes, *, mode: int = PUBLIC_MODE
) -> None:
    """Write ``data`` to ``path`` through a temp file and rename, so a crash never
    leaves a half-written file behind. The file gets ``mode`` (mkstemp creates
    it 0600, so private data is never readable by others, not even briefly)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_jsonl(
    path: str | os.PathLike[str], records: Iterable[Any], *, mode: int = PUBLIC_MODE
) -> None:
    """Write ``records`` as canonical JSONL, atomically, with file ``mode``."""
    write_bytes_atomic(path, jsonl_bytes(records), mode=mode)


def write_json(path: str | os.PathLike[str], obj: Any) -> None:
    """Write ``obj`` as canonical indented JSON, atomically."""
    write_bytes_atomic(path, dumps_pretty(obj).encode("utf-8"))


def iter_jsonl(path: str | os.PathLike[str]) -> Iterator[tuple[int, Any]]:
    """Yield ``(line_number, value)`` for every non-blank line of a JSONL file.

    Raises :class:`JsonlError` naming ``path:line`` on a line that is not JSON.
    """
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                yield lineno, json.loads(line)
            except json.JSONDecodeError as e:
                reason = f"not valid JSON ({e.msg} at column {e.colno})"
                raise JsonlError(str(path), lineno, reason) from None


def sha256_file(path: str | os.PathLike[str]) -> str:
    """Hex sha256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def sha256_bytes(data: bytes) -> str:
    """Hex sha256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


class JsonlError(ValueError):
    """A problem with one line of a JSONL file; the message starts ``path:LINE:``."""

    def __init__(self, path: str, line: int, message: str) -> None:
        self.path = path
        self.line = line
        self.reason = message
        super().__init__(f"{path}:{line}: {message}")
