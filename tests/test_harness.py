"""The harness: misbehaving caches are scored as documented and the run completes;
predict/score/evaluate agree; predictions files round-trip; caches load from modules."""

from __future__ import annotations

import dataclasses
import math
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from cacheeval.baselines import BASELINES, AlwaysMiss, ExactMatch, make_baseline
from cacheeval.results.predictions import (
    Prediction,
    make_header,
    read_predictions,
    write_predictions,
)
from cacheeval.run.harness import (
    CacheCallError,
    CacheLoadError,
    UnlabelledRowsError,
    evaluate,
    load_cache,
    predict,
    score,
)
from cacheeval.schema import Pair, Row, Verdict
from cacheeval.support.jsonio import JsonlError, jsonl_bytes
from tests.conftest import make_row


def _rows(n: int = 6) -> list[Row]:
    labels = ["EQUIV", "ADVERSARIAL", "PARA_SAFE", "UNRELATED", "RELATED_UNSAFE", "EQUIV"]
    return [make_row(i + 1, labels[i % len(labels)]) for i in range(n)]


def test_raising_cache_is_scored_miss_and_reported() -> None:
    rows = _rows()

    def cache(pair: Pair) -> Verdict:
        if pair.id.endswith("2") or pair.id.endswith("3"):
            raise RuntimeError(f"boom on {pair.id}\nsecond line")
        return Verdict(is_hit=True, tier_used="exact")

    report = evaluate(cache, rows)
    assert report.errors.n_errors == 2 and report.errors.n_timeouts == 0
    (kind,) = report.errors.kinds
    assert (kind.kind, kind.count, kind.first_id) == ("RuntimeError", 2, "cb-qa_factual-0002")
    assert kind.first_message == "RuntimeError: boom on p2"  # the cache sees opaque ids
    # Labels H M H M M H; decisions H (2 failed: M) (3 failed: M) H H H
    # -> TP rows 1,6; FP rows 4,5; FN row 3; TN row 2.
    c = report.confusion
    assert (c.tp, c.fp, c.fn, c.tn) == (2, 2, 1, 1)
    assert {t.tier: t.count for t in report.tiers} == {"exact": 4, "error": 2}


def test_on_error_raise_aborts_and_still_closes() -> None:
    closed: list[bool] = []

    class Bad:
        def __call__(self, pair: Pair) -> Verdict:
            raise ValueError("nope")

        def close(self) -> None:
            closed.append(True)

    with pytest.raises(CacheCallError, match="cb-qa_factual-0001: ValueError: nope"):
        evaluate(Bad(), _rows(), on_error="raise")
    assert closed == [True]
    with pytest.raises(CacheCallError, match="InvalidVerdict"):
        predict(lambda row: "HIT", _rows(), on_error="raise")
    with pytest.raises(ValueError, match="on_error"):
        predict(AlwaysMiss(), _rows(), on_error="ignore")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        (None, "returned NoneType, not Verdict"),
        ({"is_hit": True}, "returned dict, not Verdict"),
        (Verdict(is_hit=1, tier_used="x"), "is_hit is int, not bool"),  # type: ignore[arg-type]
        (Verdict(is_hit=True, confidence=math.nan), "confidence is NaN"),
        (Verdict(is_hit=True, confidence=1.5), "outside [0, 1]"),
        (Verdict(is_hit=True, score=math.nan), "score is nan"),
        (Verdict(is_hit=True, score=math.inf), "score is inf"),
        (Verdict(is_hit=True, tier_used="timeout"), "reserved for the harness"),
    ],
)
def test_invalid_return_values_are_error_rows(value: Any, fragment: str) -> None:
    rows = _rows(2)
    preds = predict(lambda row: value, rows)
    for p in preds:
        assert p.is_hit is False and p.tier_used == "error"
        assert p.error is not None and p.error.startswith("InvalidVerdict: ")
        assert fragment in p.error
        assert p.confidence is None and p.score is None
    report = score(preds, rows)
    assert report.errors.n_errors == 2
    assert report.confusion.tp + report.confusion.fp == 0


