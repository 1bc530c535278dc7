"""``cacheeval external`` and the pair-file readers: every public layout read from a
few lines the test writes itself, the reference's recall at a cache's FHR on
hand-computed fixtures, and the command end to end (figures only in the report,
``file:LINE`` and exit 2 on bad input)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cacheeval.baselines import ExactMatch
from cacheeval.benches.external import (
    Entry,
    LabelledSet,
    details_agree,
    grade,
    recall_at_fhr,
    row_details_agree,
)
from cacheeval.benches.pair_formats import PairFileSpec, read_pair_file, sniff_format
from cacheeval.cli import main
from cacheeval.support.jsonio import JsonlError
from tests.conftest import MINI_BENCH

QQP = (
    "id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate\n"
    "1\t1\t2\tHow do I reset my password?\tHow can I reset my password?\t1\n"
    '2\t3\t4\tWhat is "ML"?\tWhat is the capital of Peru?\t0\n'
    "3\t5\t6\tIs tea healthy?\tIs tea healthy?\t1\n"
)
PAWS = (
    "id\tsentence1\tsentence2\tlabel\n"
    "1\tThe cat sat on the mat .\tOn the mat , the cat sat .\t1\n"
    "2\tParis is north of Lyon .\tLyon is north of Paris .\t0\n"
)
MRPC = (
    "\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
    "1\t11\t12\tShares rose 5 percent on Friday.\tThe shares gained 5 percent Friday.\n"
    '0\t13\t14\tHe said "no" twice.\tShe left the room early.\n'
)
STS = (
    "4.8\tA man is playing a guitar.\tA man plays the guitar.\n"
    "3.0\tA dog runs.\tA dog is running fast in a park.\n"
    "0.4\tA woman slices onions.\tThe stock market fell.\n"
    "\n"
    "5.0\tIt is raining.\tIt is raining.\n"
)
CSV = "text_a,text_b,label\nhello there,hi there,HIT\nsolve x+1=2,solve x+1=3,MISS\n"


def write(tmp: Path, name: str, text: str) -> Path:
    path = tmp / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("name", "text", "layout", "hits"),
    [
        ("quora.tsv", QQP, "qqp", ["HIT", "MISS", "HIT"]),
        ("paws.tsv", PAWS, "paws", ["HIT", "MISS"]),
        ("msr.txt", MRPC, "mrpc", ["HIT", "MISS"]),
        ("sts.tsv", STS, "sts", ["HIT", "MISS", "HIT"]),
        ("mine.csv", CSV, "csv", ["HIT", "MISS"]),
    ],
)
def test_every_layout_reads_its_pairs(
    tmp_path: Path, name: str, text: str, layout: str, hits: list[str]
) -> None:
    path = write(tmp_path, name, text)
    assert sniff_format(path) == layout
    pf = read_pair_file(path, PairFileSpec(format=layout))
    assert pf.format == layout
    assert [r.binary_label for r in pf.rows] == hits
    assert [r.id for r in pf.rows] == [f"cb-qa_open-{i:04d}" for i in range(1, len(hits) + 1)]
    assert all(r.source == name and r.split == "test" for r in pf.rows)
    # the same through auto-detection
    assert [r.query_b for r in read_pair_file(path).rows] == [r.query_b for r in pf.rows]


def test_layout_texts_keep_quotes_and_sts_drops_the_middle(tmp_path: Path) -> None:
    qqp = read_pair_file(write(tmp_path, "q.tsv", QQP), PairFileSpec(format="qqp"))
    assert qqp.rows[1].query_a == 'What is "ML"?'  # bare quotes, no CSV quoting
    assert "line 3" in (qqp.rows[1].rationale or "")
    mrpc = read_pair_file(write(tmp_path, "m.tsv", MRPC), PairFileSpec(format="mrpc"))
    assert mrpc.rows[0].query_a == "Shares rose 5 percent on Friday."  # BOM stripped
    sts = read_pair_file(write(tmp_path, "s.tsv", STS), PairFileSpec(format="sts"))
    assert (sts.n_read, sts.n_dropped) == (3, 1)  # the 3.0 pair is neither HIT nor MISS
    assert [r.query_a for r in sts.rows][-1] == "It is raining."
    strict = read_pair_file(
        write(tmp_path, "s2.tsv", STS), PairFileSpec(format="sts", hit_min=2.5, miss_max=0.5)
    )
    assert [r.binary_label for r in strict.rows] == ["HIT", "HIT", "MISS", "HIT"]


def test_sts_header_line_is_skipped(tmp_path: Path) -> None:
    pf = read_pair_file(write(tmp_path, "s.tsv", "score\ts1\ts2\n" + STS), PairFileSpec("sts"))
    assert len(pf.rows) == 3


def test_large_layout_files_are_sampled_reproducibly(tmp_path: Path) -> None:
    lines = "".join(f"{i % 2}\t{i}\t{i}\tsentence {i} a\tsentence {i} b\n" for i in range(40))
    path = write(tmp_path, "m.tsv", MRPC.splitlines(keepends=True)[0] + lines)
    a = read_pair_file(path, PairFileSpec(format="mrpc", max_pairs=10, seed=3))
    b = read_pair_file(path, PairFileSpec(format="mrpc", max_pairs=10, seed=3))
    assert len(a.rows) == 10 and a.n_read == 40
    assert [r.query_a for r in a.rows] == [r.query_a for r in b.rows]
    numbers = [int(r.query_a.split()[1]) for r in a.rows]
    assert numbers == sorted(numbers)  # file order kept


@pytest.mark.parametrize(
    ("text", "layout", "where", "what"),
    [
        (QQP.replace("\t1\n", "\t1\textra\n", 1), "qqp", ":2:", "fields"),
        (QQP.replace("\t0\n", "\tmaybe\n"), "qqp", ":3:", "expected 0 or 1"),
        (PAWS.replace("Lyon is north of Paris .", " "), "paws", ":3:", "empty"),
        ("id\tq1\tq2\tdup\n1\ta\tb\t1\n", "qqp", ":1:", "question1"),
        (STS.replace("0.4", "high"), "sts", ":3:", "not a number"),
        (STS.replace("0.4", "7"), "sts", ":3:", "outside"),
        ("4.0\tonly two\n", "sts", ":1:", "expected 3"),
    ],
)
def test_bad_lines_name_file_and_line(
    tmp_path: Path, text: str, layout: str, where: str, what: str
) -> None:
    path = write(tmp_path, "bad.tsv", text)
    with pytest.raises(JsonlError) as err:
        read_pair_file(path, PairFileSpec(format=layout))
    assert f"bad.tsv{where}" in str(err.value) and what in str(err.value)


def test_recall_at_fhr_on_a_hand_computed_fixture() -> None:
    # scores, from the top: HIT .9, HIT .8, MISS .7, HIT .6, MISS .1 (P=3, N=2)
    y, s = [1, 1, 0, 1, 0], [0.9, 0.8, 0.7, 0.6, 0.1]
    assert recall_at_fhr(y, s, 0.0) == pytest.approx(2 / 3)  # threshold .8
    assert recall_at_fhr(y, s, 0.49) == pytest.approx(2 / 3)  # .6 would be FHR 1/2
    assert recall_at_fhr(y, s, 0.5) == 1.0
    assert recall_at_fhr(y, [None, 0.8, 0.7, 0.6, 0.1], 0.0) == pytest.approx(1 / 3)
    with pytest.raises(ValueError):
        recall_at_fhr(y, s, 1.5)


def entry(recall: float, ref_recall: float, auc: float, ref_auc: float) -> Entry:
    return Entry("s", "c", 10, 5, 0.1, recall, 0.9, auc, 0, ref_recall, ref_auc)


def test_entry_gaps_and_keeps() -> None:
    assert entry(0.5, 0.4, 0.80, 0.81).keeps_reference is True  # AUC within 0.02
    assert entry(0.5, 0.4, 0.78, 0.81).keeps_reference is False  # AUC 0.03 below
    assert entry(0.3, 0.4, 0.90, 0.81).keeps_reference is False  # recall 0.1 below
    assert entry(0.385, 0.4, 0.90, 0.81).keeps_reference is True  # recall within 0.02
    assert entry(0.375, 0.4, 0.90, 0.81).keeps_reference is False  # recall 0.025 below
    e = entry(0.5, 0.4, 0.80, 0.81)
    assert e.recall_gap == pytest.approx(0.1) and e.auc_gap == pytest.approx(-0.01)
    assert entry(0.5, 0.4, 0.8, 0.8).to_dict()["keeps_reference"] is True


class Overlap:
    """A tiny scoring cache for the tests: word-set Jaccard of the two queries."""

    name = "jaccard"

    def __call__(self, pair):  # type: ignore[no-untyped-def]
        from cacheeval.schema import Verdict

        a, b = set(pair.a.query.lower().split()), set(pair.b.query.lower().split())
        s = len(a & b) / len(a | b)
        return Verdict(is_hit=s >= 0.5, confidence=1.0, tier_used="embedding", score=s)


def test_grade_pairs_reference_figures_with_every_cache(tmp_path: Path) -> None:
    pf = read_pair_file(write(tmp_path, "q.tsv", QQP))
    sets = [LabelledSet("q.tsv", pf.rows, {"format": "qqp", "pairs": 3, "positives": 2})]
    report = grade({"exact": ExactMatch()}, sets, reference=Overlap(), reference_name="jaccard")
    exact, ref = report.entries
    assert (exact.cache, ref.cache) == ("exact", "jaccard")
    # exact match serves the verbatim repeat only: FHR 0, recall 1/2
    assert (exact.fhr, exact.recall) == (0.0, 0.5)
    # Jaccard: HIT pairs 5/7 and 1.0, the MISS pair 2/9: at FHR 0 it finds both HITs
    assert exact.ref_recall_at_fhr == 1.0 and exact.ref_roc_auc == 1.0
    assert exact.keeps_reference is False
    assert ref.recall == 1.0 and ref.fhr == 0.0 and ref.is_reference
    assert ref.keeps_reference is None  # its own threshold need not be its best
    md = report.to_markdown()
    assert "| q.tsv | 3 (2) | exact |" in md


DETAILS = (
    "text_a,text_b,label\n"
    "Shares rose 5% on Friday.,On Friday the shares gained 5%.,HIT\n"
    "It burned 12400 acres.,It burned 11400 acres.,HIT\n"
    "Smith met Obama.,Smith met Biden.,MISS\n"
    "Smith met Obama.,Smith met Obama.,HIT\n"
    "Paris is north of Lyon.,Lyon is north of Paris.,MISS\n"
)


@pytest.mark.parametrize(
    ("a", "b", "agree"),
    [
        ("Shares rose 5% on Friday.", "On Friday the shares gained 5%.", True),
        ("It burned 12,400 acres.", "It burned 12400 acres.", True),
        ("It burned 12,400 acres.", "It burned 11,400 acres.", False),
        ("Smith met Obama.", "Smith met Biden.", False),
        # a name opening one side's sentence is still that side's word
        ("Obama met Smith.", "Smith was met by Obama.", True),
        ("What is 7 choose 3?", "What is 3 choose 7?", True),  # order is not compared
        ("What is 7 choose 3?", "what is seven choose three?", False),  # digits only
    ],
)
def test_details_agree(a: str, b: str, agree: bool) -> None:
    assert details_agree(a, b) is agree


def test_grade_slices_repeat_every_figure_on_the_kept_rows(tmp_path: Path) -> None:
    pf = read_pair_file(write(tmp_path, "d.csv", DETAILS))
    sets = [LabelledSet("d.csv", pf.rows, {"format": "csv", "pairs": 5, "positives": 3})]
    slices = {"agree": row_details_agree, "none": lambda row: False}
    report = grade({"exact": ExactMatch()}, sets, reference=Overlap(), reference_name="jaccard",
                   slices=slices)  # fmt: skip
    assert [(e.subset, e.cache) for e in report.entries] == [
        ("", "exact"), ("", "jaccard"), ("agree", "exact"), ("agree", "jaccard")
    ]  # fmt: skip
    whole, _, sliced, ref = report.entries
    assert (whole.n, whole.n_positive) == (5, 3)
    # rows 1, 4, 5 agree: two HIT (one verbatim), one MISS (Paris/Lyon)
    assert (sliced.n, sliced.n_positive) == (3, 2)
    # exact match serves the verbatim HIT only: recall 1/2, FHR 0/1
    assert (sliced.recall, sliced.fhr) == (0.5, 0.0)
    # Jaccard of the lower-cased words on the slice: the HITs 2/9 ("friday." is not
    # "friday") and 1.0, the MISS 3/7: at FHR 0 it serves the verbatim pair only
    assert sliced.ref_recall_at_fhr == 0.5 and sliced.ref_roc_auc == 0.5
    assert ref.is_reference and ref.subset == "agree" and ref.n == 3
    assert "| d.csv: agree | 3 (2) | exact |" in report.to_markdown()


def test_grade_resamples_give_each_cache_its_gap_intervals(tmp_path: Path) -> None:
    pf = read_pair_file(write(tmp_path, "d.csv", DETAILS))
    sets = [LabelledSet("d.csv", pf.rows, {"format": "csv", "pairs": 5, "positives": 3})]
    report = grade({"exact": ExactMatch(), "overlap": Overlap()}, sets, reference=Overlap(),
                   reference_name="jaccard", resamples=200, seed=4)  # fmt: skip
    exact, overlap, ref = report.entries
    # the reference deciding at its own threshold (0.5) serves a prefix of its own
    # ranking, so its best recall at that FHR is never lower: the gap is at most 0;
    # 0 at the point (served: the 1.0 and 0.6 HITs and the 0.5 MISS), negative in a
    # resample that draws the 0.5 MISS twice and the 3/7 MISS not at all (the best
    # recall then reaches the 2/9 HIT)
    assert overlap.recall_gap == 0.0 and overlap.auc_gap_ci == (0.0, 0.0)
    assert overlap.recall_gap_ci is not None and overlap.recall_gap_ci[1] == 0.0
    assert overlap.recall_gap_ci[0] < 0.0
    # exact match (the verbatim HIT only, FHR 0) against Jaccard, which ranks the
    # verbatim HIT (1.0) and the acres HIT (0.6) above both MISS rows: recall 1/3
    # against 2/3. Never better in a resample (exact's served set is Jaccard's top
    # row); as good when the draw of 3 HIT rows misses the acres pair (and Jaccard's
    # budget stops short of the 2/9 HIT), about a third of the time on 5 rows: the
    # interval says a 3-HIT set cannot tell these two apart
    assert exact.recall_gap == pytest.approx(-1 / 3)
    assert exact.recall_gap_ci is not None and exact.recall_gap_ci[1] == 0.0
    assert exact.recall_gap_ci[0] <= exact.recall_gap
    assert exact.keeps_share is not None and 0.2 < exact.keeps_share < 0.5
    assert ref.recall_gap_ci is None and ref.keeps_share is None
    assert report.to_dict()["resamples"] == 200 and report.to_dict()["bootstrap_seed"] == 4
    md = report.to_markdown()
    assert "200 resamples, seed 4" in md and "| -0.333 [" in md
    # without resamples nothing is added
    plain = grade({"exact": ExactMatch()}, sets, reference=Overlap(), reference_name="jaccard")
    assert plain.entries[0].recall_gap_ci is None and "in resamples" not in plain.to_markdown()


REF_MODULE = """
from cacheeval.schema import Verdict

