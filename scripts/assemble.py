#!/usr/bin/env python3
"""Assemble the domain shards into cachebench.jsonl, the private test labels and
domains/manifest.json. Same as ``cacheeval build``; see cacheeval/pipeline/assemble.py."""

from __future__ import annotations

import sys
from pathlib import Path

# Run from a checkout without installing: make the repository importable.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cacheeval.pipeline.assemble import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
