"""The qa_factual shard: counts, verification, determinism, counterbalance, and
clear ``path:line`` errors for bad fixtures."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from cacheeval import cli
from cacheeval.dataset import row_problem
from cacheeval.generators import qa_factual
from cacheeval.generators.qa_factual import FixtureError, describe_edit, new_wording
from cacheeval.pipeline.domains import MATRIX
from cacheeval.pipeline.generate import generate_shard
from cacheeval.schema import HIT, LABELS, Row
from cacheeval.support.layout import REPO_ROOT
from cacheeval.verify import check_row
from cacheeval.verify.textnorm import normalize_answer
from tests.generators.shard_checks import flip_words_missing_from_hits, line_of

DOMAIN = "qa_factual"


@pytest.fixture(scope="module")
def rows() -> list[dict[str, Any]]:
    return generate_shard("qa_factual")


# --- the shard -------------------------------------------------------------------


def test_label_counts_match_matrix(rows: list[dict[str, Any]]) -> None:
    counts = Counter(r["label"] for r in rows)
    assert tuple(counts[label] for label in LABELS) == MATRIX[DOMAIN] == (50, 50, 50, 40, 40)
    assert len(rows) == 230


def test_subcategories_belong_to_their_label(rows: list[dict[str, Any]]) -> None:
    subs = Counter(r["subcategory"] for r in rows)
    assert len(subs) >= 8
    for r in rows:
        assert qa_factual.SUBCATEGORIES[r["subcategory"]][0] == r["label"], r["id"]
    # every label has more than one axis of variation
    for label in LABELS[:4]:
        assert len({r["subcategory"] for r in rows if r["label"] == label}) >= 3, label


def test_every_row_is_valid_and_verifies(rows: list[dict[str, Any]]) -> None:
    disagreements = []
    for r in rows:
        data = {**r, "split": "train"}
        assert row_problem(data) is None, r["id"]
        row = Row.from_dict(data)
        assert row.verification_method == "exact_match"
        payload = row.verification_payload or {}
        assert payload["kind"] == "alias_set"
        assert normalize_answer(r["expected_answer_a"]) in {
            normalize_answer(s) for s in payload["aliases_a"]
        }
        if check_row(row).binary != row.binary_label:
            disagreements.append(r["id"])
    assert disagreements == []


def test_hit_rows_share_their_alias_set(rows: list[dict[str, Any]]) -> None:
    for r in rows:
        p = r["verification_payload"]
        same = p["aliases_a"] == p["aliases_b"]
        assert same == (r["binary_label"] == HIT), r["id"]


def test_ids_are_sequential(rows: list[dict[str, Any]]) -> None:
    assert [r["id"] for r in rows] == [f"cb-{DOMAIN}-{i:04d}" for i in range(1, 231)]


def test_rationales_are_unique_sentence_by_sentence(rows: list[dict[str, Any]]) -> None:
    sentences = Counter(
        s for r in rows for s in re.split(r"(?<=[.!?])\s+(?=[A-Zq])", r["rationale"]) if s
    )
    assert [s for s, n in sentences.items() if n > 1] == []


def test_no_duplicate_pairs_and_no_identical_sides(rows: list[dict[str, Any]]) -> None:
    seen: set[frozenset[str]] = set()
    for r in rows:
        assert r["query_a"] != r["query_b"], r["id"]
        key = frozenset((r["query_a"], r["query_b"]))
        assert key not in seen, r["id"]
        seen.add(key)
        assert r["context_a"] is r["context_b"] is None
        assert r["tools_a"] is r["tools_b"] is None


def test_sources_name_an_authored_family(rows: list[dict[str, Any]]) -> None:
    families: dict[str, set[str]] = {}
    for r in rows:
        path, _, key = r["source"].partition("#")
        assert path.startswith(f"sources/{DOMAIN}/") and path.endswith(".json"), r["source"]
        if path not in families:
            data = json.loads((REPO_ROOT / path).read_text(encoding="utf-8"))
            families[path] = {f["key"] for f in data["families"]}
        assert key in families[path], r["source"]
    # families are the CV groups: 40 of them, each with HIT and MISS rows
    by_family = Counter((r["source"], r["binary_label"]) for r in rows)
    names = {r["source"] for r in rows}
    assert len(names) == 40
    assert all(by_family[(n, "HIT")] >= 2 and by_family[(n, "MISS")] >= 3 for n in names)


def test_construction_method_follows_label(rows: list[dict[str, Any]]) -> None:
    for r in rows:
        assert r["construction_method"] == qa_factual.CONSTRUCTION[r["label"]], r["id"]
    assert {r["construction_method"] for r in rows if r["label"] == "ADVERSARIAL"} == {
        "adversarial_perturbation"
    }


def test_grounding_is_varied(rows: list[dict[str, Any]]) -> None:
    assert len({r["real_world_grounding"] for r in rows}) >= 200


def test_adversarial_flip_words_also_occur_in_hit_rows(rows: list[dict[str, Any]]) -> None:
    """Counterbalance: a word that turns a pair into an ADVERSARIAL miss
    ("Austria", "second", "°F", "1950" ...) must also appear, unchanged on both
    sides, in some HIT row, so query_b alone does not give the label away."""
    assert flip_words_missing_from_hits(rows) == {}


# --- edit descriptions used in rationales ---------------------------------------------


def test_describe_edit() -> None:
    assert (
        describe_edit("What is the capital of Australia?", "What is the capital of Austria?")
        == "'Australia' becomes 'Austria'"
    )
    assert (
        describe_edit("Who wrote 1984?", "who wrote 1984")
        == "only letter case and punctuation differ"
    )
    assert describe_edit("abc", "ABC") == "only the letter case differs"
    assert (
        describe_edit("renting over buying a home", "buying over renting a home")
        == "the words 'renting' and 'buying' swap places"
    )
    assert describe_edit("largest ocean on earth", "What is the largest ocean on Earth?") == (
        "'What is the' is added"
    )


def test_new_wording() -> None:
    assert new_wording("Name the capital of Iran.", "Which city is Iran's capital?") == (
        "'city', 'Iran's'"
    )
    assert new_wording("Give me the answer.", "the answer") == "fewer words (no 'Give')"
    assert new_wording("Who wrote it?", "Who it wrote?") == "the same words in another order"


# --- bad fixtures give path:line errors ---------------------------------------------------

FIXTURE = """{"families": [
  {
    "key": "capitals",
    "grounding": "Test traffic",
    "questions": {
      "australia": {"asks": "the capital of Australia", "answer": "Canberra",
        "aliases": ["Canberra"],
        "forms": {"base": "What is the capital of Australia?",
                  "casual": "whats the capital of australia"}},
      "austria": {"asks": "the capital of Austria", "answer": "ANSWER", "aliases": ["ANSWER"],
        "forms": {"base": "What is the capital of Austria?"}}
    },
    "pairs": [
      ["australia.casual", "australia.base", "EQUIV", "case_punctuation"],
      PAIR
    ]
  }
]}
"""
GOOD_PAIR = '["australia.base", "austria.base", "ADVERSARIAL", "near_homonym"]'


def _write(tmp_path: Path, pair: str = GOOD_PAIR, answer: str = "Vienna") -> Path:
    path = tmp_path / DOMAIN / "capitals.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(FIXTURE.replace("PAIR", pair).replace("ANSWER", answer), encoding="utf-8")
    return path


def test_a_small_valid_fixture_generates(tmp_path: Path) -> None:
    _write(tmp_path)
    got = generate_shard(DOMAIN, tmp_path / DOMAIN, check_matrix=False)
    assert [(r["label"], r["expected_answer_b"]) for r in got] in (
        [("EQUIV", "Canberra"), ("ADVERSARIAL", "Vienna")],
        [("ADVERSARIAL", "Vienna"), ("EQUIV", "Canberra")],
    )
    assert {r["source"] for r in got} == {f"sources/{DOMAIN}/capitals.json#capitals"}


def test_invalid_json_names_the_line(tmp_path: Path) -> None:
    path = _write(tmp_path, pair=GOOD_PAIR + ",")  # trailing comma before "]"
    with pytest.raises(FixtureError) as err:
        qa_factual.generate(tmp_path / "qa_factual")
    assert str(err.value).startswith(f"{path}:{line_of(path, 'near_homonym') + 1}: not valid JSON")


def test_unknown_label_names_the_pair_line(tmp_path: Path) -> None:
    path = _write(tmp_path, pair='["australia.base", "austria.base", "SIMILAR", "near_homonym"]')
    with pytest.raises(FixtureError, match=r"unknown label 'SIMILAR'") as err:
        qa_factual.generate(tmp_path / "qa_factual")
    assert str(err.value).startswith(f"{path}:{line_of(path, 'SIMILAR')}:")


def test_hit_pair_across_two_questions_is_rejected(tmp_path: Path) -> None:
    path = _write(
        tmp_path, pair='["australia.base", "austria.base", "PARA_SAFE", "lexical_paraphrase"]'
    )
    with pytest.raises(FixtureError, match="joins two forms of ONE question") as err:
        qa_factual.generate(tmp_path / "qa_factual")
    assert err.value.line == line_of(path, "PARA_SAFE")


def test_subcategory_of_another_label_is_rejected(tmp_path: Path) -> None:
    _write(tmp_path, pair='["australia.base", "austria.base", "ADVERSARIAL", "typo"]')
    with pytest.raises(FixtureError, match="belongs to EQUIV, not ADVERSARIAL"):
        qa_factual.generate(tmp_path / "qa_factual")


def test_miss_pair_whose_answers_coincide_is_rejected(tmp_path: Path) -> None:
    path = _write(tmp_path, answer="Canberra")
    with pytest.raises(
        FixtureError, match="labelled ADVERSARIAL \\(MISS\\) but the checker says HIT"
    ):
        qa_factual.generate(tmp_path / "qa_factual")
    with pytest.raises(FixtureError) as err:
        qa_factual.generate(tmp_path / "qa_factual")
    assert err.value.line == line_of(path, "near_homonym")


def test_unused_form_is_rejected(tmp_path: Path) -> None:
    _write(tmp_path, pair='["australia.base", "austria.base", "ADVERSARIAL", "near_homonym"]')
    path = tmp_path / DOMAIN / "capitals.json"
    text = path.read_text().replace(
        '"forms": {"base": "What is the capital of Austria?"}',
        '"forms": {"base": "What is the capital of Austria?", "spare": "capital of austria"}',
    )
    path.write_text(text)
    with pytest.raises(FixtureError, match=r"form capitals\.austria\.spare is never used"):
        qa_factual.generate(tmp_path / "qa_factual")


def test_answer_outside_its_aliases_is_rejected(tmp_path: Path) -> None:
    path = _write(tmp_path)
    path.write_text(path.read_text().replace('"aliases": ["Vienna"]', '"aliases": ["Wien"]'))
    with pytest.raises(FixtureError, match="answer 'Vienna' is not among its aliases") as err:
        qa_factual.generate(tmp_path / "qa_factual")
    assert err.value.line == line_of(path, '"austria"')


def test_script_reports_fixture_errors_without_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(
        tmp_path, pair='["australia.base", "nowhere.base", "ADVERSARIAL", "near_homonym"]'
    )
    code = cli.main(
        ["generate", DOMAIN, "--sources-dir", str(tmp_path), "--out-dir", str(tmp_path / "x")]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert f"{path}:{line_of(path, 'nowhere')}: side b: no form capitals.nowhere.base" in err
    assert "Traceback" not in err
    assert not (tmp_path / "x").exists()
