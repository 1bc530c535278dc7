"""Hostile code against the sandbox: every known way around the old
Python-level blocks, run with the in-interpreter guard (it must trip) and,
where bwrap isolates, without it (the OS layer alone must hold). Each attack
has an observable effect outside the sandbox (a file, a connection, a live
process, a leaked secret) and the test checks that the effect did not happen.
Then ``cacheeval verify`` on a shard holding hostile code rows: reported,
never verified."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from cacheeval.verify.sandbox import BLOCKED_EXIT, Limits, SandboxResult, isolation, run_python
from tests.conftest import REPO_ROOT

#: (guard on?) - the guard-off runs need the OS layer, so they only run under bwrap.
GUARDS = [
    pytest.param(True, id="guard"),
    pytest.param(False, id="os-only"),
]


def sandboxed(source: str, guard: bool, limits: Limits | None = None) -> SandboxResult:
    if not guard and isolation().kind != "bwrap":
        pytest.skip(f"no OS isolation here ({isolation().detail})")
    return run_python(source, limits or Limits(), guard=guard)


def assert_stopped(r: SandboxResult, guard: bool) -> None:
    """With the guard, the attempt itself ends the run (exit BLOCKED_EXIT)."""
    if guard:
        assert r.returncode == BLOCKED_EXIT and r.blocked, r.stderr_tail
        assert not r.passed


def processes_with(token: str) -> list[int]:
    """Pids of live (non-zombie) processes whose command line holds ``token``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if token.encode() in (entry / "cmdline").read_bytes():
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
                if state != "Z":
                    found.append(int(entry.name))
        except OSError:
            continue
    return found


@contextlib.contextmanager
def reaped(token: str) -> Iterator[None]:
    """Kill whatever carries ``token`` afterwards, so a failing run leaves nothing."""
    try:
        yield
    finally:
        for pid in processes_with(token):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


# --- ctypes: re-import after the block, then libc's system() --------------------------------


@pytest.mark.parametrize("guard", GUARDS)
@pytest.mark.parametrize("nproc", [0, 8], ids=["no-processes", "processes-allowed"])
def test_ctypes_reload_cannot_run_a_command_outside(
    tmp_path: Path, guard: bool, nproc: int
) -> None:
    if guard and nproc:
        pytest.skip("the guard trips on the import either way")
    marker = tmp_path / "pwned"
    code = (
        "import sys\n"
        "sys.modules.pop('ctypes', None)\n"
        "sys.modules.pop('_ctypes', None)\n"
        "import ctypes\n"
        f"rc = ctypes.CDLL('libc.so.6').system(b'id > {marker}')\n"
        "raise SystemExit(0 if rc == 0 else 3)\n"
    )
    r = sandboxed(code, guard, Limits(max_processes=nproc))
    assert not marker.exists(), "the shell command ran outside the sandbox"
    assert not r.passed, r.stderr_tail
    assert_stopped(r, guard)


# --- a raw socket through _socket.socket.__mro__ to a server the test runs ---------------------


@pytest.mark.parametrize("guard", GUARDS)
def test_raw_socket_cannot_reach_a_local_server(guard: bool) -> None:
    accepted: list[bytes] = []
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    port = server.getsockname()[1]
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            with conn:
                accepted.append(b"connection")
                conn.sendall(b"host-secret-reply")

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    code = (
        "import _socket\n"
        "raw = _socket.socket.__mro__[1]\n"
        "s = raw(_socket.AF_INET, _socket.SOCK_STREAM)\n"
        "s.settimeout(3)\n"
        f"s.connect(('127.0.0.1', {port}))\n"
        "data = s.recv(100)\n"
        "import sys\n"
        "sys.stderr.write('got ' + repr(data))\n"
    )
    try:
        r = sandboxed(code, guard)
    finally:
        stop.set()
        t.join(timeout=5)
        server.close()
    assert accepted == [], "the sandboxed code connected to the host's loopback"
    assert "host-secret-reply" not in r.stderr_tail
    assert not r.passed
    assert_stopped(r, guard)
    if not guard:  # the new network namespace has nothing listening on that port
        assert "ConnectionRefusedError" in r.stderr_tail or "OSError" in r.stderr_tail


# --- posix re-imported (the patched fork undone), then fork; and a bounded fork bomb ------------


