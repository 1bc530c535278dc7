"""assemble on synthetic shards: the happy path, every violation kind, the
public/private split, the manifest, and --check."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cacheeval.dataset import load_bench, load_test_labels, row_problem
from cacheeval.pipeline.assemble import (
    Build,
    BuildFailed,
    build_dir,
    check_build,
    label_record,
    main,
    write_build,
)
from cacheeval.pipeline.domains import MATRIX
from cacheeval.pipeline.manifest import DATASET_PATH, LABELS_PATH, MANIFEST_PATH
from cacheeval.pipeline.rowschema import schema_errors, validator
from cacheeval.schema import DOMAINS, HIDDEN_TEST_FIELDS, ROW_FIELDS
from cacheeval.support.jsonio import jsonl_bytes, sha256_file, write_jsonl

from .synthetic import SMALL_MATRIX, make_shard, write_shards

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    write_shards(tmp_path, SMALL_MATRIX)
    return tmp_path


def _build(root: Path, **kw: Any) -> Build:
    return build_dir(root / "domains", matrix=SMALL_MATRIX, **kw)


# --- happy path ----------------------------------------------------------------------


def test_happy_path_outputs(root: Path) -> None:
    build = _build(root)
    n = sum(sum(c) for c in SMALL_MATRIX.values())
    assert len(build.rows) == n == 43
    assert build.present == ["qa_factual", "math", "creative"]
    assert build.missing == [d for d in DOMAINS if d not in SMALL_MATRIX]
    # Sorted by DOMAINS order, then id.
    keys = [(DOMAINS.index(r["domain"]), r["id"]) for r in build.rows]
    assert keys == sorted(keys)
    assert [list(r) for r in build.rows] == [list(ROW_FIELDS)] * n
    by_split = {s: sum(1 for r in build.rows if r["split"] == s) for s in ("train", "dev", "test")}
    # Splits go by family (cacheeval.pipeline.splits): the 43 synthetic rows form 9
    # families of at most 5 rows, packed whole against targets 21/11/11 (largest
    # remainder of 43 * 50/25/25); the packer lands on 19/14/10.
    assert by_split == {"train": 19, "dev": 14, "test": 10}
    for fam in {r["source"] for r in build.rows}:
        assert len({r["split"] for r in build.rows if r["source"] == fam}) == 1, fam


def test_written_files_and_public_private_split(root: Path) -> None:
    build = _build(root)
    write_build(build, root)
    public = [json.loads(line) for line in (root / DATASET_PATH).read_text().splitlines()]
    v = validator()
    assert [schema_errors(v, r) for r in public] == [[]] * len(public)
    test_rows = [r for r in public if r["split"] == "test"]
    assert len(test_rows) == 10
    for r in test_rows:
        assert all(r[f] is None for f in HIDDEN_TEST_FIELDS), r["id"]
        assert r["query_a"] and r["query_b"]
        assert row_problem(r) is None
    for r in public:
        if r["split"] != "test":
            assert r["label"] is not None and row_problem(r, require_labels=True) is None
    # Labels file: id + hidden fields in that key order, one per test row, public order.
    labels_lines = [json.loads(x) for x in (root / LABELS_PATH).read_text().splitlines()]
    assert [list(x) for x in labels_lines] == [["id", *HIDDEN_TEST_FIELDS]] * 10
    assert [x["id"] for x in labels_lines] == [r["id"] for r in test_rows]
    # Public + labels reconstruct the full rows exactly.
    merged = load_bench(root / DATASET_PATH, labels_path=root / LABELS_PATH)
    assert [m.to_dict() for m in merged] == build.rows
    assert all(m.is_labelled for m in merged)
    # The manifest vouches for both files by sha256.
    manifest = json.loads((root / MANIFEST_PATH).read_text())
    assert manifest["test_labels"] == {
        "path": LABELS_PATH,
        "sha256": sha256_file(root / LABELS_PATH),
        "rows": 10,
    }
    assert manifest["dataset"]["sha256"] == sha256_file(root / DATASET_PATH)
    assert manifest["dataset"]["rows"] == 43
    assert set(load_test_labels(root / LABELS_PATH)) == {r["id"] for r in test_rows}
    # The private labels are readable by their owner only; the public files by all.
    assert stat.S_IMODE((root / LABELS_PATH).stat().st_mode) == 0o600
    assert stat.S_IMODE((root / DATASET_PATH).stat().st_mode) == 0o644


def test_manifest_counts_and_shards(root: Path) -> None:
    build = _build(root)
    m = json.loads(build.files[MANIFEST_PATH])
    assert list(m) == [
        "schema_version",
        "cacheeval_version",
        "shards",
        "missing_domains",
        "dataset",
        "test_labels",
        "counts",
        "verification",
        "splits",
    ]
    assert [s["domain"] for s in m["shards"]] == ["qa_factual", "math", "creative"]
    for s in m["shards"]:
        assert s["path"] == f"domains/{s['domain']}.jsonl"
        assert s["sha256"] == sha256_file(root / s["path"])
        assert s["rows"] == sum(SMALL_MATRIX[s["domain"]])
    c = m["counts"]
    for d, counts in SMALL_MATRIX.items():
        assert tuple(c["by_domain_label"][d].values()) == counts
        for lab, n in c["by_domain_label"][d].items():
            assert sum(c["by_domain_label_split"][d][lab].values()) == n
    assert c["by_split"] == {"train": 19, "dev": 14, "test": 10}
    assert m["splits"]["algorithm"] == "family-group-pack/1"
    assert m["splits"]["by_split"] == c["by_split"]
    assert (m["splits"]["groups"], m["splits"]["shared_families"], m["splits"]["shared_texts"]) == (
        9,
        0,
        0,
    )
    # creative is all-policy: 15 MISS; qa_factual 7 HIT, math 4 HIT.
    assert c["by_binary_label"] == {"HIT": 11, "MISS": 32}
    assert m["verification"]["by_tier"] == {"deterministic": 43, "rubric": 0, "judge": 0}
    assert m["verification"]["by_method"]["exact_match"] == 28
    assert m["verification"]["by_method"]["policy_no_cache"] == 15


def test_manifest_preserves_difficulty_calibration(root: Path) -> None:
    calib = {"ensemble": ["a", "b"], "kappa": 0.532}
    (root / "domains" / "manifest.json").write_text(
        json.dumps({"difficulty_calibration": calib, "dataset": {"sha256": "old"}})
    )
    build = _build(root, previous_manifest=root / MANIFEST_PATH)
    m = json.loads(build.files[MANIFEST_PATH])
    assert m["difficulty_calibration"] == calib
    assert m["dataset"]["sha256"] != "old"
    assert "difficulty_calibration" not in json.loads(_build(root).files[MANIFEST_PATH])


def test_build_is_independent_of_shard_line_order(root: Path) -> None:
    first = _build(root)
    path = root / "domains" / "math.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(reversed(lines)))
    second = _build(root)
    assert second.files[DATASET_PATH] == first.files[DATASET_PATH]
    assert second.files[LABELS_PATH] == first.files[LABELS_PATH]
    # Only the shard hash in the manifest moves.
    assert second.files[MANIFEST_PATH] != first.files[MANIFEST_PATH]


# --- violations ------------------------------------------------------------------------

Mutation = Callable[[list[dict[str, Any]]], None]


def _set(i: int, **kv: Any) -> Mutation:
    def f(rows: list[dict[str, Any]]) -> None:
        rows[i].update(kv)

    return f


def _copy_pair(src: int, dst: int, *, swap: bool = False) -> Mutation:
    def f(rows: list[dict[str, Any]]) -> None:
        for field in ("query", "context", "system_prompt", "tools"):
            a, b = rows[src][f"{field}_a"], rows[src][f"{field}_b"]
            rows[dst][f"{field}_a"], rows[dst][f"{field}_b"] = (b, a) if swap else (a, b)

    return f


def _drop(i: int) -> Mutation:
    def f(rows: list[dict[str, Any]]) -> None:
        del rows[i]

    return f


def _flip_binary(i: int) -> Mutation:
    def f(rows: list[dict[str, Any]]) -> None:
        rows[i]["binary_label"] = "MISS" if rows[i]["binary_label"] == "HIT" else "HIT"

    return f


def _same_rationale(src: int, dst: int) -> Mutation:
    def f(rows: list[dict[str, Any]]) -> None:
        # Case and punctuation do not make a copied rationale unique.
        rows[dst]["rationale"] = rows[src]["rationale"].upper().rstrip(".") + "!"

    return f


# (mutation of the qa_factual shard, row index blamed, expected substring)
VIOLATIONS: list[tuple[str, Mutation, int, str]] = [
    ("schema enum", _set(3, label="SIMILAR"), 3, "schema: label: 'SIMILAR' is not one of"),
    ("row_problem", _set(3, difficulty="trivial"), 3, "row_problem: unknown difficulty 'trivial'"),
    ("unknown field", _set(3, notes="x"), 3, "unknown field(s): notes"),
    ("split in shard", _set(3, split="train"), 3, "shard rows carry no 'split'"),
    ("empty rationale", _set(3, rationale="  "), 3, "provenance field rationale is empty"),
    ("null source", _set(3, source=None), 3, "provenance field source is empty"),
    ("empty grounding", _set(3, real_world_grounding=""), 3, "real_world_grounding is empty"),
    ("empty subcategory", _set(3, subcategory=""), 3, "provenance field subcategory is empty"),
    ("missing answer", _set(3, expected_answer_b=None), 3, "expected_answer_b is empty"),
    ("binary label", _flip_binary(3), 3, "binary_label"),
    ("payload kind", _set(3, verification_payload={"kind": "vibes"}), 3, "kind 'vibes'"),
    ("payload null", _set(3, verification_payload=None), 3, "must be an object"),
    ("id of other domain", _set(3, id="cb-math-0900"), 3, "does not name the row's domain"),
    ("id trailing newline", _set(3, id="cb-qa_factual-0004\n"), 3, "not exactly cb-qa_factual"),
    ("wrong shard", _set(3, domain="math", id="cb-math-0900"), 3, "in the qa_factual shard"),
    ("duplicate id", _set(5, id="cb-qa_factual-0004"), 5, "duplicate id (first at"),
    ("identical sides", lambda rows: rows[3].update(query_b=rows[3]["query_a"]), 3, "identical"),
    ("duplicate pair", _copy_pair(2, 6), 6, "same request pair as cb-qa_factual-0003"),
    ("swapped pair", _copy_pair(2, 6, swap=True), 6, "sides swapped"),
    ("duplicate rationale", _same_rationale(1, 7), 7, "rationale duplicates that of"),
]


@pytest.mark.parametrize(
    ("mutate", "index", "message"),
    [v[1:] for v in VIOLATIONS],
    ids=[v[0] for v in VIOLATIONS],
)
def test_each_violation_names_row_and_reason(
    root: Path, mutate: Mutation, index: int, message: str
) -> None:
    rows = make_shard("qa_factual", SMALL_MATRIX["qa_factual"])
    mutate(rows)
    blamed = rows[index]["id"].strip()
    write_jsonl(root / "domains" / "qa_factual.jsonl", rows)
    with pytest.raises(BuildFailed) as exc:
        _build(root)
    hits = [v for v in exc.value.violations if message in v]
    assert hits, exc.value.violations
    line = index + 1
    assert any(v.startswith(f"{_shown(root)}:{line}: ") and blamed in v for v in hits), hits


def _shown(root: Path) -> str:
    from cacheeval.pipeline.assemble import display_path

    return display_path(root / "domains" / "qa_factual.jsonl")


def test_matrix_violation(root: Path) -> None:
    rows = make_shard("math", SMALL_MATRIX["math"])
    adversarial = [i for i, r in enumerate(rows) if r["label"] == "ADVERSARIAL"]
    del rows[adversarial[0]]
    write_jsonl(root / "domains" / "math.jsonl", rows)
    with pytest.raises(BuildFailed) as exc:
        _build(root)
    assert exc.value.violations == [
        f"{_shown(root).replace('qa_factual', 'math')}: label counts differ from the matrix: "
        "ADVERSARIAL 4 (want 5); 13 rows (want 14)"
    ]


def test_require_all_names_missing_shards(root: Path) -> None:
    with pytest.raises(BuildFailed) as exc:
        _build(root, require_all=True)
    missing = [v for v in exc.value.violations if v.endswith("shard is missing")]
    assert len(missing) == len(DOMAINS) - len(SMALL_MATRIX)
    assert any(v.startswith("tool.jsonl") for v in missing)


def test_all_violations_are_collected(root: Path) -> None:
    rows = make_shard("qa_factual", SMALL_MATRIX["qa_factual"])
    rows[1]["rationale"] = ""
    rows[9]["source"] = ""
    write_jsonl(root / "domains" / "qa_factual.jsonl", rows)
    other = make_shard("creative", SMALL_MATRIX["creative"])
    other[0]["binary_label"] = "HIT"
    write_jsonl(root / "domains" / "creative.jsonl", other)
    with pytest.raises(BuildFailed) as exc:
        _build(root)
    v = exc.value.violations
    assert any(":2: cb-qa_factual-0002: provenance field rationale" in x for x in v)
    assert any(":10: cb-qa_factual-0010: provenance field source" in x for x in v)
    assert any(
        "creative.jsonl:1: cb-creative-0001: binary_label 'HIT' should be MISS" in x for x in v
    )
    # Reported in shard order: qa_factual (DOMAINS[0]) before creative.
    first_creative = next(i for i, x in enumerate(v) if "creative" in x)
    assert all("qa_factual" in x for x in v[:first_creative])


def test_bad_json_line_names_file_and_line(root: Path) -> None:
    path = root / "domains" / "math.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    lines[4] = '{"id": "cb-math-0005", oops\n'
    path.write_text("".join(lines))
    with pytest.raises(BuildFailed) as exc:
        _build(root)
    assert len(exc.value.violations) == 1
    assert exc.value.violations[0].startswith(_shown(root).replace("qa_factual", "math") + ":5: ")
    assert "not valid JSON" in exc.value.violations[0]


def test_non_object_line(root: Path) -> None:
    path = root / "domains" / "math.jsonl"
    path.write_text(path.read_text() + "[1, 2]\n")
    with pytest.raises(BuildFailed) as exc:
        _build(root)
    assert any(":15: expected a JSON object, got list" in v for v in exc.value.violations)


# --- the command line, on the real matrix -----------------------------------------------------


def _real_root(tmp_path: Path) -> Path:
    write_shards(tmp_path, {d: MATRIX[d] for d in ("math", "personalized")})
    return tmp_path


def test_cli_build_writes_and_reports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _real_root(tmp_path)
    assert main(["--root", str(root)]) == 0
    out = capsys.readouterr().out
    assert "assembled 300 rows from 2/10 shards: train 150, dev 75, test 75" in out
    assert "missing shards (8): qa_factual, qa_open, code" in out
    assert "wrote" in out
    for rel in (DATASET_PATH, LABELS_PATH, MANIFEST_PATH):
        assert (root / rel).is_file()
    # A second run changes nothing.
    assert main(["--root", str(root)]) == 0
    assert "wrote" not in capsys.readouterr().out
    # --out-dir builds elsewhere.
    out_dir = tmp_path / "elsewhere"
    assert main(["--root", str(root), "--out-dir", str(out_dir)]) == 0
    assert (out_dir / DATASET_PATH).read_bytes() == (root / DATASET_PATH).read_bytes()


def test_cli_failure_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _real_root(tmp_path)
    rows = make_shard("math", MATRIX["math"])
    rows[10]["rationale"] = ""
    write_jsonl(root / "domains" / "math.jsonl", rows)
    assert main(["--root", str(root)]) == 1
    err = capsys.readouterr().err
    assert "build failed: 1 problem(s)" in err
    assert "cb-math-0011: provenance field rationale is empty" in err
    assert not (root / DATASET_PATH).exists()
    assert main(["--root", str(root), "--require-all"]) == 1


def test_cli_no_shards(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--root", str(tmp_path)]) == 1
    assert "no domain shards" in capsys.readouterr().err


def test_bytes_identical_across_processes(tmp_path: Path) -> None:
    """Two fresh interpreters with different hash seeds build the same bytes."""
    root = _real_root(tmp_path)
    outputs = []
    for seed in ("1", "2"):
        out = tmp_path / f"out{seed}"
        env = {**os.environ, "PYTHONHASHSEED": seed}
        subprocess.run(
            [
                sys.executable,
                "-m",
                "scripts.assemble",
                "--root",
                str(root),
                "--out-dir",
                str(out),
            ],
            check=True,
            cwd=REPO,
            env=env,
            capture_output=True,
        )
        outputs.append(
            [(out / rel).read_bytes() for rel in (DATASET_PATH, LABELS_PATH, MANIFEST_PATH)]
        )
    assert outputs[0] == outputs[1]


# --- --check -----------------------------------------------------------------------------------


def _generators(
    matrix: dict[str, tuple[int, ...]],
) -> dict[str, Callable[[Path], list[dict[str, Any]]]]:
    def generator(domain: str) -> Callable[[Path], list[dict[str, Any]]]:
        return lambda _sources: make_shard(domain, matrix[domain])

    return {d: generator(d) for d in matrix}


def test_check_passes_on_a_fresh_build(tmp_path: Path) -> None:
    write_shards(tmp_path, SMALL_MATRIX)
    write_build(_build(tmp_path), tmp_path)
    notes, diffs = check_build(
        tmp_path, tmp_path, matrix=SMALL_MATRIX, generators=_generators(SMALL_MATRIX)
    )
    assert diffs == []
    assert "regenerated 3 shard(s): qa_factual, math, creative" in notes


def test_check_names_every_stale_file(tmp_path: Path) -> None:
    write_shards(tmp_path, SMALL_MATRIX)
    write_build(_build(tmp_path), tmp_path)
    # A hand edit of one shard, and a labels file that went stale.
    shard = tmp_path / "domains" / "math.jsonl"
    rows = [json.loads(x) for x in shard.read_text().splitlines()]
    rows[2]["rationale"] = "Edited by hand, not by the generator."
    shard.write_bytes(jsonl_bytes(rows))
    labels = tmp_path / LABELS_PATH
    labels.write_text(labels.read_text().replace("synthetic", "SYNTHETIC", 1))
    _, diffs = check_build(
        tmp_path, tmp_path, matrix=SMALL_MATRIX, generators=_generators(SMALL_MATRIX)
    )
    assert diffs == [
        "domains/math.jsonl (first difference at line 3)",
        f"{LABELS_PATH} (first difference at line 1)",
    ]
    # Building from the hand-edited shard does not help: the generator disagrees,
    # so the public file (qa_factual's 14 rows, then cb-math-0003) and the
    # manifest (math's shard hash) now differ too.
    write_build(_build(tmp_path, previous_manifest=tmp_path / MANIFEST_PATH), tmp_path)
    _, diffs = check_build(
        tmp_path, tmp_path, matrix=SMALL_MATRIX, generators=_generators(SMALL_MATRIX)
    )
    assert diffs == [
        "domains/math.jsonl (first difference at line 3)",
        f"{DATASET_PATH} (first difference at line 17)",
        f"{MANIFEST_PATH} (first difference at line 14)",
    ]


def test_check_keeps_shards_without_generator_and_reports_missing_outputs(tmp_path: Path) -> None:
    write_shards(tmp_path, SMALL_MATRIX)
    gens = _generators({"math": SMALL_MATRIX["math"]})
    notes, diffs = check_build(tmp_path, tmp_path, matrix=SMALL_MATRIX, generators=gens)
    assert "no generator module, committed shard used as is: qa_factual, creative" in notes
    assert diffs == [f"{DATASET_PATH} (missing)", f"{MANIFEST_PATH} (missing)"]
    assert f"{LABELS_PATH} is not present locally: not compared" in notes


def test_check_reports_a_failing_generator(tmp_path: Path) -> None:
    write_shards(tmp_path, SMALL_MATRIX)

    def broken(_src: Path) -> list[dict[str, Any]]:
        raise FileNotFoundError("sources/math/problems.json")

    with pytest.raises(BuildFailed) as exc:
        check_build(tmp_path, tmp_path, matrix=SMALL_MATRIX, generators={"math": broken})
    assert exc.value.violations == [
        "generator math failed: FileNotFoundError: sources/math/problems.json"
    ]
    # A domain still being written (generator, no shard yet) is not run, only noted.
    notes, diffs = check_build(tmp_path, tmp_path, matrix=SMALL_MATRIX, generators={"tool": broken})
    assert any(n.startswith("generator but no committed shard, not checked: tool ") for n in notes)
    assert diffs == [f"{DATASET_PATH} (missing)", f"{MANIFEST_PATH} (missing)"]
    assert "no generator module, committed shard used as is: qa_factual, math, creative" in notes


def test_label_record_key_order() -> None:
    row = {f: f"v-{f}" for f in ROW_FIELDS}
    assert list(label_record(row)) == ["id", *HIDDEN_TEST_FIELDS]
