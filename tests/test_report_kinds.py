"""Per-kind results of stress rows (issue 28 part 2): hand-counted slices,
their order, the Markdown section, JSON round trip, and the same numbers
from ``eval`` (in and out of process) and ``score`` on a rows file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cacheeval.cli import main
from cacheeval.reporting.report import Report
from cacheeval.results.columns import perturbation_kind
from cacheeval.run.harness import evaluate
from cacheeval.schema import Pair, Row, Verdict
from cacheeval.support.jsonio import write_jsonl
from tests.conftest import REPO_ROOT, make_row


def stress_row(i: int, kind: str, family: str, label: str, **kw: object) -> Row:
    """A stress row as ``cacheeval stress`` writes one (the fields the report reads)."""
    return make_row(
        i,
        label,
        subcategory=kind,
        construction_method="stress_perturbation",
        verification_payload={"kind": "perturbation", "perturbation": kind, "family": family},
        split="dev",
        **kw,
    )


def kind_rows() -> list[Row]:
    """noise/typo_drop: 3 HIT rows, the first two served (query_b starts 'serve');
    identity/city: 4 MISS rows, one served; context/system_prompt_other: 2 MISS,
    both served; policy: a never-cache typo row (MISS), served; one ordinary row."""
    rows = [stress_row(i, "typo_drop", "noise", "EQUIV", query_b=f"{'serve' if i < 2 else 'x'}")
            for i in range(3)]  # fmt: skip
    rows += [stress_row(3 + i, "city", "identity", "ADVERSARIAL",
                        query_b="serve" if i == 0 else "x") for i in range(4)]  # fmt: skip
    rows += [stress_row(7 + i, "system_prompt_other", "context", "ADVERSARIAL", query_b="serve")
             for i in range(2)]  # fmt: skip
    rows.append(stress_row(9, "typo_drop", "noise", "EQUIV", query_b="serve",
                           verification_method="policy_no_cache"))  # fmt: skip
    rows.append(make_row(10, "EQUIV", split="dev", query_b="serve"))
    return rows


def serve_marked(pair: Pair) -> Verdict:
    hit = pair.b.query.startswith("serve")
    return Verdict(is_hit=hit, tier_used="embedding", score=0.9 if hit else 0.1)


def test_perturbation_kind_keys() -> None:
    rows = kind_rows()
    assert [perturbation_kind(r) for r in rows] == (
        ["noise/typo_drop"] * 3 + ["identity/city"] * 4 + ["context/system_prompt_other"] * 2
        + ["policy", None]
    )  # fmt: skip


def test_per_kind_hand_counted() -> None:
    report = evaluate(serve_marked, kind_rows())
    by = {s.key: s for s in report.per_kind or ()}
    # families in order noise, identity, context, policy; the ordinary row has no kind
    assert list(by) == ["noise/typo_drop", "identity/city", "context/system_prompt_other",
                        "policy"]  # fmt: skip
    noise = by["noise/typo_drop"]  # TP 2, FN 1
    assert (noise.recall.numerator, noise.recall.denominator) == (2, 3)
    assert noise.fhr.value is None and noise.n == 3
    city = by["identity/city"]  # FP 1, TN 3
    assert (city.fhr.numerator, city.fhr.denominator) == (1, 4) and city.recall.value is None
    assert city.fhr.ci_low is not None and city.fhr.ci_low < 0.25 < city.fhr.ci_high
    ctx = by["context/system_prompt_other"]
    assert (ctx.fhr.numerator, ctx.fhr.denominator) == (2, 2)
    pol = by["policy"]
    assert (pol.fhr.numerator, pol.fhr.denominator) == (1, 1)
    # the other rates are there too: accuracy of the city rows 3/4, hit rate 1/4
    assert (city.accuracy.numerator, city.accuracy.denominator) == (3, 4)
    assert (city.hit_rate.numerator, city.hit_rate.denominator) == (1, 4)
    assert (city.precision.numerator, city.precision.denominator) == (0, 1)
    # F1 = 2 TP / (2 TP + FP + FN) = 4/5, as TP 2 over an effective n of 2.5
    assert (noise.f1.numerator, noise.f1.denominator) == (2, 2.5)
    assert Report.from_dict(json.loads(report.to_json())) == report
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((REPO_ROOT / "cacheeval" / "schemas" / "report.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(report.to_dict())
    md = report.to_markdown()
    section = md.split("\n## Per perturbation kind\n", 1)[1].split("\n## ", 1)[0]
    assert "| Kind | n | FHR [95% CI] | Recall [95% CI] |" in section
    assert (
        "| identity/city | 4 | 0.250 [" in section
        and "| noise/typo_drop | 3 | - | 0.667 [" in section
    )
    # a report without stress rows has no such section
    plain = evaluate(serve_marked, [make_row(1, "EQUIV", split="dev")])
    assert plain.per_kind is None and "Per perturbation kind" not in plain.to_markdown()


def test_eval_and_score_on_a_rows_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bench = tmp_path / "stress.jsonl"
    write_jsonl(bench, [r.to_dict() for r in kind_rows()])
    module = tmp_path / "marked.py"
    module.write_text(
        "from cacheeval.schema import Verdict\n"
        "def cache(pair):\n"
        "    hit = pair.b.query.startswith('serve')\n"
        "    return Verdict(is_hit=hit, tier_used='embedding', score=0.9 if hit else 0.1)\n",
        encoding="utf-8",
    )
    want = evaluate(serve_marked, kind_rows()).per_kind
    runs = {
        "process": [],
        "in-process": ["--in-process"],
        "workers": ["--workers", "2"],
    }
    for name, extra in runs.items():
        out = tmp_path / f"{name}.json"
        preds = tmp_path / f"{name}.jsonl"
        code = main(["eval", "--bench", str(bench), "--cache-module", str(module),
                     "--out", str(tmp_path / f"{name}.md"), "--json", str(out),
                     "--predictions", str(preds), *extra])  # fmt: skip
        assert code == 0, capsys.readouterr().err
        got = Report.from_dict(json.loads(out.read_text(encoding="utf-8")))
        assert got.per_kind == want, name
    code = main(["score", "--bench", str(bench), "--predictions", str(tmp_path / "process.jsonl"),
                 "--out", str(tmp_path / "s.md"), "--json", str(tmp_path / "s.json")])  # fmt: skip
    assert code == 0
    scored = Report.from_dict(json.loads((tmp_path / "s.json").read_text(encoding="utf-8")))
    assert scored.per_kind == want


def test_plot_draws_the_kinds_as_one_figure(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from cacheeval.reporting.plotdata import kind_rates, read_source

    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(evaluate(serve_marked, kind_rows()).to_json(), encoding="utf-8")
    never = evaluate(lambda pair: Verdict(is_hit=False, score=0.0), kind_rows())
    b.write_text(never.to_json(), encoding="utf-8")
    fhrs, recalls = kind_rates(read_source(a))
    assert [k for k, *_ in fhrs] == ["identity/city", "context/system_prompt_other", "policy"]
    assert [(k, v, n) for k, v, _, _, n in recalls] == [("noise/typo_drop", 2 / 3, 3)]
    plain = tmp_path / "plain.json"
    plain.write_text(evaluate(serve_marked, [make_row(1, split="dev")]).to_json(), "utf-8")
    out = tmp_path / "figs"
    code = main(["plot", f"{a}=served", f"{b}=never", str(plain), "--out", str(out),
                 "--only", "kind_results", "--format", "svg"])  # fmt: skip
    assert code == 0
    svg = (out / "kind_results.svg").read_text(encoding="utf-8")
    # two caches (the plain report has no stress rows): 3 FHR bars and 1 recall bar each
    for k in (0, 1):
        assert all(f'id="series-{k}-fhr-{j}"' in svg for j in range(3))
        assert f'id="series-{k}-recall-0"' in svg
    assert 'id="series-2-' not in svg
    # without any stress report the figure is not drawn
    code = main(["plot", str(plain), "--out", str(tmp_path / "none"), "--only", "kind_results"])
    assert code == 0 and not (tmp_path / "none" / "kind_results.svg").exists()
