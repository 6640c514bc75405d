"""Where a trial's points come from: fresh synthetic draws or rows subsampled from an array.

Both sources draw the fitting sample first and the evaluation sample after it, from streams that
do not depend on whether an evaluation sample is wanted: a method without the pairwise criterion
sees exactly the same halves as one with it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from ordercube.tasks.datasets.synthetic import get_synthetic


@dataclass(frozen=True)
class TrialData:
    """The points of one trial.

    Attributes
    ----------
    first, second : ndarray of shape (n // 2, n_features)
        The two disjoint halves that are clustered.
    evaluation : ndarray of shape (n, n_features) or None
        An independent sample, disjoint from both halves, when asked for.
    truth : ndarray of shape (2 * (n // 2),) or None
        The known classes of ``first`` then ``second``, when the source has them.
    paired : bool
        Row i of ``second`` was drawn from the same component as row i of ``first``.
    first_rows, second_rows : ndarray of shape (n // 2,) or None
        The dataset's rows (objects, in the order of its file) that ``first`` and ``second`` hold, row by row,
        when the source has fixed items (:attr:`ArraySource.items`); None for fresh synthetic draws.
    """

    first: NDArray[np.float64]
    second: NDArray[np.float64]
    evaluation: NDArray[np.float64] | None
    truth: NDArray[np.int64] | None = None
    paired: bool = False
    first_rows: NDArray[np.int64] | None = None
    second_rows: NDArray[np.int64] | None = None


@dataclass(frozen=True)
class LabelledSample:
    """A trial's labelled sample for a classifier (Daudin & Mary-Huard 2008): the labels are the response.

    Attributes
    ----------
    X : ndarray of shape (n, n_features)
    y : ndarray of shape (n,)
        Class codes 0 .. C-1.
    target : tuple or None
        What the generator's exact error rates need (Kearns' d and eta), None for rows of a file.
    """

    X: NDArray[np.float64]
    y: NDArray[np.int64]
    target: tuple[Any, ...] | None = None


class Source(Protocol):
    """Where a trial's points come from. ``items``: the number of fixed items (rows, objects) every trial draws
    from, N; None when each trial draws fresh points (a generator), which have no identity across trials."""

    @property
    def items(self) -> int | None: ...

    def draw(
        self, n: int, draw_rng: np.random.Generator, eval_rng: np.random.Generator, *, with_eval: bool
    ) -> TrialData: ...

    def draw_labelled(self, n: int, draw_rng: np.random.Generator) -> LabelledSample: ...


def halves_of_rows(order: NDArray[np.int64], n: int) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """The rows of a trial's two halves of n // 2, from its permutation ``order`` of the rows (the first n rows
    of ``order`` are the trial's sample)."""
    half = n // 2
    return order[:half], order[half : 2 * half]


def _halves(X: NDArray[np.float64], evaluation: NDArray[np.float64] | None,
            truth: NDArray[np.int64] | None, *, paired: bool = False) -> TrialData:
    half = X.shape[0] // 2
    return TrialData(first=X[:half], second=X[half : 2 * half], evaluation=evaluation,
                     truth=None if truth is None else truth[: 2 * half], paired=paired)


def node_halves(W: NDArray[np.float64], order: NDArray[np.int64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The objects ``order[:m]`` and ``order[m:2m]`` (m = len(order) // 2) of a square matrix ``W`` (a graph's edge
    weights, a dissimilarity matrix) as two halves: each half's rows are its objects, its columns its own objects
    first, then the other half's (``first[:, :m]`` is the first half's own block, ``second[:, m:]`` the second
    half's entries with the first half's objects, in their order)."""
    m = order.shape[0] // 2
    first, second = order[:m], order[m : 2 * m]
    return (W[np.ix_(first, np.concatenate([first, second]))],
            W[np.ix_(second, np.concatenate([second, first]))])


def _node_halves(W: NDArray[np.float64], order: NDArray[np.int64], labels: NDArray[np.int64] | None) -> TrialData:
    """The objects ``order`` of the square matrix ``W`` halved as object sets (:func:`node_halves`), with their known
    classes."""
    first, second = node_halves(W, order)
    truth = None if labels is None else labels[order[: 2 * (order.shape[0] // 2)]]
    m = order.shape[0] // 2
    return TrialData(first=first, second=second, evaluation=None, truth=truth, first_rows=order[:m],
                     second_rows=order[m : 2 * m])


@dataclass(frozen=True)
class SyntheticSource:
    """Fresh i.i.d. points from a registered generator for every trial."""

    name: str
    params: dict[str, Any]

    @property
    def items(self) -> None:
        """None: every trial draws fresh points, so no item recurs across trials."""
        return None

    def draw(
        self, n: int, draw_rng: np.random.Generator, eval_rng: np.random.Generator, *, with_eval: bool
    ) -> TrialData:
        generator = get_synthetic(self.name)
        sample = generator.sample
        X, component = sample(n, draw_rng, **self.params)
        if generator.objects == "graph":  # nodes: halves are node sets, each with its rows' columns reordered
            return _node_halves(X, draw_rng.permutation(n), component)
        paired = bool(self.params.get("paired", False))
        if paired:  # row i and row n//2 + i are a pair: shuffle the pairs, keeping each pair's rows aligned
            half = n // 2
            pairs = draw_rng.permutation(half)
            order = np.concatenate([pairs, pairs + half, np.arange(2 * half, n)])
        else:  # generators may emit points grouped by component: shuffle so the halves are i.i.d.
            order = draw_rng.permutation(n)
        evaluation = sample(n, eval_rng, **self.params)[0] if with_eval else None
        return _halves(X[order], evaluation, component[order], paired=paired)

    def draw_labelled(self, n: int, draw_rng: np.random.Generator) -> LabelledSample:
        generator = get_synthetic(self.name)
        X, y = generator.sample(n, draw_rng, **self.params)
        return LabelledSample(X, y, None if generator.target is None else generator.target(self.params))


@dataclass(frozen=True)
class ArraySource:
    """Rows of a fixed array (with their known classes, if any), subsampled without replacement per trial.

    The first ``n`` rows of a random permutation are the fitting sample; the next ``n`` rows, when
    asked for, are the evaluation sample, so the two never share a row.
    """

    X: NDArray[np.float64]
    labels: NDArray[np.int64] | None = None
    objects: str = "points"  # "graph" / "dissimilarity": X is square, its rows and columns the objects

    @property
    def items(self) -> int:
        """The number of fixed items (rows, or objects of a square matrix) every trial draws from."""
        return int(self.X.shape[0])

    def draw(
        self, n: int, draw_rng: np.random.Generator, eval_rng: np.random.Generator, *, with_eval: bool
    ) -> TrialData:
        order = draw_rng.permutation(self.X.shape[0])
        if self.objects != "points":  # n of the objects of a square matrix, halved as object sets (node_halves)
            return _node_halves(self.X, order[:n], self.labels)
        evaluation = self.X[order[n : 2 * n]] if with_eval else None
        first, second = halves_of_rows(order, n)
        truth = None if self.labels is None else self.labels[np.concatenate([first, second])]
        return TrialData(first=self.X[first], second=self.X[second], evaluation=evaluation, truth=truth,
                         first_rows=first, second_rows=second)

    def draw_labelled(self, n: int, draw_rng: np.random.Generator) -> LabelledSample:
        if self.labels is None:
            raise ValueError("a classifier needs labels: this dataset has none")
        rows = draw_rng.permutation(self.X.shape[0])[:n]
        return LabelledSample(self.X[rows], self.labels[rows])
