"""The dataset-level verification engine and the `cacheeval verify` command."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from cacheeval import verify
from cacheeval.cli import main as cli
from cacheeval.schema import Row
from cacheeval.support.jsonio import write_jsonl
from cacheeval.verify import Check
from cacheeval.verify.engine import (
    format_report,
    method_counts,
    problems,
    safe_check,
    terminal_progress,
    tier_counts,
    verify_rows,
)
from tests.pipeline.synthetic import make_shard

from .rows import make


def _alias(a: list[str], b: list[str]) -> dict[str, Any]:
    return {"kind": "alias_set", "aliases_a": a, "aliases_b": b}


def _rows() -> list[Row]:
    """Two agreeing rows, one contradicting its label, one undecided, one policy row."""
    return [
        make(rid="cb-qa_factual-0001", payload=_alias(["Canberra"], ["Canberra"])),
        make(
            rid="cb-qa_factual-0002",
            label="ADVERSARIAL",
            answer_b="Wellington",
            payload=_alias(["Canberra"], ["Wellington"]),
        ),
        # Labelled PARA_SAFE (HIT) but the cached answer is not accepted for query_b.
        make(
            rid="cb-qa_factual-0003",
            label="PARA_SAFE",
            answer_b="Sydney",
            payload=_alias(["Canberra"], ["Sydney"]),
        ),
        # The rubric payload fails its own side: undecided.
        make(
            rid="cb-qa_open-0001",
            domain="qa_open",
            method="rubric",
            label="EQUIV",
            payload={"kind": "rubric", "criteria_a": [], "criteria_b": []},
        ),
        make(
            rid="cb-creative-0001",
            domain="creative",
            method="policy_no_cache",
            label="PARA_SAFE",
            answer_a=None,
            answer_b=None,
            payload={"kind": "policy", "policy": "creative", "reason": "new poem each time"},
        ),
    ]


def test_results_agree_disagree_and_undecided() -> None:
    results = verify_rows(_rows())
    assert [r.row_id for r in results] == [r.id for r in _rows()]
    assert [r.agrees for r in results] == [True, True, False, False, True]
    assert [r.derived for r in results] == ["HIT", "MISS", "MISS", "undecided", "MISS"]
    assert [r.row_id for r in problems(results)] == ["cb-qa_factual-0003", "cb-qa_open-0001"]


def test_tier_and_method_counts() -> None:
    results = verify_rows(_rows())
    overall = tier_counts(results)
    assert overall.rows == 5
    assert overall.by_tier == (("deterministic", 4), ("rubric", 1), ("judge", 0))
    assert overall.share("deterministic") == pytest.approx(0.8)
    assert overall.share("judge") == 0.0
    assert tier_counts([]).share("rubric") == 0.0
    assert method_counts(results) == {"exact_match": 3, "rubric": 1, "policy_no_cache": 1}


def test_report_lists_distribution_and_every_disagreement() -> None:
    text = format_report(verify_rows(_rows()))
    assert "verified 5 rows in 3 domain(s)" in text
    lines = text.splitlines()
    qa = next(x for x in lines if x.strip().startswith("qa_factual"))
    assert qa.split()[:3] == ["qa_factual", "3", "3"] and "(100.0%)" in qa
    total = next(x for x in lines if x.strip().startswith("all"))
    assert total.split()[:5] == ["all", "5", "4", "(", "80.0%)"]
    assert "disagreements: 2 (1 contradicting the label, 1 undecided)" in text
    assert (
        "cb-qa_factual-0003: label PARA_SAFE/HIT, re-derived MISS: "
        "cached answer is not an accepted answer to query_b"
    ) in text
    assert "cb-qa_open-0001: label EQUIV/HIT, re-derived undecided: rubric payload" in text


def test_parallel_run_equals_sequential() -> None:
    rows = _rows() * 3
    assert verify_rows(rows, jobs=2) == verify_rows(rows, jobs=1)


def test_progress_callback_and_terminal_detection() -> None:
    seen: list[tuple[int, int]] = []
    verify_rows(_rows()[:2], progress=lambda d, t: seen.append((d, t)))
    assert seen == [(1, 2), (2, 2)]
    assert terminal_progress(io.StringIO()) is None


def test_a_checker_that_raises_is_undecided_not_a_crash(monkeypatch: pytest.MonkeyPatch) -> None:
    def ghost(row: Row) -> Check:
        raise ModuleNotFoundError("no module named 'sympy'")

    monkeypatch.setitem(verify.CHECKERS, "ghost", ghost)
    row = make(payload={"kind": "ghost"})
    direct = verify.check_row(row)  # a checker that raises is undecided, not a crash
    assert direct.binary is None and "ModuleNotFoundError" in direct.detail
    c = safe_check(row)
    assert c == Check(None, c.detail)
    assert "ModuleNotFoundError" in c.detail


def test_an_unknown_payload_kind_is_undecided() -> None:
    c = verify.check_row(make(payload={"kind": "no_such_kind"}))
    assert c == Check(None, "no checker for payload kind 'no_such_kind'")


def test_hidden_rows_are_refused() -> None:
    hidden = make(label="EQUIV", payload=_alias(["x"], ["x"]))
    hidden = Row.from_dict({**hidden.to_dict(), "label": None, "binary_label": None})
    with pytest.raises(ValueError, match="carries no label"):
        verify_rows([hidden])


# --- the command -------------------------------------------------------------------------


def test_cli_verify_clean_shards(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_jsonl(tmp_path / "math.jsonl", make_shard("math", (2, 2, 3, 5, 2)))
    write_jsonl(tmp_path / "creative.jsonl", make_shard("creative", (1, 1, 1, 1, 1)))
    assert cli(["verify", "--shards", str(tmp_path), "--jobs", "1"]) == 0
    out = capsys.readouterr().out
    assert "verified 19 rows in 2 domain(s)" in out
    assert "disagreements: 0" in out
    # --domain restricts the run.
    assert cli(["verify", "--shards", str(tmp_path), "--domain", "creative", "--jobs", "1"]) == 0
    assert "verified 5 rows in 1 domain(s)" in capsys.readouterr().out


def test_cli_verify_reports_disagreement_and_invalid_rows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = make_shard("math", (2, 2, 3, 5, 2))
    hit = next(r for r in rows if r["binary_label"] == "HIT")
    hit["verification_payload"]["aliases_b"] = ["Something else"]
    hit["expected_answer_b"] = "Something else"
    rows[-1]["difficulty"] = "impossible"
    write_jsonl(tmp_path / "math.jsonl", rows)
    assert cli(["verify", "--shards", str(tmp_path), "--jobs", "2"]) == 1
    out = capsys.readouterr().out
    assert f"{hit['id']}: label {hit['label']}/HIT, re-derived MISS" in out
    assert "invalid rows (not verified): 1" in out
    assert "math.jsonl:14: unknown difficulty 'impossible'" in out


def test_cli_verify_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(["verify", "--shards", str(tmp_path)]) == 2
    assert "verify: error: no shards" in capsys.readouterr().err
    (tmp_path / "math.jsonl").write_text('{"id": 1}\nnot json\n')
    assert cli(["verify", "--shards", str(tmp_path)]) == 2
    assert "math.jsonl:2: not valid JSON" in capsys.readouterr().err
    assert cli(["verify", "--shards", str(tmp_path), "--jobs", "0"]) == 2


def test_cli_verify_runs_no_code_row_without_os_isolation(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from cacheeval.verify import sandbox

    monkeypatch.setenv(sandbox.MODE_ENV, "python")
    monkeypatch.delenv(sandbox.ALLOW_UNISOLATED_ENV, raising=False)
    sandbox._reset_isolation_for_tests()
    try:
        assert cli(["verify", "--domain", "code", "--jobs", "1"]) == 2
    finally:
        sandbox._reset_isolation_for_tests()
    err = capsys.readouterr().err
    assert "code rows need OS isolation" in err and "apt-get install bubblewrap" in err
    assert "--allow-unisolated" in err
