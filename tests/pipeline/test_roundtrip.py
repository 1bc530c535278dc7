"""The committed data is reproducible: running every existing generator and
assemble from scratch gives byte-identical shards, cachebench.jsonl and
domains/manifest.json (and the private labels file, when present locally).

Same as ``cacheeval build --check``. Skips, saying why, until a shard is committed.
"""

from __future__ import annotations

import pytest

from cacheeval.pipeline.assemble import check_build
from cacheeval.pipeline.shards import present_domains
from cacheeval.support.layout import REPO_ROOT


def test_committed_files_equal_a_fresh_build() -> None:
    if not present_domains(REPO_ROOT / "domains"):
        pytest.skip("no domain shard is committed yet (domains/<domain>.jsonl)")
    notes, diffs = check_build(REPO_ROOT, REPO_ROOT)
    assert diffs == [], (
        "committed files differ from a fresh build (run the generators, then "
        "`cacheeval build`, and commit):\n  " + "\n  ".join(diffs) + "\n" + "\n".join(notes)
    )
