"""The change-point family: a piecewise-constant series, its segmentation into k segments, its held-out error."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ordercube_demo.segmentation import heldout_error, segment_all
from ordercube.plugin import (
    BaseAlgorithm, BlockSpec, ParameterError, Purpose, TrialOutcome, TrialRunner, get_criterion, get_synthetic,
    scattered, stream,
)


def piecewise_constant(n: int, rng: np.random.Generator, *, segments: int, jump: float,
                       noise: float) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """``n`` points (t, y), t uniform on [0, 1), y the level of t's segment plus Gaussian noise of sd ``noise``;
    the ``segments`` segments are equally long, their levels alternate between 0 and ``jump``. Returns the points,
    of shape (n, 2), and each point's segment."""
    t = rng.uniform(0.0, 1.0, n)
    segment = np.minimum((t * segments).astype(np.int64), segments - 1)
    y = jump * (segment % 2) + noise * rng.standard_normal(n)
    return np.column_stack([t, y]), segment


def check_series(params: dict[str, Any]) -> None:
    """Refuse parameters the generator cannot draw with, naming them."""
    if not isinstance(params["segments"], int) or isinstance(params["segments"], bool) or params["segments"] < 1:
        raise ParameterError("segments", "an integer >= 1", params["segments"], "e.g. segments: 4")
    for name in ("jump", "noise"):
        if not isinstance(params[name], (int, float)) or isinstance(params[name], bool) or not params[name] >= 0:
            raise ParameterError(name, "a number >= 0", params[name], f"e.g. {name}: 0.5")


@dataclass(frozen=True)
class Segmenter(BaseAlgorithm):
    """Exact least-squares segmentation of a series: every k of a trial from one dynamic programme."""

    @property
    def gives(self) -> tuple[str, ...]:
        return ("segmentations",)

    @property
    def shares_fit_across_k(self) -> bool:
        return True

    def trial_runner(self, spec: BlockSpec, source: Any) -> TrialRunner:
        computations = [(name, get_criterion(name).computations[self.name]) for name in spec.criteria]
        sample = get_synthetic(source.name).sample

        def compute_trial(trial: int) -> TrialOutcome:
            rng = stream(spec.root_seed, Purpose.DRAW, spec.dataset_id, spec.n, trial)  # shared by every method
            points, _ = sample(spec.n, rng, **source.params)
            order = rng.permutation(spec.n)
            fit, test = points[order[: spec.n // 2]], points[order[spec.n // 2:]]
            fit = fit[np.argsort(fit[:, 0], kind="stable")]
            feasible = [k for k in spec.ks if self.feasible(k, len(fit))]
            starts = segment_all(fit[:, 1], max(feasible)) if feasible else {}
            values = {name: [compute(fit, test, starts[k]) for k in feasible] for name, compute in computations}
            infeasible = {k: f"{k} segments need {k} points, a half has {len(fit)}" for k in spec.ks
                          if k not in feasible}
            return TrialOutcome(values=scattered(spec.ks, feasible, values), infeasible=infeasible)

        return compute_trial


def heldout_sse(fit: NDArray[np.float64], test: NDArray[np.float64], starts: NDArray[np.int64]) -> float:
    """The held-out criterion's value for one k: the test half's mean squared error about the fitted means."""
    return heldout_error(fit[:, 0], fit[:, 1], starts, test[:, 0], test[:, 1])
