"""The qa_open shard: counts, rubric verification, determinism, counterbalance,
and clear ``path:line`` errors for bad fixtures."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from cacheeval.dataset import row_problem
from cacheeval.generators import qa_open
from cacheeval.generators.qa_factual import FixtureError
from cacheeval.pipeline.domains import MATRIX
from cacheeval.pipeline.generate import generate_shard
from cacheeval.schema import HIT, LABELS, MISS, Row
from cacheeval.support.layout import REPO_ROOT
from cacheeval.verify import check_row, tier_of
from tests.generators.shard_checks import flip_words_missing_from_hits, line_of

DOMAIN = "qa_open"


@pytest.fixture(scope="module")
def rows() -> list[dict[str, Any]]:
    return generate_shard("qa_open")


def _meets(text: str, pattern: str) -> bool:
    return re.search(pattern, text, flags=re.IGNORECASE | re.UNICODE) is not None


# --- the shard -------------------------------------------------------------------


def test_label_counts_match_matrix(rows: list[dict[str, Any]]) -> None:
    counts = Counter(r["label"] for r in rows)
    assert tuple(counts[label] for label in LABELS) == MATRIX[DOMAIN] == (60, 60, 50, 40, 50)
    assert len(rows) == 260


def test_subcategories_belong_to_their_label(rows: list[dict[str, Any]]) -> None:
    assert len({r["subcategory"] for r in rows}) >= 8
    for r in rows:
        assert qa_open.SUBCATEGORIES[r["subcategory"]][0] == r["label"], r["id"]
    adversarial_axes = {r["subcategory"] for r in rows if r["label"] == "ADVERSARIAL"}
    assert {
        "polarity_flip",
        "scope_change",
        "audience_change",
        "format_constraint",
        "cause_effect_swap",
    } <= adversarial_axes


def test_every_row_is_valid_and_verifies_in_the_rubric_tier(rows: list[dict[str, Any]]) -> None:
    disagreements = []
    for r in rows:
        data = {**r, "split": "train"}
        assert row_problem(data) is None, r["id"]
        row = Row.from_dict(data)
        assert row.verification_method == "rubric"
        assert tier_of(row.verification_method) == "rubric"
        assert (row.verification_payload or {})["kind"] == "rubric"
        if check_row(row).binary != row.binary_label:
            disagreements.append(r["id"])
    assert disagreements == []


def test_answers_meet_their_own_three_criteria(rows: list[dict[str, Any]]) -> None:
    for r in rows:
        p = r["verification_payload"]
        for side in ("a", "b"):
            crits = p[f"criteria_{side}"]
            assert len(crits) == 3 and len({c["criterion"] for c in crits}) == 3
            answer = r[f"expected_answer_{side}"]
            assert all(_meets(answer, c["pattern"]) for c in crits), (r["id"], side)


def test_hit_rows_are_rewordings_with_the_same_criteria(rows: list[dict[str, Any]]) -> None:
    for r in rows:
        p = r["verification_payload"]
        same = p["criteria_a"] == p["criteria_b"]
        assert same == (r["binary_label"] == HIT), r["id"]
        if same:
            assert r["expected_answer_a"] == r["expected_answer_b"]


def test_miss_rationales_name_exactly_the_failed_criteria(rows: list[dict[str, Any]]) -> None:
    for r in rows:
        if r["binary_label"] != MISS:
            continue
        crits = r["verification_payload"]["criteria_b"]
        failed = [c["criterion"] for c in crits if not _meets(r["expected_answer_a"], c["pattern"])]
        assert failed, r["id"]
        for c in crits:
            assert (f"'{c['criterion']}'" in r["rationale"]) == (c["criterion"] in failed), r["id"]


def test_answers_are_short(rows: list[dict[str, Any]]) -> None:
    answers = {r["expected_answer_a"] for r in rows} | {r["expected_answer_b"] for r in rows}
    assert len(answers) >= 120
    for a in answers:
        assert len(a.split()) <= 80, a
        if "\n" not in a:  # prose, not a list or code
            sentences = len(re.findall(r"[.!?](?:\s|$)", a))
            assert 1 <= sentences <= 4, a


def test_ids_rationales_and_pairs_are_unique(rows: list[dict[str, Any]]) -> None:
    assert [r["id"] for r in rows] == [f"cb-{DOMAIN}-{i:04d}" for i in range(1, 261)]
    assert len({r["rationale"] for r in rows}) == len(rows)
    seen: set[frozenset[str]] = set()
    for r in rows:
        assert r["query_a"] != r["query_b"], r["id"]
        key = frozenset((r["query_a"], r["query_b"]))
        assert key not in seen, r["id"]
        seen.add(key)


def test_sources_name_an_authored_family(rows: list[dict[str, Any]]) -> None:
    known: dict[str, set[str]] = {}
    for r in rows:
        path, _, key = r["source"].partition("#")
        assert path.startswith(f"sources/{DOMAIN}/"), r["source"]
        if path not in known:
            data = json.loads((REPO_ROOT / path).read_text(encoding="utf-8"))
            known[path] = {f["key"] for f in data["families"]}
        assert key in known[path], r["source"]
    assert len({r["source"] for r in rows}) == 40


def test_adversarial_flip_words_also_occur_in_hit_rows(rows: list[dict[str, Any]]) -> None:
    """Counterbalance: "disadvantages", "child", "one sentence", "JavaScript" ...
    also appear unchanged on both sides of some HIT row."""
    assert flip_words_missing_from_hits(rows) == {}


# --- bad fixtures give path:line errors ---------------------------------------------------

FIXTURE = """{"families": [
  {
    "key": "solar",
    "grounding": "Test traffic",
    "questions": {
      "pros": {
        "asks": "the advantages of solar power",
        "answer": "Solar panels make electricity without emissions and cut bills.",
        "criteria": [
          {"criterion": "says it is clean", "pattern": "emission"},
          {"criterion": "mentions lower bills", "pattern": "bills"},
          {"criterion": "mentions panels", "pattern": "PATTERN"}
        ],
        "forms": {"base": "What are the advantages of solar power?",
                  "casual": "what are the advantages of solar power"}
      },
      "cons": {
        "asks": "the disadvantages of solar power",
        "answer": "Output drops at night and the upfront cost is high.",
        "criteria": [
          {"criterion": "mentions night", "pattern": "night"},
          {"criterion": "mentions upfront cost", "pattern": "upfront"},
          {"criterion": "mentions output", "pattern": "output"}
        ],
        "forms": {"base": "What are the disadvantages of solar power?"}
      }
    },
    "pairs": [
      ["pros.casual", "pros.base", "EQUIV", "case_punctuation"],
      ["pros.base", "cons.base", "ADVERSARIAL", "polarity_flip"]
    ]
  }
]}
"""


def _write(tmp_path: Path, pattern: str = "panel") -> Path:
    path = tmp_path / DOMAIN / "solar.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(FIXTURE.replace("PATTERN", pattern), encoding="utf-8")
    return path


def test_a_small_valid_fixture_generates(tmp_path: Path) -> None:
    _write(tmp_path)
    got = generate_shard(DOMAIN, tmp_path / DOMAIN, check_matrix=False)
    assert sorted(r["binary_label"] for r in got) == ["HIT", "MISS"]
    miss = next(r for r in got if r["binary_label"] == MISS)
    # the pros paragraph fails all three disadvantage criteria, and says so
    assert "'mentions night', 'mentions upfront cost' and 'mentions output'" in miss["rationale"]


def test_answer_failing_its_own_criteria_is_rejected(tmp_path: Path) -> None:
    path = _write(tmp_path, pattern="photovoltaic")
    with pytest.raises(FixtureError, match="solar.pros: the answer fails its own criteria") as err:
        qa_open.generate(tmp_path / "qa_open")
    line = line_of(path, '"pros"')
    assert str(err.value).startswith(f"{path}:{line}:")


def test_pattern_that_does_not_compile_is_rejected(tmp_path: Path) -> None:
    path = _write(tmp_path, pattern="panel(")
    with pytest.raises(FixtureError, match="does not compile") as err:
        qa_open.generate(tmp_path / "qa_open")
    assert err.value.line == line_of(path, "mentions panels")


def test_wrong_number_of_criteria_is_rejected(tmp_path: Path) -> None:
    path = _write(tmp_path)
    text = path.read_text().replace(
        '{"criterion": "mentions output", "pattern": "output"}\n',
        '{"criterion": "mentions output", "pattern": "output"},\n'
        '          {"criterion": "mentions cost", "pattern": "cost"}\n',
    )
    path.write_text(text)
    with pytest.raises(FixtureError, match="exactly three items"):
        qa_open.generate(tmp_path / "qa_open")


def test_miss_pair_that_the_rubric_calls_a_hit_is_rejected(tmp_path: Path) -> None:
    # a cons paragraph that also meets every pros criterion makes the pair a HIT
    path = _write(tmp_path)
    path.write_text(
        path.read_text().replace(
            '"Output drops at night and the upfront cost is high."',
            '"Output drops at night, the upfront cost is high, and panels have no emission but '
            'only cut bills slowly."',
        )
    )
    text = path.read_text().replace(
        '["pros.base", "cons.base", "ADVERSARIAL", "polarity_flip"]',
        '["cons.base", "pros.base", "ADVERSARIAL", "polarity_flip"]',
    )
    path.write_text(text)
    with pytest.raises(FixtureError, match="checker says HIT") as err:
        qa_open.generate(tmp_path / "qa_open")
    assert err.value.line == line_of(path, "polarity_flip")