def test_hanging_cache_times_out_and_run_completes() -> None:
    release = threading.Event()
    rows = _rows(5)

    def cache(pair: Pair) -> Verdict:
        if pair.id == "p2":  # the second call: row cb-qa_factual-0002
            release.wait(10)  # hangs until the test releases it
        return Verdict(is_hit=True, tier_used="exact", score=0.5)

    t0 = time.perf_counter()
    try:
        report = evaluate(cache, rows, timeout_ms=100)
        elapsed = time.perf_counter() - t0
    finally:
        release.set()
    assert elapsed < 3.0
    assert report.errors.n_timeouts == 1 and report.errors.n_errors == 0
    assert report.errors.examples[0].id == "cb-qa_factual-0002"
    assert report.errors.examples[0].error == "timeout after 100 ms"
    assert {t.tier: t.count for t in report.tiers} == {"exact": 4, "timeout": 1}
    assert report.latency.n == 5 and report.latency.max_ms is not None
    assert report.latency.max_ms >= 100
    # The timed-out row never fires; the others carry scores, so the block exists.
    assert report.threshold_free is not None and report.threshold_free.n_scored == 4


def test_timeout_path_scores_like_inline_path() -> None:
    rows = _rows(6)

    def cache(pair: Pair) -> Verdict:
        if pair.id.endswith("4"):
            raise KeyError("k")
        return ExactMatch()(pair)

    inline = predict(cache, rows)
    threaded = predict(cache, rows, timeout_ms=5000)
    strip = [dataclasses.replace(p, latency_ms=0.0) for p in inline]
    assert strip == [dataclasses.replace(p, latency_ms=0.0) for p in threaded]
    assert inline[3].error == "KeyError: 'k'"


def test_prepare_once_before_calls_and_close_always() -> None:
    events: list[str] = []

    class Cache:
        name = "lifecycle"

        def prepare(self, pairs: list[Pair]) -> None:
            events.append(f"prepare:{len(pairs)}")

        def __call__(self, pair: Pair) -> Verdict:
            events.append("call")
            return Verdict(is_hit=False, tier_used="exact")

        def close(self) -> None:
            events.append("close")

    report = evaluate(Cache(), _rows(3))
    assert events == ["prepare:3", "call", "call", "call", "close"]
    assert report.provenance.cache_name == "lifecycle"


def test_prepare_failure_aborts_and_closes() -> None:
    closed: list[bool] = []

    class Cache:
        def __call__(self, pair: Pair) -> Verdict:
            raise AssertionError("never called")

        def prepare(self, pairs: list[Pair]) -> None:
            raise OSError("model file missing")

        def close(self) -> None:
            closed.append(True)

    with pytest.raises(CacheCallError, match="prepare\\(\\) raised OSError: model file missing"):
        predict(Cache(), _rows(2))
    assert closed == [True]


def test_close_failure_warns_in_miss_mode() -> None:
    class Cache:
        def __call__(self, pair: Pair) -> Verdict:
            return Verdict(is_hit=False)

        def close(self) -> None:
            raise RuntimeError("socket already closed")

    with pytest.warns(UserWarning, match="socket already closed"):
        preds = predict(Cache(), _rows(2))
    assert len(preds) == 2


def test_not_a_cache() -> None:
    with pytest.raises(TypeError, match="not a cache"):
        predict(object(), _rows(1))


