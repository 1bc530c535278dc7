"""reports/STRESS.md's record and renderer (cacheeval.benches.stress_report) on
hand-made stress rows: family rates, the verified cache's targets and the kinds
that hold it back, Kendall's tau, and a Markdown made from the JSON alone."""

from __future__ import annotations

import json

import pytest

from cacheeval.benches.stress_report import (
    CacheResult,
    family_rates,
    holding_back,
    render_markdown,
    stress_fhr,
    to_record,
    view_link,
    wrong_decisions,
)
from cacheeval.run.harness import evaluate, evaluate_with_predictions
from cacheeval.schema import Pair, Verdict
from cacheeval.support.jsonio import dumps_pretty
from tests.conftest import REPO_ROOT, make_row
from tests.test_report_kinds import kind_rows, serve_marked


def serve_all(pair: Pair) -> Verdict:
    return Verdict(is_hit=True, score=1.0)


def serve_none(pair: Pair) -> Verdict:
    return Verdict(is_hit=False, score=0.0)


def test_family_rates_and_stress_fhr() -> None:
    kinds = evaluate(serve_marked, kind_rows()).per_kind or ()
    fams = family_rates(kinds)
    assert list(fams) == ["noise", "identity", "context", "policy"]
    assert (fams["noise"]["recall"].numerator, fams["noise"]["recall"].denominator) == (2, 3)
    assert (fams["identity"]["fhr"].numerator, fams["identity"]["fhr"].denominator) == (1, 4)
    assert fams["context"]["n"] == 2
    # every MISS stress row: city 1/4, context 2/2, policy 1/1 -> 4/7
    e = stress_fhr(kinds)
    assert (e.numerator, e.denominator) == (4, 7)


def test_targets_name_the_kinds_that_hold_the_cache_back() -> None:
    kinds = evaluate(serve_marked, kind_rows()).per_kind or ()
    checks = {c["family"]: c for c in holding_back(kinds)}
    assert [c["family"] for c in holding_back(kinds)] == ["identity", "context", "noise"]
    assert not checks["identity"]["holds"]  # 1/4 > 0.05
    assert [k["kind"] for k in checks["identity"]["holding_back"]] == ["identity/city"]
    assert checks["context"]["holding_back"][0]["value"] == 1.0
    assert not checks["noise"]["holds"]  # 2/3 < 0.90
    assert checks["noise"]["holding_back"] == [
        {"kind": "noise/typo_drop", "value": 2 / 3, "numerator": 2, "denominator": 3}
    ]
    perfect = evaluate(lambda p: Verdict(is_hit=p.b.query.startswith("serve") and p.id in {
        r.id for r in kind_rows()[:2]}), kind_rows()).per_kind or ()  # fmt: skip
    held = {c["family"]: c["holds"] for c in holding_back(perfect)}
    assert held == {"identity": True, "context": True, "noise": False}


def test_record_taus_and_markdown() -> None:
    rows = kind_rows()
    own = [make_row(1, "ADVERSARIAL", split="dev", query_b="serve"),
           make_row(2, "ADVERSARIAL", split="dev", query_b="x")]  # fmt: skip
    results = [
        CacheResult(
            name,
            "reference",
            {"a": evaluate(c, rows), "b": evaluate(c, rows[:9])},
            evaluate(c, own),
        )  # fmt: skip
        for name, c in (("all", serve_all), ("marked", serve_marked), ("none", serve_none))
    ]
    sources = [
        {"name": n, "file": f"{n}.txt", "prompts": 3, "prompts_with_rows": 3, "rows": 9}
        for n in ("a", "b")
    ]
    record = to_record(sources, results, cacheeval_rows="dev split", verified="marked", seed=7)
    # stress FHR: all 7/7, marked 4/7, none 0/7; ADVERSARIAL-FHR 1, 1/2, 0: the same order
    taus = {(t["source"], t["measure"]): t["tau"] for t in record["taus"]}
    assert taus[("a", "stress_fhr")] == 1.0 and taus[("a", "identity_fhr")] == 1.0
    assert record["verified"]["name"] == "marked"
    assert not record["verified"]["sources"]["a"][0]["holds"]
    again = json.loads(dumps_pretty(record))
    md = render_markdown(again)
    assert md == render_markdown(record)  # a function of the JSON record
    assert "## The verified cache against the targets (marked)" in md
    assert "| identity FHR <= 0.05 | 0.250 [" in md and "identity/city 0.250 (1/4)" in md
    assert "| a | stress fhr | +1.00 | 3 |" in md
    assert "## Per kind: a" in md and "| identity/city | 4 | 1.00 | 0.25 | 0.00 |" in md


