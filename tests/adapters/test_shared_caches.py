"""The reference caches as shared caches for ``cacheeval replay``: GPTCache with
ONE real store (SQLite + faiss) for every entry, its fast path, and the
verified cache's own put/lookup."""

from __future__ import annotations

from typing import Any

import pytest

from adapters.gptcache_adapter import embed_text
from adapters.gptcache_shared import GPTCacheShared
from adapters.verified_cache.cache import VerifiedCache
from adapters.verified_cache.shared import VerifiedShared
from cacheeval.replay.engine import replay
from cacheeval.replay.report import build_replay_report
from cacheeval.schema import Request, Row


class CountingGPTCache(GPTCacheShared):
    """GPTCacheShared that reads its SQLite question table just before it closes."""

    counted: int | None = None

    def close(self) -> None:
        if self.path == "real":
            self.counted = self.stored_questions()
        super().close()


def test_one_real_store_holds_every_entry(dozen_rows: list[Row], no_network: Any) -> None:
    real = CountingGPTCache(path="real")
    run_real = replay(real, dozen_rows, latency_sizes=())
    # 12 entries (six distinct texts, each stored twice) in ONE SQLite table.
    assert real.counted == len(dozen_rows) == 12
    fast = CountingGPTCache(path="fast")
    run_fast = replay(fast, dozen_rows, latency_sizes=())
    real_view = [(r.row_id, r.entry_row, r.outcome, r.candidate_outcome) for r in run_real.lookups]
    fast_view = [(r.row_id, r.entry_row, r.outcome, r.candidate_outcome) for r in run_fast.lookups]
    assert real_view == fast_view
    for a, b in zip(run_real.lookups, run_fast.lookups, strict=True):
        assert a.score == pytest.approx(b.score, abs=1e-6)
        assert (a.candidate_score is None) == (b.candidate_score is None)
    # every paraphrase is served its own partner at 0.80 (cos >= 0.60)
    assert sum(r.outcome == "valid" for r in run_real.lookups) == 6


def test_real_store_grows_with_puts_and_retrieves_top1(no_network: Any) -> None:
    cache = GPTCacheShared(path="real")
    try:
        cache.put(Request("How do I reset my password?"), "e000000")
        cache.put(Request("What is the capital of France?"), "e000001")
        cache.put(Request("Best hiking trails near Denver"), "e000002")
        assert cache.stored_questions() == 3
        found, score = cache.lookup(Request("What's the capital city of France?"))
        assert found == "e000001" and 0.8 < score <= 1.0
        assert cache.lookup(Request("Explain how vaccines train the immune system"))[0] is None
        near, near_score = cache.nearest(Request("Explain how vaccines train the immune system"))
        assert near in {"e000000", "e000001", "e000002"} and near_score < 0.8
    finally:
        cache.close()
    assert cache.sqlite_path is None  # the temporary directory is gone


def test_embed_text_and_bad_arguments() -> None:
    r = Request("And Spain?", ({"role": "user", "content": "Capital of France?"},), "Be brief.")
    assert embed_text(r, "query") == "And Spain?"
    assert embed_text(r, "full") == "system: Be brief.\nuser: Capital of France?\nuser: And Spain?"
    with pytest.raises(ValueError):
        GPTCacheShared(path="slow")
    with pytest.raises(ValueError):
        GPTCacheShared(embed="half")
    assert GPTCacheShared(config="minilm@0.95").threshold == 0.95


def test_verified_cache_shared(dozen_rows: list[Row], no_network: Any) -> None:
    cache = VerifiedShared()
    run = replay(cache, dozen_rows, latency_sizes=())
    report = build_replay_report(run)
    c = report.counts
    assert c.n == 12 and c.n_servable == 6
    assert c.fired_miss == 0  # none of the six unrelated requests is served
    assert c.valid == c.fired >= 4  # what it serves is the row's own partner
    assert report.errors.n_lookup_errors == 0 and report.errors.n_put_errors == 0
    assert len(cache) == 0  # close() empties the store
    # Pair mode with the same cache class (one entry per row) serves the same rows:
    # here each lookup's nearest entries are its own side a's two copies.
    resources = cache.cache.resources
    pair_hits = set()
    for row in dozen_rows:
        one = VerifiedCache(resources=resources)
        one.put(row.request("a"), "x")
        if one.lookup(row.request("b")).hit:
            pair_hits.add(row.id)
    assert {r.row_id for r in run.lookups if r.outcome != "none"} == pair_hits
