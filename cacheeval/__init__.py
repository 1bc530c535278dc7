"""CacheEval: a pair-equivalence benchmark for LLM prompt caches.

The public API::

    from cacheeval import evaluate, load_bench, Verdict, Pair

    def my_cache(pair: Pair) -> Verdict:
        ...

    report = evaluate(my_cache, load_bench("cachebench.jsonl", split="dev"))
"""

from __future__ import annotations

from .version import __version__ as _version

# Bound before the imports below: cacheeval.report still reads it from the package.
__version__ = _version

from .cache import Cache  # noqa: E402
from .dataset import iter_bench, load_bench  # noqa: E402
from .harness import evaluate, predict, score  # noqa: E402
from .report import Report  # noqa: E402
from .schema import Pair, Request, Verdict  # noqa: E402

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
