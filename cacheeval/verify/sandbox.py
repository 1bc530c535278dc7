"""Run untrusted Python (benchmark fixtures, cached answers) in an OS sandbox.

Two layers, the first of which is the security boundary:

1. **OS isolation** with bubblewrap (``bwrap``, Debian package ``bubblewrap``;
   ``scripts/setup_env.sh`` installs it). Every run gets new network, PID, IPC,
   UTS and mount namespaces (and a cgroup namespace where possible) and sees a
   root file system holding only, read-only, ``/usr`` (with the ``/bin``,
   ``/lib*`` links), the Python runtime that runs it (``sys.base_prefix``
   with its ``site-packages`` hidden), a minimal ``/dev``, and a size-capped
   tmpfs at ``/tmp`` whose ``/tmp/cacheeval-sandbox`` is the working
   directory (``main.py`` bound into it read-only). No ``/etc``, no
   ``/proc``, no home directory, no repository, no ``private/``; the network
   namespace has only its own loopback. The code runs as uid/gid 65534
   (``nobody``), with no capabilities and ``no_new_privs``: as root, bwrap
   sets up the namespaces without a user namespace and ``setpriv`` drops to
   65534 inside; as another user, bwrap maps that user to 65534 in a new user
   namespace. ``--die-with-parent`` kills the sandbox when the parent thread
   dies, and when the child exits (or the wall-clock timeout kills bwrap) the
   PID namespace is torn down, so no process it started survives - not even
   one that called ``setsid()``.

   Where the OS refuses (no bwrap, a kernel or container without the needed
   namespaces, ``CACHEEVAL_SANDBOX=python``), :func:`isolation` says why once,
   on stderr, and every run falls back to layer 2 alone:
   ``SandboxResult.isolation`` is then ``"python"``.

2. **A guard inside the interpreter**, before the user's code: a
   ``sys.addaudithook`` tripwire ends the process (exit status
   :data:`BLOCKED_EXIT`, ``[sandbox] blocked: <event>`` on stderr) on
   ``ctypes``, process creation (``fork``, ``exec``, ``system``, ``spawn``,
   ``subprocess``), signals to other processes, non-``AF_UNIX`` sockets, DNS
   lookups, changing resource limits, heap introspection (``gc.get_objects``
   ...), re-importing the modules the guard patched (``posix``, ``_socket``,
   ...), reading files outside the Python runtime, ``/usr``, ``/lib*``,
   ``/dev`` and the working directory, and writing or deleting outside the
   working directory. The hook works on the C-level audit events, so the
   tricks that walk around Python-level patches (reloading ``posix`` or
   ``ctypes``, ``_socket.socket.__mro__``) still trip it, and an attempt fails
   the run loudly - the code checker then reports the row, never a silent pass.
   Patched functions additionally raise ``PermissionError`` with a readable
   message. This layer is a tripwire and the fallback, not the boundary.

Resource limits (``resource`` rlimits, applied before ``exec`` and inherited
by everything inside): CPU seconds, address space, no core files, maximum
file size, open files; ``RLIMIT_NPROC`` (processes and threads) is set by the
bootstrap once the code runs as its final uid, so it binds (the kernel ignores
it for root). The parent enforces a wall-clock timeout by killing the process
group. The environment holds only ``PATH``, ``HOME``/``TMPDIR`` (the working
directory) and a UTF-8 locale; the interpreter runs ``-I -S -B`` (no
``PYTHON*`` variables, no site-packages, no bytecode files).

``passed`` is True iff the child exited with status 0 within its limits.

``preexec_fn`` is documented as unsafe with threads; the function used here
only calls ``resource.setrlimit`` on constants computed before the fork (no
imports, no locks), which is the case that stays safe in practice, so callers
may run several sandboxes from a thread pool (:func:`run_many`).
"""

from __future__ import annotations

import contextlib
import os
import re
import resource
import secrets
import select
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

MB = 1024 * 1024

