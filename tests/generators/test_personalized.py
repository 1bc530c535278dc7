"""The personalized shard: counts, determinism, the cross-user / personalised
policies, user variety, uniqueness, and located fixture errors."""

from __future__ import annotations

import re
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from cacheeval.dataset import row_problem
from cacheeval.generators import personalized as gen
from cacheeval.generators.creative import FixtureError
from cacheeval.pipeline.domains import MATRIX
from cacheeval.pipeline.generate import generate_shard
from cacheeval.schema import LABELS, MISS, POLICY_NO_CACHE, Row
from cacheeval.support.layout import REPO_ROOT, SOURCES_DIR
from cacheeval.verify import check_row
from cacheeval.verify.textnorm import normalize_answer

DOMAIN = "personalized"


@pytest.fixture(scope="module")
def rows() -> list[dict[str, Any]]:
    return generate_shard("personalized")


@pytest.fixture(scope="module")
def families() -> list[gen.Family]:
    return gen.load_families(SOURCES_DIR / "personalized")


# --- shape ------------------------------------------------------------------------------------


def test_label_counts_match_matrix(rows: list[dict[str, Any]]) -> None:
    counts = Counter(r["label"] for r in rows)
    assert tuple(counts[label] for label in LABELS) == MATRIX[DOMAIN] == (30, 30, 30, 30, 20)
    assert {r["binary_label"] for r in rows} == {MISS}


def test_subcategories(rows: list[dict[str, Any]]) -> None:
    subs = Counter(r["subcategory"] for r in rows)
    assert len(subs) >= 8
    for axis in ("same_user_surface_variant", "same_user_paraphrase", "same_user_related_question"):
        assert subs[axis] == 30, axis
    # Permission and locale differences, not only different people.
    assert subs["permission_swap"] >= 1
    assert subs["currency_locale_swap"] + subs["unit_setting_swap"] + subs["timezone_swap"] >= 3


def test_ids_and_sources(rows: list[dict[str, Any]]) -> None:
    assert [r["id"] for r in rows] == [f"cb-{DOMAIN}-{i:04d}" for i in range(1, 141)]
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
        assert p["kind"] == "policy" and p["policy"] in ("cross_user", "personalized")
        check = check_row(Row.from_dict(data))
        if check.binary != r["binary_label"]:
            disagreements.append((r["id"], check.detail))
    assert disagreements == []


# --- the policy matches who is asking -------------------------------------------------------


def test_policy_names_same_or_different_user(
    rows: list[dict[str, Any]], families: list[gen.Family]
) -> None:
    # Every system prompt is one family template filled with one user's profile.
    owner = {gen.fill(f.system, u): u["name"] for f in families for u in f.users}
    for r in rows:
        who = [owner[r[f"system_prompt_{s}"]] for s in "ab"]
        want = "personalized" if who[0] == who[1] else "cross_user"
        assert r["verification_payload"]["policy"] == want, r["id"]
        assert all(name in r["verification_payload"]["reason"] for name in who), r["id"]


def test_same_user_rows_share_the_system_prompt(rows: list[dict[str, Any]]) -> None:
    for r in rows:
        if r["label"] in ("EQUIV", "PARA_SAFE", "RELATED_UNSAFE"):
            assert r["system_prompt_a"] == r["system_prompt_b"], r["id"]
            assert r["query_a"] != r["query_b"]
            assert "cache" in r["rationale"], r["id"]


def test_adversarial_rows_ask_the_identical_question_under_two_profiles(
    rows: list[dict[str, Any]],
) -> None:
    adv = [r for r in rows if r["label"] == "ADVERSARIAL"]
    assert len(adv) == 30
    for r in adv:
        assert r["query_a"] == r["query_b"], r["id"]
        assert r["system_prompt_a"] != r["system_prompt_b"]
        assert r["expected_answer_a"] != r["expected_answer_b"]
        assert "byte-identical" in r["rationale"]


def test_many_distinct_fictional_users(families: list[gen.Family]) -> None:
    names = Counter(u["name"] for f in families for u in f.users)
    assert len(names) >= 40
    # A name appears twice only as the same person under two settings.
    same_person = sum(1 for f in families if f.users[0]["name"] == f.users[1]["name"])
    assert sum(n - 1 for n in names.values()) == same_person


def test_answers_quote_the_profile(rows: list[dict[str, Any]]) -> None:
    for r in rows:
        for side in "ab":
            assert r[f"expected_answer_{side}"].strip(), r["id"]
            assert "{" not in r[f"system_prompt_{side}"] + r[f"expected_answer_{side}"], r["id"]


# --- uniqueness -------------------------------------------------------------------------------


def test_rationales_unique(rows: list[dict[str, Any]]) -> None:
    assert len({normalize_answer(r["rationale"]) for r in rows}) == len(rows)


# --- fixture errors ---------------------------------------------------------------------------


@pytest.fixture()
def sources(tmp_path: Path) -> Path:
    shutil.copytree(SOURCES_DIR / DOMAIN, tmp_path / DOMAIN)
    return tmp_path


def test_invalid_json_is_located(sources: Path) -> None:
    path = sorted((sources / DOMAIN).glob("*.json"))[0]
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace('"topic":', '"topic"', 1), encoding="utf-8")
    with pytest.raises(
        FixtureError, match=rf"{re.escape(str(path))}:\d+: not valid JSON \(.* at column \d+\)"
    ):
        gen.generate(sources / "personalized")


def test_missing_template_slot_is_located(sources: Path) -> None:
    path = sorted((sources / DOMAIN).glob("*.json"))[0]
    text = path.read_text(encoding="utf-8")
    m = re.search(r'"key": "([a-z0-9_]+)"', text)
    assert m is not None
    key = m.group(1)
    start = text.index('"system": "', m.start()) + len('"system": "')
    path.write_text(text[:start] + "{no_such_slot} " + text[start:], encoding="utf-8")
    line = next(n for n, s in enumerate(text.splitlines(), 1) if f'"key": "{key}"' in s)
    with pytest.raises(FixtureError, match=rf":{line}: item '{key}': .*\{{no_such_slot\}}"):
        gen.generate(sources / "personalized")
