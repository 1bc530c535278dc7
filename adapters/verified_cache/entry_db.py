"""The SQLite side of the verified cache's entry store (:mod:`.store`): the table
layout, how a request and its word pieces are encoded in it, the connections
(one writer, one reader per thread), and the readers-writer lock the store
holds around them."""

from __future__ import annotations

import gc
import hashlib
import json
import os
import sqlite3
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING

from cacheeval.schema import Request

if TYPE_CHECKING:
    from adapters.embedders import WordPieces

#: Bumped when the SQLite layout changes; a store of another version is refused.
STORE_FORMAT = 1


def key_digest(scope: str, exact_key: str) -> int:
    """A signed 64-bit digest of (scope, exact key): the exact map's key."""
    h = hashlib.blake2b(f"{scope}\x1e{exact_key}".encode(), digest_size=8).digest()
    return int.from_bytes(h, "little", signed=True)


class StoreInUse(RuntimeError):
    """The store's file is open in another store object (this process or
    another), or the store is used in a process forked from its owner."""


class RWLock:
    """Many readers or one writer; a waiting writer keeps new readers out (so a
    stream of lookups cannot starve ``add``). Bound to a process
    (:meth:`bind_to_process`), it refuses to be taken in any other: every use
    of a path store takes it."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._readers = 0
        self._writing = False
        self._writers_waiting = 0
        self._owner: tuple[int, str] | None = None  # (pid, what) once bound

    def bind_to_process(self, what: str) -> None:
        """Only this process may take the lock from now on (``what`` names the store)."""
        self._owner = (os.getpid(), what)

    def in_owner_process(self) -> bool:
        return self._owner is None or self._owner[0] == os.getpid()

    def _check_process(self) -> None:
        if self._owner is not None and self._owner[0] != os.getpid():
            pid, what = self._owner
            raise StoreInUse(
                f"{what}: opened in process {pid}, used in process {os.getpid()} (a fork). "
                "SQLite connections and the in-memory index do not survive a fork: open the "
                "store in each process after it forks (gunicorn: without --preload, or in a "
                "post_fork hook), each process on its own path"
            )

    @contextmanager
    def read(self) -> Iterator[None]:
        self._check_process()
        with self._cond:
            while self._writing or self._writers_waiting:
                self._cond.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                if not self._readers:
                    self._cond.notify_all()

    @contextmanager
    def write(self) -> Iterator[None]:
        self._check_process()
        with self._cond:
            self._writers_waiting += 1
            while self._writing or self._readers:
                self._cond.wait()
            self._writers_waiting -= 1
            self._writing = True
        try:
            yield
        finally:
            with self._cond:
                self._writing = False
                self._cond.notify_all()


# --- encoding for SQLite -------------------------------------------------------------


def request_json(request: Request) -> str:
    return json.dumps(
        {
            "query": request.query,
            "context": [dict(t) for t in request.context] if request.context is not None else None,
            "system_prompt": request.system_prompt,
            "tools": [dict(t) for t in request.tools] if request.tools is not None else None,
        },
        ensure_ascii=False,
    )


def request_from_json(text: str) -> Request:
    d = json.loads(text)
    return Request(
        query=d["query"],
        context=tuple(d["context"]) if d["context"] is not None else None,
        system_prompt=d["system_prompt"],
        tools=tuple(d["tools"]) if d["tools"] is not None else None,
    )


def tokens_blob(tokens: WordPieces | None) -> bytes | None:
    """Word pieces as bytes: n, dim (uint32), ids (int32), wordlike (uint8), vectors (float32)."""
    import numpy as np

    if tokens is None:
        return None
    vecs = np.ascontiguousarray(tokens.vectors, dtype=np.float32)
    n = len(tokens.ids)
    dim = vecs.shape[1] if vecs.ndim == 2 else 0
    return b"".join(
        [
            np.array([n, dim], dtype="<u4").tobytes(),
            np.asarray(tokens.ids, dtype="<i4").tobytes(),
            np.asarray(tokens.wordlike, dtype=np.uint8).tobytes(),
            vecs.astype("<f4").tobytes(),
        ]
    )


def tokens_from_blob(blob: bytes | None) -> WordPieces | None:
    import numpy as np

    from adapters.embedders import WordPieces

    if blob is None:
        return None
    n, dim = (int(x) for x in np.frombuffer(blob, dtype="<u4", count=2))
    at = 8
    ids = np.frombuffer(blob, dtype="<i4", count=n, offset=at)
    at += 4 * n
    wordlike = np.frombuffer(blob, dtype=np.uint8, count=n, offset=at)
    at += n
    vecs = np.frombuffer(blob, dtype="<f4", count=n * dim, offset=at).reshape(n, dim)
    return WordPieces(
        tuple(int(i) for i in ids), tuple(bool(w) for w in wordlike), vecs.astype(np.float32)
    )


_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS entries (
    id INTEGER PRIMARY KEY,
    scope TEXT NOT NULL,
    key_digest INTEGER NOT NULL,
    exact_key TEXT NOT NULL,
    request TEXT NOT NULL,
    answer TEXT NOT NULL,
    vector BLOB NOT NULL,
    tokens BLOB,
    created REAL NOT NULL,
    used REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS entries_created ON entries (created);
"""
_COLUMNS = "id, scope, exact_key, request, answer, vector, tokens, created"


