"""A conformance kit for plug-ins: a registered record run through a small sweep, checked as ordercube's own are.

In the spirit of scikit-learn's ``check_estimator``: :func:`check_plugin` takes the name of a registered algorithm,
criterion or synthetic dataset (a built-in or a plug-in's), builds the smallest study it can run in (a probe
dataset its objects fit, an algorithm and criteria that fit it, by :func:`ordercube.tasks.capabilities.why_not`),
and checks what every record must hold:

- ``runs``: every cell of the sweep, computed in this process, is ok (a failing cell's reason is shown); the probe
  datasets are tried in turn (a generated mixture first, then the other generators, fixed rows of a mixture, a 0/1
  matrix), each validated, until one fits;
- ``outputs``: every output the criteria declare is in the cube with a finite value, and every criterion that
  decides (its rule is not ``none``) gets a decision from :func:`ordercube.select_k`;
- ``same bits in a worker process``: the same config on a local cluster of one worker process gives the same
  cube, every variable but ``seconds`` bit for bit (what the records compute must depend on the seed and the
  coordinates alone, never on the process: the plug-in must register where the worker imports it);
- ``seeds change the values``: another root seed changes some output (the record draws from the streams it is
  given, not from a fixed or global generator);
- ``declared cost``: how the cost model's seconds for the sweep's cells (the record's ``seconds_per_point`` and
  the rest, :func:`ordercube.pipeline.run.sweep.cell_cost`) grow from the smaller probe size to the larger, within
  2x of how the cells' measured seconds grow (timed after a first run warmed the kernels up); the absolute ratio
  is shown (a run's pilot rescales it).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

#: Probe parameters for the built-in generators that require some (a plug-in's generator runs with its defaults,
#: or with the dataset given to :func:`check_plugin`).
PROBE_PARAMS: dict[str, dict[str, Any]] = {"gaussian_mixture": {"centers": [[0.0, 0.0], [5.0, 0.0], [0.0, 5.0]]}}
#: The probe's sample sizes: the smaller for the checks of bits and seeds, the larger for the cost.
PROBE_N = (60, 240)
#: The seed of the probe files' rows (fixed: the files are the same in every check).
PROBE_SEED = 2026
#: The declared cost must be within this factor of the measured, either way ...
COST_FACTOR = 2.0
#: ... where the larger probe's cells took at least this many seconds: below it a timer's noise and a cache's
#: warmth decide the growth (the demo plug-in's cells: 2.6 ms in all, "growing" x0.53 from n = 60 to 240).
COST_JUDGED_FROM = 0.05


@dataclass(frozen=True)
class Check:
    """One check's outcome: its name, whether it passed and what was seen."""

    name: str
    passed: bool
    detail: str


@dataclass
class PluginReport:
    """What :func:`check_plugin` found: the record, the study it ran (``config``) and each :class:`Check`."""

    record: str
    kind: str
    config: dict[str, Any]
    checks: list[Check] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(check.passed for check in self.checks)

    @property
    def failures(self) -> list[Check]:
        return [check for check in self.checks if not check.passed]

    def __str__(self) -> str:
        method = self.config["methods"][0]
        dataset = self.config["datasets"][0]
        lines = [f"check_plugin({self.record!r}): {self.kind}; probe: dataset {dataset.get('kind')!r}, algorithm "
                 f"{method['algorithm']!r}, criteria {method.get('criteria')}, k {self.config['k']}, "
                 f"{self.config['resamples']} resamples"]
        lines += [f"  {'ok  ' if check.passed else 'FAIL'} {check.name}: {check.detail}" for check in self.checks]
        return "\n".join(lines)


class PluginCheckError(AssertionError):
    """A record failed :func:`check_plugin`; ``report`` holds every check."""

    def __init__(self, report: PluginReport) -> None:
        super().__init__(str(report))
        self.report = report


