"""CacheEval: a pair-equivalence benchmark for LLM prompt caches.

The public API::

    from cacheeval import evaluate, load_bench, Verdict, Pair

    def my_cache(pair: Pair) -> Verdict:
        ...

    report = evaluate(my_cache, load_bench("cachebench.jsonl", split="dev"))
"""

from __future__ import annotations

from .cache import Cache
from .dataset import iter_bench, load_bench
from .reporting.report import Report
from .run.harness import evaluate, predict, score
from .schema import Pair, Request, Verdict
from .version import __version__ as __version__

__all__ = [
    "Cache",
    "Pair",
    "Report",
    "Request",
    "Verdict",
    "evaluate",
    "iter_bench",
    "load_bench",
    "predict",
    "score",
]
