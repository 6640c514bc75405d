"""Synthetic datasets with a known number of clusters, registered by name.

Each generator draws ``n`` fresh i.i.d. points per call, with explicit parameters and an explicit
generator, and returns the points together with the index of the component that produced them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from numbers import Real
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ordercube.tasks.datasets.bounds import MAX_PARAMETER
from ordercube.tasks.datasets.graphs import planted_graph

Sampler = Callable[..., tuple[NDArray[np.float64], NDArray[np.int64]]]
Checker = Callable[[Mapping[str, Any]], None]


class ParameterError(ValueError):
    """A generator parameter out of its range: ``name`` is the parameter, the message says what was
    expected, the value received and the fix."""

    def __init__(self, name: str, expected: str, value: Any, fix: str) -> None:
        self.name, self.expected, self.value, self.fix = name, expected, value, fix
        super().__init__(f"{name}: expected {expected}, got {_shown(value)}; {fix}")


def _shown(value: Any, limit: int = 60) -> str:
    """``repr(value)`` cut to ``limit`` characters; a huge integer by its number of digits (Python refuses
    to print one of more than 4300)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 128:
        return f"an integer of about {int(value.bit_length() * math.log10(2)) + 1} digits"
    try:
        text = repr(value)
    except ValueError:  # a list holding such an integer
        return "a list holding an integer of more than 4300 digits"
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def _is_number(value: Any) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool)


def check_number(name: str, value: Any, *, minimum: float | None = None, strict: bool = False,
                 example: str = "1.0", fix: str | None = None) -> None:
    """A finite real number, at most ``MAX_PARAMETER`` in size, >= ``minimum`` (> when ``strict``)."""
    expected = "a finite number" + ("" if minimum is None else f" {'>' if strict else '>='} {minimum:g}")
    expected += f" of size at most {MAX_PARAMETER:g}"
    # abs() first: an int too large for a float has no isfinite(); NaN and inf fail the comparison
    ok = _is_number(value) and abs(value) <= MAX_PARAMETER and math.isfinite(value)
    if ok and minimum is not None:
        ok = value > minimum if strict else value >= minimum
    if not ok:
        raise ParameterError(name, expected, value, fix or f"e.g. {name}: {example}")


def check_numbers(name: str, value: Any, *, length: int | None = None, minimum: float | None = None,
                  strict: bool = False, example: str) -> None:
    """A non-empty list of numbers (of ``length`` items when given), each checked by :func:`check_number`.

    ``example`` is a valid list, e.g. ``"[1.0, 2.5]"``.
    """
    size = "a non-empty list" if length is None else f"a list of {length}"
    if not isinstance(value, (list, tuple)) or not value or (length is not None and len(value) != length):
        raise ParameterError(name, f"{size} numbers", value, f"e.g. {name}: {example}")
    for j, item in enumerate(value):
        check_number(f"{name}[{j}]", item, minimum=minimum, strict=strict, fix=f"e.g. {name}: {example}")


def check_points(name: str, value: Any, *, count: int | None = None) -> None:
    """A list of ``count`` (or at least one) distinct points, each a non-empty list of finite numbers of
    the same length."""
    expected = (f"a list of {count} points" if count else "a non-empty list of points") + " (lists of coordinates)"
    fix = f"e.g. {name}: [[0, 0], [5, 0], [0, 5]] (in 1-D: [[0], [5], [10]])"
    if not isinstance(value, (list, tuple)) or not value or (count is not None and len(value) != count):
        raise ParameterError(name, expected, value, fix)
    if not all(isinstance(point, (list, tuple)) and point for point in value):
        raise ParameterError(name, expected, value, fix)
    if len({len(point) for point in value}) > 1:
        raise ParameterError(name, "points of the same dimension", value, "give every point as many coordinates")
    for j, point in enumerate(value):
        for c, coordinate in enumerate(point):
            check_number(f"{name}[{j}][{c}]", coordinate, fix=fix)
    if len({tuple(point) for point in value}) < len(value):
        raise ParameterError(name, "distinct points (the true k is their number)", value, "remove the repeated point")


