"""The multi_turn shard: counts, determinism, verification, uniqueness,
conversation shape, counterbalance, and located fixture errors."""

from __future__ import annotations

import re
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from cacheeval import cli
from cacheeval.benches.audit import audit_domain
from cacheeval.dataset import row_problem
from cacheeval.generators import multi_turn as gen
from cacheeval.generators.creative import FixtureError
from cacheeval.pipeline.domains import MATRIX
from cacheeval.pipeline.generate import generate_shard
from cacheeval.schema import HIT, LABELS, MISS, Row
from cacheeval.support.layout import REPO_ROOT, SOURCES_DIR
from cacheeval.verify import check_row
from cacheeval.verify.textnorm import normalize_answer
from tests.generators.shard_checks import line_of

DOMAIN = "multi_turn"


@pytest.fixture(scope="module")
def rows() -> list[dict[str, Any]]:
    return generate_shard("multi_turn")


# --- shape ----------------------------------------------------------------------------------


def test_label_counts_match_matrix(rows: list[dict[str, Any]]) -> None:
    counts = Counter(r["label"] for r in rows)
    assert tuple(counts[label] for label in LABELS) == MATRIX[DOMAIN] == (30, 30, 50, 40, 30)
    assert Counter(r["binary_label"] for r in rows) == {HIT: 60, MISS: 120}


def test_subcategories(rows: list[dict[str, Any]]) -> None:
    subs = Counter(r["subcategory"] for r in rows)
    assert len(subs) >= 8
    assert subs["small_talk_history"] == 15
    assert subs["final_paraphrase"] == 15
    assert subs["followup_question_change"] == 20
    assert subs["different_conversation"] == 30
    by_label: dict[str, set[str]] = {}
    for r in rows:
        by_label.setdefault(r["label"], set()).add(r["subcategory"])
    # Subcategories never straddle labels, and each label has at least two.
    for a in LABELS:
        assert len(by_label[a]) >= (1 if a == "UNRELATED" else 2), a
        for b in LABELS:
            assert a == b or not by_label[a] & by_label[b]


def test_ids_sequential_and_families(rows: list[dict[str, Any]]) -> None:
    assert [r["id"] for r in rows] == [f"cb-{DOMAIN}-{i:04d}" for i in range(1, 181)]
    families = Counter(r["source"] for r in rows)
    assert len(families) == 30 and set(families.values()) == {6}
    for src in families:
        path, _, item = src.partition("#")
        assert path.startswith(f"sources/{DOMAIN}/") and item
        assert (REPO_ROOT / path).is_file()


def test_every_row_is_valid_and_verifies(rows: list[dict[str, Any]]) -> None:
    disagreements = []
    for r in rows:
        data = {**r, "split": "train"}
        assert row_problem(data, require_labels=True) is None, r["id"]
        check = check_row(Row.from_dict(data))
        if check.binary != r["binary_label"]:
            disagreements.append((r["id"], check.detail))
    assert disagreements == []


def test_methods_and_construction(rows: list[dict[str, Any]]) -> None:
    for r in rows:
        same = normalize_answer(r["query_a"]) == normalize_answer(r["query_b"])
        assert r["verification_method"] == ("exact_match" if same else "rubric"), r["id"]
        assert r["verification_payload"]["kind"] == "multi_turn"
    construction = {(r["label"], r["subcategory"], r["construction_method"]) for r in rows}
    for label, sub, method in construction:
        if label == "ADVERSARIAL":
            assert method == "adversarial_perturbation"
        elif label == "EQUIV" or sub == "final_paraphrase":
            assert method == "paraphrase_rewrite"
        else:
            assert method == "template", (label, sub)


# --- uniqueness ------------------------------------------------------------------------------


def test_rationales_unique_down_to_sentences(rows: list[dict[str, Any]]) -> None:
    assert len({normalize_answer(r["rationale"]) for r in rows}) == len(rows)
    sentences = Counter(
        s for r in rows for s in re.split(r"(?<=[.!?])\s+(?=[A-Z])", r["rationale"])
    )
    assert [s for s, n in sentences.items() if n > 1] == []


