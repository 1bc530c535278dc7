"""Re-linking the HNSW nodes that were inserted into the wrong part of the graph.

An HNSW insert finds a new node's neighbours with a graph search
(efConstruction wide) and links it to them. When that search gets lost, which
it does on clustered data once the graph holds a few hundred thousand nodes,
the node is linked only to unrelated entries, and nothing from its own cluster
links to it: a later lookup that reaches the cluster does not find it. Measured
on the store benchmark's calibrated vectors (300,000 entries, docs/verified-cache.md,
"Misplaced nodes"): ~1% of the nodes had no level-0 link at a cosine of 0.30 or
more, some of them next to paraphrases at 0.999; they were most of the misses
of group members that the gate-aware widening did not recover.

:func:`repair_links` checks given nodes: a node none of whose level-0 links
reaches a cosine of :data:`REPAIR_BELOW` is searched for again
:data:`REPAIR_EF` wide, and when that finds entries clearly closer than its
links (by :data:`REPAIR_MARGIN`), the node is linked to the closest
:data:`REPAIR_LINKS` of them and they to it (replacing their farthest link
only when the node is closer). :meth:`~.index.ScopeIndex.check_links` runs
it every few hundred inserts on the nodes inserted since, which catches a lost
insert into a dense part of the graph at once, and on a cursor's next nodes
(two per node inserted, going round the whole graph), which catches a node
lost while its own cluster was still sparse, once the cluster has grown; a
background rebuild checks every node of its new graph. Only level 0 is
touched (every search ends there), and only links are added or exchanged, so
the graph stays a valid faiss HNSW: it is saved and loaded as before.

The links are edited in place through faiss's own arrays (``hnsw.neighbors``,
viewed with ``faiss.rev_swig_ptr``); the caller holds whatever lock keeps
searches off the graph meanwhile (the store's write lock, or a graph nobody
else sees yet).
"""

from __future__ import annotations

from typing import Any

#: A new node whose best level-0 link is below this cosine is searched for again.
#: Real request embeddings (MiniLM) have their 100th neighbour near 0.26 already
#: at 3,667 vectors, so at HNSW sizes (over 8,192 entries) a node without a link
#: at 0.30 is almost always a lost insert, not a lone request. Measured at 300k
#: calibrated vectors: 0.95% of the nodes; 0.40 (1.4%) repaired no more lookups.
REPAIR_BELOW = 0.30
#: efSearch of the second search (4x the lookups' default, as their widening).
REPAIR_EF = 256
#: A found entry must beat the node's best link by this much to be linked.
REPAIR_MARGIN = 0.05
#: At most this many links are added per repaired node (each both ways).
REPAIR_LINKS = 4
#: Links read at a time when looking for a node's best one.
LINKS_PER_STEP = 8


class _DecodedRows:
    """The rows of an 8-bit scalar-quantized storage, decoded to float32 by faiss
    itself (``sa_decode``) when indexed: ``rows[slots]``, any shape of ``slots``."""

    def __init__(self, storage: Any, codes: Any) -> None:
        self.storage, self.codes = storage, codes

    def __getitem__(self, slots: Any) -> Any:
        import numpy as np

        picked = self.codes[slots]
        flat = np.ascontiguousarray(picked.reshape(-1, picked.shape[-1]))
        return self.storage.sa_decode(flat).reshape(*picked.shape[:-1], -1)


def _views(index: Any) -> tuple[Any, Any, Any, int]:
    """Zero-copy numpy views of the graph's vectors (float16; 8-bit ones decoded
    when indexed), its link table and the offsets of each node's links, and the
    length of a level-0 list."""
    import faiss
    import numpy as np

    storage: Any = faiss.downcast_index(index.storage)
    dim = index.d
    qtype = getattr(getattr(storage, "sq", None), "qtype", None)
    codes = np.asarray(faiss.rev_swig_ptr(storage.codes.data(), storage.codes.size()))
    vectors: Any
    if qtype == faiss.ScalarQuantizer.QT_fp16 and storage.code_size == 2 * dim:
        vectors = codes.view(np.float16).reshape(-1, dim)
    elif qtype == faiss.ScalarQuantizer.QT_8bit and storage.code_size == dim:
        vectors = _DecodedRows(storage, codes.reshape(-1, dim))
    else:
        raise ValueError("graph repair reads IndexHNSWSQ storage, QT_fp16 or QT_8bit")
    hnsw = index.hnsw
    links = faiss.rev_swig_ptr(hnsw.neighbors.data(), hnsw.neighbors.size())
    offsets = faiss.rev_swig_ptr(hnsw.offsets.data(), hnsw.offsets.size())
    return vectors, links, offsets, int(hnsw.nb_neighbors(0))