@pytest.mark.parametrize("guard", GUARDS)
def test_posix_reload_cannot_fork(guard: bool) -> None:
    code = (
        "import sys\n"
        "sys.modules.pop('posix', None)\n"
        "import posix\n"
        "pid = posix.fork()\n"
        "if pid == 0:\n"
        "    posix._exit(0)\n"
        "posix.waitpid(pid, 0)\n"
    )
    r = sandboxed(code, guard)
    assert not r.passed, "the sandboxed code forked"
    assert_stopped(r, guard)
    if not guard:  # RLIMIT_NPROC binds the unprivileged uid
        assert "BlockingIOError" in r.stderr_tail, r.stderr_tail


@pytest.mark.parametrize("guard", GUARDS)
def test_fork_bomb_gets_no_process(guard: bool) -> None:
    # Bounded by the test: at most 32 children, each gone after 2 s.
    code = (
        "import sys, time\n"
        "sys.modules.pop('posix', None)\n"
        "import posix\n"
        "made = 0\n"
        "for _ in range(32):\n"
        "    try:\n"
        "        pid = posix.fork()\n"
        "    except OSError:\n"
        "        continue\n"
        "    if pid == 0:\n"
        "        time.sleep(2)\n"
        "        posix._exit(0)\n"
        "    made += 1\n"
        "sys.stderr.write(f'forked {made}')\n"
        "raise SystemExit(0 if made == 0 else 3)\n"
    )
    r = sandboxed(code, guard)
    assert_stopped(r, guard)
    if not guard:
        assert r.returncode == 0 and "forked 0" in r.stderr_tail, r.stderr_tail


# --- a setsid() grandchild must not outlive the sandbox -------------------------------------------


def _escape_code(token: str, then: str) -> str:
    return (
        "import os, sys, time\n"
        "sys.modules.pop('posix', None)\n"
        "import posix\n"
        "if posix.fork() == 0:\n"
        "    posix.setsid()\n"
        "    if posix.fork() == 0:\n"
        "        open('started', 'w').close()\n"
        "        posix.execv(sys.executable,\n"
        f"                    [sys.executable, '-c', 'import time; time.sleep(60)', '{token}'])\n"
        "    posix._exit(0)\n"
        "for _ in range(100):\n"
        "    if os.path.exists('started'):\n"
        "        break\n"
        "    time.sleep(0.05)\n"
        "else:\n"
        "    raise SystemExit(4)\n"
        "time.sleep(0.5)\n" + then
    )


@pytest.mark.parametrize("ending", ["exits", "times-out"])
def test_setsid_grandchild_is_dead_when_the_sandbox_returns(ending: str) -> None:
    token = f"cacheeval-escape-{uuid.uuid4().hex}"
    then = "raise SystemExit(0)\n" if ending == "exits" else "time.sleep(60)\n"
    limits = Limits(wall_seconds=4, max_processes=16)
    with reaped(token):
        r = sandboxed(_escape_code(token, then), False, limits)
        survivors = processes_with(token)
    # The grandchild really started (else the test proves nothing) ...
    if ending == "exits":
        assert r.passed, r.stderr_tail
    else:
        assert r.timed_out, r.stderr_tail
    # ... and nothing it started is alive once run_python has returned.
    assert survivors == [], f"processes outlived the sandbox: {survivors}"


def test_the_guard_stops_the_escape_before_it_starts() -> None:
    token = f"cacheeval-escape-{uuid.uuid4().hex}"
    with reaped(token):
        r = sandboxed(_escape_code(token, "raise SystemExit(0)\n"), True)
        assert processes_with(token) == []
    assert_stopped(r, True)


# --- secrets: a private labels file, the repository, /etc/passwd ---------------------------------


