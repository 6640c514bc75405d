"""The cores this process may use: read without importing anything heavy (``ordercube report`` asks before it
forks its drawing helper, while it has one thread and as few modules as it can)."""

from __future__ import annotations

import os


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity, as a batch system's cgroup sets it)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1
