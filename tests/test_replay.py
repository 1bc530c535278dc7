"""Shared-cache replay: outcomes and metrics on tiny hand-computed stores, the
seeded orders, what the cache sees, failing caches, the shared baselines and
the ``cacheeval replay`` command."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from cacheeval.cache import SharedCache
from cacheeval.cli import main
from cacheeval.metrics.replay import (
    ReplayCounts,
    best_replay_point,
    replay_counts,
    replay_curve,
    replay_p_chr_auc,
    replay_rates,
)
from cacheeval.replay.engine import lookup_truths, replay
from cacheeval.replay.report import build_replay_report
from cacheeval.replay.shared_baselines import SharedAlwaysHit, SharedAlwaysMiss, SharedExactMatch
from cacheeval.schema import Request, Row

from .conftest import MINI_BENCH, MINI_LABELS, make_row


class TableCache:
    """A deterministic shared cache for hand-computed stores: the lookup of a
    query serves the entry stored for ``serve[query]`` with ``score[query]``."""

    name = "table"

    def __init__(self, serve: dict[str, str | None], score: dict[str, float]) -> None:
        self.serve, self.score = serve, score
        self.by_query: dict[str, str] = {}
        self.seen: list[object] = []

    def put(self, request: Request, answer_id: str) -> None:
        self.seen += [request, answer_id]
        self.by_query.setdefault(request.query, answer_id)

    def lookup(self, request: Request) -> tuple[str | None, float]:
        self.seen.append(request)
        target = self.serve.get(request.query)
        return (None if target is None else self.by_query[target]), self.score.get(
            request.query, 0.0
        )


def row(i: int, label: str, a: str, b: str, **kw: object) -> Row:
    return make_row(i, label, query_a=a, query_b=b, **kw)


# R1 HIT served its own partner (valid); R2 HIT served R3's entry (wrong entry,
# unjudged); R3 MISS served its own partner (a false hit on a MISS row); R4 MISS
# served nothing.
STORE = [
    row(1, "EQUIV", "What is the capital of France?", "capital of france?"),
    row(2, "PARA_SAFE", "How tall is Everest?", "Everest height?"),
    row(3, "RELATED_UNSAFE", "How tall is K2?", "How tall is K2 in feet?"),
    row(4, "UNRELATED", "Tell me a joke", "What is 2+2?"),
]
SERVE = {
    "capital of france?": "What is the capital of France?",
    "Everest height?": "How tall is K2?",
    "How tall is K2 in feet?": "How tall is K2?",
    "What is 2+2?": None,
}
SCORE = {"capital of france?": 0.9, "Everest height?": 0.8, "How tall is K2 in feet?": 0.7}


def outcomes(run) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {r.row_id: r.outcome for r in run.lookups}


def test_hand_computed_store() -> None:
    run = replay(TableCache(SERVE, SCORE), STORE, latency_sizes=())
    assert outcomes(run) == {
        "cb-qa_factual-0001": "valid",
        "cb-qa_factual-0002": "unjudged",
        "cb-qa_factual-0003": "partner",
        "cb-qa_factual-0004": "none",
    }
    report = build_replay_report(run)
    c, r = report.counts, report.rates
    assert (c.n, c.n_servable, c.fired, c.valid, c.partner, c.wrong_entry, c.unjudged) == (
        4, 2, 3, 1, 1, 0, 1,
    )  # fmt: skip
    assert r.chr.value == 3 / 4 and r.vchr.value == 1 / 4
    assert r.precision.value == 1 / 3  # VCHR / CHR
    assert r.fhr.value == 1 / 2  # R3 fired, R4 did not
    assert r.fhr_judged.value == 1 / 2  # R3's fire is on its own partner: judged
    assert r.wrong_entry_rate.value == 1 / 4 and r.unjudged_rate.value == 1 / 4
    assert r.recall.value == 1 / 2
    # candidates 0.9 valid, 0.8 unjudged, 0.7 partner: 1/4 (1 + 1/2 + 1/3)
    assert report.p_chr_auc == pytest.approx((1 + 1 / 2 + 1 / 3) / 4)
    strict = report.operating_points[1]
    assert strict.alpha == 0.01 and strict.threshold == 0.9 and strict.precision == 1.0


def test_labelled_miss_pair_judges_an_entry_wrong() -> None:
    # Another labelled row says "How tall is K2?" must not answer "Everest height?".
    judge = row(9, "RELATED_UNSAFE", "How tall is K2?", "Everest height?", split="dev")
    run = replay(TableCache(SERVE, SCORE), STORE, judgements=[*STORE, judge], latency_sizes=())
    assert outcomes(run)["cb-qa_factual-0002"] == "wrong_entry"
    c = build_replay_report(run).counts
    assert (c.wrong_entry, c.unjudged) == (1, 0)


def test_copy_of_the_request_is_acceptable_unless_policy() -> None:
    rows = [
        row(1, "ADVERSARIAL", "Who was the first man on the Moon?",
            "Who was the second man on the Moon?"),
        row(2, "EQUIV", "Who was the second man on the Moon?",
            "who was the second  man on the moon?"),
        row(3, "EQUIV", "Write a poem about rain", "Write a poem about snow",
            verification_method="policy_no_cache"),
        row(4, "EQUIV", "Write a poem about snow", "write a poem about snow",
            verification_method="policy_no_cache"),
    ]  # fmt: skip
    run = replay(SharedExactMatch(), rows, latency_sizes=())
    got = outcomes(run)
    # R1 is MISS, but the store holds the very request it asks: serving it is right.
    assert got["cb-qa_factual-0001"] == "valid"
    assert got["cb-qa_factual-0002"] == "valid"
    # Creative output is never served, even for a verbatim repeat.
    assert got["cb-qa_factual-0003"] == "wrong_entry"
    assert got["cb-qa_factual-0004"] == "partner"
    counts = build_replay_report(run).counts
    assert counts.n_servable == 2 and counts.fired_miss == 2


def test_truths_from_labelled_pairs() -> None:
    by_key = {r.request("a").key(): {f"e{i}"} for i, r in enumerate(STORE)}
    truths = lookup_truths(STORE, by_key, STORE)
    assert truths["cb-qa_factual-0001"].acceptable == {"e0"}
    assert truths["cb-qa_factual-0003"].acceptable == frozenset()
    assert truths["cb-qa_factual-0003"].judged_wrong == {"e2"}


def test_metric_functions_on_a_tiny_curve() -> None:
    points = replay_curve([0.9, 0.8, 0.7, None], ["valid", "unjudged", "partner", "none"],
                          [True, True, False, False])  # fmt: skip
    assert [(p.fired, p.valid, p.fired_miss, p.wrong_entry) for p in points] == [
        (1, 1, 0, 0), (2, 1, 0, 1), (3, 1, 1, 1),
    ]  # fmt: skip
    assert replay_p_chr_auc(points, 4) == pytest.approx(0.25 + 0.125 + 0.25 / 3)
    loose = best_replay_point(points, 4, 2, 0.5)  # one false fire of two allowed
    assert loose.threshold == 0.9  # 0.7 adds a false fire and no valid one
    assert best_replay_point([], 4, 2, 0.05).threshold is None
    with pytest.raises(ValueError):
        replay_counts(["valid"], [False])
    with pytest.raises(ValueError):
        replay_counts(["maybe"], [True])
    empty = replay_rates(ReplayCounts(0, 0, 0, 0, 0, 0, 0, 0, 0))
    assert empty.chr.value is None and empty.precision.value is None


def test_the_cache_sees_requests_and_opaque_ids_only() -> None:
    cache = TableCache(SERVE, SCORE)
    replay(cache, STORE, latency_sizes=())
    requests = [x for x in cache.seen if not isinstance(x, str)]
    ids = [x for x in cache.seen if isinstance(x, str)]
    assert requests and all(type(x) is Request for x in requests)
    assert ids and all(re.fullmatch(r"e\d{6}", x) for x in ids)
    texts = {x.query for x in requests}  # type: ignore[union-attr]
    assert texts == {r.query_a for r in STORE} | {r.query_b for r in STORE}


def test_orders_are_seeded() -> None:
    rows = [row(i, "EQUIV", f"question {i}?", f"Question {i}") for i in range(1, 30)]

    def puts(seed: int) -> list[str]:
        cache = SharedExactMatch()
        order: list[str] = []
        original = cache.put

        def put(request: Request, answer_id: str) -> None:
            order.append(request.query)
            original(request, answer_id)

        cache.put = put  # type: ignore[method-assign]
        run = replay(cache, rows, seed=seed, latency_sizes=())
        return order + [r.row_id for r in run.lookups]

    assert puts(3) == puts(3)
    assert puts(3) != puts(4)


class Broken:
    """A shared cache that fails in every way a user's cache can."""

    def __init__(self) -> None:
        self.calls = 0

    def put(self, request: Request, answer_id: str) -> None:
        if request.query.startswith("Tell"):
            raise RuntimeError("disk full")

    def lookup(self, request: Request) -> object:
        self.calls += 1
        if request.query.startswith("capital"):
            raise ValueError("boom")
        if request.query.startswith("Everest"):
            return ("not-an-entry", 0.5)
        if request.query.startswith("How tall"):
            return ("e000000", float("inf"))
        return "garbage"