def test_missing_and_extra_ids() -> None:
    rows = _rows(6)
    preds = predict(ExactMatch(), rows)
    kept = [p for p in preds if p.id not in ("cb-qa_factual-0002", "cb-qa_factual-0005")]
    extra = Prediction("cb-math-0099", True, 1.0, 1.0, "exact", 0.1, None)
    report = score([*kept, extra], rows)
    ids = report.ids
    assert (ids.n_missing, ids.missing_ids) == (2, ("cb-qa_factual-0002", "cb-qa_factual-0005"))
    assert (ids.n_extra, ids.extra_ids) == (1, ("cb-math-0099",))
    assert report.provenance.n_rows == 6  # nothing dropped
    assert report.errors.n_errors == 2
    assert report.errors.kinds[0].kind == "MissingPrediction"
    assert {t.tier: t.count for t in report.tiers} == {"exact": 4, "missing": 2}
    assert report.latency.n == 4  # missing rows were never called
    assert report.cost.n_decisions == 4
    md = report.to_markdown()
    assert "cb-qa_factual-0002, cb-qa_factual-0005" in md and "cb-math-0099" in md


def test_duplicate_prediction_ids_rejected() -> None:
    rows = _rows(2)
    preds = predict(AlwaysMiss(), rows)
    with pytest.raises(ValueError, match="duplicate prediction id"):
        score([*preds, preds[0]], rows)


def test_hidden_test_rows_need_labels(public_rows: list[Row], mini_rows: list[Row]) -> None:
    calls: list[str] = []

    def cache(pair: Pair) -> Verdict:
        calls.append(pair.id)
        return Verdict(is_hit=False)

    with pytest.raises(UnlabelledRowsError, match="5 of 32 rows have no label"):
        evaluate(cache, public_rows)
    assert calls == []  # fails before running the cache
    test_rows = [r for r in public_rows if r.split == "test"]
    preds = predict(ExactMatch(), test_rows)  # predicting needs no labels
    assert len(preds) == 5
    with pytest.raises(UnlabelledRowsError, match="labels file"):
        score(preds, test_rows)
    labelled = [r for r in mini_rows if r.split == "test"]
    report = score(preds, labelled)
    assert report.provenance.split == "test"
    # Hidden rows, by hand: qa_factual-0005 served (TP); creative-0003 served (policy FP).
    assert (report.confusion.tp, report.confusion.fp) == (1, 1)


def test_evaluate_equals_predict_then_score(mini_rows: list[Row]) -> None:
    a = evaluate(ExactMatch(), mini_rows, cache_name="x").to_dict()
    ref = "cacheeval.baselines:ExactMatch"
    b = score(predict(ExactMatch(), mini_rows), mini_rows, cache_name="x", cache_ref=ref).to_dict()
    assert a["provenance"]["cache_ref"] == ref
    for d in (a, b):
        del d["provenance"]["created"], d["latency"]
    assert a == b


def test_cost_and_progress() -> None:
    seen: list[tuple[int, int]] = []

    class Judge:
        cost_per_call_usd = {"judge": 0.01}

        def __call__(self, pair: Pair) -> Verdict:
            tier = "judge" if pair.id.endswith("2") else "exact"
            return Verdict(is_hit=False, tier_used=tier)

    report = evaluate(Judge(), _rows(6), progress=lambda d, t: seen.append((d, t)))
    # One row of six (row 2) pays $0.01: $0.01 / 6 * 1000 per 1k.
    assert report.cost.total_usd == pytest.approx(0.01)
    assert report.cost.per_1k_decisions_usd == pytest.approx(10 / 6)
    assert seen == [(i, 6) for i in range(1, 7)]

    class BadPrice:
        cost_per_call_usd = {"judge": -1}

        def __call__(self, pair: Pair) -> Verdict:
            return Verdict(is_hit=False)

    with pytest.raises(TypeError, match="cost_per_call_usd"):
        evaluate(BadPrice(), _rows(1))


def test_cache_args_must_be_json() -> None:
    with pytest.raises(ValueError, match="JSON"):
        evaluate(AlwaysMiss(), _rows(1), cache_args={"f": object()})


