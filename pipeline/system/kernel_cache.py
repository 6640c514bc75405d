"""Where numba keeps its compiled kernels (the exact 1-D k-means, the mixture EM, the Gibbs sampler,
GreConD, the kNN intervals; k-means and the Hungarian method are Cython, compiled at install), so that
they are compiled once per machine.

numba caches a kernel beside its source (``tasks/algorithms/__pycache__``) when that folder is writable,
else in ``~/.cache/numba``; with neither (a read-only install run by a user without a writable home: a
container, a batch node) it has no cache at all and ``@njit(cache=True)`` raises: every cell of a k-means
sweep failed when k-means was numba's. Measured here on a read-only install (n = 100, 180 cells, k-means
then): 6.97 s for the first run, which compiles, against 1.46 s once cached.

:func:`use_writable_cache` chooses, before numba is imported, the first writable of: the user's
``NUMBA_CACHE_DIR`` (left alone), the source tree, ``$ORDERCUBE_CACHE/numba`` or the per-user cache
folder (``$XDG_CACHE_HOME/ordercube/numba``, ``~/.cache/ordercube/numba``), and a folder of this user in
the temporary directory. A LocalCluster's workers inherit the choice with the environment, so they load
what the driver (or an earlier run) compiled instead of compiling per worker.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

KERNELS = Path(__file__).resolve().parents[2] / "tasks" / "algorithms"


def use_writable_cache() -> str | None:
    """Point numba at a writable cache folder when its own choices are not (see the module docstring);
    returns the folder set, or None when numba's default serves (the source tree, or the user's setting)."""
    if os.environ.get("NUMBA_CACHE_DIR") or _writable(KERNELS / "__pycache__"):
        return None
    for folder in _candidates():
        if _writable(folder):
            os.environ["NUMBA_CACHE_DIR"] = str(folder)
            numba_config = sys.modules.get("numba.core.config")
            if numba_config is not None:  # numba already imported (a notebook): it reads its config object
                numba_config.CACHE_DIR = str(folder)  # type: ignore[attr-defined]
            return str(folder)
    return None


def _candidates() -> Iterator[Path]:
    if given := os.environ.get("ORDERCUBE_CACHE"):
        yield Path(given) / "numba"
    home_cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    yield Path(home_cache) / "ordercube" / "numba"
    yield Path(tempfile.gettempdir()) / f"ordercube-{os.getuid() if hasattr(os, 'getuid') else 'user'}" / "numba"


def _writable(folder: Path) -> bool:
    """Can files be created in ``folder`` (made if missing)? Tried, not guessed from permission bits:
    root ignores them, and a read-only mount does not show in them."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            return True
    except OSError:
        return False
