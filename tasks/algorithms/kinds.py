"""Algorithm records by kind: a small common base, and one type per model family.

The base holds what every algorithm has (its name, parameters and their ranges, its cost, what objects it takes,
what it needs of the data and what it gives its criteria); a kind adds its own kernels and provides the engine's
trial runner (:mod:`ordercube.tasks.trial`): ``trial_runner(spec, source) -> compute_trial``. The engine
(:func:`ordercube.tasks.cell.run_block`) and the config ask these records, never the kind's name.

What a method gives its criteria (``gives``, matched against ``Criterion.reads`` and ``Criterion.models`` by
:func:`ordercube.tasks.capabilities.why_not`): ``labels`` (each half's clustering, extended by a predictor), ``model:KIND``
(a fitted model of that kind beside the labels), ``error_rates`` (a classifier's rates, computed with the labels
as the response), ``orders`` (every order of a trial from one fit).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import KW_ONLY, dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from ordercube.tasks.deferred import Deferred
from ordercube.tasks.params import Param, check_params, undeclared

if TYPE_CHECKING:
    from ordercube.tasks.trial import BlockSpec, TrialRunner


@dataclass(frozen=True)
class BaseAlgorithm:
    """What every registered algorithm declares.

    Attributes
    ----------
    name : str
    defaults : mapping
        The parameters it accepts, with their defaults.
    ranges : mapping
        The values each parameter accepts (:class:`ordercube.tasks.params.Param`), checked when a config is read;
        every parameter with a default must have one.
    check : callable or None
        ``check(params)`` tests the given parameters together and raises ``ParamError``.
    seconds_per_point : float
        Compute time of one fit per point and order (a trial's two halves together count as one fit of its n
        points), used only to estimate the work (to size tasks, to choose between this process and a cluster).
        Measured on this project's 2-core machine by ``benchmarks/cost_model.py`` (the cube's ``seconds`` of
        reduced shipped configs against the estimate).
    seconds_per_fit : float
        Compute time of one fit whatever its size (restarts set up, calls around the kernel). The estimate of
        a fit of n points with d features at order k is ``seconds_per_fit + n ** points_power * k *
        (seconds_per_point + d * seconds_per_feature)``; without k when one fit serves every k of a trial
        (``shares_fit_across_k``: that fit's cost is shared among the trial's ks).
    seconds_per_feature : float
        Compute time per point, order and feature, beyond ``seconds_per_point`` (distances to centroids).
    points_power : float
        How the cost of a fit grows with n: 1 for k-means' passes over the points, 2-3 for algorithms that
        hold and merge pairwise matrices.
    fit_scale : callable
        ``fit_scale(params)`` → the cost of a fit with the resolved ``params`` relative to one with the defaults,
        at which the costs above are measured (restarts: ``n_init / 10`` for k-means). Default: 1.
    releases_gil : bool
        Whether its kernels spend their time outside the GIL (numba ``nogil``, numpy's array loops), so that a
        sweep in one process may compute on one thread per core instead of starting a cluster.
    takes : str
        The objects it takes (a dataset's ``objects``): ``points``, ``graph`` (nodes, each row its edge weights),
        ``dissimilarity``, ``matrix`` (the rows of a matrix), or a plug-in's own kind.
    needs : tuple of str
        What else it needs of the data (a dataset's ``provides``): ``labels``, ``boolean``, ...
    max_features : int or None
        The largest number of features it accepts (1 for one-dimensional methods).
    pair_bytes : float
        Memory per pair of points of a half for algorithms that hold pairwise matrices (used only to estimate a
        cell's memory at config load).
    variants : mapping
        The same method on other objects, by the objects it then takes (agglomerative clustering on
        dissimilarities): its own record, with its own kernels and ranges.
    predictor : str or None
        The predictor matched to its clustering principle (Lange et al. 2002, Sec. 3: nearest centroid for
        k-means, nearest neighbour for path-based and spectral clustering, the Bayes posterior for a mixture):
        what a method of it uses when the config names none. None: a method must name one (or needs none).
    """

    name: str
    _: KW_ONLY
    defaults: Mapping[str, Any] = field(default_factory=dict)
    ranges: Mapping[str, Param] = field(default_factory=dict)
    check: Callable[[Mapping[str, Any]], None] | None = None
    seconds_per_point: float = 2.5e-6
    seconds_per_fit: float = 0.0
    seconds_per_feature: float = 0.0
    points_power: float = 1.0
    fit_scale: Callable[[Mapping[str, Any]], float] = lambda params: 1.0
    releases_gil: bool = False
    takes: str = "points"
    needs: tuple[str, ...] = ()
    max_features: int | None = None
    pair_bytes: float = 0.0
    variants: Mapping[str, BaseAlgorithm] = field(default_factory=dict)
    predictor: str | None = None

    #: What the kind is, in an error message.
    kind: ClassVar[str] = "an algorithm"

    def __post_init__(self) -> None:
        missing = undeclared(self.defaults, self.ranges)
        if missing:  # fail at import: a parameter nobody checks would reach the kernels unchecked
            raise TypeError(f"algorithm {self.name!r}: parameter(s) {missing} lack a declared range that holds "
                            "their default (ranges={name: ordercube.tasks.params.integer(...), ...})")

    @property
    def gives(self) -> tuple[str, ...]:
        """What a method of it gives its criteria (see the module)."""
        return ()

    @property
    def needs_predictor(self) -> bool:
        """Whether a method of it names a predictor (to extend the halves' labels to other objects)."""
        return "labels" in self.gives

    @property
    def shares_fit_across_k(self) -> bool:
        """Whether one fit serves every k of a trial, so that its values depend on the ks asked for together
        (a task computing some of them must be given all of them)."""
        return False

    @property
    def runs_schemes(self) -> bool:
        """Whether a method of it may name a resampling scheme (``methods[i].scheme``: consensus clustering,
        M3C), run through :meth:`with_scheme`."""
        return False

    @property
    def partitions(self) -> bool:
        """Whether a fit labels each of its objects with a group in ``0..k-1`` (``cluster(X, k, rng)``): what
        ``ordercube partition`` reports for a chosen k."""
        return False

    def with_scheme(self, scheme: str) -> BaseAlgorithm:
        """This algorithm as a method of the resampling scheme ``scheme`` runs it: itself for the default ("");
        ``ValueError`` for another scheme unless the kind runs schemes (:attr:`runs_schemes`)."""
        if scheme:
            raise ValueError(f"{self.name!r} is {self.kind}: it runs no resampling scheme ({scheme!r})")
        return self

    def feasible(self, k: int, size: int) -> bool:
        """Whether order ``k`` can be fitted on ``size`` objects (a half, a learning set, a matrix's rank)."""
        return 1 <= k <= size

    def resolve(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """``params`` over the defaults; ``ParamError`` naming an unknown parameter or a value out of range."""
        check_params(params, self.ranges, check=self.check)
        return {**self.defaults, **params}

    def accepts(self, objects: str) -> bool:
        """Whether it (or one of its variants) runs on data whose objects are ``objects``."""
        return objects == self.takes or objects in self.variants

    def on(self, objects: str | None) -> BaseAlgorithm:
        """The record that runs on ``objects``: this one, or its variant for them."""
        return self.variants.get(objects, self) if objects is not None and objects != self.takes else self

    def trial_runner(self, spec: BlockSpec, source: Any) -> TrialRunner:
        """``compute_trial(trial) -> TrialOutcome`` for the block ``spec`` on ``source`` (:mod:`ordercube.tasks.trial`)."""
        raise NotImplementedError(f"{type(self).__name__} {self.name!r} gives no trial runner")

    def summary(self, predictor: str) -> str:
        """How a method of it reads, for ``ordercube validate``: ``+ nearest_centroid``, ``classifier``."""
        return f"+ {predictor}" if self.needs_predictor else self.kind.split(" ", 1)[1]


Labels = NDArray[np.int64]


@dataclass(frozen=True)
class Clusterer(BaseAlgorithm):
    """A clustering algorithm: each half of a trial is clustered, a predictor extends one solution to the other
    half, and the criteria read the fits (:mod:`ordercube.tasks.clustering`).

    Attributes
    ----------
    cluster : callable
        ``cluster(X, k, rng, **params)`` → labels of shape (n_samples,) in ``0..k-1``.
    cluster_many : callable or None
        ``cluster_many(X, ks, rng, **params)`` → ``{k: labels}``, for algorithms that share work
        across k (sorting, prefix sums, dynamic-programming layers); used instead of ``cluster``.
    fit : callable or None
        ``fit(X, k, rng, **params)`` → ``(labels, model)``: the same labels as ``cluster`` and the fitted model
        they come from, for criteria that read the model (Frank, Chehreghani & Buhmann 2011's transfer costs);
        called instead of ``cluster`` when a criterion of the method needs it, so nothing is fitted twice.
    on_distances : callable or None
        ``on_distances(distances, ks, rng, **params)`` → the same ``{k: labels}`` as ``cluster_many`` on the points
        whose Euclidean distances are ``distances`` (condensed, in ``scipy.spatial.distance.pdist``'s order), for an
        algorithm that reads the points only through them (agglomerative clustering): a scheme that clusters many
        subsets of the same points (consensus clustering's resamples) computes the distances once.
    model : str or None
        The kind of model ``fit`` returns, matched against ``Criterion.models``: ``"mixture"`` (with
        ``score_samples(X)``, the log-likelihood per point), ``"centroids"`` (with ``centers`` of shape
        (k, n_features)), ``"graph_partition"``.
    min_points_per_cluster : int
        ``k`` is infeasible on ``n`` points when ``k * min_points_per_cluster > n``.
    """

    cluster: Callable[..., Labels]
    _: KW_ONLY
    cluster_many: Callable[..., dict[int, Labels]] | None = None
    on_distances: Callable[..., dict[int, Labels]] | None = None
    fit: Callable[..., tuple[Labels, Any]] | None = None
    model: str | None = None
    min_points_per_cluster: int = 2
    scheme: str = ""

    kind: ClassVar[str] = "a clustering algorithm"

    @property
    def gives(self) -> tuple[str, ...]:
        """What a method of it gives under its resampling scheme (``scheme``; "" the default, the two halves):
        the scheme's ``gives``, with the fitted model's tag when the scheme gives the halves' labels."""
        from ordercube.tasks.schemes import get_scheme  # the schemes name this module's runners

        gives = get_scheme(self.scheme).gives
        return gives + ((f"model:{self.model}",) if self.model and "labels" in gives else ())

    def with_scheme(self, scheme: str) -> Clusterer:
        """This algorithm (and its variants) as a method of the resampling scheme ``scheme`` runs it: what it gives
        its criteria is then the scheme's (:attr:`gives`)."""
        if scheme == self.scheme:
            return self
        variants = {objects: _scheme_set(variant, scheme) if isinstance(variant, Clusterer) else variant
                    for objects, variant in self.variants.items()}
        return replace(self, scheme=scheme, variants=variants)

    @property
    def shares_fit_across_k(self) -> bool:
        return self.cluster_many is not None

    @property
    def runs_schemes(self) -> bool:
        return True

    @property
    def partitions(self) -> bool:
        return True

    def feasible(self, k: int, size: int) -> bool:
        return 1 <= k and k * self.min_points_per_cluster <= size

    def infeasible_reason(self, k: int, size: int) -> str:
        return (f"{self.name} needs {self.min_points_per_cluster} points per cluster: k={k} does not fit a half of "
                f"{size} points")

    def trial_runner(self, spec: BlockSpec, source: Any) -> TrialRunner:
        """The runner of the block's resampling scheme (:func:`ordercube.tasks.schemes.scheme_of`): the two halves by
        default (:func:`ordercube.tasks.clustering.trial_runner`)."""
        from ordercube.tasks.schemes import scheme_of

        scheme, _ = scheme_of(spec)
        return scheme.runner(self, spec, source)  # type: ignore[no-any-return]

    def with_dissimilarity_variant(self, many: Callable[..., dict[int, Labels]],
                                   ranges: Mapping[str, Param] | None = None) -> Clusterer:
        """This algorithm with its variant on a ``distances`` dataset's halves (every k from ``many``,
        ``half`` in :func:`ordercube.tasks.datasets.sources.node_halves`' layout), whose parameters accept ``ranges``
        (narrower than on points: no Ward linkage)."""
        variant = replace(self, cluster=partial(_one_k, many), cluster_many=many, on_distances=None, fit=None,
                          model=None, takes="dissimilarity", variants={})
        # its defaults may lie outside these (Ward's linkage, the default on points): a method on dissimilarities
        # names its linkage, which the config checks against them (ordercube.pipeline.config.study)
        object.__setattr__(variant, "ranges", {**self.ranges, **(ranges or {})})
        return replace(self, variants={**self.variants, "dissimilarity": variant})


def _scheme_set(variant: Clusterer, scheme: str) -> Clusterer:
    """A copy of ``variant`` under ``scheme``, its defaults not checked again: a dissimilarity variant keeps the
    defaults of points (Ward's linkage) outside its own ranges (:meth:`Clusterer.with_dissimilarity_variant`)."""
    moved = copy.copy(variant)
    object.__setattr__(moved, "scheme", scheme)
    return moved


def _one_k(many: Callable[..., dict[int, Labels]], X: NDArray[np.float64], k: int,
           rng: np.random.Generator, **params: Any) -> Labels:
    return many(X, [k], rng, **params)[k]


@dataclass(frozen=True)
class Classifier(BaseAlgorithm):
    """A classifier whose order k is chosen with labels as the response (Daudin & Mary-Huard 2008): every k of a
    trial from one call of its kernel (:mod:`ordercube.tasks.supervised`).

    Attributes
    ----------
    classify : callable
        ``classify(X_learn, y_learn, X_test, y_test, ks, target, **params, **criterion options)`` →
        ``{variable: values of shape (len(ks),)}`` for every criterion that reads ``error_rates``.
    points_beyond_k : int
        k is feasible on a learning set of at least ``k + points_beyond_k`` points: kNN's leave-one-out needs k
        other points (1); at most k intervals on fewer than k points is the fit of k = n again (0).
    """

    classify: Callable[..., dict[str, NDArray[np.float64]]]
    _: KW_ONLY
    points_beyond_k: int = 1
    needs: tuple[str, ...] = ("labels",)

    kind: ClassVar[str] = "a classifier fitted with the labels"

    @property
    def gives(self) -> tuple[str, ...]:
        return ("error_rates",)

    def feasible(self, k: int, size: int) -> bool:
        return 1 <= k and k + self.points_beyond_k <= size

    def trial_runner(self, spec: BlockSpec, source: Any) -> TrialRunner:
        return Deferred("ordercube.tasks.supervised:trial_runner")(self, spec, source)  # type: ignore[no-any-return]

    def summary(self, predictor: str) -> str:
        return "classifier"


@dataclass(frozen=True)
class MatrixModel(BaseAlgorithm):
    """A matrix model whose order is a rank (Frank, Chehreghani & Buhmann 2011, section 2.4-2.6): each criterion
    computes every rank of a trial from one fit, with the computation it registers for this model
    (``Criterion.computations``; :mod:`ordercube.tasks.matrix`). ``needs=("boolean",)``: 0/1 data only."""

    _: KW_ONLY
    takes: str = "matrix"

    kind: ClassVar[str] = "a matrix model"

    @property
    def gives(self) -> tuple[str, ...]:
        return ("orders",)

    def trial_runner(self, spec: BlockSpec, source: Any) -> TrialRunner:
        return Deferred("ordercube.tasks.matrix:trial_runner")(self, spec, source)  # type: ignore[no-any-return]
