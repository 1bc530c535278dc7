"""The private slice: fresh rows (no query shared with the public set after
normalisation), every row re-verified by its checker, slice ids, determinism
in the secret, and the ``generate-slice`` command."""

from __future__ import annotations

import json
import re
import stat
from pathlib import Path

import pytest

from cacheeval import cli as cacheeval_cli
from cacheeval import slice as slice_mod
from cacheeval.dataset import load_bench, row_problem
from cacheeval.jsonio import jsonl_bytes, write_jsonl
from cacheeval.schema import ADVERSARIAL, PARA_SAFE, Row
from cacheeval.slice import (
    SliceError,
    generate_slice,
    load_public_texts,
    normalise_text,
    public_texts,
)
from cacheeval.verify import Check, check_row
from tests.conftest import MINI_BENCH, REPO_ROOT

ID = re.compile(r"\Acb-(math|tool)-9\d{3}\Z")


@pytest.fixture(scope="module")
def mini_public() -> frozenset[str]:
    texts, n = load_public_texts([MINI_BENCH])
    assert n == 32
    return texts


@pytest.fixture(scope="module")
def rows(mini_public: frozenset[str]) -> list[dict[str, object]]:
    return generate_slice("correct horse battery staple", 40, mini_public)


def test_rows_are_valid_verified_test_rows(rows: list[dict[str, object]]) -> None:
    assert len(rows) == 40
    for r in rows:
        assert row_problem(r, require_labels=True) is None
        assert r["split"] == "test"
        assert ID.match(str(r["id"]))
        row = Row.from_dict(r)
        got = check_row(row)
        assert got.binary == row.binary_label, (row.id, got.detail)
        assert row.label in (ADVERSARIAL, PARA_SAFE)
        assert row.binary_label == ("MISS" if row.label == ADVERSARIAL else "HIT")
        assert normalise_text(row.query_a) != normalise_text(row.query_b)
    assert len({r["id"] for r in rows}) == 40
    labels = [r["label"] for r in rows]
    assert labels.count(ADVERSARIAL) == labels.count(PARA_SAFE) == 20
    assert {r["domain"] for r in rows} == {"math", "tool"}
    # Rows come out in DOMAINS order (math before tool), then by id.
    keys = [(0 if r["domain"] == "math" else 1, str(r["id"])) for r in rows]
    assert keys == sorted(keys)


def test_no_query_repeats_the_public_set_or_the_slice(
    rows: list[dict[str, object]], mini_public: frozenset[str]
) -> None:
    queries = [normalise_text(str(r[k])) for r in rows for k in ("query_a", "query_b")]
    assert len(set(queries)) == len(queries)
    assert not set(queries) & mini_public


def test_public_rows_are_avoided(tmp_path: Path, mini_public: frozenset[str]) -> None:
    secret = "s3"
    first = generate_slice(secret, 12, mini_public)
    # Publish four of those rows (as train rows, different case and spacing): a
    # fresh draw with the same secret must route around them.
    published = [
        {**r, "split": "train", "query_a": f"  {str(r['query_a']).upper()} "} for r in first[:4]
    ]
    public_file = tmp_path / "public.jsonl"
    write_jsonl(
        public_file,
        [*(json.loads(line) for line in MINI_BENCH.read_text().splitlines()), *published],
    )
    texts, n = load_public_texts([public_file])
    assert n == 36
    again = generate_slice(secret, 12, texts)
    banned = {normalise_text(str(r[k])) for r in published for k in ("query_a", "query_b")}
    for r in again:
        assert normalise_text(str(r["query_a"])) not in banned
        assert normalise_text(str(r["query_b"])) not in banned
    # Slots whose rows were not published are unchanged (each slot has its own stream).
    kept = {r["id"]: r for r in first[4:]}
    same = [r for r in again if kept.get(r["id"]) == r]
    assert same and len(same) < len(again)


def test_real_domain_shards_are_avoided() -> None:
    shard_texts: set[str] = set()
    for name in ("math.jsonl", "tool.jsonl"):
        path = REPO_ROOT / "domains" / name
        if not path.is_file():
            pytest.skip(f"{path} is not built")
        for line in path.read_text(encoding="utf-8").splitlines():
            data = json.loads(line)
            shard_texts |= {normalise_text(data["query_a"]), normalise_text(data["query_b"])}
    rows = generate_slice("audit", 60, frozenset(shard_texts))
    queries = {normalise_text(str(r[k])) for r in rows for k in ("query_a", "query_b")}
    assert not queries & shard_texts


