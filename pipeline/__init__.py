"""Orchestration, storage, reduction and the CLI of ordercube.

Python API::

    from pipeline import open_cube, criterion_scores, summarise, select_k
    cube = open_cube("results/quickstart.zarr")
    k_hat = select_k(criterion_scores(cube))
"""

from pipeline.reduce import (
    choice_per_trial,
    criterion_scores,
    failure_rate,
    select_k,
    selection_frequency,
    sqrt_n_scaled,
    summarise,
)
from pipeline.store import open_cube

__all__ = [
    "choice_per_trial",
    "criterion_scores",
    "failure_rate",
    "open_cube",
    "select_k",
    "selection_frequency",
    "sqrt_n_scaled",
    "summarise",
]
