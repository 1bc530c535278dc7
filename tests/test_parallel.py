"""Prediction on worker processes and Ray actors (cacheeval.run.parallel): the same
decisions as one process, pairs only in the workers, and no row lost when a
worker dies."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from cacheeval.baselines import make_baseline
from cacheeval.cli import main
from cacheeval.dataset import load_bench
from cacheeval.results.predictions import Prediction
from cacheeval.run.harness import CacheCallError, CacheLoadError, predict, score
from cacheeval.run.parallel import (
    CacheSpec,
    Predictor,
    block_size_for,
    map_blocks,
    predict_parallel,
)
from cacheeval.schema import Request, Row
from tests.conftest import MINI_BENCH, MINI_LABELS, REPO_ROOT, default_sigint

BENCH = REPO_ROOT / "cachebench.jsonl"
CACHES = "tests.parallel_caches"
BASELINES = ("always_miss", "always_hit", "exact_match")
HAS_RAY = importlib.util.find_spec("ray") is not None


@pytest.fixture(scope="module")
def dev_rows() -> list[Row]:
    return load_bench(BENCH, split="dev")


def decisions(preds: list[Prediction]) -> list[tuple[Any, ...]]:
    """Everything but the timing."""
    return [(p.id, p.is_hit, p.confidence, p.score, p.tier_used, p.error) for p in preds]


def spec(cls: str, **kwargs: Any) -> CacheSpec:
    return CacheSpec(CACHES, cls, kwargs)


# --- same decisions ---------------------------------------------------------------------


@pytest.mark.parametrize("baseline", BASELINES)
def test_two_workers_decide_like_one_process(dev_rows: list[Row], baseline: str) -> None:
    sequential = predict(make_baseline(baseline), dev_rows)
    parallel = predict_parallel(CacheSpec(baseline=baseline), dev_rows, workers=2)
    assert decisions(parallel) == decisions(sequential)
    assert all(p.latency_ms is not None and p.latency_ms >= 0 for p in parallel)


def test_pair_ids_are_positions_in_the_whole_run(dev_rows: list[Row]) -> None:
    rows = dev_rows[:100]
    for workers, block in ((1, 100), (2, 7), (3, 1)):
        preds = predict_parallel(spec("Position"), rows, workers=workers, block_size=block)
        assert [p.score for p in preds] == [float(i) for i in range(1, 101)]
        assert [p.id for p in preds] == [r.id for r in rows]


def test_workers_never_hold_a_row(dev_rows: list[Row]) -> None:
    rows = dev_rows[:12]
    inside = predict(make_baseline("exact_match"), rows)  # noqa: F841 (rows are alive here)
    from tests.parallel_caches import LooksForRows

    # In this process the check finds the rows the test holds...
    assert {p.tier_used for p in predict(LooksForRows(), rows)} == {"sees-rows"}
    # ...a worker process never has one: it is sent pairs only.
    preds = predict_parallel(spec("LooksForRows"), rows, workers=2)
    assert {p.tier_used for p in preds} == {"blind"}


def test_prepare_once_per_worker_on_its_contiguous_shard(dev_rows: list[Row]) -> None:
    preds = predict_parallel(spec("PreparedShard"), dev_rows, workers=2)
    assert all(p.error is None for p in preds)
    firsts = [p.score for p in preds]
    # two shards of contiguous rows, each prepared once with its own pairs
    size = block_size_for(len(dev_rows), 2)
    cut = next(i for i, s in enumerate(firsts) if s != 1.0)
    assert cut % size == 0 and 0 < cut < len(dev_rows)
    assert firsts == [1.0] * cut + [float(cut + 1)] * (len(dev_rows) - cut)


def test_in_process_streaming_prepares_once_on_the_whole_run(dev_rows: list[Row]) -> None:
    from tests.parallel_caches import PreparedShard

    cache = PreparedShard()
    with Predictor(cache, block_size=7) as p:
        preds = list(p.run(iter(dev_rows)))
    assert len(cache.ids) == len(dev_rows) and all(p.error is None for p in preds)
    assert {p.score for p in preds} == {1.0}
    assert [p.id for p in preds] == [r.id for r in dev_rows]


def test_on_error_raise_stops_at_the_first_failed_row_in_row_order(dev_rows: list[Row]) -> None:
    rows = dev_rows[:60]
    with pytest.raises(CacheCallError, match=rf"row {rows[40].id}: ValueError: refusing p41"):
        predict_parallel(spec("FailsOn", at=[55, 41]), rows, workers=2, on_error="raise")
    preds = predict_parallel(spec("FailsOn", at=[55, 41]), rows, workers=2)
    assert [p.id for p in preds if p.error] == [rows[40].id, rows[54].id]


def test_a_cache_that_cannot_be_built_is_a_load_error(dev_rows: list[Row]) -> None:
    with pytest.raises(CacheLoadError, match="has no attribute 'Nope'"):
        predict_parallel(spec("Nope"), dev_rows[:3], workers=2)
    with pytest.raises(TypeError, match="pass a CacheSpec"):
        Predictor(make_baseline("exact_match"), workers=2)


# --- workers that die ----------------------------------------------------------------------


@pytest.mark.parametrize("how", ["kill", "exit", "segv"])
def test_a_worker_dying_once_loses_no_row(dev_rows: list[Row], tmp_path: Path, how: str) -> None:
    rows = dev_rows[:120]
    marker = tmp_path / "died"
    with Predictor(spec("DiesAt", marker=str(marker), at=50, how=how), workers=2) as p:
        preds = list(p.run(rows))
        assert p.runner is not None and p.runner.backend.deaths == 1  # type: ignore[attr-defined]
    assert marker.exists()  # it did die
    assert decisions(preds) == decisions(predict(make_baseline("exact_match"), rows))


def test_a_call_that_kills_every_worker_is_one_error_row(
    dev_rows: list[Row], tmp_path: Path
) -> None:
    rows = dev_rows[:120]
    marker = str(tmp_path / "died")
    preds = predict_parallel(
        spec("DiesAt", marker=marker, at=50, how="exit", always=True),
        rows,
        workers=2,
        block_size=16,
    )
    assert [p.id for p in preds] == [r.id for r in rows]
    failed = [i for i, p in enumerate(preds) if p.error is not None]
    assert failed == [49]  # p50 alone: tried twice, then an error row; the block goes on
    assert preds[49].error.startswith("CacheProcessDied: the cache process exited with code 7")
    report = score(preds, rows, cache_name="dies")
    assert report.provenance.n_rows == 120 and report.errors.n_errors == 1
    assert report.ids.n_missing == 0 and report.confusion.n == 120


def test_a_worker_killed_from_outside_mid_run_loses_no_row(dev_rows: list[Row]) -> None:
    rows = dev_rows[:300]
    killed: list[int] = []
    with Predictor(spec("Slow", ms=4), workers=2, block_size=20) as p:

        def kill_one(done: int, total: int) -> None:
            if done >= 60 and not killed:
                assert p.runner is not None
                pid = p.runner.backend.pids()[0]  # type: ignore[attr-defined]
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)

        preds = list(p.run(rows, progress=kill_one))
        assert p.runner is not None and p.runner.backend.deaths == 1  # type: ignore[attr-defined]
    assert killed
    assert decisions(preds) == decisions(predict(make_baseline("exact_match"), rows))


# --- command line -----------------------------------------------------------------------------


def _without_timing(path: Path) -> list[dict[str, Any]]:
    lines = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]
    lines[0].pop("created")
    for line in lines[1:]:
        line["latency_ms"] = None
    return lines


def test_predict_files_are_identical_for_any_number_of_workers(tmp_path: Path) -> None:
    outs = []
    for workers in ([], ["--workers", "1"], ["--workers", "3"]):
        out = tmp_path / f"p{len(outs)}.jsonl"
        assert main(["predict", "--bench", str(MINI_BENCH), "--baseline", "exact_match",
                     "--out", str(out), *workers]) == 0  # fmt: skip
        outs.append(_without_timing(out))
    assert outs[0] == outs[1] == outs[2]
    assert len(outs[0]) == 33 and outs[0][0]["complete"] is True


def test_eval_with_workers_reports_what_eval_reports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reports = []
    for workers in ([], ["--workers", "2"]):
        js = tmp_path / f"r{len(reports)}.json"
        assert main(["eval", "--bench", str(MINI_BENCH), "--labels", str(MINI_LABELS),
                     "--baseline", "exact_match", "--out", str(tmp_path / "r.md"),
                     "--json", str(js), *workers]) == 0  # fmt: skip
        data = json.loads(js.read_text(encoding="utf-8"))
        for key in ("created", "git_dirty"):
            data["provenance"].pop(key)
        data.pop("latency")
        data.pop("cold_probe")  # timings of a fresh process: they differ run to run
        for key in ("total_ms", "per_row_ms", "per_row_with_call_ms", "processes"):
            data["prepare"].pop(key)
        reports.append(data)
    assert reports[0] == reports[1]
    assert "exact_match: 32 rows" in capsys.readouterr().out


def test_worker_build_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["predict", "--bench", str(MINI_BENCH), "--out", str(tmp_path / "p.jsonl"),
            "--workers", "2", "--cache-module", CACHES]  # fmt: skip
    assert main([*base, "--cache-class", "Nope"]) == 2
    assert "has no attribute 'Nope'" in capsys.readouterr().err
    assert main([*base, "--cache-class", "BadPrices"]) == 2
    assert "BadPrices: cost_per_call_usd['judge'] must be a finite price" in capsys.readouterr().err
    assert not (tmp_path / "p.jsonl").exists()


SLOW_CACHE = """
import time
from cacheeval.schema import Verdict

