"""Comparable latency (issue 30, item 4): ``prepare()`` time per row beside the
per-call time, and the cold single-call probe every ``eval`` report carries."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cacheeval.cli import main
from cacheeval.dataset import load_bench
from cacheeval.metrics.latency import ColdProbe, PrepareTime
from cacheeval.reporting.latency_text import ms
from cacheeval.reporting.report import REPORT_VERSION, Report
from cacheeval.run.blockrun import CacheSpec
from cacheeval.run.probe import PROBE_CALLS, probe_pairs, run_probe
from cacheeval.run.wire import WireError, prepare_ms
from tests.conftest import MINI_BENCH, MINI_LABELS, REPO_ROOT

#: ``Embedding`` does its work in prepare() (200 ms) and loads a "model" on
#: its first call (300 ms); ``Strict`` fails every call made after prepare(),
#: so a probe that prepared would show errors.
CACHE_FILE = """
import time
from cacheeval.schema import Verdict

class Embedding:
    def __init__(self):
        self.loaded = False
        self.memo = {}

    def prepare(self, pairs):
        time.sleep(0.2)
        for p in pairs:
            self.memo[p.id] = p.a.query == p.b.query

    def __call__(self, pair):
        if not self.loaded:
            time.sleep(0.3)
            self.loaded = True
        hit = self.memo.get(pair.id, pair.a.query == pair.b.query)
        return Verdict(is_hit=hit, confidence=1.0, tier_used="embedding", score=float(hit))

class Strict(Embedding):
    def prepare(self, pairs):
        self.prepared = True

    def __call__(self, pair):
        if getattr(self, "prepared", False):
            raise RuntimeError("prepared before the probe")
        return Verdict(is_hit=False, confidence=1.0, tier_used="embedding", score=0.0)

class Broken:
    def __call__(self, pair):
        raise ValueError("no model")
"""


@pytest.fixture
def cache_file(tmp_path: Path) -> Path:
    path = tmp_path / "embedding_cache.py"
    path.write_text(CACHE_FILE, encoding="utf-8")
    return path


def _eval_report(tmp_path: Path, cache_file: Path, *extra: str) -> Report:
    js = tmp_path / "r.json"
    argv = ["eval", "--bench", str(MINI_BENCH), "--labels", str(MINI_LABELS),
            "--cache-module", str(cache_file), "--cache-class", "Embedding",
            "--out", str(tmp_path / "r.md"), "--json", str(js), *extra]  # fmt: skip
    assert main(argv) == 0
    return Report.from_dict(json.loads(js.read_text(encoding="utf-8")))


def test_eval_reports_prepare_time_and_a_cold_probe(tmp_path: Path, cache_file: Path) -> None:
    r = _eval_report(tmp_path, cache_file)
    p = r.prepare
    assert p is not None and p.has_prepare and p.processes == 1 and p.n_rows == 32
    assert p.total_ms >= 200.0  # the sleep in prepare(), timed in the cache process
    assert p.per_row_ms == pytest.approx(p.total_ms / 32)
    assert r.latency.mean_ms is not None
    assert p.per_row_with_call_ms == pytest.approx(p.per_row_ms + r.latency.mean_ms)
    c = r.cold_probe
    assert c is not None and c.error is None and c.n_calls == PROBE_CALLS
    assert c.start_ms is not None and c.start_ms > 0
    # the first call loads the "model"; the next ones, on new pairs, do not
    assert c.first_call_ms is not None and c.first_call_ms >= 300.0
    assert c.next_call_ms is not None and c.next_call_ms < 300.0
    md = (tmp_path / "r.md").read_text(encoding="utf-8")
    latency = md[md.index("## Latency") : md.index("## Cost")]
    assert f"for 32 rows = {ms(p.per_row_ms)} ms per row" in latency
    assert f"its first call on a new pair took {ms(c.first_call_ms)} ms" in latency
    assert json.loads((tmp_path / "r.json").read_text())["cacheeval_report"] == REPORT_VERSION


def test_prepare_time_in_process_and_on_workers(tmp_path: Path, cache_file: Path) -> None:
    here = _eval_report(tmp_path, cache_file, "--in-process", "--no-probe")
    assert here.prepare is not None and here.prepare.processes == 1
    assert here.prepare.total_ms >= 200.0
    assert here.cold_probe is None  # --no-probe
    two = _eval_report(tmp_path, cache_file, "--workers", "2", "--no-probe")
    assert two.prepare is not None and two.prepare.processes == 2
    assert two.prepare.total_ms >= 400.0  # each process prepared its own shard


def test_a_cache_without_prepare_costs_nothing_there(tmp_path: Path) -> None:
    js = tmp_path / "r.json"
    assert main(["eval", "--bench", str(MINI_BENCH), "--labels", str(MINI_LABELS),
                 "--baseline", "exact_match", "--no-probe", "--out", str(tmp_path / "r.md"),
                 "--json", str(js)]) == 0  # fmt: skip
    p = Report.from_dict(json.loads(js.read_text())).prepare
    assert p == PrepareTime(False, 0.0, 0, 32, 0.0, p.per_row_with_call_ms if p else None)
    assert "prepare(): none" in (tmp_path / "r.md").read_text()


def test_the_probe_never_prepares_and_runs_out_of_process(cache_file: Path) -> None:
    probe = run_probe(CacheSpec(str(cache_file), "Strict"))
    assert probe.error is None and probe.n_calls == PROBE_CALLS
    assert probe.first_call_ms is not None and probe.next_call_ms is not None


def test_a_failing_probe_says_why(cache_file: Path) -> None:
    broken = run_probe(CacheSpec(str(cache_file), "Broken"), calls=2)
    assert broken.error == "ValueError: no model" and broken.n_calls == 2
    assert broken.first_call_ms is not None  # a failed call is still timed
    missing = run_probe(CacheSpec(str(cache_file), "Missing"))
    assert missing.start_ms is None and missing.n_calls == 0
    assert missing.error is not None and "Missing" in missing.error


def test_probe_pairs_are_new_to_the_benchmark() -> None:
    bench = REPO_ROOT / "cachebench.jsonl"
    queries = {q for r in load_bench(bench) for q in (r.query_a, r.query_b)}
    first, second = probe_pairs(), probe_pairs()
    texts = [q for p in first for q in (p.a.query, p.b.query)]
    assert len(set(texts)) == len(texts) == 2 * PROBE_CALLS
    assert not queries & set(texts)
    assert not set(texts) & {q for p in second for q in (p.a.query, p.b.query)}  # fresh nonce


def test_old_reports_still_read() -> None:
    old = json.loads((REPO_ROOT / "reports" / "baseline_exact_match.json").read_text())
    old.pop("prepare", None)
    old.pop("cold_probe", None)
    r = Report.from_dict(old)
    assert r.prepare is None and r.cold_probe is None
    assert "Cold probe" not in r.to_markdown()


def test_a_worker_cannot_report_a_bad_prepare_time() -> None:
    assert prepare_ms(0) == 0.0
    for bad in (-1.0, float("nan"), "12", True, None, 1e12):
        with pytest.raises(WireError):
            prepare_ms(bad)


def test_probe_sentence_when_it_could_not_run() -> None:
    from cacheeval.reporting.latency_text import probe_sentence

    line = probe_sentence(ColdProbe(None, None, None, 0, "cannot import cache module 'x'"))
    assert line == "- Cold probe: not run (cannot import cache module 'x')."