def test_threshold_free_needs_scores_from_every_verdict() -> None:
    rows = _rows(4)

    def half(pair: Pair) -> Verdict:
        return Verdict(is_hit=True, score=0.3 if pair.id.endswith("1") else None)

    report = evaluate(half, rows)
    assert report.threshold_free is None
    assert report.threshold_free_note == "3 of 4 successful verdicts carry no score"
    assert "Not computed: 3 of 4 successful verdicts carry no score." in report.to_markdown()
    none = evaluate(lambda row: Verdict(is_hit=True), rows)
    assert none.threshold_free_note == "the cache gives no scores"


def test_baseline_registry() -> None:
    assert list(BASELINES) == ["always_miss", "always_hit", "exact_match"]
    assert make_baseline("exact_match").name == "exact_match"
    with pytest.raises(ValueError, match="always_miss, always_hit, exact_match"):
        make_baseline("oracle")


def test_exact_match_compares_the_whole_request() -> None:
    def em(row: Row) -> Verdict:
        return ExactMatch()(row.pair)

    base = make_row(1, query_a="Solve  X + 2 = 8", query_b="solve x + 2 = 8")
    assert em(base).is_hit and em(base).tier_used == "exact"
    assert not em(dataclasses.replace(base, query_b="Solve a + 2 = 8")).is_hit
    ctx = ({"role": "user", "content": "hi"},)
    assert not em(dataclasses.replace(base, context_a=ctx)).is_hit
    assert em(
        dataclasses.replace(base, context_a=ctx, context_b=({"content": "HI ", "role": "user"},))
    ).is_hit
    assert not em(dataclasses.replace(base, system_prompt_b="You are Bob's assistant.")).is_hit
    tool_a = ({"name": "f", "parameters": {"a": 1, "b": 2}},)
    tool_b = ({"parameters": {"b": 2, "a": 1}, "name": "f"},)  # same tool, other key order
    assert em(dataclasses.replace(base, tools_a=tool_a, tools_b=tool_b)).is_hit
    assert not em(dataclasses.replace(base, tools_a=tool_a)).is_hit


# --- predictions files ---------------------------------------------------------------


def test_predictions_round_trip(tmp_path: Path) -> None:
    rows = _rows(4)
    preds = predict(lambda row: Verdict(is_hit=True, confidence=0.25, score=1), rows)
    header = make_header(
        cache_name="c", created="2026-01-01T00:00:00Z", cache_args={"t": 0.8}, split="train"
    )
    path = tmp_path / "p.jsonl"
    write_predictions(path, header, preds)
    got_header, got = read_predictions(path)
    assert got_header == header
    assert got == preds
    assert isinstance(got[0].score, float)


@pytest.mark.parametrize(
    ("lines", "line_no", "fragment"),
    [
        ([{"id": "x"}], 1, "first line must be the header"),
        ([{"cacheeval_predictions": "2.0"}], 1, "unsupported predictions version"),
        (["HEADER", {"id": "a", "is_hit": "yes"}], 2, "missing field(s)"),
        (
            [
                "HEADER",
                {
                    **{"id": "a", "is_hit": "yes"},
                    **dict.fromkeys(("confidence", "score", "tier_used", "latency_ms", "error")),
                },
            ],
            2,
            "is_hit must be true or false",
        ),
        (["HEADER", "ROW", "ROW"], 3, "duplicate id 'cb-qa_factual-0001' (first on line 2)"),
        (
            [
                "HEADER",
                {
                    **dict.fromkeys(("confidence", "score", "latency_ms")),
                    "id": "a",
                    "is_hit": True,
                    "tier_used": "error",
                    "error": "X: y",
                },
            ],
            2,
            "must have is_hit false",
        ),
    ],
)
def test_bad_predictions_file_names_line(
    tmp_path: Path, lines: list[Any], line_no: int, fragment: str
) -> None:
    header = make_header(cache_name="c", created="t").to_dict()
    row = Prediction("cb-qa_factual-0001", False, 1.0, None, "exact", 0.5, None).to_dict()
    records = [header if x == "HEADER" else row if x == "ROW" else x for x in lines]
    path = tmp_path / "bad.jsonl"
    path.write_bytes(jsonl_bytes(records))
    with pytest.raises(JsonlError) as info:
        read_predictions(path)
    assert str(info.value).startswith(f"{path}:{line_no}: ")
    assert fragment in str(info.value)


