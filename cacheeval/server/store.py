"""The leaderboard's SQLite store (WAL mode): submitters with hashed tokens and
submissions with the exact bytes uploaded, their sha256 and their scores.

Tables (``PRAGMA user_version`` = :data:`SCHEMA_VERSION`; a version-1 store
gains ``idempotency_key`` when opened)::

    submitters(id, name UNIQUE, token_sha256 UNIQUE, created)
    submissions(id, submitter_id -> submitters, name, training_data, created,
                created_at (unix s), body (BLOB, as uploaded), body_sha256,
                body_format (json | jsonl), cache_name, n_predictions,
                labels_sha256 (labels file it was graded with), scores (JSON),
                graded (last grading time), status (graded | invalid),
                status_detail, idempotency_key (UNIQUE per submitter))

Every call opens its own connection (``timeout`` waits on locks), so the
store is safe to share between the server's worker threads. The rate limit
is checked inside the ``BEGIN IMMEDIATE`` transaction that inserts, so two
concurrent uploads by one submitter cannot both take the last slot; the same
transaction finds an earlier submission with the upload's idempotency key, so
a retried upload is stored once and costs one slot. A new database file is
created 0600 (SQLite gives its -wal and -shm files the same mode).
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..support.jsonio import dumps
from .ratelimit import Decision, RateLimit
from .tokens import hash_token, is_well_formed, new_token

SCHEMA_VERSION = 2
BUSY_TIMEOUT_S = 30.0
GRADED = "graded"
INVALID = "invalid"
MAX_SUBMITTER_NAME = 100

_SCHEMA = """
CREATE TABLE IF NOT EXISTS submitters (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    token_sha256 TEXT NOT NULL UNIQUE,
    created TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS submissions (
    id INTEGER PRIMARY KEY,
    submitter_id INTEGER NOT NULL REFERENCES submitters(id),
    name TEXT NOT NULL,
    training_data TEXT NOT NULL,
    created TEXT NOT NULL,
    created_at REAL NOT NULL,
    body BLOB NOT NULL,
    body_sha256 TEXT NOT NULL,
    body_format TEXT NOT NULL,
    cache_name TEXT,
    n_predictions INTEGER NOT NULL,
    labels_sha256 TEXT NOT NULL,
    scores TEXT NOT NULL,
    graded TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'graded',
    status_detail TEXT,
    idempotency_key TEXT
);
CREATE INDEX IF NOT EXISTS submissions_by_submitter ON submissions(submitter_id, created_at);
"""
_KEY_INDEX = (
    "CREATE UNIQUE INDEX IF NOT EXISTS submissions_by_key "
    "ON submissions(submitter_id, idempotency_key) WHERE idempotency_key IS NOT NULL"
)

_SUBMISSION_COLUMNS = (
    "s.id, s.submitter_id, u.name, s.name, s.training_data, s.created, s.created_at, "
    "s.body_sha256, s.body_format, s.cache_name, s.n_predictions, s.labels_sha256, "
    "s.scores, s.graded, s.status, s.status_detail"
)


class StoreError(ValueError):
    """A request the store refuses (unknown file, duplicate submitter, ...)."""


class RateLimited(Exception):
    """The submitter's window is full; ``decision.retry_after_s`` says when to retry."""

    def __init__(self, decision: Decision) -> None:
        self.decision = decision
        super().__init__(f"rate limit reached, retry after {decision.retry_after_s} s")


@dataclass(frozen=True, slots=True)
class Submitter:
    """A token holder."""

    id: int
    name: str
    created: str


@dataclass(frozen=True, slots=True)
class NewSubmission:
    """A graded upload about to be stored."""

    submitter_id: int
    name: str
    training_data: str
    created: str
    created_at: float
    body: bytes
    body_sha256: str
    body_format: str
    cache_name: str | None
    n_predictions: int
    labels_sha256: str
    scores: dict[str, Any]
    idempotency_key: str | None = None


@dataclass(frozen=True, slots=True)
class Submission:
    """A stored submission without its body (see :meth:`Store.body`)."""

    id: int
    submitter_id: int
    submitter: str
    name: str
    training_data: str
    created: str
    created_at: float
    body_sha256: str
    body_format: str
    cache_name: str | None
    n_predictions: int
    labels_sha256: str
    scores: dict[str, Any]
    graded: str
    status: str
    status_detail: str | None


class Store:
    """The SQLite database at ``path`` (created with its schema on first open)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        if self.path.is_dir():
            raise StoreError(f"{self.path}: is a directory, not a database file")
        if not self.path.parent.is_dir():
            raise StoreError(f"{self.path}: directory {self.path.parent} does not exist")
        _create_private(self.path)
        try:
            with self._connect() as conn:
                mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
                if str(mode).lower() != "wal":
                    raise StoreError(f"{self.path}: cannot switch to WAL mode (got {mode})")
                version = conn.execute("PRAGMA user_version").fetchone()[0]
                if version not in (0, 1, SCHEMA_VERSION):
                    raise StoreError(
                        f"{self.path}: store schema version {version}, this server "
                        f"understands {SCHEMA_VERSION}"
                    )
                conn.executescript(_SCHEMA)
                if version == 1:
                    conn.execute("ALTER TABLE submissions ADD COLUMN idempotency_key TEXT")
                conn.execute(_KEY_INDEX)
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        except sqlite3.DatabaseError as e:
            raise StoreError(f"{self.path}: not a usable SQLite database ({e})") from None

    # -- connections ----------------------------------------------------------------

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        # isolation_level=None: transactions are opened explicitly where needed.
        conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        try:
            conn.execute("PRAGMA foreign_keys = ON")
            yield conn
        finally:
            conn.close()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """A connection inside ``BEGIN IMMEDIATE`` (the write lock taken up front),
        committed on success and rolled back on any exception."""
        with self._connect() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    # -- submitters -------------------------------------------------------------------

    def add_submitter(self, name: str, created: str) -> str:
        """Create a submitter and return its token (the only time it is seen)."""
        name = name.strip()
        if not name or len(name) > MAX_SUBMITTER_NAME or not name.isprintable():
            raise StoreError(
                f"submitter name must be 1-{MAX_SUBMITTER_NAME} printable characters, got {name!r}"
            )
        token = new_token()
        with self._write() as conn:
            if conn.execute("SELECT 1 FROM submitters WHERE name = ?", (name,)).fetchone():
                raise StoreError(f"a submitter named {name!r} already exists")
            conn.execute(
                "INSERT INTO submitters (name, token_sha256, created) VALUES (?, ?, ?)",
                (name, hash_token(token), created),
            )
        return token

    def submitter_by_token(self, token: str) -> Submitter | None:
        """The submitter holding ``token``, or None."""
        if not is_well_formed(token):
            return None
        with self._connect() as conn:
            row = conn.execute(
                "SELECT id, name, created FROM submitters WHERE token_sha256 = ?",
                (hash_token(token),),
            ).fetchone()
        return Submitter(*row) if row else None

    def submitters(self) -> list[Submitter]:
        """Every submitter, by id."""
        with self._connect() as conn:
            rows = conn.execute("SELECT id, name, created FROM submitters ORDER BY id").fetchall()
        return [Submitter(*r) for r in rows]

    # -- submissions ------------------------------------------------------------------

    def _times(self, conn: sqlite3.Connection, submitter_id: int, since: float) -> list[float]:
        rows = conn.execute(
            "SELECT created_at FROM submissions WHERE submitter_id = ? AND created_at > ?",
            (submitter_id, since),
        ).fetchall()
        return [float(r[0]) for r in rows]

    def rate_decision(self, submitter_id: int, limit: RateLimit, now: float) -> Decision:
        """The rate-limit decision for one more submission at ``now`` (advisory:
        :meth:`insert_submission` decides again under the write lock)."""
        with self._connect() as conn:
            return limit.decide(self._times(conn, submitter_id, limit.since(now)), now)

    def submission_by_key(self, submitter_id: int, key: str) -> Submission | None:
        """The submitter's submission stored under idempotency ``key``, or None."""
        with self._connect() as conn:
            row = conn.execute(
                f"SELECT {_SUBMISSION_COLUMNS} FROM submissions s "
                "JOIN submitters u ON u.id = s.submitter_id "
                "WHERE s.submitter_id = ? AND s.idempotency_key = ?",
                (submitter_id, key),
            ).fetchone()
        return _submission(row) if row else None

    def insert_submission(self, new: NewSubmission, limit: RateLimit) -> tuple[int, Decision, bool]:
        """Store ``new`` unless the submitter's window is full at ``new.created_at``
        (then :class:`RateLimited`, nothing written). Returns (id, decision,
        stored): when ``new.idempotency_key`` already names a submission of this
        submitter, that id comes back with ``stored`` False and nothing is
        written or counted."""
        with self._write() as conn:
            if new.idempotency_key is not None:
                row = conn.execute(
                    "SELECT id FROM submissions WHERE submitter_id = ? AND idempotency_key = ?",
                    (new.submitter_id, new.idempotency_key),
                ).fetchone()
                if row is not None:
                    times = self._times(conn, new.submitter_id, limit.since(new.created_at))
                    return int(row[0]), limit.decide(times, new.created_at), False
            decision = limit.decide(
                self._times(conn, new.submitter_id, limit.since(new.created_at)), new.created_at
            )
            if not decision.allowed:
                raise RateLimited(decision)
            cur = conn.execute(
                "INSERT INTO submissions (submitter_id, name, training_data, created, "
                "created_at, body, body_sha256, body_format, cache_name, n_predictions, "
                "labels_sha256, scores, graded, status, idempotency_key) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    new.submitter_id,
                    new.name,
                    new.training_data,
                    new.created,
                    new.created_at,
                    new.body,
                    new.body_sha256,
                    new.body_format,
                    new.cache_name,
                    new.n_predictions,
                    new.labels_sha256,
                    dumps(new.scores),
                    new.created,
                    GRADED,
                    new.idempotency_key,
                ),
            )
            sid = cur.lastrowid
        assert sid is not None
        return sid, decision, True

    def submission(self, sid: int) -> Submission | None:
        """One submission (without its body), or None."""
        with self._connect() as conn:
            row = conn.execute(
                f"SELECT {_SUBMISSION_COLUMNS} FROM submissions s "
                "JOIN submitters u ON u.id = s.submitter_id WHERE s.id = ?",
                (sid,),
            ).fetchone()
        return _submission(row) if row else None

    def submissions(self) -> list[Submission]:
        """Every submission (without bodies), by id."""
        with self._connect() as conn:
            rows = conn.execute(
                f"SELECT {_SUBMISSION_COLUMNS} FROM submissions s "
                "JOIN submitters u ON u.id = s.submitter_id ORDER BY s.id"
            ).fetchall()
        return [_submission(r) for r in rows]

    def body(self, sid: int) -> bytes | None:
        """The exact bytes uploaded for submission ``sid``."""
        with self._connect() as conn:
            row = conn.execute("SELECT body FROM submissions WHERE id = ?", (sid,)).fetchone()
        return bytes(row[0]) if row else None

    def update_grade(
        self,
        sid: int,
        *,
        scores: dict[str, Any],
        labels_sha256: str,
        graded: str,
        status: str,
        status_detail: str | None,
    ) -> None:
        """Replace a submission's scores after a regrade."""
        with self._write() as conn:
            conn.execute(
                "UPDATE submissions SET scores = ?, labels_sha256 = ?, graded = ?, status = ?, "
                "status_detail = ? WHERE id = ?",
                (dumps(scores), labels_sha256, graded, status, status_detail, sid),
            )


def _create_private(path: Path) -> None:
    """Create ``path`` empty with mode 0600 unless it exists (SQLite then opens it)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    except OSError as e:
        raise StoreError(f"{path}: cannot create the database ({e.strerror})") from None
    os.close(fd)


def _submission(row: tuple[Any, ...]) -> Submission:
    values = list(row)
    values[12] = json.loads(values[12])  # scores
    return Submission(*values)