def test_the_committed_report_renders_from_its_record() -> None:
    path = REPO_ROOT / "reports" / "STRESS.json"
    if not path.is_file():
        pytest.skip("reports/STRESS.json not written yet (python -m scripts.run_stress)")
    record = json.loads(path.read_text(encoding="utf-8"))
    md = (REPO_ROOT / "reports" / "STRESS.md").read_text(encoding="utf-8")
    assert render_markdown(record) == md


def test_counts_link_to_exactly_their_pairs_and_the_verified_pairs_are_listed() -> None:
    """Each count of wrong decisions links to the per-pair page filtered to them;
    a zero count and a source without a page link to nothing; the verified
    cache's wrong decisions are listed row by row (hand-counted on kind_rows:
    serve_marked misses noise row 2, serves city row 3, context rows 7 and 8
    and the policy row 9)."""
    rows = kind_rows()[:10]  # the stress rows
    report, preds = evaluate_with_predictions(serve_marked, rows, cache_name="marked")
    results = [CacheResult("marked", "reference", {"a": report, "b": report}, report)]
    sources = [
        {"name": "a", "file": "a.txt", "prompts": 3, "prompts_with_rows": 3, "rows": 10,
         "view": "stress/a.html"},
        {"name": "b", "file": "b.txt", "prompts": 3, "prompts_with_rows": 3, "rows": 10},
    ]  # fmt: skip
    wrong = wrong_decisions(rows, preds)
    assert [(w["id"], w["key"], w["outcome"]) for w in wrong] == [
        (rows[2].id, "noise/typo_drop", "missed hit"),
        (rows[3].id, "identity/city", "false hit"),
        (rows[7].id, "context/system_prompt_other", "false hit"),
        (rows[8].id, "context/system_prompt_other", "false hit"),
        (rows[9].id, "policy", "false hit"),
    ]
    assert wrong[1]["score"] == 0.9 and wrong[1]["tier"] == "embedding"
    record = to_record(sources, results, cacheeval_rows="dev split", verified="marked", seed=1,
                       verified_wrong={"a": wrong, "b": []})  # fmt: skip
    md = render_markdown(json.loads(dumps_pretty(record)))
    page = "stress/a.html#cache=marked"
    # family table of source a: noise 2/3 recall -> 1 missed hit; identity 1/4; context 2/2
    assert f"(2/3) · [1 missed hit]({page}&sub=noise%2F&outcome=missed%20hit)" in md
    assert f"(1/4) · [1 false hit]({page}&sub=identity%2F&outcome=false%20hit)" in md
    assert f"(2/2) · [2 false hits]({page}&sub=context%2F&outcome=false%20hit)" in md
    assert f"(1/1) · [1 false hit]({page}&sub=policy&outcome=false%20hit)" in md
    # per-kind table: the value itself links
    assert f"| identity/city | 4 | [0.25]({page}&sub=identity%2Fcity&outcome=false%20hit) |" in md
    # source b has no page: its counts link nowhere
    b_family = md.split("### b", 1)[1].split("##", 1)[0]
    assert "](" not in b_family and "(1/4)" in b_family
    assert "| a | `a.txt` | 3 | 3 | 10 | [stress/a.html](stress/a.html) |" in md
    listed = md.split("## The verified cache's wrong decisions, pair by pair (marked)", 1)[1]
    assert f"| {rows[3].id} | identity/city | false hit |" in listed
    assert "### b\n\nNone." in listed
    assert view_link("p.html", "a b", "noise/typo_drop", "recall") == (
        "p.html#cache=a%20b&sub=noise%2Ftypo_drop&outcome=missed%20hit"
    )


def test_the_committed_links_open_exactly_their_pairs() -> None:
    """Every count of wrong decisions in reports/STRESS.md links to a committed
    per-pair page, and the page's own data, filtered as the link says (cache,
    subcategory or family, outcome), holds exactly that many pairs."""
    from tests.view_links import check_links

    md_path = REPO_ROOT / "reports" / "STRESS.md"
    if not md_path.is_file():
        pytest.skip("reports/STRESS.md not written yet (python -m scripts.run_stress)")
    assert check_links(md_path.read_text(encoding="utf-8"), md_path.parent) > 20
