"""The verified cache's entry store: exact map, per-scope vector index, LRU and
TTL eviction, a readers-writer lock, and optional SQLite persistence.

An entry is a stored request with its answer, its query vector (float32) and
the query's word pieces (:class:`~adapters.embedders.WordPieces`). In memory:

* an **exact map** from an 8-byte digest of (scope, exact key) to the oldest live
  entry with that key: the exact tier is one dict lookup (the digest is checked
  against the entry's full key before it is served);
* one :class:`~.index.ScopeIndex` per scope (brute force up to
  :data:`~.index.BRUTE_FORCE_MAX` entries, then HNSW over 8-bit vectors;
  :meth:`EntryStore.nearest` with a ``floor`` widens an HNSW search, then scans,
  before it reports nothing at or above the floor);
* the **LRU order** (an ordered dict id -> scope number; a ``get`` that serves
  an entry moves it to the back);
* the entries themselves: all of them without ``path``; with ``path``, only a
  bounded memo of recently read ones (the rest stay in SQLite).

**Persistence** (``path=...``): one SQLite database (WAL, ``synchronous=NORMAL``)
holds every entry: request (JSON), answer, vector, word pieces, created and last-
used times. Each ``add`` is one transaction (the insert, the evictions it causes,
and the last-used times of entries served since the previous one), so a crash
loses at most the entry being added and never leaves a half-written one: SQLite
rolls an unfinished transaction back on the next open (``durable=True``:
``synchronous=FULL``, an fsync per commit, so a power cut loses nothing
committed either).

The HNSW indexes are saved beside the file (``<path>.index/``, faiss's own
format, by ``close()`` or :meth:`EntryStore.save_index`) under the database's
uuid. Opening reads them and brings them up to date from SQLite, the source of
truth: entries added since the save are added, entries deleted since are
tombstoned; an index that is missing, unreadable, from another database or
inconsistent is rebuilt from the stored vectors (as are brute-force scopes,
which are never saved). So a crash costs a longer open, never a wrong entry.
Entry ids are never reused (a high-water mark in the meta table).
``synchronous=NORMAL`` (the default) survives a killed process; after a power
cut the last few committed entries may be lost, never the database. One store
object owns a file (an exclusive lock on ``<path>.lock``): a second, in this
process or another, is refused with :class:`~.entry_db.StoreInUse`, and so is
any use of it in a process forked from its owner.

**Concurrency**: lookups hold the read side of a readers-writer lock and run
side by side (the index searches release the GIL); ``add`` holds the write side,
so writes are serialised and never seen half-done. In path mode each thread
reads through its own SQLite connection. An HNSW graph whose tombstones
outnumber its live entries, or whose traffic drifted out of its 8-bit ranges
(then with new ranges, from the stored vectors), is rebuilt by a background thread
(:class:`~.index.Rebuild`): decoded under the read lock a chunk at a time,
built with no lock, swapped under the write lock; lookups and ``add`` go on
against the old graph meanwhile.

**Eviction**: with ``max_entries``, an ``add`` beyond it evicts the least
recently used entries (served or stored longest ago); with ``ttl_seconds``, an
entry older than that is never returned and is deleted at the next ``add`` (or
:meth:`EntryStore.purge_expired`). ``clock`` (default :func:`time.time`) is
injectable for tests; it must not go backwards.
"""

from __future__ import annotations

import json
import numbers
import sys
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from adapters.embedders import snap_cosines
from cacheeval.schema import Request

from .entry_db import (
    _COLUMNS,
    STORE_FORMAT,
    RWLock,
    _Sqlite,
    key_digest,
    request_from_json,
    request_json,
    tokens_blob,
    tokens_from_blob,
)
from .index import BRUTE_FORCE_MAX, Rebuild, ScopeIndex

if TYPE_CHECKING:
    import numpy as np

    from adapters.embedders import WordPieces

#: Decoded entries kept in memory in path mode (the candidates of recent lookups).
RECORD_MEMO = 4096
#: Extra candidates an HNSW search returns, re-ranked by their exact float32
#: cosines: approximate cosines swap near-ties (members of one paraphrase cluster
#: differ by ~1e-3), so the exact top k must be picked from a few more.
RERANK = 8
#: A gate-aware search that found nothing at or above the floor searches again
#: with this many times the efSearch, then exhaustively (:meth:`EntryStore.nearest`).
ESCALATE_EF = 4
#: The largest HNSW scope a gate-aware lookup scans in full when the wider search
#: found nothing at the floor (:meth:`EntryStore.nearest`). A scan of float16
#: vectors takes ~80 ms per million on one core, so 32,768 entries keep a certain
#: miss within ~3 ms; larger scopes trust the wider search (docs/verified-cache.md,
#: "What a lookup does in the store", for the gate recall this gives up at 1M).
EXHAUSTIVE_MAX = 32_768