#: Characters of stderr kept in a result.
STDERR_TAIL_CHARS = 2000
#: Exit status of a run the guard stopped (see the module doc).
BLOCKED_EXIT = 125
#: How a patched function's PermissionError ends (see the bootstrap's ``deny``).
DISABLED_SUFFIX = "is disabled in the sandbox"
#: Marker the guard writes before :data:`BLOCKED_EXIT`.
BLOCKED_MARK = "[sandbox] blocked: "
#: The unprivileged uid and gid the code runs as under bwrap (``nobody``).
SANDBOX_UID = 65534
#: Working directory inside the bwrap sandbox.
SANDBOX_WORKDIR = "/tmp/cacheeval-sandbox"
#: Environment variable: ``python`` forces the fallback (with its warning).
MODE_ENV = "CACHEEVAL_SANDBOX"
#: Set to 1 (``--allow-unisolated``) to run code without OS isolation.
ALLOW_UNISOLATED_ENV = "CACHEEVAL_ALLOW_UNISOLATED"

BWRAP = "bwrap"
PYTHON = "python"


@dataclass(frozen=True, slots=True)
class Limits:
    """Resource limits of one sandboxed run.

    ``max_processes`` is ``RLIMIT_NPROC`` (0: the code may neither fork nor
    start a thread; counted per uid).
    """

    wall_seconds: float = 10.0
    cpu_seconds: int = 5
    memory_bytes: int = 512 * MB
    file_bytes: int = 1 * MB
    open_files: int = 64
    max_processes: int = 0
    tmpfs_bytes: int = 32 * MB


DEFAULT_LIMITS = Limits()


@dataclass(frozen=True, slots=True)
class SandboxResult:
    """Outcome of one run.

    ``passed``: with ``proof`` (tests), the run wrote the per-run nonce after
    its last statement; without, exit status 0 within the limits.
    ``timed_out``: the parent's wall-clock timer killed it (a status or signal
    of the child's own is never taken for a timeout). ``returncode`` is the
    child's status (negative: killed by that signal), None when it never
    started. ``stderr_tail`` is the end of stderr.
    ``isolation``: ``"bwrap"`` or ``"python"`` (the fallback). ``blocked``: the
    audit event the guard stopped, if it did.
    """

    passed: bool
    timed_out: bool
    returncode: int | None
    stderr_tail: str
    isolation: str = ""
    blocked: str | None = None
    #: Why the outcome proves nothing either way (a signal the harness did not
    #: send, no OS isolation to run it in), or None.
    undecided: str | None = None


@dataclass(frozen=True, slots=True)
class Isolation:
    """How runs are isolated on this machine: ``kind`` is ``"bwrap"`` or
    ``"python"``; ``detail`` says how, or why the OS layer is missing."""

    kind: str
    detail: str
    bwrap: str | None = None
    setpriv: str | None = None


