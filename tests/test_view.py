"""``cacheeval view``: the page's data model, escaping, size, determinism,
the first screen on GPTCache's committed dev decisions, and bad input.

The browser half (filters, sort, paging in headless Chromium) is
tests/test_view_browser.py; it builds its pages with :func:`write_case`."""

from __future__ import annotations

import base64
import csv
import dataclasses
import hashlib
import json
import random
import re
from collections import Counter
from collections.abc import Sequence
from html import unescape
from pathlib import Path
from typing import Any

import pytest

from cacheeval.cli import main
from cacheeval.dataset import load_bench
from cacheeval.metrics.differences import primary_kind
from cacheeval.reporting.verdict import false_hit_phrase, merged_groups
from cacheeval.reporting.viewer import (
    CacheRun,
    changed_spans,
    highlights,
    summarize,
    view_data,
)
from cacheeval.reporting.viewer_page import SHARED_TERMS
from cacheeval.results.failures import FailureGroup
from cacheeval.results.predictions import Prediction, make_header, write_predictions
from cacheeval.schema import Row
from cacheeval.support.jsonio import jsonl_bytes
from tests.conftest import MINI_BENCH, MINI_LABELS, REPO_ROOT, make_row

BENCH = REPO_ROOT / "cachebench.jsonl"
GPTCACHE_CSV = REPO_ROOT / "reports" / "gptcache_minilm@0.80.csv"
INJECTION = "</script><img src=x onerror=alert(1)><!--"
CACHE_NAMES = ("exact", "lexical", "embedding@0.80", "embedding@0.90", "verified")
HIT_RATES = (0.1, 0.2, 0.5, 0.35, 0.3)


# --- building cases ---------------------------------------------------------------------


def write_bench(path: Path, rows: Sequence[Row]) -> Path:
    path.write_bytes(jsonl_bytes(r.to_dict() for r in rows))
    return path


def write_preds(
    path: Path, preds: Sequence[Prediction], name: str = "cache", split: str | None = None
) -> Path:
    header = make_header(cache_name=name, created="2026-01-01T00:00:00Z", split=split)
    write_predictions(path, header, preds)
    return path


def random_predictions(rows: Sequence[Row], seed: int, hit_rate: float) -> list[Prediction]:
    """Seeded decisions: a score per row shared by every seed (``random.Random(0)``)
    plus this seed's noise, HIT above 1 - hit_rate; one call in 50 failed. The
    shared part makes caches agree on many rows, as real caches do."""
    shared = random.Random(0)
    rng = random.Random(seed)
    out = []
    for row in rows:
        base = shared.random()
        if rng.random() < 0.02:
            out.append(Prediction(row.id, False, None, None, "error", 1.0, "ValueError: boom"))
            continue
        score = round(min(1.0, max(0.0, base + rng.uniform(-0.15, 0.15))), 6)
        hit = score > 1 - hit_rate
        out.append(Prediction(row.id, hit, 0.5 + abs(score - 0.5), score, "embedding", 1.0))
    return out


def labelled_rows() -> list[Row]:
    """The committed benchmark's labelled rows (train and dev)."""
    return load_bench(BENCH, split=("train", "dev"))


def case_rows(n: int) -> list[Row]:
    """``n`` real rows (the labelled train and dev rows of the committed bench,
    repeated as needed) under fresh ids, all in the dev split."""
    base = labelled_rows()
    per_domain: Counter[str] = Counter()
    out = []
    for k in range(n):
        row = base[k % len(base)]
        per_domain[row.domain] += 1
        rid = f"cb-{row.domain}-{per_domain[row.domain]:04d}"
        out.append(dataclasses.replace(row, id=rid, split="dev"))
    return out


def write_case(tmp: Path, n_rows: int = 2000) -> tuple[Path, list[Path], list[Row]]:
    """A bench of ``n_rows`` rows and five predictions files over it."""
    rows = case_rows(n_rows)
    bench = write_bench(tmp / "bench.jsonl", rows)
    files = [
        write_preds(
            tmp / f"{name}.jsonl", random_predictions(rows, seed, rate), name=name, split="dev"
        )
        for seed, (name, rate) in enumerate(zip(CACHE_NAMES, HIT_RATES, strict=True))
    ]
    return bench, files, rows


