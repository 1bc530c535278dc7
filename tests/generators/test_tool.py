"""The tool-domain shard: counts, determinism, verification, uniqueness,
policy rows, counterbalance and fixture error messages."""

from __future__ import annotations

import collections
import datetime
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cacheeval.dataset import row_problem
from cacheeval.generators import tool
from cacheeval.pipeline.domains import MATRIX
from cacheeval.pipeline.generate import generate_shard
from cacheeval.schema import HIT, HIT_LABELS, LABELS, MISS, POLICY_NO_CACHE, Row
from cacheeval.support.layout import REPO_ROOT, SOURCES_DIR
from cacheeval.verify import check_row
from cacheeval.verify.textnorm import normalize_answer
from cacheeval.verify.tool import NEVER_CACHE, TOOL_POLICIES


@pytest.fixture(scope="module")
def rows() -> list[dict[str, Any]]:
    return generate_shard("tool")


@pytest.fixture(scope="module")
def library() -> tool.Library:
    return tool.load_library(SOURCES_DIR / "tool")


def side(r: dict[str, Any], s: str) -> str:
    return json.dumps(
        [r[f"query_{s}"], r[f"context_{s}"], r[f"system_prompt_{s}"], r[f"tools_{s}"]]
    )


def test_label_counts_match_the_matrix(rows: list[dict[str, Any]]) -> None:
    counts = collections.Counter(r["label"] for r in rows)
    assert tuple(counts[label] for label in LABELS) == MATRIX["tool"]
    assert len(rows) == 280


def test_binary_balance_and_policy_rows(rows: list[dict[str, Any]]) -> None:
    binary = collections.Counter(r["binary_label"] for r in rows)
    assert binary == {HIT: 90, MISS: 190}
    policy_hit_class = [
        r for r in rows if r["verification_method"] == POLICY_NO_CACHE and r["label"] in HIT_LABELS
    ]
    # 30 same-request mutation/live-read rows show the rule; the other 90 EQUIV and
    # PARA_SAFE rows use cacheable tools, keeping the dataset at >= 640 HIT rows.
    assert len(policy_hit_class) == 30


def test_policy_rows_are_exactly_the_rows_with_a_never_cache_call(
    rows: list[dict[str, Any]], library: tool.Library
) -> None:
    policy_names = {
        e["definition"]["name"]: e["definition"]["policy"]
        for e in library.tools.values()
        if e["definition"]["policy"] in NEVER_CACHE
    }
    for r in rows:
        p = r["verification_payload"]
        calls = [p.get("call_a"), p.get("call_b")]
        kinds = {policy_names[c["name"]] for c in calls if c and c["name"] in policy_names}
        if r["verification_method"] == POLICY_NO_CACHE:
            assert p["kind"] == "policy" and kinds, r["id"]
            assert p["policy"] == ("mutation" if "mutation" in kinds else "time_sensitive")
        else:
            assert p["kind"] == "tool_call" and not kinds, r["id"]


def test_enough_subcategories(rows: list[dict[str, Any]]) -> None:
    subs = collections.Counter(r["subcategory"] for r in rows)
    assert len(subs) >= 8
    # every MISS axis the task names is present
    for axis in (
        "direction_swap",
        "meridiem_flip",
        "amount_change",
        "state_flip",
        "date_shift",
        "unit_flip",
        "toolset_change",
        "schema_change",
        "irrelevance",
    ):
        assert subs[axis] >= 1, axis


def test_every_row_is_valid_and_verifies(rows: list[dict[str, Any]]) -> None:
    disagreements = []
    for r in rows:
        data = {**r, "split": "train"}
        assert row_problem(data, require_labels=True) is None, r["id"]
        got = check_row(Row.from_dict(data))
        if got.binary != r["binary_label"]:
            disagreements.append((r["id"], got))
    assert disagreements == []


def test_methods_follow_the_documented_rule(rows: list[dict[str, Any]]) -> None:
    for r in rows:
        p = r["verification_payload"]
        if r["verification_method"] == POLICY_NO_CACHE:
            continue
        differs = r["tools_a"] != r["tools_b"] or p["call_a"] is None or p["call_b"] is None
        assert r["verification_method"] == ("json_schema" if differs else "canonical_tool_call")


def test_expected_answers_agree_exactly_when_the_calls_do(rows: list[dict[str, Any]]) -> None:
    for r in rows:
        same = r["expected_answer_a"] == r["expected_answer_b"]
        assert same == (r["label"] in HIT_LABELS), r["id"]