# --- the guard (runs inside the child before the user's code) ----------------------------
# Kept dependency-free. sys.argv carries: RLIMIT_NPROC value, "1"/"0" for the guard.
# Everything it needs is created inside _install(), so the hook is reachable from
# the user's code only through heap introspection, which the hook itself blocks.
_BOOTSTRAP = r"""
import _posixsubprocess, _socket, os, posix, resource, socket, sys, types

def _install(nproc, guard):
    resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))

    def deny(what):
        def blocked(*args, **kwargs):
            raise PermissionError(what + " is disabled in the sandbox")
        return blocked

    raw_socket = _socket.socket

    class LocalOnlySocket(raw_socket):
        def __init__(self, family=-1, type=-1, proto=-1, fileno=None):
            if fileno is None and family != _socket.AF_UNIX:
                raise PermissionError("network access is disabled in the sandbox")
            raw_socket.__init__(self, family, type, proto, fileno)

    _socket.socket = _socket.SocketType = LocalOnlySocket
    for mod in (socket, _socket):
        for name in ("create_connection", "create_server", "getaddrinfo", "gethostbyname",
                     "gethostbyname_ex", "gethostbyaddr", "getnameinfo", "fromfd"):
            if hasattr(mod, name):
                setattr(mod, name, deny("network access"))
    for mod in (os, posix):
        for name in ("fork", "forkpty", "vfork", "system", "popen", "posix_spawn",
                     "posix_spawnp", "execv", "execve", "execl", "execle", "execlp", "execlpe",
                     "execvp", "execvpe", "spawnv", "spawnve", "spawnl", "spawnle", "spawnlp",
                     "spawnlpe", "spawnvp", "spawnvpe", "kill", "killpg"):
            if hasattr(mod, name):
                setattr(mod, name, deny("process creation"))
    _posixsubprocess.fork_exec = deny("process creation")
    sys.modules["ctypes"] = None
    sys.modules["_ctypes"] = None
    resource.setrlimit = deny("changing resource limits")
    if hasattr(resource, "prlimit"):
        resource.prlimit = deny("changing resource limits")
    if not guard:
        return

    realpath, getcwd, fsdecode = os.path.realpath, os.getcwd, os.fsdecode
    work = realpath(getcwd())
    roots = {work, "/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/dev"}
    for p in (sys.base_prefix, sys.base_exec_prefix):
        roots.add(realpath(p))
    read_roots = tuple(sorted(r.rstrip("/") + "/" for r in roots))
    work_root = work.rstrip("/") + "/"
    tripped = {
        "os.fork", "os.forkpty", "os.system", "os.exec", "os.posix_spawn", "os.spawn",
        "os.startfile", "subprocess.Popen", "os.kill", "os.killpg", "signal.pthread_kill",
        "resource.setrlimit", "resource.prlimit", "gc.get_objects", "gc.get_referrers",
        "gc.get_referents", "sys._current_frames", "socket.getaddrinfo",
        "socket.gethostbyname", "socket.gethostbyaddr", "socket.getnameinfo",
        "socket.sethostname", "_thread.start_new_thread" if nproc == 0 else "",
    }
    # the modules patched above (a fresh copy would undo the patches) and ctypes
    reimport = {"ctypes", "_ctypes", "posix", "os", "_posixsubprocess", "_socket", "socket",
                "resource"}
    path_events = {"os.remove": 1, "os.rmdir": 1, "os.rename": 2, "os.link": 2,
                   "os.symlink": 2, "os.mkdir": 1, "os.chmod": 1, "os.chown": 1,
                   "os.utime": 1, "os.truncate": 1, "os.chflags": 1, "os.lchmod": 1,
                   "os.lchown": 1, "shutil.rmtree": 1, "os.mkfifo": 1, "os.mknod": 1}
    write_flags = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND

    def plain(path):
        # realpath without the os module (it may be half torn down at exit):
        # symlinks out of the working directory cannot be made (os.symlink trips).
        parts = []
        for part in (path if path.startswith("/") else work + "/" + path).split("/"):
            if part == "..":
                parts = parts[:-1]
            elif part not in ("", "."):
                parts.append(part)
        return "/" + "/".join(parts)

    def inside(path, allowed):
        if isinstance(path, int):
            return True  # an already open descriptor
        try:
            full = realpath(fsdecode(path))
        except Exception:
            if not isinstance(path, str):
                return False
            full = plain(path)
        full += "/"
        return full.startswith(allowed) or full in ("/dev/null/", "/dev/urandom/")

    def hook(event, args, _write=posix.write, _exit=posix._exit, _str=str):
        why = None
        if event in tripped or event.startswith("ctypes."):
            why = event
        elif event == "socket.__new__" and args[1] != _socket.AF_UNIX:
            why = event
        elif event in ("socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg"):
            if getattr(args[0], "family", None) != _socket.AF_UNIX:
                why = event
        elif event == "import" and args[0] in reimport:
            why = "re-import of " + _str(args[0])
        elif event == "open":
            path, mode, flags = args[0], args[1], args[2]
            writing = (mode is not None and any(c in mode for c in "wax+")) or (
                mode is None and flags & write_flags)
            if path is not None and not inside(path, (work_root,) if writing else read_roots):
                why = ("writing " if writing else "reading ") + _str(path)
        elif event in path_events:
            for p in args[: path_events[event]]:
                if isinstance(p, (str, bytes)) and not inside(p, (work_root,)):
                    why = event + " " + _str(p)
        if why is not None:
            _write(2, ("\n" + "[sandbox] blocked: " + why + "\n").encode("utf-8", "replace"))
            _exit(125)

    sys.addaudithook(hook)

def _run(nonce_fd, _read=posix.read, _close=posix.close, _write=posix.write):
    # The nonce is read (and its pipe closed) before the user's code runs and
    # written after its last statement: an exit status, a signal or stderr can
    # no longer pass for a finished run. (Code that walks the frames of its own
    # interpreter could find it: the OS sandbox, not the nonce, is the boundary.)
    nonce = b""
    if nonce_fd >= 0:
        nonce = _read(nonce_fd, 64)
        _close(nonce_fd)
    with open("main.py", encoding="utf-8") as f:
        code = compile(f.read(), "main.py", "exec")
    # A fresh __main__ module, so the user's code sees none of these names.
    main = types.ModuleType("__main__")
    main.__dict__["__builtins__"] = __builtins__
    sys.modules["__main__"] = main
    exec(code, main.__dict__)
    if nonce_fd >= 0:
        sys.stdout.flush()
        _write(1, b"\n" + nonce + b"\n")

_nonce_fd = int(sys.argv[3])
_install(int(sys.argv[1]), sys.argv[2] == "1")
del _install
sys.argv = ["main.py"]
_run(_nonce_fd)
"""


