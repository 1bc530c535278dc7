"""Canonical JSON and JSONL: the one place that decides how CacheEval writes data.

Canonical means: keys in the order given (never sorted after the fact, so the
dataclass field order is the file order), UTF-8, ``ensure_ascii=False``,
compact separators, one ``\\n`` after every record, no trailing spaces. The
same records always give the same bytes, on every machine and process.
"""

from __future__ import annotations

import codecs
import errno
import hashlib
import json
import os
import re
import stat
import sys
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


def is_special_file(path: Path) -> bool:
    """Whether ``path`` is a device, a pipe or a socket (``/dev/null``,
    ``/dev/stdout``, a named pipe): written in place, never renamed over. A
    rename would replace the device itself: as root, ``--out /dev/null`` left
    a regular file where ``/dev/null`` was.

    >>> is_special_file(Path(os.devnull)), is_special_file(Path(__file__))
    (True, False)
    """
    try:
        return not stat.S_ISREG(path.stat().st_mode) and not path.is_dir()
    except OSError:  # missing (or unreadable): an ordinary new file
        return False


def write_bytes_atomic(
    path: str | os.PathLike[str], data: bytes, *, mode: int = PUBLIC_MODE
) -> None:
    """Write ``data`` to ``path`` through a temp file and rename, so a crash never
    leaves a half-written file behind. The file gets ``mode`` (mkstemp creates
    it 0600, so private data is never readable by others, not even briefly).
    A device or pipe (:func:`is_special_file`) is written in place."""
    path = Path(path)
    if path.is_dir():  # said of the path asked for, not of the temp file beside it
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
    if is_special_file(path):
        with open(path, "wb") as f:
            f.write(data)
        return
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


class AtomicFile:
    """A file written through a temp file next to ``path``: :meth:`commit`
    renames it into place, :meth:`discard` deletes it, so readers of ``path``
    never see a half-written file however long the writing takes. As a
    context manager it commits on success and discards on an exception.

    >>> import tempfile, pathlib
    >>> target = pathlib.Path(tempfile.mkdtemp()) / "out.jsonl"
    >>> out = AtomicFile(target)
    >>> out.write(b"{}")
    2
    >>> target.exists()
    False
    >>> out.commit()
    >>> target.read_bytes()
    b'{}'
    """

    def __init__(self, path: str | os.PathLike[str], *, mode: int = PUBLIC_MODE) -> None:
        self.path = Path(path)
        self.mode = mode
        if self.path.is_dir():  # said of the path asked for, not of a temp file
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(self.path))
        #: None when ``path`` is a device or pipe, written in place (:func:`is_special_file`)
        self.tmp_path: Path | None = None
        if is_special_file(self.path):
            self.file = open(self.path, "wb")  # noqa: SIM115 - closed by commit/discard
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(
            dir=self.path.parent, prefix=f".{self.path.name}.", suffix=".tmp"
        )
        self.tmp_path = Path(tmp)
        self.file = os.fdopen(fd, "wb")

    def write(self, data: bytes) -> int:
        return self.file.write(data)

    def commit(self) -> None:
        """Close the temp file and rename it to ``path``."""
        self.file.close()
        if self.tmp_path is None:
            return
        try:
            os.chmod(self.tmp_path, self.mode)  # mkstemp creates it 0600
            os.replace(self.tmp_path, self.path)
        except OSError as e:
            self.tmp_path.unlink(missing_ok=True)
            raise OSError(e.errno, e.strerror, str(self.path)) from None

    def discard(self) -> None:
        """Close and delete the temp file (``path`` is left as it was)."""
        self.file.close()
        if self.tmp_path is not None:
            self.tmp_path.unlink(missing_ok=True)

    def __enter__(self) -> AtomicFile:
        return self

    def __exit__(self, exc_type: object, *rest: object) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.discard()


def write_jsonl(
    path: str | os.PathLike[str], records: Iterable[Any], *, mode: int = PUBLIC_MODE
) -> None:
    """Write ``records`` as canonical JSONL, atomically, with file ``mode``."""
    write_bytes_atomic(path, jsonl_bytes(records), mode=mode)


def write_json(path: str | os.PathLike[str], obj: Any) -> None:
    """Write ``obj`` as canonical indented JSON, atomically."""
    write_bytes_atomic(path, dumps_pretty(obj).encode("utf-8"))


#: Deepest nesting of arrays/objects a JSON value read from a file may have
#: (benchmark rows need 8); deeper input is refused before the decoder
#: recurses, so a hostile line can never exhaust the stack.
MAX_DEPTH = 100

# A JSON string (skipped whole, so brackets inside it do not count) or a bracket.
_NESTING = re.compile(r'"(?:[^"\\\n]|\\.)*"|[\[\]{}]')
_SURROGATE = re.compile("[\ud800-\udfff]")


class JsonTextError(ValueError):
    """Why a JSON text cannot be decoded safely (no file: callers add it);
    ``line`` is the line of the text at fault, 1 when no one line is."""

    def __init__(self, message: str, line: int = 1) -> None:
        super().__init__(message)
        self.line = line


