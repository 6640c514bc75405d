"""ordercube's Python API: run a sweep, open its cube, choose k, write a report.

::

    import ordercube

    cube = ordercube.sweep({"name": "iris", "seed": 1, "n": [50], "k": {"from": 2, "to": 6}, "resamples": 20,
                            "methods": [{"name": "kmeans", "algorithm": "kmeans", "predictor": "nearest_centroid",
                                         "criteria": ["lange"]}]},
                           data={"iris": (X, y)}, out="results/iris.zarr")
    ordercube.select_k(cube)["lange"]

``sweep`` runs on a LocalCluster of its own (in a script: under ``if __name__ == "__main__":``), on
``client=`` (any ``distributed.Client``) or on ``scheduler=``. Errors to catch: :class:`ConfigError`
and :class:`InputError` (bad input: nothing written), :class:`ClusterLost`, :class:`NoWorkers`,
:class:`DiskFull` (stopped: what was computed is kept) and ``KeyboardInterrupt``.

``import ordercube`` is cheap: the functions import xarray, zarr and distributed when first called.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from ordercube.api import open_cube, partition, report, select_k, sweep, validate
from ordercube.guard import MissingMainGuard
from ordercube.pipeline.errors import ConfigError, InputError

# Errors of a stopped run live beside the code that raises them, which imports distributed (seconds):
# resolved on first use (PEP 562).
_LAZY = {"ClusterLost": "ordercube.pipeline.run.sweep", "DiskFull": "ordercube.pipeline.run.sweep", "NoWorkers": "ordercube.pipeline.run.cluster"}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'ordercube' has no attribute {name!r}")
    return getattr(import_module(_LAZY[name]), name)


__all__ = ["ClusterLost", "ConfigError", "DiskFull", "InputError", "MissingMainGuard", "NoWorkers", "open_cube", "partition",
           "report", "select_k", "sweep", "validate"]
