"""Blind grading: a cache under test sees only the two requests, cannot read or
rewrite the answer key, and nothing it raises, exits or swallows goes unaccounted."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cacheeval import Cache, Pair, Request, Verdict, evaluate, load_bench, predict
from cacheeval.baselines import AlwaysHit, AlwaysMiss, ExactMatch
from cacheeval.cli import main
from cacheeval.reporting.report import Report
from cacheeval.run.harness import RunInterrupted, SealedRows, describe_exception
from cacheeval.schema import ROW_FIELDS, Row
from cacheeval.support.jsonio import iter_jsonl
from tests.conftest import (
    MINI_BENCH,
    MINI_LABELS,
    REPO_ROOT,
    default_sigint,
    make_row,
    wait_for_child_process,
)

BENCH = REPO_ROOT / "cachebench.jsonl"
PY = sys.executable

#: Everything a Row has that a production cache would not know.
HIDDEN = (
    "label", "binary_label", "expected_answer_a", "expected_answer_b", "rationale",
    "verification_method", "verification_payload", "difficulty", "subcategory", "source",
    "construction_method", "real_world_grounding", "domain", "split", "y",
)  # fmt: skip


@pytest.fixture(scope="module")
def dev_rows() -> list[Row]:
    if not BENCH.exists():
        pytest.skip("no cachebench.jsonl")
    return load_bench(BENCH, split="dev")


def _confusion(report: Report) -> tuple[int, int, int, int]:
    c = report.confusion
    return c.tp, c.fp, c.fn, c.tn


# --- what a cache sees -----------------------------------------------------------------


def test_pair_carries_only_the_requests() -> None:
    assert [f.name for f in dataclasses.fields(Pair)] == ["id", "a", "b"]
    assert [f.name for f in dataclasses.fields(Request)] == [
        "query", "context", "system_prompt", "tools",
    ]  # fmt: skip
    seen: list[Pair] = []

    def spy(pair: Pair) -> Verdict:
        seen.append(pair)
        return Verdict(is_hit=False)

    rows = [make_row(i, "ADVERSARIAL", "creative") for i in (1, 2)]
    predict(spy, rows)
    assert [p.id for p in seen] == ["p1", "p2"]  # opaque: row ids name the domain
    for pair in seen:
        assert type(pair) is Pair
        for obj in (pair, pair.a, pair.b):
            for name in HIDDEN:
                assert getattr(obj, name, None) is None, name
        assert "creative" not in repr(pair)


def test_reading_the_labels_finds_nothing(dev_rows: list[Row]) -> None:
    def reader(pair: Pair) -> Verdict:
        found = [getattr(o, n, None) for o in (pair, pair.a, pair.b) for n in HIDDEN]
        answer = next((v for v in found if v in ("HIT", "EQUIV", "PARA_SAFE")), None)
        return Verdict(is_hit=answer is not None)

    def optimist(pair: Pair) -> Verdict:  # "HIT unless the label says otherwise"
        return Verdict(is_hit=getattr(pair, "binary_label", "HIT") == "HIT")

    miss = evaluate(AlwaysMiss(), dev_rows)
    hit = evaluate(AlwaysHit(), dev_rows)
    assert _confusion(evaluate(reader, dev_rows)) == _confusion(miss)
    assert _confusion(evaluate(optimist, dev_rows)) == _confusion(hit)


TAMPER_CACHE = """
import gc
from cacheeval.schema import Row, Verdict

