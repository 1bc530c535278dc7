#!/usr/bin/env python3
"""Recalibrate the difficulty of every row, then regenerate the shards and rebuild.

Scores every labelled row with the five-scorer ensemble (all-MiniLM-L6-v2,
multilingual e5-small, character 3-gram TF-IDF, token Jaccard, edit
similarity), writes ``sources/difficulty.json``, regenerates
``domains/<domain>.jsonl`` with the calibrated difficulty, rebuilds
``cachebench.jsonl`` and ``domains/manifest.json``, writes
``reports/DIFFICULTY.md`` and prints it, then refreshes the tables of
DATASET_CARD.md (scripts/dataset_card.py) when the root has one. Nothing is
written unless the regenerated shards assemble cleanly; a second run writes
identical bytes.
See cacheeval/pipeline/recalibrate.py.

    python -m scripts.recalibrate_difficulty                 # this checkout
    python -m scripts.recalibrate_difficulty --root /tmp/copy --sources-dir sources
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from cacheeval.pipeline.checks import BuildFailed
from cacheeval.pipeline.difficulty import DIFFICULTY_PATH, DifficultyFileError
from cacheeval.pipeline.recalibrate import recalibrate
from cacheeval.support.layout import REPO_ROOT


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--root",
        type=Path,
        default=REPO_ROOT,
        help="where domains/, sources/difficulty.json, the build and reports/ live "
        "(default: this checkout)",
    )
    parser.add_argument(
        "--sources-dir",
        type=Path,
        default=None,
        help="the generators' fixtures (default: ROOT/sources)",
    )
    parser.add_argument(
        "--require-all", action="store_true", help="fail unless all ten domain shards exist"
    )
    args = parser.parse_args(argv)
    # The models are installed as packages; never reach a hub.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

    from adapters.difficulty_scorers import ensemble, held_out

    try:
        outcome = recalibrate(
            args.root,
            ensemble(),
            held_out(),
            sources_dir=args.sources_dir,
            require_all=args.require_all,
        )
    except BuildFailed as e:
        print(
            f"recalibration aborted, nothing written: {len(e.violations)} problem(s)",
            file=sys.stderr,
        )
        for v in e.violations:
            print(f"  {v}", file=sys.stderr)
        return 1
    except (DifficultyFileError, OSError, ValueError) as e:
        print(f"recalibration failed: {e}", file=sys.stderr)
        return 1
    print(outcome.report)
    for note in outcome.notes:
        print(f"note: {note}")
    if outcome.written:
        for rel in outcome.written:
            print(f"wrote {rel}")
    else:
        print("every output already up to date")
    return _refresh_card(args.root)


def _refresh_card(root: Path) -> int:
    """Regenerate DATASET_CARD.md's tables (its difficulty table moved), if there is one."""
    from scripts.dataset_card import CARD, CardError, load_card_data, update_card

    card = root / CARD
    if not card.is_file():
        return 0
    try:
        return update_card(card, load_card_data(root, calibration_file=root / DIFFICULTY_PATH))
    except (BuildFailed, CardError, OSError, ValueError) as e:
        print(f"dataset card not updated: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