def test_ids_rationales_and_pairs_are_unique(rows: list[dict[str, Any]]) -> None:
    assert [r["id"] for r in rows] == [f"cb-tool-{i:04d}" for i in range(1, len(rows) + 1)]
    rationales = [normalize_answer(r["rationale"]) for r in rows]
    assert len(set(rationales)) == len(rows)
    seen: set[tuple[str, str]] = set()
    for r in rows:
        a, b = side(r, "a"), side(r, "b")
        assert a != b, r["id"]
        assert (a, b) not in seen and (b, a) not in seen, r["id"]
        seen.add((a, b))


def test_provenance_fields(rows: list[dict[str, Any]]) -> None:
    allowed = {"curated", "template", "adversarial_perturbation", "paraphrase_rewrite"}
    for r in rows:
        assert r["construction_method"] in allowed
        path, _, key = r["source"].partition("#")
        assert (REPO_ROOT / path).is_file() and key, r["source"]
        assert r["real_world_grounding"] and r["subcategory"]
    assert {r["construction_method"] for r in rows if r["label"] == "ADVERSARIAL"} == {
        "adversarial_perturbation"
    }


def test_tool_definitions_are_valid_json_schema(rows: list[dict[str, Any]]) -> None:
    import jsonschema

    distinct = {
        json.dumps(t, sort_keys=True)
        for r in rows
        for t in (r["tools_a"] or []) + (r["tools_b"] or [])
    }
    assert len(distinct) >= 15
    for text in sorted(distinct):
        t = json.loads(text)
        assert set(t) == {"name", "description", "policy", "parameters"}
        assert t["policy"] in TOOL_POLICIES
        jsonschema.Draft202012Validator.check_schema(t["parameters"])


def test_the_authored_request_sits_on_both_sides(rows: list[dict[str, Any]]) -> None:
    """Sides are swapped on a seeded coin, so 'side a is the authored request'
    is no cue: within each pair label the family request is query_a in some
    rows and query_b in others."""
    base = set()
    for name in tool.FAMILY_FILES:
        data = json.loads((SOURCES_DIR / "tool" / name).read_text(encoding="utf-8"))
        base |= {f["q"] for f in data["families"]}
    for label in ("EQUIV", "PARA_SAFE", "RELATED_UNSAFE", "ADVERSARIAL"):
        group = [r for r in rows if r["label"] == label and r["query_a"] != r["query_b"]]
        on_a = sum(r["query_a"] in base for r in group) / len(group)
        on_b = sum(r["query_b"] in base for r in group) / len(group)
        assert 0.25 <= on_a <= 0.75 and 0.25 <= on_b <= 0.75, (label, on_a, on_b)


def test_flip_cues_also_appear_on_both_sides_of_hit_rows(rows: list[dict[str, Any]]) -> None:
    """Counterbalance: what flips MISS rows also occurs unchanged in HIT rows.

    Only rows whose verdict the calls decide count: a policy row is MISS
    because of its tool's definition, whatever its text."""

    def tokens(text: str) -> set[str]:
        return set(re.findall(r"[\w$%']+", text.lower()))

    decided = [r for r in rows if r["verification_method"] != POLICY_NO_CACHE]
    shared_in_hits: set[str] = set()
    for r in decided:
        if r["binary_label"] == HIT:
            shared_in_hits |= tokens(r["query_a"]) & tokens(r["query_b"])
    cues = [
        "pm", "am", "20%", "2025", "spanish", "tokyo", "ireland", "brazil", "japan", "iron",
        "neon", "double", "three", "us", "90", "celsius", "miles", "german", "london", "chicago",
    ]  # fmt: skip
    missing = [c for c in cues if c not in shared_in_hits]
    assert missing == []
    # and those cues do flip MISS rows somewhere
    flipped: set[str] = set()
    for r in decided:
        if r["label"] == "ADVERSARIAL":
            flipped |= tokens(r["query_a"]) ^ tokens(r["query_b"])
    assert {"pm", "am", "20%", "2025", "double", "spanish", "ireland", "neon"} <= flipped


def test_tool_sets_and_system_prompts_vary_on_both_binary_labels(
    rows: list[dict[str, Any]],
) -> None:
    counts = collections.Counter(
        (
            r["binary_label"],
            r["tools_a"] != r["tools_b"],
            r["system_prompt_a"] != r["system_prompt_b"],
        )
        for r in rows
    )
    tools_differ = {
        b: sum(v for (bb, t, _), v in counts.items() if bb == b and t) for b in (HIT, MISS)
    }
    sys_differ = {
        b: sum(v for (bb, _, s), v in counts.items() if bb == b and s) for b in (HIT, MISS)
    }
    assert tools_differ[HIT] >= 12 and tools_differ[MISS] >= 12
    assert sys_differ[HIT] >= 5 and sys_differ[MISS] >= 5