# --- which isolation this machine gives ---------------------------------------------------

_ISOLATION: Isolation | None = None
_ISOLATION_LOCK = threading.Lock()


def _runtime_python() -> str:
    """The interpreter binary itself (a venv's ``bin/python`` is a symlink to it)."""
    return os.path.realpath(sys.executable)


def _hidden_package_dirs() -> list[str]:
    """Installed-package directories of the runtime, hidden inside the sandbox."""
    paths = sysconfig.get_paths(vars={"base": sys.base_prefix, "platbase": sys.base_exec_prefix})
    out = {os.path.realpath(paths[k]) for k in ("purelib", "platlib")}
    ver = f"{sys.version_info.major}.{sys.version_info.minor}"
    for d in ("/usr/lib/python3/dist-packages", f"/usr/local/lib/python{ver}/dist-packages"):
        out.add(d)
    return sorted(d for d in out if os.path.isdir(d))


def _ro_system_args() -> list[str]:
    """``/usr`` read-only and the top-level ``/bin``, ``/lib*``, ``/sbin`` as on the host."""
    args = ["--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    return args


def _runtime_args() -> list[str]:
    """The Python runtime read-only at its own path (its RPATH and prefix stay
    valid), its parent directories traversable, its package dirs hidden."""
    dirs = {os.path.realpath(sys.base_prefix), os.path.realpath(sys.base_exec_prefix)}
    dirs.add(str(Path(_runtime_python()).parent.parent))
    args: list[str] = []
    made: set[str] = set()
    for d in sorted(dirs):
        if d == "/usr" or d.startswith("/usr/") or not os.path.isdir(d):
            continue
        for parent in reversed(Path(d).parents):
            p = str(parent)
            if p != "/" and p not in made:
                args += ["--perms", "0755", "--dir", p]
                made.add(p)
        args += ["--ro-bind", d, d]
    for hidden in _hidden_package_dirs():
        args += ["--tmpfs", hidden]
    return args


def _bwrap_command(
    iso: Isolation, main_py: Path, limits: Limits, info_fd: int | None = None
) -> list[str]:
    assert iso.bwrap is not None
    cmd = [iso.bwrap] if info_fd is None else [iso.bwrap, "--info-fd", str(info_fd)]
    cmd += [
        "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
        "--unshare-cgroup-try", "--hostname", "sandbox",
        "--die-with-parent", "--new-session",
    ]  # fmt: skip
    if iso.setpriv is None:  # not root: the user namespace maps us to 65534
        cmd += ["--unshare-user", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID)]
    else:  # root: no user namespace; setpriv (below) needs only these capabilities
        cmd += ["--cap-drop", "ALL"]
        cmd += [a for c in ("CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP") for a in ("--cap-add", c)]
    cmd += _ro_system_args()
    cmd += _runtime_args()
    cmd += ["--dev", "/dev"]
    cmd += ["--perms", "01777", "--size", str(limits.tmpfs_bytes), "--tmpfs", "/tmp"]
    cmd += ["--perms", "01777", "--dir", SANDBOX_WORKDIR]
    cmd += ["--ro-bind", str(main_py), f"{SANDBOX_WORKDIR}/main.py", "--chdir", SANDBOX_WORKDIR]
    cmd += ["--clearenv"]
    for key, value in _env(SANDBOX_WORKDIR).items():
        cmd += ["--setenv", key, value]
    cmd.append("--")
    if iso.setpriv is not None:
        cmd += [
            iso.setpriv,
            f"--reuid={SANDBOX_UID}", f"--regid={SANDBOX_UID}", "--clear-groups",
            "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--",
        ]  # fmt: skip
    return cmd


def _env(home: str) -> dict[str, str]:
    return {
        "PATH": "/usr/bin:/bin",
        "HOME": home,
        "TMPDIR": home,
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
    }


