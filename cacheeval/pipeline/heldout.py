"""Held-out pools: fixture families written for the private slice only.

``sources/heldout/<domain>/`` holds, for each of the ten domains, hand-written
fixture families in exactly the format of that domain's public fixtures
(``sources/<domain>/``, documented in :mod:`cacheeval.generators`). No public
generator reads them and no row built from them is in ``domains/*.jsonl``:
they are the families :mod:`cacheeval.benches.slice` draws the private slice from.

:func:`pool` builds a domain's pool with the domain's own generator pointed at
the held-out directory, so a held-out row is made, checked and verified by
the same code as a public row (the generator re-runs the checker of
:mod:`cacheeval.verify` on every row and refuses a disagreement). Only the
matrix's label counts are not enforced: a pool is larger than its share of
the slice, and the slice picks the label mix (:func:`cacheeval.benches.slice.quotas`).

``source`` of a pool row names its held-out fixture
(``sources/heldout/<domain>/<file>#<family>``), never a public one.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from ..support.layout import HELDOUT_DIR
from .domains import SPECS
from .generate import generate_shard

__all__ = ["HELDOUT_DIR", "PoolError", "pool"]


class PoolError(ValueError):
    """A held-out fixture is missing or broken (the message names ``path:LINE``)."""


#: Built pools of this process, keyed by what they were built from.
_BUILT: dict[tuple[str, ...], list[dict[str, Any]]] = {}


def _fingerprint(domain: str, heldout_dir: Path) -> tuple[str, ...]:
    """The pool's inputs: the domain and every held-out file's path, size and
    modification time (an edited fixture builds afresh)."""
    files = sorted(p for p in heldout_dir.rglob("*") if p.is_file())
    return (domain, *(f"{p}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in files))


def pool(domain: str, heldout_dir: Path = HELDOUT_DIR) -> list[dict[str, Any]]:
    """Every row of ``domain``'s held-out families (shard rows: no ``split``),
    built and verified by the domain's generator (once per process and set of
    fixture files; callers get their own copy). Raises :class:`PoolError`."""
    if domain not in SPECS:
        raise PoolError(f"unknown domain {domain!r}")
    folder = heldout_dir / domain
    if not folder.is_dir():
        raise PoolError(f"{folder}: no held-out fixtures for {domain}")
    key = _fingerprint(domain, heldout_dir)
    if key not in _BUILT:
        _BUILT[key] = _build(domain, heldout_dir)
    return copy.deepcopy(_BUILT[key])


def _build(domain: str, heldout_dir: Path) -> list[dict[str, Any]]:
    folder = heldout_dir / domain
    try:
        rows = generate_shard(domain, folder, check_matrix=False)
    except (ValueError, KeyError, OSError) as e:  # FixtureError is a ValueError
        raise PoolError(f"{domain} held-out pool: {e}") from None
    if not rows:
        raise PoolError(f"{folder}: the held-out fixtures give no rows")
    return rows
