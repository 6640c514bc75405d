"""Consensus clustering's resampling: a share of the items (and of the features) clustered once per k per resample
(Monti, Tamayo, Mesirov & Golub 2003, Sec. 3; Wilkerson & Hayes 2010, ConsensusClusterPlus's ``pItem`` and
``pFeature``), beside the same resampling of reference data sets (John et al. 2020, M3C).

The items of a (dataset, n) are its *universe*: every item when n is the dataset's size N, else a fixed n-subset
drawn once from ``stream(root, SUBSAMPLE, dataset_id, n)``. Resample h (a trial) draws
``floor(p_item * n)`` of them without replacement, and, when ``p_feature < 1``, ``floor(p_feature * d)`` of the d
features, from ``stream(root, SUBSAMPLE, dataset_id, n, h)``: every method and every k of the trial cluster the
same resample, so their comparisons are paired. The counts are floored as ConsensusClusterPlus's ``sampleCols``
does (``sampleN <- floor(space * pSamp)``), and so does ``consensusclustering`` (``int(n * frac)``); the drawn
positions are sorted, and the features are drawn after the items from the same stream.

Each resample is clustered once per k by the method's algorithm (its ``cluster_many`` when it has one: one call
for every feasible k), with ``stream(root, FIT, dataset_id, n, h, method_id, k, part)`` (k = 0 for a call of every
k), ``part`` 0 for the data. With ``references = B > 0``, B reference data sets are built once per (dataset, n, b)
from the universe's data by M3C's reference (:func:`ordercube.tasks.consensus.reference.m3c_reference`, from
``stream(root, NULL_DATA, dataset_id, n, b)``); resample h of reference b draws its own items and features from
``stream(root, SUBSAMPLE, dataset_id, n, h, b + 1)`` and is clustered the same way as part ``b + 1``. Row i of a
reference set stands for item i of the universe.

On a dissimilarity or a graph (a square matrix whose rows and columns are the objects) a resample takes the rows
and the columns of its items together; features do not apply there, nor do reference sets (built from coordinates).
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ordercube.tasks.params import integer, number
from ordercube.tasks.process_memo import once_per_process
from ordercube.tasks.schemes.base import Scheme
from ordercube.tasks.seeding import Purpose, stream
from ordercube.tasks.trial import BlockSpec, TrialOutcome, TrialRunner, describe

Labels = NDArray[np.int64]
Reference = Callable[[NDArray[np.float64], np.random.Generator], NDArray[np.float64]]
MAX_REFERENCES = 100_000
# The distance matrices kept for a block (the data's and each reference set's, n^2 doubles each) at most: 12 MB for
# 800 items and 25 reference sets; beyond, each resample's distances are computed from its points.
MAX_DISTANCE_BYTES = 256 * 2**20
SQUARE = ("dissimilarity", "graph")  # objects given by a square matrix: rows and columns subsampled together


def universe(items: int, n: int, root_seed: int, dataset_id: int) -> NDArray[np.int64]:
    """The items of a (dataset, n) in ascending order: all ``items`` when ``n`` is that many, else the ``n`` drawn
    once without replacement from ``stream(root_seed, SUBSAMPLE, dataset_id, n)`` (an address no resample has:
    theirs add the trial)."""
    if n == items:
        return np.arange(items, dtype=np.int64)
    rng = stream(root_seed, Purpose.SUBSAMPLE, dataset_id, n)
    return np.sort(rng.choice(items, size=n, replace=False)).astype(np.int64)


def resample(rng: np.random.Generator, n: int, features: int, p_item: float,
             p_feature: float) -> tuple[NDArray[np.int64], NDArray[np.int64] | None]:
    """One resample of ``n`` items with ``features`` features (Monti et al. 2003, Sec. 3; ConsensusClusterPlus's
    ``sampleCols``): ``floor(p_item * n)`` item positions drawn without replacement, sorted, then (only when
    ``p_feature < 1``) ``floor(p_feature * features)`` feature positions the same way; None: every feature.

    Returns
    -------
    items : ndarray of shape (floor(p_item * n),)
    features : ndarray of shape (floor(p_feature * features),) or None
    """
    drawn = np.sort(rng.choice(n, size=math.floor(p_item * n), replace=False)).astype(np.int64)
    if p_feature >= 1.0:
        return drawn, None
    return drawn, np.sort(rng.choice(features, size=math.floor(p_feature * features), replace=False)).astype(np.int64)


def _m3c_reference(X: NDArray[np.float64], rng: np.random.Generator) -> NDArray[np.float64]:
    from ordercube.tasks.consensus.reference import m3c_reference

    return m3c_reference(X, rng)  # type: ignore[no-any-return]


def refusal(objects: str, params: Mapping[str, Any], data: Any, n: int) -> str | None:
    """Why a block cannot be resampled by consensus at all, or None: the scheme's ``refusal`` (the config refuses
    it before the sweep), and every trial of such a block fails with the same words.

    Parameters
    ----------
    objects : str
        The dataset's objects (``points``, ``dissimilarity``, ``graph``, ...).
    params : mapping
        The scheme's resolved parameters.
    data : ndarray of shape (N, d) or None
        The dataset's fixed array (None: a dataset that draws fresh points every trial).
    n : int
        The block's n.
    """
    p_feature, references = float(params["p_feature"]), int(params["references"])
    if not isinstance(data, np.ndarray):
        return ("methods[].scheme: consensus resamples the fixed items of a dataset (rows of a file or an array, "
                "objects of a dissimilarity or graph matrix), and this dataset draws fresh points every trial; give "
                "the method a dataset read from a file, or use scheme: halves")
    if n > data.shape[0]:
        return (f"n: expected at most the dataset's {data.shape[0]} items for scheme consensus, got {n}; lower n")
    if objects in SQUARE and p_feature < 1.0:
        return (f"methods[].scheme_params.p_feature: a {objects} matrix has no features to subsample, got "
                f"p_feature = {p_feature}; set p_feature: 1.0 (its rows and columns are resampled together)")
    if objects in SQUARE and references > 0:
        return (f"methods[].scheme_params.references: M3C's reference data are built from coordinates, which a "
                f"{objects} matrix does not have, got references = {references}; set references: 0")
    if objects == "points" and p_feature < 1.0 and math.floor(p_feature * data.shape[1]) < 1:
        return (f"methods[].scheme_params.p_feature: {p_feature} of {data.shape[1]} features keeps none; raise "
                f"p_feature to at least {1 / data.shape[1]:.3g}")
    return None


def _fit_part(algorithm: Any, params: Mapping[str, Any], X: NDArray[np.float64], ks: list[int],
              rng_for: Callable[[int], np.random.Generator], *, distances: NDArray[np.float64] | None = None
              ) -> tuple[dict[int, Labels | str], dict[int, float]]:
    """One resample clustered at every k of ``ks``: its labels, or why that k's fit failed, and its time.
    ``distances``: the resample's Euclidean distances (condensed), for an algorithm's ``on_distances``."""
    out: dict[int, Labels | str] = {}
    seconds: dict[int, float] = {}
    if (algorithm.cluster_many is not None or distances is not None) and ks:
        started = time.perf_counter()
        try:
            many = algorithm.cluster_many(X, ks, rng_for(0), **params) if distances is None else \
                algorithm.on_distances(distances, ks, rng_for(0), **params)
            out = {k: np.asarray(many[k]) for k in ks}
        except Exception as error:  # every k of the joint fit fails with it
            out = dict.fromkeys(ks, describe(error))
        seconds = dict.fromkeys(ks, (time.perf_counter() - started) / len(ks))
    else:
        for k in ks:
            started = time.perf_counter()
            try:
                out[k] = np.asarray(algorithm.cluster(X, k, rng_for(k), **params))
            except Exception as error:
                out[k] = describe(error)
            seconds[k] = time.perf_counter() - started
    for k, labels in out.items():
        if isinstance(labels, np.ndarray) and (labels.shape != (X.shape[0],) or labels.dtype.kind not in "iu"
                                               or (labels.size and (labels.min() < 0 or labels.max() >= k))):
            out[k] = (f"{algorithm.name} returned labels of shape {labels.shape} and dtype {labels.dtype} outside "
                      f"0..{k - 1} for {X.shape[0]} items")
    return out, seconds


def _condensed(square: NDArray[np.float64]) -> NDArray[np.float64]:
    from scipy.spatial.distance import squareform

    return squareform(square, checks=False)  # type: ignore[no-any-return]


def trial_runner(algorithm: Any, spec: BlockSpec, source: Any, *,
                 reference: Reference | None = None) -> TrialRunner:
    """``compute_trial(trial)`` of a clusterer under the consensus scheme: resample ``trial`` of the data (part 0) and
    of each of the ``references`` reference sets (parts 1..B), each clustered once per k.

    Every k that fits ``floor(p_item * n)`` items (the algorithm's ``feasible``) is clustered; any other is
    infeasible with its reason, and a k whose fit fails on any part fails. The outcome has no values and, for
    every k of the block, the cluster of every item of the dataset in each part, -1 where the item was not drawn
    (every row -1 at a k that is not ok). ``reference(X, rng)`` builds a reference set from the universe's data
    (default: M3C's, :func:`ordercube.tasks.consensus.reference.m3c_reference`).
    """
    scheme_params = {**CONSENSUS.defaults, **dict(spec.scheme_params)}
    p_item, p_feature = float(scheme_params["p_item"]), float(scheme_params["p_feature"])
    references = int(scheme_params["references"])
    build = reference if reference is not None else _m3c_reference
    params = dict(spec.algorithm_params)
    objects = getattr(source, "objects", "points")
    data = getattr(source, "X", None)
    refused = refusal(objects, scheme_params, data, spec.n)
    cache: dict[str, Any] = {}
    # an algorithm that reads the points only through their distances clusters every resample from the submatrix of
    # the universe's distances, computed once (the same values as from the resample's points: each is one pair's)
    by_distances = (objects == "points" and p_feature >= 1.0 and getattr(algorithm, "on_distances", None) is not None
                    and (1 + references) * 8.0 * spec.n ** 2 <= MAX_DISTANCE_BYTES)

    def key() -> tuple[Any, ...]:
        """What the universe, the reference sets and their distances are a function of: the seed, the dataset and
        its bytes, n, the number of reference sets and their builder (one digest of the data per block)."""
        if "key" not in cache:
            digest = hashlib.blake2b(np.ascontiguousarray(data).tobytes(), digest_size=16).hexdigest()
            cache["key"] = ("consensus", spec.root_seed, spec.dataset_id, spec.n, references, build, objects,
                            data.shape, str(data.dtype), digest)
        return cache["key"]  # type: ignore[no-any-return]

    def distances(part: int) -> NDArray[np.float64]:
        """The square matrix of Euclidean distances of the universe's data (part 0) or of a reference set."""
        def compute() -> NDArray[np.float64]:
            from scipy.spatial.distance import pdist, squareform

            square = squareform(pdist(parts()[part]))
            square.flags.writeable = False  # shared by every block of the process
            return square  # type: ignore[no-any-return]

        return once_per_process((key(), "distances", part), compute)

    def parts() -> list[NDArray[np.float64]]:
        """The universe's data, then each reference set: built once per worker process for every block of the
        dataset (each is drawn from its own stream and the data alone: the same bits whichever block builds it)."""
        def compute() -> tuple[NDArray[np.int64], list[NDArray[np.float64]]]:
            kept = universe(data.shape[0], spec.n, spec.root_seed, spec.dataset_id)
            X = data[np.ix_(kept, kept)] if objects in SQUARE else data[kept]
            built = [X] + [np.asarray(build(X, stream(spec.root_seed, Purpose.NULL_DATA, spec.dataset_id, spec.n, b)),
                                      dtype=np.float64) for b in range(references)]
            for array in (kept, *built):
                array.flags.writeable = False  # shared by every block of the process
            return kept, built

        cache["universe"], built = once_per_process((key(), "parts"), compute)
        return built

    def compute_trial(trial: int) -> TrialOutcome:
        if refused is not None:
            raise ValueError(refused)
        started = time.perf_counter()
        sets = parts()
        kept: NDArray[np.int64] = cache["universe"]
        size = math.floor(p_item * spec.n)
        feasible = [k for k in spec.ks if algorithm.feasible(k, size)]
        labels = {k: np.full((len(sets), data.shape[0]), -1, dtype=np.int16) for k in spec.ks}
        failed: dict[int, str] = {}
        seconds = dict.fromkeys(spec.ks, 0.0)
        shared = time.perf_counter() - started
        for part, X in enumerate(sets):
            started = time.perf_counter()
            address = (spec.dataset_id, spec.n, trial) + ((part,) if part else ())
            items, features = resample(stream(spec.root_seed, Purpose.SUBSAMPLE, *address), spec.n,
                                       X.shape[1], p_item, p_feature)
            drawn = X[np.ix_(items, items)] if objects in SQUARE else \
                (X[items] if features is None else X[np.ix_(items, features)])
            among = _condensed(distances(part)[np.ix_(items, items)]) if by_distances else None
            shared += time.perf_counter() - started
            # every part is fitted at every feasible k, failed elsewhere or not: a joint fit's labels depend on the
            # ks it is asked for, which must not depend on another part's failure
            fitted, fit_seconds = _fit_part(algorithm, params, drawn, feasible, lambda k, part=part: stream(
                spec.root_seed, Purpose.FIT, spec.dataset_id, spec.n, trial, spec.method_id, k, part),
                distances=among)
            for k, outcome in fitted.items():
                seconds[k] += fit_seconds[k]
                if isinstance(outcome, str):
                    failed.setdefault(k, outcome if part == 0 else f"reference set {part}: {outcome}")
                else:
                    labels[k][part, kept[items]] = outcome
        for k in failed:
            labels[k][:] = -1
        infeasible = {k: (f"{algorithm.name} needs {getattr(algorithm, 'min_points_per_cluster', 1)} points per "
                          f"cluster: k={k} does not fit a resample of {size} items (floor of p_item = {p_item} "
                          f"times n = {spec.n})") for k in spec.ks if k not in feasible}
        for k in spec.ks:
            seconds[k] += shared / len(spec.ks)
        return TrialOutcome(values={}, failed=failed, infeasible=infeasible, seconds=seconds, assignments=labels)

    return compute_trial


def _part_roles(params: Mapping[str, Any]) -> tuple[str, ...]:
    return ("data",) + ("reference",) * int(params["references"])


def _fits(params: Mapping[str, Any]) -> float:
    """Per trial and k: one fit of p_item * n points for the data and each reference set."""
    return (1 + int(params["references"])) * float(params["p_item"])


CONSENSUS = Scheme(
    name="consensus",
    description="a share p_item of the items (and p_feature of the features) clustered once per k per resample, "
                "beside the same resamples of M3C reference sets (consensus clustering)",
    runner=trial_runner,
    gives=("assignments",),
    defaults={"p_item": 0.8, "p_feature": 1.0, "references": 0},
    ranges={"p_item": number(0.0, 1.0, low_open=True), "p_feature": number(0.0, 1.0, low_open=True),
            "references": integer(0, MAX_REFERENCES)},
    part_roles=_part_roles,
    fits=_fits,
    citation="Monti, Tamayo, Mesirov & Golub (2003), Sec. 3; Wilkerson & Hayes (2010); John et al. (2020)",
    refusal=refusal,
)
