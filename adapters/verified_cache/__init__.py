"""The verified cache: an accuracy-first reference prompt cache.

A stored answer is served only when every tier agrees the new request needs
exactly that answer: the **policy** tier (never mutations, live data, creative
writing, per-user data, or answers across system prompts), an **exact** match,
an **embedding** recall gate (MiniLM on ONNX Runtime), and a **verifier** - a
LightGBM model over the embedding's similarities and features of what differs
between the two requests, monotone in every one of them, so that it follows the
embedding unless a detected difference vetoes the hit - whose P(HIT) must clear
a threshold certified so that the Clopper-Pearson 95% upper bound of the
false-hit rate on held-out data is <= 5%.

Modules: :mod:`.cache` (the cache: ``put``/``get``/``lookup``), :mod:`.store`
(its entries: exact map, LRU/TTL eviction, SQLite persistence, locking) and
:mod:`.index` (per-scope nearest neighbours: brute force, then faiss HNSW; see
docs/verified-cache.md), :mod:`.policy`,
:mod:`.features` (pure feature extractors), :mod:`.model` (training, inference,
Clopper-Pearson), :mod:`.adapter` (the ``Pair -> Verdict`` harness adapter),
:mod:`.training` (the leakage-free training pipeline). ``model/`` holds the
committed verifier (``verifier.txt``) and its ``meta.json``;
``scripts/train_verified_cache.py`` rebuilds it deterministically.

Example::

    from adapters.verified_cache import Request, VerifiedCache

    cache = VerifiedCache()
    cache.put("Solve x + 2 = 8", "x = 6")
    cache.get("solve x+2=8")        # "x = 6"
    cache.get("Solve a + 2 = 8")    # None: the answer names the variable
"""

from __future__ import annotations

from cacheeval.schema import Request

from .cache import Decision, PutResult, Resources, VerifiedCache
from .entry_db import StoreInUse

__all__ = ["Decision", "PutResult", "Request", "Resources", "StoreInUse", "VerifiedCache"]