def view(tmp: Path, *args: str | Path) -> Path:
    out = tmp / "view.html"
    assert main(["view", *map(str, args), "--out", str(out)]) == 0
    return out


def page_data(html: str) -> dict[str, Any]:
    found = re.search(r'<script type="application/json" id="viewer-data">(.*?)</script>', html)
    assert found is not None
    data: dict[str, Any] = json.loads(found.group(1))
    return data


def first_screen(html: str) -> str:
    """The text of the summary section (what shows before the pair table)."""
    start = html.index('<section id="summary"')
    end = html.index("</section>", start)
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html[start:end])))


def run_of(rows: Sequence[Row], preds: Sequence[Prediction], name: str) -> CacheRun:
    header = make_header(cache_name=name, created="x")
    return CacheRun(name, f"{name}.jsonl", header, {p.id: p for p in preds})


# --- the data model -----------------------------------------------------------------------


def test_summary_counts_by_hand() -> None:
    rows = [
        make_row(1, "UNRELATED", query_a="What is 2+2?", query_b="What is 2+3?"),
        make_row(2, "EQUIV"),
        make_row(3, "ADVERSARIAL", system_prompt_a="User: Ana.", system_prompt_b="User: Bo."),
        make_row(4, "PARA_SAFE"),
    ]
    preds = [
        Prediction(rows[0].id, True, 0.9, 0.9, "embedding", 1.0),  # false hit
        Prediction(rows[1].id, True, 0.9, 0.95, "embedding", 1.0),  # correct
        Prediction(rows[2].id, True, 0.9, 0.95, "embedding", 1.0),  # false hit at the top
        Prediction(rows[3].id, False, None, None, "error", 1.0, "TimeoutError: slow"),
    ]
    kinds = [primary_kind(r) for r in rows]
    assert kinds[0] == "number" and kinds[2] == "system prompt / user"
    (s,) = summarize(rows, kinds, [run_of(rows, preds, "c")])
    assert (s.n_rows, s.served, s.false_hits, s.missed_hits, s.correct, s.errors) == (
        4,
        3,
        2,
        0,
        1,
        1,
    )
    assert s.fhr == 1.0  # 2 MISS rows, both served
    assert s.recall == 0.5  # 2 HIT rows, one served (the error counts as not served)
    assert s.groups == (("system prompt / user", 1), ("number", 1))  # ties: vocabulary order
    assert (s.top_score, s.top_served, s.top_groups) == (0.95, 2, (("system prompt / user", 1),))


def decode(data: dict[str, Any], i: int) -> dict[str, Any]:
    """Row i of the page's data, decoded back to texts."""
    s = data["strings"]
    r = data["rows"]

    def text(j: int) -> str | None:
        return None if j < 0 else s[j]

    def turns(flat: list[int] | int) -> list[dict[str, str]] | None:
        if not flat:
            return None
        assert isinstance(flat, list)
        return [{"role": s[flat[k]], "content": s[flat[k + 1]]} for k in range(0, len(flat), 2)]

    return {
        "id": r["id"][i],
        "domain": text(r["domain"][i]),
        "label": text(r["label"][i]),
        "subcategory": text(r["sub"][i]),
        "query_a": text(r["qa"][i]),
        "query_b": text(r["qb"][i]),
        "system_prompt_a": text(r["sa"][i]),
        "system_prompt_b": text(r["sb"][i]),
        "context_a": turns(r["ca"][i]),
        "context_b": turns(r["cb"][i]),
        "tools_a": None if r["ta"][i] < 0 else json.loads(s[r["ta"][i]]),
        "tools_b": None if r["tb"][i] < 0 else json.loads(s[r["tb"][i]]),
        "rationale": text(r["rationale"][i]),
        "kind": data["kinds"][r["kind"][i]],
    }