def _lock_store(path: Path) -> IO[bytes] | None:
    """An exclusive lock on ``<path>.lock``, held while the returned file is open
    (the operating system drops it when the process dies, ``kill -9`` included).

    A store keeps its index and exact map in memory: a second store on the same
    file would serve entries the first has evicted and reuse its entry ids.
    Raises :class:`StoreInUse` naming the holder's pid. None where there is no
    ``fcntl`` (not POSIX): no lock."""
    try:
        import fcntl
    except ImportError:
        return None
    f = open(path.with_name(path.name + ".lock"), "a+b")  # noqa: SIM115 (held open)
    for attempt in (1, 2):
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if attempt == 1:  # a store of this process that nothing refers to any more
                gc.collect()
                continue
            f.seek(0)
            holder = f.read().decode("utf-8", "replace").strip() or "a process"
            f.close()
            raise StoreInUse(
                f"{path}: already open in another verified-cache store ({holder}). A store "
                "owns its file: share one VerifiedCache between threads (it is thread-"
                "safe), close the other one first, or give each process its own path"
            ) from None
    f.seek(0)
    f.truncate()
    f.write(f"pid {os.getpid()}".encode())
    f.flush()
    return f


class _Sqlite:
    """The SQLite side of a path store: one writer connection (used under the
    store's write lock) and one read connection per reading thread; the file
    is locked against any other store while this one is open."""

    def __init__(self, path: Path, *, durable: bool = False) -> None:
        self.path = path
        self.synchronous = "FULL" if durable else "NORMAL"
        path.parent.mkdir(parents=True, exist_ok=True)
        self._probe()  # a path that is not a store is refused before anything is written
        self._lock_file = _lock_store(path)
        try:
            self._open()
        except BaseException:  # refused (another format, a read-only file): let it go
            writer = getattr(self, "writer", None)
            if writer is not None:
                writer.close()
            self._unlock()
            raise

    def _unlock(self) -> None:
        if self._lock_file is not None:
            self._lock_file.close()  # drops the lock
            self._lock_file = None

    def _named(self, e: sqlite3.DatabaseError) -> sqlite3.DatabaseError:
        """SQLite's error, naming the path and what to give instead."""
        return type(e)(f"{self.path}: {e} (give a new path or a store this cache wrote)")

    def _probe(self) -> None:
        """Refuse a file that is not a store, looking before any PRAGMA or table
        touches it."""
        path = self.path
        try:
            probe = sqlite3.connect(path)
            try:
                query = "SELECT name FROM sqlite_master WHERE type = 'table'"
                tables = {name for (name,) in probe.execute(query)}
            finally:
                probe.close()
        except sqlite3.DatabaseError as e:  # a directory, a text file, a locked file
            raise self._named(e) from e
        if tables and "meta" not in tables:  # never add tables to someone else's database
            raise ValueError(
                f"{path}: a SQLite database of something else (tables: "
                f"{', '.join(sorted(tables))}), not a verified-cache store"
            )

    def _open(self) -> None:
        path = self.path
        try:
            self.writer = self._connect()
        except sqlite3.DatabaseError as e:
            raise self._named(e) from e
        self.writer.executescript(_SCHEMA)
        row = self.writer.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()
        if row is None:
            with self.writer:
                self.writer.execute("INSERT INTO meta VALUES ('format', ?)", (str(STORE_FORMAT),))
        elif int(row[0]) != STORE_FORMAT:
            raise ValueError(f"{path}: store format {row[0]}, this code reads {STORE_FORMAT}")
        with self.writer:  # names this database: an index saved beside another is not its own
            self.writer.execute(
                "INSERT OR IGNORE INTO meta VALUES ('uuid', ?)", (uuid.uuid4().hex,)
            )
        self.uuid = self.writer.execute("SELECT value FROM meta WHERE key = 'uuid'").fetchone()[0]
        self._local = threading.local()
        self._readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()

    def _connect(self) -> sqlite3.Connection:
        con = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        con.execute("PRAGMA journal_mode=WAL")
        con.execute(f"PRAGMA synchronous={self.synchronous}")
        con.execute("PRAGMA busy_timeout=10000")
        return con

    def reader(self) -> sqlite3.Connection:
        con: sqlite3.Connection | None = getattr(self._local, "con", None)
        if con is None:
            con = self._connect()
            self._local.con = con
            with self._readers_lock:
                self._readers.append(con)
        return con

    def close(self) -> None:
        with self._readers_lock:
            for con in self._readers:
                con.close()
            self._readers.clear()
        self.writer.close()
        self._unlock()