class Overlap:
    name = "overlap"

    def __call__(self, pair):
        a, b = set(pair.a.query.lower().split()), set(pair.b.query.lower().split())
        s = len(a & b) / len(a | b)
        return Verdict(is_hit=s >= 0.5, confidence=1.0, tier_used="embedding", score=s)
"""


def test_command_writes_figures_only(tmp_path: Path) -> None:
    ref = write(tmp_path, "ref.py", REF_MODULE)
    pairs = write(tmp_path, "pairs.tsv", PAWS)
    out, js = tmp_path / "ext.md", tmp_path / "ext.json"
    code = main(["external", str(pairs), "--baseline", "exact_match", "--reference",
                 f"{ref}:Overlap", "--bench", str(MINI_BENCH), "--split", "dev",
                 "--out", str(out), "--json", str(js)])  # fmt: skip
    assert code == 0
    data = json.loads(js.read_text())
    agree = "numbers and names agree"
    assert [(e["set"], e["subset"], e["cache"]) for e in data["entries"]] == [
        ("pairs.tsv", "", "exact_match"), ("pairs.tsv", "", "overlap"),
        ("pairs.tsv", agree, "exact_match"), ("pairs.tsv", agree, "overlap"),
        ("CacheEval dev", "", "exact_match"), ("CacheEval dev", "", "overlap"),
        ("CacheEval dev", agree, "exact_match"), ("CacheEval dev", agree, "overlap"),
    ]  # fmt: skip
    # both PAWS pairs name the same things (Paris/Lyon swapped places): the slice is the set
    assert data["entries"][2]["n"] == data["entries"][0]["n"] == 2
    assert data["sets"][0] == {"name": "pairs.tsv", "format": "paws", "pairs": 2,
                               "positives": 1, "read": 2, "dropped": 0}  # fmt: skip
    # every cache's gaps carry a bootstrap interval (1,000 resamples by default),
    # the reference's own rows none
    assert data["resamples"] == 1000
    for e in data["entries"]:
        has = e["recall_gap_ci"] is not None
        assert has is (e["cache"] == "exact_match" and e["auc_gap_ci"] is not None)
    assert "in resamples" in out.read_text()
    text = out.read_text() + js.read_text()
    for sentence in ("cat sat", "Lyon", "Paris"):
        assert sentence not in text  # numbers, never the pairs


def test_command_bad_input_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = write(tmp_path, "bad.tsv", QQP.replace("\t0\n", "\tmaybe\n"))
    code = main(["external", str(bad), "--format", "qqp", "--baseline", "exact_match",
                 "--no-reference", "--out", str(tmp_path / "x.md")])  # fmt: skip
    assert code == 2
    assert "bad.tsv:3:" in capsys.readouterr().err
    assert not (tmp_path / "x.md").exists()
    code = main(["external", str(tmp_path / "none.tsv"), "--baseline", "exact_match",
                 "--no-reference", "--out", str(tmp_path / "x.md")])  # fmt: skip
    assert code == 2
    code = main(
        [
            "external",
            str(bad),
            "--format",
            "sts",
            "--hit-min",
            "1",
            "--miss-max",
            "2",
            "--baseline",
            "exact_match",
            "--no-reference",
            "--out",
            str(tmp_path / "x.md"),
        ]
    )
    assert code == 2 and "cut-offs" in capsys.readouterr().err


def test_run_external_reads_every_pair_file_of_a_directory(tmp_path: Path) -> None:
    from scripts.run_external import pair_sets

    write(tmp_path, "README.md", "# not pairs")
    write(tmp_path, "q.tsv", QQP)
    write(tmp_path, "mine.csv", CSV)
    write(tmp_path, "broken.tsv", "nonsense\tcolumns\n1\t2\n")  # no text columns: skipped
    sets = pair_sets(tmp_path)
    assert [s.name for s in sets] == ["mine.csv", "q.tsv"]
    assert [s.info["format"] for s in sets] == ["csv", "qqp"]


def test_grade_runs_cache_specs_on_workers_with_the_same_figures(tmp_path: Path) -> None:
    """A CacheSpec is built once here, or decided on worker processes on a large
    enough set: the entries are the same either way."""
    from cacheeval.run.blockrun import CacheSpec

    ref = write(tmp_path, "ref.py", REF_MODULE)
    pf = read_pair_file(write(tmp_path, "p.tsv", PAWS))
    sets = [LabelledSet("p.tsv", pf.rows, {"format": "paws", "pairs": len(pf.rows)})]
    spec = CacheSpec(str(ref), "Overlap")
    here = grade({"overlap": spec, "exact": CacheSpec(baseline="exact_match")}, sets)
    there = grade(
        {"overlap": spec, "exact": CacheSpec(baseline="exact_match")},
        sets,
        workers=2,
        min_parallel_rows=1,
    )
    assert here.entries == there.entries
    overlap = here.entries[0]
    assert overlap.cache == "overlap" and overlap.n == len(pf.rows) and overlap.errors == 0


def test_ablation_table_gives_each_change_its_interval() -> None:
    """scripts.ablate_verified_cache: the d columns show the change against the full
    model with its paired-bootstrap interval (from the figures; no training here)."""
    from scripts.ablate_verified_cache import markdown as ablation_markdown

    def row(name: str, recall: float, auc: float, ci: list[float] | None) -> dict[str, object]:
        ext = {"fhr": 0.05, "recall": recall, "roc_auc": auc, "cos_recall_at_fhr": 0.30,
               "cos_roc_auc": 0.75}  # fmt: skip
        if ci is not None:
            ext |= {"d_recall_gap_ci": ci, "d_auc_gap_ci": [-0.01, 0.002]}
        return {"config": name, "test": {"fhr": 0.03, "recall": 0.8},
                "oof": {"recall": 0.81}, "external": {"m.csv": ext}}  # fmt: skip

    md = ablation_markdown(
        [
            row("(none: all features)", 0.28, 0.74, None),
            row("numbers", 0.29, 0.745, [-0.004, 0.03]),
        ],
        ["m.csv"],
        "2026-11-27T00:00:00Z",
    )
    full, numbers = md.splitlines()[-2:]
    # gap -0.020 for the full model, -0.010 without numbers: d +0.010 with its interval
    assert "| -0.010 | +0.010 [-0.004, +0.030] | -0.005 | +0.005 [-0.010, +0.002] |" in numbers
    assert "| -0.020 | +0.000 | -0.010 | +0.000 |" in full


def test_external_and_import_pairs_read_labels_alike(tmp_path: Path) -> None:
    """The CSV import-pairs takes (yes/no labels, --positive yes) is one external
    takes too: the label flags have the same names and defaults in both."""
    import argparse

    from cacheeval.commands import external, import_pairs

    def defaults(module: object) -> dict[str, object]:
        parser = argparse.ArgumentParser()
        module.add_arguments(parser)  # type: ignore[attr-defined]
        keys = ("text_a", "text_b", "label", "positive", "negative")
        return {k: parser.get_default(k) for k in keys}

    assert defaults(external) == defaults(import_pairs)
    csv = write(tmp_path, "mine.csv", "text_a,text_b,label\n"
                "How do I reset my password?,how can I reset my password,yes\n"
                "Convert 5 USD to EUR,Convert 7 USD to EUR,no\n")  # fmt: skip
    assert main(["import-pairs", str(csv), "--positive", "yes", "--domain", "qa_open",
                 "--out", str(tmp_path / "rows.jsonl")]) == 0  # fmt: skip
    assert main(["external", str(csv), "--positive", "yes", "--baseline", "exact_match",
                 "--no-reference", "--out", str(tmp_path / "ext.md")]) == 0  # fmt: skip
