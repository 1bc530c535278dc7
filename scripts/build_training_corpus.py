"""Build the verified cache's training corpus, check it and its manifest.

    python -m scripts.build_training_corpus                   # check (exit 1 on a problem)
    python -m scripts.build_training_corpus --write-manifest  # rewrite the manifest

Builds every row of ``sources/training/`` (:mod:`cacheeval.pipeline.training_corpus`:
each domain's own generator, labels re-checked), checks the corpus shares neither a
family nor a normalised text with the dev and test rows of ``cachebench.jsonl`` or
the held-out pools, prints its size and make-up, and compares it with
``sources/training/manifest.json``, which it rewrites only with
``--write-manifest``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from cacheeval.pipeline.training_corpus import (
    MANIFEST_FILE,
    TRAINING_DIR,
    corpus,
    disjointness_problems,
    graded_reference,
    manifest,
)
from cacheeval.support.jsonio import dumps_pretty, loads, write_bytes_atomic
from cacheeval.support.layout import DOMAINS_DIR, REPO_ROOT


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--training-dir", type=Path, default=TRAINING_DIR)
    parser.add_argument("--bench", type=Path, default=REPO_ROOT / "cachebench.jsonl")
    parser.add_argument("--write-manifest", action="store_true")
    args = parser.parse_args(argv)
    try:
        rows = corpus(args.training_dir)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if not rows:
        print(f"error: {args.training_dir}: no training fixtures", file=sys.stderr)
        return 2
    graded, families = graded_reference(args.bench, DOMAINS_DIR)
    problems = disjointness_problems(rows, graded, families)
    for p in problems:
        print(f"not disjoint: {p}", file=sys.stderr)
    made = manifest(rows)
    print(
        f"training corpus: {made['rows']} rows, {made['families']} families, labels "
        f"{made['labels']}, HIT share {made['hit_share']}, ADVERSARIAL share "
        f"{made['adversarial_share']}; disjoint from {len(graded)} graded rows and "
        f"{len(families)} graded families: {not problems}"
    )
    path = args.training_dir / MANIFEST_FILE
    text = dumps_pretty(made)
    if args.write_manifest:
        write_bytes_atomic(path, text.encode("utf-8"))
        print(f"wrote {path}")
    elif not path.is_file() or loads(path.read_text(encoding="utf-8")) != made:
        print(f"{path} is missing or stale (rerun with --write-manifest)", file=sys.stderr)
        return 1
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
