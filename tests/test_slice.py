"""The private slice: held-out pools for all ten domains (built by the domains'
own generators, verified, sharing no text and no family with the public
shards), the matrix's label mix per domain, determinism in the secret, the
adversarial ``--against`` selection, and the ``generate-slice`` command."""

from __future__ import annotations

import json
import re
import stat
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from cacheeval import cli as cacheeval_cli
from cacheeval.benches import slice as slice_mod
from cacheeval.benches.slice import (
    SliceError,
    eligible_pool,
    generate_adversarial_slice,
    generate_slice,
    load_public_texts,
    normalise_text,
    quotas,
    row_texts,
)
from cacheeval.dataset import load_bench, read_slice_header, row_problem
from cacheeval.pipeline.domains import MATRIX
from cacheeval.pipeline.heldout import HELDOUT_DIR, PoolError, pool
from cacheeval.schema import DOMAINS, LABELS, Pair, Row, Verdict
from cacheeval.support.jsonio import jsonl_bytes
from cacheeval.verify import Check, check_row
from cacheeval.verify.never_cache import request_policy
from tests.conftest import REPO_ROOT

SHARDS = sorted((REPO_ROOT / "domains").glob("*.jsonl"))
ID = re.compile(r"\Acb-([a-z_]+)-9\d{3}\Z")


@pytest.fixture(scope="module")
def public() -> frozenset[str]:
    if len(SHARDS) != len(DOMAINS):
        pytest.skip("domains/*.jsonl are not all built")
    texts, n = load_public_texts(SHARDS)
    assert n == sum(sum(v) for v in MATRIX.values())
    return texts


@pytest.fixture(scope="module")
def slice_rows(public: frozenset[str]) -> list[dict[str, Any]]:
    return generate_slice("s1", public)


def _public_sources() -> set[str]:
    out = set()
    for path in SHARDS:
        for line in path.read_text(encoding="utf-8").splitlines():
            out.add(json.loads(line)["source"])
    return out


# --- pools -------------------------------------------------------------------------------


@pytest.mark.parametrize("domain", DOMAINS)
def test_pool_is_held_out_verified_and_disjoint(domain: str, public: frozenset[str]) -> None:
    rows = pool(domain)
    assert len(rows) >= 40
    public_sources = _public_sources()
    for r in rows:
        row = Row.from_dict({**r, "split": "test"})
        assert row_problem(row.to_dict(), require_labels=True) is None
        got = check_row(row)
        assert got.binary == row.binary_label, (r["source"], r["query_a"], got.detail)
        # Held-out families: their own fixture files, never a public family.
        assert str(r["source"]).startswith(f"sources/heldout/{domain}/"), r["source"]
        assert r["source"] not in public_sources
        # No normalised text (query, turn, system prompt) of the public set.
        assert not row_texts(r) & public, (r["source"], row_texts(r) & public)
        # A HIT may be served at all: no never-cache rule refuses either side.
        if row.binary_label == "HIT":
            for req in (row.pair.a, row.pair.b):
                if not req.tools:  # with tools, the calls decide
                    assert request_policy(req).allowed, (r["source"], req.query)
    # Every label has more rows than the default slice takes, so the seed chooses.
    have = Counter(r["label"] for r in rows)
    for label, n in quotas(domain, slice_mod.DEFAULT_PER_DOMAIN).items():
        assert have[label] > n, (domain, label, have[label], n)


def test_pool_errors_name_the_problem(tmp_path: Path) -> None:
    with pytest.raises(PoolError, match="no held-out fixtures for math"):
        pool("math", tmp_path)
    with pytest.raises(PoolError, match="unknown domain"):
        pool("poetry")
    (tmp_path / "qa_factual").mkdir()
    (tmp_path / "qa_factual" / "broken.json").write_text('{"families": [\n  {"key": 1}\n]}\n')
    with pytest.raises(PoolError, match=r"broken\.json:\d+:"):
        pool("qa_factual", tmp_path)


