"""scripts/dataset_card.py: the tables between the markers of DATASET_CARD.md are
computed from the shards (hand-checked on synthetic shards), the prose around
them is kept, marker mistakes name file:line, and the committed card is current."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cacheeval.pipeline.difficulty import FORMAT, content_key
from cacheeval.support.jsonio import dumps_pretty
from scripts import dataset_card as dc

from .pipeline.synthetic import SMALL_MATRIX, write_shards

REPO = Path(__file__).resolve().parents[1]

CARD = """# Card

Prose before.

<!-- dataset-card:scope:begin -->
stale scope
<!-- dataset-card:scope:end -->

Between the tables.

<!-- dataset-card:construction:begin -->
<!-- dataset-card:construction:end -->
<!-- dataset-card:labels:begin -->
<!-- dataset-card:labels:end -->
<!-- dataset-card:balance:begin -->
old numbers
more old numbers
<!-- dataset-card:balance:end -->
<!-- dataset-card:splits:begin -->
<!-- dataset-card:splits:end -->
<!-- dataset-card:verification:begin -->
<!-- dataset-card:verification:end -->
<!-- dataset-card:difficulty:begin -->
<!-- dataset-card:difficulty:end -->

Prose after.
"""


@pytest.fixture
def data(tmp_path: Path) -> dc.CardData:
    write_shards(tmp_path, SMALL_MATRIX)
    return dc.load_card_data(
        tmp_path, matrix=SMALL_MATRIX, calibration_file=tmp_path / "no-calibration.json"
    )


def _section(text: str, name: str) -> list[str]:
    lines = text.splitlines()
    start = lines.index(f"<!-- dataset-card:{name}:begin -->")
    end = lines.index(f"<!-- dataset-card:{name}:end -->")
    return lines[start + 1 : end]


def test_tables_on_synthetic_shards_by_hand(data: dc.CardData) -> None:
    out = dc.render(CARD, data)
    assert _section(out, "scope") == [
        "Computed from **43** rows in 3 of 10 domain shards (not yet in: qa_open, code, "
        "conversational, tool, personalized, multi_turn, multilingual)."
    ]
    # Every synthetic row is lm_generated: one method column.
    assert _section(out, "construction") == [
        "| domain | `lm_generated` | rows |",
        "|---|---|---|",
        "| qa_factual | 14 | 14 |",
        "| math | 14 | 14 |",
        "| creative | 15 | 15 |",
        "| **total** | 43 | 43 |",
    ]
    assert _section(out, "labels")[2:] == [
        "| qa_factual | 4 | 3 | 3 | 2 | 2 | 14 |",
        "| math | 2 | 2 | 3 | 5 | 2 | 14 |",
        "| creative | 3 | 3 | 3 | 2 | 4 | 15 |",
        "| **total** | 9 | 8 | 9 | 9 | 8 | 43 |",
    ]
    # HIT: qa_factual 4 + 3, math 2 + 2; creative is all policy (its 3 + 3 HIT-class rows flip).
    assert _section(out, "balance") == [
        "| binary label | rows | share |",
        "|---|---|---|",
        "| HIT | 11 | 25.6% |",
        "| MISS | 32 | 74.4% |",
        "",
        "15 rows are `policy_no_cache`; 6 of them are EQUIV or PARA_SAFE pairs that the policy "
        "turns from HIT into MISS.",
    ]
    section = _section(out, "splits")
    splits = section[2:5]
    assert [row.split(" | ")[:2] for row in splits] == [
        ["| train", "19"],
        ["| dev", "14"],
        ["| test", "10"],
    ]
    assert sum(int(r.split(" | ")[2]) for r in splits) == 11  # HIT rows over the splits
    # 43 rows in 9 synthetic families of at most 5 rows, packed whole.
    assert section[5:] == [
        "",
        "Splits are assigned by family group (`family-group-pack/1`): 9 groups of rows that"
        " share a template family or a normalised query text, the largest of 5 rows. 0 families"
        " and 0 normalised query texts occur in more than one split; the worst domain × label"
        " cell is 50 points off its 50/25/25 share.",
    ]
    verification = _section(out, "verification")
    assert "| deterministic | 43 | 100.0% |" in verification
    assert "| rubric | 0 | 0.0% |" in verification
    assert "| `exact_match` | deterministic | 28 |" in verification
    assert "| `policy_no_cache` | deterministic | 15 |" in verification
    difficulty = _section(out, "difficulty")
    assert difficulty[-1].startswith("No row carries a calibrated difficulty yet")
    assert difficulty[-3].endswith("| 43 |")


def test_prose_is_kept_and_rendering_is_idempotent(data: dc.CardData) -> None:
    out = dc.render(CARD, data)
    assert "stale scope" not in out and "old numbers" not in out
    outside = [line for line in out.splitlines() if not line.startswith(("|", "<!--"))]
    for prose in ("# Card", "Prose before.", "Between the tables.", "Prose after."):
        assert prose in outside
    assert dc.render(out, data) == out


def test_difficulty_section_counts_calibrated_rows(tmp_path: Path) -> None:
    shards = write_shards(tmp_path, SMALL_MATRIX)
    rows = shards["math"][:4]
    entries = {
        content_key(r): {"difficulty": "hard", "n_correct": 0, "binary_label": r["binary_label"]}
        for r in rows
    }
    calib = tmp_path / "difficulty.json"
    calib.write_text(dumps_pretty({"format": FORMAT, "entries": dict(sorted(entries.items()))}))
    data = dc.load_card_data(tmp_path, matrix=SMALL_MATRIX, calibration_file=calib)
    assert data.calibrated == 4
    assert _section(dc.render(CARD, data), "difficulty")[-1].startswith(
        "4 of 43 rows carry the calibrated difficulty"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("x\n<!-- dataset-card:nope:begin -->\n", r"card\.md:2: unknown section 'nope'"),
        ("<!-- dataset-card:scope:end -->\n", r"card\.md:1: end of 'scope' without its begin"),
        (
            "<!-- dataset-card:scope:begin -->\n<!-- dataset-card:splits:begin -->\n",
            r"card\.md:2: section 'splits' begins inside 'scope' \(opened on line 1\)",
        ),
        ("a\nb\n<!-- dataset-card:splits:begin -->\nc\n", r"card\.md:3: section 'splits' is never"),
    ],
)
def test_marker_mistakes_name_the_line(data: dc.CardData, text: str, message: str) -> None:
    with pytest.raises(dc.CardError, match=message):
        dc.render(text, data, path="card.md")


def test_update_card_check_and_write(tmp_path: Path, data: dc.CardData) -> None:
    card = tmp_path / "CARD.md"
    card.write_text(CARD)
    assert dc.update_card(card, data, check=True) == 1
    assert card.read_text() == CARD  # --check never writes
    assert dc.update_card(card, data) == 0
    assert card.read_text() == dc.render(CARD, data)
    assert dc.update_card(card, data, check=True) == 0


def test_a_broken_shard_is_reported_with_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_shards(tmp_path, {"math": (30, 30, 30, 50, 20)})
    shard = tmp_path / "domains" / "math.jsonl"
    lines = shard.read_text().splitlines()
    row = json.loads(lines[2])
    row["label"] = "MAYBE"
    lines[2] = json.dumps(row)
    shard.write_text("\n".join(lines) + "\n")
    (tmp_path / "DATASET_CARD.md").write_text(CARD)
    assert dc.main(["--root", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "the shards do not build" in err
    assert "math.jsonl:3" in err and "MAYBE" in err


def test_the_committed_card_is_current() -> None:
    card = REPO / dc.CARD
    if not card.is_file() or not (REPO / "domains").is_dir():
        pytest.skip("no DATASET_CARD.md or shards in this checkout")
    text = card.read_text(encoding="utf-8")
    assert dc.render(text, dc.load_card_data(REPO)) == text, (
        "DATASET_CARD.md is stale: run `python -m scripts.dataset_card` and commit it"
    )
