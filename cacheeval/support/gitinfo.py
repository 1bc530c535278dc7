"""Which code produced a report: the git commit of the CacheEval checkout and
whether its working tree had uncommitted changes."""

from __future__ import annotations

import functools
import subprocess
from dataclasses import dataclass
from pathlib import Path

#: The checkout that holds this package (when it is one).
PACKAGE_ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True, slots=True)
class GitInfo:
    """``commit`` is the HEAD sha; ``dirty`` is True when ``git status`` lists
    any change. Both are None outside a git checkout or without git."""

    commit: str | None
    dirty: bool | None


def _git(args: list[str], cwd: Path) -> str | None:
    try:
        done = subprocess.run(
            ["git", *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def read_git_info(root: str | Path = PACKAGE_ROOT) -> GitInfo:
    """Ask git (``rev-parse HEAD``, ``status --porcelain``) about ``root``.

    ``--no-optional-locks`` keeps ``git status`` from rewriting the index, so
    recording provenance never changes the checkout it describes.
    """
    root = Path(root)
    head = _git(["rev-parse", "HEAD"], root)
    if head is None or not head.strip():
        return GitInfo(None, None)
    status = _git(["--no-optional-locks", "status", "--porcelain"], root)
    return GitInfo(head.strip(), None if status is None else bool(status.strip()))


@functools.cache
def package_git_info() -> GitInfo:
    """:func:`read_git_info` of the CacheEval checkout, asked once per process:
    the code a process runs is the code it imported at start, so the first
    answer is the one that describes it (and later reports skip two git calls)."""
    return read_git_info(PACKAGE_ROOT)