def cache(pair):
    time.sleep(0.02)
    return Verdict(is_hit=pair.a.query == pair.b.query, tier_used="exact")
"""


def test_ctrl_c_with_workers_leaves_a_partial_file(tmp_path: Path) -> None:
    mod = tmp_path / "slow.py"
    mod.write_text(SLOW_CACHE, encoding="utf-8")
    out = tmp_path / "p.jsonl"
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "cacheeval", "predict", "--bench", str(BENCH), "--split",
         "train", "--cache-module", str(mod), "--workers", "2", "--out", str(out)],
        cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True, preexec_fn=default_sigint,
    )  # fmt: skip
    time.sleep(4.0)
    os.killpg(proc.pid, signal.SIGINT)  # as a terminal does: the whole foreground group
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "partial predictions (marked incomplete)" in err
    lines = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    assert lines[0]["complete"] is False
    assert 0 < len(lines) - 1 < 1000
    train_ids = [r.id for r in load_bench(BENCH, split="train")]
    assert [x["id"] for x in lines[1:]] == train_ids[: len(lines) - 1]


# --- Ray ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def local_ray() -> Any:
    """A local Ray with 2 CPUs for this module (the runs join it)."""
    if not HAS_RAY:
        pytest.skip("ray is not installed (pip install 'cacheeval[scale]')")
    import ray

    ray.init(num_cpus=2, include_dashboard=False, object_store_memory=128 * 1024 * 1024)
    yield ray
    ray.shutdown()


@pytest.mark.slow  # a local Ray takes ~10 s to start
@pytest.mark.parametrize("baseline", BASELINES)
def test_ray_decides_like_one_process(dev_rows: list[Row], local_ray: Any, baseline: str) -> None:
    sequential = predict(make_baseline(baseline), dev_rows)
    on_ray = predict_parallel(CacheSpec(baseline=baseline), dev_rows, workers=2, ray="local")
    assert decisions(on_ray) == decisions(sequential)
    # many small blocks in flight: news of several comes back together, in any order
    on_ray = predict_parallel(
        CacheSpec(baseline=baseline), dev_rows, workers=2, ray="local", block_size=3
    )
    assert decisions(on_ray) == decisions(sequential)


@pytest.mark.slow
def test_ray_actor_dying_loses_no_row(dev_rows: list[Row], local_ray: Any, tmp_path: Path) -> None:
    rows = dev_rows[:120]
    marker = tmp_path / "died"
    with Predictor(spec("DiesAt", marker=str(marker), at=50, how="exit"), workers=2,
                   ray="local") as p:  # fmt: skip
        preds = list(p.run(rows))
        assert p.runner is not None and p.runner.worker_deaths == 1
    assert marker.exists()
    assert decisions(preds) == decisions(predict(make_baseline("exact_match"), rows))
    always = spec("DiesAt", marker=str(marker), at=50, how="exit", always=True)
    preds = predict_parallel(always, rows, workers=2, ray="local", block_size=16)
    # Every row comes back once. The block holding row 50 kills both actors
    # that try it and is scored as error rows; a block that was queued on a
    # dying actor can share that fate (which one depends on Ray's timing), so
    # the error rows are whole blocks that include rows 48-63.
    assert [p.id for p in preds] == [r.id for r in rows]
    failed = [i for i, p in enumerate(preds) if p.error]
    assert set(range(48, 64)) <= set(failed)
    assert all(i // 16 * 16 + k in failed for i in failed for k in range(16))
    assert all(p.error.startswith("WorkerDied") for p in preds if p.error)
    kept = [i for i in range(len(rows)) if i not in failed]
    exact = predict(make_baseline("exact_match"), rows)
    assert [preds[i].is_hit for i in kept] == [exact[i].is_hit for i in kept]
    assert score(preds, rows, cache_name="dies").errors.n_errors == len(failed)


@pytest.mark.slow
def test_ray_prepares_each_actor_on_its_shard(dev_rows: list[Row], local_ray: Any) -> None:
    preds = predict_parallel(spec("PreparedShard"), dev_rows, workers=2, ray="local")
    assert all(p.error is None for p in preds)
    assert len({p.score for p in preds}) == 2


# --- the GPTCache fast path ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def gptcache_sequential(dev_rows: list[Row]) -> list[Prediction]:
    """The one-process GPTCache fast-path run both worker tests compare against
    (computed once: loading MiniLM and embedding the split dominates)."""
    pytest.importorskip("gptcache")
    from adapters.gptcache_adapter import GPTCacheAdapter

    return predict(GPTCacheAdapter(path="fast"), dev_rows)


@pytest.mark.slow  # each worker loads MiniLM and embeds its shard
@pytest.mark.parametrize("ray", [None, "local"])
def test_gptcache_fast_path_decides_alike_on_workers(
    dev_rows: list[Row],
    gptcache_sequential: list[Prediction],
    ray: str | None,
    request: pytest.FixtureRequest,
) -> None:
    if ray is not None:
        request.getfixturevalue("local_ray")
    sequential = gptcache_sequential
    gpt = CacheSpec("adapters.gptcache_adapter", "GPTCacheAdapter", {"path": "fast"})
    parallel = predict_parallel(gpt, dev_rows, workers=2, ray=ray)
    assert [p.is_hit for p in parallel] == [p.is_hit for p in sequential]
    for a, b in zip(parallel, sequential, strict=True):
        assert a.id == b.id and a.tier_used == b.tier_used and a.error is b.error is None
        assert a.score == pytest.approx(b.score, abs=1e-6)


def test_any_block_task_runs_on_workers_for_replay_lookups(dev_rows: list[Row]) -> None:
    from tests.parallel_caches import LookupTask, SharedExact

    entries = tuple((f"e{i:06d}", r.query_a) for i, r in enumerate(dev_rows))
    lookups = [r.query_b for r in dev_rows]  # plain values: they travel as JSON
    local = SharedExact()
    LookupTask(entries).setup(local)
    expected = [local.lookup(Request(q)) for q in lookups]
    got = list(
        map_blocks(CacheSpec(CACHES, "SharedExact", loader=f"{CACHES}:load_shared"),
                   LookupTask(entries), lookups, workers=2, block_size=50,
                   lost=lambda n, message: [[None, 0.0]] * n)
    )  # fmt: skip
    assert got == [list(e) for e in expected] and any(answer for answer, _ in got)


def test_each_worker_gets_its_share_of_the_cpus_unless_the_user_chose(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from cacheeval.run.procpool import THREAD_VARIABLES, limit_threads, threads_per_worker

    assert [threads_per_worker(w, cpus=8) for w in (1, 2, 3, 8, 16)] == [8, 4, 2, 1, 1]
    for name in THREAD_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MKL_NUM_THREADS", "3")  # the user's choice stays
    limit_threads(2)
    assert [os.environ[n] for n in THREAD_VARIABLES] == ["2", "2", "3"]
