"""Orchestration, storage, reduction and the CLI of ordercube.

Python API::

    from pipeline import open_cube, criterion_scores, summarise, select_k
    cube = open_cube("results/quickstart.zarr")
    k_hat = select_k(criterion_scores(cube))
"""

from importlib import import_module
from typing import Any

# Names resolve on first use (PEP 562): a Dask worker imports this package to run a task, and should not
# pay for xarray, dask.array and zarr, which only the driver's storage and reducers need.
_HOME = {
    "choice_per_trial": "pipeline.reduce",
    "criterion_scores": "pipeline.reduce",
    "failure_rate": "pipeline.reduce",
    "select_k": "pipeline.reduce",
    "selection_frequency": "pipeline.reduce",
    "sqrt_n_scaled": "pipeline.reduce",
    "summarise": "pipeline.reduce",
    "open_cube": "pipeline.cube",
    "at_choice": "pipeline.reduce_supervised",  # any variable at each trial's own k̂ (the paper's R)
    "gain_rows": "pipeline.reduce_supervised",
    "selection_rows": "pipeline.reduce_supervised",
}


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module 'pipeline' has no attribute {name!r}")
    return getattr(import_module(_HOME[name]), name)


__all__ = [
    "at_choice",
    "choice_per_trial",
    "criterion_scores",
    "failure_rate",
    "gain_rows",
    "open_cube",
    "select_k",
    "selection_frequency",
    "selection_rows",
    "sqrt_n_scaled",
    "summarise",
]
