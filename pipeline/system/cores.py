"""The cores this process may use: read without importing anything heavy (``ordercube report`` asks before it
forks its drawing helper, while it has one thread and as few modules as it can)."""

from __future__ import annotations

import os

#: Local workers started at most per usable core: a worker per core is the default; more only help tasks that
#: wait (I/O), and past a few per core they cost memory (a Python process each) and start-up time for nothing.
WORKERS_PER_CORE = 4


def max_workers() -> int:
    """The most local worker processes ``--workers`` / ``workers=`` may ask for: ``WORKERS_PER_CORE`` per usable core."""
    return WORKERS_PER_CORE * usable_cores()


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity, as a batch system's cgroup sets it)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1
