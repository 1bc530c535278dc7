"""Outputs that are devices or pipes are written in place, never renamed over.

Every report and rows file is written through a temp file and a rename, so a
crash never leaves half a file. Renamed over ``/dev/null`` (``--out /dev/null``)
that replaced the device itself with a regular file when run as root; the next
program to write "nothing" there left bytes behind (it made a sandbox test see a
"labels file" of a few kB where ``/dev/null`` covers it).
"""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from cacheeval.cli import main
from cacheeval.support.jsonio import AtomicFile, is_special_file, write_bytes_atomic
from tests.conftest import MINI_BENCH


def _read_fifo(path: Path, got: list[bytes]) -> threading.Thread:
    def drain() -> None:
        with open(path, "rb") as f:
            got.append(f.read())

    t = threading.Thread(target=drain, daemon=True)
    t.start()
    return t


def test_a_pipe_is_written_in_place(tmp_path: Path) -> None:
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    assert is_special_file(fifo) and not is_special_file(tmp_path / "missing")
    got: list[bytes] = []
    reader = _read_fifo(fifo, got)
    write_bytes_atomic(fifo, b"report\n")
    reader.join(10)
    assert got == [b"report\n"]
    assert stat.S_ISFIFO(fifo.stat().st_mode)  # still the pipe, not a file put in its place
    assert [p.name for p in tmp_path.iterdir()] == ["out.fifo"]  # no temp file left


def test_an_atomic_file_streams_into_a_pipe(tmp_path: Path) -> None:
    fifo = tmp_path / "rows.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = _read_fifo(fifo, got)
    with AtomicFile(fifo) as out:
        out.write(b"a\n")
        out.write(b"b\n")
    reader.join(10)
    assert got == [b"a\nb\n"] and stat.S_ISFIFO(fifo.stat().st_mode)


def test_dev_null_stays_a_device(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    null = Path(os.devnull)
    assert stat.S_ISCHR(null.stat().st_mode)
    write_bytes_atomic(null, b"x" * 100)
    with AtomicFile(null) as out:
        out.write(b"y" * 100)
    code = main(["eval", "--bench", str(MINI_BENCH), "--baseline", "always_miss",
                 "--out", os.devnull, "--json", str(tmp_path / "r.json")])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    assert stat.S_ISCHR(null.stat().st_mode) and null.stat().st_size == 0
    assert (tmp_path / "r.json").is_file()


def test_the_sandbox_refuses_to_cover_files_with_a_broken_dev_null(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the labels are covered with /dev/null; a regular file there would show its bytes
    from cacheeval.run import isolate

    labels = tmp_path / "labels.jsonl"
    labels.write_text("{}\n", encoding="utf-8")
    monkeypatch.setattr(isolate.shutil, "which", lambda name: "/usr/bin/bwrap")
    prefix = isolate.bwrap_prefix([labels])
    assert prefix[prefix.index(str(labels)) - 1] == "/dev/null"
    monkeypatch.setattr(isolate.stat, "S_ISCHR", lambda mode: False)
    with pytest.raises(isolate.IsolationError, match="not the null device"):
        isolate.bwrap_prefix([labels])
    assert isolate.bwrap_prefix([tmp_path]).count("--tmpfs") >= 2  # a folder needs no cover
