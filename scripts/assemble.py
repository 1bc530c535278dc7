#!/usr/bin/env python3
"""Assemble the domain shards into cachebench.jsonl, the private test labels and
domains/manifest.json. Same as ``cacheeval build``; see cacheeval/pipeline/assemble.py."""

from __future__ import annotations

import sys

from cacheeval.pipeline.assemble import main

if __name__ == "__main__":
    sys.exit(main())