def check_plugin(name: str, *, dataset: Mapping[str, Any] | None = None, method: Mapping[str, Any] | None = None,
                 k: Sequence[int] = (2, 3, 4), resamples: int = 3, seed: int = 20_261_129, worker_process: bool = True,
                 raise_on_failure: bool = True) -> PluginReport:
    """Run the registered record ``name`` through a small sweep and check it (see the module's docstring).

    Parameters
    ----------
    name : str
        A registered algorithm, criterion or synthetic dataset (looked up in that order).
    dataset : mapping, optional
        A config's dataset entry to probe with (``{"name": ..., "kind": ..., "params": ...}``, without ``n``),
        in place of the built-in probes: for a record of objects no registered generator makes, or a generator
        whose parameters have no defaults.
    method : mapping, optional
        Keys added to the probe's method (``{"params": ...}``, ``{"scheme": "consensus", "scheme_params":
        {"references": 5}}`` for M3C).
    k : sequence of int
        The orders of the probe study.
    resamples, seed : int
        The probe study's resamples and root seed (the seed check uses ``seed + 1``).
    worker_process : bool
        Also run the study on a local cluster of one worker process (the same-bits check); False skips it.
    raise_on_failure : bool
        Raise :class:`PluginCheckError` when a check fails (else return the report).

    Returns
    -------
    PluginReport
        Printable: one line per check.

    Raises
    ------
    ConfigError
        ``name`` is registered nowhere, or no probe fits it (the message says what to pass).
    PluginCheckError
        A check failed (with ``raise_on_failure``).
    """
    from ordercube.pipeline.errors import ConfigError

    with tempfile.TemporaryDirectory(prefix="ordercube-check-") as folder:
        kind, config = probe_config(name, Path(folder), dataset=dataset, method=method, k=k, resamples=resamples,
                                    seed=seed)
        report = PluginReport(record=name, kind=kind, config=config)
        try:
            report.checks.extend(_checks(config, Path(folder), worker_process=worker_process))
        except ConfigError as error:
            report.checks.append(Check("runs", False, f"the probe study was refused: {error}"))
    if raise_on_failure and not report.passed:
        raise PluginCheckError(report)
    return report


def probe_config(name: str, folder: Path, *, dataset: Mapping[str, Any] | None = None,
                 method: Mapping[str, Any] | None = None, k: Sequence[int] = (2, 3, 4), resamples: int = 3,
                 seed: int = 20_261_129) -> tuple[str, dict[str, Any]]:
    """The kind of record ``name`` is (``algorithm``, ``criterion`` or ``dataset``) and the config of the first
    probe study it runs in that :func:`ordercube.validate` accepts, with both probe sizes as ``n`` (the probe files
    written in ``folder``)."""
    import ordercube
    from ordercube.pipeline.config.defaults import default_criteria
    from ordercube.pipeline.errors import ConfigError
    from ordercube.tasks.algorithms import ALGORITHMS
    from ordercube.tasks.capabilities import fitting_criteria, fitting_predictors, why_not
    from ordercube.tasks.criteria import CRITERIA
    from ordercube.tasks.datasets import SYNTHETIC

    from ordercube.tasks.plugins import load_on_miss, unknown_note

    if not any(name in registry for registry in (ALGORITHMS, CRITERIA, SYNTHETIC)):
        load_on_miss(f"record {name}")  # a plug-in's record, found by its entry point as a worker finds it
    if name in ALGORITHMS:
        kind, algorithms, wanted = "algorithm", [ALGORITHMS[name]], None
    elif name in CRITERIA:
        kind, algorithms, wanted = "criterion", list(ALGORITHMS.values()), CRITERIA[name]
    elif name in SYNTHETIC:
        kind, algorithms, wanted = "dataset", list(ALGORITHMS.values()), None
    else:
        raise ConfigError("name", f"{name!r} is no registered algorithm, criterion or synthetic dataset{unknown_note()}",
                          "install the plug-in that registers it, then check it")
    refusals = []
    for entry, data in _probes(name if kind == "dataset" else None, dataset, folder):
        for algorithm in algorithms:
            if why_not(data, algorithm, wanted) is not None:
                continue
            on = algorithm if data is None else algorithm.on(data.objects)
            criteria = [wanted.name] if wanted is not None else list(default_criteria(on)) or fitting_criteria(data, on)
            if not criteria:
                continue
            probe: dict[str, Any] = {"name": "probe", "algorithm": algorithm.name, "criteria": criteria}
            if on.needs_predictor and on.predictor is None:
                predictors = fitting_predictors(data.objects if data is not None else on.takes)
                if not predictors:
                    continue
                probe["predictor"] = predictors[0]
            probe.update(method or {})
            config = {"name": f"check_{name}", "seed": seed, "k": [int(value) for value in k],
                      "resamples": int(resamples), "datasets": [{**entry, "n": list(PROBE_N)}], "methods": [probe]}
            try:
                ordercube.validate(config)
            except ConfigError as error:  # this probe does not suit it (too many features, drawn points): the next
                refusals.append(f"{entry.get('kind')} + {algorithm.name}: {error}")
                continue
            return kind, config
    raise ConfigError("name", f"no probe dataset fits {kind} {name!r}"
                      + (f" ({'; '.join(refusals[:3])})" if refusals else ""),
                      "pass dataset={'name': ..., 'kind': ..., 'params': {...}} of objects it takes")


