"""The command line end to end on the fixture: ``cacheeval eval|predict|score``
and ``scripts/eval_harness.py``, in-process and as subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cacheeval.cli import main
from cacheeval.dataset import load_bench
from cacheeval.reporting.report import Report
from cacheeval.schema import Row
from cacheeval.support.jsonio import iter_jsonl
from tests.conftest import MINI_BENCH, MINI_LABELS, REPO_ROOT

PY = sys.executable
CONSOLE = Path(sys.executable).with_name("cacheeval")


def _run(
    args: list[str], cwd: Path = REPO_ROOT, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    return subprocess.run(
        args, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env, check=False
    )


def _one_line_error(stderr: str) -> str:
    lines = [ln for ln in stderr.splitlines() if "error:" in ln]
    assert "Traceback" not in stderr
    assert len(lines) == 1, stderr
    return lines[0]


CACHE_FILE = """
import time
from cacheeval.schema import Verdict

class Threshold:
    cost_per_call_usd = {"judge": 0.002}

    def __init__(self, hit=True, label="thr", limit=0.5):
        self.hit, self.label, self.limit = hit, label, limit

    def __call__(self, pair):
        # arithmetic without tools goes to the judge (the four math rows of the fixture)
        q = pair.a.query
        math = pair.a.tools is None and "Python" not in q and any(c.isdigit() for c in q)
        tier = "judge" if math else "embedding"
        return Verdict(is_hit=self.hit, confidence=0.5, tier_used=tier, score=self.limit)

def cache(pair):
    if "Python" in pair.a.query:
        raise RuntimeError("no embedding for code")
    if pair.a.tools is not None:
        time.sleep(5)  # hangs past any sensible timeout
    return Verdict(is_hit=pair.a.query == pair.b.query, tier_used="exact")
