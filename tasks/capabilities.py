"""What fits what: datasets declare their objects, algorithms what they take and give, criteria what they need.

One function, :func:`why_not`, answers "can this criterion run on this method on this dataset, and if not why";
its answer names what would fit. The vocabulary:

- a dataset's ``objects``: ``points`` (feature vectors), ``graph`` (nodes, each row its edge weights),
  ``dissimilarity`` (objects known by their dissimilarities), ``matrix`` (the rows of a matrix model's data), or
  a plug-in's own (:data:`OBJECTS` says how each reads and where it comes from); its ``provides``: ``labels``
  (labels as a response), ``target`` (exact error rates), ``paired`` (paired halves), ``image`` (a clean image),
  ``boolean`` (0/1 entries), ``test_set`` (a learning set below n);
- an algorithm's ``takes`` (objects, or one of its ``variants``), ``needs`` (provisions) and ``gives``
  (:mod:`ordercube.tasks.algorithms.kinds`);
- a criterion's ``reads`` (matched against ``gives``), ``defined_for``, ``models``, ``needs_data``,
  ``needs_paired_halves`` and whether it reads the halves only (:class:`ordercube.tasks.criteria.base.Criterion`);
- a predictor's objects (:func:`ordercube.tasks.predictors.predictor_takes`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ordercube.tasks.algorithms import ALGORITHMS
from ordercube.tasks.algorithms.kinds import BaseAlgorithm
from ordercube.tasks.criteria import CRITERIA
from ordercube.tasks.criteria.base import Criterion
from ordercube.tasks.predictors import PREDICTORS, predictor_takes


@dataclass(frozen=True)
class ObjectKind:
    """How a kind of objects reads in a message: what a dataset of them is, what an algorithm taking them
    takes, and where such data come from (a config's ``kind``)."""

    dataset: str
    taken: str
    source: str
    unit: str = "objects"  # what one of them is called: a row, a node, an object
    fresh: str = ""  # a generator's trial, in the data line ({features}: the number of features)


OBJECTS: dict[str, ObjectKind] = {
    "points": ObjectKind("points", "points", "kind: file or a generator of points", "rows",
                           "{features} features, n fresh points per trial"),
    "graph": ObjectKind("a graph (its objects are nodes)", "the nodes of a graph", "kind: signed_graph or edge_list",
                        "nodes",
                        "a fresh signed graph of n nodes per trial, halved as node sets"),
    "dissimilarity": ObjectKind("a distance matrix (dissimilarities)", "dissimilarities", "kind: distances"),
    "matrix": ObjectKind("a matrix", "matrices", "kind: image or boolean_matrix", "rows"),
}


def objects_kind(objects: str) -> ObjectKind:
    """How ``objects`` read in a message (a plug-in's own kind: by its name)."""
    return OBJECTS.get(objects, ObjectKind(f"{objects} objects", f"{objects} objects", f"data of {objects} objects",
                                           "objects", f"n fresh {objects} objects per trial"))
# What a criterion that reads a method's output is, by what it reads, in a message.
READS: dict[str, str] = {
    "labels": "a clustering criterion",
    "error_rates": "an error rate of a classifier",
    "orders": "a matrix model criterion",
}
# What a dataset provision is, how to get it, and the dataset's key that gives it, in a message ("": an algorithm
# that needs it is what to change).
PROVISIONS: dict[str, tuple[str, str, str]] = {
    "labels": ("labels as its response", "give labels: {path: FILE, column: NAME}, or use kind: kearns_intervals",
               "labels"),
    "target": ("a generator whose error rates are known exactly", "use kind: kearns_intervals, or test_error on "
               "held-out data", "kind"),
    "paired": ("paired halves (row i of the second half drawn from the same component as row i of the first)",
               "use a gaussian_mixture dataset with params: {paired: true}", "params"),
    "image": ("a clean image to compare with", "use kind: image (denoise_error for Boolean matrices)", "kind"),
    "boolean": ("a 0/1 matrix", "use truncated_svd for images, or a boolean_matrix dataset", ""),
    "test_set": ("a test set", "set datasets[j].learning below n", "learning"),
}


@dataclass(frozen=True)
class DataObjects:
    """What a dataset declares: its name, its objects and what else it provides."""

    name: str
    objects: str = "points"
    provides: tuple[str, ...] = ()


@dataclass(frozen=True)
class Misfit:
    """Why a combination does not fit: ``part`` is what to change (``algorithm``, ``predictor``, ``criterion`` or
    ``dataset``; ``field`` then the dataset's key to change), ``reason`` and ``fix`` the message."""

    part: str
    reason: str
    fix: str
    field: str = ""

    def __str__(self) -> str:
        return f"{self.reason}; {self.fix}"


def _provision(need: str) -> tuple[str, str, str]:
    return PROVISIONS.get(need, (need, f"use a dataset that provides {need!r}", "kind"))


def _criterion_needs(criterion: Criterion) -> tuple[str, ...]:
    return criterion.needs_data + (("paired",) if criterion.needs_paired_halves else ())


def why_not(data: DataObjects | None, algorithm: BaseAlgorithm, criterion: Criterion | None = None,
            predictor: str | None = None) -> Misfit | None:
    """None when ``criterion`` (if given) can run on a method of ``algorithm`` (with ``predictor``, if given) on
    ``data`` (None: on some data the algorithm takes); else why not, naming what would fit.

    The checks, in order: the algorithm (or a variant) takes the data's objects and the data provide what it
    needs; the predictor is wanted (the algorithm gives labels) and reads those objects; the criterion reads what
    the algorithm gives, is defined for it, finds the fitted model it reads, reads only the halves on objects that
    are not points, and finds in the data what it needs.
    """
    objects = algorithm.takes if data is None else data.objects
    if data is not None:
        if not algorithm.accepts(objects):
            return Misfit("algorithm", f"dataset {data.name!r} is {objects_kind(objects).dataset}, and {algorithm.name!r} "
                          f"takes {objects_kind(algorithm.takes).taken} ({algorithm.kind})",
                          f"use {' or '.join(fitting_algorithms(data)) or 'a plug-in that takes them'} for this dataset; "
                          "every method runs on every dataset: put them in separate configs")
        algorithm = algorithm.on(objects)
        for need in algorithm.needs:
            if need not in data.provides:
                what, fix, key = _provision(need)
                return Misfit("dataset" if key else "algorithm", f"{algorithm.name!r} is {algorithm.kind} and needs "
                              f"{what}; dataset {data.name!r} has none", fix, field=key)
    if predictor is not None:
        misfit = _predictor_misfit(algorithm, predictor, objects)
        if misfit is not None:
            return misfit
    if criterion is not None:
        return _criterion_misfit(data, algorithm, criterion, objects, suggest=True)
    return None


def _predictor_misfit(algorithm: BaseAlgorithm, predictor: str, objects: str) -> Misfit | None:
    if not algorithm.needs_predictor:
        return Misfit("predictor", f"{algorithm.name} is {algorithm.kind}; it has no predictor", "remove 'predictor'")
    takes = predictor_takes(predictor)
    if takes != objects:
        fitting = fitting_predictors(objects)
        return Misfit("predictor", f"{predictor!r} reads {objects_kind(takes).taken}, and {algorithm.name!r} here clusters "
                      f"{objects_kind(objects).taken}", f"use predictor {' or '.join(fitting) or '(none registered)'}; "
                      f"{predictor} is for {objects_kind(takes).source} (every method runs on every dataset: data of "
                      "other objects go in separate configs)")
    return None


def _criterion_misfit(data: DataObjects | None, algorithm: BaseAlgorithm, criterion: Criterion,
                      objects: str, *, suggest: bool) -> Misfit | None:
    """Why ``criterion`` does not fit; ``suggest``: list what would (else the fix is left out)."""
    name, gives = criterion.name, algorithm.gives

    def fitting() -> list[str]:
        return fitting_criteria(data, algorithm) if suggest else []

    if criterion.reads not in gives:
        return Misfit("criterion", f"{name} is {READS.get(criterion.reads, 'a criterion of ' + criterion.reads)}, and "
                      f"{algorithm.name!r} is {algorithm.kind}", f"use one of {fitting()}")
    allowed = criterion.defined_for
    if allowed is not None and algorithm.name not in allowed:
        return Misfit("criterion", f"{name} is defined for the algorithm(s) {list(allowed)} only, not "
                      f"{algorithm.name!r}", f"compute {name} in a method with algorithm {allowed[0]}")
    if criterion.models is not None and not any(f"model:{model}" in gives for model in criterion.models):
        fitted = next((tag.split(":", 1)[1] for tag in gives if tag.startswith("model:")), None)
        offers = f"fits a model of kind {fitted!r}" if fitted else "gives labels only, no fitted model"
        makers = sorted(other.name for other in ALGORITHMS.values()
                        if any(f"model:{model}" in other.gives for model in criterion.models))
        return Misfit("criterion", f"{name} reads the fitted model ({' or '.join(criterion.models)}) of the first half, "
                      f"and {algorithm.name!r} {offers}", f"compute {name} in a method with algorithm {' or '.join(makers)}")
    if criterion.reads == "labels" and objects != "points":
        model = next((tag.split(":", 1)[1] for tag in gives if tag.startswith("model:")), None)
        if not criterion.reads_halves_only(model):
            return Misfit("criterion", f"{name} reads points (their coordinates, a whole sample, reference sets or an "
                          f"evaluation sample), not {objects_kind(objects).taken}",
                          f"use {', '.join(fitting())} with {algorithm.name}")
    if data is not None:
        for need in _criterion_needs(criterion):
            if need not in data.provides:
                what, fix, _ = _provision(need)
                return Misfit("criterion", f"{name} needs {what}, and dataset {data.name!r} has none",
                              f"{fix} (every method runs on every dataset: put {name} in a config of such data)")
    return None


def fitting_algorithms(data: DataObjects) -> list[str]:
    """The registered algorithms that run on ``data``."""
    return sorted(name for name, algorithm in ALGORITHMS.items() if algorithm.accepts(data.objects)
                  and all(need in data.provides for need in algorithm.on(data.objects).needs))


def fitting_criteria(data: DataObjects | None, algorithm: BaseAlgorithm) -> list[str]:
    """The registered criteria a method of ``algorithm`` can compute on ``data`` (None: on data it takes)."""
    if data is not None:
        if why_not(data, algorithm) is not None:
            return []
        algorithm = algorithm.on(data.objects)
    objects = algorithm.takes if data is None else data.objects
    return sorted(name for name, criterion in CRITERIA.items()
                  if _criterion_misfit(data, algorithm, criterion, objects, suggest=False) is None)


def fitting_predictors(objects: str) -> list[str]:
    """The registered predictors that extend a clustering of ``objects``."""
    return sorted(name for name in PREDICTORS if predictor_takes(name) == objects)