@pytest.mark.parametrize("guard", GUARDS)
def test_private_files_and_passwd_are_not_readable(tmp_path: Path, guard: bool) -> None:
    secret = f"SECRET-{uuid.uuid4().hex}"
    labels = tmp_path / "repo" / "private" / "test_labels.jsonl"
    labels.parent.mkdir(parents=True)
    labels.write_text(json.dumps({"id": "cb-math-0001", "label": secret}) + "\n")
    targets = [str(labels), "/etc/passwd", str(REPO_ROOT / "pyproject.toml")]
    code = (
        "import sys\n"
        "leaked = []\n"
        f"for path in {targets!r}:\n"
        "    try:\n"
        "        with open(path) as f:\n"
        "            leaked.append(path + ': ' + f.read(200))\n"
        "    except OSError:\n"
        "        pass\n"
        "sys.stderr.write('\\n'.join(leaked))\n"
        "raise SystemExit(3 if leaked else 0)\n"
    )
    r = sandboxed(code, guard)
    assert secret not in r.stderr_tail
    assert "root:" not in r.stderr_tail  # the host's /etc/passwd
    assert "[project]" not in r.stderr_tail  # the repository
    assert_stopped(r, guard)
    if not guard:
        assert r.returncode == 0, r.stderr_tail  # every open failed: nothing is mounted there


@pytest.mark.parametrize("guard", GUARDS)
def test_nothing_is_written_outside(tmp_path: Path, guard: bool) -> None:
    inside_host_tmp = Path("/tmp") / f"cacheeval-escape-{uuid.uuid4().hex}"
    targets = [tmp_path / "escaped.txt", inside_host_tmp]
    code = (
        f"for path in {[str(t) for t in targets]!r}:\n"
        "    try:\n"
        "        with open(path, 'w') as f:\n"
        "            f.write('escaped')\n"
        "    except OSError:\n"
        "        pass\n"
    )
    try:
        r = sandboxed(code, guard)
        assert [t for t in targets if t.exists()] == []
        assert_stopped(r, guard)
    finally:
        for t in targets:
            t.unlink(missing_ok=True)


# --- `cacheeval verify` on hostile code rows ---------------------------------------------------

_TESTS = 'assert to_camel("user_id") == "userId"\nassert to_camel("name") == "name"'
_ANSWER = (
    "def to_camel(name):\n"
    '    first, *rest = name.split("_")\n'
    '    return first + "".join(part.capitalize() for part in rest)\n'
)


def _code_row(n: int, prelude: str) -> dict[str, object]:
    """A tests-mode PARA_SAFE code row whose answers start with ``prelude``."""
    return {
        "id": f"cb-code-{n:04d}",
        "domain": "code",
        "subcategory": "request_rephrase",
        "label": "PARA_SAFE",
        "binary_label": "HIT",
        "difficulty": "easy",
        "query_a": "Write a Python function to_camel(name) converting snake_case to camelCase.",
        "query_b": "snake_case to lower camelCase in Python: to_camel(name).",
        "context_a": None,
        "context_b": None,
        "system_prompt_a": None,
        "system_prompt_b": None,
        "tools_a": None,
        "tools_b": None,
        "expected_answer_a": prelude + _ANSWER,
        "expected_answer_b": prelude + _ANSWER,
        "rationale": "test row",
        "verification_method": "pytest_sandbox",
        "verification_payload": {
            "kind": "code",
            "mode": "tests",
            "lang_a": "python",
            "lang_b": "python",
            "tests_a": _TESTS,
            "tests_b": _TESTS,
        },
        "construction_method": "paraphrase_rewrite",
        "source": "tests",
        "real_world_grounding": "tests",
    }