class Tamper:
    '''Finds every labelled Row in the process and marks it HIT, then says HIT.'''

    def __init__(self):
        self.done = False

    def _tamper(self, pairs=()):
        for obj in gc.get_objects():
            if isinstance(obj, Row):
                for attempt in (
                    lambda: object.__setattr__(obj, "binary_label", "HIT"),
                    lambda: Row.binary_label.__set__(obj, "HIT"),
                    lambda: Row.label.__set__(obj, "EQUIV"),
                    lambda: setattr(obj, "binary_label", "HIT"),
                ):
                    try:
                        attempt()
                    except Exception:
                        pass
            elif type(obj) is dict and isinstance(obj.get("query_a"), str):
                obj["binary_label"] = "HIT"  # a row's dict form, wherever it lies
                obj["label"] = "EQUIV"
        for pair in pairs:
            for turn in pair.a.context or ():
                turn["content"] = "tampered"

    def prepare(self, pairs):
        self._tamper(pairs)
        pairs.clear()

    def __call__(self, pair):
        if not self.done:
            self._tamper([pair])
            self.done = True
        return Verdict(is_hit=True, tier_used="exact")
"""


def test_rewriting_the_labels_changes_nothing(dev_rows: list[Row], tmp_path: Path) -> None:
    # Hostile code rewrites objects process-wide: it runs in its own
    # interpreter, never in the test session.
    path = tmp_path / "tamper.py"
    path.write_text(TAMPER_CACHE, encoding="utf-8")
    n_hit = sum(r.binary_label == "HIT" for r in dev_rows)
    truth = (n_hit, len(dev_rows) - n_hit, 0, 0)
    assert truth == _confusion(evaluate(AlwaysHit(), dev_rows))
    api = _run(
        [PY, "-c",
         "import sys\n"
         "from cacheeval import evaluate, load_bench\n"
         "from cacheeval.run.harness import load_cache\n"
         f"rows = load_bench({str(BENCH)!r}, split='dev')\n"
         f"r = evaluate(load_cache({str(path)!r}, 'Tamper'), rows)\n"
         "c = r.confusion\n"
         "print(c.tp, c.fp, c.fn, c.tn)\n"]
    )  # fmt: skip
    assert api.returncode == 0, api.stderr
    assert tuple(int(x) for x in api.stdout.split()) == truth
    # The command line grades it the same way (eval, and predict + score).
    js = tmp_path / "r.json"
    argv = ["--bench", str(BENCH), "--split", "dev", "--cache-module", str(path),
            "--cache-class", "Tamper"]  # fmt: skip
    done = _run([PY, "-m", "cacheeval", "eval", *argv, "--out", str(tmp_path / "r.md"),
                 "--json", str(js)])  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = Report.from_dict(json.loads(js.read_text(encoding="utf-8")))
    assert _confusion(report) == truth
    assert report.provenance.cache_ref == f"{path}:Tamper"
    preds = tmp_path / "p.jsonl"
    done = _run([PY, "-m", "cacheeval", "predict", *argv, "--out", str(preds)])
    assert done.returncode == 0, done.stderr
    js2 = tmp_path / "s.json"
    assert main(["score", "--bench", str(BENCH), "--predictions", str(preds), "--out",
                 str(tmp_path / "s.md"), "--json", str(js2)]) == 0  # fmt: skip
    assert _confusion(Report.from_dict(json.loads(js2.read_text(encoding="utf-8")))) == truth


def test_sealed_rows_round_trip(mini_rows: list[Row]) -> None:
    sealed = SealedRows(mini_rows)
    assert sealed.rows() == mini_rows
    assert SealedRows([]).rows() == []
    assert len(ROW_FIELDS) == len(dataclasses.fields(Row))


def test_prepare_mutating_its_input_changes_nothing(mini_rows: list[Row]) -> None:
    class Vandal:
        def prepare(self, pairs: list[Pair]) -> None:
            for p in pairs:
                for turn in p.a.context or ():
                    turn["content"] = "vandalised"
            pairs.clear()

        def __call__(self, pair: Pair) -> Verdict:
            return ExactMatch()(pair)

    plain = predict(ExactMatch(), mini_rows)
    vandal = predict(Vandal(), mini_rows)
    strip = [dataclasses.replace(p, latency_ms=0.0) for p in plain]
    assert strip == [dataclasses.replace(p, latency_ms=0.0) for p in vandal]
    assert all("vandalised" not in json.dumps(r.to_dict()) for r in mini_rows)


def test_cache_protocol_accepts_functions_and_objects() -> None:
    def fn(pair: Pair) -> Verdict:
        return Verdict(is_hit=False)

    assert isinstance(fn, Cache) and isinstance(ExactMatch(), Cache)
    assert not isinstance(42, Cache)
    with pytest.raises(TypeError, match="not a cache"):
        predict(42, [make_row(1)])  # type: ignore[arg-type]


# --- everything a cache does is accounted for ----------------------------------------------


class _Custom(BaseException):
    pass


class _Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no message for you")


@pytest.mark.parametrize(
    ("exc", "kind"),
    [
        (SystemExit(0), "SystemExit"),
        (KeyboardInterrupt(), "KeyboardInterrupt"),
        (_Custom("deep"), "_Custom"),
        (_Unprintable(), "_Unprintable"),
        (GeneratorExit(), "GeneratorExit"),
    ],
)
def test_base_exceptions_from_a_cache_are_error_rows(exc: BaseException, kind: str) -> None:
    rows = [make_row(i, "EQUIV") for i in range(1, 6)]

    def cache(pair: Pair) -> Verdict:
        if pair.id == "p3":
            raise exc
        return Verdict(is_hit=True)

    for timeout in (None, 5000.0):
        report = evaluate(cache, rows, timeout_ms=timeout)
        assert report.provenance.n_rows == 5
        assert report.errors.n_errors == 1
        (k,) = report.errors.kinds
        assert (k.kind, k.count, k.first_id) == (kind, 1, "cb-qa_factual-0003")
        assert _confusion(report) == (4, 0, 1, 0)


def test_describe_exception_never_raises() -> None:
    class Meta(type):
        @property
        def __name__(cls) -> str:  # type: ignore[override]
            raise RuntimeError("no name")

    class Odd(Exception, metaclass=Meta):
        def __str__(self) -> str:
            raise ValueError("no str")

    assert describe_exception(_Unprintable()) == "_Unprintable: (message could not be read)"
    assert describe_exception(Odd()).endswith(": (message could not be read)")
    assert describe_exception(ValueError("x" * 1000)).endswith("...")


EXITING_CACHE = """
import os, signal, sys
from cacheeval.schema import Verdict

