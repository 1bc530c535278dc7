"""The one never-cache detector (cacheeval.verify.never_cache): what it refuses
and allows, and that the verified cache's policy tier asks the same rules (its
decisions did not change when the rules moved into the core)."""

from __future__ import annotations

import pytest

from cacheeval.dataset import iter_bench
from cacheeval.schema import Request
from cacheeval.verify.never_cache import request_policy
from tests.conftest import REPO_ROOT


@pytest.mark.parametrize(
    ("request_", "rule"),
    [
        (Request("Write a haiku about the first snow."), "creative"),
        (Request("Can you come up with a catchy slogan for my bakery?"), "creative"),
        (Request("Tell me a joke about accountants."), "creative"),
        (Request("What's the weather in Lisbon right now?"), "time_sensitive"),
        (Request("AAPL stock price"), "time_sensitive"),
        (Request("Convert 100 dollars to euros"), "time_sensitive"),
        (Request("Any news about the election?"), "time_sensitive"),
        (Request("What's my balance?", system_prompt="Bank helper. Member: Chloe Dubois"),
         "personal_data"),
        (Request("Send $50 to Ana", tools=({"name": "send_money"},)), "mutation"),
        (Request("Cancel my reservation", tools=({"name": "cancel_booking"},)), "mutation"),
    ],
)  # fmt: skip
def test_refused(request_: Request, rule: str) -> None:
    verdict = request_policy(request_)
    assert not verdict.allowed and verdict.rule == rule and verdict.reason


@pytest.mark.parametrize(
    "request_",
    [
        Request("How do I reverse a list in Python?"),
        Request("What is the capital of Australia?"),
        Request("The Nasdaq closed 10.73 points higher on Friday, reports said."),
        # without a tool the model can only draft text: nothing is mutated
        Request("Cancel my reservation"),
        Request("How do I write a good cover letter?"),
    ],
)
def test_allowed(request_: Request) -> None:
    assert request_policy(request_).allowed


def test_the_verified_cache_asks_the_same_rules() -> None:
    from adapters.verified_cache.policy import request_policy as cache_policy

    seen = refused = 0
    for row in iter_bench(REPO_ROOT / "cachebench.jsonl", split=("train", "dev")):
        for side in ("a", "b"):
            request = row.request(side)
            if request.tools:  # the cache adds its tool-intent rule ('declared')
                continue
            core, cache = request_policy(request), cache_policy(request)
            assert (core.allowed, core.rule, core.reason) == (
                cache.allowed,
                cache.rule,
                cache.reason,
            ), request
            seen += 1
            refused += not core.allowed
    assert seen > 1000 and refused > 100