def _probe(iso: Isolation) -> str | None:
    """None when a trivial program runs in the bwrap sandbox as uid 65534, else why not."""
    with tempfile.TemporaryDirectory(prefix="cacheeval-sandbox-probe-") as tmp:
        main_py = Path(tmp) / "main.py"
        main_py.write_text("", encoding="utf-8")
        main_py.chmod(0o644)
        check = f"import os, sys; sys.exit(0 if os.getuid() == {SANDBOX_UID} else 3)"
        cmd = [*_bwrap_command(iso, main_py, DEFAULT_LIMITS), _runtime_python(), "-I", "-S"]
        try:
            done = subprocess.run([*cmd, "-c", check], capture_output=True, timeout=30, check=False)
        except (OSError, subprocess.TimeoutExpired) as e:
            return f"bwrap could not start: {e}"
    if done.returncode == 0:
        return None
    err = done.stderr.decode("utf-8", "replace").strip().splitlines()
    return f"bwrap exited with status {done.returncode}: {err[-1] if err else 'no message'}"


class SandboxUnavailable(RuntimeError):
    """``CACHEEVAL_SANDBOX=bwrap`` was asked for and bubblewrap cannot run."""


def _detect() -> Isolation:
    mode = os.environ.get(MODE_ENV, "").strip().lower()
    if mode == PYTHON:
        return Isolation(PYTHON, f"{MODE_ENV}=python asks for the fallback")
    iso = _detect_bwrap()
    if mode == BWRAP and iso.kind != BWRAP:
        raise SandboxUnavailable(f"{MODE_ENV}=bwrap, but {iso.detail}")
    return iso


def _detect_bwrap() -> Isolation:
    bwrap = shutil.which(BWRAP)
    if bwrap is None:
        return Isolation(
            PYTHON, "bubblewrap (bwrap) is not installed (Debian: apt-get install bubblewrap)"
        )
    setpriv = None
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            return Isolation(PYTHON, "running as root but setpriv (util-linux) is missing")
    how = (
        "bwrap namespaces (net, pid, ipc, uts, mount), setpriv to uid 65534"
        if setpriv
        else "bwrap namespaces (user, net, pid, ipc, uts, mount) as uid 65534"
    )
    iso = Isolation(BWRAP, how, bwrap, setpriv)
    problem = _probe(iso)
    if problem is not None:
        return Isolation(PYTHON, f"the OS refused the namespaces ({problem})")
    return iso


def isolation() -> Isolation:
    """The isolation runs get here, detected (by one probe run) on first use.

    When it is the fallback, a warning saying why goes to stderr, once per
    process (worker processes forked after the first call inherit the answer).
    """
    global _ISOLATION
    with _ISOLATION_LOCK:
        if _ISOLATION is None:
            _ISOLATION = _detect()
            if _ISOLATION.kind != BWRAP and unisolated_allowed():
                print(
                    "cacheeval: WARNING: untrusted code runs WITHOUT OS isolation: "
                    f"{_ISOLATION.detail}; falling back to the in-interpreter guard only "
                    "(a determined attacker can escape it; --allow-unisolated)",
                    file=sys.stderr,
                    flush=True,
                )
        return _ISOLATION


def _reset_isolation_for_tests() -> None:
    global _ISOLATION
    with _ISOLATION_LOCK:
        _ISOLATION = None


# --- one run --------------------------------------------------------------------------------


def _preexec(limits: Limits) -> Callable[[], None]:
    # Everything is computed before the fork; the child only calls setrlimit.
    # RLIMIT_NPROC is left to the bootstrap (see the module doc).
    settings = (
        (resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds + 1)),
        (resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes)),
        (resource.RLIMIT_CORE, (0, 0)),
        (resource.RLIMIT_FSIZE, (limits.file_bytes, limits.file_bytes)),
        (resource.RLIMIT_NOFILE, (limits.open_files, limits.open_files)),
    )

    def apply() -> None:
        for which, value in settings:
            resource.setrlimit(which, value)

    return apply


def _tail(path: Path, chars: int = STDERR_TAIL_CHARS) -> str:
    try:
        data = path.read_bytes()
    except OSError:
        return ""
    return data[-4 * chars :].decode("utf-8", errors="replace")[-chars:]


