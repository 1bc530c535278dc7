"""Caches that attack the harness, run as ``cacheeval eval`` runs them by
default: in a process of their own, sent pairs only, answering in checked JSON.

Every attack comes from an always-HIT cache. On the mini bench (32 rows, 12
HIT) its true figures are accuracy 12/32 = 0.375 and FHR 20/20 = 1.000; an
attack that worked would show a better score. Each test first runs the same
attack with ``--in-process`` where that shows the attack is real (the answer
key is in reach there), then checks the default run grades the cache at its
true figures or gives it error rows.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import MINI_BENCH, MINI_LABELS, REPO_ROOT

PY = sys.executable
TRUE_ACCURACY = 12 / 32

PRELUDE = """
import gc, os, sys, time
from cacheeval.schema import Verdict

def hit(tier="embedding"):
    return Verdict(is_hit=True, confidence=1.0, tier_used=tier, score=1.0)
"""

ATTACKS = {
    # read the labels through the garbage collector: refuse to serve MISS rows
    "gc_read": """
def cache(pair):
    for o in gc.get_objects():
        if type(o).__name__ in ("LabelledRows", "SealedRows", "ScoreColumns"):
            raise SystemExit("found the answer key")
    return hit()
""",
    # rewrite the truth table the driver scores against: every row becomes HIT
    "truth_rewrite": """
def cache(pair):
    for o in gc.get_objects():
        if type(o).__name__ == "LabelledRows":
            o.truth.extend([])
            for i, t in enumerate(list(o.truth)):
                o.truth[i] = (t[0], 1, "EQUIV", *t[3:])
    return hit()
""",
    # monkeypatch the scorer, the metrics and the report writer
    "monkeypatch": """
import cacheeval.results.columns as columns
import cacheeval.metrics.classification as classification
import cacheeval.reporting.report as report
_orig_add = columns.ScoreColumns.add
def _add(self, pred, truth, *a, **k):
    return _orig_add(self, pred, (truth[0], 1, *truth[2:]), *a, **k)
columns.ScoreColumns.add = _add
classification.fhr = lambda *a, **k: 0.0
report.Report.to_json = lambda self: "{}"
def cache(pair):
    return hit()
""",
    # swap the clock: every call takes no time
    "clock": """
import time as _t
_t.perf_counter_ns = lambda: 0
_t.perf_counter = lambda: 0.0
def cache(pair):
    _t.sleep(0.002)
    return hit()
""",
    # write a pickle that runs code to every pipe it can find
    "pickle": """
import pickle
class Bomb:
    def __reduce__(self):
        return (os.system, ("touch " + os.environ["BOMB_MARKER"],))
_payload = pickle.dumps(("done", 0, [Bomb()]))
def cache(pair):
    for fd in range(3, 64):
        try:
            os.write(fd, _payload + b"\\n")
        except OSError:
            pass
    return hit()