def _probes(only: str | None, given: Mapping[str, Any] | None,
            folder: Path) -> Iterator[tuple[dict[str, Any], Any]]:
    """Config entries of probe datasets, each with what it declares (:class:`DataObjects`; None: known once read):
    the one given, else the registered generators (``only``: that one; the built-in mixture first), then fixed rows
    of a mixture and a Boolean matrix, written in ``folder``."""
    from ordercube.tasks.capabilities import DataObjects
    from ordercube.tasks.datasets import SYNTHETIC

    if given is not None:
        entry = {"name": "probe", **dict(given)}
        generator = SYNTHETIC.get(str(entry.get("kind")))
        if generator is None:
            yield entry, None
            return
        params = generator.resolve(entry.get("params") or {})
        yield entry, DataObjects("probe", generator.objects, tuple(generator.provides(params)))
        return
    names = [only] if only else sorted(SYNTHETIC, key=lambda name: name != "gaussian_mixture")
    for name in names:
        generator = SYNTHETIC[name]
        params = PROBE_PARAMS.get(name, {})
        try:
            resolved = generator.resolve(params)
        except ValueError:  # a required parameter without a probe value: pass dataset=
            continue
        entry: dict[str, Any] = {"name": "probe", "kind": name}
        if params:
            entry["params"] = params
        yield entry, DataObjects("probe", generator.objects, tuple(generator.provides(resolved)))
    if only:
        return
    rng = np.random.default_rng(PROBE_SEED)
    rows = PROBE_N[1] * 2
    centres = np.array(PROBE_PARAMS["gaussian_mixture"]["centers"])
    points = centres[rng.integers(0, len(centres), rows)] + rng.normal(size=(rows, centres.shape[1]))
    np.savetxt(folder / "probe_points.csv", points, delimiter=",", header="x,y", comments="", fmt="%.17g")
    yield {"name": "probe", "kind": "file", "path": str(folder / "probe_points.csv")}, DataObjects("probe")
    patterns = rng.random((3, 24)) < 0.4
    matrix = patterns[rng.integers(0, 3, rows)] ^ (rng.random((rows, 24)) < 0.05)
    header = ",".join(f"p{j}" for j in range(matrix.shape[1]))
    np.savetxt(folder / "probe_boolean.csv", matrix.astype(int), delimiter=",", header=header, comments="", fmt="%d")
    yield ({"name": "probe", "kind": "boolean_matrix", "path": str(folder / "probe_boolean.csv"), "format": "dense"},
           DataObjects("probe", "matrix", ("boolean",)))


