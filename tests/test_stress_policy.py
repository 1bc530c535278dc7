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
        (Request("When is my first meeting?",
                 system_prompt="You are the scheduling assistant for Lukas Brenner."),
         "personal_data"),
        (Request("What can I eat?", system_prompt="You are the ordering assistant for Saffron "
                 "Table. Guest profile: Grace Whitfield; diet: vegetarian."), "personal_data"),
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
        # an assistant for a named business serves everyone, not one user
        Request("Do I need a visa for Japan?",
                system_prompt="You are a travel assistant for Acme Air."),
        Request("How do I reset my PIN?",
                system_prompt="You are the support assistant for Aurora Bank customers."),
    ],
)  # fmt: skip
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


# --- declared: the offered tool the query asks for declares a never-cache policy ----

TIMER = {"name": "set_timer", "description": "Start a countdown timer.", "policy": "mutation"}
UNITS = {
    "name": "convert_units",
    "policy": "cacheable",
    "description": "Convert a measurement from one unit to another of the same kind.",
}
MONEY = {
    "name": "convert_currency",
    "policy": "time_sensitive",
    "description": "Convert an amount of money at the current exchange rate.",
}
FLIGHTS = {
    "type": "function",
    "function": {
        "name": "search_flights",
        "policy": "time_sensitive",
        "description": "Search flights. Airports are IATA codes.",
    },
}
REMIND = {
    "name": "create_reminder",
    "policy": "mutation",
    "description": "Create a reminder for the user at a date and optional time.",
}
NAMED = {"name": "set_timer"}  # declares nothing: the name's verb alone is no mutation


@pytest.mark.parametrize(
    ("query", "tools", "rule", "tool"),
    [
        ("Set a timer for 45 minutes for the lasagna", (TIMER, UNITS), "mutation", "set_timer"),
        # the agent noun meets the verb: reminder -> remind
        ("Remind me at 8 pm to take my medication", (REMIND, UNITS), "mutation",
         "create_reminder"),
        # live data is refused when asked as a question, too
        ("Any flights from Chicago to Toronto tomorrow?", (FLIGHTS, UNITS), "time_sensitive",
         "search_flights"),
    ],
)  # fmt: skip
def test_declared_refuses_the_tool_the_query_asks_for(
    query: str, tools: tuple[dict[str, object], ...], rule: str, tool: str
) -> None:
    verdict = request_policy(Request(query, tools=tools))
    assert not verdict.allowed and verdict.rule == rule
    assert verdict.reason == f"asks for {tool}, whose definition declares {rule}"


@pytest.mark.parametrize(
    ("query", "tools"),
    [
        # the benchmark's side a of cb-tool-0009: answered directly, no call
        ("How many hours is 90 minutes?", (TIMER, UNITS)),
        # a question about an action does not ask a device tool to act
        ("How do I set a timer on my phone?", (TIMER, UNITS)),
        # a tie with a cacheable tool ("convert") is not a never-cache request
        ("Convert 10 km to miles", (MONEY, UNITS)),
        # the same request without the declared tool, or with one that declares nothing
        ("Set a timer for 45 minutes", (UNITS,)),
        ("Set a timer for 45 minutes", (NAMED,)),
        ("Set a timer for 45 minutes", ()),
    ],
)  # fmt: skip
def test_declared_allows(query: str, tools: tuple[dict[str, object], ...]) -> None:
    assert request_policy(Request(query, tools=tools or None)).allowed


def test_declared_agrees_with_the_benchmarks_resolved_calls() -> None:
    """On every side of a benchmark tool row whose resolved call is known, the
    request is never cached exactly when that call's tool declares a never-cache
    policy: the core agrees on at least 90% of them (424 sides when written:
    400 agree; before the rule, 313), and refuses few that the benchmark serves."""
    from cacheeval.verify.never_cache import NEVER_CACHE_POLICIES, declared_policy, tool_name

    agree = total = false_refusals = 0
    for row in iter_bench(REPO_ROOT / "cachebench.jsonl", split=("train", "dev")):
        payload = row.verification_payload if isinstance(row.verification_payload, dict) else {}
        for side in ("a", "b"):
            request = row.request(side)
            if not request.tools or f"call_{side}" not in payload:
                continue
            call = payload[f"call_{side}"]
            policies = {tool_name(t): declared_policy(t) for t in request.tools}
            truth = bool(call) and policies.get(call["name"]) in NEVER_CACHE_POLICIES
            refused = not request_policy(request).allowed
            total += 1
            agree += truth == refused
            false_refusals += refused and not truth
    assert total > 200
    assert agree / total >= 0.90 and false_refusals / total <= 0.03


def test_declared_reads_a_swapped_letter_but_not_another_word() -> None:
    alarm = {
        "name": "set_alarm",
        "policy": "mutation",
        "description": "Create an alarm on the user's phone at a clock time.",
    }
    lights = {"name": "set_lights", "policy": "mutation",
              "description": "Turn the lights of one room on or off."}  # fmt: skip
    refused = request_policy(Request("Set an alram for 5:45 pm labeled gym", tools=(alarm,)))
    assert not refused.allowed and refused.rule == "mutation" and "set_alarm" in refused.reason
    # one letter changed is another word: nights are not lights
    assert request_policy(Request("Good nights to visit Tokyo", tools=(lights,))).allowed