""",
}


def _eval(tmp_path: Path, cache: str, *extra: str, env: dict[str, str] | None = None) -> Any:
    mod = tmp_path / "attack.py"
    mod.write_text(PRELUDE + cache, encoding="utf-8")
    js = tmp_path / "r.json"
    js.unlink(missing_ok=True)
    done = subprocess.run(
        [PY, "-m", "cacheeval", "eval", "--bench", str(MINI_BENCH), "--labels", str(MINI_LABELS),
         "--cache-module", str(mod), "--out", str(tmp_path / "r.md"), "--json", str(js), *extra],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=120,
        env={**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})},
    )  # fmt: skip
    report = json.loads(js.read_text(encoding="utf-8")) if js.exists() else None
    return done, report


def _true_or_errors(report: dict[str, Any]) -> None:
    """An always-HIT cache at its true figures, or with rows it lost as errors
    (each an error row, scored MISS): never better than it is."""
    n_err = report["errors"]["n_errors"] + report["errors"]["n_timeouts"]
    fhr = report["headline"]["fhr"]["value"]
    if n_err == 0:
        assert report["headline"]["accuracy"]["value"] == pytest.approx(TRUE_ACCURACY)
        assert fhr == 1.0
    else:  # a row it failed on is a MISS: it cannot pass for a careful cache
        assert report["confusion"]["tp"] + report["confusion"]["fp"] == 32 - n_err


@pytest.mark.parametrize("attack", ["gc_read", "truth_rewrite", "monkeypatch"])
def test_an_attack_on_the_answer_key_works_in_process_and_fails_out_of_it(
    tmp_path: Path, attack: str
) -> None:
    done, inside = _eval(tmp_path, ATTACKS[attack], "--in-process")
    assert done.returncode == 0, done.stderr
    forged = (
        inside is None
        or "errors" not in inside  # the report writer was replaced
        or inside["errors"]["n_errors"] > 0  # gc_read found the key and refused
        or inside["headline"]["accuracy"]["value"] != pytest.approx(TRUE_ACCURACY)
        or inside["headline"]["fhr"]["value"] != 1.0
    )
    assert forged, f"{attack} did not reach the answer key even in process: test is void"
    done, report = _eval(tmp_path, ATTACKS[attack])
    assert done.returncode == 0, done.stderr
    assert report["errors"]["n_errors"] == 0  # nothing to find, nothing changed
    _true_or_errors(report)


def test_a_swapped_clock_does_not_fake_the_latency(tmp_path: Path) -> None:
    done, report = _eval(tmp_path, ATTACKS["clock"])
    assert done.returncode == 0, done.stderr
    _true_or_errors(report)
    # The cache process times its own calls, so its clock is the cache's to
    # break; the driver checks what it reports is a latency at all.
    assert report["latency"]["n"] == 32


def test_a_pickle_written_to_every_pipe_runs_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "bomb-went-off"
    done, report = _eval(tmp_path, ATTACKS["pickle"], env={"BOMB_MARKER": str(marker)})
    assert done.returncode == 0, done.stderr
    assert not marker.exists()
    _true_or_errors(report)
    assert report["errors"]["n_errors"] > 0  # its garbage broke the protocol: error rows


GIL_CACHE = (
    PRELUDE
    + """
import re
def cache(pair):
    if pair.a.tools is not None:  # four rows: catastrophic backtracking, GIL held
        re.match(r"(a+)+$", "a" * 34 + "b")
    return hit()
"""
)


def test_a_call_that_holds_the_gil_is_killed_at_its_timeout(tmp_path: Path) -> None:
    t0 = time.perf_counter()
    done, report = _eval(tmp_path, GIL_CACHE.split(PRELUDE, 1)[1], "--timeout-ms", "200")
    elapsed = time.perf_counter() - t0
    assert done.returncode == 0, done.stderr
    assert report["errors"]["n_timeouts"] == 4
    assert elapsed < 20  # each regex alone runs for minutes


HOOKS = {
    "import": "raise SystemExit(0)\ndef cache(pair):\n    return hit()\n",
    "init": (
        "class C:\n    def __init__(self):\n        raise SystemExit(0)\n"
        "    def __call__(self, pair):\n        return hit()\ncache = C\n"
    ),
    "name": (
        "class C:\n    @property\n    def name(self):\n        raise SystemExit(0)\n"
        "    def __call__(self, pair):\n        return hit()\ncache = C()\n"
    ),
    "prepare_exit": (
        "class C:\n    def prepare(self, pairs):\n        raise SystemExit(0)\n"
        "    def __call__(self, pair):\n        return hit()\ncache = C()\n"
    ),
    "call_os_exit": "def cache(pair):\n    os._exit(0)\n",
    "close_exit": (
        "class C:\n    def close(self):\n        raise SystemExit(0)\n"
        "    def __call__(self, pair):\n        return hit()\ncache = C()\n"
    ),
    "close_kbd": (
        "class C:\n    def close(self):\n        raise KeyboardInterrupt\n"
        "    def __call__(self, pair):\n        return hit()\ncache = C()\n"
    ),
}


@pytest.mark.parametrize("hook", sorted(HOOKS))
def test_an_exit_in_any_hook_is_never_a_silent_exit_0(tmp_path: Path, hook: str) -> None:
    done, report = _eval(tmp_path, HOOKS[hook])
    if done.returncode == 0:
        assert report is not None, "exit 0 with no report"
        if hook == "call_os_exit":
            assert report["errors"]["n_errors"] == 32
            assert "CacheProcessDied" in report["errors"]["kinds"][0]["first_message"]
        elif hook.startswith("close"):
            assert "close() raised" in done.stderr  # said, and the report stands
            _true_or_errors(report)
    else:  # the cache could not be built or prepared: said, exit 1 (cache) or 2 (load)
        assert done.returncode in (1, 2) and "error: " in done.stderr, done.stderr
        assert report is None
        assert "SystemExit" in done.stderr


SHIFTY = {
    # is_hit flips after the first read; the check reads the base slot once
    "flipping_verdict": """
