"""Run untrusted Python in a constrained child process.

Contract of :func:`run_python`: the source is written to ``main.py`` in a fresh
temporary directory, which is the child's working directory, and executed by
``sys.executable -I -S -B`` (isolated mode: no ``PYTHON*`` variables, no user or
venv site-packages, neither the script directory nor the repository on
``sys.path``). The child gets

* a wall-clock timeout enforced by the parent (the whole process group is killed);
* ``resource`` limits applied in ``preexec_fn`` before ``exec``: CPU seconds,
  address space, no core files, maximum file size, open files, processes;
* an environment holding only ``PATH``, ``HOME``/``TMPDIR`` (the temp dir) and a
  UTF-8 locale;
* a bootstrap that, before the user code runs, makes every non-``AF_UNIX``
  socket, DNS lookup, ``ctypes``, process creation (``fork``, ``exec*``,
  ``spawn*``, ``system``, ``subprocess``) and ``setrlimit`` raise
  ``PermissionError``. ``AF_UNIX`` socket pairs stay available because asyncio's
  event loop needs one for its self-pipe.

``passed`` is True iff the child exited with status 0 within its limits.

This is defence in depth for benchmark fixtures and cached answers, not a
security boundary against a determined attacker: there is no seccomp filter or
namespace, a root parent gives a root child (``RLIMIT_NPROC`` is not enforced
for root, hence the Python-level process block), and absolute paths outside the
temp dir stay readable.

``preexec_fn`` is documented as unsafe with threads; the function used here only
calls ``resource.setrlimit`` on constants computed before the fork (no imports,
no locks), which is the case that stays safe in practice, so callers may run
several sandboxes from a thread pool (:func:`run_many`).
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

MB = 1024 * 1024

#: Characters of stderr kept in a result.
STDERR_TAIL_CHARS = 2000


@dataclass(frozen=True, slots=True)
class Limits:
    """Resource limits of one sandboxed run.

    ``max_processes`` is ``RLIMIT_NPROC`` (0: the child may not fork; counted
    per user, and ignored by the kernel for root).
    """

    wall_seconds: float = 10.0
    cpu_seconds: int = 5
    memory_bytes: int = 512 * MB
    file_bytes: int = 1 * MB
    open_files: int = 64
    max_processes: int = 0


DEFAULT_LIMITS = Limits()


@dataclass(frozen=True, slots=True)
class SandboxResult:
    """Outcome of one run.

    ``passed``: exit status 0 within the limits. ``timed_out``: killed by the
    wall-clock timeout or by the CPU limit (``SIGXCPU``/``SIGKILL`` at the hard
    limit). ``returncode`` is the child's status (negative: killed by that
    signal), None when it never started. ``stderr_tail`` is the end of stderr.
    """

    passed: bool
    timed_out: bool
    returncode: int | None
    stderr_tail: str


# Runs inside the child before the user's code. Kept small and dependency-free;
# it reads main.py from the working directory so tracebacks name that file.
_BOOTSTRAP = r"""
import _posixsubprocess, _socket, os, posix, resource, socket, sys, types

def _deny(what):
    def blocked(*args, **kwargs):
        raise PermissionError(what + " is disabled in the sandbox")
    return blocked

_RawSocket = _socket.socket

class _LocalOnlySocket(_RawSocket):
    # socket.socket.__init__ calls _socket.socket.__init__ by attribute lookup,
    # so replacing the attribute guards every socket without touching the class
    # (which ssl and asyncio subclass).
    def __init__(self, family=-1, type=-1, proto=-1, fileno=None):
        if fileno is None and family != _socket.AF_UNIX:
            raise PermissionError("network access is disabled in the sandbox")
        _RawSocket.__init__(self, family, type, proto, fileno)

_socket.socket = _socket.SocketType = _LocalOnlySocket
for _mod in (socket, _socket):
    for _name in ("create_connection", "create_server", "getaddrinfo", "gethostbyname",
                  "gethostbyname_ex", "gethostbyaddr", "getnameinfo", "fromfd"):
        if hasattr(_mod, _name):
            setattr(_mod, _name, _deny("network access"))

for _mod in (os, posix):
    for _name in ("fork", "forkpty", "vfork", "system", "popen", "posix_spawn", "posix_spawnp",
                  "execv", "execve", "execl", "execle", "execlp", "execlpe", "execvp",
                  "execvpe", "spawnv", "spawnve", "spawnl", "spawnle", "spawnlp", "spawnlpe",
                  "spawnvp", "spawnvpe", "kill", "killpg"):
        if hasattr(_mod, _name):
            setattr(_mod, _name, _deny("process creation"))
