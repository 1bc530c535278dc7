"""Doctest collection of this package: a module whose framework is not installed
is left out (each imports GPTCache or LangChain at its top)."""

from __future__ import annotations

import importlib.util

collect_ignore = [
    module
    for module, package in (
        ("gptcache_evaluation.py", "gptcache"),
        ("langchain_cache.py", "langchain_core"),
    )
    if importlib.util.find_spec(package) is None
]