def _blocked(tail: str, returncode: int | None) -> str | None:
    """The escape the guard stopped: its tripwire (exit :data:`BLOCKED_EXIT`),
    or a patched function's PermissionError that ended the run."""
    if returncode == BLOCKED_EXIT and BLOCKED_MARK in tail:
        return tail.rsplit(BLOCKED_MARK, 1)[1].strip().splitlines()[0]
    lines = tail.strip().splitlines()
    if returncode not in (0, None) and lines and lines[-1].endswith(DISABLED_SUFFIX):
        return lines[-1].removeprefix("PermissionError: ")
    return None


def unisolated_allowed() -> bool:
    """Whether code may run without OS isolation (``--allow-unisolated`` sets
    :data:`ALLOW_UNISOLATED_ENV`, so worker processes inherit it)."""
    return os.environ.get(ALLOW_UNISOLATED_ENV, "") == "1"


def run_python(
    source: str, limits: Limits = DEFAULT_LIMITS, *, guard: bool = True, proof: bool = False
) -> SandboxResult:
    """Execute ``source`` as ``__main__`` in a sandboxed child (see the module doc).

    ``guard=False`` leaves out the in-interpreter tripwire (layer 2) and is
    meant for tests that show the OS layer holding on its own. ``proof``: a
    pass needs the per-run nonce the harness writes after the code's last
    statement (an ``os._exit(0)`` before the asserts proves nothing). Without
    OS isolation nothing runs unless :func:`unisolated_allowed`.
    """
    iso = isolation()
    if iso.kind != BWRAP and not unisolated_allowed():
        why = (
            f"not run: no OS isolation ({iso.detail}); install bubblewrap "
            "(apt-get install bubblewrap) or pass --allow-unisolated"
        )
        return SandboxResult(False, False, None, why, iso.kind, undecided=why)
    nonce = secrets.token_hex(16) if proof else ""
    with tempfile.TemporaryDirectory(prefix="cacheeval-sandbox-") as tmp:
        work = Path(tmp)
        main_py = work / "main.py"
        main_py.write_text(source, encoding="utf-8")
        main_py.chmod(0o644)  # readable by the sandbox uid
        read_fd, write_fd = os.pipe() if proof else (-1, -1)
        if proof:
            os.write(write_fd, nonce.encode("ascii"))
            os.close(write_fd)
        boot = ["-I", "-S", "-B", "-X", "utf8=1", "-c", _BOOTSTRAP]
        boot += [str(limits.max_processes), "1" if guard else "0", str(read_fd)]
        fds = (read_fd,) if proof else ()
        err_path = work / ".stderr"
        # Output goes to files, not pipes: RLIMIT_FSIZE then bounds it, and the
        # parent never buffers an unbounded stream.
        try:
            with open(work / ".stdout", "wb") as out, open(err_path, "wb") as err:
                if iso.kind == BWRAP:
                    status = _run_bwrap(iso, main_py, boot, limits, out.fileno(), err.fileno(), fds)
                else:
                    cmd = [sys.executable, *boot]
                    status = _run_child(
                        cmd, tmp, _env(tmp), limits, out.fileno(), err.fileno(), fds
                    )
        finally:
            if proof:
                os.close(read_fd)
        if isinstance(status, str):
            return SandboxResult(False, False, None, status, iso.kind, undecided=status)
        return _result(status, iso, limits, err_path, work / ".stdout", nonce)


def _result(
    status: tuple[int, bool],
    iso: Isolation,
    limits: Limits,
    err_path: Path,
    out_path: Path,
    nonce: str,
) -> SandboxResult:
    """What a finished run shows. Only the parent's own timer makes a
    timeout; a signal it did not send leaves the run undecided."""
    returncode, timed_out = status
    if iso.kind == BWRAP and 128 < returncode <= 128 + 64:
        returncode = -(returncode - 128)  # bwrap reports "killed by signal N" as 128+N
    tail = _tail(err_path)
    undecided = None
    if timed_out:
        tail = (
            tail + f"\n[sandbox] killed: time limit ({limits.wall_seconds}s wall, "
            f"{limits.cpu_seconds}s CPU)"
        ).lstrip("\n")
    elif returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        undecided = f"killed by {name} (the CPU limit, or the code itself): proves nothing"
    blocked = _blocked(tail, returncode)
    if blocked is not None:
        undecided = f"the sandbox blocked {blocked}"
    if nonce:
        proven = nonce in _tail(out_path, 4096).split()
        passed = proven and not timed_out and blocked is None
    else:
        passed = returncode == 0 and not timed_out
    if iso.kind != BWRAP and undecided is None:
        tail = (tail + "\n[sandbox] ran WITHOUT OS isolation (--allow-unisolated)").lstrip("\n")
    return SandboxResult(passed, timed_out, returncode, tail, iso.kind, blocked, undecided)