def test_the_data_decode_back_to_the_rows_and_predictions() -> None:
    rows = case_rows(300)
    preds = random_predictions(rows, 1, 0.4)[:-7]  # the last 7 rows have no prediction
    data = view_data(rows, [run_of(rows, preds, "c")], title="t", source={})
    for i, row in enumerate(rows):
        got = decode(data, i)
        for key in got:
            if key == "kind":
                assert got[key] == primary_kind(row)
            else:
                want = getattr(row, key)
                assert got[key] == (list(map(dict, want)) if isinstance(want, tuple) else want)
        assert data["rows"]["bin"][i] == row.binary_label[0]
    cache = data["caches"][0]
    by_id = {p.id: p for p in preds}
    for i, row in enumerate(rows):
        p = by_id.get(row.id)
        if p is None:
            assert cache["dec"][i] == "-"
            assert data["strings"][cache["error"][str(i)]].startswith("MissingPrediction")
        elif p.error is not None:
            assert cache["dec"][i] == "E" and cache["score"][i] is None
        else:
            assert cache["dec"][i] == ("H" if p.is_hit else "M")
            assert cache["score"][i] == pytest.approx(p.score, abs=1e-4)
    assert cache["n_predictions"] == 293


def test_repeated_texts_are_stored_once() -> None:
    rows = [r for r in labelled_rows() if r.tools_a]
    assert len(rows) > 50
    data = view_data(rows, [], title="t", source={})
    tool_texts = {data["rows"]["ta"][i] for i in range(len(rows))}
    assert len(tool_texts) < len(rows) / 10  # a handful of tool sets shared by many rows
    assert len(data["strings"]) == len(set(data["strings"]))


def test_changed_words_are_marked_on_both_sides() -> None:
    row = make_row(
        1,
        "ADVERSARIAL",
        query_a="Convert 5 km to miles \U0001f600 now",
        query_b="Convert 8 km to miles \U0001f600 now",
        system_prompt_a="Today is Monday.",
        system_prompt_b="Today is Friday.",
    )
    spans = highlights(row)
    # JavaScript indexes strings in UTF-16 code units: the emoji counts twice.
    assert spans["qa"] == [8, 9] and spans["qb"] == [8, 9]
    assert spans["sa"] == [9, 15] and spans["sb"] == [9, 15]
    assert "ca" not in spans
    emoji_after = changed_spans(
        "\U0001f600 a b", [("\U0001f600", False), (" ", False), ("a", True)]
    )
    assert emoji_after == [3, 4]


# --- the page ---------------------------------------------------------------------------------


