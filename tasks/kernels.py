"""The compiled kernels (Cython, built by ``pip install``) or, where they were not built, their numba twins.

``pip install`` builds ``_lloyd``, ``_annealing`` and ``_hungarian`` when a C compiler and the Python headers
are there, and installs without them otherwise (``setup.py``). Each has a numba twin beside it
(``_lloyd_numba`` ...) running the same operations in the same order, so a cube is the same bits either way.
Only the time differs: numba compiles the twins once per machine, then every process pays numba's import
and first dispatch; the kernels themselves run as fast. Measured by ``benchmarks/bench_kernels_fallback.py``
on a loaded 2-core machine (two runs): a process's start (import, one fit, one matching) 0.4-0.6 s compiled,
3.5-3.8 s with the twins from numba's cache, 18-21 s compiling them; per kernel call 0.87-1.08x the compiled
time; a 20-cell sweep with ``--workers 0`` 0.94x and 1.73x the compiled time (4.8 against 5.1 s, 7.8
against 4.5 s: the start, not the kernels).

``ORDERCUBE_PURE_KERNELS=1`` in the environment chooses the twins even where the compiled kernels exist (to
compare the two, or to rule the build out). Which ones run is said once per process, at the first kernel
loaded, on the ``ordercube`` logger: a warning when the kernels were not built, information when asked for.
"""

from __future__ import annotations

import importlib
import logging
import os
from types import ModuleType

PURE = "ORDERCUBE_PURE_KERNELS"
_said: list[str] = []


def pure_kernels() -> bool:
    """Whether ``ORDERCUBE_PURE_KERNELS`` asks for the numba twins (set, and neither empty nor ``0``)."""
    return os.environ.get(PURE, "").strip() not in ("", "0")


def load(name: str) -> ModuleType:
    """The compiled module ``name`` (``"ordercube.tasks._hungarian"``), or its numba twin ``name + "_numba"``
    when it was not built or ``ORDERCUBE_PURE_KERNELS`` asks for the twins."""
    if not pure_kernels():
        try:
            return importlib.import_module(name)
        except ImportError:
            reason = "the compiled kernels are not built (no C compiler at install)"
    else:
        reason = f"{PURE} is set"
    if not _said:
        _said.append(reason)
        level = logging.INFO if reason.startswith(PURE) else logging.WARNING  # asked for, or a surprise to the user
        logging.getLogger("ordercube").log(
            level, "%s: using their numba versions, same results; numba compiles them once on this machine "
            "(up to 20 s), then each process starts 1-3 s later and they run as fast", reason)
    return importlib.import_module(name + "_numba")
