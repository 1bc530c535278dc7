"""The creative shard: counts, determinism, the never-cache policy, uniqueness,
side balance, and located fixture errors."""

from __future__ import annotations

import re
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from cacheeval.dataset import row_problem
from cacheeval.generators import creative as gen
from cacheeval.pipeline.domains import MATRIX
from cacheeval.pipeline.generate import generate_shard
from cacheeval.schema import LABELS, MISS, POLICY_NO_CACHE, Row
from cacheeval.support.layout import REPO_ROOT, SOURCES_DIR
from cacheeval.verify import check_row
from cacheeval.verify.textnorm import normalize_answer

DOMAIN = "creative"


@pytest.fixture(scope="module")
def rows() -> list[dict[str, Any]]:
    return generate_shard("creative")


# --- shape ------------------------------------------------------------------------------------


def test_label_counts_match_matrix(rows: list[dict[str, Any]]) -> None:
    counts = Counter(r["label"] for r in rows)
    assert tuple(counts[label] for label in LABELS) == MATRIX[DOMAIN] == (40, 40, 40, 30, 30)
    assert {r["binary_label"] for r in rows} == {MISS}


def test_subcategories(rows: list[dict[str, Any]]) -> None:
    subs = Counter(r["subcategory"] for r in rows)
    assert len(subs) >= 8
    # The minimal edits the brief names are all there.
    for axis in ("form_change", "tone_flip", "subject_swap", "number_notation"):
        assert subs[axis] >= 2, axis
    assert subs["different_request"] == 30


def test_ids_and_sources(rows: list[dict[str, Any]]) -> None:
    assert [r["id"] for r in rows] == [f"cb-{DOMAIN}-{i:04d}" for i in range(1, 181)]
    for r in rows:
        path, _, item = r["source"].partition("#")
        assert path.startswith(f"sources/{DOMAIN}/") and item
        assert (REPO_ROOT / path).is_file()


def test_every_row_is_valid_and_verifies_as_policy_miss(rows: list[dict[str, Any]]) -> None:
    disagreements = []
    for r in rows:
        data = {**r, "split": "train"}
        assert row_problem(data, require_labels=True) is None, r["id"]
        assert r["verification_method"] == POLICY_NO_CACHE
        p = r["verification_payload"]
        assert p["kind"] == "policy" and p["policy"] == "creative" and p["reason"].strip()
        check = check_row(Row.from_dict(data))
        if check.binary != r["binary_label"]:
            disagreements.append((r["id"], check.detail))
    assert disagreements == []


def test_every_side_has_an_example_output(rows: list[dict[str, Any]]) -> None:
    for r in rows:
        for side in "ab":
            assert r[f"expected_answer_{side}"].strip(), r["id"]
        assert r["context_a"] is r["context_b"] is None
        assert r["system_prompt_a"] is r["system_prompt_b"] is None
    # A HIT-relation row still gets two different fresh examples.
    for r in rows:
        if r["label"] in ("EQUIV", "PARA_SAFE"):
            assert r["expected_answer_a"] != r["expected_answer_b"], r["id"]


def test_forms_cover_the_brief() -> None:
    forms = " ".join(f.form.casefold() for f in gen.load_families(SOURCES_DIR / "creative"))
    for kind in ("haiku", "poem", "story", "slogan", "joke", "names", "toast"):
        assert kind in forms, kind


# --- uniqueness -------------------------------------------------------------------------------


def test_rationales_unique(rows: list[dict[str, Any]]) -> None:
    assert len({normalize_answer(r["rationale"]) for r in rows}) == len(rows)
    # Each rationale names the relation and the policy.
    for r in rows:
        assert "creative policy" in r["rationale"], r["id"]


def test_base_request_sits_on_both_sides(rows: list[dict[str, Any]]) -> None:
    """The seeded coin puts the family's plain request on side a about half the
    time, so query_b alone does not tell variant rows from base rows."""
    requests = {f.request for f in gen.load_families(SOURCES_DIR / "creative")}
    for label in ("EQUIV", "PARA_SAFE", "RELATED_UNSAFE", "ADVERSARIAL"):
        sides = Counter(
            "a" if r["query_a"] in requests else "b" for r in rows if r["label"] == label
        )
        assert min(sides["a"], sides["b"]) >= 0.25 * sum(sides.values()), (label, sides)


# --- fixture errors ---------------------------------------------------------------------------


@pytest.fixture()
def sources(tmp_path: Path) -> Path:
    shutil.copytree(SOURCES_DIR / DOMAIN, tmp_path / DOMAIN)
    return tmp_path


def test_fixture_errors_are_located(sources: Path) -> None:
    path = sorted((sources / DOMAIN).glob("*.json"))[0]
    text = path.read_text(encoding="utf-8")
    key = re.search(r'"key": "([a-z0-9_]+)"', text)
    assert key is not None
    broken = text.replace(f'"key": "{key.group(1)}",', f'"key": "{key.group(1)}",,', 1)
    path.write_text(broken, encoding="utf-8")
    with pytest.raises(
        gen.FixtureError, match=rf"{re.escape(str(path))}:\d+: not valid JSON \(.* at column \d+\)"
    ):
        gen.generate(sources / "creative")
    path.write_text(text.replace('"unrelated_with": [', '"unrelated_with": ["no_such_family", ', 1))
    with pytest.raises(
        gen.FixtureError, match=r"\.json:\d+: item .*unknown family 'no_such_family'"
    ):
        gen.generate(sources / "creative")


def test_indefinite_articles_agree_with_the_form(rows: list[dict[str, Any]]) -> None:
    # "a acrostic poem" crept in from a template; vowel-initial forms take "an".
    bad = re.compile(r"\ba (?!one|uni|use)[aeiouAEIOU]")
    for r in rows:
        for text in (r["rationale"], r["verification_payload"]["reason"]):
            assert not bad.search(text), (r["id"], text)
    assert any("an acrostic poem" in r["rationale"] for r in rows)
