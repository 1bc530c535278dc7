"""The sandbox that runs untrusted Python for the code checker."""

from __future__ import annotations

import time

from cacheeval.verify.sandbox import Limits, isolation, run_many, run_python, run_tests

FAST = Limits(wall_seconds=1.5, cpu_seconds=5)


def test_passing_snippet_passes() -> None:
    r = run_tests("def double(x):\n    return 2 * x\n", "assert double(21) == 42\n")
    assert r.passed and not r.timed_out
    assert r.returncode == 0


def test_failing_assertion_fails_with_traceback() -> None:
    r = run_tests("def double(x):\n    return x + x\n", "assert double(2) == 5, 'wrong'\n")
    assert not r.passed and not r.timed_out
    assert r.returncode == 1
    assert "AssertionError: wrong" in r.stderr_tail
    assert 'File "main.py"' in r.stderr_tail


def test_infinite_loop_hits_the_wall_clock_timeout() -> None:
    start = time.monotonic()
    r = run_python("while True:\n    pass\n", FAST)
    assert r.timed_out and not r.passed
    assert r.returncode is not None and r.returncode < 0  # killed by a signal
    assert time.monotonic() - start < 5


def test_cpu_limit_stops_a_busy_loop_before_the_wall_clock() -> None:
    start = time.monotonic()
    r = run_python("while True:\n    pass\n", Limits(wall_seconds=30, cpu_seconds=1))
    # the CPU limit's signal is the child's own: undecided, not taken for a timeout
    assert not r.passed and not r.timed_out
    assert r.undecided is not None and "SIGXCPU" in r.undecided
    assert time.monotonic() - start < 10


def test_memory_bomb_is_refused() -> None:
    r = run_python("blob = bytearray(2 * 1024 ** 3)\n")
    assert not r.passed and not r.timed_out
    assert "MemoryError" in r.stderr_tail


def test_memory_limit_leaves_room_for_normal_code() -> None:
    assert run_python("blob = bytearray(64 * 1024 ** 2)\nassert len(blob) > 0\n").passed


def test_sockets_are_blocked() -> None:
    for code in (
        "import socket\nsocket.create_connection(('127.0.0.1', 9))\n",
        "import socket\nsocket.socket(socket.AF_INET, socket.SOCK_STREAM)\n",
        "import _socket\n_socket.socket()\n",
        "import socket\nsocket.getaddrinfo('example.com', 80)\n",
        "import urllib.request\nurllib.request.urlopen('http://127.0.0.1:9/')\n",
    ):
        r = run_python(code)
        assert not r.passed, code
        assert "network access is disabled" in r.stderr_tail, code


def test_asyncio_still_works_without_network() -> None:
    code = "import asyncio\nasync def f():\n    return 7\nassert asyncio.run(f()) == 7\n"
    assert run_python(code).passed


def test_repo_files_are_not_reachable_by_relative_path() -> None:
    r = run_python("open('pyproject.toml').read()\n")
    assert not r.passed
    assert "FileNotFoundError" in r.stderr_tail
    r = run_python("import cacheeval\n")
    assert not r.passed and "ModuleNotFoundError" in r.stderr_tail


def test_working_directory_is_a_fresh_temp_dir() -> None:
    # Under bwrap the output files stay outside (the parent holds them open).
    want = ["main.py"] if isolation().kind == "bwrap" else [".stderr", ".stdout", "main.py"]
    code = (
        "import os\n"
        f"assert sorted(os.listdir('.')) == {want!r}, os.listdir('.')\n"
        "assert 'cacheeval-sandbox' in os.getcwd()\n"
    )
    r = run_python(code)
    assert r.passed, r.stderr_tail


def test_environment_is_stripped() -> None:
    code = (
        "import os\n"
        "assert set(os.environ) <= {'PATH', 'HOME', 'TMPDIR', 'LANG', 'LC_ALL', 'LC_CTYPE', "
        "'PWD'}, "
        "sorted(os.environ)\n"
    )
    r = run_python(code)
    assert r.passed, r.stderr_tail


def test_process_creation_is_blocked() -> None:
    for code in (
        "import os\nos.fork()\n",
        "import subprocess\nsubprocess.run(['true'])\n",
        "import os\nos.system('true')\n",
    ):
        r = run_python(code)
        assert not r.passed, code
        # the patched function's message, or the audit-hook tripwire's
        assert "process creation is disabled" in r.stderr_tail or r.blocked == "subprocess.Popen", (
            code
        )


def test_limits_cannot_be_raised_from_inside() -> None:
    r = run_python("import resource\nresource.setrlimit(resource.RLIMIT_AS, (-1, -1))\n")
    assert not r.passed and "changing resource limits is disabled" in r.stderr_tail
    r = run_python("import ctypes\n")
    assert not r.passed


def test_file_size_is_limited() -> None:
    code = "with open('big.bin', 'wb') as f:\n    f.write(b'x' * (4 * 1024 * 1024))\n"
    r = run_python(code)
    assert not r.passed
    assert "File too large" in r.stderr_tail


def test_stderr_tail_is_bounded() -> None:
    r = run_python("import sys\nsys.stderr.write('e' * 100000)\nraise SystemExit(3)\n")
    assert r.returncode == 3 and not r.passed
    assert 0 < len(r.stderr_tail) <= 2000


def test_run_many_keeps_job_order() -> None:
    jobs = [
        ("x = 1\n", "assert x == 1\n"),
        ("x = 2\n", "assert x == 1\n"),
        ("x = 3\n", "assert x == 3\n"),
    ]
    assert [r.passed for r in run_many(jobs, workers=2)] == [True, False, True]
    assert run_many([]) == []