def test_verify_reports_hostile_code_rows(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    labels = tmp_path / "private" / "test_labels.jsonl"
    labels.parent.mkdir()
    labels.write_text('{"id": "cb-math-0001", "label": "SECRET"}\n')
    loud = (
        "import sys\n"
        "sys.modules.pop('ctypes', None)\n"
        "sys.modules.pop('_ctypes', None)\n"
        "import ctypes\n"
        f"ctypes.CDLL('libc.so.6').system(b'id > {marker}')\n\n\n"
    )
    quiet = (  # a careful attacker: every attempt wrapped, the tests still pass
        f"try:\n    STOLEN = open({str(labels)!r}).read()\nexcept OSError:\n    STOLEN = ''\n\n\n"
    )
    shards = tmp_path / "domains"
    shards.mkdir()
    rows = [_code_row(1, loud), _code_row(2, quiet), _code_row(3, "")]
    (shards / "code.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    done = subprocess.run(
        [sys.executable, "-m", "cacheeval", "verify", "--shards", str(shards), "--jobs", "1"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert not marker.exists()
    assert done.returncode == 1, done.stdout + done.stderr
    assert "disagreements: 2 (0 contradicting the label, 2 undecided)" in done.stdout
    problems = [ln for ln in done.stdout.splitlines() if ln.startswith("  cb-code-")]
    assert [ln.split(":")[0].strip() for ln in problems] == ["cb-code-0001", "cb-code-0002"]
    assert all("blocked" in ln for ln in problems), problems


def test_hostile_fixture_sanity() -> None:
    # Sanity of the fixture above: the clean row's answer passes its own tests.
    r = run_python(_ANSWER + "\n" + _TESTS + "\n")
    assert r.passed, r.stderr_tail
    # ... and the quiet attacker's does not, because the guard trips on the open().
    r = run_python(
        "try:\n    open('/etc/passwd').read()\nexcept OSError:\n    pass\n" + _ANSWER + _TESTS
    )
    assert not r.passed and r.blocked == "reading /etc/passwd"


def test_no_os_isolation_runs_nothing_unless_allowed_and_never_silently(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from cacheeval.verify import sandbox

    monkeypatch.setenv(sandbox.MODE_ENV, "python")
    monkeypatch.delenv(sandbox.ALLOW_UNISOLATED_ENV, raising=False)
    sandbox._reset_isolation_for_tests()
    try:
        refused = run_python("open('/etc/passwd').read()\n")
        assert not refused.passed and refused.returncode is None  # it never ran
        assert refused.undecided is not None and "--allow-unisolated" in refused.undecided
        monkeypatch.setenv(sandbox.ALLOW_UNISOLATED_ENV, "1")
        sandbox._reset_isolation_for_tests()
        first = sandbox.isolation()
        sandbox.isolation()
        r = run_python("open('/etc/passwd').read()\n")
        ok = sandbox.run_tests("x = 1", "assert x == 1")
    finally:
        sandbox._reset_isolation_for_tests()
    err = capsys.readouterr().err
    assert first.kind == "python" and r.isolation == "python"
    assert err.count("WARNING: untrusted code runs WITHOUT OS isolation") == 1, err
    assert r.blocked == "reading /etc/passwd"  # the fallback still has the guard
    assert ok.passed and "WITHOUT OS isolation" in ok.stderr_tail  # marked as such


def test_asking_for_bwrap_fails_closed_when_it_cannot_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from cacheeval.verify import sandbox

    monkeypatch.setenv(sandbox.MODE_ENV, "bwrap")
    monkeypatch.setattr(sandbox.shutil, "which", lambda name: None)
    sandbox._reset_isolation_for_tests()
    try:
        with pytest.raises(sandbox.SandboxUnavailable, match="bwrap"):
            sandbox.isolation()
    finally:
        sandbox._reset_isolation_for_tests()


STEERING = {
    # exits "successfully" before a single assert ran
    "exit_0_before_asserts": "import os\nos._exit(0)\n",
    # a status that looks like the harness's own SIGKILL (a timeout)
    "exit_137": "import os\nos._exit(137)\n",
    "self_sigkill": "import signal\nsignal.raise_signal(signal.SIGKILL)\n",
    # stderr that looks like the harness's words
    "forged_stderr": (
        "import sys, os\nsys.stderr.write('[sandbox] killed: time limit')\nos._exit(0)\n"
    ),
}


@pytest.mark.parametrize("attack", sorted(STEERING))
def test_an_answer_cannot_steer_the_code_verifier(attack: str) -> None:
    from cacheeval.verify.sandbox import run_tests

    r = run_tests(STEERING[attack] + "def f(x):\n    return 0\n", "assert f(1) == 2\n")
    assert not r.passed and not r.timed_out, r
    honest = run_tests("def f(x):\n    return x + 1\n", "assert f(1) == 2\n")
    assert honest.passed


def test_a_blocked_escape_leaves_a_code_row_undecided() -> None:
    from tests.verify.test_code import REV, REV_TESTS, check_row, make_row, suite_payload

    sneaky = "import os\nos.system('id')\n" + REV  # a blocked attack, then a right answer
    row = make_row(sneaky, REV, suite_payload(REV_TESTS, REV_TESTS))
    result = check_row(row)
    assert result.binary is None and "blocked" in result.detail, result
    wrong = make_row(REV, "import os\nos.system('id')\n", suite_payload(REV_TESTS, REV_TESTS))
    assert check_row(wrong).binary is None  # never a decided MISS either