def best_link_cosines(index: Any, slots: Any) -> Any:
    """For the nodes ``slots``: the highest cosine between the node and its
    level-0 links (-1.0 for a node without links). Links are read
    :data:`LINKS_PER_STEP` at a time, and a node stops being read once one of
    them reaches :data:`REPAIR_BELOW` (faiss does not keep a list sorted, but
    most nodes have such a link early): only the lost nodes are read in full, so
    their value is exact and the others' is a lower bound at or above the line."""
    import numpy as np

    vectors, links, offsets, width = _views(index)
    slots = np.asarray(slots, dtype=np.int64)
    out = np.full(len(slots), -1.0, dtype=np.float32)
    for start in range(0, len(slots), 4096):
        rows = np.arange(start, min(len(slots), start + 4096))
        own = vectors[slots[rows]].astype(np.float32)  # decoded once per chunk
        for first in range(0, width, LINKS_PER_STEP):
            nodes = slots[rows]
            begin = np.asarray(offsets[nodes], dtype=np.int64) + first
            table = links[begin[:, None] + np.arange(LINKS_PER_STEP)]
            valid = table >= 0
            near = vectors[np.where(valid, table, 0)].astype(np.float32)
            cos = np.einsum("bkd,bd->bk", near, own[rows - start])
            cos[~valid] = -1.0
            out[rows] = np.maximum(out[rows], cos.max(axis=1))
            # read on only where no link reached the line and the list goes on
            rows = rows[(out[rows] < REPAIR_BELOW) & valid[:, -1]]
            if not len(rows):
                break
    return out


def _link(vectors: Any, row: Any, node: int, cos: float, own: Any, *, force: bool) -> bool:
    """Put ``node`` (at cosine ``cos`` to the list's owner ``own``) into the link
    list ``row`` (a view): a free slot, else in place of the farthest link when
    ``force`` or when ``node`` is closer than it. False when it was not put."""
    import numpy as np

    if (row == node).any():
        return False
    free = np.flatnonzero(row < 0)
    if len(free):
        row[free[0]] = node
        return True
    cos_row = vectors[row].astype(np.float32) @ own
    worst = int(np.argmin(cos_row))
    if force or cos_row[worst] < cos:
        row[worst] = node
        return True
    return False


def repair_links(index: Any, slots: Any, *, selector: Any = None) -> int:
    """Re-link the misplaced nodes among ``slots`` (module docstring); the number
    of nodes re-linked. ``selector`` (faiss ``IDSelector``) keeps removed entries
    out of the second search."""
    import faiss
    import numpy as np

    slots = np.asarray(slots, dtype=np.int64)
    if not len(slots) or index.ntotal < 2:
        return 0
    best = best_link_cosines(index, slots)
    lost = np.flatnonzero(best < REPAIR_BELOW)
    if not len(lost):
        return 0
    vectors, links, offsets, width = _views(index)
    params = faiss.SearchParametersHNSW()  # type: ignore[attr-defined]
    params.efSearch = REPAIR_EF
    if selector is not None:
        params.sel = selector
    repaired = 0
    for row in lost.tolist():
        node = int(slots[row])
        own = vectors[node].astype(np.float32)
        sims, found = index.search(own.reshape(1, -1), REPAIR_LINKS + 1, params=params)
        floor = float(best[row]) + REPAIR_MARGIN
        closer = [(float(s), int(j)) for s, j in zip(sims[0], found[0], strict=True)
                  if j >= 0 and j != node and s > floor][:REPAIR_LINKS]  # fmt: skip
        if not closer:
            continue
        start = int(offsets[node])
        mine = links[start : start + width]
        for cos, other in closer:
            # the node's own list takes them (closer than any link it has); theirs
            # take the node only in place of a farther link
            _link(vectors, mine, other, cos, own, force=True)
            theirs_start = int(offsets[other])
            theirs = links[theirs_start : theirs_start + width]
            _link(vectors, theirs, node, cos, vectors[other].astype(np.float32), force=False)
        repaired += 1
    return repaired