def test_text_from_rows_and_files_cannot_inject_markup(tmp_path: Path) -> None:
    rows = [
        make_row(
            1,
            "UNRELATED",
            query_a=INJECTION,
            query_b="safe & sound <b>",
            system_prompt_a=INJECTION,
            rationale=INJECTION + "\u2028",
            context_a=({"role": INJECTION, "content": INJECTION},),
            split="dev",
        ),
        make_row(2, "EQUIV", split="dev"),
    ]
    bench = write_bench(tmp_path / "bench.jsonl", rows)
    preds = [
        Prediction(rows[0].id, True, 0.9, 0.9, "embedding", 1.0),
        Prediction(rows[1].id, False, None, None, "error", 1.0, "ValueError: " + INJECTION),
    ]
    pred_file = write_preds(tmp_path / "p.jsonl", preds, name=INJECTION)
    html = view(tmp_path, pred_file, "--bench", bench, "--title", INJECTION).read_text()
    assert "<img" not in html and "</script><" not in html
    assert html.count("<script") == 2 and html.count("</script>") == 2
    assert "&lt;/script&gt;&lt;img" in html  # the title and the cache name, as text
    data = page_data(html)
    assert data["title"] == INJECTION and data["caches"][0]["name"] == INJECTION
    assert INJECTION in data["strings"] and INJECTION + "\u2028" in data["strings"]
    # The only script allowed to run is the page's own (its hash in the CSP).
    script = re.findall(r"<script>(.*?)</script>", html, re.S)
    assert len(script) == 1
    digest = base64.b64encode(hashlib.sha256(script[0].encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}';" in html
    assert "innerHTML" not in script[0] and "insertAdjacentHTML" not in script[0]


def test_a_2000_row_5_cache_page_stays_under_5_mb_and_is_deterministic(tmp_path: Path) -> None:
    bench, files, rows = write_case(tmp_path)
    first = view(tmp_path, *files, "--bench", bench).read_bytes()
    assert len(first) < 5_000_000
    again = view(tmp_path, *files, "--bench", bench).read_bytes()
    assert first == again
    data = page_data(first.decode())
    assert len(data["rows"]["id"]) == 2000 and len(data["caches"]) == 5
    assert [c["name"] for c in data["caches"]] == list(CACHE_NAMES)
    assert str(tmp_path) not in first.decode()  # no absolute paths in the page


def gptcache_dev_predictions(tmp: Path) -> tuple[Path, dict[str, Prediction]]:
    """GPTCache MiniLM@0.80's committed per-row decisions (the real path,
    reports/gptcache_minilm@0.80.csv) on the dev split, as a predictions file."""
    preds = []
    with open(GPTCACHE_CSV, newline="", encoding="utf-8") as f:
        for rec in csv.DictReader(f):
            if rec["split"] == "dev":
                score = float(rec["score"])
                preds.append(
                    Prediction(rec["id"], rec["decision"] == "HIT", None, score, "embedding", 1.0)
                )
    path = write_preds(tmp / "gptcache.jsonl", preds, name="gptcache minilm@0.80", split="dev")
    return path, {p.id: p for p in preds}


def test_the_first_screen_names_gptcaches_main_failure_kinds_on_dev(tmp_path: Path) -> None:
    path, preds = gptcache_dev_predictions(tmp_path)
    html = view(tmp_path, path, "--bench", BENCH).read_text()
    screen = first_screen(html)
    rows = load_bench(BENCH, split="dev")
    false_hits = [r for r in rows if r.binary_label == "MISS" and preds[r.id].is_hit]
    counts = Counter(primary_kind(r) for r in false_hits)
    assert len(false_hits) > 100 and len(counts) >= 5
    # The groups table lists every kind with its count, most first.
    table = screen[screen.index("What differs gptcache minilm@0.80") :].split(" Terms ")[0]
    listed = [(k.strip(), int(n)) for k, n in re.findall(r"([a-z][a-z :/]+?) (\d+)", table)]
    assert dict(listed) == counts
    assert [n for _, n in listed] == sorted(counts.values(), reverse=True)
    main_kind, n = listed[0]
    assert counts[main_kind] == max(counts.values())
    # The verdict names the largest group as the Markdown report does (context
    # kinds as one group, policy kinds as another) with its advice.
    merged = merged_groups([FailureGroup(k, c, 0.0, ()) for k, c in counts.items()])
    _, size, kinds = merged[0]
    what, advice = false_hit_phrase(kinds)
    assert f"{len(false_hits)} false hits; " in screen
    assert f"({size} of {len(false_hits)}) are {what}: {advice}." in screen
    # Every term the page uses is explained on it, the table's where they appear.
    for head in ("FHR", "Recall", "False hits", "Missed hits", "Errors", "What differs"):
        assert re.search(rf'<th (class="num" )?title="[^"]{{20,}}">{head}</th>', html), head
    for term in ("HIT and MISS", "False hit", "Missed hit", *SHARED_TERMS):
        assert f" {term} " in screen[screen.index(" Terms ") :]
    # And the serves at the top score: the same queries under another context.
    top = max(p.score for p in preds.values() if p.is_hit and p.score is not None)
    at_top = [r for r in rows if preds[r.id].is_hit and round(preds[r.id].score or 0, 4) == top]
    wrong_top = Counter(primary_kind(r) for r in at_top if r.binary_label == "MISS")
    assert wrong_top.most_common(1)[0][0] == "prior turns"
    assert (
        f"At its top score ({top:.3f}) it serves {len(at_top)} pairs, "
        f"{sum(wrong_top.values())} of which it must not, and no threshold removes them"
    ) in screen
    _, size, kinds = merged_groups([FailureGroup(k, c, 0.0, ()) for k, c in wrong_top.items()])[0]
    assert kinds[:2] == ["system prompt / user", "prior turns"]
    what = false_hit_phrase(kinds)[0]
    assert (
        what.startswith("the same or a similar query") and f"{size} of them are {what}." in screen
    )


def test_hidden_test_rows_need_the_labels_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = load_bench(MINI_BENCH, split="test", labels_path=MINI_LABELS)
    preds = write_preds(
        tmp_path / "p.jsonl", random_predictions(rows, 3, 0.5), name="c", split="test"
    )
    out = tmp_path / "view.html"
    assert main(["view", str(preds), "--bench", str(MINI_BENCH), "--out", str(out)]) == 2
    assert "pass --labels" in one_error(capsys) and not out.exists()
    args = ["view", str(preds), "--bench", str(MINI_BENCH), "--labels", str(MINI_LABELS)]
    assert main([*args, "--out", str(out)]) == 0
    # The page shows the hidden labels: it is written as private as the labels file.
    assert out.stat().st_mode & 0o777 == 0o600
    assert f"shows the hidden labels of {len(rows)} test rows" in capsys.readouterr().err
    data = page_data(out.read_text())
    assert data["rows"]["id"] == [r.id for r in rows]
    assert [data["strings"][i] for i in data["rows"]["label"]] == [r.label for r in rows]


# --- bad input ----------------------------------------------------------------------------------


@pytest.fixture
def small(tmp_path: Path) -> tuple[Path, Path, list[Row]]:
    rows = [make_row(i, "EQUIV" if i % 2 else "UNRELATED", split="dev") for i in range(1, 6)]
    bench = write_bench(tmp_path / "bench.jsonl", rows)
    preds = write_preds(tmp_path / "p.jsonl", random_predictions(rows, 0, 0.5), split="dev")
    return bench, preds, rows


def one_error(capsys: pytest.CaptureFixture[str]) -> str:
    """The one line a failed command printed on stderr (no traceback)."""
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("cacheeval view: error: ")
    return lines[0]


def run_view(tmp: Path, *args: str | Path) -> int:
    return main(["view", *map(str, args), "--out", str(tmp / "view.html")])


def test_a_missing_file_is_one_line_and_exit_2(
    tmp_path: Path, small: tuple[Path, Path, list[Row]], capsys: pytest.CaptureFixture[str]
) -> None:
    bench, preds, _ = small
    assert run_view(tmp_path, tmp_path / "nope.jsonl", "--bench", bench) == 2
    err = one_error(capsys)
    assert "nope.jsonl" in err and "No such file" in err and "\n" not in err
    assert run_view(tmp_path, preds, "--bench", tmp_path / "nobench.jsonl") == 2
    assert "nobench.jsonl" in one_error(capsys)
    assert not (tmp_path / "view.html").exists()


def test_a_bad_json_line_names_its_line(
    tmp_path: Path, small: tuple[Path, Path, list[Row]], capsys: pytest.CaptureFixture[str]
) -> None:
    bench, preds, _ = small
    lines = preds.read_text().splitlines()
    lines[2] = lines[2][:-5]  # the second prediction, cut short
    preds.write_text("\n".join(lines) + "\n")
    assert run_view(tmp_path, preds, "--bench", bench) == 2
    assert f"{preds}:3: not valid JSON" in one_error(capsys)
    bad_bench = tmp_path / "bad.jsonl"
    bad_bench.write_text(bench.read_text() + "{nope\n")
    good = write_preds(tmp_path / "good.jsonl", random_predictions(small[2], 0, 0.5))
    assert run_view(tmp_path, good, "--bench", bad_bench) == 2
    assert f"{bad_bench}:6: not valid JSON" in one_error(capsys)


def test_predictions_of_another_bench_are_refused(
    tmp_path: Path, small: tuple[Path, Path, list[Row]], capsys: pytest.CaptureFixture[str]
) -> None:
    bench, _, rows = small
    stranger = Prediction("cb-math-0042", True, 0.9, 0.9, "embedding", 1.0)
    mixed = write_preds(tmp_path / "mixed.jsonl", [*random_predictions(rows[:2], 0, 0.5), stranger])
    assert run_view(tmp_path, mixed, "--bench", bench) == 2
    err = one_error(capsys)
    assert f"{mixed}:4: prediction id 'cb-math-0042' is not a row of {bench}" in err
    # Predictions of rows outside the selected split: none is for a shown row.
    other = [dataclasses.replace(r, split="train") for r in rows]
    both = write_bench(tmp_path / "both.jsonl", [*other[:3], *rows[3:]])
    preds = write_preds(tmp_path / "train.jsonl", random_predictions(other[:3], 0, 0.5))
    assert run_view(tmp_path, preds, "--bench", both, "--split", "dev") == 2
    assert "none of its 3 prediction(s) is for a selected row" in one_error(capsys)


def test_rows_a_file_lacks_are_shown_as_missing(
    tmp_path: Path, small: tuple[Path, Path, list[Row]], capsys: pytest.CaptureFixture[str]
) -> None:
    bench, _, rows = small
    preds = write_preds(tmp_path / "some.jsonl", random_predictions(rows[:3], 0, 0.5))
    assert run_view(tmp_path, preds, "--bench", bench) == 0
    assert "no prediction for 2 of the 5 selected rows" in capsys.readouterr().err
    data = page_data((tmp_path / "view.html").read_text())
    assert data["caches"][0]["dec"][3:] == "--"


def test_writes_only_the_out_file(tmp_path: Path, small: tuple[Path, Path, list[Row]]) -> None:
    bench, preds, _ = small
    before = sorted(p.name for p in tmp_path.iterdir())
    out_dir = tmp_path / "new" / "dir"
    assert main(["view", str(preds), "--bench", str(bench), "--out", str(out_dir / "v.html")]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*before, "new"])
    assert [p.name for p in out_dir.iterdir()] == ["v.html"]
    assert (out_dir / "v.html").stat().st_mode & 0o777 == 0o644  # public rows: a public page