def test_a_hit_row_the_policy_refuses_stops_the_pool(tmp_path: Path) -> None:
    """The held-out conversational family once asked for a farewell card
    message (creative writing by the never-cache rule) in HIT rows: the
    checkers judged only the answers and let it through. Put back, the pool
    refuses it, naming the family and the rule."""
    folder = tmp_path / "conversational"
    folder.mkdir()
    for src in (HELDOUT_DIR / "conversational").glob("*.json"):
        text = src.read_text(encoding="utf-8")
        text = text.replace("help me plan a send-off", "help me write a farewell card message")
        (folder / src.name).write_text(text, encoding="utf-8")
    with pytest.raises(PoolError, match=r"ho_farewell_card: a HIT row .* never cached \(creative"):
        pool("conversational", tmp_path)


def test_normalise_text_folds_case_width_punctuation_and_space() -> None:
    assert normalise_text("  What’s the CAPITAL\tof Perú?! ") == "what s the capital of perú"
    assert normalise_text("１２かける１２") == "12かける12"
    assert normalise_text("3x + 7") != normalise_text("3x - 7")


# --- the slice ------------------------------------------------------------------------------


def test_slice_covers_every_domain_in_the_matrix_mix(
    slice_rows: list[dict[str, Any]], public: frozenset[str]
) -> None:
    assert len(slice_rows) == 40 * len(DOMAINS)
    by_domain = Counter(r["domain"] for r in slice_rows)
    assert by_domain == {d: 40 for d in DOMAINS}
    for d in DOMAINS:
        mine = Counter(r["label"] for r in slice_rows if r["domain"] == d)
        assert {lab: mine[lab] for lab in LABELS} == quotas(d, 40)
    disagreements = 0
    for r in slice_rows:
        assert row_problem(r, require_labels=True) is None
        assert r["split"] == "test"
        m = ID.match(r["id"])
        assert m and m.group(1) == r["domain"]
        assert not row_texts(r) & public
        disagreements += check_row(Row.from_dict(r)).binary != r["binary_label"]
    assert disagreements == 0
    assert len({r["id"] for r in slice_rows}) == len(slice_rows)
    order = {d: i for i, d in enumerate(DOMAINS)}
    keys = [(order[r["domain"]], r["id"]) for r in slice_rows]
    assert keys == sorted(keys)


def test_quotas_follow_the_matrix() -> None:
    # math is (30, 30, 30, 50, 20)/160: 40 rows give 7.5, 7.5, 7.5, 12.5, 5 ->
    # floors 7, 7, 7, 12, 5 (38) and the two spare rows go to the first ties.
    assert quotas("math", 40) == {
        "EQUIV": 8,
        "PARA_SAFE": 8,
        "RELATED_UNSAFE": 7,
        "ADVERSARIAL": 12,
        "UNRELATED": 5,
    }
    # multilingual is (30, 20, 30, 40, 30)/150: 10 rows give 2, 1.33, 2, 2.67, 2.
    assert quotas("multilingual", 10) == {
        "EQUIV": 2,
        "PARA_SAFE": 1,
        "RELATED_UNSAFE": 2,
        "ADVERSARIAL": 3,
        "UNRELATED": 2,
    }
    for d in DOMAINS:
        for n in (1, 7, 40, 53):
            assert sum(quotas(d, n).values()) == n


