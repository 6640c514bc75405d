"""The contract between the cell and the criteria."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from numpy.typing import NDArray

from tasks.predictors import Predictor


@dataclass
class TrialFits:
    """Both halves of a trial clustered with ``k`` clusters, and what a criterion may need besides.

    Attributes
    ----------
    first, second : ndarray of shape (m, n_features)
        The disjoint halves.
    labels_first, labels_second : ndarray of shape (m,)
        Each half's own clustering.
    k : int
    predictor : callable
        Extends a solution to new points: ``predictor(X_train, labels, k, X_new)``.
    evaluation : ndarray of shape (2m, n_features) or None
        Independent points, present when a criterion of the method needs them.
    pairing : ndarray of shape (2m,) or None
        A random permutation of the evaluation points, shared by every k of the trial.
    """

    first: NDArray[np.float64]
    second: NDArray[np.float64]
    labels_first: NDArray[np.int64]
    labels_second: NDArray[np.int64]
    k: int
    predictor: Predictor
    evaluation: NDArray[np.float64] | None = None
    pairing: NDArray[np.int64] | None = None

    @cached_property
    def second_predicted_from_first(self) -> NDArray[np.int64]:
        """The first solution extended to the second half."""
        return self.predictor(self.first, self.labels_first, self.k, self.second)

    @cached_property
    def evaluation_labels(self) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """Both solutions extended to the evaluation sample."""
        if self.evaluation is None:
            raise ValueError("this criterion needs an evaluation sample, but none was drawn")
        return (
            self.predictor(self.first, self.labels_first, self.k, self.evaluation),
            self.predictor(self.second, self.labels_second, self.k, self.evaluation),
        )


@dataclass(frozen=True)
class Decision:
    """How k̂ follows from a criterion's per-k values (the mean over trials, or one trial's values).

    ``smallest``: the argmin over k (instabilities; exact ties go to the largest k).
    ``largest_above``: the largest k whose value is at least ``threshold`` (Prediction Strength);
    no choice (-1) when no k reaches it.
    """

    rule: str = "smallest"
    threshold: float | None = None


@dataclass(frozen=True)
class Criterion:
    """A registered criterion.

    Attributes
    ----------
    name : str
        Also the name of its variable in the cube.
    evaluate : callable
        ``evaluate(fits)`` → the raw per-trial value stored in the cube.
    min_k : int
        The smallest k the criterion is defined for.
    needs_evaluation_sample : bool
        Whether the trial must draw an independent evaluation sample of n points.
    description : str
    normalised_by_random_labels : bool
        Whether its score divides the raw value by the same statistic for random labelings of n/2
        points with k labels (seed 002 eq. 5); the driver then estimates that baseline per (n, k).
    decision : Decision
        Its default decision rule; the reducers can re-decide a stored cube with another threshold.
    """

    name: str
    evaluate: Callable[[TrialFits], float]
    min_k: int
    needs_evaluation_sample: bool
    description: str
    normalised_by_random_labels: bool = False
    decision: Decision = Decision()
