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
4. **verifier**: for each candidate, the structured/lexical features of the pair
   (:mod:`.features`) plus three cosines (queries, prior turns, differing spans)
   go through the LightGBM verifier; the first candidate whose P(HIT) clears the
   certified threshold is served.

``put`` refuses (stores nothing) a request the policy tier would never serve.

Embeddings: the query is embedded on every ``put`` and ``get``; prior-turn
histories and differing spans are embedded through a small LRU memo keyed by
text (system prompts and conversation histories repeat, and differing spans
are short, recurring words like "Python"/"JavaScript").
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .features import (
    Request,
    Side,
    analyze,
    context_only,
    diff_spans,
    history_diff_span,
    pair_features,
    tool_names,
)
from .policy import PolicyVerdict, pair_policy, request_policy, scope_key

if TYPE_CHECKING:
    import numpy as np

    from adapters.embedders import Embedder

    from .model import Verifier

DEFAULT_EMBEDDER = "minilm-onnx"


@dataclass(frozen=True, slots=True)
class Entry:
    """One stored answer with everything ``get`` needs about its request."""

    request: Request
    answer: str
    side: Side
    vector: np.ndarray
    context_text: str
    exact_key: str


@dataclass(frozen=True, slots=True)
class Decision:
    """What ``lookup`` decided. ``score`` is P(HIT) from the verifier (1.0 for an
    exact match, 0.0 when a cheaper tier refused); ``cosine`` the best query
    cosine seen (None when no embedding was computed)."""

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

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def __len__(self) -> int:
        return len(self._items)


def cosine(u: np.ndarray, v: np.ndarray) -> float:
    """Cosine of two L2-normalised vectors (their dot product), clipped to [-1, 1]."""
    return max(-1.0, min(1.0, float(u @ v)))


class Resources:
    """The heavy, shareable parts of a cache: the embedder, the verifier and the
    text memo. Many caches (e.g. one per benchmark row) can share one."""

    def __init__(
        self,
        *,
        verifier: Verifier | None = None,
        embedder: Embedder | None = None,
        embedder_name: str = DEFAULT_EMBEDDER,
        memo_size: int = 4096,
    ) -> None:
        self._verifier = verifier
        self._embedder = embedder
        self.embedder_name = embedder_name
        self.memo = TextMemo(self.encode, memo_size)

    @property
    def verifier(self) -> Verifier:
        if self._verifier is None:
            from .model import Verifier

            self._verifier = Verifier.load()
        return self._verifier

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            from adapters.embedders import get_embedder

            self._embedder = get_embedder(self.embedder_name)
        return self._embedder

    def encode(self, texts: list[str]) -> np.ndarray:
        return self.embedder.encode(texts)

    def query_vector(self, query: str) -> np.ndarray:
        """The query's embedding, computed now (never memoised)."""
        vec: np.ndarray = self.encode([query])[0]
        return vec


def context_cosine(a: str, b: str, memo: TextMemo) -> float:
    """1.0 for identical histories (or none on both sides), 0.0 when only one side
    has one, else the cosine of their embeddings."""
    if a == b:
        return 1.0
    if not a or not b:
        return 0.0
    va, vb = memo.vectors([a, b])
    return cosine(va, vb)


def span_cosine(span_a: str, span_b: str, memo: TextMemo) -> float:
    """Cosine of the differing spans: 1.0 when nothing differs, -1.0 when only one
    side has a differing span."""
    if span_a == span_b:
        return 1.0
    if not span_a or not span_b:
        return -1.0
    va, vb = memo.vectors([span_a, span_b])
    return cosine(va, vb)


def history_text(request: Request) -> str:
    """The prior turns, most recent first (the model truncates long inputs at the
    end, so the oldest turns are the ones dropped)."""
    turns = list(request.context or ())
    return "\n".join(f"{t.get('role', '')}: {t.get('content', '')}" for t in reversed(turns))


def features_for(
    stored: Side,
    stored_vector: np.ndarray,
    stored_history: str,
    new: Side,
    new_vector: np.ndarray,
    new_history: str,
    memo: TextMemo,
) -> tuple[float, ...]:
    """The verifier's feature vector for (stored, new): the one code path shared by
    ``get`` and by training, so training and serving never disagree."""
    span_a, span_b = diff_spans(stored, new)
    added = history_diff_span(stored, new)
    return pair_features(
        stored,
        new,
        cos_query=cosine(stored_vector, new_vector),
        cos_context=context_cosine(stored_history, new_history, memo),
        cos_diff=span_cosine(span_a, span_b, memo),
        cos_ctx_added=cosine(memo.vectors([added])[0], new_vector) if added else 0.0,
    )


