"""The verified cache: a real prompt cache that serves a stored answer only when a
chain of checks says the new request needs exactly that answer.

``put(request, answer)`` stores an answer; ``get(request)`` returns a stored
answer or None; ``lookup(request)`` returns the whole :class:`Decision`. A
request is a :class:`~adapters.verified_cache.features.Request` (query plus
optional prior turns, system prompt and tools) or a bare query string.

``get`` runs the tiers in order, cheapest first, and stops at the first that
decides:

1. **policy** (no model): the new request is never served if it asks a mutating
   tool to act, wants live data, asks for creative writing or carries a signed-in
   user's profile (:mod:`.policy`). Entries live in scopes keyed by system
   prompt, so an answer never crosses users, apps or personas.
2. **exact**: a stored request identical to the new one (query, turns, system
   prompt, tools) is served.
3. **embedding** (recall gate): the MiniLM (ONNX) cosine of the queries; the
   ``top_k`` stored entries in scope with the highest cosine are candidates, and
   a candidate below the gate threshold is a MISS without further work.
4. **verifier**: for each candidate, the features of what differs between the
   pair (:mod:`.features`), the embedding cosines (queries, prior turns, the two
   sides of a short substitution) and the queries' contextual word pieces
   (:func:`token_alignment`: alignment, and the cosine of the pieces only one
   side has) go through the LightGBM verifier (monotone in every
   feature: it can only veto what the embedding would serve); the first
   candidate whose P(HIT) clears the certified threshold is served.

``put`` refuses (stores nothing) a request the policy tier would never serve.

Storage (:mod:`.store`, :mod:`.index`): the exact tier is one dict lookup, the
embedding tier searches a per-scope index (brute force up to 8k entries, then
HNSW), both updated on ``put``; ``path=`` keeps the entries in SQLite across
restarts, ``max_entries`` bounds them (LRU) and ``ttl_seconds`` ages them out.
``get`` may run from many threads at once; ``put`` is serialised.

Embeddings: the query is embedded on every ``put`` and ``get``; prior-turn
histories and differing spans are embedded through a small LRU memo keyed by
text (system prompts and conversation histories repeat, and differing spans
are short, recurring words like "Python"/"JavaScript").
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from adapters.embedders import unit_cosine
from cacheeval.metrics.sweep import OperatingPoint

from .features import (
    FEATURE_NAMES,
    Request,
    Side,
    analyze,
    content_diff,
    context_only,
    history_diff_spans,
    pair_features,
    quantize,
    substitution_spans,
    tool_names,
)
from .model import decide, serving_threshold
from .policy import PolicyVerdict, pair_policy, request_policy, scope_key
from .store import EXHAUSTIVE_MAX, EntryStore, Record

if TYPE_CHECKING:
    import numpy as np

    from adapters.embedders import Embedder, WordPieces

    from .model import Verifier

#: The embedder the shipped verifier was trained with: MiniLM on ONNX Runtime in
#: fp32, the very model of the cosine baseline the cache is read against (int8
#: weights halve the latency but move cosines by a few hundredths, which cost
#: about 0.004 of ROC-AUC on real paraphrase pairs). A model records its
#: embedder in ``meta.json``.
DEFAULT_EMBEDDER = "minilm-onnx"
#: Intra-op threads for one query: both cores of the reference 2-core machine. A
#: service answering many requests at once should pass ``threads=1`` instead.
DEFAULT_THREADS = max(1, min(2, os.cpu_count() or 1))


@dataclass(frozen=True, slots=True)
class Decision:
    """What ``lookup`` decided. ``score`` is P(HIT) from the verifier for a served
    pair (1.0 for an exact match), 0.0 when the policy refused, and for any other
    refusal the embedding's share of :func:`~.model.served_score` (below the
    threshold, in the order of the query cosine); ``cosine`` the best query cosine
    seen (None when no embedding was computed)."""

    hit: bool
    answer: str | None
    tier: str
    score: float
    reason: str
    cosine: float | None = None
    features: tuple[float, ...] | None = None


@dataclass(frozen=True, slots=True)
class PutResult:
    """Whether ``put`` stored the answer, and why not when it did not."""

    stored: bool
    reason: str = ""


def exact_key(request: Request) -> str:
    """Identity of a request: query, turns, system prompt and tool names, whitespace-
    normalised. Equal keys mean the very same request."""
    parts = [
        " ".join(request.query.split()),
        context_only(request),
        " ".join((request.system_prompt or "").split()),
        "|".join(tool_names(request)),
    ]
    return "\x1f".join(parts)


class TextMemo:
    """A bounded LRU map text -> embedding vector, computing misses in one batch."""

    def __init__(self, embed: Callable[[list[str]], np.ndarray], size: int = 4096) -> None:
        self._embed = embed
        self._size = size
        self._items: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def vectors(self, texts: Sequence[str]) -> list[np.ndarray]:
        with self._lock:
            missing = list(dict.fromkeys(t for t in texts if t not in self._items))
        if missing:
            vecs = self._embed(missing)
            with self._lock:
                for t, v in zip(missing, vecs, strict=True):
                    self._items[t] = v
                    self._items.move_to_end(t)
                while len(self._items) > self._size:
                    self._items.popitem(last=False)
        with self._lock:
            out = []
            for t in texts:
                self._items.move_to_end(t)
                out.append(self._items[t])
            return out

    def cached(self, texts: Sequence[str]) -> list[np.ndarray] | None:
        """The vectors of ``texts`` if all are in the memo, else None (nothing computed)."""
        with self._lock:
            if all(t in self._items for t in texts):
                for t in texts:
                    self._items.move_to_end(t)
                return [self._items[t] for t in texts]
            return None

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def __len__(self) -> int:
        return len(self._items)


_embedders: dict[tuple[str, int | None], Embedder] = {}
_embedders_lock = threading.Lock()


def shared_embedder(name: str, threads: int | None = DEFAULT_THREADS) -> Embedder:
    """The process-wide embedder ``name`` from :mod:`adapters.embedders`.

    MiniLM on ONNX Runtime runs with ``threads`` intra-op threads (one instance
    per thread count; None: ONNX Runtime's default). Other embedders come from
    ``get_embedder``.
    """
    from adapters.embedders import EMBEDDERS, MiniLMOnnx, get_embedder

    cls = EMBEDDERS.get(name)
    if cls is None or not issubclass(cls, MiniLMOnnx) or threads is None:
        return get_embedder(name)
    with _embedders_lock:
        key = (name, threads)
        if key not in _embedders:
            _embedders[key] = cls(threads=threads)
        return _embedders[key]


class Resources:
    """The heavy, shareable parts of a cache: the embedder, the verifier and the
    text memo. Many caches (e.g. one per benchmark row) can share one.

    ``embedder_name`` defaults to the embedder the verifier was trained with (its
    cosines are verifier inputs, so serving with another model skews P(HIT)).
    """

    def __init__(
        self,
        *,
        verifier: Verifier | None = None,
        embedder: Embedder | None = None,
        embedder_name: str | None = None,
        threads: int | None = DEFAULT_THREADS,
        memo_size: int = 4096,
    ) -> None:
        self._verifier = verifier
        self._embedder = embedder
        self._embedder_name = embedder_name
        self.threads = threads
        self.memo = TextMemo(self.encode, memo_size)

    @property
    def verifier(self) -> Verifier:
        if self._verifier is None:
            from .model import Verifier

            self._verifier = Verifier.load()
        return self._verifier

    @property
    def embedder_name(self) -> str:
        """The embedder given, else the one the verifier was trained with."""
        if self._embedder is not None:
            return self._embedder.name
        if self._embedder_name is not None:
            return self._embedder_name
        return self.verifier.embedder_name

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = shared_embedder(self.embedder_name, self.threads)
        return self._embedder

    def encode(self, texts: list[str]) -> np.ndarray:
        return self.embedder.encode(texts)

    def query_vector(self, query: str) -> np.ndarray:
        """The query's embedding, computed now (never memoised)."""
        return self.query_embedding(query)[0]

    def query_embedding(self, query: str) -> tuple[np.ndarray, WordPieces | None]:
        """The query's vector and word pieces from one model run (the latter None
        when the embedder cannot give them)."""
        encode_tokens = getattr(self.embedder, "encode_tokens", None)
        if encode_tokens is None:
            vec: np.ndarray = self.encode([query])[0]
            return vec, None
        vecs, tokens = encode_tokens([query])
        return vecs[0], tokens[0]


def token_alignment(pa: WordPieces | None, pb: WordPieces | None) -> tuple[float, ...] | None:
    """The :data:`~.features.TOKEN_ALIGN_FEATURES` of two queries' word pieces
    (:class:`~adapters.embedders.WordPieces`, vectors L2-normalised). With
    ``S = ta @ tb.T``, ``best_a = max_j S[i, j]`` and ``best_b = max_i S[i, j]``,

        p = mean(best_a)   r = mean(best_b)   f = 2pr / (p + r)

    (means, not minima: in a long text some word always lacks a partner, so the
    worst-aligned word measures length as much as meaning), and ``tok_diff_cos``:
    the cosine of the mean vector of the word-like pieces only ``pa`` has (by
    vocabulary id) and that of the pieces only ``pb`` has - what replaced what,
    read in context ("blue ... day" vs "red ... sunset" is far, "What's the number
    of" vs "How many" near) - 1.0 when either side has no such piece (nothing
    replaced: equal, or words only added). None when either side has no vectors
    (then the features are missing)."""
    import numpy as np

    if pa is None or pb is None or not len(pa.ids) or not len(pb.ids):
        return None
    ta, tb = pa.vectors, pb.vectors
    sim = ta @ tb.T
    p, r = float(sim.max(axis=1).mean()), float(sim.max(axis=0).mean())
    f = 2 * p * r / (p + r) if p + r > 0 else 0.0
    only_a, only_b = _own_pieces(pa, pb), _own_pieces(pb, pa)
    diff_cos = 1.0
    if only_a and only_b:
        va, vb = ta[only_a].mean(axis=0), tb[only_b].mean(axis=0)
        norm = float(np.linalg.norm(va) * np.linalg.norm(vb))
        diff_cos = float(va @ vb) / norm if norm > 0 else 0.0
    return (p, r, f, diff_cos)


def _own_pieces(mine: WordPieces, other: WordPieces) -> list[int]:
    """Positions of ``mine``'s word-like pieces whose id ``other`` lacks."""
    theirs = set(other.ids)
    return [i for i, (t, w) in enumerate(zip(mine.ids, mine.wordlike, strict=True))
            if w and t not in theirs]  # fmt: skip


def span_cosine(span_a: str, span_b: str, memo: TextMemo, *, compute: bool = True) -> float | None:
    """Cosine of the differing spans: 1.0 when nothing differs, -1.0 when only one
    side has a differing span. With ``compute=False``, None when it would take a
    model call (the spans are not in the memo)."""
    if span_a == span_b:
        return 1.0
    if not span_a or not span_b:
        return -1.0
    vecs = memo.vectors([span_a, span_b]) if compute else memo.cached([span_a, span_b])
    if vecs is None:
        return None
    return unit_cosine(vecs[0], vecs[1])


COS_DIFF = FEATURE_NAMES.index("cos_diff")
#: The store's floor sits this far below the recall gate: the gate compares the
#: cosine rounded to the features' 4 decimals, so 0.39995 passes a gate of 0.4.
GATE_SLACK = 1e-4


def features_for(
    stored: Side,
    stored_vector: np.ndarray,
    new: Side,
    new_vector: np.ndarray,
    memo: TextMemo,
    *,
    lazy: bool = False,
    stored_tokens: WordPieces | None = None,
    new_tokens: WordPieces | None = None,
) -> tuple[tuple[float, ...], tuple[str, str] | None]:
    """The verifier's feature vector for (stored, new): the one code path shared by
    ``get`` and by training, so training and serving never disagree.

    Only short texts are embedded besides the queries: the differing spans of the
    queries and of the histories (memoised). With ``lazy=True`` the query spans
    are not embedded when that would take a model call: the vector then holds 0.0
    at ``cos_diff`` and the spans are returned (else None) so the caller can bound
    P(HIT) first. ``stored_tokens``/``new_tokens``: the queries' word pieces
    (:func:`token_alignment`).
    """
    diff = content_diff(stored, new)
    span_a, span_b = substitution_spans(diff)
    hist_a, hist_b = history_diff_spans(stored, new)
    cos_diff = span_cosine(span_a, span_b, memo, compute=not lazy)
    cos_context = span_cosine(hist_a, hist_b, memo)
    assert cos_context is not None
    added = [h for h in (hist_a, hist_b) if h]
    cos_added = max((unit_cosine(v, new_vector) for v in memo.vectors(added)), default=0.0)
    feats = pair_features(
        stored,
        new,
        cos_query=unit_cosine(stored_vector, new_vector),
        cos_context=cos_context,
        cos_diff=0.0 if cos_diff is None else cos_diff,
        cos_ctx_added=cos_added,
        token_align=token_alignment(stored_tokens, new_tokens),
        diff=diff,
    )
    return feats, ((span_a, span_b) if cos_diff is None else None)


def with_value(features: tuple[float, ...], index: int, value: float) -> tuple[float, ...]:
    """``features`` with ``features[index]`` replaced by ``value``."""
    return features[:index] + (value,) + features[index + 1 :]


@dataclass
class VerifiedCache:
    """An accuracy-first prompt cache (see the module docstring).

    Example::

        cache = VerifiedCache()
        cache.put("How do I reset my password?", "Open Settings > Security ...")
        cache.get("how can I reset my password")      # the stored answer
        cache.get("Write a poem about passwords")     # None (policy: creative)

        # persistent, bounded: reopening the file serves the same answers
        cache = VerifiedCache(path="cache/verified.sqlite", max_entries=100_000,
                              ttl_seconds=7 * 86400)

    ``operating_point`` (serve when P(HIT) >= its threshold) and ``gate_threshold``
    default to the model's certified operating point and recall gate
    (``model/meta.json``). ``lazy_spans``: embed the differing
    spans only when the decision depends on them (exact: the verifier is
    monotone in that cosine); the reported score is then P(HIT) at the bound
    that decided (at most the true P(HIT) for a hit, at least it for a miss).

    ``path``: an SQLite file holding the entries (None: in memory only);
    ``max_entries``: evict the least recently used beyond it; ``ttl_seconds``:
    never serve an entry older than that; ``clock``: the time source for both
    (:mod:`.store`); ``index_options``: HNSW settings for scopes beyond 8,192
    entries (``hnsw_m``, ``ef_construction``, ``ef_search``, and ``storage``:
    "sq8", the default, or "fp16", 384 bytes more per entry); ``exhaustive_max``:
    the largest such scope a lookup that found nothing servable scans in full
    (default 32,768, a scan of ~3 ms; None: any size, ~80 ms per million
    entries on every such miss). ``close()`` (or
    ``with``) saves the index, writes the last-used times and closes the file.
    """

    resources: Resources = field(default_factory=Resources)
    operating_point: OperatingPoint | None = None
    gate_threshold: float | None = None
    top_k: int = 3
    lazy_spans: bool = True
    path: str | Path | None = None
    max_entries: int | None = None
    ttl_seconds: float | None = None
    clock: Callable[[], float] = field(default=time.time, repr=False)
    index_options: dict[str, Any] | None = None
    exhaustive_max: int | None = EXHAUSTIVE_MAX
    _store: EntryStore = field(init=False, repr=False)
    _sides: OrderedDict[int, Side] = field(default_factory=OrderedDict, init=False, repr=False)
    _sides_lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    _embedder_checked: bool = field(default=False, init=False, repr=False)

    def __post_init__(self) -> None:
        self._store = EntryStore(
            self.path,
            max_entries=self.max_entries,
            ttl_seconds=self.ttl_seconds,
            clock=self.clock,
            index_options=self.index_options,
            exhaustive_max=self.exhaustive_max,
        )

    def __enter__(self) -> VerifiedCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def store(self) -> EntryStore:
        """The entry store (exact map, vector index, eviction, persistence)."""
        return self._store

    def close(self) -> None:
        """Flush and close the store's file (path mode); a no-op in memory."""
        self._store.close()

    def _check_embedder(self) -> None:
        # vectors of another model would make every stored cosine meaningless
        if not self._embedder_checked:
            self._store.claim("embedder", self.resources.embedder_name)
            self._embedder_checked = True

    def _side(self, rec: Record) -> Side:
        """The analysis of a stored request: kept from ``put`` in memory, derived
        again (and memoised) for entries read back from SQLite."""
        if rec.side is not None:
            side: Side = rec.side
            return side
        with self._sides_lock:
            found = self._sides.get(rec.id)
            if found is not None:
                self._sides.move_to_end(rec.id)
                return found
        side = analyze(rec.request)
        with self._sides_lock:
            self._sides[rec.id] = side
            while len(self._sides) > 4096:
                self._sides.popitem(last=False)
        return side

    # -- storing ------------------------------------------------------------------

    def put(self, request: Request | str, answer: str) -> PutResult:
        """Store ``answer`` for ``request`` unless the policy tier forbids caching it."""
        req = Request.of(request)
        if not isinstance(answer, str):
            raise TypeError(f"answer must be a str, got {type(answer).__name__}")
        side = analyze(req)
        verdict = request_policy(req, side)
        if not verdict.allowed:
            return PutResult(False, f"{verdict.rule}: {verdict.reason}")
        self._check_embedder()
        vector, tokens = self.resources.query_embedding(req.query)
        self._store.add(scope_key(req), exact_key(req), req, answer, vector, tokens, side=side)
        return PutResult(True)

    def __len__(self) -> int:
        return len(self._store)

    def clear(self) -> None:
        """Delete every entry (from the file too, in path mode)."""
        self._store.clear()
        with self._sides_lock:
            self._sides.clear()

    # -- looking up ----------------------------------------------------------------

    def get(self, request: Request | str) -> str | None:
        """The stored answer for ``request``, or None."""
        return self.lookup(request).answer

    def lookup(self, request: Request | str) -> Decision:
        """Run the tiers for ``request`` and return the decision."""
        req = Request.of(request)
        # a request with tools is analysed now: the policy reads the tool it calls,
        # and it will reach the verifier with the same analysis
        side = analyze(req) if req.tools else None
        verdict = request_policy(req, side)
        if not verdict.allowed:
            return _refused(verdict)
        scope = scope_key(req)
        if not self._store.scope_size(scope):
            other = self._store.other_scope(scope)
            if other is not None:  # entries exist, but only under other system prompts
                return _refused(pair_policy(Request("", system_prompt=other), req))
            return Decision(False, None, "embedding", 0.0, "the cache is empty")
        self._check_embedder()
        rec = self._store.exact(scope, exact_key(req))
        if rec is not None:
            self._store.touch(rec.id)
            return Decision(True, rec.answer, "exact", 1.0, "identical request", cosine=1.0)
        vector, tokens = self.resources.query_embedding(req.query)
        gate = self._gate_threshold()
        # an HNSW scope that finds nothing at the gate searches again, wider, then
        # exhaustively: "nothing servable" is never an artefact of the graph
        nearest = self._store.nearest(scope, vector, self.top_k, floor=gate - GATE_SLACK)
        if not nearest:  # every entry of the scope has expired
            return Decision(False, None, "embedding", 0.0, "no live entry in scope")
        best_cos = nearest[0][1]
        # the gate reads the cosine at the verifier's precision, as training does
        candidates = [(e, cos) for e, cos in nearest if quantize(cos) >= gate]
        if not candidates:
            _, score = decide("embedding", None, best_cos, self._threshold())
            return Decision(
                False,
                None,
                "embedding",
                score,
                f"best cosine {best_cos:.3f} is below the recall gate {gate:.2f}",
                cosine=best_cos,
            )
        side = side or analyze(req)
        verifier = self.resources.verifier
        threshold = self._threshold()
        best: Decision | None = None
        lazy = self.lazy_spans and verifier.monotone_cos_diff
        memo = self.resources.memo
        for e, cos in candidates:
            feats, pending = features_for(
                self._side(e), e.vector, side, vector, memo, lazy=lazy,
                stored_tokens=e.tokens, new_tokens=tokens,
            )  # fmt: skip
            if pending is None:
                p = verifier.probability(feats)
            else:
                # P(HIT) is non-decreasing in cos_diff: bound it at the extremes and
                # embed the spans only when the bounds straddle the threshold
                low = verifier.probability(with_value(feats, COS_DIFF, -1.0))
                high = verifier.probability(with_value(feats, COS_DIFF, 1.0))
                if high < threshold:
                    p = high
                elif low >= threshold:
                    p = low
                else:
                    cos_diff = span_cosine(pending[0], pending[1], memo)
                    assert cos_diff is not None
                    feats = with_value(feats, COS_DIFF, cos_diff)
                    p = verifier.probability(feats)
            hit, score = decide("verifier", p, cos, threshold)
            if hit:
                self._store.touch(e.id)
                return Decision(
                    True, e.answer, "verifier", score, f"P(HIT) {p:.3f} >= {threshold:.3f}",
                    cosine=cos, features=feats,
                )  # fmt: skip
            if best is None or score > best.score:
                best = Decision(
                    False, None, "verifier", score, f"P(HIT) {p:.3f} < {threshold:.3f}",
                    cosine=cos, features=feats,
                )  # fmt: skip
        assert best is not None
        return best

    @property
    def point(self) -> OperatingPoint:
        """The operating point served at: the one passed in, else the model's."""
        if self.operating_point is not None:
            return self.operating_point
        return self.resources.verifier.operating_point

    def _threshold(self) -> float:
        return serving_threshold(self.point)

    def _gate_threshold(self) -> float:
        if self.gate_threshold is not None:
            return self.gate_threshold
        return self.resources.verifier.gate_threshold


def _refused(verdict: PolicyVerdict) -> Decision:
    return Decision(False, None, "policy", 0.0, f"{verdict.rule}: {verdict.reason}")
