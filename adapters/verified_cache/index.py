"""Nearest-neighbour search over the query vectors of one scope.

A :class:`ScopeIndex` answers "which ``k`` stored entries have the highest
cosine with this vector" for one scope of the verified cache. It has two
regimes:

* **exact** (up to ``brute_force_max`` live entries): the vectors sit in one
  contiguous matrix in the dtype they were embedded in; a lookup is one
  matrix-vector product and :func:`numpy.argpartition`. Ties are broken by
  insertion order, so results are the very ones the earlier list-and-sort
  store gave (same products, same order).
* **approximate** (beyond it): a faiss HNSW graph over 8-bit vectors (or
  float16 ones with ``storage="fp16"``; ``IndexHNSWSQ``, inner product; see
  :data:`STORAGES`), grown one ``add`` at a time, never rebuilt
  on a lookup; every few hundred inserts, the new nodes' links and those of
  a cursor's next nodes are checked, and the nodes an insert misplaced are
  re-linked (:meth:`ScopeIndex.check_links`, :mod:`.graph_repair`). Its
  cosines are approximate: the store recomputes the exact cosines of the
  candidates it returns (:meth:`EntryStore.nearest`).

Removal: HNSW cannot delete a node. A removed entry is a tombstone, cleared
in a bitmap of live slots that the search filters on (faiss ``IDSelectorBitmap``);
once tombstones outnumber live entries (:attr:`ScopeIndex.rebuild_due`) the graph
is rebuilt from the live vectors, decoded from the index itself. The rebuild
runs beside the index, not inside a write (:class:`Rebuild`): it snapshots the
slots, builds a new graph while this one keeps serving (tombstones filtered),
adds the entries stored meanwhile and swaps the new graph in, carrying over the
removals made meanwhile. :meth:`ScopeIndex.rebuild_now` does all of it at once.
An 8-bit graph whose traffic has drifted out of its ranges
(:attr:`ScopeIndex.retrain_due`) is rebuilt the same way from the entries' own
vectors, with new ranges.

Not thread-safe on its own: the store calls ``add``/``remove`` under its write
lock and ``search`` under its read lock (faiss and numpy searches on an index
nobody writes run concurrently); a :class:`Rebuild` says which of its steps
need which lock.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from adapters.embedders import snap_cosines

from .graph_repair import repair_links

if TYPE_CHECKING:
    from collections.abc import Callable

    import numpy as np

    #: Entry ids -> their float32 vectors as stored (ids it no longer has left out).
    Originals = Callable[[list[int]], dict[int, np.ndarray]]

#: Live entries up to which a scope is searched by brute force. Measured on the
#: reference 2-core machine (384-d): a float32 matrix-vector product plus
#: argpartition takes ~0.05 ms at 1k, ~0.2 ms at 5k and ~1.1 ms at 10k rows,
#: HNSW (M=16, efSearch 64, float16) ~0.3 ms at any size: the lines cross near 8k.
BRUTE_FORCE_MAX = 8192
#: HNSW graph degree (links per node on the upper layers, twice that on the base
#: layer: ~280 bytes per entry). Measured on vectors shaped like real request
#: embeddings (docs/verified-cache.md, "Recall"): M 16 stalls below recall 0.99
#: at 100k entries whatever the efSearch; M 32 reaches it.
HNSW_M = 32
EF_CONSTRUCTION = 100
EF_SEARCH = 64
#: A rebuild needs at least this many tombstones (and more tombstones than live
#: entries), so that a small index is never rebuilt over and over.
MIN_TOMBSTONES_FOR_REBUILD = 1024
#: Bound on |float16 cosine - float32 cosine| for unit vectors: each stored
#: coordinate is rounded to float16 (relative error <= 2**-11, so the dot
#: product moves by <= 2**-11 * sum|q_i x_i| <= 2**-11 by Cauchy-Schwarz), plus
#: float32 summation and subnormals (~1e-5); doubled for safety (the largest
#: error measured on 600 lookups over 100k calibrated vectors: 6.2e-5).
FP16_COSINE_ERROR = 1e-3

#: How an HNSW graph stores its vectors (``index_options={"storage": ...}``).
#: "sq8", the default, is faiss's 8-bit scalar quantizer: 1 byte a coordinate,
#: 384 bytes less per 384-d entry than "fp16" (float16, 2 bytes, cosine error
#: below 1e-3). Its per-dimension ranges are trained on the scope's first
#: :data:`SQ8_TRAIN_ROWS` vectors and widened by :data:`SQ8_RANGE_MARGIN` of
#: their span on each side. A coordinate outside its range is clamped, so the
#: error has no fixed bound: every insert measures its own (the norm of the
#: vector minus its decoded self, kept per entry: 4 bytes), and the store's
#: re-ranking bounds each candidate by it (:meth:`ScopeIndex.search_bounded`;
#: at 1M calibrated vectors the median is 0.010, the largest 0.10). Measured
#: at 1M calibrated vectors (docs/verified-cache.md, "8-bit storage"): 380
#: bytes less RAM per entry, the same gate recall, get and put times.
#: A graph first built from fewer than :data:`SQ8_MIN_TRAIN_ROWS` vectors (a
#: scope forced to HNSW early, ``brute_force_max`` below it) stores float16 for
#: its life: ranges drawn from a handful of vectors would clamp most later ones.
STORAGES = ("fp16", "sq8")
SQ8_TRAIN_ROWS = 16_384
SQ8_MIN_TRAIN_ROWS = 256
SQ8_RANGE_MARGIN = 0.1

#: Rows a rebuild decodes or adds at a time (it checks for cancellation between).
REBUILD_CHUNK = 16_384

#: 8-bit ranges are fitted to the traffic a scope saw first; traffic that moves
#: (a new product, a new language) lands outside them. An entry has *drifted*
#: when its encoding error is over DRIFT_FACTOR times the largest error a vector
#: inside the ranges can have (half a step per coordinate: |span| / 510), that is
#: when coordinates of it were clamped. Its bound stays true, but a wide bound
#: costs the store a float32 read at every lookup that meets it, and the graph
#: was linked by its clamped distances. Once RETRAIN_SHARE of a scope's live
#: entries (and at least RETRAIN_MIN) have drifted, :attr:`ScopeIndex.retrain_due`
#: asks for a rebuild that trains new ranges on a seeded sample of the entries'
#: own float32 vectors (:class:`Rebuild` with ``originals``). Measured on MiniLM
#: embeddings of CacheEval's requests (docs/verified-cache.md, "Drift").
DRIFT_FACTOR = 2.0
RETRAIN_SHARE = 0.02
RETRAIN_MIN = 256
RETRAIN_SEED = 0


#: Nodes the link check visits per node inserted (:meth:`ScopeIndex.add`): with
#: 2, every node is checked again each time the graph has grown by half.
SWEEP_RATE = 2
#: The check runs once this many visits are owed (one vectorised pass instead
#: of a few numpy calls on every put: ~0.1 ms a put measured at 100k entries).
SWEEP_BATCH = 256


class ScopeIndex:
    """The vectors of one scope, searchable by cosine (see the module docstring).

    Entry ids must be added in increasing order (the store's ids are).

    >>> import numpy as np
    >>> ix = ScopeIndex(2)
    >>> ix.add(np.array([3, 5]), np.array([[1.0, 0.0], [0.6, 0.8]], dtype=np.float32))
    >>> ids, sims = ix.search(np.array([0.8, 0.6], dtype=np.float32), 2)
    >>> ids.tolist(), [round(float(s), 2) for s in sims]
    ([5, 3], [0.96, 0.8])
    >>> ix.remove(5)
    True
    >>> ix.search(np.array([0.8, 0.6], dtype=np.float32), 2)[0].tolist()
    [3]
    """

    def __init__(
        self,
        dim: int,
        *,
        brute_force_max: int = BRUTE_FORCE_MAX,
        hnsw_m: int = HNSW_M,
        ef_construction: int = EF_CONSTRUCTION,
        ef_search: int = EF_SEARCH,
        storage: str = "sq8",
        retrain_on_drift: bool = True,
    ) -> None:
        import numpy as np

        if storage not in STORAGES:
            raise ValueError(f"storage must be one of {STORAGES}, got {storage!r}")
        self.dim = dim
        self.storage = storage
        self.brute_force_max = brute_force_max
        self.hnsw_m = hnsw_m
        self.ef_construction = ef_construction
        self.ef_search = ef_search
        #: False: 8-bit ranges stay those of the first graph, however traffic moves
        self.retrain_on_drift = retrain_on_drift
        #: rebuilds that trained new 8-bit ranges (since this object was made)
        self.retrains = 0
        self._n = 0  # slots used
        self._live = 0
        self._ids = np.zeros(0, dtype=np.int64)  # slot -> entry id (increasing)
        self._alive = np.zeros(0, dtype=bool)
        # exact regime
        self._matrix: np.ndarray | None = None
        # approximate regime
        self._hnsw: Any = None
        self._bitmap = np.zeros(0, dtype=np.uint8)  # live slots, faiss bit order
        self._selector: Any = None
        self._rebuilding: Rebuild | None = None
        self._sweep_at = 0  # the next slot check_links visits
        self._sweep_owed = 0  # visits due (SWEEP_RATE per insert), made in batches
        self._new_from = 0  # the first slot inserted since the last check
        self._errors = np.zeros(0, dtype=np.float32)  # "sq8": |x - decoded x| per slot
        self._drift_limit = float("inf")  # "sq8": an error above it is a drifted entry
        self._drifted = 0  # live entries whose error is above _drift_limit

    # -- state ----------------------------------------------------------------------

    def __len__(self) -> int:
        return self._live

    @property
    def approximate(self) -> bool:
        """True once the scope has outgrown brute force (its cosines are then approximate)."""
        return self._hnsw is not None

    def _slot_errors(self, slots: np.ndarray) -> np.ndarray:
        """Bounds on |approximate - exact cosine| of a unit query for ``slots``:
        float16's fixed bound, or the entry's own 8-bit error norm
        (Cauchy-Schwarz: |q . (x - x')| <= |x - x'|) with room for float32
        rounding."""
        import numpy as np

        if self.storage == "fp16":
            return np.full(len(slots), FP16_COSINE_ERROR, dtype=np.float64)
        return self._errors[slots].astype(np.float64) * (1 + 1e-3) + 1e-5

    @property
    def tombstones(self) -> int:
        return self._n - self._live

    @property
    def drifted(self) -> int:
        """Live 8-bit entries whose coordinates were clamped by ranges trained on
        other traffic (see :data:`DRIFT_FACTOR`); 0 for float16 and brute force."""
        return self._drifted

    @property
    def retrain_due(self) -> bool:
        """An 8-bit graph with :data:`RETRAIN_SHARE` of its live entries (and at
        least :data:`RETRAIN_MIN`) drifted, and no rebuild under way."""
        return (
            self.retrain_on_drift
            and self._hnsw is not None
            and self.storage == "sq8"
            and self._rebuilding is None
            and self._drifted >= max(RETRAIN_MIN, RETRAIN_SHARE * self._live)
        )

    def _count_drift(self) -> None:
        """The drift limit of the graph's ranges, and its live entries above it."""
        import numpy as np

        if self._hnsw is None or self.storage != "sq8":
            self._drift_limit, self._drifted = float("inf"), 0
            return
        self._drift_limit = drift_limit(self._hnsw)
        live = self._errors[: self._n][self._alive[: self._n]]
        self._drifted = int(np.count_nonzero(live > self._drift_limit))

    def ids(self) -> np.ndarray:
        """The live entry ids, in insertion order."""
        return self._ids[: self._n][self._alive[: self._n]]

    # -- writing --------------------------------------------------------------------

    def add(self, ids: np.ndarray, vectors: np.ndarray) -> None:
        """Append entries (ids increasing, above every id already added)."""
        import numpy as np

        n = len(ids)
        if n == 0:
            return
        if vectors.shape != (n, self.dim):
            raise ValueError(f"expected vectors of shape ({n}, {self.dim}), got {vectors.shape}")
        self._grow(self._n + n)
        self._ids[self._n : self._n + n] = ids
        self._alive[self._n : self._n + n] = True
        if self._hnsw is None and self._live + n > self.brute_force_max:
            self._to_hnsw(extra=vectors)
        elif self._hnsw is None:
            if self._matrix is None:
                self._matrix = np.zeros((len(self._ids), self.dim), dtype=vectors.dtype)
            self._matrix[self._n : self._n + n] = vectors
        else:
            batch = np.ascontiguousarray(vectors, dtype=np.float32)
            self._hnsw.add(batch)
            self._note_errors(self._hnsw, batch, self._n)
            self._set_bits(np.arange(self._n, self._n + n))
        self._n += n
        self._live += n
        if self._hnsw is not None:
            self._sweep_owed += SWEEP_RATE * n
            if self._sweep_owed >= SWEEP_BATCH:
                owed, self._sweep_owed = self._sweep_owed, 0
                self.check_links(owed)

    def check_links(self, count: int) -> int:
        """Check the links of the live nodes among the next ``count`` slots (a
        cursor that goes round the graph) and re-link the misplaced ones
        (:mod:`.graph_repair`); the number re-linked. :meth:`add` runs it for
        :data:`SWEEP_RATE` slots per insert (in batches of :data:`SWEEP_BATCH`),
        so a node linked to the wrong cluster, because its own was sparse when
        it came or the insert lost its way, is found again once the graph has
        grown around it."""
        import numpy as np

        if self._hnsw is None or not self._n or count <= 0:
            return 0
        count = min(count, self._n)
        start = self._sweep_at % self._n
        slots = (start + np.arange(count)) % self._n
        self._sweep_at = (start + count) % self._n
        # and the nodes inserted since the last check: a lost insert into a dense
        # part of the graph is found at once, not when the cursor comes round
        new = np.arange(min(self._new_from, self._n), self._n)
        self._new_from = self._n
        slots = np.union1d(new, slots)
        slots = slots[self._alive[slots]]
        selector = self._selector if self._live < self._n else None
        return repair_links(self._hnsw, slots, selector=selector)

    def remove(self, entry_id: int) -> bool:
        """Drop one entry (a tombstone; see the module docstring). False if absent."""
        import numpy as np

        slot = int(np.searchsorted(self._ids[: self._n], entry_id))
        if slot >= self._n or self._ids[slot] != entry_id or not self._alive[slot]:
            return False
        self._alive[slot] = False
        self._live -= 1
        if self._hnsw is not None:
            self._bitmap[slot >> 3] &= np.uint8(0xFF ^ (1 << (slot & 7)))
            if self.storage == "sq8" and self._errors[slot] > self._drift_limit:
                self._drifted -= 1
        elif self.tombstones > max(self._live, 64):
            self._compact_matrix()
        return True

    def _grow(self, need: int) -> None:
        import numpy as np

        cap = len(self._ids)
        if need <= cap:
            return
        new_cap = max(need, 2 * cap, 64)
        ids = np.zeros(new_cap, dtype=np.int64)
        ids[: self._n] = self._ids[: self._n]
        alive = np.zeros(new_cap, dtype=bool)
        alive[: self._n] = self._alive[: self._n]
        self._ids, self._alive = ids, alive
        if self._hnsw is not None and self.storage == "sq8":  # brute force needs none
            errors = np.zeros(new_cap, dtype=np.float32)
            errors[: self._n] = self._errors[: self._n]
            self._errors = errors
        if self._matrix is not None:
            m = np.zeros((new_cap, self.dim), dtype=self._matrix.dtype)
            m[: self._n] = self._matrix[: self._n]
            self._matrix = m
        if self._hnsw is not None:
            self._new_bitmap(new_cap)

    def _new_bitmap(self, cap: int) -> None:
        import faiss
        import numpy as np

        bitmap = np.zeros((cap + 7) // 8, dtype=np.uint8)
        bitmap[: len(self._bitmap)] = self._bitmap
        # the selector reads the array's buffer: keep that very array alive beside it
        self._bitmap = bitmap
        self._selector = faiss.IDSelectorBitmap(cap, faiss.swig_ptr(bitmap))

    def _set_bits(self, slots: np.ndarray) -> None:
        import numpy as np

        np.bitwise_or.at(self._bitmap, slots >> 3, (1 << (slots & 7)).astype(np.uint8))

    def _new_hnsw(self, like: Any = None) -> Any:
        """An empty graph of this index's settings. ``like``: a graph whose trained
        "sq8" ranges the new one takes (a rebuild: decoded vectors are encoded
        again to the very same codes, so nothing drifts)."""
        import faiss

        sq8 = self.storage == "sq8"
        qtype: Any = faiss.ScalarQuantizer.QT_8bit if sq8 else faiss.ScalarQuantizer.QT_fp16
        index = faiss.IndexHNSWSQ(self.dim, qtype, self.hnsw_m, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = self.ef_construction
        index.hnsw.efSearch = self.ef_search
        if sq8:
            storage: Any = faiss.downcast_index(index.storage)
            storage.sq.rangestat = faiss.ScalarQuantizer.RS_minmax
            storage.sq.rangestat_arg = SQ8_RANGE_MARGIN
            if like is not None:
                old: Any = faiss.downcast_index(like.storage)
                ranges = faiss.vector_to_array(old.sq.trained)
                faiss.copy_array_to_vector(ranges, storage.sq.trained)
                storage.is_trained = index.is_trained = True
        return index

    def _train(self, index: Any, vectors: np.ndarray) -> None:
        """Train a new graph's quantizer on the first rows (float16 needs none)."""
        import numpy as np

        if not index.is_trained or self.storage == "fp16":
            rows = SQ8_TRAIN_ROWS if self.storage == "sq8" else 1024
            index.train(np.ascontiguousarray(vectors[:rows], dtype=np.float32))

    def _note_errors(self, index: Any, vectors: np.ndarray, first_slot: int) -> None:
        """Measure the "sq8" encoding error of vectors just inserted at
        ``first_slot`` on (clamped coordinates included): the bounds
        :meth:`search_bounded` gives; count the drifted ones."""
        import numpy as np

        if self.storage != "sq8" or not len(vectors):
            return
        error = encoding_errors(index, vectors)
        self._errors[first_slot : first_slot + len(error)] = error
        self._drifted += int(np.count_nonzero(error > self._drift_limit))

    def _to_hnsw(self, extra: np.ndarray) -> None:
        """Leave the exact regime: one bulk HNSW build from the live rows plus ``extra``
        (whose ids are already in the slots after ``self._n``)."""
        import numpy as np

        assert self._matrix is not None or self._n == 0
        old = self._matrix[: self._n][self._alive[: self._n]] if self._matrix is not None else None
        vectors = extra if old is None else np.concatenate([old, extra.astype(old.dtype)])
        self._build_from(self._ids[: self._n + len(extra)][self._alive[: self._n + len(extra)]],
                         vectors)  # fmt: skip
        self._n -= len(extra)  # add() counts the new ones
        self._live -= len(extra)

    def _build_from(self, ids: np.ndarray, vectors: np.ndarray) -> None:
        import numpy as np

        n = len(ids)
        if self.storage == "sq8" and n < SQ8_MIN_TRAIN_ROWS:
            self.storage = "fp16"  # too few vectors to train 8-bit ranges on
        index = self._new_hnsw()
        self._train(index, vectors)
        batch = np.ascontiguousarray(vectors, dtype=np.float32)
        index.add(batch)
        self._matrix = None
        self._hnsw = index
        cap = max(64, 2 * n)
        self._ids = np.zeros(cap, dtype=np.int64)
        self._ids[:n] = ids
        self._alive = np.zeros(cap, dtype=bool)
        self._alive[:n] = True
        self._errors = np.zeros(cap if self.storage == "sq8" else 0, dtype=np.float32)
        self._count_drift()  # the new ranges' limit; no error is measured yet, so 0 drifted
        self._note_errors(index, batch, 0)  # ... until this counts them
        self._bitmap = np.zeros(0, dtype=np.uint8)
        self._new_bitmap(cap)
        self._set_bits(np.arange(n))
        self._n = self._live = n

    @property
    def rebuild_due(self) -> bool:
        """An HNSW graph whose tombstones outnumber its live entries (and number at
        least :data:`MIN_TOMBSTONES_FOR_REBUILD`), with no rebuild under way."""
        return (
            self._hnsw is not None
            and self._rebuilding is None
            and self.tombstones > max(self._live, MIN_TOMBSTONES_FOR_REBUILD - 1)
        )

    @property
    def rebuilding(self) -> Rebuild | None:
        """The rebuild under way, if any."""
        return self._rebuilding

    def begin_rebuild(self, originals: Originals | None = None) -> Rebuild:
        """Start a rebuild (caller holds the write lock: a snapshot of the slots);
        with ``originals`` (entry ids -> their float32 vectors), an 8-bit graph
        gets new ranges (see :class:`Rebuild`)."""
        if self._hnsw is None:
            raise ValueError("only an HNSW index is rebuilt")
        if self._rebuilding is not None:
            raise ValueError("a rebuild is already under way")
        self._rebuilding = Rebuild(self, originals)
        return self._rebuilding

    def rebuild_now(self, originals: Originals | None = None) -> None:
        """Rebuild the graph from the live entries at once (nobody else using it)."""
        job = self.begin_rebuild(originals)
        job.build()
        job.finish()

    def _compact_matrix(self) -> None:
        import numpy as np

        assert self._matrix is not None
        keep = self._alive[: self._n]
        live = int(keep.sum())
        m = np.zeros_like(self._matrix)
        m[:live] = self._matrix[: self._n][keep]
        ids = np.zeros_like(self._ids)
        ids[:live] = self._ids[: self._n][keep]
        self._matrix, self._ids = m, ids
        self._alive[:] = False
        self._alive[:live] = True
        self._n = self._live = live

    # -- saving ---------------------------------------------------------------------

    def save(self, stem: Path) -> bool:
        """Write an HNSW index to ``stem.faiss`` and its slots to ``stem.npz``; False
        (nothing written) in the exact regime, which is rebuilt from its vectors."""
        import faiss
        import numpy as np

        if self._hnsw is None:
            return False
        faiss.write_index(self._hnsw, str(stem.with_suffix(".faiss")))
        with open(stem.with_suffix(".npz"), "wb") as f:
            np.savez(
                f,
                ids=self._ids[: self._n],
                alive=self._alive[: self._n],
                errors=self._errors[: self._n],
            )
        return True

    @classmethod
    def load(cls, stem: Path, dim: int, **kwargs: Any) -> ScopeIndex:
        """An HNSW index written by :meth:`save` (raises when the files are unreadable)."""
        import faiss
        import numpy as np

        hnsw: Any = faiss.read_index(str(stem.with_suffix(".faiss")))
        with np.load(stem.with_suffix(".npz")) as saved:
            ids, alive = saved["ids"], saved["alive"]
            errors = saved["errors"] if "errors" in saved else None
        if hnsw.d != dim or hnsw.ntotal != len(ids) or len(alive) != len(ids):
            raise ValueError(f"{stem}: index and slots disagree")
        # the file says how its vectors are stored, whatever the options say now
        storage = storage_of(hnsw)
        if storage == "sq8" and (errors is None or len(errors) != len(ids)):
            raise ValueError(f"{stem}: an 8-bit index without its error bounds")
        ix = cls(dim, **{**kwargs, "storage": storage})
        hnsw.hnsw.efSearch = ix.ef_search
        hnsw.hnsw.efConstruction = ix.ef_construction
        n = len(ids)
        cap = max(64, n + n // 2)
        ix._hnsw = hnsw
        ix._ids = np.zeros(cap, dtype=np.int64)
        ix._ids[:n] = ids
        ix._alive = np.zeros(cap, dtype=bool)
        ix._alive[:n] = alive
        if storage == "sq8":
            assert errors is not None
            ix._errors = np.zeros(cap, dtype=np.float32)
            ix._errors[:n] = errors
        ix._new_bitmap(cap)
        ix._set_bits(np.flatnonzero(alive))
        ix._n, ix._live = n, int(alive.sum())
        ix._new_from = n  # checked before it was saved, or left to the cursor
        ix._count_drift()
        return ix

    def keep_only(self, live: set[int]) -> None:
        """Tombstone every entry whose id is not in ``live`` (entries deleted from
        SQLite after the index was saved)."""
        for entry_id in self.ids().tolist():
            if entry_id not in live:
                self.remove(entry_id)

    @property
    def last_id(self) -> int:
        """The highest id ever added (0 when empty)."""
        return int(self._ids[self._n - 1]) if self._n else 0

    # -- reading --------------------------------------------------------------------

    def search(
        self, vector: np.ndarray, k: int, *, ef: int | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """The ids of the (at most) ``k`` live entries nearest ``vector`` and their
        cosines, best first; equal cosines in insertion order. Exact in the exact
        regime; in the approximate one the cosines are 8-bit (or float16) estimates and
        ``ef`` (default :attr:`ef_search`) sets how widely the graph is searched."""
        if self._hnsw is None and min(k, self._live) > 0:
            return self._search_exact(vector, min(k, self._live))
        ids, sims, _ = self._search_slots(vector, k, ef=ef, exhaustive=False)
        return ids, sims

    def search_bounded(
        self, vector: np.ndarray, k: int, *, ef: int | None = None, exhaustive: bool = False
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`search` in the approximate regime, with a bound on each
        candidate's |approximate - exact cosine| for a unit query (float16's fixed
        one, or the entry's own 8-bit error). ``exhaustive``: every live entry is
        compared, no graph (a flat scan of the stored vectors: ~40 ms per million
        8-bit ones, ~80 float16, one thread), missing nothing their approximate
        cosines rank in the top ``k``."""
        assert self._hnsw is not None, "exact cosines need no bound"
        ids, sims, slots = self._search_slots(vector, k, ef=ef, exhaustive=exhaustive)
        return ids, sims, self._slot_errors(slots)

    def _search_slots(
        self, vector: np.ndarray, k: int, *, ef: int | None, exhaustive: bool
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        import numpy as np

        k = min(k, self._live)
        if k <= 0:
            empty = np.zeros(0, dtype=np.int64)
            return empty, np.zeros(0, dtype=np.float32), empty
        import faiss

        if exhaustive:  # the graph's own float16 (or 8-bit) storage, scanned flat
            params = faiss.SearchParameters()  # type: ignore[attr-defined]
            index = faiss.downcast_index(self._hnsw.storage)
        else:
            params = faiss.SearchParametersHNSW()  # type: ignore[attr-defined]
            params.efSearch = max(ef or self.ef_search, k)
            index = self._hnsw
        if self._live < self._n:
            params.sel = self._selector
        sims, slots = index.search(
            np.ascontiguousarray(vector, dtype=np.float32).reshape(1, -1), k, params=params
        )
        found = slots[0] >= 0
        return self._ids[slots[0][found]], sims[0][found], slots[0][found]

    def _search_exact(self, vector: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        import numpy as np

        assert self._matrix is not None
        n = self._n
        # identical vectors tie at 1.0 whatever the CPU's float noise (ties: oldest first)
        sims = snap_cosines(self._matrix[:n] @ vector)
        if self._live < n:
            sims[~self._alive[:n]] = -np.inf
        if k < n:
            kth = np.partition(sims, n - k)[n - k]
            cand = np.flatnonzero(sims >= kth)  # every tie of the k-th value
        else:
            cand = np.arange(n)
        order = cand[np.lexsort((cand, -sims[cand]))][:k]
        return self._ids[order], sims[order]


def encoding_errors(index: Any, vectors: np.ndarray) -> np.ndarray:
    """|x - decoded x| of each row under an 8-bit graph's ranges (clamping included)."""
    import faiss
    import numpy as np

    storage: Any = faiss.downcast_index(index.storage)
    out = np.zeros(len(vectors), dtype=np.float32)
    for start in range(0, len(vectors), REBUILD_CHUNK):
        x = np.ascontiguousarray(vectors[start : start + REBUILD_CHUNK], dtype=np.float32)
        out[start : start + len(x)] = np.linalg.norm(
            x - storage.sa_decode(storage.sa_encode(x)), axis=1
        )
    return out


def drift_limit(index: Any) -> float:
    """:data:`DRIFT_FACTOR` times the largest error of a vector inside an 8-bit
    graph's ranges: faiss stores each coordinate as the middle of one of 255
    steps of its span, so it moves by at most span / 510."""
    import faiss
    import numpy as np

    storage: Any = faiss.downcast_index(index.storage)
    trained = faiss.vector_to_array(storage.sq.trained)  # minima, then spans
    return DRIFT_FACTOR * float(np.linalg.norm(trained[storage.d :])) / 510


def storage_of(hnsw: Any) -> str:
    """Which of :data:`STORAGES` a faiss ``IndexHNSWSQ`` uses (ValueError for another)."""
    import faiss

    storage: Any = faiss.downcast_index(hnsw.storage)
    qtype = getattr(getattr(storage, "sq", None), "qtype", None)
    if qtype == faiss.ScalarQuantizer.QT_fp16:
        return "fp16"
    if qtype == faiss.ScalarQuantizer.QT_8bit:
        return "sq8"
    raise ValueError("not a float16 or 8-bit IndexHNSWSQ")


class Rebuild:
    """One rebuild of a :class:`ScopeIndex`'s HNSW graph, in steps that let the old
    graph keep serving (and taking puts and removals) until the new one is ready:

    1. :meth:`ScopeIndex.begin_rebuild` (write lock): remembers the slots used so
       far and which of them are live (the snapshot);
    2. :meth:`decode_step` (read lock, one chunk per call): decodes the
       snapshot's live vectors from the old graph's storage (lossless: they
       are stored again as the same float16 values, or the same 8-bit codes);
    3. :meth:`build` (no lock: nobody else sees the new graph): the new graph;
    4. :meth:`take_new` (read lock) then :meth:`add` (no lock), as often as
       wanted: the entries added to the old graph since, in slot order;
    5. :meth:`finish` (write lock): the last entries added, then the swap; every
       slot keeps its entry id, and the live flags are read from the old index
       at that moment, so removals made during the rebuild stay removed.

    :meth:`cancel` at any point: the remaining steps do nothing.

    With ``originals`` (an 8-bit graph whose traffic drifted, see
    :data:`DRIFT_FACTOR`), steps 3 and 4 take each live entry's own float32
    vector from ``originals`` instead of its decoded (clamped) one (step 3 with
    no lock: ``originals`` must be safe to call without one), step 3
    trains new ranges on a seeded sample of them (:data:`SQ8_TRAIN_ROWS`), and
    every entry's error is measured again under them. A removed entry that
    ``originals`` no longer has keeps its decoded vector: it stays a tombstone.

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> x = rng.standard_normal((40, 8)).astype(np.float32)
    >>> x /= np.linalg.norm(x, axis=1, keepdims=True)
    >>> ix = ScopeIndex(8, brute_force_max=0)
    >>> ix.add(np.arange(1, 31), x[:30])
    >>> job = ix.begin_rebuild()
    >>> while job.decode_step():
    ...     pass
    >>> job.build()
    >>> ix.add(np.arange(31, 41), x[30:])  # stored during the rebuild
    >>> ix.remove(3)                       # removed during the rebuild
    True
    >>> job.finish(), len(ix), ix.tombstones, int(ix.search(x[35], 1)[0][0])
    (True, 39, 1, 36)
    """

    def __init__(self, index: ScopeIndex, originals: Originals | None = None) -> None:
        import numpy as np

        self.index = index
        #: new 8-bit ranges, from the entries' own vectors (else the old ranges)
        self.retrain = originals is not None and index.storage == "sq8"
        self._originals = originals
        self._new_errors: list[np.ndarray] = []  # retrain: errors, in the new graph's order
        #: live slots of the snapshot (the new graph's first entries, in order)
        self._keep = np.flatnonzero(index._alive[: index._n])
        self._parts: list[np.ndarray] = []
        self._decoded = 0  # of _keep
        self._next_slot = index._n  # the first old slot not yet in the new graph
        self._slots: list[np.ndarray] = [self._keep]  # old slots, in the new graph's order
        self._pending: list[np.ndarray] = []
        self._new: Any = None
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True
        if self.index._rebuilding is self:
            self.index._rebuilding = None

    def decode_step(self) -> bool:
        """Decode the next chunk of the snapshot's live vectors; True while more remain."""
        import numpy as np

        if self.cancelled or self._decoded >= len(self._keep):
            return False
        slots = self._keep[self._decoded : self._decoded + REBUILD_CHUNK]
        # a span of at most two chunks of old slots: live slots can be sparse (a
        # hot set, then a long evicted run), and the whole span is decoded
        slots = slots[slots < slots[0] + 2 * REBUILD_CHUNK]
        lo, hi = int(slots[0]), int(slots[-1]) + 1
        block = np.empty((hi - lo, self.index.dim), dtype=np.float32)
        self.index._hnsw.reconstruct_n(lo, hi - lo, block)
        self._parts.append(block[slots - lo])
        self._decoded += len(slots)
        return self._decoded < len(self._keep)

    def _restore(self, block: np.ndarray, slots: np.ndarray) -> None:
        """Retraining: put the entries' own vectors in place of the decoded rows
        of ``slots`` in ``block`` (in place: ``block`` is a view)."""
        if not self.retrain or not len(slots):
            return
        assert self._originals is not None
        ids = self.index._ids[slots].tolist()
        found = self._originals(ids)
        for row, entry_id in enumerate(ids):
            vector = found.get(entry_id)
            if vector is not None:
                block[row] = vector

    def build(self) -> None:
        """Build the new graph from the decoded vectors (in chunks, so that a
        cancellation stops it early)."""
        import numpy as np

        if self.cancelled:
            return
        while self.decode_step():  # whatever the caller left undecoded
            pass
        dim = self.index.dim
        vectors = np.concatenate(self._parts) if self._parts else np.zeros((0, dim), np.float32)
        self._parts = []
        # the entries' own vectors, read here, outside the store's lock (a put
        # waits for no SQLite read); the slots' ids never change
        for start in range(0, len(vectors), REBUILD_CHUNK):
            if self.cancelled:
                return
            slots = self._keep[start : start + REBUILD_CHUNK]
            self._restore(vectors[start : start + len(slots)], slots)
        if self.retrain:  # new ranges, from the whole scope rather than its first entries
            new = self.index._new_hnsw()
            sample = vectors
            if len(vectors) > SQ8_TRAIN_ROWS:
                rng = np.random.default_rng(RETRAIN_SEED)
                sample = vectors[np.sort(rng.choice(len(vectors), SQ8_TRAIN_ROWS, replace=False))]
            new.train(np.ascontiguousarray(sample))
        else:  # "sq8": the old ranges, so the decoded vectors get their old codes
            # back (their encoding errors, hence their bounds, stay what they were)
            new = self.index._new_hnsw(like=self.index._hnsw)
            self.index._train(new, vectors)
        for start in range(0, len(vectors), REBUILD_CHUNK):
            if self.cancelled:
                return
            chunk = np.ascontiguousarray(vectors[start : start + REBUILD_CHUNK])
            new.add(chunk)
            if self.retrain:
                self._new_errors.append(encoding_errors(new, chunk))
        # a bulk build misplaces some nodes: check every one before the swap
        for start in range(0, new.ntotal, REBUILD_CHUNK):
            if self.cancelled:
                return
            repair_links(new, np.arange(start, min(new.ntotal, start + REBUILD_CHUNK)))
        self._new = new

    def take_new(self) -> np.ndarray:
        """The vectors of the entries added to the old graph since the snapshot (or
        the previous call), in slot order."""
        import numpy as np

        ix = self.index
        lo, hi = self._next_slot, ix._n
        block = np.empty((hi - lo, ix.dim), dtype=np.float32)
        if hi > lo:
            ix._hnsw.reconstruct_n(lo, hi - lo, block)
            self._restore(block, np.arange(lo, hi))
            self._slots.append(np.arange(lo, hi))
        self._next_slot = hi
        return block

    def add(self, vectors: np.ndarray) -> None:
        """Add what :meth:`take_new` gave to the new graph."""
        if len(vectors) and self._new is not None and not self.cancelled:
            self._new.add(vectors)
            if self.retrain:
                self._new_errors.append(encoding_errors(self._new, vectors))

    def finish(self) -> bool:
        """Catch up and swap the new graph in; False (nothing changed) when the
        rebuild was cancelled or never built."""
        import numpy as np

        ix = self.index
        if self.cancelled or self._new is None or ix._rebuilding is not self:
            return False
        self.add(self.take_new())
        slots = np.concatenate(self._slots)
        n = len(slots)
        assert self._new.ntotal == n, "the new graph lost or doubled an entry"
        ids, alive = ix._ids[slots].copy(), ix._alive[slots].copy()
        assert int(alive.sum()) == ix._live, "a live entry is missing from the new graph"
        cap = max(64, 2 * n)
        ix._hnsw = self._new
        ix._ids = np.zeros(cap, dtype=np.int64)
        ix._ids[:n] = ids
        ix._alive = np.zeros(cap, dtype=bool)
        ix._alive[:n] = alive
        if ix.storage == "sq8":  # the same codes (the same errors, in the new
            # order), or new ranges and the errors measured under them
            errors = np.concatenate(self._new_errors) if self.retrain else ix._errors[slots]
            ix._errors = np.zeros(cap, dtype=np.float32)
            ix._errors[:n] = errors
        ix._bitmap = np.zeros(0, dtype=np.uint8)
        ix._new_bitmap(cap)
        ix._set_bits(np.flatnonzero(alive))
        ix._n = ix._new_from = n  # the rebuild checked its graph's nodes
        ix._sweep_at = 0
        ix._rebuilding = None
        ix.retrains += self.retrain
        ix._count_drift()
        self._new = None
        return True
