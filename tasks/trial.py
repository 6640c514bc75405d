"""The contract between the engine and a model family: a block of cells, a trial's outcome, a cell's status.

A block is every (k, trial) cell of one dataset, n and method (:class:`BlockSpec`). A family computes one
trial of a block at a time through the runner its algorithm record gives
(``algorithm.trial_runner(spec, source) -> compute_trial``, ``compute_trial(trial) -> TrialOutcome``);
:func:`ordercube.tasks.cell.run_block` is the one loop over trials, and knows no family.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

import numpy as np
from numpy.typing import NDArray


class Status(IntEnum):
    """Per-cell status codes as stored in the cube (0 is the fill value: not computed yet)."""

    PENDING = 0
    OK = 1
    FAILED = 2
    INFEASIBLE = 3
    CRASHED = 4  # its worker process died computing it, every time (isolated by the driver)
    SKIPPED = 5  # not needed by the adaptive rule (ordercube.pipeline.run.rounds): the reason names the look; a later run may fill it


@dataclass(frozen=True)
class BlockSpec:
    """What to compute, by coordinate values; ids are stable hashes of the dataset and method names.

    ``family_options`` are (name, value) pairs a family reads from its dataset's entry (a classifier's learning
    set, :mod:`ordercube.tasks.supervised`); they never enter a random stream's address.

    ``scheme`` names how a trial resamples and fits (:mod:`ordercube.tasks.schemes`; "" is the family's own: the
    clusterer's two halves), ``scheme_params`` its parameters over its defaults as (name, value) pairs.
    ``assignments``: the method stores each trial's assignment of every item of the dataset
    (:attr:`TrialOutcome.assignments`).
    """

    root_seed: int
    dataset_id: int
    n: int
    method_id: int
    algorithm: str
    algorithm_params: tuple[tuple[str, Any], ...]
    predictor: str
    criteria: tuple[str, ...]
    ks: tuple[int, ...]
    trials: tuple[int, ...]
    criterion_options: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...] = ()
    family_options: tuple[tuple[str, Any], ...] = ()
    scheme: str = ""
    scheme_params: tuple[tuple[str, Any], ...] = ()
    assignments: bool = False

    def options_of(self, criterion: str) -> dict[str, Any]:
        """The options the config gave ``criterion`` (resolved over its defaults), or {}."""
        return dict(dict(self.criterion_options).get(criterion, ()))


@dataclass(frozen=True)
class BlockResult:
    """Per-cell outputs, each of shape (len(ks), len(trials)).

    ``values`` maps each criterion to its raw values (NaN where the cell is not ok); ``reason`` holds
    the failure or infeasibility message ('' where ok); ``seconds`` the compute time of each cell.
    ``assignments`` (a block whose method stores them): shape (len(ks), len(trials), parts, items), each
    clustering's cluster of every item, -1 where the item was not in it or the cell is not ok.
    """

    values: dict[str, NDArray[np.float64]]
    status: NDArray[np.int8]
    reason: NDArray[np.object_]
    seconds: NDArray[np.float64]
    assignments: NDArray[np.int16] | None = None


@dataclass(frozen=True)
class TrialOutcome:
    """Every k of one trial of a block.

    Attributes
    ----------
    values : mapping
        Every cube variable of the block's criteria to its values of shape (len(spec.ks),), in the order of
        ``spec.ks`` (NaN where not defined); read only at the ks that are neither failed nor infeasible.
    failed : mapping
        k → why that k's cell failed in this trial.
    infeasible : mapping
        k → why that k cannot be computed in this trial (too few points for it).
    seconds : mapping or None
        k → the compute time charged to that k; None: the trial's time is shared equally by its ks.
    assignments : mapping or None
        When the block stores assignments (``BlockSpec.assignments``): k → an integer array of shape
        (parts, items), the cluster (0 .. k-1) of every item of the dataset in each of the trial's clusterings
        (its "parts": the two halves, or the data and its reference sets), -1 where the item was not in that
        clustering. Items are the dataset's rows (objects) in the order of its file.
    """

    values: Mapping[str, NDArray[np.float64]]
    failed: Mapping[int, str] = field(default_factory=dict)
    infeasible: Mapping[int, str] = field(default_factory=dict)
    seconds: Mapping[int, float] | None = None
    assignments: Mapping[int, NDArray[np.int16]] | None = None


TrialRunner = Callable[[int], TrialOutcome]


def describe(error: BaseException) -> str:
    """A one-line failure reason."""
    return f"{type(error).__name__}: {error}"


def scattered(ks: tuple[int, ...], computed: list[int], values: Mapping[str, Any]) -> dict[str, NDArray[np.float64]]:
    """Values computed at the ks ``computed`` (each of shape (len(computed),)) laid out along ``ks``, NaN elsewhere."""
    rows = [ks.index(k) for k in computed]
    out = {}
    for variable, at in values.items():
        full = np.full(len(ks), np.nan)
        full[rows] = np.asarray(at, dtype=np.float64)
        out[variable] = full
    return out
