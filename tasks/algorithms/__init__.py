"""Clustering algorithms, registered by name.

An algorithm is ``cluster(X, k, rng, **params) -> labels`` plus a feasibility rule; it never keeps
state between calls, so one registry entry serves every cell.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from tasks.algorithms.kmeans import kmeans


def _kmeans_labels(
    X: NDArray[np.float64], k: int, rng: np.random.Generator, *, n_init: int = 10, max_iter: int = 300,
    tol: float = 1e-4,
) -> NDArray[np.int64]:
    return kmeans(X, k, rng, n_init=n_init, max_iter=max_iter, tol=tol).labels


@dataclass(frozen=True)
class Algorithm:
    """A registered clustering algorithm.

    Attributes
    ----------
    cluster : callable
        ``cluster(X, k, rng, **params)`` → labels of shape (n_samples,) in ``0..k-1``.
    defaults : mapping
        The parameters it accepts, with their defaults.
    min_points_per_cluster : int
        ``k`` is infeasible on ``n`` points when ``k * min_points_per_cluster > n``.
    """

    name: str
    cluster: Callable[..., NDArray[np.int64]]
    defaults: Mapping[str, Any] = field(default_factory=dict)
    min_points_per_cluster: int = 2

    def feasible(self, k: int, n_points: int) -> bool:
        return 1 <= k and k * self.min_points_per_cluster <= n_points

    def resolve(self, params: Mapping[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(params) - set(self.defaults))
        if unknown:
            raise ValueError(f"unknown parameter {unknown[0]!r}; expected one of {sorted(self.defaults)}")
        return {**self.defaults, **params}


ALGORITHMS: dict[str, Algorithm] = {
    "kmeans": Algorithm("kmeans", _kmeans_labels, {"n_init": 10, "max_iter": 300, "tol": 1e-4}),
}


def get_algorithm(name: str) -> Algorithm:
    """The registered algorithm ``name``; an unknown name lists the valid ones."""
    try:
        return ALGORITHMS[name]
    except KeyError:
        raise ValueError(f"unknown algorithm {name!r}; expected one of {sorted(ALGORITHMS)}") from None