# --- content ---------------------------------------------------------------------------------


def test_conversations_are_well_formed(rows: list[dict[str, Any]]) -> None:
    for r in rows:
        for side in "ab":
            ctx = r[f"context_{side}"]
            assert 2 <= len(ctx) <= 6, r["id"]
            assert [t["role"] for t in ctx] == ["user", "assistant"] * (len(ctx) // 2), r["id"]
            assert all(set(t) == {"role", "content"} and t["content"].strip() for t in ctx)
            assert r[f"system_prompt_{side}"] is None and r[f"tools_{side}"] is None
            assert "{{" not in r[f"query_{side}"] and all("{{" not in t["content"] for t in ctx)


def test_adversarial_rows_repeat_the_final_after_a_different_history(
    rows: list[dict[str, Any]],
) -> None:
    adv = [r for r in rows if r["label"] == "ADVERSARIAL"]
    for r in adv:
        p = r["verification_payload"]
        assert r["query_a"] == r["query_b"], r["id"]
        assert r["context_a"] != r["context_b"]
        assert p["referents_a"] != p["referents_b"]
        assert p["constraints_a"] == p["constraints_b"]
        assert r["expected_answer_a"] != r["expected_answer_b"]


def test_small_talk_rows_differ_only_by_declared_turns(rows: list[dict[str, Any]]) -> None:
    chatty = [r for r in rows if r["subcategory"] == "small_talk_history"]
    assert len(chatty) == 15
    for r in chatty:
        p = r["verification_payload"]
        small = p["small_talk_a"] or p["small_talk_b"]
        longer, shorter = (
            (r["context_a"], r["context_b"])
            if p["small_talk_a"]
            else (r["context_b"], r["context_a"])
        )
        assert len(small) == 2 and len(longer) == len(shorter) + 2
        assert [t for i, t in enumerate(longer) if i not in small] == shorter
        assert r["query_a"] == r["query_b"]
        assert r["expected_answer_a"] == r["expected_answer_b"]


def test_hit_rows_share_history_referent_and_answer(rows: list[dict[str, Any]]) -> None:
    for r in rows:
        if r["binary_label"] != HIT:
            continue
        p = r["verification_payload"]
        assert p["referents_a"] == p["referents_b"]
        assert p["final"]["intent_a"] == p["final"]["intent_b"]
        assert r["expected_answer_a"] == r["expected_answer_b"]


def test_expected_answers_name_their_referent(rows: list[dict[str, Any]]) -> None:
    for r in rows:
        p = r["verification_payload"]
        for side in "ab":
            for ref in p[f"referents_{side}"]:
                assert ref.casefold() in r[f"expected_answer_{side}"].casefold(), r["id"]


def test_topics_are_varied() -> None:
    families = gen.load_families(SOURCES_DIR / "multi_turn")
    assert len({f.topic for f in families}) == 30
    assert Counter(len(f.values) for f in families) == {2: 20, 3: 10}
    assert Counter(f.para for f in families) == {"final": 15, "small_talk": 15}
    files = Counter(f.path.name for f in families)
    assert len(files) >= 4 and max(files.values()) <= 8


# --- counterbalance ---------------------------------------------------------------------------


def test_hit_finals_also_end_miss_rows(rows: list[dict[str, Any]]) -> None:
    """Every final message that ends a HIT row also ends some MISS row, so the
    final message alone never gives the label away."""
    hit = {r[f"query_{s}"] for r in rows if r["binary_label"] == HIT for s in "ab"}
    miss = {r[f"query_{s}"] for r in rows if r["binary_label"] == MISS for s in "ab"}
    assert hit - miss == set()


def test_side_coin_is_balanced(rows: list[dict[str, Any]]) -> None:
    families = gen.load_families(SOURCES_DIR / "multi_turn")
    base = {f.final.text for f in families}
    for label in ("EQUIV", "PARA_SAFE"):
        sides = Counter(
            "a" if r["query_a"] in base else "b"
            for r in rows
            if r["label"] == label and r["query_a"] != r["query_b"]
        )
        assert min(sides.values()) >= 5, (label, sides)


def test_one_side_audit_finds_no_leak(rows: list[dict[str, Any]]) -> None:
    result = audit_domain(DOMAIN, rows)
    assert result.majority == pytest.approx(120 / 180)
    assert result.gap_b is not None and result.gap_b <= 0.10
    assert result.gap_a is not None and result.gap_a <= 0.10


# --- fixture errors ---------------------------------------------------------------------------


@pytest.fixture()
def sources(tmp_path: Path) -> Path:
    shutil.copytree(SOURCES_DIR / DOMAIN, tmp_path / DOMAIN)
    return tmp_path


def _edit(sources: Path, name: str, old: str, new: str) -> Path:
    path = sources / DOMAIN / name
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1
    path.write_text(text.replace(old, new), encoding="utf-8")
    return path


def test_invalid_json_names_file_line_and_column(sources: Path) -> None:
    path = _edit(sources, "coding.json", '"key": "git_undo",', '"key": "git_undo",,')
    with pytest.raises(
        FixtureError, match=rf"{re.escape(str(path))}:\d+: not valid JSON \(.* at column \d+\)"
    ):
        gen.generate(sources / "multi_turn")


def test_answer_without_its_referent_is_located(sources: Path) -> None:
    path = _edit(
        sources,
        "tech_health.json",
        '"answer": "In Safari open Settings',
        '"answer": "In the browser open Settings',
    )
    line = line_of(path, '"key": "clear_cache"')
    with pytest.raises(FixtureError, match=rf":{line}: item 'clear_cache': answer .* 'Safari'"):
        gen.generate(sources / "multi_turn")


def test_unknown_slot_and_self_partner_are_located(sources: Path) -> None:
    _edit(sources, "coding.json", "onto main instead", "onto {{branch}} instead")
    with pytest.raises(FixtureError, match=r"item 'git_undo': template slot \{\{branch\}\}"):
        gen.generate(sources / "multi_turn")
    shutil.rmtree(sources / DOMAIN)
    shutil.copytree(SOURCES_DIR / DOMAIN, sources / DOMAIN)
    _edit(
        sources,
        "coding.json",
        '"unrelated_with": "tipping_country"',
        '"unrelated_with": "sort_rows"',
    )
    with pytest.raises(FixtureError, match=r"item 'sort_rows': unrelated_with names 'sort_rows'"):
        gen.generate(sources / "multi_turn")


def test_partners_pair_up() -> None:
    """UNRELATED partners name each other, so linked families form pairs (the
    split packer keeps a linked pair in one split) and still give distinct rows."""
    families = {f.key: f for f in gen.load_families(SOURCES_DIR / "multi_turn")}
    for key, fam in families.items():
        assert families[fam.unrelated_with].unrelated_with == key


def test_constraint_already_in_the_plain_history_is_rejected(sources: Path) -> None:
    _edit(sources, "study_money.json", "I jog a bit,", "I jog twice a week,")
    with pytest.raises(FixtureError, match=r"plain history already says 'twice a week'"):
        gen.generate(sources / "multi_turn")


def test_generator_script_reports_errors_without_traceback(
    sources: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _edit(
        sources,
        "cooking_home.json",
        '"para": "final",\n      "unrelated_with": "shoe_size"',
        '"para": "both",\n      "unrelated_with": "shoe_size"',
    )
    out = tmp_path / "out"
    code = cli.main(["generate", DOMAIN, "--sources-dir", str(sources), "--out-dir", str(out)])
    assert code == 2
    err = capsys.readouterr().err
    assert "cooking_home.json:" in err and "item 'bake_time'" in err and "para" in err
    assert "Traceback" not in err
    assert not out.exists()
