"""The conversational shard: counts, verification, determinism, counterbalance,
and clear errors for bad fixtures."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from cacheeval.dataset import row_problem
from cacheeval.generators import conversational
from cacheeval.pipeline.domains import MATRIX
from cacheeval.pipeline.generate import generate_shard
from cacheeval.schema import HIT, LABELS, MISS, Row
from cacheeval.support.layout import REPO_ROOT
from cacheeval.verify import check_row
from tests.generators.shard_checks import line_of

DOMAIN = "conversational"


@pytest.fixture(scope="module")
def rows() -> list[dict[str, Any]]:
    return generate_shard("conversational")


def _pair_key(r: dict[str, Any]) -> tuple[str, ...]:
    side = [
        json.dumps([r[f"{k}_{s}"] for k in ("query", "context", "system_prompt", "tools")])
        for s in "ab"
    ]
    return tuple(sorted(side))


def test_label_counts_match_matrix(rows: list[dict[str, Any]]) -> None:
    counts = Counter(r["label"] for r in rows)
    assert tuple(counts[label] for label in LABELS) == MATRIX[DOMAIN]
    assert len(rows) == sum(MATRIX[DOMAIN]) == 260


def test_at_least_eight_subcategories_each_named_for_its_label(rows: list[dict[str, Any]]) -> None:
    subs = {r["subcategory"] for r in rows}
    assert len(subs) >= 8
    for r in rows:
        assert conversational.SUBCATEGORIES[r["subcategory"]][0] == r["label"]


def test_every_row_is_valid_and_verifies(rows: list[dict[str, Any]]) -> None:
    disagreements = []
    for r in rows:
        data = {**r, "split": "train"}
        assert row_problem(data) is None, r["id"]
        row = Row.from_dict(data)
        assert row.verification_method == "rubric"
        payload = row.verification_payload or {}
        assert payload["kind"] == "rubric"
        assert len(payload["criteria_a"]) == len(payload["criteria_b"]) == 3
        if check_row(row).binary != row.binary_label:
            disagreements.append(r["id"])
    assert disagreements == []


def test_ids_sources_and_methods(rows: list[dict[str, Any]]) -> None:
    assert [r["id"] for r in rows] == [f"cb-{DOMAIN}-{i:04d}" for i in range(1, len(rows) + 1)]
    for r in rows:
        assert re.fullmatch(r"sources/conversational/[a-z_]+\.json#[a-z_]+", r["source"]), r[
            "source"
        ]
        assert r["domain"] == DOMAIN
        assert r["construction_method"] in {
            "curated",
            "template",
            "adversarial_perturbation",
            "paraphrase_rewrite",
        }
    # Rows of one family share their source; there are enough families to group-CV.
    assert len({r["source"] for r in rows}) >= 20


def test_no_duplicate_pairs_identical_sides_or_repeated_rationales(
    rows: list[dict[str, Any]],
) -> None:
    keys = [_pair_key(r) for r in rows]
    assert len(set(keys)) == len(keys)
    assert all(k[0] != k[1] for k in keys)
    assert all(r["query_a"] != r["query_b"] for r in rows)
    rationales = [r["rationale"] for r in rows]
    assert len(set(rationales)) == len(rationales)
    sentences = [s for t in rationales for s in re.split(r"(?<=[.!?])\s+(?=[A-Z])", t)]
    assert len(set(sentences)) == len(sentences)


def test_label_flipping_words_also_appear_in_hit_rows(rows: list[dict[str, Any]]) -> None:
    """Counterbalance: each cue that flips a MISS row also sits, unchanged on both
    sides, in HIT rows, so query_b alone cannot give the label away."""
    for cue in ("vegetarian", "not", "$50", "formal", "vegan", "don't", "dumbbells", "July"):
        pattern = re.compile(rf"(?<![\w$]){re.escape(cue)}(?![\w])", re.IGNORECASE)
        hit_both = [
            r
            for r in rows
            if r["binary_label"] == HIT
            and pattern.search(r["query_a"])
            and pattern.search(r["query_b"])
        ]
        miss_b = [r for r in rows if r["binary_label"] == MISS and pattern.search(r["query_b"])]
        assert hit_both, f"{cue!r} never appears on both sides of a HIT row"
        assert miss_b, f"{cue!r} never appears in query_b of a MISS row"


def test_query_b_style_does_not_reveal_the_label(rows: list[dict[str, Any]]) -> None:
    def stats(label: str) -> tuple[float, float, float]:
        bs = [r["query_b"] for r in rows if r["binary_label"] == label]
        lower = sum(b[:1].islower() for b in bs) / len(bs)
        question = sum(b.endswith("?") for b in bs) / len(bs)
        length = sum(len(b) for b in bs) / len(bs)
        return lower, question, length

    hit, miss = stats(HIT), stats(MISS)
    assert abs(hit[0] - miss[0]) < 0.1
    assert abs(hit[1] - miss[1]) < 0.15
    assert abs(hit[2] - miss[2]) / miss[2] < 0.15


def test_miss_rows_fail_a_query_b_criterion_named_in_the_rationale(
    rows: list[dict[str, Any]],
) -> None:
    for r in rows:
        if r["binary_label"] != MISS:
            continue
        crit = r["verification_payload"]["criteria_b"]
        failed = [
            c["criterion"]
            for c in crit
            if not re.search(c["pattern"], r["expected_answer_a"], re.IGNORECASE)
        ]
        assert failed, r["id"]
        assert f"'{failed[0]}'" in r["rationale"], r["id"]


# --- bad fixtures -------------------------------------------------------------------

_GOOD_FAMILY: dict[str, Any] = {
    "grounding": "Test chats",
    "requests": {
        "tea": {
            "gist": "tea advice",
            "answer": "Steep black tea for 4 minutes.",
            "criteria": [["steep", "steep"], ["black tea", "black"], ["time", "minutes"]],
            "phrasings": {
                "base": "How long do I steep black tea?",
                "surf": ["how long do i steep black tea", "is lower case"],
            },
        },
        "green": {
            "gist": "green tea advice",
            "answer": "Steep green tea for 2 minutes.",
            "criteria": [["steep", "steep"], ["green tea", "green"], ["time", "minutes"]],
            "phrasings": {"base": "How long do I steep green tea?"},
        },
    },
    "rows": [
        ["EQUIV", "case_punctuation_variant", "tea.base", "tea.surf"],
        ["ADVERSARIAL", "entity_swap", "tea.base", "green.base"],
    ],
}


def _write(tmp_path: Path, family: dict[str, Any], text: str | None = None) -> Path:
    d = tmp_path / DOMAIN
    d.mkdir(parents=True, exist_ok=True)
    body = text if text is not None else json.dumps({"families": {"tea_time": family}}, indent=2)
    (d / "bad.json").write_text(body, encoding="utf-8")
    return tmp_path


def test_invalid_json_names_file_and_line(tmp_path: Path) -> None:
    src = _write(tmp_path, {}, text='{\n  "families": {\n    "x": [1,, 2]\n  }\n}\n')
    with pytest.raises(conversational.FixtureError, match=r"bad\.json:3: not valid JSON"):
        conversational.generate(src / "conversational")


def test_unknown_reference_names_the_row_line(tmp_path: Path) -> None:
    fam = json.loads(json.dumps(_GOOD_FAMILY))
    fam["rows"][1] = ["ADVERSARIAL", "entity_swap", "tea.base", "oolong.base"]
    src = _write(tmp_path, fam)
    # The error points at the line where the faulty row starts.
    line = line_of(src / DOMAIN / "bad.json", '"ADVERSARIAL"')
    with pytest.raises(
        conversational.FixtureError, match=rf"bad\.json:{line}: reference 'oolong\.base'"
    ):
        conversational.generate(src / "conversational")


def test_label_the_checker_contradicts_is_refused(tmp_path: Path) -> None:
    fam = json.loads(json.dumps(_GOOD_FAMILY))
    # green's answer would satisfy tea's criteria if tea's second pattern were loose.
    fam["requests"]["green"]["criteria"] = fam["requests"]["tea"]["criteria"]
    fam["requests"]["green"]["answer"] = "Steep black or green tea for 2 minutes."
    src = _write(tmp_path, fam)
    line = line_of(src / DOMAIN / "bad.json", '"ADVERSARIAL"')
    with pytest.raises(conversational.FixtureError, match=rf"bad\.json:{line}: .*checker says HIT"):
        conversational.generate(src / "conversational")


def test_wrong_counts_and_bad_subcategory_are_reported(tmp_path: Path) -> None:
    src = _write(tmp_path, _GOOD_FAMILY)
    with pytest.raises(conversational.FixtureError, match=r"label counts .* differ from MATRIX"):
        generate_shard("conversational", src / "conversational")
    fam = json.loads(json.dumps(_GOOD_FAMILY))
    fam["rows"][0][1] = "entity_swap"
    src = _write(tmp_path, fam)
    with pytest.raises(conversational.FixtureError, match=r"belongs to ADVERSARIAL, not EQUIV"):
        conversational.generate(src / "conversational")


def test_script_reports_fixture_errors_without_traceback(tmp_path: Path) -> None:
    fam = json.loads(json.dumps(_GOOD_FAMILY))
    fam["rows"][0] = ["EQUIV", "case_punctuation_variant", "tea.base", "tea.base"]
    src = _write(tmp_path, fam)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "cacheeval",
            "generate",
            DOMAIN,
            "--sources-dir",
            str(src),
            "--out-dir",
            str(tmp_path / "out"),
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert re.search(r"bad\.json:\d+: the two sides are identical", proc.stderr)
    assert not (tmp_path / "out").exists()
