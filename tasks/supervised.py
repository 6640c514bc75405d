"""A block of cells for a classifier whose order k is chosen with labels (Daudin & Mary-Huard 2008).

A trial is one labelled sample of n points (fresh from a generator, or n rows of a file), split by class
into a learning set and a test set from the trial's stream, so every method and k of the trial sees the
same split (paired comparisons). The method's classifier kernel then computes every error rate and
penalty for every k of the trial at once; label-dependent preprocessing (gene selection by t-statistic)
happens inside the kernel, on the learning set only.
"""

from __future__ import annotations


import numpy as np
from numpy.typing import NDArray

from tasks.algorithms import get_algorithm
from tasks.cell import BlockResult, BlockSpec, TrialOutcome, run_joint_block
from tasks.criteria import get_criterion
from tasks.datasets.sources import Source
from tasks.seeding import Purpose, stream

LEARN_ALL = -1  # BlockSpec.learning: the whole sample is the learning set (no test set)
LEARN_HALF = 0  # BlockSpec.learning: half of the sample, by class (the default)


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


def _kernel_options(spec: BlockSpec) -> dict[str, object]:
    """The swapping criterion's options (its plug-in's n0, the swap rule), which the kernel applies."""
    options = dict(get_criterion("swapping").options)
    options.update(dict(dict(spec.criterion_options).get("swapping", ())))
    return options


def run_supervised_block(spec: BlockSpec, source: Source) -> BlockResult:
    """Every (k, trial) cell of ``spec``: each trial's sample drawn and split once, every k from one call
    of the classifier kernel. A k the learning set cannot hold (leave-one-out needs k + 1 points) is
    infeasible; a failing draw or kernel fails the trial's cells, and the block goes on."""
    algorithm = get_algorithm(spec.algorithm)
    params = {**dict(spec.algorithm_params), **_kernel_options(spec)}

    def compute_trial(trial: int) -> TrialOutcome:
        rng = stream(spec.root_seed, Purpose.DRAW, spec.dataset_id, spec.n, trial)
        sample = source.draw_labelled(spec.n, rng)
        counts = learning_counts(np.bincount(sample.y), spec.learning, spec.learning_per_class)
        learn, test = split_by_class(sample.y, counts, rng)
        feasible = [k for k in spec.ks if algorithm.feasible(k, learn.size)]
        scores = algorithm.classify(sample.X[learn], sample.y[learn], sample.X[test], sample.y[test], feasible,
                                    sample.target, **params) if feasible else {}
        return TrialOutcome(feasible, scores, lambda k: f"k = {k} needs at least {k + algorithm.points_beyond_k} "
                                                        f"learning points ({spec.algorithm}); the learning set has "
                                                        f"{learn.size}")

    return run_joint_block(spec, compute_trial)
