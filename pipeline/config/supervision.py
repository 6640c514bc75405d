"""Config checks for classifiers whose order is chosen with labels (Daudin & Mary-Huard 2008): the learning set
of a trial (``datasets[i].learning``, handed to the blocks as the dataset's ``family_options``) and what a
classifier needs of the sizes of every dataset it runs on.

Everything a trial could only fail at is refused here, naming the key: labels of other than two classes, a
learning set larger than the sample, k too large for leave-one-out on it, more genes than features. Whether the
data have labels, a test set or a known target at all is :func:`ordercube.tasks.capabilities.why_not`'s (the dataset
declares them in ``provides``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from ordercube.pipeline.config.specs import DatasetSpec, MethodSpec
from ordercube.pipeline.errors import ConfigError
from ordercube.tasks.algorithms import get_algorithm
from ordercube.tasks.algorithms.kinds import Classifier
from ordercube.tasks.datasets import SYNTHETIC
from ordercube.tasks.params import show
from ordercube.tasks.supervised import LEARN_ALL, LEARN_HALF, learning_counts, learning_set

FIX = "e.g. learning: 41 (points, shared among the classes in proportion), learning: {tumor: 27, normal: 14}, " \
      "learning: half (the default) or learning: all (no test set)"


def with_learning_set(spec: DatasetSpec, value: Any, key: str) -> DatasetSpec:
    """``spec`` with the learning set of its trials as ``datasets[i].learning`` gives it."""
    smallest = min(spec.n)
    per_class: tuple[int, ...] = ()
    if value in ("all", "half"):
        learning = LEARN_ALL if value == "all" else LEARN_HALF
    elif isinstance(value, int) and not isinstance(value, bool):
        if not 2 <= value <= smallest:
            raise ConfigError(key, f"{value} learning points, but the smallest sample of a trial has n = {smallest}",
                              f"use 2 <= learning <= {smallest}, or 'all'")
        learning = value
    elif isinstance(value, Mapping):
        learning, per_class = 0, _per_class(spec, value, key)
    else:
        raise ConfigError(key, f"expected a number of points, a mapping of class to count, 'half' or 'all', got "
                          f"{show(value)}", FIX)
    given = value if not isinstance(value, Mapping) else {str(name): int(count) for name, count in value.items()}
    options = {**dict(spec.family_options), "learning": learning, "learning_per_class": per_class}
    spec = replace(spec, family_options=tuple(options.items()), identity={**spec.identity, "learning": given})
    provides = tuple(item for item in spec.provides if item != "test_set")
    return replace(spec, provides=provides + (("test_set",) if _has_test_set(spec) else ()))


def learning_of(dataset: DatasetSpec) -> tuple[int, tuple[int, ...]]:
    """The dataset's learning set: ``learning`` (``LEARN_HALF``, ``LEARN_ALL`` or a number of points) and the
    counts per class code (or ())."""
    return learning_set(dataset.family_options)


def _has_test_set(dataset: DatasetSpec) -> bool:
    """Whether every trial leaves points out of its learning set (a test set) at the smallest n."""
    learning, _ = learning_of(dataset)
    return learning != LEARN_ALL and learning_size(dataset, min(dataset.n)) < min(dataset.n)


def _per_class(spec: DatasetSpec, value: Mapping[Any, Any], key: str) -> tuple[int, ...]:
    """Counts by class code from ``{class name: count}``: every class named once, each count within its
    class's size; only for the whole file (a subsample's class sizes vary from trial to trial)."""
    if not spec.classes or spec.labels is None:
        raise ConfigError(key, "counts per class need the dataset's labels", "give labels, or learning: NUMBER")
    names = {str(name): count for name, count in value.items()}
    if sorted(names) != sorted(spec.classes):
        raise ConfigError(key, f"the classes named are {sorted(names)}, the labels have {list(spec.classes)}",
                          "give a count for every class, by its name in the labels")
    if any(n != spec.labels.size for n in spec.n):
        raise ConfigError(key, f"counts per class need n: all (the {spec.labels.size} rows); got n = {list(spec.n)}",
                          "set n: [all], or give learning: NUMBER")
    sizes = np.bincount(spec.labels, minlength=len(spec.classes))
    counts = []
    for code, name in enumerate(spec.classes):
        count = names[name]
        if not (isinstance(count, int) and not isinstance(count, bool) and 1 <= count <= sizes[code]):
            raise ConfigError(f"{key}.{name}", f"expected 1 to {sizes[code]} (the rows of class {name!r}), "
                              f"got {show(count)}", "keep at least one point of each class to learn from")
        counts.append(count)
    return tuple(counts)


def describe_learning(dataset: DatasetSpec) -> str:
    """The learning/test split of a trial, in words (printed by validate and run)."""
    learning, per_class = learning_of(dataset)
    if per_class:
        parts = " + ".join(f"{count} {name}" for name, count in zip(dataset.classes, per_class))
        sizes = np.bincount(dataset.labels, minlength=len(dataset.classes)) - np.asarray(per_class)
        return f"learning set {parts}, test set the other {int(sizes.sum())} (by class, per trial)"
    if learning == LEARN_ALL:
        return "learning set: the whole sample (no test set)"
    sizes = ", ".join(f"n = {n}: {learning_size(dataset, n)}" for n in dataset.n)
    return f"learning set ({sizes}) by class in proportion, the rest the test set"


def learning_size(dataset: DatasetSpec, n: int) -> int:
    """The size of a trial's learning set at sample size ``n`` (exact for a file's class sizes at n = all)."""
    learning, per_class = learning_of(dataset)
    if per_class:
        return sum(per_class)
    if dataset.labels is not None and n == dataset.labels.size:
        return int(learning_counts(np.bincount(dataset.labels), learning).sum())
    return n if learning == LEARN_ALL else n // 2 if learning == LEARN_HALF else learning


def check_classifier(datasets: Sequence[DatasetSpec], method: MethodSpec, i: int, ks: Sequence[int]) -> None:
    """``ConfigError`` for anything a classifier could only fail at in every trial (see the module); what fits
    what (labels, a test set, a known target) is :func:`ordercube.tasks.capabilities.why_not`'s."""
    algorithm = get_algorithm(method.algorithm)
    assert isinstance(algorithm, Classifier)  # the family's check is registered for its kind
    if method.params.get("odd_only") and any(k % 2 == 0 for k in ks):
        raise ConfigError("k", f"methods[{i}] ({method.name}) sets odd_only, but k holds even values "
                          f"{[k for k in ks if k % 2 == 0][:5]}", "use odd k only, e.g. k: {from: 1, to: 39, step: 2}")
    for j, dataset in enumerate(datasets):
        _check_labels(dataset, j, method, i)
        largest = learning_size(dataset, max(dataset.n))
        if not algorithm.feasible(max(ks), largest):
            extra = algorithm.points_beyond_k
            raise ConfigError("k", f"k = {max(ks)} is too large for {method.algorithm} on the learning set of "
                              f"dataset {dataset.name!r} ({largest} points at n = {max(dataset.n)}; k needs "
                              f"{'k + 1 for leave-one-out' if extra else 'k'})",
                              f"use k <= {largest - extra}, or a larger learning set (datasets[{j}].learning)")
        genes = method.params.get("genes", 0)
        if genes > dataset.n_features:
            raise ConfigError(f"methods[{i}].params.genes", f"{genes} genes, but dataset {dataset.name!r} has "
                              f"{dataset.n_features} features", f"use genes <= {dataset.n_features} (0: all)")


def _check_labels(dataset: DatasetSpec, j: int, method: MethodSpec, i: int) -> None:
    """A classifier's dataset has labels of exactly two classes (the swapping method's Y is 0/1)."""
    if dataset.kind in SYNTHETIC or dataset.labels is None:  # a generator's labels, or none (why_not said so)
        return
    if len(dataset.classes) != 2:
        count = len(dataset.classes)
        raise ConfigError(f"datasets[{j}].labels", f"{method.algorithm} (the swapping method) needs two classes; the "
                          f"labels of {dataset.name!r} have {count}: {list(dataset.classes)[:6]}",
                          "give a labels column with two classes" + (" (one class leaves nothing to classify)"
                                                                      if count == 1 else ", or merge classes"))
