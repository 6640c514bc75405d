"""ordercube's Python API: choose k for an array in one call, run a sweep, open its cube, write a report.

::

    import ordercube

    choice = ordercube.choose_k(X, k=range(2, 11))  # k-means, the default criteria, 20 resamples, seed printed
    choice.k_hat, choice.table, choice.agreement, choice.plot()

    cube = ordercube.sweep({"name": "iris", "seed": 1, "n": [50], "k": {"from": 2, "to": 6}, "resamples": 20,
                            "methods": [{"name": "kmeans", "algorithm": "kmeans", "predictor": "nearest_centroid",
                                         "criteria": ["lange"]}]},
                           data={"iris": (X, y)}, out="results/iris.zarr")
    ordercube.select_k(cube)["lange"]

``sweep`` runs on a LocalCluster of its own (whose workers never import your script: no ``__main__`` guard needed), on
``client=`` (any ``distributed.Client``) or on ``scheduler=``. Errors to catch: :class:`ConfigError`
(:class:`ConfigErrors` when several keys are wrong: each is in its ``errors``) and :class:`InputError` (bad input:
nothing written), :class:`ClusterLost`, :class:`NoWorkers`,
:class:`DiskFull` and :class:`StoreFailed` (stopped: what was computed is kept) and ``KeyboardInterrupt``.

The reducers (``criterion_scores``, ``summarise``, ``choice_per_trial``, ...) take a cube and return an
``xarray.Dataset``, as :func:`select_k` does. The public API is listed in one place for each reader: this module's
``__all__`` for users, :mod:`ordercube.plugin`'s for the authors of a plug-in (a package that adds a dataset kind,
an algorithm, a predictor or a criterion through the entry-point group ``ordercube.plugins``). The
``ordercube.pipeline`` and ``ordercube.tasks`` subpackages are their implementation.

``import ordercube`` is cheap: the functions import xarray, zarr and distributed when first called.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from ordercube.api import choose_k, open_cube, partition, report, select_k, sweep, validate
from ordercube.pipeline.errors import ConfigError, ConfigErrors, InputError

# Resolved on first use (PEP 562): the errors of a stopped run live beside the code that raises them, which
# imports distributed (seconds); the reducers import xarray.
_LAZY = {
    "Choice": "ordercube.choice",
    "ClusterLost": "ordercube.pipeline.run.sweep",
    "DiskFull": "ordercube.pipeline.run.sweep",
    "StoreFailed": "ordercube.pipeline.run.sweep",
    "NoWorkers": "ordercube.pipeline.run.cluster",
    # reducers: pure functions from a cube (an xarray.Dataset) to an xarray.Dataset
    "choice_per_trial": "ordercube.pipeline.reduce.select",
    "criterion_scores": "ordercube.pipeline.reduce.select",
    "failure_rate": "ordercube.pipeline.reduce.select",
    "selection_frequency": "ordercube.pipeline.reduce.select",
    "sqrt_n_scaled": "ordercube.pipeline.reduce.select",
    "summarise": "ordercube.pipeline.reduce.select",
    "at_choice": "ordercube.pipeline.reduce.supervised",  # any variable at each trial's own k̂ (the paper's R)
    "gain_rows": "ordercube.pipeline.reduce.supervised",
    "selection_rows": "ordercube.pipeline.reduce.supervised",
    "status_counts": "ordercube.pipeline.report.write",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'ordercube' has no attribute {name!r}")
    return getattr(import_module(_LAZY[name]), name)


__all__ = [
    # one call for an array, and its answer
    "choose_k", "Choice",
    # a sweep and its cube
    "sweep", "validate", "open_cube", "select_k", "report", "partition",
    # reducers
    "at_choice", "choice_per_trial", "criterion_scores", "failure_rate", "gain_rows", "selection_frequency",
    "selection_rows", "sqrt_n_scaled", "status_counts", "summarise",
    # errors
    "ClusterLost", "ConfigError", "ConfigErrors", "DiskFull", "InputError", "NoWorkers", "StoreFailed",
]


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