def test_predictions_not_json(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"cacheeval_predictions": "1.0"\n', encoding="utf-8")
    with pytest.raises(JsonlError, match=r"bad\.jsonl:1: not valid JSON"):
        read_predictions(path)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    with pytest.raises(JsonlError, match="empty predictions file"):
        read_predictions(empty)


# --- loading caches -------------------------------------------------------------------

CACHE_FILE = """
from cacheeval.schema import Verdict

class Threshold:
    def __init__(self, hit=True, name="thr"):
        self.hit = hit
        self.name = name

    def __call__(self, pair):
        return Verdict(is_hit=self.hit, tier_used="embedding")

def cache(pair):
    return Verdict(is_hit=False, tier_used="exact")
"""


def test_load_cache_from_file_and_dotted_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "my_cache.py").write_text(CACHE_FILE, encoding="utf-8")
    fn = load_cache(str(tmp_path / "my_cache.py"))
    assert fn(_rows(1)[0].pair).tier_used == "exact"
    obj = load_cache(str(tmp_path / "my_cache.py"), "Threshold", {"hit": False, "name": "t2"})
    assert obj.name == "t2" and obj.hit is False

    pkg = tmp_path / "userpkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "caches.py").write_text(CACHE_FILE, encoding="utf-8")
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.chdir(tmp_path)
    try:
        obj = load_cache("userpkg.caches", "Threshold", {"hit": True})
        assert obj(_rows(1)[0].pair).is_hit is True
    finally:
        for name in [m for m in sys.modules if m.startswith("userpkg")]:
            del sys.modules[name]


@pytest.mark.parametrize(
    ("module", "cls", "kwargs", "fragment"),
    [
        ("no_such_module_xyz", None, {}, "cannot import cache module 'no_such_module_xyz'"),
        ("FILE", "Nope", {}, "has no attribute 'Nope'"),
        ("FILE", "Threshold", {"colour": 1}, "constructing"),
        ("FILE", None, {"hit": 1}, "is not a class"),
        ("missing/file.py", None, {}, "no such file"),
        ("BROKEN", None, {}, "importing it raised ZeroDivisionError"),
        ("EMPTY", None, {}, "has no attribute 'cache'"),
    ],
)
def test_load_cache_errors(
    tmp_path: Path, module: str, cls: str | None, kwargs: dict[str, Any], fragment: str
) -> None:
    files = {"FILE": CACHE_FILE, "BROKEN": "1 / 0\n", "EMPTY": "x = 1\n"}
    if module in files:
        path = tmp_path / f"{module.lower()}_cache.py"
        path.write_text(files[module], encoding="utf-8")
        module = str(path)
    with pytest.raises(CacheLoadError, match=fragment.replace("(", r"\(")):
        load_cache(module, cls, kwargs)


# --- progress -------------------------------------------------------------------------


def test_progress_only_on_a_terminal() -> None:
    import io

    from cacheeval.support.progress import TerminalProgress, format_eta, terminal_progress

    assert terminal_progress(io.StringIO()) is None  # not a tty: no output at all

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    stream = Tty()
    bar = terminal_progress(stream)
    assert isinstance(bar, TerminalProgress)
    bar(1, 4)
    bar(4, 4)  # the last row is always drawn and ends the line
    text = stream.getvalue()
    assert text.startswith("\r1/4 rows  ") and "rows/s  ETA " in text
    assert "\r4/4 rows  " in text and text.endswith("ETA 0:00:00\n")
    assert format_eta(3725.4) == "1:02:05"
