"""Progress lines for long runs, on stderr and only when stderr is a terminal
(logs and pipes stay clean)."""

from __future__ import annotations

import sys
import time
from typing import Protocol, TextIO


class ProgressCallback(Protocol):
    """Called as ``progress(done, total)`` after each row (or block of rows);
    ``total`` is 0 when the run's length is not known in advance (a stream)."""

    def __call__(self, done: int, total: int) -> None: ...


def format_eta(seconds: float) -> str:
    """``H:MM:SS`` for a non-negative number of seconds."""
    s = max(0, int(round(seconds)))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


class TerminalProgress:
    """Redraws ``done/total rows  R rows/s  ETA H:MM:SS`` in place, at most
    every ``interval_s`` seconds (and always at the last row). With an
    unknown total (0) it shows ``done rows  R rows/s``; :meth:`finish` ends
    the line.

    Rate = done / elapsed; ETA = (total - done) / rate.
    """

    def __init__(self, stream: TextIO, label: str = "rows", interval_s: float = 0.2) -> None:
        self._stream = stream
        self._label = label
        self._interval = interval_s
        self._start = time.perf_counter()
        self._last = -1.0
        self._open = False

    def __call__(self, done: int, total: int) -> None:
        now = time.perf_counter()
        if (total <= 0 or done < total) and now - self._last < self._interval:
            return
        self._last = now
        elapsed = max(now - self._start, 1e-9)
        rate = done / elapsed
        if total <= 0:
            self._stream.write(f"\r{done} {self._label}  {rate:,.1f} {self._label}/s")
            self._open = True
        else:
            eta = format_eta((total - done) / rate) if rate > 0 else "?"
            end = "\n" if done >= total else ""
            self._stream.write(
                f"\r{done}/{total} {self._label}  {rate:,.1f} {self._label}/s  ETA {eta}{end}"
            )
            self._open = not end
        self._stream.flush()

    def finish(self) -> None:
        """End a line left open (a run of unknown length, or one cut short)."""
        if self._open:
            self._stream.write("\n")
            self._stream.flush()
            self._open = False


def terminal_progress(stream: TextIO | None = None) -> TerminalProgress | None:
    """A :class:`TerminalProgress` on ``stream`` (default stderr) when it is a
    terminal, else None (no progress output at all)."""
    stream = sys.stderr if stream is None else stream
    try:
        is_tty = stream.isatty()
    except (AttributeError, ValueError):
        return None
    return TerminalProgress(stream) if is_tty else None