def gaussian_mixture(
    n: int,
    rng: np.random.Generator,
    *,
    centers: list[list[float]],
    std: float | list[float],
    weights: list[float] | None = None,
    paired: bool = False,
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Isotropic Gaussian mixture: component ``j`` has mean ``centers[j]`` and sd ``std[j]``.

    With ``paired``, point ``n // 2 + i`` is drawn from the component of point ``i`` (Frank et al. 2011's generative
    mapping, eq. 5: "we randomly sample pairs of data items", Sec. 2.2): the source then shuffles pairs, so
    row i of the second half is the pair of row i of the first. An odd n's last point is unpaired.

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
    if paired:
        half = n // 2
        drawn = rng.choice(n_components, size=n - half, p=p / p.sum())
        component = np.concatenate([drawn[:half], drawn[:half], drawn[half:]])
    else:
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
    """Lange et al. (2002), Sec. 4, Fig. 1: three 2-D Gaussian clouds holding 1/4, 1/4 and 1/2 of the points.

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
    """Lange et al. (2002), Fig. 1(e): concentric noisy rings, points shared in proportion to the radius.

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
    """Shamir & Tishby (2007), Lemma 1: weight 2/3 at 0 and 1/6 at -mu and +mu, unit variances, in 1-D.

    The components are ``rng.choice(3, size=n, p=[1/6, 2/3, 1/6])``, drawn as that method draws them (one uniform
    per point against the normalised cumulative weights, ``searchsorted`` on the right) but with two comparisons
    per point instead of a binary search: the same draws, the same components, four times faster.
    """
    cdf = np.array([1 / 6, 2 / 3, 1 / 6]).cumsum()
    cdf /= cdf[-1]
    uniform = rng.random(n)
    component = (uniform >= cdf[0]).astype(np.int64)
    component += uniform >= cdf[1]  # cdf[2] is 1 and a uniform is below 1
    X = (np.array([-mu, 0.0, mu])[component] + rng.standard_normal(n))[:, None]
    return X, component


def kearns_target(x: NDArray[np.float64], d: int) -> NDArray[np.int64]:
    """Kearns' target f*(x) = floor(d x) mod 2 on [0, 1] (Daudin & Mary-Huard 2008, Sec. 3.2: "[0,1] is divided into d equal
    subintervals, alternatively labelled 0 and 1"; the first is labelled 0, a choice the paper leaves open); x = 1 belongs
    to the last subinterval."""
    return (np.minimum(np.floor(d * np.asarray(x)), d - 1).astype(np.int64) % 2)