def test_a_failing_cache_gives_error_lookups_not_a_crash() -> None:
    report = build_replay_report(replay(Broken(), STORE, latency_sizes=()))
    assert report.errors.n_lookup_errors == 4
    assert report.errors.n_put_errors == 1 and "disk full" in str(report.errors.first_put_error)
    assert report.counts.fired == 0
    text = " ".join(report.errors.examples)
    for needle in ("ValueError: boom", "unknown answer id", "score is inf", "returned str"):
        assert needle in text


def test_a_hanging_cache_times_out_and_stops_being_called() -> None:
    import threading

    release = threading.Event()

    class Hangs(SharedExactMatch):
        def lookup(self, request: Request) -> tuple[str | None, float]:
            release.wait(5)
            return None, 0.0

    try:
        run = replay(Hangs(), STORE, latency_sizes=(), timeout_ms=50)
    finally:
        release.set()
    errors = [r.error for r in run.lookups]
    assert errors[0] == "timeout after 50 ms"
    assert all(e is not None and e.startswith("NotRun") for e in errors[1:])


def test_latency_is_probed_as_the_store_grows() -> None:
    rows = [row(i, "EQUIV", f"question {i}?", f"Question {i}") for i in range(1, 41)]
    run = replay(SharedAlwaysHit(), rows, latency_sizes=(10, 25, 400), n_probes=7)
    assert [(s.n_entries, len(s.latencies_ms)) for s in run.stages] == [
        (10, 7), (25, 7), (40, 40),
    ]  # fmt: skip
    report = build_replay_report(run)
    assert [x.n_entries for x in report.latency] == [10, 25, 40]
    assert report.put_latency.n == 40


