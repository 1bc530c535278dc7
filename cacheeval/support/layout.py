"""The bottom layer of the dataset code: where things live in the repository,
how random choices are seeded, and which difficulty calibration is in effect.

Standard library only, and it imports nothing else from :mod:`cacheeval`, so
the generators, the pipeline, the held-out pools and the slice can all use it
without importing one another.

>>> stable_seed("math", 3) == stable_seed("math", "3")
True
>>> rng("split-pack").random() == rng("split-pack").random()
True
"""

from __future__ import annotations

import hashlib
import os
import random
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

#: The checkout this package was imported from.
REPO_ROOT = Path(__file__).resolve().parents[2]


def display_path(path: str | os.PathLike[str]) -> str:
    """``path`` relative to the repository root when it lies inside it, else as
    given: a fixture's error message, or a report naming its dataset, reads the
    same from any checkout.

    >>> display_path(REPO_ROOT / "cachebench.jsonl"), display_path("/elsewhere/rows.jsonl")
    ('cachebench.jsonl', '/elsewhere/rows.jsonl')
    """
    try:
        return Path(path).resolve().relative_to(REPO_ROOT).as_posix()
    except ValueError:
        return str(path)


#: Hand-written fixtures, one directory per domain.
SOURCES_DIR = REPO_ROOT / "sources"
#: The held-out fixture families of the private slice, one directory per domain.
HELDOUT_DIR = SOURCES_DIR / "heldout"
#: The generated shards ``<domain>.jsonl`` and ``manifest.json``.
DOMAINS_DIR = REPO_ROOT / "domains"
#: The calibrated difficulty of every row (written by ``scripts/recalibrate_difficulty.py``).
DIFFICULTY_FILE = SOURCES_DIR / "difficulty.json"

# Lets the recalibration (and tests) point the pipeline at another calibration
# file without threading a path through every call; None means DIFFICULTY_FILE.
_difficulty_file: ContextVar[Path | None] = ContextVar("difficulty_file", default=None)


#: Where caches of derived data (embedding memos, exported models, pair
#: scores) go: never into the checkout unless the user points here at it.
CACHE_DIR_ENV = "CACHEEVAL_CACHE_DIR"


def user_cache_dir(*parts: str) -> Path:
    """``$CACHEEVAL_CACHE_DIR``, else ``$XDG_CACHE_HOME/cacheeval``, else
    ``~/.cache/cacheeval``; with ``parts`` joined below it (not created).

    >>> import os
    >>> os.environ["CACHEEVAL_CACHE_DIR"] = "/tmp/ce"
    >>> user_cache_dir("embeddings").as_posix()
    '/tmp/ce/embeddings'
    >>> del os.environ["CACHEEVAL_CACHE_DIR"]
    """
    root = os.environ.get(CACHE_DIR_ENV)
    if not root:
        xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        root = str(Path(xdg) / "cacheeval")
    return Path(root).joinpath(*parts)


def difficulty_file() -> Path:
    """The calibration file in effect: :data:`DIFFICULTY_FILE` unless overridden
    by :func:`using_difficulty_file`."""
    return _difficulty_file.get() or DIFFICULTY_FILE


@contextmanager
def using_difficulty_file(path: Path) -> Iterator[None]:
    """Within the block, numbering rows and writing the manifest read the
    calibration from ``path`` (a missing file means: no calibration, provisional
    difficulty)."""
    token = _difficulty_file.set(Path(path))
    try:
        yield
    finally:
        _difficulty_file.reset(token)


def stable_seed(*parts: str | int) -> int:
    """A 64-bit seed from strings, identical in every process (unlike ``hash()``):
    the first 8 bytes of sha256 of the parts joined by U+001F."""
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big")


def rng(*parts: str | int) -> random.Random:
    """A ``random.Random`` seeded from :func:`stable_seed`."""
    return random.Random(stable_seed(*parts))


def source_ref(path: Path, item: str | None = None) -> str:
    """The ``source`` field: the fixture's repo-relative path, plus ``#item`` naming
    the authored item a row came from (rows from one item form one family).
    Raises ValueError for a path outside the repository."""
    rel = path.resolve().relative_to(REPO_ROOT).as_posix()
    return f"{rel}#{item}" if item else rel