def test_deterministic_in_the_secret(public: frozenset[str]) -> None:
    a = generate_slice("alpha", public, per_domain=12, domains=["math", "tool"])
    assert jsonl_bytes(a) == jsonl_bytes(
        generate_slice("alpha", public, per_domain=12, domains=["tool", "math"])
    )
    b = generate_slice("beta", public, per_domain=12, domains=["math", "tool"])
    assert jsonl_bytes(a) != jsonl_bytes(b)
    assert b"alpha" not in jsonl_bytes(a)

    # A larger slice with the same secret contains the smaller one.
    def content(rows: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
        return {(r["source"], r["query_a"], r["query_b"]) for r in rows}

    bigger = generate_slice("alpha", public, per_domain=20, domains=["math", "tool"])
    assert content(a) < content(bigger)


def test_public_texts_are_excluded(public: frozenset[str]) -> None:
    base = eligible_pool("qa_factual", public)
    assert base.n_public_overlap == 0
    victim = base.rows[0]
    # Publish one of its queries (other case and spacing): every pool row
    # containing that text leaves the eligible pool.
    text = f"  {str(victim['query_b']).upper()}  "
    banned = public | {normalise_text(text)}
    after = eligible_pool("qa_factual", banned)
    assert (
        0
        < after.n_public_overlap
        == sum(1 for r in base.rows if normalise_text(text) in row_texts(r))
    )
    assert all(normalise_text(text) not in row_texts(r) for r in after.rows)


def test_bad_arguments_and_small_pools(public: frozenset[str]) -> None:
    with pytest.raises(SliceError, match="secret seed must not be empty"):
        generate_slice("", public)
    with pytest.raises(SliceError, match="rows per domain must be"):
        generate_slice("x", public, per_domain=0)
    with pytest.raises(SliceError, match="unknown domain"):
        generate_slice("x", public, domains=["poetry"])
    with pytest.raises(SliceError, match=r"math: the held-out pool has \d+ eligible"):
        generate_slice("x", public, per_domain=300, domains=["math"])


def test_a_disagreeing_checker_stops_generation(
    monkeypatch: pytest.MonkeyPatch, public: frozenset[str]
) -> None:
    monkeypatch.setattr(slice_mod, "check_row", lambda row: Check(None, "undecided"))
    with pytest.raises(SliceError, match="its checker says None: undecided"):
        generate_slice("x", public, per_domain=5, domains=["math"])


# --- adversarial selection --------------------------------------------------------------------


class EvenLengthCache:
    """Serves iff query b has an even number of characters: wrong on a known subset."""

    name = "even-length"
    version = "test-1"

    def __init__(self) -> None:
        self.seen: list[Any] = []

    def __call__(self, pair: Pair) -> Verdict:
        self.seen.append(pair)
        return Verdict(is_hit=len(pair.b.query) % 2 == 0, tier_used="exact")


def test_against_keeps_what_the_cache_gets_wrong_first(public: frozenset[str]) -> None:
    cache = EvenLengthCache()
    domains = ["math", "conversational"]
    rows, record = generate_adversarial_slice(
        "s1", public, cache, module="tests:EvenLengthCache", per_domain=20, domains=domains
    )
    assert all(isinstance(p, Pair) for p in cache.seen)  # only ever two requests
    pools = {d: eligible_pool(d, public).rows for d in domains}
    assert record.n_candidates == len(cache.seen) == sum(len(p) for p in pools.values())

    def wrong(r: dict[str, Any]) -> bool:
        return (len(r["query_b"]) % 2 == 0) != (r["binary_label"] == "HIT")

    for d in domains:
        for label, n in quotas(d, 20).items():
            cands = [r for r in pools[d] if r["label"] == label]
            kept = [r for r in rows if r["domain"] == d and r["label"] == label]
            assert len(kept) == n
            n_wrong = sum(wrong(r) for r in cands)
            # Wrong candidates first: all kept rows are wrong, or every wrong one is kept.
            assert sum(wrong(r) for r in kept) == min(n, n_wrong)
    assert record.n_kept == len(rows) == 40
    assert record.n_kept_wrong == sum(wrong(r) for r in rows)
    assert record.error_rate == record.n_kept_wrong / 40
    assert (record.cache, record.version) == ("even-length", "test-1")
    plain = generate_slice("s1", public, per_domain=20, domains=domains)
    assert record.n_kept_wrong > sum(wrong(r) for r in plain)


# --- the command ---------------------------------------------------------------------------------


def test_generate_slice_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if len(SHARDS) != len(DOMAINS):
        pytest.skip("domains/*.jsonl are not all built")
    out = tmp_path / "slice.jsonl"
    argv = ["generate-slice", "--seed", "cmd", "--per-domain", "10", "--domain", "math"]
    assert cacheeval_cli.main([*argv, "--domain", "tool", "--out", str(out)]) == 0
    assert stat.S_IMODE(out.stat().st_mode) == 0o600  # the slice is private
    printed = capsys.readouterr().out
    assert f"20 slice rows, no text shared with {sum(sum(v) for v in MATRIX.values())}" in printed
    assert "math 10 (EQUIV 2, PARA_SAFE 2, RELATED_UNSAFE 2, ADVERSARIAL 3, UNRELATED 1)" in printed
    head = read_slice_header(out)
    assert head is not None and head["n_rows"] == 20 and head["against"] is None
    assert head["seed_sha256"] == slice_mod.seed_commitment("cmd")
    loaded = load_bench(out)
    assert len(loaded) == 20 and all(r.is_labelled and r.split == "test" for r in loaded)
    # The slice is a labelled benchmark: `cacheeval eval` grades a cache on it directly.
    report_json = tmp_path / "r.json"
    assert (
        cacheeval_cli.main(
            ["eval", "--bench", str(out), "--baseline", "always_hit",
             "--out", str(tmp_path / "r.md"), "--json", str(report_json)]
        )
        == 0
    )  # fmt: skip
    report = json.loads(report_json.read_text())
    assert report["headline"]["fhr"]["value"] == 1.0

    cache_file = tmp_path / "mycache.py"
    cache_file.write_text(
        "from cacheeval import Verdict\n"
        "class Picky:\n"
        "    version = '2.0'\n"
        "    def __init__(self, serve: bool = False):\n"
        "        self.serve = serve\n"
        "    def __call__(self, pair):\n"
        "        return Verdict(is_hit=self.serve)\n"
    )
    adv = tmp_path / "adv.jsonl"
    assert (
        cacheeval_cli.main(
            [*argv, "--out", str(adv), "--against", f"{cache_file}:Picky",
             "--cache-arg", "serve=true"]
        )
        == 0
    )  # fmt: skip
    printed = capsys.readouterr().out
    head = read_slice_header(adv)
    assert head is not None and head["against"]["version"] == "2.0"
    # A cache that always serves is wrong on exactly the MISS rows of the quota (6 of 10).
    assert head["against"]["n_kept_wrong"] == 6 and head["against"]["error_rate"] == 0.6
    assert "wrong on 6/10 kept rows (60.0%" in printed


def test_generate_slice_command_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "slice.jsonl"
    missing = tmp_path / "nope.jsonl"
    base = ["generate-slice", "--seed", "s", "--out", str(out)]
    assert cacheeval_cli.main([*base, "--public", str(missing)]) == 2
    assert f"{missing}: no such file" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "cb-math-0001", "split": "train"}\n')
    assert cacheeval_cli.main([*base, "--public", str(bad)]) == 2
    assert f"{bad}:1: missing field(s)" in capsys.readouterr().err
    assert cacheeval_cli.main([*base, "--cache-arg", "x=1"]) == 2
    assert "--cache-arg applies to --against" in capsys.readouterr().err
    assert cacheeval_cli.main([*base, "--against", "no_such_module_xyz"]) == 2
    assert "cannot import cache module" in capsys.readouterr().err
    assert cacheeval_cli.main([*base, "--pool-dir", str(tmp_path)]) == 2
    assert "no held-out fixtures for qa_factual" in capsys.readouterr().err
    assert not out.exists()
    assert HELDOUT_DIR.is_dir()


