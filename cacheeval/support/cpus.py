"""How many worker processes a command may start: a few per CPU this process
may run on. The commands' checkers and generators are CPU-bound Python, so
more processes only add memory; and a slip such as ``--workers 100000`` would
otherwise start that many at once (a ``fork`` pool launches every worker up
front).

>>> usable_cpus() >= 1 and max_workers() == WORKERS_PER_CPU * usable_cpus()
True
"""

from __future__ import annotations

import os

#: Worker processes allowed per usable CPU.
WORKERS_PER_CPU = 4


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity on Linux), at least 1."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def max_workers() -> int:
    """The most worker processes a command accepts: :data:`WORKERS_PER_CPU`
    per usable CPU."""
    return WORKERS_PER_CPU * usable_cpus()


def too_many_workers(flag: str, value: int) -> str | None:
    """The one-line complaint about ``flag value`` above :func:`max_workers`,
    else None.

    >>> too_many_workers("--jobs", 1) is None
    True
    >>> too_many_workers("--jobs", 10**6).startswith("--jobs must be at most ")
    True
    """
    limit = max_workers()
    if value <= limit:
        return None
    return (
        f"{flag} must be at most {limit} ({WORKERS_PER_CPU} per CPU this process may use; "
        f"the output is the same with fewer), got {value}"
    )