def _run_child(
    cmd: list[str],
    cwd: str,
    env: dict[str, str],
    limits: Limits,
    out: int,
    err: int,
    pass_fds: tuple[int, ...] = (),
    started: Callable[[], None] | None = None,
) -> tuple[int, bool] | str:
    """Run ``cmd`` in its own session with the rlimits; (returncode, timed_out),
    or a message when it cannot start. ``started`` runs once the child is up."""
    try:
        proc = subprocess.Popen(
            cmd,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            preexec_fn=_preexec(limits),
            start_new_session=True,
            close_fds=True,
            pass_fds=pass_fds,
        )
    except OSError as e:
        return f"could not start the sandbox: {e}"
    if started is not None:
        started()
    try:
        return proc.wait(timeout=limits.wall_seconds), False
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        return proc.wait(), True


def _run_bwrap(
    iso: Isolation,
    main_py: Path,
    boot: list[str],
    limits: Limits,
    out: int,
    err: int,
    pass_fds: tuple[int, ...] = (),
) -> tuple[int, bool] | str:
    """:func:`_run_child` for bwrap, then wait for the sandbox's PID namespace to
    be gone: bwrap may return as soon as the code exits (or is killed) while the
    kernel is still killing what else ran in there, so the sandbox's init
    (``--info-fd`` names it) is killed and awaited through a pidfd."""
    info_r, info_w = os.pipe()
    open_fds = {info_r, info_w}
    pidfds: list[int] = []

    def close(fd: int) -> None:
        if fd in open_fds:  # never twice: the number may be reused meanwhile
            open_fds.discard(fd)
            os.close(fd)

    def started() -> None:
        close(info_w)
        pid = _read_child_pid(info_r, timeout=min(limits.wall_seconds, 30.0))
        if pid is not None:
            with contextlib.suppress(OSError):
                pidfds.append(os.pidfd_open(pid))

    cmd = [*_bwrap_command(iso, main_py, limits, info_fd=info_w), _runtime_python(), *boot]
    try:
        fds = (info_w, *pass_fds)
        return _run_child(cmd, "/", _env(SANDBOX_WORKDIR), limits, out, err, fds, started)
    finally:
        close(info_w)
        close(info_r)
        for fd in pidfds:
            _kill_and_await(fd)


def _read_child_pid(fd: int, timeout: float) -> int | None:
    """The ``child-pid`` bwrap writes to its ``--info-fd`` (None if it never does)."""
    buf = b""
    deadline = time.monotonic() + timeout
    while b"}" not in buf:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return None
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        buf += chunk
    m = re.search(rb'"child-pid"\s*:\s*(\d+)', buf)
    return int(m.group(1)) if m else None


def _kill_and_await(pidfd: int) -> None:
    """SIGKILL the sandbox's init and wait (up to 10 s) until it has exited; it
    exits only after every other process of its PID namespace is gone."""
    try:
        with contextlib.suppress(OSError):
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        select.select([pidfd], [], [], 10.0)
    finally:
        os.close(pidfd)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()


def run_tests(code: str, tests: str, limits: Limits = DEFAULT_LIMITS) -> SandboxResult:
    """Run ``code`` followed by ``tests`` (plain ``assert`` statements) in one
    module; it passes only when the run shows the nonce written after the last
    test (``proof``)."""
    source = code.rstrip("\n") + "\n\n\n" + tests.rstrip("\n") + "\n"
    return run_python(source, limits, proof=True)


def run_many(
    jobs: Sequence[tuple[str, str]], limits: Limits = DEFAULT_LIMITS, workers: int | None = None
) -> list[SandboxResult]:
    """:func:`run_tests` for each ``(code, tests)`` job, in parallel threads; results
    come back in job order."""
    if not jobs:
        return []
    isolation()  # detect (and warn) once, before the threads start
    n = workers or min(len(jobs), max(2, os.cpu_count() or 2))
    if n == 1:
        return [run_tests(c, t, limits) for c, t in jobs]
    with ThreadPoolExecutor(max_workers=n) as pool:
        return list(pool.map(lambda job: run_tests(job[0], job[1], limits), jobs))
