"""The CLI contract on hostile and careless files: every decode, depth, number
and CSV problem is one ``path:LINE: what is wrong`` line and exit 2, never a
traceback - for benchmarks, predictions files and ``import-pairs`` alike."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from cacheeval.cli import main
from tests.conftest import MINI_BENCH, MINI_LABELS, REPO_ROOT

DEEP = b"[" * 100_000 + b"]" * 100_000


def _error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    return lines[0]


def _replace_line(src: Path, dest: Path, lineno: int, new: bytes) -> Path:
    lines = src.read_bytes().split(b"\n")
    lines[lineno - 1] = new
    dest.write_bytes(b"\n".join(lines))
    return dest


@pytest.fixture
def predictions(mini_predictions: Path) -> Path:
    return mini_predictions


def _score(preds: Path, tmp_path: Path) -> int:
    return main(
        ["score", "--bench", str(MINI_BENCH), "--labels", str(MINI_LABELS),
         "--predictions", str(preds), "--out", str(tmp_path / "r.md")]
    )  # fmt: skip


def _eval(bench: Path, tmp_path: Path) -> int:
    return main(
        ["eval", "--bench", str(bench), "--baseline", "exact_match",
         "--out", str(tmp_path / "r.md")]
    )  # fmt: skip


# --- benchmark files ----------------------------------------------------------------------------


def test_benchmark_line_nested_100000_deep(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bench = _replace_line(MINI_BENCH, tmp_path / "b.jsonl", 4, DEEP)
    assert _eval(bench, tmp_path) == 2
    assert _error(capsys).endswith(f"{bench}:4: not valid JSON (nested deeper than 100 levels)")


def test_benchmark_line_not_utf8_mid_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = MINI_BENCH.read_bytes().split(b"\n")[6].replace(b'"query_a": "', b'"query_a": "\xff', 1)
    bench = _replace_line(MINI_BENCH, tmp_path / "b.jsonl", 7, line)
    assert _eval(bench, tmp_path) == 2
    assert f"{bench}:7: not UTF-8 text (byte " in _error(capsys)


def test_benchmark_lone_surrogate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    row = json.loads(MINI_BENCH.read_bytes().split(b"\n")[1])
    row["query_b"] = "half a pair \ud83d"
    bench = _replace_line(MINI_BENCH, tmp_path / "b.jsonl", 2, json.dumps(row).encode())
    assert _eval(bench, tmp_path) == 2
    assert f"{bench}:2: not valid JSON (a string holds the lone surrogate \\ud83d" in _error(capsys)


def test_benchmark_with_a_byte_order_mark_loads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bench = tmp_path / "bom.jsonl"
    bench.write_bytes(b"\xef\xbb\xbf" + MINI_BENCH.read_bytes())
    assert _eval(bench, tmp_path) == 0, capsys.readouterr().err


# --- predictions files --------------------------------------------------------------------------


def _with_latency(preds: Path, dest: Path, lineno: int, digits: int) -> Path:
    line = preds.read_bytes().split(b"\n")[lineno - 1]
    new = re.sub(rb'"latency_ms": [0-9.e-]+', b'"latency_ms": ' + b"7" * digits, line)
    assert new != line
    return _replace_line(preds, dest, lineno, new)


def test_predictions_number_of_5000_digits(
    predictions: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = _with_latency(predictions, tmp_path / "p.jsonl", 5, 5000)
    assert _score(bad, tmp_path) == 2
    assert _error(capsys).endswith(f"{bad}:5: not valid JSON (a number longer than 4300 digits)")


def test_predictions_number_too_large_for_a_float(
    predictions: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = _with_latency(predictions, tmp_path / "p.jsonl", 5, 400)
    assert _score(bad, tmp_path) == 2
    message = _error(capsys)
    assert f"{bad}:5: latency_ms must be a finite number or null, got 777" in message
    assert len(message) < 300


def test_predictions_line_not_utf8_mid_file(
    predictions: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = predictions.read_bytes().split(b"\n")[9]
    bad = _replace_line(
        predictions,
        tmp_path / "p.jsonl",
        10,
        line.replace(b'"tier_used": "', b'"tier_used": "\xc3('),
    )
    assert _score(bad, tmp_path) == 2
    assert f"{bad}:10: not UTF-8 text (byte " in _error(capsys)


def test_predictions_line_nested_100000_deep(
    predictions: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = _replace_line(predictions, tmp_path / "p.jsonl", 3, DEEP)
    assert _score(bad, tmp_path) == 2
    assert _error(capsys).endswith(f"{bad}:3: not valid JSON (nested deeper than 100 levels)")


def test_predictions_lone_surrogate_in_tier_used(
    predictions: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = json.loads(predictions.read_bytes().split(b"\n")[3])
    data["tier_used"] = "\udc00"
    bad = _replace_line(predictions, tmp_path / "p.jsonl", 4, json.dumps(data).encode())
    assert _score(bad, tmp_path) == 2
    assert f"{bad}:4: not valid JSON (a string holds the lone surrogate \\udc00" in _error(capsys)


# --- import-pairs ---------------------------------------------------------------------------------


def _import(path: Path, tmp_path: Path) -> int:
    return main(
        ["import-pairs", str(path), "--text-a", "q1", "--text-b", "q2", "--label", "dup",
         "--positive", "1", "--domain", "qa_factual", "--out", str(tmp_path / "rows.jsonl")]
    )  # fmt: skip


def test_import_pairs_unterminated_csv_quote(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "pairs.csv"
    src.write_text('q1,q2,dup\nfine,ok,1\n"hello,world,1\nfoo,bar,0\n', encoding="utf-8")
    assert _import(src, tmp_path) == 2
    message = _error(capsys)
    assert message.endswith(
        f'{src}:3: not valid CSV: a quoted field opened here is never closed (unterminated ")'
    )
    assert not (tmp_path / "rows.jsonl").exists()


def test_import_pairs_text_after_a_closing_quote(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "pairs.csv"
    src.write_text('q1,q2,dup\n"hello" world,ok,1\n', encoding="utf-8")
    assert _import(src, tmp_path) == 2
    assert f"{src}:2: not valid CSV: text after a closing quote" in _error(capsys)


def test_import_pairs_csv_line_not_utf8(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "pairs.csv"
    src.write_bytes(b"q1,q2,dup\nhello,world,1\nfo\xffo,bar,0\n")
    assert _import(src, tmp_path) == 2
    assert _error(capsys).endswith(
        f"{src}:3: not UTF-8 text (byte 3 of the line: invalid start byte)"
    )


def test_import_pairs_jsonl_nested_100000_deep(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "pairs.jsonl"
    src.write_bytes(b'{"q1": "a", "q2": "b", "dup": 1}\n' + DEEP + b"\n")
    assert _import(src, tmp_path) == 2
    assert _error(capsys).endswith(f"{src}:2: not valid JSON (nested deeper than 100 levels)")


# --- and as a real process: exit status 2, no traceback -------------------------------------


def test_deep_benchmark_as_a_subprocess(tmp_path: Path) -> None:
    bench = _replace_line(MINI_BENCH, tmp_path / "b.jsonl", 4, DEEP)
    done = subprocess.run(
        [sys.executable, "-m", "cacheeval", "eval", "--bench", str(bench),
         "--baseline", "exact_match", "--out", str(tmp_path / "r.md")],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert f"{bench}:4: not valid JSON (nested deeper than 100 levels)" in done.stderr


@pytest.mark.parametrize(
    ("args", "clash", "message"),
    [
        (["eval", "--bench", "B", "--baseline", "exact_match", "--out", "B"], "B",
         "is the --bench input; write --out somewhere else"),
        (["eval", "--bench", "B", "--baseline", "exact_match", "--out", "r.md", "--json", "B"],
         "B", "is the --bench input; write --json somewhere else"),
        (["eval", "--bench", "B", "--baseline", "exact_match", "--out", "r.md",
          "--predictions", "L"], "L", "is the --labels input; write --predictions somewhere"),
        (["predict", "--bench", "B", "--baseline", "exact_match", "--out", "B"], "B",
         "is the --bench input; write --out somewhere else"),
        (["score", "--bench", "B", "--predictions", "P", "--out", "P"], "P",
         "is the --predictions input; write --out somewhere else"),
        (["tune", "--bench", "B", "--predictions", "P", "--json", "P"], "P",
         "is the --predictions input; write --json somewhere else"),
        (["tune", "--bench", "B", "--baseline", "exact_match", "--json", "B"], "B",
         "is the --bench input; write --json somewhere else"),
        (["view", "P", "--bench", "B", "--out", "P"], "P",
         "is the --predictions input; write --out somewhere else"),
        (["replay", "--bench", "B", "--baseline", "exact_match", "--out", "B"], "B",
         "is the --bench input; write --out somewhere else"),
        (["replay", "--bench", "B", "--baseline", "exact_match", "--out", "r.md",
          "--json", "L"], "L", "is the --labels input; write --json somewhere else"),
        (["external", "P", "--baseline", "exact_match", "--no-reference", "--out", "P"], "P",
         "is the input; write --out somewhere else"),
        (["external", "P", "--baseline", "exact_match", "--no-reference", "--bench", "B",
          "--out", "r.md", "--json", "B"], "B", "is the --bench input; write --json somewhere"),
    ],
)  # fmt: skip
def test_an_output_over_an_input_is_refused_and_the_input_kept(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    mini_predictions: Path,
    args: list[str],
    clash: str,
    message: str,
) -> None:
    # `eval --out` or `tune --json` naming the benchmark (or score's output
    # naming its predictions) replaced that input by the report
    files = {
        "B": tmp_path / "bench.jsonl",
        "P": tmp_path / "preds.jsonl",
        "L": tmp_path / "l.jsonl",
    }
    files["B"].write_bytes(MINI_BENCH.read_bytes())
    files["P"].write_bytes(mini_predictions.read_bytes())
    files["L"].write_bytes(MINI_LABELS.read_bytes())
    before = {k: p.read_bytes() for k, p in files.items()}
    argv = [str(files[a]) if a in files else a for a in args]
    if "--labels" not in argv and args[0] != "predict":
        argv += ["--labels", str(files["L"])]
    argv = [str(tmp_path / a) if a == "r.md" else a for a in argv]
    assert main(argv) == 2
    line = _error(capsys)
    assert line.startswith(f"cacheeval {args[0]}: error: {files[clash]}: ") and message in line
    assert {k: p.read_bytes() for k, p in files.items()} == before


@pytest.mark.parametrize("command", ["eval", "predict", "tune"])
def test_local_workers_beyond_the_cpus_are_refused(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    command: str,
) -> None:
    # `--workers 100000` started that many cache processes at once
    from cacheeval.run import procpool
    from cacheeval.support.cpus import max_workers

    def no_process(*args: object) -> None:
        raise AssertionError("a cache process was started")

    monkeypatch.setattr(procpool, "_Process", no_process)
    limit = max_workers()
    argv = [command, "--bench", str(MINI_BENCH), "--labels", str(MINI_LABELS),
            "--baseline", "exact_match", "--workers", str(limit + 1)]  # fmt: skip
    if command != "tune":
        argv += ["--out", str(tmp_path / "out")]
    if command == "predict":
        argv.remove("--labels")
        argv.remove(str(MINI_LABELS))
    assert main(argv) == 2
    line = _error(capsys)
    assert (
        f"error: --workers must be at most {limit} (" in line and "(--ray takes any number)" in line
    )
    assert not (tmp_path / "out").exists()


def test_an_output_that_is_a_directory_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # tune --json DIR and eval --out DIR named a temp file beside it
    # ("/.tmp.9lio91h3.tmp: Is a directory")
    base = ["--bench", str(MINI_BENCH), "--labels", str(MINI_LABELS), "--baseline", "exact_match"]
    assert main(["tune", *base, "--json", str(tmp_path)]) == 2
    assert _error(capsys) == f"cacheeval tune: error: {tmp_path}: Is a directory"
    assert main(["eval", *base, "--out", str(tmp_path)]) == 2
    assert _error(capsys) == f"cacheeval eval: error: {tmp_path}: Is a directory"
    assert list(tmp_path.iterdir()) == []  # no temp file left behind
    report = tmp_path / "r.md"
    assert main(["eval", *base, "--out", str(report), "--json", str(report)]) == 2
    assert _error(capsys) == (
        f"cacheeval eval: error: {report}: given to both --out and --json; give each its own file"
    )
