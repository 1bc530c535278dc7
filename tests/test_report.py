"""The report object: hand-counted numbers on the fixture, serialisation,
JSON Schemas, and the Markdown rendering."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from cacheeval.baselines import AlwaysHit, ExactMatch
from cacheeval.metrics.slices import Slice
from cacheeval.reporting.report import Report
from cacheeval.results.predictions import make_header, write_predictions
from cacheeval.run.harness import evaluate, predict
from cacheeval.schema import Row, Verdict
from cacheeval.support.jsonio import iter_jsonl
from tests.conftest import MINI_BENCH, REPO_ROOT, make_row

SCHEMAS = Path(__file__).resolve().parent.parent / "cacheeval" / "schemas"


def _validator(name: str) -> jsonschema.Draft202012Validator:
    schema = json.loads((SCHEMAS / name).read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.fixture(scope="module")
def exact_report(mini_rows: list[Row]) -> Report:
    return evaluate(ExactMatch(), mini_rows, dataset_path=MINI_BENCH)


def test_headline_on_fixture_hand_counted(exact_report: Report) -> None:
    # exact_match serves the 9 pairs that are identical after case/space folding:
    # 6 HIT rows (qa_factual-0001/0005, math-0002, conversational-0001,
    # personalized-0002, multi_turn-0002) and 3 policy rows that must MISS
    # (tool-0003 mutation, creative-0001, creative-0003). 12 HIT rows, 20 MISS.
    c = exact_report.confusion
    assert (c.tp, c.fp, c.fn, c.tn) == (6, 3, 6, 17)
    h = exact_report.headline
    assert h.fhr.value == pytest.approx(3 / 20)
    assert h.recall.value == pytest.approx(6 / 12)
    assert h.precision.value == pytest.approx(6 / 9)
    assert h.accuracy.value == pytest.approx(23 / 32)
    assert h.f1.value == pytest.approx(12 / (12 + 3 + 6))
    # No ADVERSARIAL pair is verbatim identical (personalized-0001 differs in system prompt).
    assert (h.adversarial_fhr.numerator, h.adversarial_fhr.denominator) == (0, 9)


def _rates(s: Slice) -> dict[str, tuple[float, float]]:
    """(numerator, denominator) of every rate of a slice."""
    names = ("accuracy", "precision", "recall", "f1", "fhr", "hit_rate")
    return {n: (getattr(s, n).numerator, getattr(s, n).denominator) for n in names}


def test_per_domain_hand_counted(exact_report: Report) -> None:
    by = {s.key: s for s in exact_report.per_domain}
    assert list(by)[:3] == ["qa_factual", "qa_open", "math"]  # DOMAINS order
    # qa_factual: TP 0001+0005, FN 0002, TN 0003+0004 -> F1 = 4/5, FHR 0/2.
    assert by["qa_factual"].f1.value == pytest.approx(0.8)
    # TP 2, FP 0, FN 1, TN 2: F1 = TP / n_eff, n_eff = TP + (FP + FN) / 2 = 2.5.
    assert _rates(by["qa_factual"]) == {
        "accuracy": (4, 5),
        "precision": (2, 2),
        "recall": (2, 3),
        "f1": (2, 2.5),
        "fhr": (0, 2),
        "hit_rate": (2, 5),
    }
    assert (by["qa_factual"].fhr.numerator, by["qa_factual"].fhr.denominator) == (0, 2)
    # tool: FP 0003 (mutation), FN 0001, TN 0002+0004 -> FHR 1/3, F1 0.
    assert by["tool"].fhr.value == pytest.approx(1 / 3)
    assert by["tool"].f1.value == 0.0
    # creative: all policy MISS, two identical pairs served -> FHR 2/3, no HIT rows.
    assert by["creative"].fhr.value == pytest.approx(2 / 3)
    assert by["creative"].recall.value is None


def test_per_label_hand_counted(exact_report: Report) -> None:
    by = {s.key: s for s in exact_report.per_label}
    assert list(by) == ["EQUIV", "PARA_SAFE", "RELATED_UNSAFE", "ADVERSARIAL", "UNRELATED"]
    # Every EQUIV pair is verbatim: all 9 served; its 3 policy rows are false hits.
    assert (by["EQUIV"].hit_rate.numerator, by["EQUIV"].hit_rate.denominator) == (9, 9)
    assert by["EQUIV"].fhr.value == 1.0 and by["EQUIV"].fhr.denominator == 3
    # TP 6 (its HIT rows), FP 3 (its policy rows), FN 0, TN 0.
    assert _rates(by["EQUIV"]) == {
        "accuracy": (6, 9),
        "precision": (6, 9),
        "recall": (6, 6),
        "f1": (6, 7.5),
        "fhr": (3, 3),
        "hit_rate": (9, 9),
    }
    # No PARA_SAFE pair is verbatim.
    assert by["PARA_SAFE"].hit_rate.value == 0.0
    assert by["ADVERSARIAL"].fhr.value == 0.0 and by["ADVERSARIAL"].hit_rate.value == 0.0
    assert by["UNRELATED"].recall.value is None


def test_per_difficulty_hand_counted(exact_report: Report) -> None:
    by = {s.key: s for s in exact_report.per_difficulty}
    assert list(by) == ["easy", "medium", "hard"]
    # hard: 12 MISS rows (9 ADVERSARIAL + 3 policy EQUIV), the 3 policy rows served.
    assert by["hard"].n == 12 and by["hard"].fhr.value == pytest.approx(0.25)
    assert by["hard"].recall.value is None
    # easy: its 6 HIT rows are the verbatim pairs, all served; 4 MISS rows, none served.
    assert by["easy"].recall.value == 1.0
    assert (by["easy"].fhr.numerator, by["easy"].fhr.denominator) == (0, 4)
    assert _rates(by["easy"]) == {  # TP 6, FP 0, FN 0, TN 4
        "accuracy": (10, 10),
        "precision": (6, 6),
        "recall": (6, 6),
        "f1": (6, 6),
        "fhr": (0, 4),
        "hit_rate": (6, 10),
    }


def test_per_subscore_hand_counted(exact_report: Report, mini_rows: list[Row]) -> None:
    by = {s.key: s for s in exact_report.per_subscore or ()}
    assert list(by) == ["query", "context", "policy"]
    # policy: 5 never-cache MISS rows, the 3 verbatim ones served (tool-0003,
    # creative-0001, creative-0003): FHR 3/5.
    assert _rates(by["policy"])["fhr"] == (3, 5) and by["policy"].recall.value is None
    # context: 2 MISS rows whose sides differ in system prompt or turns, none served.
    assert by["context"].n == 2 and _rates(by["context"])["fhr"] == (0, 2)
    # query: the 12 HIT rows (6 verbatim, served) and 13 MISS rows, none served.
    assert _rates(by["query"]) == {  # TP 6, FP 0, FN 6, TN 13
        "accuracy": (19, 25),
        "precision": (6, 6),
        "recall": (6, 12),
        "f1": (6, 9.0),
        "fhr": (0, 13),
        "hit_rate": (6, 25),
    }
    # the three partition the rows
    assert sum(s.n for s in by.values()) == len(mini_rows) == exact_report.confusion.n


def test_subscore_operating_points_hand_counted(mini_rows: list[Row]) -> None:
    from cacheeval import Pair

    def scored(pair: Pair) -> Verdict:  # exact_match with a score: 1.0 verbatim, else 0.5
        same = pair.a.key() == pair.b.key()
        return Verdict(is_hit=same, tier_used="exact", score=1.0 if same else 0.5)

    report = evaluate(scored, mini_rows)
    points = {p.key: p for p in report.subscore_operating_points or ()}
    assert list(points) == ["query", "context", "policy"]
    # query: 12 HIT, 13 MISS; the 6 verbatim HIT rows score 1.0, no MISS row does:
    # threshold 1.0 serves 6 of 12 HIT rows with no false hit (0.5 would serve all 13 MISS).
    q = points["query"]
    assert q.threshold == 1.0 and (q.recall.numerator, q.recall.denominator) == (6, 12)
    assert (q.fhr.numerator, q.fhr.denominator) == (0, 13)
    # policy: no HIT row, and its 3 verbatim MISS rows make 1.0 break the budget
    p = points["policy"]
    assert p.threshold is None and p.recall.value is None and p.fhr.value == 0.0
    unscored = evaluate(lambda pair: Verdict(is_hit=False), mini_rows)
    assert unscored.subscore_operating_points is None  # a cache without scores


def test_provenance(exact_report: Report, mini_rows: list[Row], tmp_path: Path) -> None:
    p = exact_report.provenance
    # a file of the checkout is named from its root, the same from any checkout
    assert p.dataset_path == "tests/fixtures/mini_bench.jsonl"
    outside = tmp_path / "rows.jsonl"
    outside.write_bytes(MINI_BENCH.read_bytes())
    elsewhere = evaluate(ExactMatch(), mini_rows, dataset_path=outside).provenance
    assert elsewhere.dataset_path == str(outside)
    assert p.dataset_sha256 is not None and len(p.dataset_sha256) == 64
    assert p.schema_version == "1.1" and p.n_rows == 32
    assert p.cache_name == "exact_match" and p.cache_args == {}
    assert p.created.endswith("Z") and "T" in p.created
    assert p.split is None  # rows of three splits, no filter
    assert p.git_commit is None or len(p.git_commit) == 40
    assert p.git_dirty in (None, True, False)


def test_dict_round_trip(exact_report: Report) -> None:
    data = exact_report.to_dict()
    assert next(iter(data)) == "cacheeval_report"
    assert Report.from_dict(data) == exact_report
    assert Report.from_dict(json.loads(exact_report.to_json())) == exact_report


def test_from_dict_names_the_bad_key(exact_report: Report) -> None:
    data = exact_report.to_dict()
    data["headline"]["fhr"]["value"] = "high"
    with pytest.raises(ValueError, match=r"report\.headline\.fhr\.value"):
        Report.from_dict(data)
    data = exact_report.to_dict()
    del data["latency"]["p99_ms"]
    with pytest.raises(ValueError, match="p99_ms"):
        Report.from_dict(data)
    with pytest.raises(ValueError, match="version"):
        Report.from_dict({**exact_report.to_dict(), "cacheeval_report": "9.0"})


def test_report_validates_against_schema(exact_report: Report, mini_rows: list[Row]) -> None:
    v = _validator("report.schema.json")
    v.validate(json.loads(exact_report.to_json()))

    # A report with errors, no threshold-free block and null rates validates too.
    def flaky(row: Row) -> Verdict:
        if row.domain == "math":
            raise RuntimeError("boom")
        return Verdict(is_hit=False, tier_used="judge")

    odd = evaluate(flaky, mini_rows[:3] + mini_rows[6:9], cache_args={"k": [1, 2]})
    assert odd.threshold_free is None
    v.validate(odd.to_dict())
    bad = exact_report.to_dict()
    bad["confusion"]["tp"] = -1
    assert not v.is_valid(bad)


def test_predictions_file_validates_against_schema(mini_rows: list[Row], tmp_path: Path) -> None:
    v = _validator("prediction.schema.json")
    header_schema = {**v.schema, "$ref": "#/$defs/header"}
    header_schema.pop("oneOf")
    row_schema = {**v.schema, "$ref": "#/$defs/prediction"}
    row_schema.pop("oneOf")

    def sometimes_fails(row: Row) -> Verdict:
        if row.domain == "code":
            raise KeyError("missing embedding")
        return ExactMatch()(row)

    preds = predict(sometimes_fails, mini_rows)
    path = tmp_path / "p.jsonl"
    header = make_header(cache_name="x", created="2026-01-01T00:00:00Z", dataset_sha256="0" * 64)
    write_predictions(path, header, preds)
    lines = [value for _, value in iter_jsonl(path)]
    jsonschema.Draft202012Validator(header_schema).validate(lines[0])
    for line in lines[1:]:
        jsonschema.Draft202012Validator(row_schema).validate(line)
        v.validate(line)
    assert any(line["error"] for line in lines[1:])
    wrong = dict(lines[1], is_hit=True, error="ValueError: x")
    assert not jsonschema.Draft202012Validator(row_schema).is_valid(wrong)


def test_markdown_has_every_section(exact_report: Report) -> None:
    md = exact_report.to_markdown()
    for heading in (
        "# CacheEval report: exact_match",
        "## Headline",
        "## Threshold-free",
        "## Per domain",
        "## Per label",
        "## Per difficulty",
        "## Latency",
        "## Cost",
        "## Verification tiers",
        "## Errors and timeouts",
        "## Missing and extra ids",
    ):
        assert heading in md
    h = exact_report.headline
    # The renderer prints the computed numbers, formatted, with their CIs.
    assert f"| FHR | {h.fhr.value:.3f} [{h.fhr.ci_low:.3f}, {h.fhr.ci_high:.3f}] | 3/20 |" in md
    assert "| ADVERSARIAL-FHR | 0.000 [0.000, " in md
    assert "nearest-rank" in md


def test_markdown_shows_null_with_count() -> None:
    rows = [make_row(1, "EQUIV"), make_row(2, "PARA_SAFE")]  # no MISS rows: FHR 0/0
    md = evaluate(AlwaysHit(), rows).to_markdown()
    assert "| FHR | null (0/0) | 0/0 |" in md
    assert "| ADVERSARIAL-FHR | null (0/0) |" in md


def test_markdown_escapes_table_cells(mini_rows: list[Row]) -> None:
    def piped(row: Row) -> Verdict:
        raise ValueError("a|b\nsecond line")

    md = evaluate(piped, mini_rows[:2]).to_markdown()
    assert "ValueError: a\\|b" in md
    assert "second line" not in md  # only the first line of a message is kept


def _committed_reports() -> list[Path]:
    """Every committed CacheEval Report JSON with a Markdown file beside it.

    Those .md files are plain :meth:`Report.to_markdown` output (cacheeval eval,
    scripts/run_baselines.py, adapters/gptcache_runner.py); the composite
    reports (EXTERNAL, REPLAY, SHIFT, VERIFIED_*) are other JSON kinds.
    """
    out = []
    for path in sorted((REPO_ROOT / "reports").rglob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        if (
            isinstance(data, dict)
            and "cacheeval_report" in data
            and path.with_suffix(".md").is_file()
        ):
            out.append(path)
    return out


def test_committed_reports_rerender_byte_identically() -> None:
    paths = _committed_reports()
    assert len(paths) >= 8  # the baselines and the GPTCache runs
    for path in paths:
        report = Report.from_dict(json.loads(path.read_text(encoding="utf-8")))
        md = path.with_suffix(".md").read_text(encoding="utf-8")
        assert report.to_markdown() == md, path.name


def test_git_info(tmp_path: Path) -> None:
    from cacheeval.support.gitinfo import read_git_info
    from tests.conftest import REPO_ROOT

    assert read_git_info(tmp_path) == read_git_info(tmp_path / "missing")
    outside = read_git_info(tmp_path)
    assert outside.commit is None and outside.dirty is None
    inside = read_git_info(REPO_ROOT)
    if inside.commit is not None:  # the suite may run from an exported tree
        assert len(inside.commit) == 40 and int(inside.commit, 16) >= 0
        assert isinstance(inside.dirty, bool)