def test_an_entrants_cache_runs_sandboxed_away_from_the_pools(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--against`` is the maintainers' flow of running an entrant's cache on
    labelled candidates: the cache runs in bubblewrap with the held-out pools
    and private/ hidden (or not at all)."""
    if len(SHARDS) != len(DOMAINS):
        pytest.skip("domains/*.jsonl are not all built")
    cache_file = tmp_path / "peek.py"
    cache_file.write_text(
        "import os\n"
        "from cacheeval import Verdict\n"
        f"POOLS = {str(slice_mod.HELDOUT_DIR)!r}\n"
        "class Peek:\n"
        "    def __call__(self, pair):\n"
        "        if os.path.isdir(POOLS) and os.listdir(POOLS):\n"
        "            raise RuntimeError('saw the pools')\n"
        "        return Verdict(is_hit=True)\n"
    )
    out = tmp_path / "adv.jsonl"
    argv = ["generate-slice", "--seed", "s", "--per-domain", "10", "--domain", "math",
            "--out", str(out), "--against", f"{cache_file}:Peek"]  # fmt: skip
    code = cacheeval_cli.main(argv)
    err = capsys.readouterr().err
    if code == 2 and "--isolate" in err:
        pytest.skip(f"no bubblewrap here: {err.strip()}")
    assert code == 0, err
    head = read_slice_header(out)
    # It served everything (it never saw the pools): wrong exactly on the MISS rows.
    assert head is not None and head["against"]["n_kept_wrong"] == 6
