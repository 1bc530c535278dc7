"""Several caches in one ``eval`` or ``external`` call (issue 30, item 3): the
repeated cache options, the ``--caches`` TOML file, the comparison written
beside each cache's own report, and one cache per call as before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cacheeval.cli import main
from cacheeval.commands._running import UsageError
from cacheeval.commands._several import read_caches_file
from cacheeval.reporting.report import Report
from tests.conftest import MINI_BENCH, MINI_LABELS

#: A cache with a constructor argument: serves when the queries share a word
#: of at least ``min_len`` letters.
CACHE_FILE = """
from cacheeval.schema import Verdict

class SharedWord:
    def __init__(self, min_len=4):
        self.min_len = min_len
        self.name = f"shared-word-{min_len}"

    def __call__(self, pair):
        a = {w for w in pair.a.query.lower().split() if len(w) >= self.min_len}
        b = {w for w in pair.b.query.lower().split() if len(w) >= self.min_len}
        hit = bool(a & b)
        return Verdict(is_hit=hit, confidence=0.6, tier_used="lexical", score=0.6 if hit else 0.4)
"""


def _one_error(err: str) -> str:
    lines = [ln for ln in err.splitlines() if "error:" in ln]
    assert "Traceback" not in err
    assert len(lines) == 1, err
    return lines[0]


@pytest.fixture
def cache_file(tmp_path: Path) -> Path:
    path = tmp_path / "shared_word.py"
    path.write_text(CACHE_FILE, encoding="utf-8")
    return path


def _eval(tmp_path: Path, *cache_options: str) -> list[str]:
    return ["eval", "--bench", str(MINI_BENCH), "--labels", str(MINI_LABELS), "--no-probe",
            *cache_options, "--out", str(tmp_path / "cmp.md"),
            "--json", str(tmp_path / "cmp.json")]  # fmt: skip


def test_repeated_options_run_each_cache_and_compare(
    tmp_path: Path, cache_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = _eval(
        tmp_path,
        "--baseline", "exact_match",
        "--cache-module", str(cache_file), "--cache-class", "SharedWord",
        "--cache-arg", "min_len=3", "--cache-name", "words 3",
        "--cache-module", str(cache_file), "--cache-class", "SharedWord",
        "--cache-arg", "min_len=6",
    )  # fmt: skip
    assert main(argv) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert "3 caches compared" in out
    # each cache's own report, named after it, beside the comparison
    own = {p.name for p in tmp_path.glob("cmp.*.json")}
    assert own == {"cmp.exact_match.json", "cmp.words-3.json", "cmp.SharedWord.json"}
    reports = {n: Report.from_dict(json.loads((tmp_path / n).read_text())) for n in own}
    assert reports["cmp.words-3.json"].provenance.cache_args == {"min_len": 3}
    assert reports["cmp.SharedWord.json"].provenance.cache_args == {"min_len": 6}
    assert reports["cmp.SharedWord.json"].provenance.cache_name == "shared-word-6"
    # the comparison holds what the reports hold, first cache the reference
    cmp = json.loads((tmp_path / "cmp.json").read_text())
    assert cmp["cacheeval_comparison"] == "1.0"
    assert [c["name"] for c in cmp["caches"]] == ["exact_match", "words 3", "shared-word-6"]
    assert [c["report"] for c in cmp["caches"]] == [
        "cmp.exact_match.json", "cmp.words-3.json", "cmp.SharedWord.json"]  # fmt: skip
    for c, file in zip(cmp["caches"], ["cmp.exact_match.json", "cmp.words-3.json",
                                       "cmp.SharedWord.json"], strict=True):  # fmt: skip
        r = reports[file]
        assert c["headline"]["fhr"] == r.headline.fhr.value
        assert c["headline"]["fp"] == r.confusion.fp
    fhr = next(d for d in cmp["differences"] if d["metric"] == "fhr")
    assert fhr["deltas"][0] == 0.0
    assert fhr["deltas"][1] == pytest.approx(fhr["values"][1] - fhr["values"][0])
    md = (tmp_path / "cmp.md").read_text()
    assert "# CacheEval comparison: 3 caches" in md
    assert "[cmp.words-3.md](cmp.words-3.md)" in md
    assert "## Differences to exact_match" in md and "## Latency" in md
    assert (tmp_path / "cmp.words-3.md").read_text().startswith("# CacheEval report: words 3")


def test_caches_file_names_the_caches(
    tmp_path: Path, cache_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    toml = tmp_path / "caches.toml"
    toml.write_text(
        '# two caches\n[exact]\nbaseline = "exact_match"\n\n'
        f'["words, keyed"]\nmodule = "{cache_file}"\nclass = "SharedWord"\n'
        "args = { min_len = 5 }\nkeyed = true\n",
        encoding="utf-8",
    )
    argv = _eval(tmp_path, "--caches", str(toml))
    assert main([*argv, "--predictions", str(tmp_path / "p.jsonl")]) == 0
    cmp = json.loads((tmp_path / "cmp.json").read_text())
    assert [c["name"] for c in cmp["caches"]] == ["exact", "words, keyed"]
    keyed = Report.from_dict(json.loads((tmp_path / "cmp.words-keyed.json").read_text()))
    assert keyed.provenance.cache_ref is not None and "behind --keyed" in keyed.provenance.cache_ref
    assert (tmp_path / "p.exact.jsonl").is_file() and (tmp_path / "p.words-keyed.jsonl").is_file()


def test_one_cache_per_call_is_unchanged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # options before the cache belong to it, as they always did
    argv = _eval(tmp_path, "--cache-name", "exact v1", "--baseline", "exact_match")
    assert main(argv) == 0
    report = Report.from_dict(json.loads((tmp_path / "cmp.json").read_text()))
    assert report.provenance.cache_name == "exact v1"
    assert not list(tmp_path.glob("cmp.*.json"))
    assert "exact v1: 32 rows" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ('[a]\nbaseline = "exact_match"\n[b\n', 3, "not TOML"),
        ('[a]\nbaseline = "exact_match"\n\n[b]\nmodule = "m"\ncolour = "red"\n', 6,
         "unknown key 'colour'"),
        ('[a]\nbaseline = "exact_match"\nmodule = "m"\n', 1, "exactly one of baseline"),
        ('[a]\nmodule = "m"\nargs = 3\n', 3, "args must be a table"),
        ('[a]\nbaseline = "exact_match"\nclass = "X"\n', 3, "apply to a module"),
        ('[a]\nmodule = "m"\nkeyed = "yes"\n', 3, "keyed must be true or false"),
        ("stray = 1\n", 1, "'stray' is not a table"),
        ("# nothing\n", 1, "no caches"),
        ('[a]\nmodule = "m"\nargs = { when = 1979-05-27 }\n', 3, "args values must be"),
    ],
)  # fmt: skip
def test_bad_caches_file_is_path_line_message(
    tmp_path: Path, text: str, line: int, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    toml = tmp_path / "caches.toml"
    toml.write_text(text, encoding="utf-8")
    with pytest.raises(UsageError) as info:
        read_caches_file(toml)
    assert str(info.value).startswith(f"{toml}:{line}: "), str(info.value)
    assert message in str(info.value)
    # and on the command line: that one line, exit 2, before any cache runs
    assert main(_eval(tmp_path, "--baseline", "exact_match", "--caches", str(toml))) == 2
    assert f"{toml}:{line}: " in _one_error(capsys.readouterr().err)
    assert not (tmp_path / "cmp.exact_match.md").exists()


def test_cache_options_without_a_cache_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_eval(tmp_path)) == 2
    assert "name a cache" in _one_error(capsys.readouterr().err)
    assert main(_eval(tmp_path, "--cache-arg", "x=1")) == 2
    assert "no --baseline or --cache-module" in _one_error(capsys.readouterr().err)
    with pytest.raises(SystemExit) as stop:
        main(_eval(tmp_path, "--baseline", "exact_match", "--cache-name", "a",
                   "--cache-name", "b"))  # fmt: skip
    assert stop.value.code == 2
    assert "--cache-name given twice for one cache" in capsys.readouterr().err


def test_a_bad_second_cache_stops_before_the_first_runs(
    tmp_path: Path, cache_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = _eval(tmp_path, "--baseline", "exact_match", "--cache-module", str(cache_file),
                 "--cache-arg", "no-equals")  # fmt: skip
    assert main(argv) == 2
    assert "expected KEY=VALUE" in _one_error(capsys.readouterr().err)
    assert not list(tmp_path.glob("cmp*"))


def test_external_grades_several_caches(
    tmp_path: Path, cache_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pairs = tmp_path / "pairs.csv"
    pairs.write_text(
        "text_a,text_b,label\n"
        "How do I boil an egg?,How do I boil an egg?,HIT\n"
        "What is the capital of France?,Which city is the capital of France?,HIT\n"
        "What is 2 + 2?,What is 2 + 3?,MISS\n"
        "Write a poem about cats,Write a poem about dogs,MISS\n",
        encoding="utf-8",
    )
    out = tmp_path / "ext.md"
    argv = ["external", str(pairs), "--no-reference", "--resamples", "0",
            "--baseline", "exact_match", "--cache-module", str(cache_file),
            "--cache-class", "SharedWord", "--cache-name", "words",
            "--out", str(out), "--json", str(tmp_path / "ext.json")]  # fmt: skip
    assert main(argv) == 0, capsys.readouterr().err
    stdout = capsys.readouterr().out
    assert "exact_match on pairs.csv: FHR 0.000 recall 0.500" in stdout
    assert "words on pairs.csv: FHR 1.000 recall 1.000" in stdout  # "Write", "poem", "What"
    md = out.read_text()
    assert "## Caches side by side" in md
    assert "| exact_match | 0.000 / 0.500 / " in md and "| words | 1.000 / 1.000 / " in md
    whole = json.loads((tmp_path / "ext.json").read_text())
    assert {e["cache"] for e in whole["entries"]} == {"exact_match", "words"}
    own = json.loads((tmp_path / "ext.words.json").read_text())
    assert {e["cache"] for e in own["entries"]} == {"words"}
    assert (tmp_path / "ext.exact_match.md").read_text().startswith("# External validity")
