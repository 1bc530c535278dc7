#!/usr/bin/env python3
"""Regenerate the computed tables of DATASET_CARD.md from the domain shards.

Every table of the card lives between a pair of marker comments::

    <!-- dataset-card:NAME:begin -->
    ... generated, do not edit ...
    <!-- dataset-card:NAME:end -->

and is recomputed from ``ROOT/domains/*.jsonl`` (assembled exactly as
``cacheeval build`` does, so the splits are the real ones); everything outside
the markers is prose and left alone. ``--check`` exits 1 when the card is
stale instead of rewriting it.

    python -m scripts.dataset_card            # rewrite the tables
    python -m scripts.dataset_card --check    # CI: is the card up to date?
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cacheeval.pipeline.assemble import build_dir
from cacheeval.pipeline.checks import BuildFailed
from cacheeval.pipeline.difficulty import content_key, load_calibration
from cacheeval.pipeline.domains import MATRIX
from cacheeval.pipeline.manifest import TIERS
from cacheeval.pipeline.splits import split_stats
from cacheeval.schema import (
    BINARY_LABELS,
    DIFFICULTIES,
    DOMAINS,
    HIT,
    HIT_LABELS,
    LABELS,
    POLICY_NO_CACHE,
    SPLITS,
    VERIFICATION_METHODS,
)
from cacheeval.support.jsonio import write_bytes_atomic
from cacheeval.support.layout import REPO_ROOT, difficulty_file
from cacheeval.verify import tier_of

CARD = "DATASET_CARD.md"
MARKER = re.compile(r"^<!-- dataset-card:([a-z_]+):(begin|end) -->\s*$")
#: Construction methods in the order the card lists them; others follow, sorted.
METHOD_ORDER: tuple[str, ...] = (
    "curated",
    "template",
    "paraphrase_rewrite",
    "adversarial_perturbation",
)


@dataclass(frozen=True)
class CardData:
    """What the tables are computed from: full rows (labels and split) of a build."""

    rows: list[dict[str, Any]]
    present: list[str]
    missing: list[str]
    calibrated: int  # rows whose difficulty comes from sources/difficulty.json


def load_card_data(
    root: Path,
    *,
    matrix: Mapping[str, Sequence[int]] = MATRIX,
    calibration_file: Path | None = None,
) -> CardData:
    """Assemble ``root/domains`` in memory (nothing is written). Raises
    BuildFailed (every problem, ``shard:LINE``) when the shards do not build."""
    build = build_dir(root / "domains", matrix=matrix)
    calibration = load_calibration(calibration_file or difficulty_file())
    calibrated = 0
    if calibration is not None:
        for r in build.rows:
            entry = calibration.entries.get(content_key(r))
            if entry is not None and entry.binary_label == r["binary_label"]:
                calibrated += 1
    return CardData(build.rows, build.present, build.missing, calibrated)


# --- tables ------------------------------------------------------------------------------


def _pct(n: int, total: int) -> str:
    return f"{100 * n / total:.1f}%" if total else "n/a"


def _table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return out


def scope(data: CardData) -> list[str]:
    n = len(data.rows)
    line = f"Computed from **{n:,}** rows in {len(data.present)} of {len(DOMAINS)} domain shards"
    if data.missing:
        return [line + f" (not yet in: {', '.join(data.missing)})."]
    return [line + "."]


def construction(data: CardData) -> list[str]:
    """Rows per domain and construction method."""
    counts = Counter((r["domain"], r["construction_method"]) for r in data.rows)
    seen = {m for _, m in counts}
    methods = [m for m in METHOD_ORDER if m in seen] + sorted(seen - set(METHOD_ORDER))
    body: list[list[object]] = []
    for d in data.present:
        cells = [counts[(d, m)] for m in methods]
        body.append([d, *cells, sum(cells)])
    totals = [sum(counts[(d, m)] for d in data.present) for m in methods]
    body.append(["**total**", *totals, sum(totals)])
    return _table(["domain", *[f"`{m}`" for m in methods], "rows"], body)


def labels(data: CardData) -> list[str]:
    """Rows per domain and label."""
    counts = Counter((r["domain"], r["label"]) for r in data.rows)
    body: list[list[object]] = []
    for d in data.present:
        cells = [counts[(d, lab)] for lab in LABELS]
        body.append([d, *cells, sum(cells)])
    totals = [sum(counts[(d, lab)] for d in data.present) for lab in LABELS]
    body.append(["**total**", *totals, sum(totals)])
    return _table(["domain", *LABELS, "rows"], body)


def balance(data: CardData) -> list[str]:
    """HIT/MISS after the policy override, and how many HIT-class rows it flips."""
    n = len(data.rows)
    by = Counter(r["binary_label"] for r in data.rows)
    flipped = sum(
        1
        for r in data.rows
        if r["label"] in HIT_LABELS and r["verification_method"] == POLICY_NO_CACHE
    )
    policy = sum(1 for r in data.rows if r["verification_method"] == POLICY_NO_CACHE)
    lines = _table(
        ["binary label", "rows", "share"], [[b, by[b], _pct(by[b], n)] for b in BINARY_LABELS]
    )
    lines += [
        "",
        f"{policy} rows are `{POLICY_NO_CACHE}`; {flipped} of them are EQUIV or PARA_SAFE pairs"
        " that the policy turns from HIT into MISS.",
    ]
    return lines


def splits(data: CardData) -> list[str]:
    """Rows per split, with their binary balance, and how the splits were made
    (:func:`cacheeval.pipeline.splits.split_stats`)."""
    body: list[list[object]] = []
    for s in SPLITS:
        rows = [r for r in data.rows if r["split"] == s]
        hits = sum(1 for r in rows if r["binary_label"] == HIT)
        body.append([s, len(rows), hits, len(rows) - hits, _pct(hits, len(rows))])
    stats = split_stats(data.rows)
    largest = stats["largest_groups"][0]["rows"] if stats["largest_groups"] else 0
    return [
        *_table(["split", "rows", "HIT", "MISS", "HIT share"], body),
        "",
        f"Splits are assigned by family group (`{stats['algorithm']}`): {stats['groups']} groups"
        f" of rows that share a template family or a normalised query text, the largest of"
        f" {largest} rows. {stats['shared_families']} families and {stats['shared_texts']}"
        " normalised query texts occur in more than one split; the worst domain × label cell"
        f" is {stats['max_cell_deviation_points']:g} points off its 50/25/25 share.",
    ]


def verification(data: CardData) -> list[str]:
    """Rows per verification tier and per method."""
    n = len(data.rows)
    tiers = Counter(tier_of(r["verification_method"]) for r in data.rows)
    methods = Counter(r["verification_method"] for r in data.rows)
    lines = _table(["tier", "rows", "share"], [[t, tiers[t], _pct(tiers[t], n)] for t in TIERS])
    lines += [""]
    lines += _table(
        ["method", "tier", "rows"],
        [[f"`{m}`", tier_of(m), methods[m]] for m in VERIFICATION_METHODS if methods[m]],
    )
    return lines


def difficulty(data: CardData) -> list[str]:
    """Rows per label and difficulty, and where the difficulty comes from."""
    counts = Counter((r["label"], r["difficulty"]) for r in data.rows)
    body: list[list[object]] = []
    for lab in LABELS:
        cells = [counts[(lab, d)] for d in DIFFICULTIES]
        body.append([lab, *cells, sum(cells)])
    totals = [sum(counts[(lab, d)] for lab in LABELS) for d in DIFFICULTIES]
    body.append(["**total**", *totals, sum(totals)])
    n = len(data.rows)
    if data.calibrated == n:
        source = "Every row's difficulty is the calibrated one (`sources/difficulty.json`)."
    elif data.calibrated:
        source = (
            f"{data.calibrated} of {n} rows carry the calibrated difficulty; the rest still"
            " carry the provisional lexical rule (rerun `scripts/recalibrate_difficulty.py`)."
        )
    else:
        source = (
            "No row carries a calibrated difficulty yet: these are the provisional lexical"
            " buckets (run `scripts/recalibrate_difficulty.py`)."
        )
    return [*_table(["label", *DIFFICULTIES, "rows"], body), "", source]


SECTIONS: dict[str, Callable[[CardData], list[str]]] = {
    "scope": scope,
    "construction": construction,
    "labels": labels,
    "balance": balance,
    "splits": splits,
    "verification": verification,
    "difficulty": difficulty,
}


# --- markers ------------------------------------------------------------------------------


class CardError(ValueError):
    """A marker problem in the card; the message starts ``path:LINE:``."""


def render(text: str, data: CardData, *, path: str = CARD) -> str:
    """``text`` with the body of every marker pair replaced by its fresh table.

    Raises :class:`CardError` naming ``path:LINE`` for an unknown section, an
    end without its begin, a begin inside another section or never closed.
    """
    out: list[str] = []
    open_name: str | None = None
    open_line = 0
    for lineno, line in enumerate(text.splitlines(keepends=True), 1):
        m = MARKER.match(line)
        if m is None:
            if open_name is None:
                out.append(line)
            continue
        name, edge = m.groups()
        if name not in SECTIONS:
            raise CardError(
                f"{path}:{lineno}: unknown section {name!r} (expected one of {', '.join(SECTIONS)})"
            )
        if edge == "begin":
            if open_name is not None:
                raise CardError(
                    f"{path}:{lineno}: section {name!r} begins inside {open_name!r} "
                    f"(opened on line {open_line})"
                )
            out.append(line)
            out += [x + "\n" for x in SECTIONS[name](data)]
            open_name, open_line = name, lineno
        else:
            if open_name != name:
                raise CardError(f"{path}:{lineno}: end of {name!r} without its begin")
            out.append(line)
            open_name = None
    if open_name is not None:
        raise CardError(f"{path}:{open_line}: section {open_name!r} is never closed")
    return "".join(out)


def update_card(card: Path, data: CardData, *, check: bool = False) -> int:
    """Rewrite ``card``'s tables from ``data`` (or, with ``check``, only say
    whether they are stale). Returns the exit status: 0 up to date or
    rewritten, 1 stale under ``check``. Raises CardError / OSError."""
    text = card.read_text(encoding="utf-8")
    fresh = render(text, data, path=str(card))
    if fresh == text:
        print(f"{card}: up to date ({len(data.rows)} rows)")
        return 0
    if check:
        print(f"{card}: stale; run python -m scripts.dataset_card", file=sys.stderr)
        return 1
    write_bytes_atomic(card, fresh.encode("utf-8"))
    print(f"{card}: tables regenerated from {len(data.rows)} rows")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Regenerate the tables of DATASET_CARD.md.")
    parser.add_argument("--root", type=Path, default=REPO_ROOT, help="repository root")
    parser.add_argument("--card", type=Path, default=None, help=f"the card (default ROOT/{CARD})")
    parser.add_argument("--check", action="store_true", help="exit 1 if the card is stale")
    args = parser.parse_args(argv)
    card: Path = args.card or args.root / CARD
    try:
        return update_card(card, load_card_data(args.root), check=args.check)
    except BuildFailed as e:
        print(
            f"dataset card: the shards do not build: {len(e.violations)} problem(s)",
            file=sys.stderr,
        )
        for v in e.violations:
            print(f"  {v}", file=sys.stderr)
        return 2
    except (CardError, OSError, ValueError) as e:
        print(f"dataset card: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
