"""glibc's allocator in a worker process: freed arrays kept for reuse rather than handed back to the system.

Dask's nanny starts its workers with ``MALLOC_TRIM_THRESHOLD_=65536`` (``distributed.nanny.pre-spawn-environ``).
Setting it turns off glibc's adaptive thresholds (``mallopt(3)``): every array above 128 KiB is then mapped,
page-faulted in and unmapped again, and freed heap is returned at 64 KiB. A LocalCluster started by ordercube
drops the variable; workers started by ``dask worker`` (Slurm, Kubernetes, a scheduler given) keep it. Measured
here on three Figure 1 tasks at n = 131072 (33 cells) in one thread: 5,008 minor page faults per cell and 0.34 s
of system time with the variable, 170 per cell and 0.02 s without it, 133 per cell and 0.01 s with it and
:func:`keep_freed_memory`. No value changes: only where the allocator finds memory.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

# mallopt(3) parameters (malloc.h): the size above which an allocation is mapped on its own, and the free heap
# top kept before it is returned. These are glibc's own adaptive ceilings on 64-bit (DEFAULT_MMAP_THRESHOLD_MAX
# = 32 MiB; the trim threshold adapts to twice the mmap threshold).
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 * 1024 * 1024
TRIM_THRESHOLD = 2 * MMAP_THRESHOLD

_done = False


def keep_freed_memory() -> bool:
    """Set glibc's mmap and trim thresholds to the ceilings its adaptive rule reaches, once per process; returns
    whether they were set (False off Linux/glibc). Called by the first task a worker runs
    (:func:`ordercube.pipeline.run.graph.execute_task`): microseconds, once."""
    global _done
    if _done:
        return True
    _done = True
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # musl and others: no mallopt
        return False
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
