"""``cacheeval tune`` end to end on benches and predictions the tests write:
a certified point, the refusals (rows at the top score, too few MISS rows),
--per-domain, a cache run out of process, and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cacheeval.cli import main
from cacheeval.results.predictions import Prediction, make_header, write_predictions
from cacheeval.support.jsonio import write_jsonl

from .conftest import make_row


def _bench(
    tmp_path: Path, spec: list[tuple[str, str, float]], cache_ref: str = "t:T"
) -> tuple[Path, Path]:
    """A bench of rows (label, domain) and a predictions file scoring row i ``score``."""
    rows, preds = [], []
    for i, (label, domain, score) in enumerate(spec):
        row = make_row(i, label, domain, split="dev", query_a=f"q{i}", query_b=f"q{i}?")
        rows.append(row.to_dict())
        preds.append(Prediction(row.id, score >= 0.5, 1.0, score, "embedding", 1.0))
    bench = tmp_path / "bench.jsonl"
    write_jsonl(bench, rows)
    out = tmp_path / "preds.jsonl"
    header = make_header(cache_name="scored", created="2026-01-01T00:00:00Z", cache_ref=cache_ref)
    write_predictions(out, header, preds)
    return bench, out


def _tune(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["tune", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_certified_threshold(tmp_path, capsys) -> None:
    # HIT at 0.9, 0.8, 0.7, 0.4; MISS: 70 at 0.3 and one at 0.6. FP 0 down to 0.7:
    # bound 1 - 0.05^(1/71) = 0.0413; 0.6 adds a false hit: bound 0.0651 > 0.05.
    spec = [("EQUIV", "qa_factual", s) for s in (0.9, 0.8, 0.7, 0.4)]
    spec += [("ADVERSARIAL", "qa_factual", 0.3)] * 70 + [("ADVERSARIAL", "qa_factual", 0.6)]
    bench, preds = _bench(tmp_path, spec)
    code, out, _ = _tune(capsys, "--bench", str(bench), "--predictions", str(preds),
                         "--json", str(tmp_path / "t.json"))  # fmt: skip
    assert code == 0, out
    assert "certified threshold: serve when score >= 0.7" in out
    assert "recall 0.750" in out and "(3 of 4)" in out
    assert "upper bound 0.0413 <= 0.05" in out
    assert "(any threshold in (0.6, 0.7]" in out
    doc = json.loads((tmp_path / "t.json").read_text())
    (p,) = doc["points"]
    assert doc["cacheeval_tune"] == "1.0" and p["certified"] and p["threshold"] == 0.7
    assert p["fhr"]["numerator"] == 0 and p["fhr"]["denominator"] == 71
    assert p["setting"] is None  # no translation for this cache
    # a 10% budget lets the false hit at 0.6 in (bound 0.0651), and so the HIT row at 0.4
    code, out, _ = _tune(capsys, "--bench", str(bench), "--predictions", str(preds),
                         "--max-fhr", "0.1")  # fmt: skip
    assert code == 0 and "score >= 0.4" in out and "recall 1.000" in out and "(1 of 71)" in out


def test_rows_at_the_top_score_break_every_threshold(tmp_path, capsys) -> None:
    spec = [("EQUIV", "qa_factual", 1.0)] * 5 + [("ADVERSARIAL", "qa_factual", 1.0)] * 6
    spec += [("ADVERSARIAL", "qa_factual", 0.2)] * 80
    bench, preds = _bench(tmp_path, spec)
    code, out, _ = _tune(capsys, "--bench", str(bench), "--predictions", str(preds),
                         "--show", "3")  # fmt: skip
    assert code == 3
    assert "NOT CERTIFIED" in out and "certified threshold" not in out and "score >=" not in out
    assert "6 MISS row(s) score at least 1, the best-scored HIT row's score" in out
    assert "rows that break every threshold (6; MISS rows scored >= 1, first 3)" in out
    for i in (5, 6, 7):
        assert f"cb-qa_factual-{i:04d}  ADVERSARIAL  query  probe  score 1" in out
    assert "cb-qa_factual-0008" not in out
    assert "59 with no false hit" in out


def test_miss_rows_above_every_hit_row_break_every_threshold(tmp_path, capsys) -> None:
    # A cache that scores every row 0 but serves nothing above it: the 40 MISS rows
    # tie with the best HIT row, so no threshold serving a HIT row stays in budget.
    spec = [("EQUIV", "qa_factual", 0.0)] * 3 + [("ADVERSARIAL", "qa_factual", 0.0)] * 40
    spec += [("ADVERSARIAL", "qa_factual", 0.3)] * 30  # scored above every HIT row
    bench, preds = _bench(tmp_path, spec)
    code, out, _ = _tune(capsys, "--bench", str(bench), "--predictions", str(preds))
    assert code == 3 and "70 MISS row(s) score at least 0, the best-scored HIT row's" in out
    assert "rows that break every threshold (70;" in out
    # only MISS rows: nothing to serve, and no count of MISS rows is offered
    bench, preds = _bench(tmp_path, [("ADVERSARIAL", "qa_factual", 0.5)] * 70)
    code, out, _ = _tune(capsys, "--bench", str(bench), "--predictions", str(preds))
    assert code == 3 and "no HIT rows: there is nothing a threshold should serve" in out
    assert "a certificate needs" not in out


def test_too_few_miss_rows(tmp_path, capsys) -> None:
    spec = [("EQUIV", "qa_factual", 0.9)] * 3 + [("ADVERSARIAL", "qa_factual", 0.1)] * 40
    bench, preds = _bench(tmp_path, spec)
    code, out, _ = _tune(capsys, "--bench", str(bench), "--predictions", str(preds))
    assert code == 3
    assert "too few MISS rows: even 0 false hit(s) of 40 MISS rows bound the FHR at 0.0722" in out
    assert "MISS rows a certificate needs: 59 with no false hit (these rows have 40)" in out


def test_per_domain(tmp_path, capsys) -> None:
    spec = [("EQUIV", "qa_factual", 0.9)] * 3 + [("ADVERSARIAL", "qa_factual", 0.1)] * 60
    spec += [("EQUIV", "code", 0.9)] * 3 + [("ADVERSARIAL", "code", 0.1)] * 10
    bench, preds = _bench(tmp_path, spec)
    code, out, _ = _tune(capsys, "--bench", str(bench), "--predictions", str(preds),
                         "--per-domain", "--json", str(tmp_path / "t.json"))  # fmt: skip
    assert code == 3
    blocks = out.split("\n\n")[1:]
    assert blocks[0].startswith("qa_factual: 63 rows (3 HIT, 60 MISS): certified threshold")
    assert blocks[1].startswith("code: 13 rows (3 HIT, 10 MISS): NOT CERTIFIED")
    keys = [p["key"] for p in json.loads((tmp_path / "t.json").read_text())["points"]]
    assert keys == ["qa_factual", "code"]
    # one domain alone
    code, out, _ = _tune(capsys, "--bench", str(bench), "--predictions", str(preds),
                         "--domain", "qa_factual")  # fmt: skip
    assert code == 0 and "all: 63 rows" in out


CACHE = """
from cacheeval.schema import Verdict