class Exiter:
    def __init__(self, at=10, how="exit"):
        self.n, self.at, self.how = 0, at, how

    def __call__(self, pair):
        self.n += 1
        if self.n == self.at:
            if self.how == "exit":
                sys.exit(0)
            if self.how == "kbd":
                raise KeyboardInterrupt
            if self.how == "sigint":  # what the terminal does on Ctrl-C
                os.kill(os.getpid(), signal.SIGINT)
            if self.how == "swallow":
                try:
                    os.kill(os.getpid(), signal.SIGINT)
                except KeyboardInterrupt:
                    pass
        return Verdict(is_hit=pair.a.query == pair.b.query, tier_used="exact")
"""


def _run(args: list[str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    return subprocess.run(
        args, cwd=REPO_ROOT, capture_output=True, text=True, timeout=120, env=env, check=False,
        preexec_fn=default_sigint,
    )  # fmt: skip


@pytest.mark.parametrize("how", ["exit", "kbd"])
def test_sys_exit_inside_a_cache_is_an_error_row(tmp_path: Path, how: str) -> None:
    mod = tmp_path / "exiter.py"
    mod.write_text(EXITING_CACHE, encoding="utf-8")
    js = tmp_path / "r.json"
    done = _run(
        [PY, "-m", "cacheeval", "eval", "--bench", str(MINI_BENCH), "--labels",
         str(MINI_LABELS), "--cache-module", str(mod), "--cache-class", "Exiter",
         "--cache-arg", f"how={how}", "--out", str(tmp_path / "r.md"), "--json", str(js)]
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = Report.from_dict(json.loads(js.read_text(encoding="utf-8")))
    assert report.provenance.n_rows == 32 and report.errors.n_errors == 1
    kind = {"exit": "SystemExit", "kbd": "KeyboardInterrupt"}[how]
    assert [k.kind for k in report.errors.kinds] == [kind]


@pytest.mark.parametrize("how", ["sigint", "swallow"])
def test_real_ctrl_c_stops_with_a_partial_file(tmp_path: Path, how: str) -> None:
    mod = tmp_path / "exiter.py"
    mod.write_text(EXITING_CACHE, encoding="utf-8")
    preds = tmp_path / "p.jsonl"
    done = _run(
        [PY, "-m", "cacheeval", "predict", "--bench", str(MINI_BENCH), "--cache-module",
         str(mod), "--cache-class", "Exiter", "--cache-arg", f"how={how}",
         "--cache-arg", "at=5", "--out", str(preds), "--in-process"]
    )  # fmt: skip
    # --in-process: in a process of its own, a cache's SIGINT reaches only that process
    assert done.returncode == 130, (done.stdout, done.stderr)
    assert "interrupted after" in done.stderr
    lines = [v for _, v in iter_jsonl(preds)]
    assert lines[0]["complete"] is False
    # 'sigint' interrupts the fifth call; a cache that swallows it finishes that call.
    assert len(lines) - 1 == {"sigint": 4, "swallow": 5}[how]
    out = tmp_path / "s.json"
    scored = _run(
        [PY, "-m", "cacheeval", "score", "--bench", str(MINI_BENCH), "--labels",
         str(MINI_LABELS), "--predictions", str(preds), "--out", str(tmp_path / "s.md"),
         "--json", str(out)]
    )  # fmt: skip
    assert scored.returncode == 0, scored.stderr
    assert "partial file of an interrupted run" in scored.stderr
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["ids"]["n_missing"] == 32 - (len(lines) - 1)


SLOW_CACHE = """
import time
from cacheeval.schema import Verdict

