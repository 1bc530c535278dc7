"""One store object owns a store file (adapters/verified_cache/entry_db.py,
``_lock_store``): its index, exact map and entry ids live in memory, so a
second store on the same file, in this process or another, would serve entries
the first has evicted and reuse its ids. The second is refused with an error
naming the owner; the lock goes with ``close()`` and with the owner's death
(``kill -9``). Real files, a real child process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from adapters.verified_cache.entry_db import StoreInUse
from adapters.verified_cache.store import EntryStore
from cacheeval.schema import Request

ROOT = Path(__file__).resolve().parents[2]


def _put(store: EntryStore, i: int) -> None:
    v = np.random.default_rng(i).standard_normal(8).astype(np.float32)
    store.add("", f"q{i}", Request(f"q{i}"), f"a{i}", v / np.linalg.norm(v))


def test_a_second_store_on_the_same_file_is_refused_until_the_first_closes(
    tmp_path: Path,
) -> None:
    path = tmp_path / "cache.sqlite"
    first = EntryStore(path, max_entries=10)
    for i in range(10):
        _put(first, i)
    with pytest.raises(StoreInUse, match=rf"already open in another .*pid {os.getpid()}"):
        EntryStore(path)
    for i in range(10, 20):  # the first goes on, evicting what a second would still serve
        _put(first, i)
    first.close()
    second = EntryStore(path, max_entries=10)
    assert sorted(r.exact_key for r in second.records()) == [f"q{i}" for i in range(10, 20)]
    _put(second, 20)  # a fresh id, after every id the first used
    assert max(r.id for r in second.records()) == 21
    second.close()


def test_a_store_nobody_refers_to_any_more_does_not_hold_the_file(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    first = EntryStore(path)
    _put(first, 0)
    del first  # never closed (a notebook cell run again)
    again = EntryStore(path)
    assert again.exact("", "q0") is not None
    again.close()


OWNER = textwrap.dedent(
    """
    import sys, time
    import numpy as np
    from adapters.verified_cache.store import EntryStore
    from cacheeval.schema import Request
    store = EntryStore(sys.argv[1])
    store.add("", "q", Request("q"), "a", np.eye(8, dtype=np.float32)[0])
    print("ready", flush=True)
    time.sleep(120)
    """
)


def test_the_lock_names_another_process_and_dies_with_it(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-c", OWNER, str(path)], env=env, cwd=ROOT, stdout=subprocess.PIPE
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == b"ready"
        with pytest.raises(StoreInUse, match=rf"pid {proc.pid}\)"):
            EntryStore(path)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    store = EntryStore(path)  # the operating system dropped the dead owner's lock
    assert store.exact("", "q") is not None
    store.close()


def test_a_path_refused_for_another_reason_leaves_no_lock_behind(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("not a database\n" * 100, encoding="utf-8")
    with pytest.raises(Exception, match="notes.txt"):
        EntryStore(tmp_path / "notes.txt")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_is_refused_and_leaves_the_parent_its_store(tmp_path: Path) -> None:
    # gunicorn --preload and friends: the store is opened, then the process forks;
    # an inherited SQLite connection must not be used in the child
    path = tmp_path / "cache.sqlite"
    store = EntryStore(path)
    _put(store, 0)
    pid = os.fork()
    if pid == 0:  # the child: report through the exit code only
        code = 1
        try:
            refused = 0
            for use in (
                lambda: store.nearest("", np.eye(8, dtype=np.float32)[0], 1),
                lambda: store.exact("", "q0"),
                lambda: _put(store, 1),
            ):
                try:
                    use()
                except StoreInUse as e:
                    refused += f"used in process {os.getpid()} (a fork)" in str(e)
            store.close()  # does nothing in the child, and raises nothing
            code = 0 if refused == 3 else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    _put(store, 2)  # the parent's store goes on, its file still its own
    assert store.exact("", "q2") is not None and store.exact("", "q1") is None
    with pytest.raises(StoreInUse, match="already open"):
        EntryStore(path)
    store.close()


def test_a_store_of_another_format_is_refused_and_left_unlocked(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "cache.sqlite"
    store = EntryStore(path)
    _put(store, 0)
    store.close()
    con = sqlite3.connect(path)
    with con:
        con.execute("UPDATE meta SET value = '999' WHERE key = 'format'")
    con.close()
    for _ in range(2):  # the refusal released the file: the second try is refused the same way
        with pytest.raises(ValueError, match="store format 999"):
            EntryStore(path)
