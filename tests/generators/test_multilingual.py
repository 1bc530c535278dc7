"""The multilingual shard: counts, verification, determinism, language coverage
and counterbalance, and clear errors for bad fixtures."""

from __future__ import annotations

import json
import re
import unicodedata
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

from cacheeval.dataset import row_problem
from cacheeval.generators import multilingual
from cacheeval.pipeline.domains import MATRIX
from cacheeval.pipeline.generate import generate_shard
from cacheeval.schema import ADVERSARIAL, HIT, LABELS, MISS, Row
from cacheeval.verify import check_row
from cacheeval.verify.textnorm import normalize_answer
from tests.generators.shard_checks import line_of

DOMAIN = "multilingual"


@pytest.fixture(scope="module")
def rows() -> list[dict[str, Any]]:
    return generate_shard("multilingual")


def _langs(r: dict[str, Any]) -> tuple[str, str]:
    p = r["verification_payload"]
    return p["lang_a"], p["lang_b"]


def test_label_counts_match_matrix(rows: list[dict[str, Any]]) -> None:
    counts = Counter(r["label"] for r in rows)
    assert tuple(counts[label] for label in LABELS) == MATRIX[DOMAIN]
    assert len(rows) == 150


def test_subcategories(rows: list[dict[str, Any]]) -> None:
    subs = Counter(r["subcategory"] for r in rows)
    assert len(subs) >= 8
    for r in rows:
        assert multilingual.SUBCATEGORIES[r["subcategory"]][0] == r["label"]


def test_every_row_is_valid_and_verifies(rows: list[dict[str, Any]]) -> None:
    disagreements = []
    for r in rows:
        data = {**r, "split": "train"}
        assert row_problem(data) is None, r["id"]
        row = Row.from_dict(data)
        assert row.verification_method == "exact_match"
        assert (row.verification_payload or {})["kind"] == "alias_set"
        if check_row(row).binary != row.binary_label:
            disagreements.append(r["id"])
    assert disagreements == []


def test_hit_rows_share_language_and_answer(rows: list[dict[str, Any]]) -> None:
    for r in rows:
        lang_a, lang_b = _langs(r)
        aliases_b = {normalize_answer(a) for a in r["verification_payload"]["aliases_b"]}
        if r["binary_label"] == HIT:
            assert lang_a == lang_b, r["id"]
            assert normalize_answer(r["expected_answer_a"]) in aliases_b, r["id"]
        elif lang_a == lang_b:
            # A same-language MISS must differ in its answer, not only its language.
            assert normalize_answer(r["expected_answer_a"]) not in aliases_b, r["id"]


def test_ids_sources_uniqueness(rows: list[dict[str, Any]]) -> None:
    assert [r["id"] for r in rows] == [f"cb-{DOMAIN}-{i:04d}" for i in range(1, 151)]
    for r in rows:
        assert re.fullmatch(r"sources/multilingual/[a-z_]+\.json#[a-z_]+", r["source"])
    assert len({r["source"] for r in rows}) >= 10
    pairs = [tuple(sorted((r["query_a"], r["query_b"]))) for r in rows]
    assert len(set(pairs)) == len(pairs)
    assert all(r["query_a"] != r["query_b"] for r in rows)
    rationales = [r["rationale"] for r in rows]
    assert len(set(rationales)) == len(rationales)


def _non_latin(text: str) -> bool:
    return any(
        unicodedata.name(ch, "").startswith(("CJK", "HIRAGANA", "KATAKANA", "CYRILLIC"))
        for ch in text
    )


def test_language_coverage(rows: list[dict[str, Any]]) -> None:
    langs = {lang for r in rows for lang in _langs(r)}
    assert {"es", "fr", "de", "pt", "it"} <= langs
    assert len(langs - {"en"}) >= 6
    assert langs & {"ja", "ru", "zh"}
    assert any(_non_latin(r["query_a"]) for r in rows)
    cross = [r for r in rows if r["subcategory"] == "cross_language_same_question"]
    assert any("en" in _langs(r) for r in cross)
    assert any("en" not in _langs(r) for r in cross)
    assert all(r["label"] == ADVERSARIAL and _langs(r)[0] != _langs(r)[1] for r in cross)


def test_every_language_is_counterbalanced(rows: list[dict[str, Any]]) -> None:
    """Each language shows up as query_b in HIT and in MISS rows, in a share not
    far from the overall HIT rate, so the language alone does not give the label away."""
    by_lang: dict[str, Counter[str]] = defaultdict(Counter)
    for r in rows:
        by_lang[_langs(r)[1]][r["binary_label"]] += 1
    overall = sum(r["binary_label"] == HIT for r in rows) / len(rows)
    for lang, c in by_lang.items():
        assert c[HIT] >= 3 and c[MISS] >= 3, lang
        assert abs(c[HIT] / (c[HIT] + c[MISS]) - overall) < 0.12, (lang, dict(c))


def test_code_switching_appears_in_hit_and_miss_rows(rows: list[dict[str, Any]]) -> None:
    switched = re.compile(r"please|por favor|per favore", re.IGNORECASE)
    labels = {r["binary_label"] for r in rows if switched.search(r["query_a"] + r["query_b"])}
    assert labels == {HIT, MISS}


