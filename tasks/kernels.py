"""The compiled kernels (Cython, built by ``pip install``) or, where they were not built, their numba twins.

``pip install`` builds ``_lloyd``, ``_annealing`` and ``_hungarian`` when a C compiler and the Python headers
are there, and installs without them otherwise (``setup.py``). Each has a numba twin beside it
(``_lloyd_numba`` ...) that runs the same operations in the same order, so a cube is the same bits either
way; only the time differs: numba's import and its first compilation per machine, then the numba kernels
themselves (``benchmarks/bench_kernels_fallback.py``). ``ORDERCUBE_PURE_KERNELS=1`` in the environment chooses
the twins even where the compiled kernels exist (to compare the two, or to rule the build out). Which ones
run is said once per process, at the first kernel loaded, on the ``ordercube`` logger.
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
            level, "%s: using their numba versions (same results; numba's first compilation on this machine takes "
            "about 10 s, then they run within 2x of the compiled ones)", reason)
    return importlib.import_module(name + "_numba")