def cache(pair):
    score = 0.95 if pair.b.query.startswith("same") else 0.2
    return Verdict(is_hit=score > 0.5, confidence=1.0, tier_used="embedding", score=score)
"""


def test_a_cache_run_out_of_process_and_in_process_agree(tmp_path, capsys) -> None:
    rows = [make_row(i, "EQUIV", split="dev", query_a="x", query_b=f"same {i}") for i in range(4)]
    rows += [make_row(i, "ADVERSARIAL", split="dev", query_a="x", query_b=f"other {i}")
             for i in range(4, 70)]  # fmt: skip
    bench = tmp_path / "bench.jsonl"
    write_jsonl(bench, [r.to_dict() for r in rows])
    module = tmp_path / "scorer.py"
    module.write_text(CACHE, encoding="utf-8")
    args = ["--bench", str(bench), "--split", "dev", "--cache-module", str(module)]
    code, out, _ = _tune(capsys, *args)
    assert code == 0 and "serve when score >= 0.95" in out and "recall 1.000" in out
    code2, out2, _ = _tune(capsys, *args, "--in-process")
    assert code2 == 0 and out2 == out
    # the same cache without scores: nothing to tune
    module.write_text(CACHE.replace("score=score)", "score=None)"), encoding="utf-8")
    code, _, err = _tune(capsys, *args)
    assert code == 2 and "the cache gives no scores" in err and "Traceback" not in err


def test_bad_input(tmp_path, capsys) -> None:
    spec = [("EQUIV", "qa_factual", 0.9)] * 3 + [("ADVERSARIAL", "qa_factual", 0.1)] * 60
    bench, preds = _bench(tmp_path, spec)
    with pytest.raises(SystemExit) as stop:
        main(["tune", "--bench", str(bench), "--predictions", str(preds), "--max-fhr", "1.5"])
    assert stop.value.code == 2
    assert "must lie strictly between 0 and 1" in capsys.readouterr().err
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    code, _, err = _tune(capsys, "--bench", str(empty), "--predictions", str(preds))
    assert code == 2 and str(empty) in err and "Traceback" not in err
    bad = tmp_path / "bad.jsonl"
    bad.write_text(preds.read_text().splitlines()[0] + "\n{not json\n", encoding="utf-8")
    code, _, err = _tune(capsys, "--bench", str(bench), "--predictions", str(bad))
    assert code == 2 and f"{bad}:2:" in err
    code, _, err = _tune(capsys, "--bench", str(bench), "--predictions", str(preds),
                         "--domain", "code")  # fmt: skip
    assert code == 2 and "no rows match" in err
    code, _, err = _tune(capsys, "--bench", str(bench), "--predictions", str(preds),
                         "--cache-arg", "x=1")  # fmt: skip
    assert code == 2 and "--cache-arg" in err


def test_a_gptcache_run_gets_its_similarity_threshold(tmp_path, capsys) -> None:
    # Scores as GPTCacheAdapter gives them (rank / 4); its saved run names the adapter.
    spec = [("EQUIV", "qa_factual", s) for s in (0.99, 0.97, 0.95)]
    spec += [("ADVERSARIAL", "qa_factual", 0.9)] * 70
    bench, preds = _bench(tmp_path, spec, "adapters.gptcache_adapter:GPTCacheAdapter")
    code, out, _ = _tune(capsys, "--bench", str(bench), "--predictions", str(preds),
                         "--json", str(tmp_path / "t.json"))  # fmt: skip
    assert code == 0 and "serve when score >= 0.95" in out
    # the shortest decimal in the upper half of (0.9, 0.95]: 0.95 itself (cosine >= 0.9)
    assert "GPTCache setting: similarity_threshold=0.95, cosine_at_least=0.9" in out
    (p,) = json.loads((tmp_path / "t.json").read_text())["points"]
    assert p["setting"] == {"system": "GPTCache", "similarity_threshold": 0.95,
                            "cosine_at_least": 0.9}  # fmt: skip


def test_rows_the_key_should_refuse_are_named_with_the_fix(tmp_path, capsys) -> None:
    """MISS rows at the top score that differ only in their system prompt are
    the cache key's to refuse, not a threshold's: tune says how many, and what
    to do (here, from a predictions file: the key; with a cache: --keyed)."""
    rows, preds = [], []
    for i in range(5):  # served HIT rows
        rows.append(make_row(i, "EQUIV", "qa_factual", split="dev", query_a=f"q{i}",
                             query_b=f"q{i}?"))  # fmt: skip
    for i in range(5, 9):  # the same query under another user's system prompt
        rows.append(make_row(i, "ADVERSARIAL", "qa_factual", split="dev", query_a=f"q{i}",
                             query_b=f"q{i}", system_prompt_a="User: Ana",
                             system_prompt_b="User: Bo"))  # fmt: skip
    rows += [make_row(i, "ADVERSARIAL", "qa_factual", split="dev", query_a=f"q{i}",
                      query_b=f"other {i}") for i in range(9, 80)]  # fmt: skip
    for r in rows:
        score = 1.0 if r.label == "EQUIV" or r.system_prompt_b else 0.1
        preds.append(Prediction(r.id, score >= 0.5, 1.0, score, "embedding", 1.0))
    bench = tmp_path / "bench.jsonl"
    write_jsonl(bench, [r.to_dict() for r in rows])
    pred_file = tmp_path / "preds.jsonl"
    write_predictions(pred_file, make_header(cache_name="s", created="x"), preds)
    code, out, _ = _tune(capsys, "--bench", str(bench), "--predictions", str(pred_file))
    assert code == 3 and "rows that break every threshold (4;" in out
    assert ("  4 of them differ in context (system prompt, prior turns or tools): no score "
            "threshold can refuse them; the fix is the cache's key (tune --keyed runs a cache "
            "behind it)") in out  # fmt: skip
