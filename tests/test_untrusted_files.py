"""Predictions and labels files a careless or hostile user hands the CLI:
each problem is one ``path:LINE: what is wrong`` (or ``path: ...``) line and
exit 2, never a traceback, a forged headline or an exit 0 over nothing."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from cacheeval.cli import main
from cacheeval.results.predictions import prediction_problem
from cacheeval.schema import Verdict
from tests.conftest import MINI_BENCH, MINI_LABELS


@pytest.fixture
def predictions(mini_predictions: Path) -> Path:
    return mini_predictions


def _edit(src: Path, dest: Path, lineno: int, **fields: object) -> Path:
    lines = src.read_text(encoding="utf-8").splitlines()
    record = json.loads(lines[lineno - 1])
    record.update(fields)
    lines[lineno - 1] = json.dumps(record)
    dest.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return dest


def _score(preds: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> str:
    code = main(["score", "--bench", str(MINI_BENCH), "--labels", str(MINI_LABELS),
                 "--predictions", str(preds), "--out", str(tmp_path / "r.md"), *extra])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err, err
    assert not (tmp_path / "r.md").exists()
    return err


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"latency_ms": 1e308}, "latency_ms must lie in [0, 86400000]"),
        ({"tier_used": "<script>alert(1)</script>"}, "is not a short name"),
        ({"tier_used": "\x1b[31mred"}, "is not a short name"),
        ({"tier_used": "x" * 200_000}, "is not a short name"),
        ({"tier_used": "Timeout"}, "is reserved for the harness"),
        ({"tier_used": "error "}, "is reserved for the harness"),
        ({"is_hit": False, "error": "boom", "tier_used": "exact"}, "tier_used 'error' or"),
        ({"is_hit": False, "error": "x" * 301, "tier_used": "error"}, "1 to 300 characters"),
        ({"is_hit": False, "error": "a\x1b[2Jb", "tier_used": "error"}, "control characters"),
        ({"id": "x" * 201}, "at most 200 characters"),
    ],
)
def test_a_hostile_prediction_line_is_refused_with_its_line(
    predictions: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    fields: dict[str, object],
    says: str,
) -> None:
    bad = _edit(predictions, tmp_path / "bad.jsonl", 3, **fields)
    err = _score(bad, tmp_path, capsys)
    assert f"{bad}:3:" in err and says in err


def test_a_predictions_file_of_other_rows_is_an_error_not_a_perfect_fhr(
    predictions: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = predictions.read_text(encoding="utf-8").splitlines()
    moved = [lines[0]] + [
        json.dumps({**json.loads(x), "id": f"other-{i}"}) for i, x in enumerate(lines[1:])
    ]
    other = tmp_path / "other.jsonl"
    other.write_text("\n".join(moved) + "\n", encoding="utf-8")
    err = _score(other, tmp_path, capsys)
    assert "none of its 32 prediction(s) has the id of a selected row" in err


def _built(tmp_path: Path) -> tuple[Path, Path]:
    """The mini bench laid out as a build: a manifest beside it naming its and
    its labels file's sha256."""
    bench = tmp_path / "cachebench.jsonl"
    labels = tmp_path / "test_labels.jsonl"
    shutil.copy(MINI_BENCH, bench)
    shutil.copy(MINI_LABELS, labels)

    def sha(p: Path) -> str:
        return hashlib.sha256(p.read_bytes()).hexdigest()

    (tmp_path / "domains").mkdir()
    manifest = {"dataset": {"sha256": sha(bench)}, "test_labels": {"sha256": sha(labels)}}
    (tmp_path / "domains" / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return bench, labels


def test_a_labels_file_changed_by_hand_is_refused(
    predictions: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bench, labels = _built(tmp_path)
    args = ["score", "--bench", str(bench), "--labels", str(labels),
            "--predictions", str(predictions), "--out", str(tmp_path / "r.md")]  # fmt: skip
    assert main(args) == 0  # the build's own labels pass
    capsys.readouterr()
    (tmp_path / "r.md").unlink()
    text = labels.read_text(encoding="utf-8").replace(
        '"binary_label": "MISS"', '"binary_label": "HIT"', 1
    )
    labels.write_text(text, encoding="utf-8")
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "is not the" in err and "test_labels.sha256" in err and "Traceback" not in err
    assert not (tmp_path / "r.md").exists()
    code = main(["eval", "--bench", str(bench), "--labels", str(labels), "--baseline",
                 "exact_match", "--out", str(tmp_path / "e.md")])  # fmt: skip
    assert code == 2 and not (tmp_path / "e.md").exists()


def test_a_verdict_tier_that_would_break_a_report_is_an_invalid_verdict() -> None:
    assert Verdict(is_hit=True, tier_used="<b>x</b>").problems()
    assert Verdict(is_hit=True, tier_used="Missing").problems()
    assert Verdict(is_hit=True, tier_used="embedding").problems() == []
    line = {"id": "a", "is_hit": True, "confidence": 1.0, "score": None,
            "tier_used": "exact", "latency_ms": 0.1, "error": None}  # fmt: skip
    assert prediction_problem(line) is None


def test_an_output_path_that_is_a_directory_names_that_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "outdir"
    out.mkdir()
    code = main(["predict", "--bench", str(MINI_BENCH), "--baseline", "exact_match",
                 "--out", str(out)])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and f"{out}: Is a directory" in err and ".tmp" not in err
    assert list(tmp_path.iterdir()) == [out] and list(out.iterdir()) == []


SLOW = """
import time
from cacheeval.schema import Verdict
def cache(pair):
    time.sleep(0.2)
    return Verdict(is_hit=False, tier_used="exact")
"""


def test_sigterm_leaves_no_temp_file_and_marks_the_partial_file(tmp_path: Path) -> None:
    import os
    import signal
    import subprocess
    import sys
    import time

    from tests.conftest import REPO_ROOT, wait_for_child_process

    mod = tmp_path / "slow.py"
    mod.write_text(SLOW, encoding="utf-8")
    out = tmp_path / "p.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-m", "cacheeval", "predict", "--bench", str(MINI_BENCH),
         "--cache-module", str(mod), "--out", str(out)],
        cwd=REPO_ROOT, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )  # fmt: skip
    wait_for_child_process(proc.pid)  # the run is under way (its handlers are set)
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []
    header = json.loads(out.read_text(encoding="utf-8").splitlines()[0])
    assert header["complete"] is False