def test_shared_baselines() -> None:
    for cache in (SharedExactMatch(), SharedAlwaysHit(), SharedAlwaysMiss()):
        assert isinstance(cache, SharedCache)
    miss = build_replay_report(replay(SharedAlwaysMiss(), STORE, latency_sizes=()))
    assert miss.counts.fired == 0 and miss.p_chr_auc == 0.0
    hit = build_replay_report(replay(SharedAlwaysHit(), STORE, latency_sizes=()))
    assert hit.counts.fired == 4 and hit.rates.fhr.value == 1.0
    # Word-set Jaccard: R1, R2 and R3 find their own side a; "What is 2+2?"
    # {what, is, 2} shares 2 of 7 words with R1's side a and none with the others.
    c = hit.counts
    assert (c.valid, c.partner, c.unjudged) == (2, 1, 1)
    exact = build_replay_report(replay(SharedExactMatch(), STORE, latency_sizes=()))
    assert exact.counts.fired == 0  # no side b is a verbatim copy of a side a


def test_unlabelled_rows_are_refused() -> None:
    import dataclasses

    hidden = dataclasses.replace(
        make_row(1, query_a="a", query_b="b"), label=None, binary_label=None
    )
    with pytest.raises(ValueError, match="no label"):
        replay(SharedExactMatch(), [hidden])


# --- the command ---------------------------------------------------------------------


def test_replay_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    md, js = tmp_path / "r.md", tmp_path / "r.json"
    code = main(["replay", "--bench", str(MINI_BENCH), "--labels", str(MINI_LABELS),
                 "--split", "train", "--baseline", "exact_match", "--distractors", "3",
                 "--out", str(md), "--json", str(js)])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    data = json.loads(js.read_text())
    assert data["cacheeval_replay"] == "1.1"
    prov = data["provenance"]
    assert prov["splits"] == ["train"] and prov["n_distractors"] == 3
    assert prov["n_entries"] == prov["n_rows"] + 3
    assert "## Lookup latency as the store grows" in md.read_text()
    assert "exact_match:" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--split", "test"], "hidden test rows"),
        (["--split", "train", "--distractors", "999"], "--distractors 999"),
        (["--split", "train", "--cache-module", "no.such.module"], "no.such.module"),
    ],
)
def test_replay_command_usage_errors(
    args: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = [] if "--cache-module" in args else ["--baseline", "exact_match"]
    code = main(["replay", "--bench", str(MINI_BENCH), *args, *cache,
                 "--out", str(tmp_path / "r.md")])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