@dataclass(frozen=True, slots=True)
class Record:
    """One stored entry, as the store keeps it (the verifier's analysis of the
    request is the cache's business: it is derived from ``request``)."""

    id: int
    scope: str
    exact_key: str
    request: Request
    answer: str
    vector: np.ndarray  # float32, L2-normalised
    tokens: WordPieces | None
    created: float
    #: the caller's analysis of ``request``, kept in memory only (None when read
    #: back from SQLite: the caller derives it again)
    side: Any = None


@dataclass(frozen=True, slots=True)
class NewEntry:
    """What :meth:`EntryStore.add_many` stores for one entry."""

    scope: str
    exact_key: str
    request: Request
    answer: str
    vector: np.ndarray
    tokens: WordPieces | None = None
    side: Any = None


def _record(row: Sequence[Any]) -> Record:
    import numpy as np

    return Record(
        id=row[0],
        scope=row[1],
        exact_key=row[2],
        request=request_from_json(row[3]),
        answer=row[4],
        vector=np.frombuffer(row[5], dtype="<f4").astype(np.float32),
        tokens=tokens_from_blob(row[6]),
        created=row[7],
    )


class EntryStore:
    """Entries of the verified cache (see the module docstring).

    Example::

        store = EntryStore("cache/verified.sqlite", max_entries=100_000)
        rec = store.add("", "what is 2+2", Request("What is 2+2?"), "4", vector)
        store.exact("", "what is 2+2")          # rec
        store.nearest("", vector, 3)            # [(rec, 1.0)]
    """

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        max_entries: int | None = None,
        ttl_seconds: float | None = None,
        clock: Callable[[], float] = time.time,
        brute_force_max: int = BRUTE_FORCE_MAX,
        durable: bool = False,
        index_options: dict[str, Any] | None = None,
        background_rebuild: bool = True,
        exhaustive_max: int | None = EXHAUSTIVE_MAX,
    ) -> None:
        if max_entries is not None and (
            isinstance(max_entries, bool) or not isinstance(max_entries, numbers.Integral)
        ):
            raise TypeError(f"max_entries must be an int or None, got {max_entries!r}")
        if max_entries is not None and max_entries < 1:
            raise ValueError(f"max_entries must be >= 1, got {max_entries}")
        if ttl_seconds is not None and (
            isinstance(ttl_seconds, bool) or not isinstance(ttl_seconds, numbers.Real)
        ):
            raise TypeError(f"ttl_seconds must be a number or None, got {ttl_seconds!r}")
        if ttl_seconds is not None and not ttl_seconds > 0:  # NaN too
            raise ValueError(f"ttl_seconds must be > 0, got {ttl_seconds}")
        self.path = Path(path) if path is not None else None
        self.max_entries = max_entries
        self.ttl_seconds = ttl_seconds
        self.clock = clock
        self.brute_force_max = brute_force_max
        #: HNSW settings passed to every :class:`~.index.ScopeIndex` (``hnsw_m``,
        #: ``ef_construction``, ``ef_search``, ``storage``, ``retrain_on_drift``; see
        #: docs/verified-cache.md for the recall, time and memory they buy at 1M entries)
        self.index_options = dict(index_options or {})
        ScopeIndex(1, **self.index_options)  # bad options fail here, not at the first put
        #: whether HNSW rebuilds run in a background thread (False: inside the
        #: ``add`` that makes one due, as a stall)
        self.background_rebuild = background_rebuild
        #: the largest HNSW scope a gate-aware lookup may scan exhaustively when
        #: the wider search found nothing servable (None: any size; default
        #: :data:`EXHAUSTIVE_MAX`): a bound caps a miss's cost at the wider
        #: search, at the price of gate recall (docs/verified-cache.md)
        self.exhaustive_max = exhaustive_max
        #: how many HNSW lookups stopped at each step of :meth:`nearest`
        self.search_steps: Counter[str] = Counter()
        self._lock = RWLock()
        self._lru_lock = threading.Lock()
        self._memo_lock = threading.Lock()
        self._rebuilds: dict[int, tuple[Rebuild, threading.Thread]] = {}
        #: scopes whose background rebuild raised, and the error: not retried until
        #: the store is opened again (a rebuild that fails once fails the same way)
        self.rebuild_errors: dict[int, BaseException] = {}
        #: called with (phase, scope number) by a background rebuild: tests hold it there
        self._rebuild_hook: Callable[[str, int], None] | None = None
        self._dim_saved = False  # the meta table holds 'dim' (written with the first put)
        self._init_state()
        self._db = _Sqlite(self.path, durable=durable) if self.path is not None else None
        if self._db is not None:
            self._lock.bind_to_process(str(self.path))  # a forked child gets StoreInUse
            self._load()
            with self._lock.write():
                self._start_due_rebuilds()

    def _init_state(self) -> None:
        self._exact: dict[int, int] = {}
        self._lru: OrderedDict[int, int] = OrderedDict()  # id -> scope number
        self._scope_names: list[str] = []
        self._scope_numbers: dict[str, int] = {}
        self._indexes: dict[int, ScopeIndex] = {}
        self._records: OrderedDict[int, Record] = OrderedDict()  # all (memory) or a memo
        self._touched: dict[int, float] = {}
        self._next_id = 1
        self._meta: dict[str, str] = {}
        self.dim: int | None = None

    # -- opening --------------------------------------------------------------------

    def _load(self) -> None:
        """Rebuild the in-memory maps from SQLite (one scan in id order); take the
        HNSW indexes saved beside the file when they belong to it, bringing them up
        to date (entries added since are added, entries deleted since tombstoned),
        and build every other scope's index from the stored vectors."""
        import numpy as np

        assert self._db is not None
        con = self._db.writer
        row = con.execute("SELECT value FROM meta WHERE key = 'dim'").fetchone()
        if row is None:
            return
        self.dim = int(row[0])
        saved = self._saved_indexes()
        vectors: dict[str, tuple[list[int], list[bytes]]] = {}
        live: dict[str, list[int]] = {}
        order: list[tuple[float, int, int]] = []
        cur = con.execute("SELECT id, scope, key_digest, used, vector FROM entries ORDER BY id")
        for entry_id, scope, digest, used, vector in cur:
            number = self._scope_number(scope)
            self._exact.setdefault(digest, entry_id)
            order.append((used, entry_id, number))
            have = saved.get(scope)
            if have is not None:
                live.setdefault(scope, []).append(entry_id)
            if have is None or entry_id > have.last_id:
                ids, vecs = vectors.setdefault(scope, ([], []))
                ids.append(entry_id)
                vecs.append(vector)
        for scope, index in saved.items():
            ids = live.get(scope, [])
            index.keep_only(set(ids))
            new = len(vectors.get(scope, ((), ()))[0])
            if len(index) + new != len(ids):  # not the file's past: build it afresh
                rows = con.execute(
                    "SELECT id, vector FROM entries WHERE scope = ? ORDER BY id", (scope,)
                ).fetchall()
                vectors[scope] = ([r[0] for r in rows], [r[1] for r in rows])
            else:
                self._indexes[self._scope_number(scope)] = index
        for scope, (ids, vecs) in vectors.items():
            matrix = np.frombuffer(b"".join(vecs), dtype="<f4").reshape(len(ids), self.dim)
            index = self._index(self._scope_number(scope))
            index.add(np.asarray(ids, dtype=np.int64), matrix.astype(np.float32))
        order.sort()
        self._lru = OrderedDict((entry_id, number) for _, entry_id, number in order)
        top = con.execute("SELECT MAX(id) FROM entries").fetchone()[0] or 0
        mark = con.execute("SELECT value FROM meta WHERE key = 'next_id'").fetchone()
        self._next_id = max(top + 1, int(mark[0]) if mark else 1)

    @property
    def index_dir(self) -> Path | None:
        """Where the HNSW indexes are saved (beside the SQLite file), or None."""
        return None if self.path is None else self.path.with_name(self.path.name + ".index")

    def _saved_indexes(self) -> dict[str, ScopeIndex]:
        """The saved HNSW indexes of this very database (checked by its uuid), by scope."""
        assert self._db is not None and self.dim is not None
        folder = self.index_dir
        assert folder is not None
        try:
            manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        if (manifest.get("uuid"), manifest.get("format"), manifest.get("dim")) != (
            self._db.uuid,
            STORE_FORMAT,
            self.dim,
        ):
            return {}
        out = {}
        for item in manifest.get("scopes", []):
            try:
                out[item["scope"]] = ScopeIndex.load(
                    folder / item["stem"],
                    self.dim,
                    brute_force_max=self.brute_force_max,
                    **self.index_options,
                )
            except Exception:  # unreadable: that scope is rebuilt from SQLite
                continue
        return out

    def save_index(self) -> int:
        """Write every HNSW index beside the SQLite file (a new folder swapped in
        for the old), so the next open reads it instead of rebuilding; how many
        were written. ``close()`` calls it. Brute-force scopes are not written."""
        import shutil

        with self._lock.write():
            folder = self.index_dir
            if folder is None or self._db is None:
                return 0
            tmp = folder.with_name(folder.name + ".tmp")
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir()
            scopes = []
            for number, index in self._indexes.items():
                stem = f"scope{number}"
                if index.save(tmp / stem):
                    scopes.append({"scope": self._scope_names[number], "stem": stem})
            manifest = {"uuid": self._db.uuid, "format": STORE_FORMAT, "dim": self.dim,
                        "scopes": scopes}  # fmt: skip
            (tmp / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
            shutil.rmtree(folder, ignore_errors=True)
            if scopes:
                tmp.rename(folder)
            else:
                shutil.rmtree(tmp)
            return len(scopes)

    def _scope_number(self, scope: str) -> int:
        number = self._scope_numbers.get(scope)
        if number is None:
            number = len(self._scope_names)
            self._scope_names.append(scope)
            self._scope_numbers[scope] = number
        return number

    def _index(self, number: int) -> ScopeIndex:
        index = self._indexes.get(number)
        if index is None:
            assert self.dim is not None
            index = ScopeIndex(self.dim, brute_force_max=self.brute_force_max, **self.index_options)
            self._indexes[number] = index
        return index

    # -- writing --------------------------------------------------------------------

    def add(
        self,
        scope: str,
        exact_key: str,
        request: Request,
        answer: str,
        vector: np.ndarray,
        tokens: WordPieces | None = None,
        side: Any = None,
    ) -> Record:
        """Store one entry (one transaction), evicting what capacity and TTL require."""
        entry = NewEntry(scope, exact_key, request, answer, vector, tokens, side)
        return self.add_many([entry])[0]

    def add_many(self, entries: Sequence[NewEntry]) -> list[Record]:
        """Store entries in one transaction (a bulk load: the index grows in one batch)."""
        import numpy as np

        if not entries:
            return []
        vectors = np.stack([np.asarray(e.vector, dtype=np.float32).reshape(-1) for e in entries])
        norms = np.linalg.norm(vectors, axis=1)
        if not np.all(np.abs(norms - 1.0) <= 1e-3):
            # cosines are dot products, and the re-ranking bounds hold for unit rows
            bad = int(np.flatnonzero(np.abs(norms - 1.0) > 1e-3)[0])
            raise ValueError(f"vector {bad} has norm {norms[bad]:.4f}: store L2-normalised vectors")
        with self._lock.write():
            if self.dim is None:
                self.dim = vectors.shape[1]
            elif vectors.shape[1] != self.dim:
                raise ValueError(
                    f"vectors have {vectors.shape[1]} dimensions, the store {self.dim}"
                )
            now = self.clock()
            records = [
                Record(self._next_id + i, e.scope, e.exact_key, e.request, e.answer,
                       vectors[i], e.tokens, now, e.side)
                for i, e in enumerate(entries)
            ]  # fmt: skip
            expired = self._expired_ids(now)
            evict = expired + self._over_capacity(len(records), set(expired))
            digests = self._digests(evict)
            if self._db is not None:
                self._write(records, evict, now)
            self._forget(evict, digests)
            self._next_id += len(records)
            by_scope: dict[int, list[int]] = {}
            for i, rec in enumerate(records):
                number = self._scope_number(rec.scope)
                by_scope.setdefault(number, []).append(i)
                self._exact.setdefault(key_digest(rec.scope, rec.exact_key), rec.id)
                self._lru[rec.id] = number
                if self._db is None or len(records) == 1:  # a bulk load is not "recent"
                    self._remember(rec)
            for number, rows in by_scope.items():
                ids = np.array([records[i].id for i in rows], dtype=np.int64)
                index = self._index(number)
                index.add(ids, vectors[rows])
                if index.retrain_due:  # its traffic left the 8-bit ranges behind
                    self._start_due_rebuilds()
            return records

    def _write(self, records: list[Record], evict: list[int], now: float) -> None:
        assert self._db is not None and self.dim is not None
        con = self._db.writer
        with self._lru_lock:
            touched, self._touched = self._touched, {}
        try:
            con.execute("BEGIN IMMEDIATE")
            if not self._dim_saved:
                con.execute("INSERT OR IGNORE INTO meta VALUES ('dim', ?)", (str(self.dim),))
            if evict:
                # ids are never reused, even after the newest entries are deleted
                # (a saved index names entries by id). Without a deletion the
                # largest stored id says it (the store opens at max(that + 1,
                # next_id)): two statements fewer in a plain put
                top = records[-1].id + 1 if records else self._next_id
                con.execute("INSERT OR REPLACE INTO meta VALUES ('next_id', ?)", (str(top),))
            con.executemany(
                "INSERT INTO entries VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                # a generator: each row's blobs are freed once SQLite has copied them
                # (a list of a bulk load's rows fragments the heap, ~1 KB per entry)
                (
                    (r.id, r.scope, key_digest(r.scope, r.exact_key), r.exact_key,
                     request_json(r.request), r.answer, r.vector.astype("<f4").tobytes(),
                     tokens_blob(r.tokens), r.created, now)
                    for r in records
                ),
            )  # fmt: skip
            if evict:
                con.executemany("DELETE FROM entries WHERE id = ?", [(i,) for i in evict])
            if touched:
                con.executemany(
                    "UPDATE entries SET used = ? WHERE id = ?", [(t, i) for i, t in touched.items()]
                )
            con.execute("COMMIT")
            self._dim_saved = True
        except BaseException:
            if con.in_transaction:
                con.execute("ROLLBACK")
            with self._lru_lock:
                self._touched = {**touched, **self._touched}
            raise

    def _expired_ids(self, now: float) -> list[int]:
        if self.ttl_seconds is None:
            return []
        cutoff = now - self.ttl_seconds
        if self._db is not None:
            rows = self._db.writer.execute(
                "SELECT id FROM entries WHERE created <= ? ORDER BY id", (cutoff,)
            ).fetchall()
            return [r[0] for r in rows]
        out = []
        for rec in self._records.values():  # insertion order = created order
            if rec.created > cutoff:
                break
            out.append(rec.id)
        return out

    def _over_capacity(self, adding: int, leaving: set[int]) -> list[int]:
        """The least recently used ids to drop so that ``adding`` more fit, besides
        the ids ``leaving`` anyway."""
        if self.max_entries is None:
            return []
        excess = len(self._lru) - len(leaving) + adding - self.max_entries
        out: list[int] = []
        if excess <= 0:
            return out
        for entry_id in self._lru:
            if len(out) >= excess:
                break
            if entry_id not in leaving:
                out.append(entry_id)
        return out

    def _digests(self, ids: list[int]) -> dict[int, int]:
        """The exact-map digests of ``ids`` (read before they leave SQLite)."""
        out = {}
        missing = []
        for entry_id in ids:
            rec = self._records.get(entry_id)
            if rec is not None:
                out[entry_id] = key_digest(rec.scope, rec.exact_key)
            else:
                missing.append(entry_id)
        if missing:
            assert self._db is not None, "memory mode keeps every record"
            for start in range(0, len(missing), 500):
                chunk = missing[start : start + 500]
                marks = ",".join("?" * len(chunk))
                rows = self._db.writer.execute(
                    f"SELECT id, key_digest FROM entries WHERE id IN ({marks})", chunk
                )
                out.update(dict(rows.fetchall()))
        return out

    def _forget(self, ids: list[int], digests: dict[int, int]) -> None:
        """Drop ``ids`` from memory: index, exact map, LRU, records (already gone from
        SQLite); start the HNSW rebuilds this makes due (caller holds the write lock)."""
        for entry_id in dict.fromkeys(ids):
            number = self._lru.pop(entry_id, None)
            if number is None:
                continue
            self._indexes[number].remove(entry_id)
            with self._memo_lock:
                self._records.pop(entry_id, None)
            digest = digests.get(entry_id)
            if digest is not None and self._exact.get(digest) == entry_id:
                del self._exact[digest]
            self._touched.pop(entry_id, None)
        if ids:
            self._start_due_rebuilds()

    # -- rebuilding HNSW graphs beside the lock -------------------------------------------

    def _start_due_rebuilds(self) -> None:
        """Start a rebuild for every HNSW scope whose tombstones outnumber its live
        entries, or whose traffic drifted out of its 8-bit ranges (new ranges,
        from the stored vectors; caller holds the write lock): in a background
        thread, or at once when ``background_rebuild`` is off."""
        for number, index in self._indexes.items():
            retrain = index.retrain_due
            if not (retrain or index.rebuild_due) or number in self.rebuild_errors:
                continue
            originals = self._vectors if retrain else None
            if not self.background_rebuild:
                index.rebuild_now(originals)
                continue
            job = index.begin_rebuild(originals)
            thread = threading.Thread(
                target=self._rebuild, args=(number, index, job), daemon=True,
                name=f"verified-store-rebuild-{number}",
            )  # fmt: skip
            self._rebuilds[number] = (job, thread)
            thread.start()

    def _rebuild(self, number: int, index: ScopeIndex, job: Rebuild) -> None:
        """A background rebuild (see :class:`~.index.Rebuild`): decode and catch up
        under the read lock a chunk at a time, build with no lock, swap under the
        write lock. Lookups and puts go on meanwhile against the old graph."""
        hook = self._rebuild_hook
        try:
            if hook is not None:
                hook("snapshot", number)
            more = True
            while more and not job.cancelled:
                with self._lock.read():
                    more = job.decode_step()
            job.build()
            if hook is not None:
                hook("built", number)
            for _ in range(8):  # catch up outside the write lock while puts keep coming
                with self._lock.read():
                    if job.cancelled:
                        break
                    fresh = job.take_new()
                job.add(fresh)
                if len(fresh) < 256:
                    break
            with self._lock.write():
                if self._indexes.get(number) is index and job.finish():
                    # removals during the rebuild may already call for the next one
                    del self._rebuilds[number]
                    self._start_due_rebuilds()
        except Exception as exc:  # the old graph keeps serving, with its tombstones
            with self._lock.write():
                self.rebuild_errors[number] = exc
            print(
                f"verified store: rebuilding scope {number} failed ({exc!r}); the old "
                "graph keeps serving, no retry until the store is reopened",
                file=sys.stderr,
            )
        finally:
            with self._lock.write():
                if index.rebuilding is job:
                    job.cancel()
                if self._rebuilds.get(number, (None,))[0] is job:
                    del self._rebuilds[number]

    def wait_for_rebuilds(self, timeout: float | None = None) -> bool:
        """Wait for the background rebuilds under way; False if one still runs."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            with self._lock.read():
                threads = [t for _, t in self._rebuilds.values()]
            if not threads:
                return True
            for t in threads:
                t.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
                if t.is_alive():
                    return False

    def _cancel_rebuilds(self) -> None:
        """Stop the background rebuilds (caller holds no lock) and wait for them."""
        with self._lock.write():
            jobs = list(self._rebuilds.values())
            for job, _ in jobs:
                job.cancel()
        for _, thread in jobs:
            thread.join()

    def _remember(self, rec: Record) -> None:
        with self._memo_lock:
            self._records[rec.id] = rec
            if self._db is not None:
                while len(self._records) > RECORD_MEMO:
                    self._records.popitem(last=False)

    def claim(self, key: str, value: str) -> None:
        """Record ``value`` under ``key`` in a path store's meta table the first time;
        raise ValueError when the store already holds another value (e.g. vectors of
        another embedder). Memory stores remember it for their lifetime."""
        with self._lock.write():
            if self._db is None:
                held = self._meta.setdefault(key, value)
            else:
                con = self._db.writer
                with con:
                    con.execute("INSERT OR IGNORE INTO meta VALUES (?, ?)", (key, value))
                row = con.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
                held = row[0]
            if held != value:
                where = self.path if self.path is not None else "this store"
                raise ValueError(f"{where}: {key} is {held!r}, not {value!r}")

    def purge_expired(self) -> int:
        """Delete the entries older than ``ttl_seconds`` now; how many went."""
        with self._lock.write():
            evict = self._expired_ids(self.clock())
            digests = self._digests(evict)
            if evict and self._db is not None:
                self._write([], evict, self.clock())
            self._forget(evict, digests)
            return len(evict)

    def clear(self) -> None:
        """Delete every entry (in SQLite and the saved index too)."""
        import shutil

        self._cancel_rebuilds()
        with self._lock.write():
            if self._db is not None:
                with self._db.writer as con:
                    con.execute("DELETE FROM entries")
                    con.execute(
                        "INSERT OR REPLACE INTO meta VALUES ('next_id', ?)", (str(self._next_id),)
                    )
            if self.index_dir is not None:
                shutil.rmtree(self.index_dir, ignore_errors=True)
            dim, next_id = self.dim, self._next_id
            self._init_state()
            self.dim, self._next_id = dim, next_id  # ids are never reused

    def close(self) -> None:
        """Save the HNSW indexes, write the pending last-used times and close
        SQLite (path mode; a no-op in memory and when already closed)."""
        if self._db is None:
            return
        if not self._lock.in_owner_process():  # a forked child: the file is its parent's
            self._db = None
            return
        self._cancel_rebuilds()
        self.save_index()
        with self._lock.write():
            if self._db is None:
                return
            if self._touched:
                self._write([], [], self.clock())
            self._db.close()
            self._db = None

    # -- reading --------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._lru)

    def scope_size(self, scope: str) -> int:
        """Live entries stored under ``scope`` (expired ones not yet purged included)."""
        with self._lock.read():
            number = self._scope_numbers.get(scope)
            index = self._indexes.get(number) if number is not None else None
            return len(index) if index is not None else 0

    def other_scope(self, scope: str) -> str | None:
        """Some scope other than ``scope`` that holds entries, or None."""
        with self._lock.read():
            for number, index in self._indexes.items():
                if len(index) and self._scope_names[number] != scope:
                    return self._scope_names[number]
            return None

    def exact(self, scope: str, exact_key: str) -> Record | None:
        """The oldest live entry stored for this very request, or None."""
        with self._lock.read():
            entry_id = self._exact.get(key_digest(scope, exact_key))
            if entry_id is None:
                return None
            rec = self._fetch([entry_id])[0]
        if rec.scope != scope or rec.exact_key != exact_key or self._expired(rec):
            return None
        return rec

    def nearest(
        self, scope: str, vector: np.ndarray, k: int, *, floor: float | None = None
    ) -> list[tuple[Record, float]]:
        """The (at most) ``k`` live entries of ``scope`` with the highest cosine to
        ``vector``, best first (ties: oldest first), with those cosines.

        A brute-force scope gives its own matrix-vector products. An HNSW scope is
        asked for :data:`RERANK` more candidates than ``k`` by its approximate cosines;
        their exact float32 cosines (from the stored vectors, read alone) pick and
        order the ``k``, whose whole records are then read.

        ``floor``: the lowest cosine a caller can use (the cache's recall gate).
        When an HNSW search finds no candidate at or above it, the search is
        repeated wider (efSearch x :data:`ESCALATE_EF`), then over every vector
        (``ScopeIndex.search_bounded(..., exhaustive=True)``; only in scopes of at most
        :attr:`exhaustive_max` entries), before "nothing above the floor" is
        believed: a miss costs more, a hit nothing more."""
        with self._lock.read():
            number = self._scope_numbers.get(scope)
            index = self._indexes.get(number) if number is not None else None
            if index is None or not len(index) or k <= 0:
                return []
            if not index.approximate:
                ids, sims = index.search(vector, k)
                records = self._fetch(ids.tolist())
                return [(r, float(s)) for r, s in zip(records, sims, strict=True)
                        if not self._expired(r)]  # fmt: skip
            steps: list[tuple[str, int | None]] = [("graph", None)]
            if floor is not None:
                steps.append(("wider", index.ef_search * ESCALATE_EF))
                if self.exhaustive_max is None or len(index) <= self.exhaustive_max:
                    steps.append(("exhaustive", 0))
            used = "graph"
            for name, ef in steps:
                used, out = name, self._live_nearest(index, vector, k, ef)
                # an expired candidate never counts as servable: it is dropped
                # before the floor is asked, so it cannot stop the widening
                if floor is None or any(c >= floor for _, c in out):
                    break
            with self._lru_lock:
                self.search_steps[used] += 1
            return out

    def _live_nearest(
        self, index: ScopeIndex, vector: np.ndarray, k: int, ef: int | None
    ) -> list[tuple[Record, float]]:
        """One search step of :meth:`nearest` in an HNSW scope: the ``k`` best
        unexpired candidates by exact cosine (ties: oldest first), with them.

        The index returns ``k +`` :data:`RERANK` candidates with approximate
        cosines, each within its bound of its exact one (:data:`~.index.FP16_COSINE_ERROR`
        for float16; an 8-bit entry's own measured error); a candidate whose
        upper bound is below the ``k``-th highest lower bound has ``k`` candidates
        exactly above it, so it is never read (without a TTL: an expired entry
        would give its place to the next). The answer is that of re-ranking all."""
        import numpy as np

        ids, approx, errors = index.search_bounded(vector, k + RERANK, ef=ef, exhaustive=ef == 0)
        if not len(ids):
            return []
        q = np.asarray(vector, np.float32)
        # the product of as many rows as candidates, pruned ones left zero: a BLAS
        # matrix-vector product's last bits depend on its shape
        matrix = np.zeros((len(ids), len(q)), dtype=np.float32)
        if self.ttl_seconds is None and len(ids) > k:
            error = errors * max(1.0, float(np.linalg.norm(q)))
            lower = approx - error
            kth_lower = np.partition(lower, len(lower) - k)[len(lower) - k]
            rows = np.flatnonzero(approx + error >= kth_lower)
            records = self._fetch(ids[rows].tolist())
            matrix[rows] = np.stack([r.vector for r in records])
            exact = snap_cosines(matrix @ q)[rows]  # identical vectors tie at 1.0
            order = sorted(range(len(rows)), key=lambda j: (-float(exact[j]), records[j].id))
            return [(records[j], float(exact[j])) for j in order[:k]]
        vectors = self._vectors(ids.tolist())
        matrix[:] = np.stack([vectors[i] for i in ids.tolist()])
        cos = dict(zip(ids.tolist(), snap_cosines(matrix @ q).tolist(), strict=True))
        best = sorted(cos, key=lambda i: (-cos[i], i))
        out: list[tuple[Record, float]] = []
        while best and len(out) < k:  # expired ones give their place to the next
            take, best = best[: k - len(out)], best[k - len(out) :]
            out += [(r, cos[r.id]) for r in self._fetch(take) if not self._expired(r)]
        return out

    def _vectors(self, ids: list[int]) -> dict[int, np.ndarray]:
        """The float32 vectors of ``ids`` (from the memo, else SQLite's vector column);
        ids the store no longer has are left out. Safe without the store's lock
        (a retraining rebuild reads so): the memo has its own, and each thread
        reads SQLite through its own connection."""
        import numpy as np

        with self._memo_lock:
            out = {i: self._records[i].vector for i in ids if i in self._records}
        if self._db is None:  # memory mode keeps every live record
            return out
        rows = self._read_rows("id, vector", [i for i in ids if i not in out])
        out.update((i, np.frombuffer(v, dtype="<f4")) for i, v in rows)
        return out

    def _read_rows(self, columns: str, ids: list[int]) -> list[tuple[Any, ...]]:
        """``columns`` of the entries ``ids`` from SQLite (none asked: no query);
        only path mode reads here, memory mode keeps every record."""
        if not ids:
            return []
        assert self._db is not None, "memory mode keeps every record"
        con = self._db.reader()
        out: list[tuple[Any, ...]] = []
        # a lookup asks for a few; a retraining rebuild for thousands at a time,
        # beyond what SQLite binds in one statement (32,766 since 3.32, 999 before)
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            out += con.execute(f"SELECT {columns} FROM entries WHERE id IN ({marks})", chunk)
        return out

    def touch(self, entry_id: int) -> None:
        """Mark an entry as just served (LRU order; stored at the next write)."""
        # the read side keeps writers (which walk the LRU order) out; the small
        # lock orders the readers among themselves
        with self._lock.read(), self._lru_lock:
            if entry_id in self._lru:
                self._lru.move_to_end(entry_id)
                if self._db is not None:
                    self._touched[entry_id] = self.clock()

    def _expired(self, rec: Record) -> bool:
        return self.ttl_seconds is not None and rec.created <= self.clock() - self.ttl_seconds

    def _fetch(self, ids: list[int]) -> list[Record]:
        """Records by id, in the order asked (the caller holds the read or write lock)."""
        with self._memo_lock:
            found = {i: self._records[i] for i in ids if i in self._records}
            if self._db is not None:  # a memo: keep the recently read (memory mode keeps
                for i in found:  # insertion order, which TTL purging relies on)
                    self._records.move_to_end(i)
        for row in self._read_rows(_COLUMNS, [i for i in ids if i not in found]):
            rec = _record(row)
            found[rec.id] = rec
            self._remember(rec)
        return [found[i] for i in ids]

    def records(self) -> Iterator[Record]:
        """Every live entry, oldest id first (for tests and exports; reads all)."""
        with self._lock.read():
            ids = sorted(self._lru)
        for start in range(0, len(ids), 500):
            with self._lock.read():
                chunk = self._fetch([i for i in ids[start : start + 500] if i in self._lru])
            yield from chunk