_posixsubprocess.fork_exec = _deny("process creation")
sys.modules["ctypes"] = None
sys.modules["_ctypes"] = None
resource.setrlimit = _deny("changing resource limits")
if hasattr(resource, "prlimit"):
    resource.prlimit = _deny("changing resource limits")

with open("main.py", encoding="utf-8") as _f:
    _code = compile(_f.read(), "main.py", "exec")
# A fresh __main__ module, so the user's code sees none of these names.
_main = types.ModuleType("__main__")
_main.__dict__["__builtins__"] = __builtins__
sys.modules["__main__"] = _main
exec(_code, _main.__dict__)
"""


def _preexec(limits: Limits) -> Callable[[], None]:
    # Everything is computed before the fork; the child only calls setrlimit.
    settings = (
        (resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds + 1)),
        (resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes)),
        (resource.RLIMIT_CORE, (0, 0)),
        (resource.RLIMIT_FSIZE, (limits.file_bytes, limits.file_bytes)),
        (resource.RLIMIT_NOFILE, (limits.open_files, limits.open_files)),
        (resource.RLIMIT_NPROC, (limits.max_processes, limits.max_processes)),
    )

    def apply() -> None:
        for which, value in settings:
            resource.setrlimit(which, value)

    return apply


def _tail(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError:
        return ""
    return data[-4 * STDERR_TAIL_CHARS :].decode("utf-8", errors="replace")[-STDERR_TAIL_CHARS:]


def run_python(source: str, limits: Limits = DEFAULT_LIMITS) -> SandboxResult:
    """Execute ``source`` as ``__main__`` in a sandboxed child (see module docstring)."""
    with tempfile.TemporaryDirectory(prefix="cacheeval-sandbox-") as tmp:
        work = Path(tmp)
        (work / "main.py").write_text(source, encoding="utf-8")
        env = {
            "PATH": "/usr/bin:/bin",
            "HOME": tmp,
            "TMPDIR": tmp,
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
        }
        cmd = [sys.executable, "-I", "-S", "-B", "-X", "utf8=1", "-c", _BOOTSTRAP]
        err_path = work / ".stderr"
        # Output goes to files, not pipes: RLIMIT_FSIZE then bounds it, and the
        # parent never buffers an unbounded stream.
        with open(work / ".stdout", "wb") as out, open(err_path, "wb") as err:
            try:
                proc = subprocess.Popen(
                    cmd,
                    cwd=tmp,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=err,
                    preexec_fn=_preexec(limits),
                    start_new_session=True,
                    close_fds=True,
                )
            except OSError as e:
                return SandboxResult(False, False, None, f"could not start the sandbox: {e}")
            timed_out = False
            try:
                returncode = proc.wait(timeout=limits.wall_seconds)
            except subprocess.TimeoutExpired:
                timed_out = True
                _kill_group(proc)
                returncode = proc.wait()
        if returncode in (-signal.SIGXCPU, -signal.SIGKILL):
            timed_out = True  # the CPU limit fired (soft: SIGXCPU, hard: SIGKILL)
        tail = _tail(err_path)
        if timed_out:
            tail = (
                tail + f"\n[sandbox] killed: time limit ({limits.wall_seconds}s wall, "
                f"{limits.cpu_seconds}s CPU)"
            ).lstrip("\n")
        return SandboxResult(returncode == 0 and not timed_out, timed_out, returncode, tail)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()


def run_tests(code: str, tests: str, limits: Limits = DEFAULT_LIMITS) -> SandboxResult:
    """Run ``code`` followed by ``tests`` (plain ``assert`` statements) in one module."""
    return run_python(code.rstrip("\n") + "\n\n\n" + tests.rstrip("\n") + "\n", limits)


def run_many(
    jobs: Sequence[tuple[str, str]], limits: Limits = DEFAULT_LIMITS, workers: int | None = None
) -> list[SandboxResult]:
    """:func:`run_tests` for each ``(code, tests)`` job, in parallel threads; results
    come back in job order."""
    if not jobs:
        return []
    n = workers or min(len(jobs), max(2, os.cpu_count() or 2))
    if n == 1:
        return [run_tests(c, t, limits) for c, t in jobs]
    with ThreadPoolExecutor(max_workers=n) as pool:
        return list(pool.map(lambda job: run_tests(job[0], job[1], limits), jobs))