def test_two_files_of_one_cache_get_distinct_columns(
    tmp_path: Path, small: tuple[Path, Path, list[Row]]
) -> None:
    bench, preds, rows = small
    other = write_preds(tmp_path / "q.jsonl", random_predictions(rows, 9, 0.5))
    data = page_data(view(tmp_path, preds, other, "--bench", bench).read_text())
    assert [c["name"] for c in data["caches"]] == ["cache (p.jsonl)", "cache (q.jsonl)"]


def test_the_main_jobs_step_writes_reports_view(tmp_path: Path) -> None:
    from scripts.make_view import main as make_view

    rows = load_bench(MINI_BENCH, split="test", labels_path=MINI_LABELS)
    folder = tmp_path / "reports" / "reference_predictions"
    folder.mkdir(parents=True)
    for name, seed in (("always-miss", 1), ("verified-cache", 2), ("exact-match", 3)):
        write_preds(folder / f"{name}.jsonl", random_predictions(rows, seed, 0.5), name, "test")
    args = ["--reports", str(tmp_path / "reports"), "--bench", str(MINI_BENCH)]
    assert make_view([*args, "--labels", str(MINI_LABELS)]) == 0
    page = (tmp_path / "reports" / "view" / "index.html").read_text()
    data = page_data(page)
    assert [c["name"] for c in data["caches"]] == ["verified-cache", "always-miss", "exact-match"]
    assert data["source"]["split"] == "test" and len(data["rows"]["id"]) == len(rows)
    empty = tmp_path / "empty"
    assert make_view(["--reports", str(empty), "--bench", str(MINI_BENCH)]) == 2