class Flip(Verdict):
    __slots__ = ("n",)
    def __init__(self):
        object.__setattr__(self, "n", 0)
        super().__init__(is_hit=True, confidence=1.0, tier_used="embedding")
    @property
    def is_hit(self):
        object.__setattr__(self, "n", self.n + 1)
        return self.n < 2
def cache(pair):
    return Flip()
""",
    "lying_float": """
class F(float):
    def __float__(self):
        return 7.5
def cache(pair):
    return Verdict(is_hit=True, confidence=F(0.5), tier_used="embedding", score=F(0.5))
""",
    "nan_score": """
def cache(pair):
    return Verdict(is_hit=True, confidence=1.0, tier_used="embedding", score=float("nan"))
""",
}


@pytest.mark.parametrize("mode", [(), ("--in-process",)])
@pytest.mark.parametrize("shifty", sorted(SHIFTY))
def test_a_verdict_that_changes_after_the_check_is_an_error_row_and_files_stay_valid(
    tmp_path: Path, shifty: str, mode: tuple[str, ...]
) -> None:
    preds = tmp_path / "p.jsonl"
    done, report = _eval(tmp_path, SHIFTY[shifty], "--predictions", str(preds), *mode)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    if shifty == "flipping_verdict":  # its stored is_hit is a real bool: read once, True
        _true_or_errors(report)
    else:
        assert report["errors"]["n_errors"] == 32
        assert report["errors"]["kinds"][0]["kind"] == "InvalidVerdict"
    scored = subprocess.run(
        [PY, "-m", "cacheeval", "score", "--bench", str(MINI_BENCH), "--labels", str(MINI_LABELS),
         "--predictions", str(preds), "--out", str(tmp_path / "s.md")],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert scored.returncode == 0, scored.stderr


SLOW_HOOKS = (
    PRELUDE
    + """
class SlowPrepare:
    def prepare(self, pairs):
        time.sleep(60)
    def __call__(self, pair):
        return hit()

class SlowClose:
    def close(self):
        time.sleep(60)
    def __call__(self, pair):
        return hit()
"""
)


def test_a_prepare_that_overruns_is_killed(tmp_path: Path) -> None:
    from cacheeval import load_bench
    from cacheeval.run.blockrun import CacheSpec
    from cacheeval.run.harness import CacheCallError
    from cacheeval.run.parallel import Predictor

    mod = tmp_path / "slow.py"
    mod.write_text(SLOW_HOOKS, encoding="utf-8")
    rows = load_bench(MINI_BENCH)
    t0 = time.perf_counter()
    with pytest.raises(CacheCallError, match=r"prepare\(\) ran over 1 s: killed"):
        with Predictor(CacheSpec(str(mod), "SlowPrepare"), workers=1, prepare_timeout_s=1) as p:
            list(p.run(rows))
    assert time.perf_counter() - t0 < 20


def test_a_close_that_overruns_is_killed_and_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cacheeval import load_bench
    from cacheeval.run import procpool
    from cacheeval.run.blockrun import CacheSpec
    from cacheeval.run.parallel import predict_parallel

    mod = tmp_path / "slow.py"
    mod.write_text(SLOW_HOOKS, encoding="utf-8")
    monkeypatch.setattr(procpool, "CLOSE_S", 1.0)
    t0 = time.perf_counter()
    with pytest.warns(UserWarning, match=r"close\(\) ran over 1 s: killed"):
        preds = predict_parallel(
            CacheSpec(str(mod), "SlowClose"), load_bench(MINI_BENCH), workers=1
        )
    assert len(preds) == 32 and time.perf_counter() - t0 < 20


SHARED = """
import gc, time

class Peeking:
    name = "peeking"
    def __init__(self):
        self.store = {}
    def put(self, request, answer_id):
        self.store.setdefault(request.query, answer_id)
    def lookup(self, request):
        rows = [o for o in gc.get_objects() if type(o).__name__ == "Row"]
        if rows:
            raise RuntimeError(f"saw {len(rows)} labelled rows")
        found = self.store.get(request.query)
        return found, float(found is not None)

class Hangs(Peeking):
    name = "hangs"
    def lookup(self, request):
        time.sleep(60)
