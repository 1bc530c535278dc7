"""OS isolation of a cache process (``--isolate``): bubblewrap around
``python -m cacheeval.run.child``.

The cache sees the machine read-only (so every installed package and model
file is there), a private writable ``/tmp``, no network unless asked, its own
PID namespace (the driver's memory is not in its ``/proc``) and no
capabilities. What holds answers is not there at all: the repository's
``private/`` directory and every labels file the command reads are covered
with empty ones. Without a working bwrap it fails closed: an
:class:`IsolationError`, never a silent run without the sandbox.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterable, Sequence

from ..support.layout import REPO_ROOT

#: Where the answer key lives in a checkout (``cacheeval build`` writes the
#: test labels there).
PRIVATE_DIR = REPO_ROOT / "private"


class IsolationError(RuntimeError):
    """bubblewrap is missing or the OS refused it: nothing runs unisolated."""


PathLike = str | os.PathLike[str]


def bwrap_prefix(
    hide: Iterable[PathLike] = (), show: Iterable[PathLike] = (), *, network: bool = False
) -> list[str]:
    """The argv prefix that runs a command in the cache sandbox, hiding the
    files and directories in ``hide`` (and :data:`PRIVATE_DIR`); the
    directories in ``show`` (a cache file's own folder, which may sit in the
    host's ``/tmp``) are mounted read-only over the private ``/tmp``."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise IsolationError(
            "--isolate needs bubblewrap, which is not installed "
            "(Debian: apt-get install bubblewrap)"
        )
    cmd = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    cmd += ["--tmpfs", "/tmp", "--unshare-pid", "--unshare-ipc", "--unshare-uts"]
    cmd += ["--die-with-parent", "--cap-drop", "ALL"]
    if not network:
        cmd.append("--unshare-net")
    # the private /tmp above must not hide what the cache needs to start: the
    # interpreter and its packages, this checkout, the working directory (a
    # checkout or a virtual environment may well live under /tmp)
    needed = [sys.prefix, sys.base_prefix, os.path.dirname(sys.executable), str(REPO_ROOT)]
    needed.append(os.getcwd())
    for path in sorted({os.path.realpath(p) for p in [*needed, *show]}):
        if os.path.isdir(path) and path != "/":
            cmd += ["--ro-bind", path, path]
    for path in sorted({os.path.realpath(p) for p in [*hide, PRIVATE_DIR]}):
        if os.path.isdir(path):
            cmd += ["--tmpfs", path]
        elif os.path.exists(path):
            _check_dev_null()
            cmd += ["--ro-bind", "/dev/null", path]
    cmd += ["--chdir", os.getcwd(), "--"]
    return cmd


def _check_dev_null() -> None:
    """A hidden file is covered with ``/dev/null``: that must be the empty
    device, or the cover would show whatever a regular file there holds (a
    rename over ``/dev/null`` as root leaves one)."""
    try:
        is_device = stat.S_ISCHR(os.stat("/dev/null").st_mode)
    except OSError:
        is_device = False
    if not is_device:
        raise IsolationError(
            "--isolate: /dev/null is not the null device here, so it cannot cover the "
            "labels file (restore it: rm /dev/null && mknod -m 666 /dev/null c 1 3)"
        )


def checked_prefix(
    hide: Sequence[PathLike] = (), show: Sequence[PathLike] = (), *, network: bool = False
) -> list[str]:
    """:func:`bwrap_prefix`, after one trivial run proves the OS allows it."""
    prefix = bwrap_prefix(hide, show, network=network)
    try:
        done = subprocess.run(
            [*prefix, sys.executable, "-c", "pass"], capture_output=True, text=True, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise IsolationError(f"--isolate: bubblewrap could not start: {e}") from None
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines()
        raise IsolationError(
            f"--isolate: the OS refused the sandbox: {lines[-1] if lines else done.returncode}"
        )
    return prefix


def cache_file_dirs(module: str | None) -> list[str]:
    """The folder of a cache given as a ``.py`` file (its siblings are
    importable from it), for :func:`bwrap_prefix`'s ``show``; [] for a dotted
    module name.

    >>> cache_file_dirs("my_pkg.cache"), cache_file_dirs(None)
    ([], [])
    """
    if not module or not module.endswith(".py"):
        return []
    return [os.path.dirname(os.path.abspath(module))]