@dataclass
class VerifiedCache:
    """An accuracy-first prompt cache (see the module docstring).

    Example::

        cache = VerifiedCache()
        cache.put("How do I reset my password?", "Open Settings > Security ...")
        cache.get("how can I reset my password")      # the stored answer
        cache.get("Write a poem about passwords")     # None (policy: creative)

    ``threshold`` and ``gate_threshold`` default to the shipped model's certified
    operating point (``model/meta.json``).
    """

    resources: Resources = field(default_factory=Resources)
    threshold: float | None = None
    gate_threshold: float | None = None
    top_k: int = 3
    _scopes: dict[str, list[Entry]] = field(default_factory=dict, init=False, repr=False)
    _matrices: dict[str, Any] = field(default_factory=dict, init=False, repr=False)

    # -- storing ------------------------------------------------------------------

    def put(self, request: Request | str, answer: str) -> PutResult:
        """Store ``answer`` for ``request`` unless the policy tier forbids caching it."""
        req = Request.of(request)
        if not isinstance(answer, str):
            raise TypeError(f"answer must be a str, got {type(answer).__name__}")
        verdict = request_policy(req)
        if not verdict.allowed:
            return PutResult(False, f"{verdict.rule}: {verdict.reason}")
        entry = Entry(
            request=req,
            answer=answer,
            side=analyze(req),
            vector=self.resources.query_vector(req.query),
            context_text=history_text(req),
            exact_key=exact_key(req),
        )
        scope = scope_key(req)
        self._scopes.setdefault(scope, []).append(entry)
        self._matrices.pop(scope, None)
        return PutResult(True)

    def __len__(self) -> int:
        return sum(len(v) for v in self._scopes.values())

    def clear(self) -> None:
        self._scopes.clear()
        self._matrices.clear()

    # -- looking up ----------------------------------------------------------------

    def get(self, request: Request | str) -> str | None:
        """The stored answer for ``request``, or None."""
        return self.lookup(request).answer

    def lookup(self, request: Request | str) -> Decision:
        """Run the tiers for ``request`` and return the decision."""
        req = Request.of(request)
        verdict = request_policy(req)
        if not verdict.allowed:
            return _refused(verdict)
        scope = scope_key(req)
        entries = self._scopes.get(scope, [])
        if not entries:
            if self._scopes:
                # entries exist, but only under other system prompts
                other = next(e for es in self._scopes.values() for e in es)
                return _refused(pair_policy(other.request, req))
            return Decision(False, None, "embedding", 0.0, "the cache is empty")
        key = exact_key(req)
        for e in entries:
            if e.exact_key == key:
                return Decision(True, e.answer, "exact", 1.0, "identical request", cosine=1.0)
        vector = self.resources.query_vector(req.query)
        sims = self._matrix(scope) @ vector
        order = sorted(range(len(entries)), key=lambda i: (-float(sims[i]), i))[: self.top_k]
        best_cos = float(sims[order[0]])
        gate = self._gate_threshold()
        candidates = [i for i in order if float(sims[i]) >= gate]
        if not candidates:
            return Decision(
                False,
                None,
                "embedding",
                0.0,
                f"best cosine {best_cos:.3f} is below the recall gate {gate:.2f}",
                cosine=best_cos,
            )
        side = analyze(req)
        history = history_text(req)
        verifier = self.resources.verifier
        threshold = self._threshold()
        best: Decision | None = None
        for i in candidates:
            e = entries[i]
            feats = features_for(
                e.side, e.vector, e.context_text, side, vector, history, self.resources.memo
            )
            p = verifier.probability(feats)
            if p >= threshold:
                return Decision(
                    True, e.answer, "verifier", p, f"P(HIT) {p:.3f} >= {threshold:.3f}",
                    cosine=float(sims[i]), features=feats,
                )  # fmt: skip
            if best is None or p > best.score:
                best = Decision(
                    False, None, "verifier", p, f"P(HIT) {p:.3f} < {threshold:.3f}",
                    cosine=float(sims[i]), features=feats,
                )  # fmt: skip
        assert best is not None
        return best

    def _matrix(self, scope: str) -> np.ndarray:
        m = self._matrices.get(scope)
        if m is None:
            import numpy as np

            m = np.stack([e.vector for e in self._scopes[scope]])
            self._matrices[scope] = m
        return m

    def _threshold(self) -> float:
        return self.threshold if self.threshold is not None else self.resources.verifier.threshold

    def _gate_threshold(self) -> float:
        if self.gate_threshold is not None:
            return self.gate_threshold
        return self.resources.verifier.gate_threshold


def _refused(verdict: PolicyVerdict) -> Decision:
    return Decision(False, None, "policy", 0.0, f"{verdict.rule}: {verdict.reason}")