def _too_deep(text: str, limit: int) -> bool:
    if text.count("[") + text.count("{") <= limit:
        return False  # the common case, without scanning
    depth = 0
    for m in _NESTING.finditer(text):
        c = m.group()
        if c in "[{":
            depth += 1
            if depth > limit:
                return True
        elif c in "]}":
            depth -= 1
    return False


def lone_surrogate(value: Any) -> str | None:
    """The first string (or key) in ``value`` holding a lone UTF-16 surrogate
    (``"\\ud800"`` decodes to one; it is not Unicode text and cannot be written
    as UTF-8), else None. Iterative, so any depth is safe.

    >>> lone_surrogate({"a": ["ok", "\\ud800x"]})
    '\\ud800x'
    >>> lone_surrogate({"emoji": "\\U0001f600"}) is None
    True
    """
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            if _SURROGATE.search(v):
                return v
        elif isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return None


def _reject_constant(name: str) -> Any:
    raise JsonTextError(f"{name} is not valid JSON")


def loads(text: str, *, max_depth: int = MAX_DEPTH, constants: bool = True) -> Any:
    """Decode one JSON text, refusing what :func:`json.loads` would choke on or
    let through: nesting deeper than ``max_depth``, an integer too long to
    convert, a lone surrogate escape, and (``constants=False``) ``NaN`` /
    ``Infinity``. Every refusal is a :class:`JsonTextError` saying why.

    >>> loads('{"a": [1, 2]}')
    {'a': [1, 2]}
    >>> loads("[" * 101 + "]" * 101)
    Traceback (most recent call last):
    ...
    cacheeval.support.jsonio.JsonTextError: nested deeper than 100 levels
    """
    if _too_deep(text, max_depth):
        raise JsonTextError(f"nested deeper than {max_depth} levels")
    try:
        value = json.loads(text, parse_constant=None if constants else _reject_constant)
    except JsonTextError:
        raise
    except json.JSONDecodeError as e:
        raise JsonTextError(f"{e.msg} at column {e.colno}", e.lineno) from None
    except RecursionError:
        raise JsonTextError("nested too deeply") from None
    except ValueError as e:  # an integer beyond sys.get_int_max_str_digits()
        digits = sys.get_int_max_str_digits()
        why = f"a number longer than {digits} digits" if "digits" in str(e) else str(e)
        raise JsonTextError(why) from None
    if "\\u" in text:  # only an escape can produce a surrogate from valid UTF-8
        bad = lone_surrogate(value)
        if bad is not None:
            where = _SURROGATE.search(bad)
            assert where is not None
            code = f"\\u{ord(where.group()):04x}"
            raise JsonTextError(f"a string holds the lone surrogate {code} (not Unicode text)")
    return value


def iter_jsonl(path: str | os.PathLike[str]) -> Iterator[tuple[int, Any]]:
    """Yield ``(line_number, value)`` for every non-blank line of a JSONL file.

    Lines end at ``\\n``; a UTF-8 byte order mark at the start of the file is
    skipped (the grading server does the same). Raises :class:`JsonlError`
    naming ``path:line`` on a line that is not UTF-8 or not JSON (see
    :func:`loads` for what else is refused).
    """
    spath = str(path)
    with open(path, "rb") as f:
        for lineno, raw in enumerate(f, 1):
            if lineno == 1 and raw.startswith(codecs.BOM_UTF8):
                raw = raw[len(codecs.BOM_UTF8) :]
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                reason = f"not UTF-8 text (byte {e.start + 1} of the line: {e.reason})"
                raise JsonlError(spath, lineno, reason) from None
            if not line.strip():
                continue
            try:
                value = loads(line)
            except JsonTextError as e:
                raise JsonlError(spath, lineno, f"not valid JSON ({e})") from None
            yield lineno, value


def read_json_document(path: str | os.PathLike[str]) -> Any:
    """The one JSON value a file holds (a report, a manifest), decoded as
    :func:`loads` does; :class:`JsonlError` names ``path:LINE`` for a byte that
    is not UTF-8 or a JSON error, as :func:`iter_jsonl` does per line.

    >>> import tempfile
    >>> with tempfile.NamedTemporaryFile("wb", suffix=".json", delete=False) as f:
    ...     _ = f.write(b'{"a": 1}' + bytes([10]) + b'{"b": 2}')
    >>> try:
    ...     read_json_document(f.name)
    ... except JsonlError as e:
    ...     print(e.line, e.reason)
    2 not valid JSON (Extra data at column 1)
    >>> os.unlink(f.name)
    """
    spath = str(path)
    raw = Path(path).read_bytes()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        column = e.start - raw.rfind(b"\n", 0, e.start)
        reason = f"not UTF-8 text (byte {column} of the line: {e.reason})"
        raise JsonlError(spath, line, reason) from None
    try:
        return loads(text)
    except JsonTextError as e:
        raise JsonlError(spath, e.line, f"not valid JSON ({e})") from None


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


def not_a_file(path: str | os.PathLike[str]) -> str:
    """Why ``path`` cannot be read as a file, for a ``path: ...`` message.

    >>> not_a_file("/"), not_a_file("/no/such/file")
    ('is a directory, not a file', 'no such file')
    """
    return "is a directory, not a file" if Path(path).is_dir() else "no such file"
