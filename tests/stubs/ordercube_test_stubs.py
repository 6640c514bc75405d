"""Test-only algorithms, loaded through ORDERCUBE_PLUGINS (driver) and Dask's worker preload.

``stub_constant`` labels point i with i mod k: both halves get the same sizes of clusters, so the
Lange disagreement of a trial depends only on the halves' order. ``stub_failing`` raises for k = 4
and works like ``stub_constant`` otherwise.
"""

from __future__ import annotations

import numpy as np

from ordercube.tasks.algorithms import ALGORITHMS, Algorithm


def constant(X, k, rng):
    return np.arange(X.shape[0]) % k


def failing(X, k, rng):
    if k == 4:
        raise RuntimeError("stub failure at k=4")
    return constant(X, k, rng)


ALGORITHMS["stub_constant"] = Algorithm("stub_constant", constant)
ALGORITHMS["stub_failing"] = Algorithm("stub_failing", failing)


def crashing(X, k, rng):
    """Kills its own worker process at k = 5 (a segfault, an OOM kill), every time it runs."""
    if k == 5:
        import os

        os._exit(1)
    return constant(X, k, rng)


ALGORITHMS["stub_crashing"] = Algorithm("stub_crashing", crashing)


def sleepy(X, k, rng):
    """``stub_constant`` that takes ORDERCUBE_STUB_SLEEP seconds per fit (0 when unset): a run that lasts."""
    import os
    import time

    time.sleep(float(os.environ.get("ORDERCUBE_STUB_SLEEP", "0")))
    return constant(X, k, rng)


ALGORITHMS["stub_sleepy"] = Algorithm("stub_sleepy", sleepy)
