"""The code-domain generator, its fixtures and the committed shard."""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

from cacheeval.dataset import row_problem
from cacheeval.generators import code
from cacheeval.pipeline.domains import MATRIX
from cacheeval.pipeline.generate import generate_shard
from cacheeval.schema import HIT, LABELS, MISS, Row
from cacheeval.support.layout import REPO_ROOT, SOURCES_DIR
from cacheeval.verify import check_row


@pytest.fixture(scope="module")
def rows() -> list[dict[str, Any]]:
    return generate_shard("code")


def test_label_counts_match_the_matrix(rows: list[dict[str, Any]]) -> None:
    counts = Counter(r["label"] for r in rows)
    assert tuple(counts[label] for label in LABELS) == MATRIX["code"]
    assert len(rows) == sum(MATRIX["code"])


def test_at_least_eight_subcategories(rows: list[dict[str, Any]]) -> None:
    subs = {r["subcategory"] for r in rows}
    assert len(subs) >= 8
    # the axes the domain exists for are all present
    for axis in (
        "language_swap",
        "dialect_swap",
        "identifier_rename",
        "sort_direction",
        "bound_inclusivity",
        "encode_decode",
        "first_n_vs_nth",
        "sort_stability",
        "sync_async",
        "off_by_one",
        "return_type",
        "formatting_variant",
    ):
        assert axis in subs, axis


def test_rows_are_valid(rows: list[dict[str, Any]]) -> None:
    for r in rows:
        data = {**r, "split": "train"}
        assert row_problem(data) is None, r["id"]
        row = Row.from_dict(data)
        assert row.domain == "code"
        assert row.verification_payload is not None
        assert row.verification_payload["kind"] == "code"
        assert row.expected_answer_a and row.expected_answer_b


def test_every_row_verifies_with_zero_disagreements(rows: list[dict[str, Any]]) -> None:
    disagreements = []
    for r in rows:
        check = check_row(Row.from_dict({**r, "split": "train"}))
        if check.binary != r["binary_label"]:
            disagreements.append((r["id"], r["binary_label"], check.binary, check.detail))
    assert disagreements == []


def test_all_verification_modes_are_used(rows: list[dict[str, Any]]) -> None:
    modes = Counter((r["verification_payload"]["mode"], r["binary_label"]) for r in rows)
    for mode in ("tests", "ast"):
        assert modes[(mode, HIT)] > 0 and modes[(mode, MISS)] > 0, mode
    assert modes[("lang", MISS)] > 0
    methods = {r["verification_method"] for r in rows}
    assert methods == {"pytest_sandbox", "ast_diff"}


def test_ids_are_unique_and_sequential(rows: list[dict[str, Any]]) -> None:
    assert [r["id"] for r in rows] == [f"cb-code-{i:04d}" for i in range(1, len(rows) + 1)]


def test_rationales_are_unique(rows: list[dict[str, Any]]) -> None:
    counts = Counter(r["rationale"] for r in rows)
    assert [t for t, n in counts.items() if n > 1] == []


def test_no_duplicate_pairs_and_no_identical_sides(rows: list[dict[str, Any]]) -> None:
    seen: set[frozenset[str]] = set()
    for r in rows:
        assert r["query_a"] != r["query_b"], r["id"]
        pair = frozenset((r["query_a"], r["query_b"]))
        assert pair not in seen, r["id"]
        seen.add(pair)


def test_sources_name_an_item_and_families_mix_hit_and_miss(rows: list[dict[str, Any]]) -> None:
    by_family: dict[str, set[str]] = defaultdict(set)
    for r in rows:
        assert re.fullmatch(r"sources/code/[a-z_]+\.json#[a-z0-9_]+", r["source"]), r["source"]
        by_family[r["source"]].add(r["binary_label"])
    assert len(by_family) >= 20
    # grouped cross-validation needs both classes in every family
    assert all(labels == {HIT, MISS} for labels in by_family.values())


def test_construction_methods_are_honest(rows: list[dict[str, Any]]) -> None:
    for r in rows:
        assert r["construction_method"] in code.CONSTRUCTION_METHODS
        if r["label"] == "ADVERSARIAL":
            assert r["construction_method"] == "adversarial_perturbation", r["id"]


# Tokens that flip a label somewhere must also appear, unchanged, in HIT rows.
FLIP_TOKENS = (
    "python", "javascript", "js", "rust", "go", "sql", "postgresql", "postgres", "mysql",
    "shell", "bash", "descending", "ascending", "async", "inclusive", "exclusive",
    "decode", "encode", "first", "last", "nth", "stable", "in place", "none", "without",
)  # fmt: skip


def test_flip_tokens_appear_on_both_sides_of_the_label(rows: list[dict[str, Any]]) -> None:
    for token in FLIP_TOKENS:
        pattern = re.compile(r"\b" + re.escape(token), re.IGNORECASE)
        hit = sum(1 for r in rows if r["binary_label"] == HIT and pattern.search(r["query_b"]))
        miss = sum(1 for r in rows if r["binary_label"] == MISS and pattern.search(r["query_b"]))
        assert hit > 0 and miss > 0, (token, hit, miss)


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9_]+|[^\sa-z0-9_]", text.lower())