def test_swapped_entities_and_numbers_also_appear_in_hit_rows(rows: list[dict[str, Any]]) -> None:
    """A token that an ADVERSARIAL edit swaps in or out also sits, unchanged on
    both sides, in some HIT row."""
    cues = ("300", "4 stunden", "austria", "piccolo", "fahrenheit", "银", "insecto", "construit")
    for cue in cues:
        in_hit = [
            r
            for r in rows
            if r["binary_label"] == HIT
            and cue in r["query_a"].casefold()
            and cue in r["query_b"].casefold()
        ]
        in_adv = [
            r
            for r in rows
            if r["label"] == ADVERSARIAL
            and (cue in r["query_a"].casefold()) != (cue in r["query_b"].casefold())
        ]
        assert in_hit and in_adv, cue


def test_style_of_query_b_is_balanced(rows: list[dict[str, Any]]) -> None:
    def lower_share(label: str) -> float:
        bs = [r["query_b"] for r in rows if r["binary_label"] == label]
        return sum(b[:1].islower() for b in bs) / len(bs)

    assert abs(lower_share(HIT) - lower_share(MISS)) < 0.1


# --- bad fixtures -------------------------------------------------------------------


def _family() -> dict[str, Any]:
    return {
        "grounding": "Test traffic",
        "questions": {
            "cap": {
                "gist": "the capital of Peru",
                "langs": {
                    "en": {
                        "answers": ["The capital of Peru is Lima."],
                        "phrasings": {
                            "base": "What is the capital of Peru?",
                            "surf": ["what's the capital of peru", "is lower case"],
                        },
                    },
                    "es": {
                        "answers": ["La capital de Perú es Lima."],
                        "phrasings": {
                            "base": "¿Cuál es la capital de Perú?",
                            "surf": ["cual es la capital de peru", "drops accents and marks"],
                        },
                    },
                },
            }
        },
        "rows": [
            ["EQUIV", "accent_punctuation_variant", "cap.es.base", "cap.es.surf"],
            ["ADVERSARIAL", "cross_language_same_question", "cap.en.base", "cap.es.base"],
        ],
    }


def _write(tmp_path: Path, family: dict[str, Any]) -> Path:
    d = tmp_path / DOMAIN
    d.mkdir(parents=True, exist_ok=True)
    (d / "bad.json").write_text(
        json.dumps({"families": {"peru": family}}, indent=2, ensure_ascii=False), encoding="utf-8"
    )
    return tmp_path


def test_unknown_language_code_is_reported_with_line(tmp_path: Path) -> None:
    fam = _family()
    fam["questions"]["cap"]["langs"]["xx"] = fam["questions"]["cap"]["langs"].pop("es")
    src = _write(tmp_path, fam)
    line = line_of(src / DOMAIN / "bad.json", '"xx"')
    with pytest.raises(
        multilingual.FixtureError, match=rf"bad\.json:{line}: unknown language code 'xx'"
    ):
        multilingual.generate(src / "multilingual")


def test_subcategory_must_fit_the_languages(tmp_path: Path) -> None:
    fam = _family()
    fam["rows"][1][1] = "entity_swap"
    src = _write(tmp_path, fam)
    line = line_of(src / DOMAIN / "bad.json", '"ADVERSARIAL"')
    with pytest.raises(
        multilingual.FixtureError, match=rf"bad\.json:{line}: entity_swap needs two"
    ):
        multilingual.generate(src / "multilingual")


def test_hit_row_across_languages_is_refused(tmp_path: Path) -> None:
    fam = _family()
    fam["rows"][1] = ["EQUIV", "case_punctuation_variant", "cap.en.surf", "cap.es.surf"]
    src = _write(tmp_path, fam)
    with pytest.raises(multilingual.FixtureError, match=r"needs one answer language"):
        multilingual.generate(src / "multilingual")


def test_miss_label_the_checker_contradicts_is_refused(tmp_path: Path) -> None:
    fam = _family()
    # Two "different" questions whose accepted answers coincide: the checker says HIT.
    fam["questions"]["seat"] = {
        "gist": "the seat of government of Peru",
        "langs": {
            "es": {
                "answers": ["La capital de Perú es Lima."],
                "phrasings": {"base": "¿Dónde está la sede del gobierno de Perú?"},
            }
        },
    }
    fam["rows"][1] = ["ADVERSARIAL", "entity_swap", "cap.es.base", "seat.es.base"]
    src = _write(tmp_path, fam)
    line = line_of(src / DOMAIN / "bad.json", '"ADVERSARIAL"')
    with pytest.raises(multilingual.FixtureError, match=rf"bad\.json:{line}: .*checker says HIT"):
        multilingual.generate(src / "multilingual")


def test_a_row_with_two_plain_english_sides_is_refused(tmp_path: Path) -> None:
    fam = _family()
    fam["rows"][0] = ["EQUIV", "case_punctuation_variant", "cap.en.base", "cap.en.surf"]
    src = _write(tmp_path, fam)
    line = line_of(src / DOMAIN / "bad.json", '"EQUIV"')
    with pytest.raises(
        multilingual.FixtureError, match=rf"bad\.json:{line}: both sides are plain English"
    ):
        multilingual.generate(src / "multilingual")


def test_valid_fixture_with_wrong_counts_is_refused(tmp_path: Path) -> None:
    src = _write(tmp_path, _family())
    with pytest.raises(multilingual.FixtureError, match=r"label counts .* differ from MATRIX"):
        generate_shard("multilingual", src / "multilingual")