def test_system_prompt_dates_name_the_right_weekday(library: tool.Library) -> None:
    months = {m: i for i, m in enumerate(
        ["January", "February", "March", "April", "May", "June", "July", "August",
         "September", "October", "November", "December"], 1)}  # fmt: skip
    checked = 0
    for text in library.systems.values():
        for m in re.finditer(r"(\w+day), (\d{1,2}) (\w+) (\d{4})", text):
            d = datetime.date(int(m[4]), months[m[3]], int(m[2]))
            assert d.strftime("%A") == m[1], text
            checked += 1
        for m in re.finditer(r"(\d{4})-(\d{2})-(\d{2}) \((\w+day)\)", text):
            d = datetime.date(int(m[1]), int(m[2]), int(m[3]))
            assert d.strftime("%A") == m[4], text
            checked += 1
    assert checked >= 6


# --- fixture errors -------------------------------------------------------------------


def broken_sources(tmp_path: Path, name: str, old: str, new: str) -> Path:
    root = tmp_path / "sources"
    shutil.copytree(SOURCES_DIR / "tool", root / "tool")
    path = root / "tool" / name
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1
    path.write_text(text.replace(old, new), encoding="utf-8")
    return root


def test_unknown_bundle_names_file_and_line(tmp_path: Path) -> None:
    root = broken_sources(
        tmp_path,
        "home.json",
        '"key": "timer_eggs", "bundle": "kitchen"',
        '"key": "timer_eggs", "bundle": "kitchn"',
    )
    with pytest.raises(
        tool.FixtureError, match=r"home\.json:\d+: timer_eggs: unknown bundle 'kitchn'"
    ):
        tool.generate(root / "tool")


def test_bad_json_names_file_and_line(tmp_path: Path) -> None:
    root = broken_sources(
        tmp_path, "travel.json", '"key": "hotels_tokyo",', '"key": "hotels_tokyo"'
    )
    with pytest.raises(tool.FixtureError, match=r"travel\.json:\d+: not valid JSON"):
        tool.generate(root / "tool")


def test_invalid_call_names_file_and_line(tmp_path: Path) -> None:
    root = broken_sources(
        tmp_path,
        "errands.json",
        '{"value": 10, "from_unit": "mi", "to_unit": "km"}',
        '{"value": 10, "from_unit": "miles", "to_unit": "km"}',
    )
    with pytest.raises(
        tool.FixtureError, match=r"errands\.json:\d+: units_km_mi: call .* is invalid"
    ):
        tool.generate(root / "tool")


def test_label_contradicting_the_calls_is_refused(tmp_path: Path) -> None:
    # an ADVERSARIAL variant whose call equals the family's call would check as HIT
    root = broken_sources(
        tmp_path,
        "home.json",
        '"args": {"room": "kitchen", "state": "on"}',
        '"args": {"room": "kitchen", "state": "off"}',
    )
    with pytest.raises(
        tool.FixtureError,
        match=r"home\.json:\d+: lights_kitchen_off: ADVERSARIAL row checks as HIT",
    ):
        tool.generate(root / "tool")


def test_script_reports_fixture_errors_without_a_traceback(tmp_path: Path) -> None:
    root = broken_sources(
        tmp_path,
        "policy.json",
        '"key": "stock_msft", "bundle": "finance"',
        '"key": "stock_msft", "bundle": 7',
    )
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "cacheeval", "generate", "tool", "--sources-dir", str(root),
         "--out-dir", str(out)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
    )  # fmt: skip
    assert done.returncode == 2
    assert re.search(r"policy\.json:\d+: stock_msft: tools must be a bundle name", done.stderr)
    assert "Traceback" not in done.stderr
    assert not out.exists()


def test_no_rationale_sentence_repeats_across_rows(rows: list[dict[str, Any]]) -> None:
    # The policy sentence names both queries, so rows of one family stay distinct.
    seen: dict[str, str] = {}
    for r in rows:
        for sentence in re.split(r"(?<=[.!?”])\s+(?=[A-Z“])", r["rationale"]):
            assert sentence not in seen, (seen.get(sentence), r["id"], sentence)
            seen[sentence] = r["id"]