"""


# --- in-process -------------------------------------------------------------------------


def test_eval_in_process_writes_every_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    md, js, preds = tmp_path / "r.md", tmp_path / "r.json", tmp_path / "p.jsonl"
    code = main(
        [
            "eval", "--bench", str(MINI_BENCH), "--labels", str(MINI_LABELS),
            "--baseline", "exact_match", "--cache-name", "exact v1",
            "--out", str(md), "--json", str(js), "--predictions", str(preds),
        ]
    )  # fmt: skip
    assert code == 0
    out = capsys.readouterr().out
    assert out.startswith("exact v1: 32 rows, accuracy 0.719, F1 0.571, FHR 0.150")
    report = Report.from_dict(json.loads(js.read_text(encoding="utf-8")))
    assert report.provenance.cache_name == "exact v1"
    assert report.provenance.n_rows == 32 and report.provenance.hidden_rows_skipped == 0
    assert report.to_markdown() == md.read_text(encoding="utf-8")
    lines = [v for _, v in iter_jsonl(preds)]
    assert lines[0]["cacheeval_predictions"] == "1.1" and lines[0]["cache_name"] == "exact v1"
    assert lines[0]["cache_ref"] == "cacheeval.baselines:ExactMatch" and lines[0]["complete"]
    assert report.provenance.cache_ref == "cacheeval.baselines:ExactMatch"
    assert [x["id"] for x in lines[1:]] == [r.id for r in _fixture_ids()]


def _fixture_ids() -> list[Row]:
    return load_bench(MINI_BENCH)


def test_eval_without_labels_leaves_hidden_rows_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    js = tmp_path / "r.json"
    assert main(["eval", "--bench", str(MINI_BENCH), "--baseline", "always_hit",
                 "--out", str(tmp_path / "r.md"), "--json", str(js)]) == 0  # fmt: skip
    err = capsys.readouterr().err
    assert "leaving out 5 hidden test rows" in err
    data = json.loads(js.read_text(encoding="utf-8"))
    assert data["provenance"]["n_rows"] == 27 and data["provenance"]["hidden_rows_skipped"] == 5
    assert data["headline"]["recall"]["value"] == 1.0


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["--split", "test"], "5 of 5 selected rows are hidden test rows"),
        (["--bench", "/no/such/bench.jsonl"], "/no/such/bench.jsonl: No such file or directory"),
        (["--cache-class", "X"], "--cache-class/--cache-arg apply to --cache-module"),
    ],
)
def test_eval_usage_errors_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], fragment: str
) -> None:
    base = ["eval", "--bench", str(MINI_BENCH), "--baseline", "always_miss", "--out",
            str(tmp_path / "r.md")]  # fmt: skip
    assert main(base + argv) == 2
    line = _one_line_error(capsys.readouterr().err)
    assert line.startswith("cacheeval eval: error: ") and fragment in line
    assert not (tmp_path / "r.md").exists()


def test_bad_bench_line_reports_path_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = MINI_BENCH.read_text(encoding="utf-8").splitlines()
    lines[2] = lines[2].replace('"label": "ADVERSARIAL"', '"label": "SIMILAR"')
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["eval", "--bench", str(bad), "--baseline", "always_miss",
                 "--out", str(tmp_path / "r.md")]) == 2  # fmt: skip
    line = _one_line_error(capsys.readouterr().err)
    assert f"{bad}:3: unknown label 'SIMILAR'" in line


def test_an_empty_bench_file_is_named_not_blamed_on_the_filters(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"\n  \n")  # blank lines only
    assert main(["eval", "--bench", str(empty), "--baseline", "always_miss",
                 "--out", str(tmp_path / "r.md")]) == 2  # fmt: skip
    line = _one_line_error(capsys.readouterr().err)
    assert f"{empty}:1: no rows in the file (it is empty)" in line
    assert not (tmp_path / "r.md").exists()
    # a file with rows none of which the filters select still says so
    rows = [ln for ln in MINI_BENCH.read_text(encoding="utf-8").splitlines()
            if '"domain": "math"' in ln]  # fmt: skip
    maths = tmp_path / "maths.jsonl"
    maths.write_text("\n".join(rows) + "\n", encoding="utf-8")
    assert main(["eval", "--bench", str(maths), "--domain", "creative",
                 "--baseline", "always_miss", "--out", str(tmp_path / "r.md")]) == 2  # fmt: skip
    line = _one_line_error(capsys.readouterr().err)
    assert f"{maths}: no rows match the --split/--domain filters" in line


def test_eval_cache_module_file_with_class_and_args(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mod = tmp_path / "my_cache.py"
    mod.write_text(CACHE_FILE, encoding="utf-8")
    js = tmp_path / "r.json"
    code = main(
        [
            "eval", "--bench", str(MINI_BENCH), "--labels", str(MINI_LABELS),
            "--cache-module", str(mod), "--cache-class", "Threshold",
            "--cache-arg", "hit=false", "--cache-arg", "label=plain text",
            "--cache-arg", "limit=0.25",
            "--out", str(tmp_path / "r.md"), "--json", str(js),
        ]
    )  # fmt: skip
    assert code == 0, capsys.readouterr().err
    report = Report.from_dict(json.loads(js.read_text(encoding="utf-8")))
    # JSON values are parsed, other values stay strings.
    assert report.provenance.cache_args == {"hit": False, "label": "plain text", "limit": 0.25}
    assert report.provenance.cache_name == "Threshold"
    assert report.headline.fhr.value == 0.0  # never hits
    # Four math rows priced at $0.002 each: $0.008 over 32 decisions.
    assert report.cost.total_usd == pytest.approx(0.008)
    assert report.cost.per_1k_decisions_usd == pytest.approx(0.25)


def test_bad_cache_arg_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mod = tmp_path / "my_cache.py"
    mod.write_text(CACHE_FILE, encoding="utf-8")
    argv = ["eval", "--bench", str(MINI_BENCH), "--cache-module", str(mod), "--out",
            str(tmp_path / "r.md")]  # fmt: skip
    assert main([*argv, "--cache-class", "Threshold", "--cache-arg", "no-equals"]) == 2
    assert "expected KEY=VALUE" in _one_line_error(capsys.readouterr().err)
    assert main([*argv, "--cache-class", "Threshold", "--cache-arg", "colour=red"]) == 2
    assert "constructing" in _one_line_error(capsys.readouterr().err)
    assert main([*argv, "--cache-class", "Missing"]) == 2
    assert "has no attribute 'Missing'" in _one_line_error(capsys.readouterr().err)


def test_on_error_raise_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mod = tmp_path / "my_cache.py"
    mod.write_text(CACHE_FILE, encoding="utf-8")
    code = main(["eval", "--bench", str(MINI_BENCH), "--domain", "code", "--cache-module",
                 str(mod), "--on-error", "raise", "--out", str(tmp_path / "r.md")])  # fmt: skip
    assert code == 1
    line = _one_line_error(capsys.readouterr().err)
    assert "the cache failed: row cb-code-0001: RuntimeError: no embedding for code" in line


def test_predict_then_score(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    preds = tmp_path / "test_preds.jsonl"
    assert main(["predict", "--bench", str(MINI_BENCH), "--split", "test", "--baseline",
                 "exact_match", "--out", str(preds)]) == 0  # fmt: skip
    assert "exact_match: 5 predictions (0 errors, 0 timeouts)" in capsys.readouterr().out
    header = next(iter_jsonl(preds))[1]
    assert header["split"] == "test" and len(header["dataset_sha256"]) == 64

    md = tmp_path / "s.md"
    assert main(["score", "--bench", str(MINI_BENCH), "--predictions", str(preds),
                 "--out", str(md)]) == 2  # fmt: skip
    assert "hidden test rows" in _one_line_error(capsys.readouterr().err)

    js = tmp_path / "s.json"
    assert main(["score", "--bench", str(MINI_BENCH), "--predictions", str(preds), "--labels",
                 str(MINI_LABELS), "--out", str(md), "--json", str(js)]) == 0  # fmt: skip
    report = Report.from_dict(json.loads(js.read_text(encoding="utf-8")))
    assert report.provenance.split == "test" and report.provenance.n_rows == 5
    assert report.ids.n_missing == 0 and report.ids.n_extra == 0
    assert (report.confusion.tp, report.confusion.fp) == (1, 1)


def test_score_reports_missing_ids_and_dataset_mismatch(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    preds = tmp_path / "p.jsonl"
    assert main(["predict", "--bench", str(MINI_BENCH), "--split", "dev", "--baseline",
                 "always_miss", "--out", str(preds)]) == 0  # fmt: skip
    lines = preds.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    header["dataset_sha256"] = "f" * 64
    kept = [json.dumps(header)] + lines[1:4]  # 3 of the 8 dev rows
    preds.write_text("\n".join(kept) + "\n", encoding="utf-8")
    js = tmp_path / "r.json"
    assert main(["score", "--bench", str(MINI_BENCH), "--predictions", str(preds),
                 "--out", str(tmp_path / "r.md"), "--json", str(js)]) == 0  # fmt: skip
    assert "warning: " in capsys.readouterr().err
    data = json.loads(js.read_text(encoding="utf-8"))
    assert data["ids"]["n_missing"] == 5 and data["provenance"]["n_rows"] == 8


def test_score_bad_predictions_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "p.jsonl"
    bad.write_text('{"id": "x"}\n', encoding="utf-8")
    assert main(["score", "--bench", str(MINI_BENCH), "--predictions", str(bad),
                 "--out", str(tmp_path / "r.md")]) == 2  # fmt: skip
    assert f"{bad}:1: the first line must be the header" in _one_line_error(capsys.readouterr().err)


# --- subprocesses --------------------------------------------------------------------------


def test_eval_harness_script_writes_complete_report(tmp_path: Path) -> None:
    out = tmp_path / "r.md"
    done = _run([PY, "-m", "scripts.eval_harness", "--bench", "tests/fixtures/mini_bench.jsonl",
                 "--baseline", "exact_match", "--out", str(out)])  # fmt: skip
    assert done.returncode == 0, done.stderr
    md = out.read_text(encoding="utf-8")
    for heading in ("## Headline", "## Threshold-free", "## Per domain", "## Per label",
                    "## Per difficulty", "## Latency", "## Cost", "## Verification tiers",
                    "## Errors and timeouts", "## Missing and extra ids"):  # fmt: skip
        assert heading in md
    assert "| FHR | 0.118 [" in md  # exact_match on train+dev: 2 false hits of 17 MISS rows
    assert "exact_match: 27 rows" in done.stdout


def test_script_and_cli_share_one_parser(tmp_path: Path) -> None:
    script = _run([PY, "-m", "scripts.eval_harness", "--help"])
    cli = _run([PY, "-m", "cacheeval.cli", "eval", "--help"])
    assert script.returncode == cli.returncode == 0

    def options(text: str) -> str:
        return text[text.index("options:") :]

    assert options(script.stdout) == options(cli.stdout)
    bad = _run([PY, "-m", "scripts.eval_harness", "--bench", "x.jsonl"])
    assert bad.returncode == 2 and "required" in bad.stderr


def test_public_api_from_any_directory() -> None:
    code = (
        "from cacheeval import evaluate, load_bench, Verdict, Pair, Cache\n"
        f"rows = load_bench({str(MINI_BENCH)!r}, labels_path={str(MINI_LABELS)!r})\n"
        "def my_cache(pair: Pair) -> Verdict:\n"
        "    return Verdict(is_hit=pair.a.query == pair.b.query, confidence=0.9, "
        "tier_used='exact')\n"
        "assert isinstance(my_cache, Cache)\n"
        "report = evaluate(my_cache, rows, cache_name='my_cache')\n"
        "print(report.provenance.cache_name, report.confusion.fp, report.to_markdown()[:20])\n"
    )
    done = _run([PY, "-c", code], cwd=Path("/"))
    assert done.returncode == 0, done.stderr
    # Comparing only the queries: tool-0003 and creative-0003 (policy rows),
    # personalized-0001 (other user) and multi_turn-0001 (other context) are false hits.
    assert done.stdout.startswith("my_cache 4 # CacheEval report")


@pytest.mark.skipif(not CONSOLE.exists(), reason="console script not installed")
def test_dotted_module_with_class_via_console_script(tmp_path: Path) -> None:
    pkg = tmp_path / "userpkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "caches.py").write_text(CACHE_FILE, encoding="utf-8")
    out = tmp_path / "r.md"
    done = _run(
        [str(CONSOLE), "eval", "--bench", str(MINI_BENCH), "--labels", str(MINI_LABELS),
         "--cache-module", "userpkg.caches", "--cache-class", "Threshold",
         "--cache-arg", "hit=true", "--out", str(out)],
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Threshold: 32 rows" in done.stdout and "FHR 1.000" in done.stdout
    assert '{"hit": true}' in out.read_text(encoding="utf-8")


def test_hung_cache_times_out_and_process_exits(tmp_path: Path) -> None:
    mod = tmp_path / "hang.py"
    mod.write_text(CACHE_FILE, encoding="utf-8")
    js = tmp_path / "r.json"
    t0 = time.perf_counter()
    done = _run(
        [PY, "-m", "cacheeval.cli", "eval", "--bench", str(MINI_BENCH), "--labels",
         str(MINI_LABELS), "--cache-module", str(mod), "--timeout-ms", "200",
         "--out", str(tmp_path / "r.md"), "--json", str(js)],
        timeout=30,
    )  # fmt: skip
    elapsed = time.perf_counter() - t0
    assert done.returncode == 0, done.stderr
    # Four tool rows each hang 5 s; the run must not wait for them.
    assert elapsed < 12
    errors = json.loads(js.read_text(encoding="utf-8"))["errors"]
    assert errors["n_timeouts"] == 4
    assert errors["n_errors"] == 4  # the four code rows raise
    kinds = {k["kind"]: k["count"] for k in errors["kinds"]}
    assert kinds == {"RuntimeError": 4, "timeout": 4}
