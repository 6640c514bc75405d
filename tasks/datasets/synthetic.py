"""Synthetic datasets with a known number of clusters, registered by name.

Each generator draws ``n`` fresh i.i.d. points per call, with explicit parameters and an explicit
generator, and returns the points together with the index of the component that produced them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

Sampler = Callable[..., tuple[NDArray[np.float64], NDArray[np.int64]]]


def gaussian_mixture(
    n: int,
    rng: np.random.Generator,
    *,
    centers: list[list[float]],
    std: float | list[float],
    weights: list[float] | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Isotropic Gaussian mixture: component ``j`` has mean ``centers[j]`` and sd ``std[j]``.

    Parameters
    ----------
    n : int
        Number of points.
    rng : numpy.random.Generator
    centers : list of list of float, shape (n_components, n_features)
    std : float or list of float, shape (n_components,)
    weights : list of float, shape (n_components,), optional
        Mixing proportions (uniform when omitted); normalised to sum to one.

    Returns
    -------
    X : ndarray of shape (n, n_features)
    component : ndarray of shape (n,)
    """
    means = np.asarray(centers, dtype=np.float64)
    n_components = means.shape[0]
    sds = np.broadcast_to(np.asarray(std, dtype=np.float64), (n_components,))
    p = np.full(n_components, 1.0 / n_components) if weights is None else np.asarray(weights, float)
    component = rng.choice(n_components, size=n, p=p / p.sum())
    noise = rng.standard_normal((n, means.shape[1]))
    return means[component] + sds[component, None] * noise, component.astype(np.int64)


def lange_gaussians3(
    n: int,
    rng: np.random.Generator,
    *,
    centers: list[list[float]] | None = None,
    std: float = 0.8,
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Seed 000, Fig. 1(d): three 2-D Gaussian clouds holding 1/4, 1/4 and 1/2 of the points.

    The counts are exact (25, 25, 50 at n = 100), as in the paper, and the points come out shuffled.
    By default the two small clouds sit at (-2.5, 4) and (2.5, 4) and the large one at the origin:
    merging the two small clouds is the best 2-cluster solution, but not by much, which gives the
    paper's picture of a "relatively high" stability at k = 2 and the highest at k = 3.
    """
    means = np.asarray(centers if centers is not None else [[-2.5, 4.0], [2.5, 4.0], [0.0, 0.0]], float)
    counts = np.array([n // 4, n // 4, n - 2 * (n // 4)])
    component = np.repeat(np.arange(3), counts)
    X = means[component] + std * rng.standard_normal((n, means.shape[1]))
    order = rng.permutation(n)
    return X[order], component[order].astype(np.int64)


def rings3(
    n: int,
    rng: np.random.Generator,
    *,
    radii: tuple[float, ...] | list[float] = (1.0, 2.5, 4.0),
    noise: float = 0.15,
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Seed 000, Fig. 1(e): concentric noisy rings, points shared in proportion to the radius.

    A point of ring ``j`` is ``(radii[j] + noise * z) * (cos t, sin t)`` with ``t`` uniform, so every
    ring has the same density of points along its length.
    """
    r = np.asarray(radii, dtype=np.float64)
    component = rng.choice(r.size, size=n, p=r / r.sum())
    angle = rng.uniform(0.0, 2.0 * np.pi, size=n)
    radius = r[component] + noise * rng.standard_normal(n)
    X = np.column_stack([radius * np.cos(angle), radius * np.sin(angle)])
    return X, component.astype(np.int64)


def shamir_mixture1d(
    n: int, rng: np.random.Generator, *, mu: float = 5.0
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Seed 001, Lemma 1: weight 2/3 at 0 and 1/6 at -mu and +mu, unit variances, in 1-D."""
    component = rng.choice(3, size=n, p=[1 / 6, 2 / 3, 1 / 6])
    X = (np.array([-mu, 0.0, mu])[component] + rng.standard_normal(n))[:, None]
    return X, component.astype(np.int64)


@dataclass(frozen=True)
class SyntheticDataset:
    """A registered generator with its default parameters and its true number of clusters."""

    name: str
    sample: Sampler
    defaults: Mapping[str, Any] = field(default_factory=dict)
    required: tuple[str, ...] = ()
    true_k: Callable[[Mapping[str, Any]], int] = lambda params: 3

    def resolve(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """Defaults overlaid with ``params``; unknown or missing names raise ``ValueError``."""
        allowed = set(self.defaults) | set(self.required)
        unknown = sorted(set(params) - allowed)
        if unknown:
            raise ValueError(f"unknown parameter {unknown[0]!r}; expected one of {sorted(allowed)}")
        missing = [name for name in self.required if name not in params]
        if missing:
            raise ValueError(f"missing parameter {missing[0]!r}; {self.name} needs {list(self.required)}")
        return {**self.defaults, **params}


SYNTHETIC: dict[str, SyntheticDataset] = {
    spec.name: spec
    for spec in [
        SyntheticDataset("lange_gaussians3", lange_gaussians3,
                         {"centers": [[-2.5, 4.0], [2.5, 4.0], [0.0, 0.0]], "std": 0.8}),
        SyntheticDataset("rings3", rings3, {"radii": [1.0, 2.5, 4.0], "noise": 0.15},
                         true_k=lambda params: len(params["radii"])),
        SyntheticDataset("shamir_mixture1d", shamir_mixture1d, {"mu": 5.0}),
        SyntheticDataset("gaussian_mixture", gaussian_mixture, {"weights": None, "std": 1.0},
                         required=("centers",), true_k=lambda params: len(params["centers"])),
    ]
}


def get_synthetic(name: str) -> SyntheticDataset:
    """The registered synthetic dataset ``name``; an unknown name lists the valid ones."""
    try:
        return SYNTHETIC[name]
    except KeyError:
        raise ValueError(f"unknown dataset {name!r}; expected one of {sorted(SYNTHETIC)}") from None
