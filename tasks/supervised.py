"""The classifier family's trial: its order k chosen with labels (Daudin & Mary-Huard 2008).

A trial is one labelled sample of n points (fresh from a generator, or n rows of a file), split by class
into a learning set and a test set from the trial's stream, so every method and k of the trial sees the
same split (paired comparisons). The method's classifier kernel then computes every error rate and
penalty for every k of the trial at once; label-dependent preprocessing (gene selection by t-statistic)
happens inside the kernel, on the learning set only.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from ordercube.tasks.algorithms.kinds import Classifier
from ordercube.tasks.criteria import get_criterion
from ordercube.tasks.datasets.sources import Source
from ordercube.tasks.seeding import Purpose, stream
from ordercube.tasks.trial import BlockSpec, TrialOutcome, TrialRunner, scattered

LEARN_ALL = -1  # BlockSpec.family_options' learning: the whole sample is the learning set (no test set)
LEARN_HALF = 0  # BlockSpec.family_options' learning: half of the sample, by class (the default)


def learning_counts(class_sizes: NDArray[np.int64], learning: int, per_class: tuple[int, ...] = ()) -> NDArray[np.int64]:
    """How many points of each class go to the learning set.

    ``per_class`` given: those counts (the Colon split of plsgenomics, 27 tumour + 14 normal). Else
    ``learning`` points in all (``LEARN_HALF``: n // 2, ``LEARN_ALL``: every point), shared among the
    classes in proportion to their sizes by the largest-remainder rule (ties to the first class).
    """
    if per_class:
        return np.asarray(per_class, dtype=np.int64)
    total = int(class_sizes.sum())
    wanted = total if learning == LEARN_ALL else total // 2 if learning == LEARN_HALF else learning
    quotas = wanted * class_sizes / total
    counts = np.floor(quotas).astype(np.int64)
    remainders = quotas - counts
    order = np.lexsort((np.arange(len(counts)), -remainders))
    counts[order[: wanted - int(counts.sum())]] += 1
    return counts


def split_by_class(y: NDArray[np.int64], counts: NDArray[np.int64], rng: np.random.Generator,
                   ) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Indices of the learning and the test set (each in sample order): ``counts[c]`` random points of
    class ``c`` learn, the rest test."""
    learn = [rng.permutation(np.flatnonzero(y == c))[:count] for c, count in enumerate(counts)]
    chosen = np.sort(np.concatenate(learn)) if learn else np.empty(0, dtype=np.int64)
    rest = np.setdiff1d(np.arange(y.size), chosen)
    return chosen, rest


def kernel_options(spec: BlockSpec) -> dict[str, Any]:
    """The options of the method's criteria (over their defaults), which the classifier's kernel applies: the
    swapping criterion's n0 (its plug-in's prior weight) and swap rule."""
    options: dict[str, Any] = {}
    for name in spec.criteria:
        options.update(get_criterion(name).options)
        options.update(spec.options_of(name))
    return options


def learning_set(family_options: tuple[tuple[str, Any], ...]) -> tuple[int, tuple[int, ...]]:
    """The learning set a dataset's ``family_options`` give: ``learning`` (``LEARN_HALF``, ``LEARN_ALL`` or a
    number of points) and ``learning_per_class`` (counts by class code, or ())."""
    options = dict(family_options)
    return int(options.get("learning", LEARN_HALF)), tuple(options.get("learning_per_class", ()))


def trial_runner(algorithm: Classifier, spec: BlockSpec, source: Source) -> TrialRunner:
    """``compute_trial(trial)`` for a classifier: the trial's sample drawn and split once, every k from one call
    of the classifier kernel. A k the learning set cannot hold (leave-one-out needs k + 1 points) is infeasible;
    a failing draw or kernel raises (the engine fails the trial's cells)."""
    params = {**dict(spec.algorithm_params), **kernel_options(spec)}
    learning, per_class = learning_set(spec.family_options)

    def compute_trial(trial: int) -> TrialOutcome:
        rng = stream(spec.root_seed, Purpose.DRAW, spec.dataset_id, spec.n, trial)
        sample = source.draw_labelled(spec.n, rng)
        counts = learning_counts(np.bincount(sample.y), learning, per_class)
        learn, test = split_by_class(sample.y, counts, rng)
        feasible = [k for k in spec.ks if algorithm.feasible(k, learn.size)]
        scores = algorithm.classify(sample.X[learn], sample.y[learn], sample.X[test], sample.y[test], feasible,
                                    sample.target, **params) if feasible else {}
        infeasible = {k: f"k = {k} needs at least {k + algorithm.points_beyond_k} learning points ({spec.algorithm}); "
                         f"the learning set has {learn.size}" for k in spec.ks if k not in feasible}
        return TrialOutcome(values=scattered(spec.ks, feasible, scores), infeasible=infeasible)

    return compute_trial