def test_query_b_alone_does_not_predict_the_label(rows: list[dict[str, Any]]) -> None:
    """Grouped 5-fold multinomial naive Bayes on query_b words stays near the
    majority-class rate: no surface cue gives the label away."""
    families = sorted({r["source"] for r in rows})
    fold_of = {f: i % 5 for i, f in enumerate(families)}
    correct = 0
    for fold in range(5):
        train = [r for r in rows if fold_of[r["source"]] != fold]
        test = [r for r in rows if fold_of[r["source"]] == fold]
        counts: dict[str, Counter[str]] = {HIT: Counter(), MISS: Counter()}
        priors = Counter(r["binary_label"] for r in train)
        for r in train:
            counts[r["binary_label"]].update(_words(r["query_b"]))
        vocab = set(counts[HIT]) | set(counts[MISS])
        for r in test:
            scores = {}
            for label in (HIT, MISS):
                total = sum(counts[label].values()) + len(vocab)
                scores[label] = math.log(priors[label] / len(train)) + sum(
                    math.log((counts[label][w] + 1) / total) for w in _words(r["query_b"])
                )
            correct += max(scores, key=lambda k: scores[k]) == r["binary_label"]
    accuracy = correct / len(rows)
    majority = max(Counter(r["binary_label"] for r in rows).values()) / len(rows)
    assert accuracy <= majority + 0.05, (accuracy, majority)


# --- fixtures ----------------------------------------------------------------------


def _tasks() -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for path in sorted((SOURCES_DIR / "code").glob("*.json")):
        out.update(json.loads(path.read_text(encoding="utf-8"))["tasks"])
    return out


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_javascript_answers_pass_their_node_tests(tmp_path: Path) -> None:
    node = shutil.which("node")
    assert node is not None
    tasks = {k: t for k, t in _tasks().items() if t["lang"] == "javascript"}
    assert tasks and all("node_tests" in t for t in tasks.values())

    def run(answer: list[str], tests: list[str], name: str) -> int:
        script = tmp_path / f"{name}.js"
        script.write_text("\n".join(answer + tests) + "\n", encoding="utf-8")
        return subprocess.run([node, str(script)], capture_output=True, timeout=30).returncode

    for key, task in tasks.items():
        assert run(task["answer"], task["node_tests"], key) == 0, key
    # negative control: the ascending answer fails the descending tests
    asc, desc = tasks["sort_prices_asc_js"], tasks["sort_prices_desc_js"]
    assert run(asc["answer"], desc["node_tests"], "control") != 0


def _fixture_dir(tmp_path: Path, text: str) -> Path:
    (tmp_path / "code").mkdir()
    (tmp_path / "code" / "broken.json").write_text(text, encoding="utf-8")
    return tmp_path


def test_bad_json_names_file_and_line(tmp_path: Path) -> None:
    src = _fixture_dir(tmp_path, '{\n  "tasks": {},\n  "families": [,]\n}\n')
    with pytest.raises(code.FixtureError, match=r"broken\.json:3: not valid JSON"):
        code.generate(src / "code")


def test_unknown_request_names_file_and_line(tmp_path: Path) -> None:
    fixture = {
        "tasks": {
            "t": {"lang": "python", "answer": "def f():\n    return 1", "tests": "assert f() == 1"}
        },
        "families": [
            {
                "key": "fam",
                "grounding": "g",
                "requests": {"r1": {"task": "t", "text": "Write f."}},
                "rows": [
                    {
                        "label": "EQUIV",
                        "subcategory": "case_variant",
                        "a": "r1",
                        "b": "nope",
                        "construction": "curated",
                        "rationale": "the rationale line",
                    }
                ],
            }
        ],
    }
    text = json.dumps(fixture, indent=2)
    line = text.splitlines().index('          "rationale": "the rationale line"') + 1
    src = _fixture_dir(tmp_path, text)
    with pytest.raises(code.FixtureError, match=rf"broken\.json:{line}: .*unknown request 'nope'"):
        code.generate(src / "code")


def test_answer_in_the_wrong_language_is_rejected(tmp_path: Path) -> None:
    fixture = {"tasks": {"t": {"lang": "rust", "answer": "def f():\n    return 1", "tests": "x"}}}
    src = _fixture_dir(tmp_path, json.dumps(fixture, indent=2) + "\n")
    with pytest.raises(
        code.FixtureError, match=r"broken\.json:3: task 't': answer reads as python"
    ):
        code.generate(src / "code")


def test_wrong_label_counts_are_rejected(tmp_path: Path) -> None:
    shutil.copytree(SOURCES_DIR / "code", tmp_path / "code")
    path = tmp_path / "code" / "python_core.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["families"][0]["rows"].pop()
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    with pytest.raises(code.FixtureError, match="label counts .* differ from MATRIX"):
        generate_shard("code", tmp_path / "code")


def test_script_reports_fixture_errors_without_a_traceback(tmp_path: Path) -> None:
    src = _fixture_dir(tmp_path, '{"tasks": {}, "families": [}\n')
    proc = subprocess.run(
        [sys.executable, "-m", "cacheeval", "generate", "code", "--sources-dir", str(src),
         "--out-dir", str(tmp_path / "out")],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
    )  # fmt: skip
    assert proc.returncode == 2
    assert "broken.json:1: not valid JSON" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "out").exists()
