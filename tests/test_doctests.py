"""The docstring examples of the replay, curve and figure modules run as doctests."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "cacheeval.cache",
    "cacheeval.metrics.curves",
    "cacheeval.metrics.replay",
    "cacheeval.replay",
    "cacheeval.shared_baselines",
    "cacheeval.plotdata",
    "cacheeval.server.charts",
]


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0, f"{name} has no examples"
    assert result.failed == 0
