"""Failures in every report: the worst false and missed hits, the groups by
what differs, the top score, the verdict and the glossary. Nine hand-written
rows with hand-picked scores; every expected figure is worked out by hand in
the comments."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from cacheeval.reporting.report import REPORT_VERSION, Report
from cacheeval.results.columns import ScoreColumns
from cacheeval.results.failures import MAX_EXAMPLES, FailureTally, failures_of
from cacheeval.results.predictions import Prediction
from cacheeval.run.harness import score
from cacheeval.schema import Row
from tests.conftest import REPO_ROOT, make_row

SCHEMA = REPO_ROOT / "cacheeval" / "schemas" / "report.schema.json"
TURN = ({"role": "user", "content": "It is a fan oven."},)


def rows_and_predictions() -> tuple[list[Row], list[Prediction]]:
    """MISS rows r1-r5, HIT rows r6-r9 (ids sort in this order)."""

    def pred(row: Row, hit: bool, s: float | None, error: str | None = None) -> Prediction:
        conf = None if s is None else (s if hit else 1 - s)
        return Prediction(row.id, hit, conf, s, "error" if error else "embedding", 1.0, error)

    r1 = make_row(
        1,
        "ADVERSARIAL",
        query_a="What's my balance?",
        query_b="What's my balance?",
        system_prompt_a="User: Ana Ruiz.",
        system_prompt_b="User: Bo Chen.",
        subcategory="cross_user_same_query",
    )
    r2 = make_row(
        2,
        "RELATED_UNSAFE",
        query_a="How long should I bake it?",
        query_b="How long should I bake it?",
        context_a=TURN,
    )
    r3 = make_row(
        3, "ADVERSARIAL", query_a="Top 5 customers by spend", query_b="Top 10 customers by spend"
    )
    r4 = make_row(
        4,
        "EQUIV",
        "creative",
        query_a="Write a haiku about rain.",
        query_b="write a haiku about rain",
        verification_method="policy_no_cache",
        verification_payload={"kind": "policy", "policy": "creative"},
    )
    r5 = make_row(5, "ADVERSARIAL", query_a="Rivers of Iceland", query_b="Rivers of Ireland")
    r6 = make_row(
        6, "EQUIV", query_a="Why did the Titanic sink?", query_b="why did the titanic sink?"
    )
    r7 = make_row(
        7,
        "PARA_SAFE",
        query_a="What is the closest star to Earth?",
        query_b="Which star lies nearest to our planet?",
    )
    r8 = make_row(
        8, "EQUIV", query_a="What is 1000 divided by 8?", query_b="What is 1,000 divided by 8?"
    )
    r9 = make_row(9, "EQUIV", query_a="Capital of Peru?", query_b="capital of peru")
    rows = [r1, r2, r3, r4, r5, r6, r7, r8, r9]
    preds = [
        pred(r1, True, 1.0),    # false hit, system prompt / user, at the top score
        pred(r2, True, 1.0),    # false hit, prior turns, at the top score
        pred(r3, True, 0.9),    # false hit, number
        pred(r4, True, 0.95),   # false hit, policy: creative
        pred(r5, False, 0.4),   # correct miss
        pred(r6, True, 1.0),    # correct hit, at the top score
        pred(r7, False, 0.3),   # missed hit, most words differ
        pred(r8, False, 0.7),   # missed hit, number
        pred(r9, False, None, "RuntimeError: boom"),  # missed hit, a failed call
    ]  # fmt: skip
    return rows, preds


@pytest.fixture
def report() -> Report:
    rows, preds = rows_and_predictions()
    return score(preds, rows, cache_name="toy", created="2026-01-01T00:00:00Z")


def test_failure_lists_groups_and_top_score(report: Report) -> None:
    f = report.failures
    assert f is not None
    assert (f.n_false_hits, f.n_missed_hits, f.n_failed_calls, f.n_unlisted) == (4, 3, 1, 0)
    ids = [r.id for r in rows_and_predictions()[0]]
    # false hits by score, highest first, the 1.0 tie by id; missed hits lowest first
    assert [e.id for e in f.false_hits] == [ids[0], ids[1], ids[3], ids[2]]
    assert [e.id for e in f.missed_hits] == [ids[6], ids[7]]  # the failed call is not listed
    assert [(g.kind, g.count, g.share, g.example_ids) for g in f.false_hit_groups] == [
        ("system prompt / user", 1, 0.25, (ids[0],)),
        ("prior turns", 1, 0.25, (ids[1],)),
        ("policy: creative", 1, 0.25, (ids[3],)),
        ("number", 1, 0.25, (ids[2],)),
    ]
    assert [(g.kind, g.count, g.share) for g in f.missed_hit_groups] == [
        ("number", 1, 0.5),
        ("most words differ", 1, 0.5),
    ]
    top = f.top_score
    assert top is not None
    # r1, r2 and r6 score 1.0; all three are served, r1 and r2 must not be
    assert (top.score, top.n_rows, top.n_served, top.n_false_hits) == (1.0, 3, 3, 2)
    assert [g.kind for g in top.false_hit_groups] == ["system prompt / user", "prior turns"]
    first = f.false_hits[0]
    assert (first.query_a, first.query_b, first.label) == (
        "What's my balance?",
        "What's my balance?",
        "ADVERSARIAL",
    )
    assert [(d.kind, d.a, d.b) for d in first.differences] == [
        ("system prompt / user", "Ana Ruiz", "Bo Chen")]  # fmt: skip


def test_verdict_lines(report: Report) -> None:
    # FHR 4/5 (r1-r4 served of r1-r5); recall 1/4 (r6 of r6-r9). Context (system
    # prompt 1 + prior turns 1) is the largest merged group, 2 of 4: not most.
    # At FHR <= 5% no threshold fires: every threshold up to 1.0 serves r1 or r2.
    assert report.verdict == (
        "Serves 80% of the requests it must not (FHR: 4 of 5) and 25% of those it may"
        " (recall: 1 of 4).",
        "The largest group of false hits (2 of 4) are the same or a similar query with"
        " another system prompt (another user) or after other turns: key the cache on the"
        " system prompt and the conversation.",
        "No threshold keeps FHR at 5% or below and serves anything; 2 of the 3 rows it serves"
        " at its top score (1) must not be, and no threshold removes them: both of them are the"
        " same or a similar query with another system prompt (another user) or after other turns,"
        " so key the cache on the system prompt and the conversation.",
    )


def test_verdict_advice_for_the_other_groups() -> None:
    rows, preds = rows_and_predictions()
    # r2-r8 and one more number false hit; r2 is now refused (score 0.0)
    extra = make_row(10, "ADVERSARIAL", query_a="Top 3 films", query_b="Top 4 films")
    rows2 = rows[1:8] + [extra]
    preds2 = preds[1:8] + [Prediction(extra.id, True, 0.8, 0.8, "e", 1.0, None)]
    preds2[0] = Prediction(rows[1].id, False, 1.0, 0.0, "e", 1.0, None)
    r = score(preds2, rows2)
    assert r.verdict is not None
    # false hits: r3 (number), r4 (policy), extra (number): number, 2 of 3, is most
    assert r.verdict[1] == (
        "Most false hits (2 of 3) are queries that differ in a number: compare the numbers"
        " of the two queries."
    )
    # r6 (HIT) is alone at the top score 1.0: threshold 1.0 serves it and no MISS row,
    # FHR 0, recall 1/3 (HIT rows r6, r7, r8) - the recall it has now (r6 of the three)
    assert r.verdict[2] == (
        "At FHR <= 5% its best threshold (>= 1) keeps 33% recall (now 33%); a threshold"
        " change fixes most of it."
    )


def test_verdict_without_false_hits_or_scores() -> None:
    rows, preds = rows_and_predictions()
    # never serve: no false hit; the largest missed-hit group is named instead
    nothing = [Prediction(p.id, False, None, None, "x", 1.0, None) for p in preds]
    r = score(nothing, rows)
    assert r.verdict is not None
    # FHR 0/5, recall 0/4; missed hits r6 (nothing detected), r7 (most words),
    # r8 (number), r9 (nothing detected: case only) -> nothing detected 2 of 4
    assert r.verdict[0] == (
        "Serves 0% of the requests it must not (FHR: 0 of 5) and 0% of those it may"
        " (recall: 0 of 4)."
    )
    assert r.verdict[1] == (
        "It serves no request it must not; the largest group of its missed hits (2 of 4)"
        " are near-identical pairs."
    )
    assert r.verdict[2] == (
        "It gives no scores for every row, so this report cannot tune a threshold for it."
    )
    assert r.failures is not None and r.failures.top_score is None


def test_worst_lists_keep_ten_by_score_then_id() -> None:
    rows = [make_row(i, "ADVERSARIAL", query_a=f"q {i}", query_b=f"q {i} x") for i in range(1, 31)]
    # scores 0.5 for odd ids, 0.9 for ids divisible by 4, 0.7 otherwise
    scores = [0.5 if i % 2 else 0.9 if i % 4 == 0 else 0.7 for i in range(1, 31)]
    preds = [
        Prediction(r.id, True, s, s, "e", 1.0, None) for r, s in zip(rows, scores, strict=True)
    ]
    f = failures_of(rows, preds)
    want = [r.id for r, s in zip(rows, scores, strict=True) if s == 0.9]  # 7 rows: 4, 8, ..., 28
    want += [r.id for r, s in zip(rows, scores, strict=True) if s == 0.7][:3]  # 2, 6, 10
    assert [e.id for e in f.false_hits] == want
    assert len(f.false_hits) == MAX_EXAMPLES and f.n_false_hits == 30


def test_columns_without_rows_give_no_failures() -> None:
    rows, preds = rows_and_predictions()
    columns = ScoreColumns()
    for row, p in zip(rows, preds, strict=True):
        columns.add(row.y, row.label, row.domain, row.difficulty, p)
    assert columns.collected_failures() is None
    assert ScoreColumns().collected_failures() is None
    tally = FailureTally()
    assert tally.result().false_hits == ()


def test_json_round_trip_schema_and_old_reports(report: Report) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    data = json.loads(report.to_json())
    assert data["cacheeval_report"] == REPORT_VERSION == "1.4"
    jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text("utf-8"))).validate(data)
    assert Report.from_dict(data) == report
    # full queries in the JSON
    assert data["failures"]["false_hits"][0]["query_b"] == "What's my balance?"
    # a 1.3 report (no verdict, no failures) still loads and renders as before
    old: dict[str, Any] = {k: v for k, v in data.items() if k not in ("verdict", "failures")}
    old["cacheeval_report"] = "1.3"
    loaded = Report.from_dict(old)
    assert loaded.failures is None and loaded.verdict is None
    md = loaded.to_markdown()
    assert "## Failures" not in md and "## Terms" not in md and "> Serves" not in md
    assert "## Headline" in md


def test_markdown_first_screen(report: Report) -> None:
    md = report.to_markdown()
    lines = md.splitlines()
    # the verdict comes right under the title, before the run table
    assert lines[0] == "# CacheEval report: toy"
    assert lines[2].startswith("> Serves 80% of the requests it must not")
    assert lines[4].startswith("> No threshold keeps FHR")
    order = [md.index(h) for h in ("| Run |", "## Terms", "## Headline", "## Failures",
                                     "## Threshold-free")]  # fmt: skip
    assert order == sorted(order)
    for term in ("**FHR**", "**Recall**", "**HIT and MISS; EQUIV**", "**Calibration gap and ECE**",
                 "**Difficulty**", "**Sub-scores**", "**What differs**"):  # fmt: skip
        assert term in md
    assert "| system prompt / user | 1 | 25% | cb-qa_factual-0001 |" in md
    assert "Rows at its top score (1): 3 rows, 3 served, 2 of them false hits." in md
    assert (
        "| cb-qa_factual-0003 | ADVERSARIAL (probe) | 0.9000 | Top 5 customers by spend |"
        " Top 10 customers by spend | number: 5 → 10 |"
    ) in md
    assert "3 missed hits (HIT rows not served, 1 of them failed calls" in md


def test_markdown_cuts_long_queries_json_keeps_them() -> None:
    long_a = "Explain " + "very " * 40 + "slowly"
    row = make_row(1, "ADVERSARIAL", query_a=long_a, query_b=long_a + " please|now")
    r = score([Prediction(row.id, True, 0.9, 0.9, "e", 1.0, None)], [row])
    md = r.to_markdown()
    assert long_a not in md
    cut = "Explain " + ("very " * 40)[:81].rstrip() + "…"
    assert f"| {cut} | {cut} |" in md
    assert r.failures is not None and r.failures.false_hits[0].query_a == long_a


def test_server_never_computes_hidden_label_failures(tmp_path: Path) -> None:
    pytest.importorskip("starlette")
    from cacheeval.server import grading
    from cacheeval.server.grading import halves_of

    rows, preds = rows_and_predictions()
    test_rows = tuple(dataclasses.replace(r, split="test") for r in rows)
    test = grading.TestSet(test_rows, frozenset(r.id for r in test_rows), "d" * 64, "l" * 64)
    upload = grading.Upload("jsonl", tuple(preds), "x", None, None, None)
    # the same rows scored by the harness do have failures
    assert score(preds, test_rows).failures is not None
    report = grading.score_upload(upload, test, cache_name="x")
    assert report.failures is None and report.verdict is None
    stored = grading.grade(upload, test, halves_of(test, "secret"), cache_name="x")
    text = json.dumps(stored)
    assert "failures" not in text and "Top 5 customers" not in text
    # no request text and no quoted field (the sub-score counts name a skill, "query")
    assert '"query_a"' not in text and '"query_b"' not in text
    assert not [r.id for r in test_rows if r.query_a in text or r.query_b in text]


def test_round_pages_show_no_failures(tmp_path: Path, report: Report) -> None:
    pytest.importorskip("starlette")
    from cacheeval.server import pages
    from cacheeval.server.grading import Round

    r = Round("r1", "seed", "s" * 64, 9, (report.to_dict(),))
    shown = json.dumps(pages.round_json(r)) + pages.round_page(r) + pages.round_figures(r)
    assert report.failures is not None
    for e in report.failures.false_hits:
        assert e.id not in shown and e.query_a not in shown
    assert "Failures" not in shown and "Serves 80%" not in shown


def test_eval_and_score_reports_carry_the_same_failures(tmp_path: Path) -> None:
    from cacheeval.cli import main
    from cacheeval.dataset import load_bench
    from cacheeval.results.predictions import iter_predictions
    from tests.conftest import MINI_BENCH, MINI_LABELS

    common = ["--bench", str(MINI_BENCH), "--labels", str(MINI_LABELS)]
    preds = tmp_path / "p.jsonl"
    assert (
        main(
            [
                "eval",
                *common,
                "--baseline",
                "always_hit",
                "--out",
                str(tmp_path / "e.md"),
                "--json",
                str(tmp_path / "e.json"),
                "--predictions",
                str(preds),
            ]
        )
        == 0
    )
    assert main(["score", *common, "--predictions", str(preds), "--out", str(tmp_path / "s.md"),
                 "--json", str(tmp_path / "s.json")]) == 0  # fmt: skip
    by_eval = Report.from_dict(json.loads((tmp_path / "e.json").read_text("utf-8")))
    by_score = Report.from_dict(json.loads((tmp_path / "s.json").read_text("utf-8")))
    rows = load_bench(MINI_BENCH, labels_path=MINI_LABELS)
    by_api = failures_of(rows, list(iter_predictions(preds)[1]))
    assert by_eval.failures == by_score.failures == by_api
    # always_hit serves every row: its false hits are the MISS rows
    assert by_api.n_false_hits == sum(1 for r in rows if r.y == 0) > 0
    assert by_api.n_missed_hits == 0 and by_eval.verdict == by_score.verdict
    # the test rows' labels came from --labels: counted, never named
    test_ids = {r.id for r in rows if r.split == "test"}
    assert by_api.n_unlisted == sum(1 for r in rows if r.split == "test" and r.y == 0) > 0
    named = {e.id for e in by_api.false_hits} | {
        i for g in by_api.false_hit_groups for i in g.example_ids
    }
    assert named and not named & test_ids
    md = (tmp_path / "s.md").read_text("utf-8")
    assert not any(i in md for i in test_ids)
    assert f"{by_api.n_unlisted} of them are test-split rows whose labels are hidden" in md
    # asked for, they are listed
    assert main(["score", *common, "--predictions", str(preds), "--out", str(tmp_path / "t.md"),
                 "--json", str(tmp_path / "t.json"), "--list-test-failures"]) == 0  # fmt: skip
    listed = Report.from_dict(json.loads((tmp_path / "t.json").read_text("utf-8"))).failures
    assert listed is not None and listed.n_unlisted == 0
    assert listed == failures_of(rows, list(iter_predictions(preds)[1]), list_test=True)
    assert listed.n_false_hits == by_api.n_false_hits


def test_verdict_when_fhr_is_within_budget() -> None:
    # 20 MISS rows (one served, score 0.6), 2 HIT rows (served at 0.9 and 0.8)
    miss = [make_row(i, "UNRELATED", query_a=f"a{i}", query_b=f"b{i}") for i in range(1, 21)]
    hit = [make_row(i, "EQUIV", query_a=f"c{i}", query_b=f"c{i}") for i in (21, 22)]
    preds = [Prediction(r.id, i == 0, 0.9, 0.6 if i == 0 else 0.1, "e", 1.0, None)
             for i, r in enumerate(miss)]  # fmt: skip
    preds += [Prediction(hit[0].id, True, 0.9, 0.9, "e", 1.0, None),
              Prediction(hit[1].id, True, 0.8, 0.8, "e", 1.0, None)]  # fmt: skip
    r = score(preds, miss + hit)
    assert r.verdict is not None
    # FHR 1/20 = 5%: within the budget; threshold 0.8 serves both HIT rows and no MISS row
    assert r.verdict[0].startswith("Serves 5% of the requests it must not (FHR: 1 of 20)")
    assert r.verdict[2] == (
        "Its FHR is within the 5% budget; at FHR <= 5% its best threshold (>= 0.8) keeps"
        " 100% recall (now 100%)."
    )
    md = r.to_markdown()
    assert "Rows at its top score (0.9): 1 row, 1 served, 0 of them false hits." in md


def test_verdict_names_the_missed_hits_when_fhr_is_within_budget() -> None:
    # 20 MISS rows, one served (FHR 5%); 3 HIT rows, two refused paraphrases
    miss = [make_row(i, "UNRELATED", query_a=f"a{i}", query_b=f"b{i}") for i in range(1, 21)]
    hit = [
        make_row(21, "EQUIV", query_a="Capital of Peru?", query_b="capital of peru"),
        make_row(22, "PARA_SAFE", query_a="What is the closest star to Earth?",
                 query_b="Which star lies nearest to our planet?"),
        make_row(23, "PARA_SAFE", query_a="How do I boil an egg?",
                 query_b="Tell me the steps for cooking eggs in hot water"),
    ]  # fmt: skip
    preds = [Prediction(r.id, i == 0, 0.9, 0.6 if i == 0 else 0.1, "e", 1.0, None)
             for i, r in enumerate(miss)]  # fmt: skip
    preds += [Prediction(hit[0].id, True, 1.0, 1.0, "e", 1.0, None)]
    preds += [Prediction(h.id, False, 0.7, 0.3, "e", 1.0, None) for h in hit[1:]]
    r = score(preds, miss + hit)
    assert r.verdict is not None
    # 2 analysed missed hits, both "most words differ"; the one false hit (a1/b1: "most
    # words differ" too) is fewer than them
    assert r.verdict[1] == (
        "Both of its missed hits are paraphrases in other words; its one false hit is among"
        " queries that share under half their words."
    )


def test_test_split_rows_are_grouped_but_not_listed_unless_asked() -> None:
    rows, preds = rows_and_predictions()
    test_rows = [dataclasses.replace(r, split="test") if i in (0, 6) else r
                 for i, r in enumerate(rows)]  # fmt: skip
    f = failures_of(test_rows, preds)
    # r1 (false hit, system prompt) and r7 (missed hit, most words) are test rows
    assert f.n_unlisted == 2 and (f.n_false_hits, f.n_missed_hits) == (4, 3)
    assert rows[0].id not in {e.id for e in f.false_hits}
    assert [e.id for e in f.missed_hits] == [rows[7].id]
    groups = {g.kind: (g.count, g.example_ids) for g in f.false_hit_groups}
    assert groups["system prompt / user"] == (1, ())
    top = f.top_score
    assert top is not None and top.n_false_hits == 2
    assert {g.kind: g.example_ids for g in top.false_hit_groups}["system prompt / user"] == ()
    assert failures_of(test_rows, preds, list_test=True) == failures_of(rows, preds)


def test_verdict_for_a_constant_score() -> None:
    rows, _ = rows_and_predictions()
    everything = [Prediction(r.id, True, 1.0, 1.0, "x", 1.0, None) for r in rows]
    r = score(everything, rows)
    assert r.verdict is not None and r.failures is not None
    # all nine rows at score 1.0: the top score holds every scored row
    assert r.failures.top_score is not None and r.failures.top_score.n_rows == 9
    assert r.verdict[2] == (
        "It gives every row the same score, so no threshold changes what it serves."
    )
    # false hits r1-r5: context 2 (r1, r2), policy 1, number 1, name 1 (Iceland/Ireland)
    assert r.verdict[1].startswith("The largest group of false hits (2 of 5) are the same")