def test_stress_rows_show_their_report_key_as_subcategory() -> None:
    """A stress row's subcategory on the page is the key its report uses
    (family/kind, or policy for a never-cache prompt), so a report's link
    filters by it; any other row keeps its own."""
    from cacheeval.reporting.viewer import view_data
    from tests.test_report_kinds import kind_rows

    rows = kind_rows()
    data = view_data(rows, [], title="t", source={})
    subs = [data["strings"][i] for i in data["rows"]["sub"]]
    keys = ["noise/typo_drop"] * 3 + ["identity/city"] * 4 + ["context/system_prompt_other"] * 2
    assert subs == [*keys, "policy", rows[10].subcategory]


def test_eval_view_links_every_count_to_its_pairs(tmp_path: Path) -> None:
    """``cacheeval eval --view PAGE``: the per-pair page of the run (every cache
    of it side by side) and reports whose counts of false and missed hits
    (headline, failure groups, per domain and label) link to exactly those
    pairs on it; with several caches each report links under its own name.
    Without --predictions nothing but the report and the page is written."""
    from tests.view_links import check_links
    from tests.view_links import page_data as embedded

    bench = REPO_ROOT / "cachebench.jsonl"
    out = tmp_path / "r" / "report.md"
    page = tmp_path / "pages" / "pairs.html"
    argv = ["eval", "--bench", str(bench), "--split", "dev", "--domain", "math", "code",
            "--baseline", "exact_match", "--baseline", "always_hit"]  # fmt: skip
    assert main([*argv, "--out", str(out), "--view", str(page)]) == 0
    data = embedded(page)
    assert [c["name"] for c in data["caches"]] == ["exact_match", "always_hit"]
    # the predictions were not kept: the page does not name a file that is gone
    assert [c["file"] for c in data["caches"]] == ["(predictions not kept)"] * 2
    reports = sorted(out.parent.glob("report.*.md"))
    assert len(reports) == 2 and sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == (
        sorted(["report.md", "pairs.html", *(r.name for r in reports)])
    )
    for md_path in reports:
        md = md_path.read_text(encoding="utf-8")
        assert "[../pages/pairs.html](../pages/pairs.html)" in md
        assert "| Domain | n |" in md and md.count("](../pages/pairs.html#cache=") >= 5
        assert check_links(md, md_path.parent) >= 5
    always = next(r for r in reports if "always_hit" in r.name).read_text(encoding="utf-8")
    assert (
        "Pairs: [" in always
        and "false hits](../pages/pairs.html#cache=always_hit&outcome=false%20hit)" in always
    )  # noqa: E501
    # one cache, predictions kept: the page is made from that file
    preds = tmp_path / "p.jsonl"
    one = tmp_path / "one.md"
    assert main(["eval", "--bench", str(bench), "--split", "dev", "--domain", "math",
                 "--baseline", "exact_match", "--out", str(one), "--predictions", str(preds),
                 "--view", str(tmp_path / "one.html")]) == 0  # fmt: skip
    assert preds.is_file() and check_links(one.read_text(encoding="utf-8"), tmp_path) >= 2
    assert [c["file"] for c in embedded(tmp_path / "one.html")["caches"]] == ["p.jsonl"]


def test_score_view_links_its_counts(tmp_path: Path) -> None:
    """``cacheeval score --view``: the same page and links from a saved predictions file."""
    from tests.view_links import check_links

    bench = REPO_ROOT / "cachebench.jsonl"
    preds = tmp_path / "p.jsonl"
    assert main(["predict", "--bench", str(bench), "--split", "dev", "--domain", "math",
                 "--baseline", "always_hit", "--out", str(preds)]) == 0  # fmt: skip
    out = tmp_path / "score.md"
    assert main(["score", "--bench", str(bench), "--predictions", str(preds), "--out", str(out),
                 "--view", str(tmp_path / "page.html")]) == 0  # fmt: skip
    md = out.read_text(encoding="utf-8")
    assert "[page.html](page.html)" in md and check_links(md, tmp_path) >= 3