def _checks(config: dict[str, Any], folder: Path, *, worker_process: bool) -> Iterator[Check]:
    import ordercube
    from ordercube.pipeline.errors import InputError
    from ordercube.tasks.criteria import get_criterion
    from ordercube.tasks.trial import Status

    small = {**config, "datasets": [{**config["datasets"][0], "n": [PROBE_N[0]]}]}
    here = ordercube.sweep(small, out=folder / "here.zarr", workers=0, progress=False).load()
    status = here["status"].values
    bad = status != Status.OK
    if bad.any():
        reasons = sorted({str(reason) for reason in here["reason"].values[bad] if str(reason)})[:3]
        yield Check("runs", False, f"{int(bad.sum())} of {status.size} cells not ok "
                                   f"({', '.join(Status(int(code)).name.lower() for code in np.unique(status[bad]))}): "
                                   f"{'; '.join(reasons) or 'no reason recorded'}")
        return
    yield Check("runs", True, f"{status.size} cells ok in this process")
    criteria = [get_criterion(name) for name in config["methods"][0]["criteria"]]
    stored = [variable for criterion in criteria if criterion.reduce is None for variable in criterion.variables]
    missing = [variable for variable in stored if variable not in here or not np.isfinite(here[variable].values).any()]
    try:
        decided = ordercube.select_k(here)
    except InputError as error:  # validate accepted what the decision refuses: a defect of the record's checks
        yield Check("outputs", False, f"select_k refused the cube: {error}")
        return
    undecided = [criterion.name for criterion in criteria
                 if criterion.decision.rule != "none" and criterion.name not in decided]
    yield Check("outputs", not missing and not undecided,
                f"missing or never finite: {missing}; no decision: {undecided}" if missing or undecided else
                f"{len(stored)} stored outputs with finite values; a decision for each criterion that decides")
    variables = [name for name in here.data_vars if name != "seconds"]
    if worker_process:
        yield _same_bits_in_a_worker(small, folder, here, variables)
    reseeded = {**small, "seed": small["seed"] + 1}
    other = ordercube.sweep(reseeded, out=folder / "seed.zarr", workers=0, progress=False).load()
    changed = [name for name in stored if not np.array_equal(here[name].values, other[name].values, equal_nan=True)]
    yield Check("seeds change the values", bool(changed) or not stored,
                f"seed {small['seed'] + 1} changed {changed}" if changed else
                f"seed {small['seed'] + 1} gave the same {stored}: the record ignores the streams it is given")
    yield _declared_cost(reseeded, other, folder)


def _same_bits_in_a_worker(config: dict[str, Any], folder: Path, here: Any, variables: list[str]) -> Check:
    """The study on ordercube's own local cluster of one worker process (it needs no main guard), forced even
    below the work a cluster pays for."""
    import ordercube

    execution = {**config.get("execution", {}), "in_process_seconds": 0}
    there = ordercube.sweep({**config, "execution": execution}, out=folder / "there.zarr", workers=1,
                            progress=False).load()
    differing = [name for name in variables
                 if name not in there or not np.array_equal(here[name].values, there[name].values, equal_nan=True)]
    return Check("same bits in a worker process", not differing,
                 f"differ: {differing}" if differing else f"{len(variables)} variables identical (seconds aside)")


def _declared_cost(small: dict[str, Any], measured_small: Any, folder: Path) -> Check:
    """How the cost model's seconds grow from the smaller probe to the larger against how the cells' measured
    seconds grow (both runs after the kernels warmed up). The estimate a run prints rescales the model's absolute
    seconds by a pilot of real cells (:mod:`ordercube.pipeline.run.estimate`); what it takes from the declared
    cost is how the cells' seconds compare, so that is what must hold within :data:`COST_FACTOR`. The absolute
    ratio is shown beside it."""
    import ordercube

    large = {**small, "datasets": [{**small["datasets"][0], "n": [PROBE_N[1]]}]}
    modelled = (ordercube.validate(small).estimated_seconds, ordercube.validate(large).estimated_seconds)
    cube = ordercube.sweep(large, out=folder / "cost.zarr", workers=0, progress=False).load()
    measured = (float(np.nansum(measured_small["seconds"].values)), float(np.nansum(cube["seconds"].values)))
    if min(modelled) <= 0 or min(measured) <= 0:
        return Check("declared cost", False, f"modelled {modelled} s and measured {measured} s: a cost of zero")
    if measured[1] < COST_JUDGED_FROM:
        return Check("declared cost", True, f"not judged: the cells took {measured[1] * 1e3:.1f} ms at n = "
                     f"{PROBE_N[1]} (below {COST_JUDGED_FROM * 1e3:g} ms, timing noise decides); a run's pilot times "
                     "such cells")
    growth = (modelled[1] / modelled[0], measured[1] / measured[0])
    ratio = growth[0] / growth[1]
    within = 1 / COST_FACTOR <= ratio <= COST_FACTOR
    return Check("declared cost", within,
                 f"n {PROBE_N[0]} -> {PROBE_N[1]}: modelled x{growth[0]:.2f}, measured x{growth[1]:.2f} (ratio "
                 f"{ratio:.2f}, within {1 / COST_FACTOR:g}-{COST_FACTOR:g}: {'yes' if within else 'no'}); absolute at "
                 f"n = {PROBE_N[1]}: modelled {modelled[1]:.3g} s, measured {measured[1]:.3g} s "
                 f"(x{modelled[1] / measured[1]:.2f}, rescaled by a run's pilot)")
