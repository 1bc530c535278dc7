"""``cacheeval import-pairs``: CSV, TSV and JSONL pairs become valid, gradable rows;
bad input fails with ``file:LINE`` and a reason, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cacheeval.baselines import ExactMatch
from cacheeval.benches.importers import ImportSpec, detect_format, import_pairs
from cacheeval.cli import main
from cacheeval.dataset import load_bench
from cacheeval.run.harness import evaluate
from cacheeval.support.jsonio import JsonlError

CSV = (
    "id,question1,question2,is_duplicate\n"
    "1,How do I reset my password?,How can I reset my password?,1\n"
    "2,What is the capital of France?,What is the capital of Spain?,0\n"
    '3,"Solve x + 2 = 8, please","Solve x + 2 = 8, please",1\n'
    "\n"
    '4,"multi\nline question",Another question,0\n'
)


def spec(**kw: object) -> ImportSpec:
    base: dict[str, object] = {
        "text_a": "question1",
        "text_b": "question2",
        "label": "is_duplicate",
        "positive": "1",
        "domain": "qa_factual",
    }
    base.update(kw)
    return ImportSpec(**base)  # type: ignore[arg-type]


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_csv_rows_are_valid_and_labelled(tmp_path: Path) -> None:
    src = write(tmp_path / "quora.csv", CSV)
    rows = import_pairs(src, spec())
    assert [r["id"] for r in rows] == [f"cb-qa_factual-000{i}" for i in range(1, 5)]
    assert [r["label"] for r in rows] == [
        "PARA_SAFE",
        "RELATED_UNSAFE",
        "PARA_SAFE",
        "RELATED_UNSAFE",
    ]
    assert [r["binary_label"] for r in rows] == ["HIT", "MISS", "HIT", "MISS"]
    assert rows[2]["query_a"] == "Solve x + 2 = 8, please"  # quoted comma kept
    assert rows[3]["query_a"] == "multi\nline question"
    assert "line 6" in rows[3]["rationale"]  # the record starts on line 6
    r = rows[0]
    assert r["source"] == "quora.csv" and r["construction_method"] == "user_import"
    assert r["verification_payload"]["kind"] == "user_label" and r["split"] == "test"
    assert r["difficulty"] in ("easy", "medium", "hard")


def test_cli_writes_rows_the_harness_can_grade(tmp_path: Path, capsys) -> None:
    src = write(tmp_path / "pairs.csv", CSV)
    out = tmp_path / "rows.jsonl"
    code = main(
        ["import-pairs", str(src), "--text-a", "question1", "--text-b", "question2",
         "--label", "is_duplicate", "--positive", "1", "--domain", "qa_open", "--out", str(out)]
    )  # fmt: skip
    assert code == 0
    assert "4 pairs: 2 positive" in capsys.readouterr().err
    rows = load_bench(out)
    assert len(rows) == 4 and {r.domain for r in rows} == {"qa_open"}
    report = evaluate(ExactMatch(), rows, cache_name="exact")
    # exact match serves only the verbatim repeat (row 3): one true hit, no false hit
    assert report.confusion.tp == 1 and report.confusion.fp == 0 and report.confusion.fn == 1


def test_tsv_and_jsonl(tmp_path: Path) -> None:
    tsv = write(
        tmp_path / "p.tsv",
        "a\tb\tgold\nreset password\thow to reset password\tsame\nfoo\tbar\tdifferent\n",
    )
    rows = import_pairs(tsv, spec(text_a="a", text_b="b", label="gold", positive="same"))
    assert [r["binary_label"] for r in rows] == ["HIT", "MISS"]
    lines = [
        {"q1": "Who wrote Hamlet?", "q2": "who wrote hamlet", "dup": True},
        {"q1": "Who wrote Hamlet?", "q2": "Who wrote Macbeth?", "dup": False},
        {"q1": "2+2?", "q2": "what is 2 plus 2", "dup": 1.0},
    ]
    jl = write(tmp_path / "p.jsonl", "".join(json.dumps(x) + "\n" for x in lines))
    rows = import_pairs(jl, spec(text_a="q1", text_b="q2", label="dup", positive="true"))
    assert [r["binary_label"] for r in rows] == ["HIT", "MISS", "MISS"]
    rows = import_pairs(jl, spec(text_a="q1", text_b="q2", label="dup", positive="1"))
    assert [r["binary_label"] for r in rows] == ["MISS", "MISS", "HIT"]  # 1.0 == 1, true != 1
    assert detect_format("x.ndjson") == "jsonl"


def run_cli(capsys, *argv: str) -> tuple[int, str]:
    code = main(["import-pairs", *argv])
    return code, capsys.readouterr().err


def test_errors_name_file_and_line(tmp_path: Path, capsys) -> None:
    out = str(tmp_path / "o.jsonl")
    common = ["--text-b", "question2", "--label", "is_duplicate", "--positive", "1",
              "--domain", "math", "--out", out]  # fmt: skip
    src = write(tmp_path / "p.csv", CSV)
    code, err = run_cli(capsys, str(src), "--text-a", "nope", *common)
    assert code == 2 and f"{src}:1:" in err and "'nope'" in err and "question1" in err

    empty = write(tmp_path / "e.csv", "question1,question2,is_duplicate\nhello,,1\n")
    code, err = run_cli(capsys, str(empty), "--text-a", "question1", *common)
    assert code == 2 and f"{empty}:2:" in err and "empty" in err

    short = write(tmp_path / "s.csv", "question1,question2,is_duplicate\nhello,world\n")
    code, err = run_cli(capsys, str(short), "--text-a", "question1", *common)
    assert code == 2 and f"{short}:2:" in err and "2 fields" in err

    code, err = run_cli(capsys, str(src), "--text-a", "question1", *common, "--negative", "no")
    assert code == 2 and f"{src}:3:" in err and "neither" in err

    bad = write(
        tmp_path / "b.jsonl", '{"question1": "a", "question2": "b", "is_duplicate": 1}\n{oops\n'
    )
    code, err = run_cli(capsys, str(bad), "--text-a", "question1", *common)
    assert code == 2 and f"{bad}:2:" in err and "not valid JSON" in err

    typed = write(
        tmp_path / "t.jsonl", '{"question1": ["a"], "question2": "b", "is_duplicate": 1}\n'
    )
    code, err = run_cli(capsys, str(typed), "--text-a", "question1", *common)
    assert code == 2 and f"{typed}:1:" in err and "list, not text" in err

    code, err = run_cli(capsys, str(tmp_path / "p.txt"), "--text-a", "question1", *common)
    assert code == 2 and "no such file" in err
    txt = write(tmp_path / "p.txt", "x")
    code, err = run_cli(capsys, str(txt), "--text-a", "question1", *common)
    assert code == 2 and "extension" in err

    header_only = write(tmp_path / "h.csv", "question1,question2,is_duplicate\n")
    code, err = run_cli(capsys, str(header_only), "--text-a", "question1", *common)
    assert code == 2 and "no pairs" in err
    assert not Path(out).exists()


def test_spec_problems() -> None:
    with pytest.raises(ValueError, match="unknown domain"):
        import_pairs("x.csv", spec(domain="nope"))
    with pytest.raises(ValueError, match="same"):
        import_pairs("x.csv", spec(negative="1"))
    with pytest.raises(JsonlError):
        raise JsonlError("f.csv", 3, "x")


def test_more_than_9999_pairs_get_longer_ids_and_stream(tmp_path: Path, capsys) -> None:
    lines = ["a,b,y"] + [f"question {i},question {i}?,{i % 2}" for i in range(1, 10_006)]
    src = write(tmp_path / "big.csv", "\n".join(lines) + "\n")
    out = tmp_path / "rows.jsonl"
    assert main(["import-pairs", str(src), "--text-a", "a", "--text-b", "b", "--label", "y",
                 "--positive", "1", "--domain", "math", "--out", str(out)]) == 0  # fmt: skip
    assert "10005 pairs: 5003 positive" in capsys.readouterr().err
    ids = [r.id for r in load_bench(out)]
    assert ids[9998:] == ["cb-math-9999", "cb-math-10000", "cb-math-10001", "cb-math-10002",
                          "cb-math-10003", "cb-math-10004", "cb-math-10005"]  # fmt: skip


def test_a_bad_record_late_in_the_file_leaves_no_output(tmp_path: Path, capsys) -> None:
    lines = ["a,b,y"] + [f"q{i},p{i},1" for i in range(1, 300)] + ["q,,1"]
    src = write(tmp_path / "late.csv", "\n".join(lines) + "\n")
    out = tmp_path / "rows.jsonl"
    assert main(["import-pairs", str(src), "--text-a", "a", "--text-b", "b", "--label", "y",
                 "--positive", "1", "--domain", "math", "--out", str(out)]) == 2  # fmt: skip
    assert f"{src}:301: field 'b' (text-b) is empty" in capsys.readouterr().err
    assert not out.exists() and not list(tmp_path.glob(".rows.jsonl.*"))


def test_out_over_the_pairs_file_is_refused(tmp_path: Path, capsys) -> None:
    # `--out pairs.csv` replaced the user's pairs by the rows
    src = tmp_path / "pairs.csv"
    src.write_text("text_a,text_b,label\nHi there,hi there,HIT\nIs 91 prime?,Is 97 prime?,MISS\n")
    before = src.read_bytes()
    assert main(["import-pairs", str(src), "--domain", "qa_open", "--out", str(src)]) == 2
    err = capsys.readouterr().err
    assert err == f"import-pairs: {src}: is the input; write --out somewhere else\n"
    assert src.read_bytes() == before