def kearns_intervals(
    n: int, rng: np.random.Generator, *, d: int = 10, eta: float = 0.2
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Daudin & Mary-Huard (2008), Sec. 3.2: X ~ U[0, 1] and Y = f*(X), flipped with probability ``eta``.

    Returns the points, shape (n, 1), and the noisy labels Y: for a classifier they are the response,
    not the ground truth of a clustering (f* is known exactly, see ``kearns_target``).
    """
    x = rng.random(n)
    flipped = rng.random(n) < eta
    return x[:, None], kearns_target(x, d) ^ flipped.astype(np.int64)


def _check_kearns_intervals(params: Mapping[str, Any]) -> None:
    d = params["d"]
    if not (isinstance(d, int) and not isinstance(d, bool) and 1 <= d <= 1_000_000):
        raise ParameterError("d", "an integer number of subintervals in [1, 1000000]", d, "e.g. d: 10 (the paper's)")
    eta = params["eta"]
    check_number("eta", eta, minimum=0.0, example="0.2")
    if eta >= 0.5:
        raise ParameterError("eta", "a label-noise probability in [0, 0.5)", eta,
                             "e.g. eta: 0.2; at 0.5 the labels carry no information")


def _check_gaussian_mixture(params: Mapping[str, Any]) -> None:
    check_points("centers", params["centers"])
    count = len(params["centers"])
    std = params["std"]
    if isinstance(std, (list, tuple)):
        check_numbers("std", std, length=count, minimum=0.0, strict=True, example=str([1.0] * count))
    else:
        check_number("std", std, minimum=0.0, strict=True)
    if params["weights"] is not None:
        # a zero weight would leave a center without points while the true k still counts it
        check_numbers("weights", params["weights"], length=count, minimum=0.0, strict=True, example=str([1] * count))
    if not isinstance(params.get("paired", False), bool):
        raise ParameterError("paired", "true or false", params["paired"], "e.g. paired: true (Frank et al. 2011, eq. 5)")


def _signed_graph(n: int, rng: np.random.Generator, **params: Any) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    return planted_graph(n, rng, **params)


def _check_signed_graph(params: Mapping[str, Any]) -> None:
    clusters = params["clusters"]
    if not (isinstance(clusters, int) and not isinstance(clusters, bool) and 1 <= clusters <= 100_000):
        raise ParameterError("clusters", "an integer number of planted clusters >= 1", clusters, "e.g. clusters: 3")
    for name in ("q", "p"):
        check_number(name, params[name], minimum=0.0, example="0.3")
        if params[name] > 1:
            raise ParameterError(name, "a probability in [0, 1]", params[name], f"e.g. {name}: 0.3")


def _check_lange_gaussians3(params: Mapping[str, Any]) -> None:
    if params["centers"] is not None:
        check_points("centers", params["centers"], count=3)
    check_number("std", params["std"], minimum=0.0, strict=True, example="0.8")


def _check_rings3(params: Mapping[str, Any]) -> None:
    check_numbers("radii", params["radii"], minimum=0.0, strict=True, example="[1.0, 2.5, 4.0]")
    if len(set(params["radii"])) < len(params["radii"]):
        raise ParameterError("radii", "distinct radii (the true k is their number)", params["radii"],
                             "remove the repeated radius")
    check_number("noise", params["noise"], minimum=0.0, example="0.15")


def _check_shamir_mixture1d(params: Mapping[str, Any]) -> None:
    # mu = 0 puts the three components on top of each other; the mixture is symmetric, so mu > 0 loses nothing
    check_number("mu", params["mu"], minimum=0.0, strict=True, example="5.0")


@dataclass(frozen=True)
class SyntheticDataset:
    """A registered generator with its default parameters and its true number of clusters."""

    name: str
    sample: Sampler
    defaults: Mapping[str, Any] = field(default_factory=dict)
    required: tuple[str, ...] = ()
    # Accepted but absent from the resolved parameters unless given (the generator's own default applies): a
    # parameter added later that leaves the identity, and so the cube, of every dataset that does not use it.
    optional: tuple[str, ...] = ()
    true_k: Callable[[Mapping[str, Any]], int] = lambda params: 3
    check: Checker = lambda params: None
    # "graph": the sample is a signed graph's weight matrix (a row per node), halved as node sets
    objects: str = "points"
    # What a supervised criterion needs to compute exact error rates (the target function and the noise),
    # from the parameters; None when the generator's labels are only known classes.
    target: Callable[[Mapping[str, Any]], tuple[Any, ...]] | None = None
    # What else its data offer, from the parameters (ordercube.tasks.capabilities): "labels" (a response), "target",
    # "paired" (paired halves)
    provides: Callable[[Mapping[str, Any]], tuple[str, ...]] = lambda params: ()
    # The smallest n its samples can be drawn and halved at, and why, from the parameters (None: any)
    smallest_n: Callable[[Mapping[str, Any]], tuple[int, str]] | None = None

    def resolve(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """Defaults overlaid with ``params``, as given (they are the dataset's identity in the cube).

        Unknown or missing names raise ``ValueError``; a value out of its range ``ParameterError``
        (from ``check``), which names the parameter.
        """
        allowed = set(self.defaults) | set(self.required) | set(self.optional)
        unknown = sorted(set(params) - allowed)
        if unknown:
            raise ValueError(f"unknown parameter {unknown[0]!r}; expected one of {sorted(allowed)}")
        missing = [name for name in self.required if name not in params]
        if missing:
            raise ValueError(f"missing parameter {missing[0]!r}; {self.name} needs {list(self.required)}")
        resolved = {**self.defaults, **params}
        self.check(resolved)
        return resolved


SYNTHETIC: dict[str, SyntheticDataset] = {
    spec.name: spec
    for spec in [
        SyntheticDataset("lange_gaussians3", lange_gaussians3,
                         {"centers": [[-2.5, 4.0], [2.5, 4.0], [0.0, 0.0]], "std": 0.8}, check=_check_lange_gaussians3),
        SyntheticDataset("rings3", rings3, {"radii": [1.0, 2.5, 4.0], "noise": 0.15},
                         true_k=lambda params: len(params["radii"]), check=_check_rings3),
        SyntheticDataset("shamir_mixture1d", shamir_mixture1d, {"mu": 5.0}, check=_check_shamir_mixture1d),
        SyntheticDataset("gaussian_mixture", gaussian_mixture, {"weights": None, "std": 1.0}, optional=("paired",),
                         required=("centers",), true_k=lambda params: len(params["centers"]),
                         check=_check_gaussian_mixture,
                         provides=lambda params: ("paired",) if params.get("paired", False) else ()),
        # Frank et al. (2011), Sec. 6's correlation-clustering graph: n nodes in equal clusters, +1 within, -1 between,
        # an inter-cluster edge turned +1 with probability q, then any edge replaced by a random sign with probability p
        SyntheticDataset("signed_graph", _signed_graph, {"clusters": 3, "q": 0.3, "p": 0.7},
                         true_k=lambda params: params["clusters"], check=_check_signed_graph, objects="graph",
                         smallest_n=lambda params: (2 * params["clusters"],
                                                    f"{params['clusters']} planted clusters in each half")),
        # labels as the response of a classifier (Daudin & Mary-Huard 2008); its order k has no "true" value to miss
        SyntheticDataset("kearns_intervals", kearns_intervals, {"d": 10, "eta": 0.2}, true_k=lambda params: -1,
                         check=_check_kearns_intervals, target=lambda params: (params["d"], params["eta"]),
                         provides=lambda params: ("labels", "target")),
    ]
}


def get_synthetic(name: str) -> SyntheticDataset:
    """The registered synthetic dataset ``name``; an unknown name lists the valid ones."""
    from ordercube.tasks.misses import lookup  # a plug-in's name where none is loaded yet (a worker)

    return lookup(SYNTHETIC, "dataset", name)
