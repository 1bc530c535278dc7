"""Write reports/view/index.html: the per-pair viewer (``cacheeval view``) of
the reference caches on the test split, one column per cache.

Inputs (written earlier in scripts/main.sh): the reference caches' test-split
predictions in reports/reference_predictions/ (scripts/run_shift.py), and
cachebench.jsonl with the git-ignored private/test_labels.jsonl
(scripts/assemble.py). The page holds no timestamp and no absolute path: the
same inputs give the same bytes.

    python -m scripts.make_view
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from cacheeval.cli import main as cacheeval_main

REPO = Path(__file__).resolve().parents[1]
TITLE = "CacheEval: the reference caches, pair by pair, on the test split"
#: Columns first, by file stem; the other files follow in name order.
FIRST = ("verified-cache", "gptcache-minilm-0-80-fast-path")


def ordered(files: Sequence[Path]) -> list[Path]:
    """The predictions files, :data:`FIRST` first, then the rest by name.

    >>> [p.name for p in ordered([Path("b.jsonl"), Path("verified-cache.jsonl"), Path("a.jsonl")])]
    ['verified-cache.jsonl', 'a.jsonl', 'b.jsonl']
    """
    rank = {stem: i for i, stem in enumerate(FIRST)}
    return sorted(files, key=lambda p: (rank.get(p.stem, len(rank)), p.name))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reports", type=Path, default=REPO / "reports")
    parser.add_argument("--bench", type=Path, default=REPO / "cachebench.jsonl")
    parser.add_argument("--labels", type=Path, default=REPO / "private" / "test_labels.jsonl")
    parser.add_argument("--out", type=Path, help="default: REPORTS/view/index.html")
    args = parser.parse_args(argv)
    folder = args.reports / "reference_predictions"
    files = ordered(list(folder.glob("*.jsonl")))
    if not files:
        print(f"{folder}: no predictions files (run scripts/run_shift.py first)", file=sys.stderr)
        return 2
    out = args.out or args.reports / "view" / "index.html"
    return cacheeval_main(
        [
            "view",
            *map(str, files),
            "--bench",
            str(args.bench),
            "--split",
            "test",
            "--labels",
            str(args.labels),
            "--title",
            TITLE,
            "--out",
            str(out),
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