def cache(pair):
    time.sleep(0.2)
    return Verdict(is_hit=pair.a.query == pair.b.query, tier_used="exact")
"""


def test_ctrl_c_at_the_driver_stops_an_out_of_process_run(tmp_path: Path) -> None:
    mod = tmp_path / "slow.py"
    mod.write_text(SLOW_CACHE, encoding="utf-8")
    preds = tmp_path / "p.jsonl"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    proc = subprocess.Popen(
        [PY, "-m", "cacheeval", "predict", "--bench", str(MINI_BENCH), "--cache-module",
         str(mod), "--out", str(preds)],
        cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        preexec_fn=default_sigint,
    )  # fmt: skip
    wait_for_child_process(proc.pid)  # interrupt once the cache process is deciding
    time.sleep(1.0)  # (32 rows take 6 s)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted after" in err
    lines = [v for _, v in iter_jsonl(preds)]
    assert lines[0]["complete"] is False and len(lines) - 1 < 32


def test_run_interrupted_in_process_carries_the_partial_predictions(sigint_default: None) -> None:
    rows = [make_row(i) for i in range(1, 6)]

    def cache(pair: Pair) -> Verdict:
        if pair.id == "p4":
            os.kill(os.getpid(), signal.SIGINT)
        return Verdict(is_hit=False)

    with pytest.raises(RunInterrupted) as info:
        predict(cache, rows)
    assert [p.id for p in info.value.predictions] == [r.id for r in rows[:3]]
    assert info.value.total == 5
    # The previous SIGINT handler is back.
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_an_ignored_sigint_stays_ignored() -> None:
    # nohup, or a background job of a non-interactive shell: Ctrl-C is not meant
    # for this process, so the run neither installs a handler nor stops
    rows = [make_row(i) for i in range(1, 6)]

    def cache(pair: Pair) -> Verdict:
        if pair.id == "p2":
            os.kill(os.getpid(), signal.SIGINT)
        return Verdict(is_hit=False)

    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        preds = predict(cache, rows)
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, before)
    assert [p.id for p in preds] == [r.id for r in rows] and all(p.error is None for p in preds)
