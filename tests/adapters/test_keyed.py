"""``--keyed``: refusals by context and policy at score 0.0, everything else
the wrapped cache's own verdict, for pair and shared caches, in process and
on the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from adapters import keyed
from cacheeval.cli import main
from cacheeval.commands import _running
from cacheeval.schema import Pair, Request, Verdict
from tests.conftest import MINI_BENCH, MINI_LABELS


def always(pair: Pair) -> Verdict:
    return Verdict(is_hit=True, confidence=0.7, tier_used="embedding", score=0.93)


def test_a_context_difference_is_refused_at_score_zero() -> None:
    cache = keyed.Keyed(always)
    q = "How do I reset my password?"
    cases = {
        "system prompt": (Request(q, None, "You help Ana."), Request(q, None, "You help Ben.")),
        "prior turns": (
            Request(q, ({"role": "user", "content": "I use the iOS app"},)),
            Request(q, ({"role": "user", "content": "I use the web app"},)),
        ),
        "tools": (
            Request(q, tools=({"name": "lookup_user"},)),
            Request(q, tools=({"name": "reset_password"},)),
        ),
    }
    for what, (a, b) in cases.items():
        v = cache(Pair("p1", a, b))
        assert (v.is_hit, v.score, v.tier_used) == (False, 0.0, "key"), what


def test_canonically_equal_context_is_passed_to_the_wrapped_cache() -> None:
    cache = keyed.Keyed(always)
    a = Request("reset my password", ({"role": "user", "content": "Hi  there"},), " Be brief.")
    b = Request(
        "How do I reset my password?", ({"role": "USER", "content": "hi there"},), "be BRIEF."
    )
    v = cache(Pair("p1", a, b))
    assert v == always(Pair("p1", a, b))  # its verdict and score, untouched


def test_the_policy_tier_is_the_verified_caches_own() -> None:
    from adapters.verified_cache.policy import request_policy

    cache = keyed.Keyed(always)
    a, b = Request("Write a haiku about the sea"), Request("write a haiku about the sea!")
    assert not request_policy(b).allowed  # the same detector says no ...
    v = cache(Pair("p1", a, b))
    assert (v.is_hit, v.score, v.tier_used) == (False, 0.0, "policy")  # ... and so does --keyed


def test_the_name_and_hooks_follow_the_wrapped_cache() -> None:
    class Inner:
        name = "inner"
        cost_per_call_usd = {"embedding": 0.001}

        def __init__(self) -> None:
            self.prepared = 0
            self.closed = False

        def prepare(self, pairs: list[Pair]) -> None:
            self.prepared = len(pairs)

        def close(self) -> None:
            self.closed = True

        def __call__(self, pair: Pair) -> Verdict:
            return always(pair)

    inner = Inner()
    cache = keyed.Keyed(inner)
    cache.prepare([Pair("p1", Request("a"), Request("b"))])
    cache.close()
    assert (cache.name, inner.prepared, inner.closed) == ("inner+keyed", 1, True)
    assert cache.cost_per_call_usd == {"embedding": 0.001, "key": 0.0, "policy": 0.0}
    assert not hasattr(keyed.Keyed(always), "prepare")


def test_a_shared_cache_never_serves_an_entry_across_context() -> None:
    class Store:
        def __init__(self) -> None:
            self.entries: list[tuple[Request, str]] = []

        def put(self, request: Request, answer_id: str) -> None:
            self.entries.append((request, answer_id))

        def lookup(self, request: Request) -> tuple[str | None, float]:
            return self.entries[0][1], 0.9  # always its first entry

    shared = keyed.KeyedShared(Store())
    shared.put(Request("capital of France?", None, "You help Ana."), "e1")
    assert shared.lookup(Request("capital of France?", None, "You help Ana.")) == ("e1", 0.9)
    assert shared.lookup(Request("capital of France?", None, "You help Ben.")) == (None, 0.0)


def test_the_command_line_names_the_loaders_of_the_module() -> None:
    # the scoring core names them as strings (it never imports the reference caches)
    assert _running.KEYED_LOADER == keyed.KEYED_LOADER
    assert _running.KEYED_SHARED_LOADER == keyed.KEYED_SHARED_LOADER


@pytest.mark.parametrize("mode", [(), ("--in-process",)])
def test_keyed_on_the_command_line(tmp_path: Path, mode: tuple[str, ...]) -> None:
    out = tmp_path / "r.json"
    args = ["eval", "--bench", str(MINI_BENCH), "--labels", str(MINI_LABELS), "--baseline",
            "always_hit", "--out", str(tmp_path / "r.md"), "--json", str(out)]  # fmt: skip
    assert main(args) == 0
    plain = json.loads(out.read_text(encoding="utf-8"))
    assert main([*args, "--keyed", *mode]) == 0
    report = json.loads(out.read_text(encoding="utf-8"))
    tiers = {t["tier"]: t["count"] for t in report["tiers"]}
    assert tiers.get("key", 0) > 0 and tiers.get("policy", 0) > 0
    assert report["provenance"]["cache_name"] == "always_hit+keyed"
    # the key only refuses: it serves fewer wrong answers, never more
    assert report["confusion"]["fp"] < plain["confusion"]["fp"]
    assert report["confusion"]["tp"] <= plain["confusion"]["tp"]


def test_keyed_predictions_equal_running_the_cache_wrapped(mini_rows: list) -> None:  # type: ignore[type-arg]
    from cacheeval.baselines import AlwaysHit, ExactMatch
    from cacheeval.run.harness import predict

    for inner in (ExactMatch(), AlwaysHit()):
        derived = keyed.keyed_predictions(mini_rows, predict(inner, mini_rows))
        wrapped = predict(keyed.Keyed(inner), mini_rows)
        assert [(p.is_hit, p.score, p.tier_used) for p in derived] == [
            (p.is_hit, p.score, p.tier_used) for p in wrapped
        ]