def test_deterministic_in_the_secret(mini_public: frozenset[str]) -> None:
    a = generate_slice("alpha", 16, mini_public)
    assert jsonl_bytes(a) == jsonl_bytes(generate_slice("alpha", 16, mini_public))
    assert jsonl_bytes(a) != jsonl_bytes(generate_slice("beta", 16, mini_public))
    # A larger slice with the same secret extends the smaller one.
    bigger = {r["id"]: r for r in generate_slice("alpha", 24, mini_public)}
    assert all(bigger[r["id"]] == r for r in a)
    assert b"alpha" not in jsonl_bytes(a)


def test_single_domain_and_bad_arguments(mini_public: frozenset[str]) -> None:
    only_tool = generate_slice("x", 6, mini_public, domains=["tool"])
    assert [r["id"] for r in only_tool] == [f"cb-tool-900{i}" for i in range(1, 7)]
    with pytest.raises(SliceError, match="no slice templates for domain"):
        generate_slice("x", 4, mini_public, domains=["creative"])
    with pytest.raises(SliceError, match="size must be at least 1"):
        generate_slice("x", 0, mini_public)
    with pytest.raises(SliceError, match="secret seed must not be empty"):
        generate_slice("", 4, mini_public)


def test_a_disagreeing_checker_stops_generation(
    monkeypatch: pytest.MonkeyPatch, mini_public: frozenset[str]
) -> None:
    monkeypatch.setattr(slice_mod, "check_row", lambda row: Check(None, "undecided"))
    with pytest.raises(SliceError, match="its checker says None: undecided"):
        generate_slice("x", 2, mini_public)


def test_exhausted_templates_are_reported(
    monkeypatch: pytest.MonkeyPatch, mini_public: frozenset[str]
) -> None:
    row = generate_slice("template", 1, mini_public, domains=["math"])[0]
    monkeypatch.setattr(slice_mod, "MAX_ATTEMPTS", 3)
    monkeypatch.setitem(slice_mod._BUILDERS, "math", lambda r, label, ctx: dict(row))
    banned = public_texts([Row.from_dict(row)])
    with pytest.raises(SliceError, match="no fresh row in 3 draws"):
        generate_slice("x", 1, banned, domains=["math"])


def test_generate_slice_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "slice.jsonl"
    code = cacheeval_cli.main(
        [
            "generate-slice",
            "--seed",
            "cmd",
            "--size",
            "20",
            "--out",
            str(out),
            "--public",
            str(MINI_BENCH),
        ]
    )
    assert code == 0
    assert stat.S_IMODE(out.stat().st_mode) == 0o600  # the slice is private
    printed = capsys.readouterr().out
    assert "20 slice rows, none overlapping 32 public rows" in printed
    assert "math 10 (ADVERSARIAL 5, PARA_SAFE 5); tool 10 (ADVERSARIAL 5, PARA_SAFE 5)" in printed
    loaded = load_bench(out)
    assert len(loaded) == 20 and all(r.is_labelled and r.split == "test" for r in loaded)
    # The slice is a labelled benchmark: `cacheeval eval` grades a cache on it directly.
    assert (
        cacheeval_cli.main(
            ["eval", "--bench", str(out), "--baseline", "always_hit",
             "--out", str(tmp_path / "r.md"), "--json", str(tmp_path / "r.json")]
        )
        == 0
    )  # fmt: skip
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["headline"]["fhr"]["value"] == 1.0
    assert report["headline"]["adversarial_fhr"]["denominator"] == 10


def test_generate_slice_command_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "slice.jsonl"
    missing = tmp_path / "nope.jsonl"
    assert (
        cacheeval_cli.main(
            ["generate-slice", "--seed", "s", "--out", str(out), "--public", str(missing)]
        )
        == 2
    )
    assert f"{missing}: no such file" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "cb-math-0001"}\n')
    assert (
        cacheeval_cli.main(
            ["generate-slice", "--seed", "s", "--out", str(out), "--public", str(bad)]
        )
        == 2
    )
    assert f"{bad}:1: missing field(s)" in capsys.readouterr().err
    assert not out.exists()
