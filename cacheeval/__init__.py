"""CacheEval: a pair-equivalence benchmark for LLM prompt caches."""

from __future__ import annotations

__version__ = "0.1.0"