"""


def _replay(tmp_path: Path, cls: str, *extra: str) -> tuple[Any, dict[str, Any] | None]:
    mod = tmp_path / "shared.py"
    mod.write_text(SHARED, encoding="utf-8")
    js = tmp_path / "rep.json"
    js.unlink(missing_ok=True)
    done = subprocess.run(
        [PY, "-m", "cacheeval", "replay", "--bench", str(MINI_BENCH), "--labels",
         str(MINI_LABELS), "--cache-module", str(mod), "--cache-class", cls,
         "--out", str(tmp_path / "rep.md"), "--json", str(js), *extra],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    return done, json.loads(js.read_text(encoding="utf-8")) if js.exists() else None


def test_a_shared_cache_in_replay_holds_no_row(tmp_path: Path) -> None:
    done, inside = _replay(tmp_path, "Peeking", "--in-process")
    assert done.returncode == 0, done.stderr
    assert inside is not None and inside["errors"]["n_lookup_errors"] > 0  # it saw them here
    done, report = _replay(tmp_path, "Peeking")
    assert done.returncode == 0, done.stderr
    assert report is not None and report["errors"]["n_lookup_errors"] == 0


def test_a_hung_shared_cache_is_killed_and_the_replay_ends(tmp_path: Path) -> None:
    t0 = time.perf_counter()
    done, report = _replay(tmp_path, "Hangs", "--timeout-ms", "300")
    assert done.returncode == 0, done.stderr
    assert time.perf_counter() - t0 < 60
    assert report is not None
    errors = report["errors"]
    assert errors["n_lookup_errors"] == report["counts"]["n"]  # every lookup an error row


PEEK = (
    PRELUDE
    + """
import socket

def cache(pair):
    labels = os.environ["LABELS_FILE"]
    size = os.path.getsize(labels) if os.path.exists(labels) else -1
    if size > 0:
        # what the sandbox looked like, to tell a missing sandbox (a host pid, no
        # mounts of its own) from a sandbox without the labels' cover
        mounts = open("/proc/self/mountinfo", encoding="utf-8").read()
        raise RuntimeError(
            f"read the labels file ({size} bytes; pid {os.getpid()}, "
            f"{mounts.count(chr(10))} mounts, labels covered: {labels in mounts})"
        )
    try:
        open(os.environ["REPO_FILE"], "a").close()
        raise RuntimeError("wrote into the checkout")
    except OSError:
        pass
    try:
        socket.create_connection(("127.0.0.1", 9), timeout=0.2)
        raise RuntimeError("reached the network")
    except OSError:
        pass
    return hit()
"""
)


def test_isolate_hides_the_labels_and_the_network_and_keeps_the_checkout_read_only(
    tmp_path: Path,
) -> None:
    labels = tmp_path / "labels.jsonl"
    labels.write_bytes(MINI_LABELS.read_bytes())
    env = {"LABELS_FILE": str(labels), "REPO_FILE": str(REPO_ROOT / "README.md")}
    mod = tmp_path / "attack.py"
    mod.write_text(PEEK, encoding="utf-8")
    js = tmp_path / "r.json"
    done = subprocess.run(
        [PY, "-m", "cacheeval", "eval", "--bench", str(MINI_BENCH), "--labels", str(labels),
         "--cache-module", str(mod), "--out", str(tmp_path / "r.md"), "--json", str(js),
         "--isolate"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=120,
        env={**os.environ, "HF_HUB_OFFLINE": "1", **env},
    )  # fmt: skip
    if done.returncode == 2 and "--isolate" in done.stderr:
        pytest.skip(f"no bubblewrap here: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    report = json.loads(js.read_text(encoding="utf-8"))
    seen = (report["provenance"]["run_mode"], report["errors"], done.stderr[-2000:])
    assert report["errors"]["n_errors"] == 0, seen  # saw nothing, wrote nothing
    assert report["provenance"]["run_mode"] == "process, bubblewrap"
    # without --isolate the same cache reads the labels file: the test can fail
    done = subprocess.run(
        [PY, "-m", "cacheeval", "eval", "--bench", str(MINI_BENCH), "--labels", str(labels),
         "--cache-module", str(mod), "--out", str(tmp_path / "r.md"), "--json", str(js)],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=120,
        env={**os.environ, "HF_HUB_OFFLINE": "1", **env},
    )  # fmt: skip
    assert json.loads(js.read_text(encoding="utf-8"))["errors"]["n_errors"] == 32
