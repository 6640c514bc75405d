"""The validated specs of a study config: frozen records that every subpackage reads.

Built by :func:`ordercube.pipeline.config.study.parse_config`; kept apart from the parsing so that the
modules the parser calls (datasets, data files, supervision, limits) can name the specs without importing it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ordercube.pipeline.config.adaptive import AdaptiveSpec
from ordercube.pipeline.data.reading import Reading
from ordercube.tasks.criteria import CRITERIA, get_criterion

MIN_N = 4
# A sweep whose estimated compute (on one core) is below this runs in the driver. A LocalCluster costs about
# 2.5-3 s here to start, stop and import the kernels in its workers; on 2 cores it saves half the work, so it
# pays from about twice that. Measured (n = 10,000, 180 cells): 6.1 s here against 9.1 s on 2 workers.
IN_PROCESS_SECONDS = 5.0


@dataclass(frozen=True)
class DatasetSpec:
    """One dataset: a registered generator (``kind``), a file (``kind == 'file'``) or an array given from Python
    (``kind == 'memory'``); built by :func:`ordercube.pipeline.config.dataspec.dataset_spec`."""

    name: str
    kind: str
    params: Mapping[str, Any]
    n: tuple[int, ...]
    true_k: int  # -1 when unknown
    n_features: int
    path: str | None = None
    labels_path: str | None = None
    labels_column: Any = None
    preprocess: tuple[tuple[str, Mapping[str, Any]], ...] = ()
    reading: Reading = field(default_factory=Reading, compare=False)
    read: str = field(default="", compare=False)  # what was read, one line: "62 rows x 2000 features from ..."
    data: NDArray[np.float64] | None = field(default=None, repr=False, compare=False)
    labels: NDArray[np.int64] | None = field(default=None, repr=False, compare=False)
    identity: Mapping[str, Any] = field(default_factory=dict, compare=False)
    classes: tuple[str, ...] = field(default=(), compare=False)  # the label names of a table, by code
    # (name, value) pairs a family reads from the entry and its blocks receive (ordercube.tasks.trial.BlockSpec): a
    # classifier's learning set (ordercube.pipeline.config.supervision)
    family_options: tuple[tuple[str, Any], ...] = ()
    objects: str = "points"  # what its rows are (ordercube.tasks.capabilities): points, graph, dissimilarity, matrix, ...
    provides: tuple[str, ...] = field(default=(), compare=False)  # what else it offers (ordercube.tasks.capabilities)
    row_names: tuple[str, ...] = field(default=(), repr=False, compare=False)  # each row's name, when the data has them


    @property
    def items(self) -> int | None:
        """The number of fixed items (rows, or objects of a square matrix) its trials draw from; None for a
        generator, whose trials draw fresh points (no item recurs across trials, so none has an assignment)."""
        return None if self.data is None else int(self.data.shape[0])


def is_reduced(name: str) -> bool:
    """Whether criterion ``name`` is computed from stored assignments after the sweep (``Criterion.reduce``,
    ``reads="assignments"``), never in a trial: it stores no cube variable and adds no work to a run."""
    criterion = get_criterion(name)
    return criterion.reduce is not None or criterion.reads == "assignments"


@dataclass(frozen=True)
class MethodSpec:
    """A clustering algorithm with its parameters, its predictor and the criteria read from its fits.

    ``criteria`` are computed in its trials (each stores cube variables); ``reduced`` are computed from its stored
    assignments after the sweep (:func:`is_reduced`), their options in ``criterion_options`` too. ``scheme`` is
    its resampling scheme ("" the family's own: a clusterer's two halves), ``scheme_params`` the scheme's
    parameters resolved over its defaults, ``assignments`` whether its trials' assignments of items are stored.
    """

    name: str
    algorithm: str
    params: Mapping[str, Any]
    predictor: str
    criteria: tuple[str, ...]
    criterion_options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    reduced: tuple[str, ...] = ()
    scheme: str = ""
    scheme_params: Mapping[str, Any] = field(default_factory=dict)
    assignments: bool = False
    listed: tuple[str, ...] = field(default=(), compare=False)  # every criterion in the config's order

    @property
    def all_criteria(self) -> tuple[str, ...]:
        """Every criterion of the method, computed in trials or reduced, in the order the config lists them."""
        return self.listed or self.criteria + self.reduced

    @property
    def identity(self) -> dict[str, Any]:
        """What its stored cells depend on. Reduced criteria are not in it (they store nothing and can be added or
        dropped freely, as decision settings can); the scheme and assignments only when they differ from the
        default, so the identity (and fingerprint) of every config without them is what it always was."""
        identity = {"algorithm": self.algorithm, "params": dict(self.params), "predictor": self.predictor,
                    "criteria": list(self.criteria)}
        options = {name: dict(values) for name, values in self.criterion_options.items() if name in self.criteria}
        if options:  # only criteria that take options (Gap, Clest) appear here
            identity["criterion_options"] = options
        if self.scheme:
            identity["scheme"] = self.scheme
            identity["scheme_params"] = dict(self.scheme_params)
        if self.assignments:
            identity["assignments"] = True
        return identity

    @property
    def needs_evaluation_sample(self) -> bool:
        return any(get_criterion(name).needs_evaluation_sample for name in self.criteria)


@dataclass(frozen=True)
class Execution:
    """How work is cut into tasks; never changes a result."""

    trials_per_chunk: int | None = None  # None: all trials of a (dataset, n, method, k) in one chunk, up to 100
    task_seconds: float = 0.5
    max_tasks_in_flight: int | None = None  # None: four per worker thread
    in_process_seconds: float = IN_PROCESS_SECONDS  # estimated work below which no cluster is started (0: never)


@dataclass(frozen=True)
class Config:
    name: str
    seed: int
    out: str
    datasets: tuple[DatasetSpec, ...]
    methods: tuple[MethodSpec, ...]
    k: tuple[int, ...]
    resamples: int
    baseline_draws: int
    execution: Execution
    raw: Mapping[str, Any] = field(repr=False, compare=False)
    published: Mapping[str, Any] = field(default_factory=dict, compare=False)
    # the adaptive rule of each method that has one (ordercube.pipeline.config.adaptive), by method name; not the cube's identity
    adaptive: Mapping[str, AdaptiveSpec] = field(default_factory=dict, compare=False)
    # the keys the config omitted and the values they got (ordercube.pipeline.config.defaults): {"seed": 123, ...}
    defaults: Mapping[str, Any] = field(default_factory=dict, compare=False)

    @property
    def identity(self) -> dict[str, Any]:
        """Everything a stored cell's value depends on; two configs agreeing here may share a cube."""
        return {"seed": self.seed, "baseline_draws": self.baseline_draws,
                "datasets": {d.name: dict(d.identity) for d in self.datasets},
                "methods": {m.name: m.identity for m in self.methods}}

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.identity)

    @property
    def data_lines(self) -> list[str]:
        """What was read for each dataset, one line each, as ``ordercube run`` and ``validate`` print it:
        ``data iris: 150 rows x 4 features from ... (labels ...: 3 classes ...); true k 3``."""
        return [f"data {dataset.name}: {dataset.read}" for dataset in self.datasets]

    @property
    def criteria(self) -> list[str]:
        """Every criterion some method computes in its trials, in registry order (reduced ones: :attr:`reduced`)."""
        used = {name for method in self.methods for name in method.criteria}
        return [name for name in CRITERIA if name in used]

    @property
    def reduced(self) -> list[str]:
        """Every criterion some method reduces from its stored assignments, in registry order."""
        used = {name for method in self.methods for name in method.reduced}
        return [name for name in CRITERIA if name in used]

    @property
    def variables(self) -> list[str]:
        """The cube variables of the criteria computed in trials (a criterion may store several: ``gap`` and
        ``gap_sd``); a reduced criterion stores none."""
        return [variable for name in self.criteria for variable in get_criterion(name).variables]

    @property
    def stores_assignments(self) -> bool:
        """Whether some method stores its trials' assignments (the cube then has the ``assignment`` variable)."""
        return any(method.assignments for method in self.methods)


def fingerprint(identity: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:16]
