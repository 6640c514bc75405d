"""The Python API: the same sweep, cube and reducers as the CLI, called from a script or a notebook.

Every function here is a thin shell over ``pipeline``: the config is validated by
:func:`ordercube.pipeline.config.study.parse_config`, the sweep is :func:`ordercube.pipeline.run.sweep.run_sweep`,
the choices are :func:`ordercube.pipeline.reduce.select.select_k`, the report is
:func:`ordercube.pipeline.report.write.write_report`. The heavy imports (xarray, zarr, distributed) happen on the
first call, not on ``import ordercube``.
"""

from __future__ import annotations

import logging
import math
import os
import re
import signal
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ordercube.inputs import read_config
from ordercube.pipeline.errors import ConfigError, InputError

if TYPE_CHECKING:
    import pandas as pd
    import xarray as xr
    from distributed import Client

    from ordercube.choice import Choice
    from ordercube.pipeline.config.specs import Config
    from ordercube.pipeline.reduce.partition import Partition
    from ordercube.pipeline.run.sweep import Plan

log = logging.getLogger("ordercube")

# The run options a caller may pass through ``**options`` (the CLI's flags of the same names).
RUN_OPTIONS = {"retry_failed", "scheduler", "scheduler_file", "connect_timeout", "wait_for_workers"}
Decide = Mapping[str, Mapping[str, Any]]
#: ``sweep`` without ``progress`` prints its estimated wall time from this many seconds (the progress bar's
#: threshold, :data:`ordercube.pipeline.run.progress.PROGRESS_FROM_SECONDS`); a shorter run only logs it.
ESTIMATE_PRINTED_FROM = 10.0


def sweep(config: str | os.PathLike[str] | Mapping[str, Any], *, data: Mapping[str, Any] | None = None,
          client: Client | None = None, out: str | os.PathLike[str] | None = None, workers: int | None = None,
          progress: bool | None = None, **options: Any) -> xr.Dataset:
    """Compute every cell of ``config`` that its cube lacks, and return the cube.

    Parameters
    ----------
    config : path of a YAML config, or a dict with the same schema
        A dict's relative paths (files, ``out``) start from the current folder.
    data : dict of {name: X | (X, labels)}, optional
        In-memory datasets. ``X`` is an ndarray of shape (n_samples, n_features) or a DataFrame;
        ``labels`` an array of shape (n_samples,), a list, a Series, or ``{"column": NAME}`` (a column
        of the DataFrame). A config dataset of the same name gets this data (its ``n``, ``preprocess``
        and other keys apply); another name adds a dataset, with the config's top-level ``n``.
    client : distributed.Client, optional
        Run on this client's cluster (dask-jobqueue, Kubernetes, a LocalCluster of yours). It is used
        as it is and never closed, nor is its cluster; lost workers are left to their owner.
    out : path, optional
        The cube; default the config's ``out``, else ``results/<name>.zarr``.
    workers : int, optional
        Worker processes of the LocalCluster started for this sweep when neither ``client`` nor
        ``scheduler`` is given (default one per core; none when the estimated work is below the config's
        ``execution.in_process_seconds``, 5 s: then the sweep runs in this process). 0 computes in this
        process. Its worker processes never import the main script or notebook (as joblib's loky workers
        do not), so a script needs no ``if __name__ == "__main__":`` guard and may be read from standard
        input; a record registered by the script itself is refused (``InputError``): name its module in
        ``ORDERCUBE_PLUGINS`` or install it as a plug-in.
    progress : bool, optional
        Default (None): the estimated wall time printed before computing and a progress bar drawn when the
        estimate exceeds 10 s, the other lines logged. True: a progress bar (above 10 s), the estimate and the
        CLI's lines (the data line of each dataset, the keys the config omitted with the drawn seed, the plan,
        the dashboard address) on stderr/stdout; False: these lines (the estimate too) go to the
        ``ordercube`` logger at INFO level. The data lines are also ``validate(config).config.data_lines``.
    **options
        ``retry_failed=True``, ``scheduler="tcp://HOST:PORT"``, ``scheduler_file=PATH``,
        ``connect_timeout=SECONDS``, ``wait_for_workers=SECONDS``: the CLI's flags of the same names.

    Returns
    -------
    cube : xarray.Dataset
        :func:`open_cube` of the cube: lazily loaded (values are read from disk when used; call
        ``.load()`` to hold them in memory). Failed cells are data: see ``cube.status``.

    Raises
    ------
    ConfigError, InputError
        Bad input (the message names the key, the value and the fix); nothing was written.
    KeyboardInterrupt
        Ctrl-C, a Jupyter interrupt, or SIGTERM: every finished cell is in the cube; the same call resumes.
    ClusterLost, NoWorkers, DiskFull, StoreFailed
        The run stopped; every finished cell is in the cube and the same call resumes.
    """
    unknown = sorted(set(options) - RUN_OPTIONS)
    if unknown:
        raise TypeError(f"sweep() got unexpected keyword argument(s) {unknown}; expected some of {sorted(RUN_OPTIONS)}")
    _check_where(client, workers, options)
    parsed = _check_out(read_config(config, data=data, out=out))
    echo = print if progress else log.info
    for line in _read_lines(parsed):
        echo(line)
    return _sweep_parsed(parsed, client=client, workers=workers, progress=progress, echo=echo,
                         announce_from=0.0 if progress else ESTIMATE_PRINTED_FROM, **options)


def _read_lines(parsed: Config) -> list[str]:
    """What ``sweep`` says it read: the keys the config omitted (with the drawn seed), then each data line."""
    from ordercube.pipeline.config.defaults import describe_defaults

    return ([describe_defaults(parsed.defaults)] if parsed.defaults else []) + parsed.data_lines


def _sweep_parsed(parsed: Config, *, client: Client | None, workers: int | None, progress: bool | None,
                  echo: Callable[[str], None], announce_from: float = 0.0, **options: Any) -> xr.Dataset:
    """The sweep of a checked config (its place to run checked too), and its cube. The estimated wall time is
    printed when it is at least ``announce_from`` seconds (else given to ``echo``); ``progress`` False: never."""
    from ordercube.pipeline.cube.owner import Cube
    from ordercube.pipeline.run.sweep import Interrupted, run_sweep

    try:
        with _sigterm_interrupts():
            run_sweep(parsed, client=client, workers=workers, show_progress=progress is not False, echo=echo,
                      announce=None if progress is False else print,
                      announce_from=announce_from, **options)
    except (Interrupted, KeyboardInterrupt):
        raise KeyboardInterrupt(f"sweep interrupted: every finished cell is in {parsed.out}; "
                                "the same call resumes") from None
    return Cube.open(parsed.out).dataset()


def open_cube(path: str | os.PathLike[str]) -> xr.Dataset:
    """The cube at ``path`` as a lazily loaded ``xarray.Dataset`` (see :func:`ordercube.pipeline.cube.owner.open_cube`).

    Dimensions ``dataset``, ``n``, ``model`` (the config's methods), ``k``, ``trial`` (its resamples).
    """
    from ordercube.pipeline.cube.owner import Cube

    return Cube.open(path).dataset()


def select_k(cube_or_scores: xr.Dataset | str | os.PathLike[str], decide: Decide | None = None, *,
             replicates: int | None = None) -> xr.Dataset:
    """k̂ per (dataset, n, model), one variable per model-order criterion (see :func:`ordercube.pipeline.reduce.select.select_k`),
    with what the Monte Carlo error allows beside each.

    ``cube_or_scores`` is a cube (as :func:`sweep` and :func:`open_cube` return it), its path, or the
    output of :func:`ordercube.criterion_scores`. ``decide`` re-decides from the stored values, e.g.
    ``{"prediction_strength": {"threshold": 0.8}, "gap": {"method": "globalmax"}}``. The criteria a cube computes
    from its stored assignments (PAC, ...) are computed here, without refitting, with ``replicates`` bootstrap
    replicates over resamples for their error (default :data:`ordercube.pipeline.reduce.assignments.REPLICATES`;
    0: none), and ``decide`` may give their options too: ``{"pac": {"window": (0.05, 0.95)}}``.

    Beside each criterion's ``{criterion}`` (k̂, -1: no choice), as coordinates over the same (dataset, n, model) (the
    data variables stay one per criterion; ``to_dataframe()`` shows them as columns):
    ``{criterion}_k_set`` (text: the k's its rule cannot tell apart from k̂ given the Monte Carlo error, ascending,
    then ``none`` where "no choice" is among them: :mod:`ordercube.pipeline.reduce.within_noise`),
    ``{criterion}_within_noise`` (that set holds another choice),
    ``{criterion}_tied`` (a k ties with k̂ exactly) and, for a cube, ``{criterion}_small_cluster`` and
    ``{criterion}_smallest_cluster`` (k̂'s consensus partition holds a cluster of at most max(2 items, 2% of them);
    its smallest size, -1 where the method stored no clusterings).
    """
    from ordercube.pipeline.reduce.assignments import (
        REPLICATES, k_hat_clusters, point_curves, reduced_scores, resolved_options,
    )
    from ordercube.pipeline.reduce.select import decisions, with_reduced
    from ordercube.pipeline.reduce.select import select_k as choose
    from ordercube.pipeline.reduce.uncertainty import decision_uncertainty
    from ordercube.pipeline.reduce.within_noise import K_SET, set_words

    count = _replicates(replicates, "replicates")
    scores, cube = _scores(cube_or_scores, with_cube=True)
    reduced = None
    try:
        if cube is not None:
            resolved_options(cube, decide)
            reduced = reduced_scores(cube, decide, replicates=REPLICATES if count is None else count)
            scores = with_reduced(scores, point_curves(reduced))
        decisions(scores, decide)
    except ValueError as error:
        raise InputError(f"decide: {error}") from None
    chosen = choose(scores, decide)
    uncertainty = decision_uncertainty(scores, decide, chosen=chosen, reduced=reduced)
    beside = {}
    for name in map(str, chosen.data_vars):
        beside[f"{name}_{K_SET}"] = set_words(uncertainty, name)
        beside |= {f"{name}_{field}": uncertainty[f"{name}_{field}"] for field in ("within_noise", "tied")}
    if cube is not None:
        beside |= dict(k_hat_clusters(cube, chosen).data_vars)
    return chosen.assign_coords(beside)  # coordinates: the data variables stay one per criterion


def report(cube_or_path: xr.Dataset | str | os.PathLike[str], folder: str | os.PathLike[str],
           decide: Decide | None = None, *, fmt: str = "png", replicates: int | None = None) -> pd.DataFrame:
    """Write ``selection.csv`` and the figures (``fmt``: png, svg or pdf) into ``folder``, as ``ordercube report``
    does; returns the table (with each k̂'s uncertainty and flags).

    The criteria computed from stored assignments (PAC, ...) are computed from the cube, nothing refitted, with
    ``replicates`` bootstrap replicates over resamples for their intervals (default
    :data:`ordercube.pipeline.reduce.assignments.REPLICATES`; 0: none); ``decide`` may give their options
    (``{"pac": {"window": (0.05, 0.95)}}``).

    A cube without a computed cell writes nothing and returns an empty table.
    """
    import pandas as pd

    from ordercube.pipeline.cube.owner import Cube
    from ordercube.pipeline.report.figures import FORMATS
    from ordercube.pipeline.files.location import location
    from ordercube.pipeline.files.outputs import RECORD as FIGURE_RECORD, output_folder, report_folder

    if fmt not in FORMATS:
        raise InputError(f"fmt: {fmt!r} is not one of {list(FORMATS)}; e.g. fmt='svg' for vector figures")
    if isinstance(cube_or_path, (str, os.PathLike)):
        cube = Cube.open(cube_or_path).load()
        target = report_folder(location(cube_or_path, key="cube_or_path"), os.fspath(folder), key="folder")
    else:
        cube, target = cube_or_path.load(), output_folder(Path(folder), FIGURE_RECORD, key="folder")
    _, table = write_checked_report(cube, target, decide, decide_key="decide", folder_key="folder", fmt=fmt,
                                    replicates=_replicates(replicates, "replicates"))
    return pd.DataFrame() if table is None else table


def write_checked_report(cube: xr.Dataset, folder: Path, decide: Decide | None, *, decide_key: str, folder_key: str,
                         fmt: str, helper: Any = None, replicates: int | None = None
                         ) -> tuple[dict[str, int], pd.DataFrame | None]:
    """``decide`` checked against the cube's criteria (a bad one named by ``decide_key``), then the report written
    into ``folder`` (named ``folder_key``): the cube's cell counts and the table, None (nothing written) when no
    cell is computed. :func:`report` and ``ordercube report`` (through :mod:`ordercube.commands`) both call it."""
    from ordercube.pipeline.files.outputs import RECORD as FIGURE_RECORD, claim_folder
    from ordercube.pipeline.reduce.assignments import reduced_names, resolved_options
    from ordercube.pipeline.reduce.select import criteria_of, criterion_scores, decisions_of
    from ordercube.pipeline.report.write import status_counts, write_report

    try:
        if decide:  # without options there is nothing to check, and the report computes the scores itself
            decisions_of(criteria_of(criterion_scores(cube)) + reduced_names(cube), decide)
        resolved_options(cube, decide)
    except ValueError as error:
        raise InputError(f"{decide_key}: {error}") from None
    counts = status_counts(cube)
    if counts["ok"] == 0:  # nothing to tabulate or draw: the disk is left as it is
        return counts, None
    claim_folder(folder, FIGURE_RECORD, key=folder_key)  # marked as a report's first: an interrupted one is recognised
    return counts, write_report(cube, folder, decide, fmt=fmt, helper=helper, replicates=replicates)


def _replicates(value: Any, key: str) -> int | None:
    """``value`` as a number of bootstrap replicates (None: the default); ``InputError`` naming ``key`` otherwise."""
    from ordercube.pipeline.reduce.assignments import MAX_REPLICATES, REPLICATES

    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_REPLICATES:
        raise InputError(f"{key}: expected an integer from 0 to {MAX_REPLICATES:,} (bootstrap replicates over "
                         f"resamples; 0: no intervals), got {value!r}; e.g. {REPLICATES}")
    return int(value)


def partition(cube_or_path: xr.Dataset | str | os.PathLike[str], dataset: str, method: str, *, k: int | None = None,
              criterion: str | None = None, config: str | os.PathLike[str] | Mapping[str, Any] | None = None,
              data: Mapping[str, Any] | None = None) -> Partition:
    """``method`` fitted on the whole ``dataset`` at k̂ (or ``k``) with the cube's seeds, as ``ordercube partition``.

    Returns a :class:`ordercube.pipeline.reduce.partition.Partition`: ``labels`` (cluster codes 0..k-1 of the rows), ``rows()``
    (a DataFrame: row name, cluster from 1, known class), ``agreement`` and ``adjusted_rand`` (with known classes),
    ``clusters()`` (each cluster's size and Hennig's clusterwise Jaccard over the cube's resamples). ``config`` and
    ``data`` as for :func:`sweep`: needed when the cube was computed from arrays given in Python, or from files
    whose relative paths do not resolve from the current folder.
    """
    from ordercube.pipeline.cube.owner import Cube
    from ordercube.pipeline.reduce.partition import compute_partition, stored_config

    cube = Cube.open(cube_or_path).load() if isinstance(cube_or_path, (str, os.PathLike)) else cube_or_path.load()
    if config is None and data is not None:  # the cube's own config, its arrays given again
        given = read_config(stored_config(cube, given=data if isinstance(data, Mapping) else ()), data=data)
    else:
        given = None if config is None else read_config(config, data=data)
    try:
        return compute_partition(cube, dataset, method, k=k, criterion=criterion, config=given)
    except InputError as error:  # the CLI's option names as this function's arguments
        raise InputError(re.sub(r"^--(\w+):", r"\1:", str(error))) from None


def validate(config: str | os.PathLike[str] | Mapping[str, Any], *, data: Mapping[str, Any] | None = None,
             out: str | os.PathLike[str] | None = None) -> Plan:
    """Check ``config`` (and ``data``) as :func:`sweep` would, and return the plan without computing.

    The plan's ``config`` is the validated config, ``coords`` the cube's coordinates, ``planned_cells``
    and ``cells_to_compute`` count cells (against the existing cube at ``out``, when there is one).
    ``plan.config.data_lines`` holds the line the CLI prints for each dataset (``data iris: 150 rows x 4
    features ...; true k 3``), ``plan.config.defaults`` the keys the config omitted and the values they got
    (the drawn ``seed`` among them: pass it to repeat the run). ``plan.estimate()`` times a short pilot of a few
    cells in this process (not written) and returns the estimated compute; ``.wall(workers, cluster=...)`` is the
    wall time, ``.line(...)`` the line ``ordercube validate`` prints.

    Raises
    ------
    ConfigError
        A wrong or missing key; :class:`ordercube.ConfigErrors` (a ConfigError) when several are wrong, each
        in ``errors`` and on its own line of the message.
    """
    from ordercube.pipeline.run.sweep import preview_plan

    return preview_plan(read_config(config, data=data, out=out))


def choose_k(X: Any, k: Iterable[int] = range(2, 11), *, labels: Any = None, criteria: Iterable[Any] | None = None,
             algorithm: str = "kmeans", resamples: int | None = None, seed: int | None = None,
             n: int | list[int] | None = None, out: str | os.PathLike[str] | None = None, workers: int | None = None,
             client: Client | None = None, progress: bool | None = None, **options: Any) -> Choice:
    """Choose the number of clusters of ``X`` by resampling, with every criterion of the default set, in one call.

    A sweep of one dataset and one method (:func:`sweep`), read by the reducers (:func:`select_k`, the
    uncertainty of each k̂) into a :class:`ordercube.Choice`. Before computing it prints what was read (the data
    line the CLI prints), the seed and the number of resamples (``seed=..., resamples=...: pass seed=... to
    repeat``) and where the cube goes.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features) or pandas.DataFrame
        The data, one row per object.
    k : iterable of int, default range(2, 11)
        The numbers of clusters compared, each >= 2 (Lange et al. 2002 compare k = 2, ..., 10).
    labels : array of shape (n_samples,), pandas.Series or str, optional
        Known classes (failure rates and the agreement of k̂ are then reported); a string names a column of
        the DataFrame ``X``, which is then left out of the features.
    criteria : list of str, optional
        Default: the set for the algorithm's kind (:data:`ordercube.pipeline.config.defaults.CLUSTERING_CRITERIA`
        for a clustering algorithm): the stability of Lange et al. (2002), Prediction Strength (Tibshirani &
        Walther 2005), the Gap statistic (Tibshirani, Walther & Hastie 2001) and the silhouette (Rousseeuw 1987),
        those of them defined for it. Each item a name or a one-key mapping to its options
        (``{"gap": {"references": 50}}``).
    algorithm : str, default "kmeans"
        A registered algorithm or a scikit-learn clusterer by import path; its predictor is the one matched to
        it (nearest centroid for k-means; Lange et al. 2002, Sec. 3) unless ``predictor=`` is given.
    resamples : int, optional
        Resamples (random splits into halves) per k; default 20, as Lange et al. (2002) and Roth et al. (2002).
    seed : int, optional
        The root seed; default drawn from the operating system's entropy and printed. The same seed (with the
        same data and arguments) gives the same cube, bit for bit.
    n : int or list of int, optional
        The sample size(s) each resample draws; default every row.
    out : path, optional
        The cube; default ``<temporary folder>/ordercube-choose_k/<digest>.zarr`` (printed), the digest of the
        data and every argument: the same call again reads the cube it wrote instead of computing.
    workers, client, progress
        As for :func:`sweep` (by default a small sweep runs in this process, and a bar is drawn when the estimated
        wall time, printed before computing, exceeds 10 s; ``progress=False``: no bar, the estimate logged).
    **options
        ``params`` (the algorithm's parameters), ``predictor``, ``name`` (of the dataset and the study, default
        ``X``), ``baseline_draws``, ``execution`` (as in a config), and :func:`sweep`'s run options
        (``retry_failed``, ``scheduler``, ...).

    Returns
    -------
    Choice
        Prints a table of one row per criterion (k̂, the share of resamples that chose it with its 95% interval,
        the runner-up and the difference to it with its 95% interval, flags) and the combined answer; ``k_hat``,
        ``table``, ``agreement``, ``cube``, ``plot()``.

    Raises
    ------
    ConfigError
        Bad input, naming the argument, the value and the fix (:class:`ordercube.ConfigErrors` for several).

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> choice = ordercube.choose_k(load_iris().data, seed=0)  # doctest: +SKIP
    >>> choice.k_hat  # doctest: +SKIP
    """
    from ordercube.choice import Choice, as_arguments, check_k, choose_k_config, default_out

    config, run = choose_k_config(X, k, labels=labels, criteria=criteria, algorithm=algorithm, resamples=resamples,
                                  seed=seed, n=n, options=options, run_options=RUN_OPTIONS)
    _check_where(client, workers, run)
    try:
        parsed = read_config(config)
    except ConfigError as error:
        raise as_arguments(error) from None
    check_k(parsed)
    parsed = _check_out(replace(parsed, out=os.fspath(out) if out is not None else default_out(parsed)))
    method, data_line = parsed.methods[0], parsed.data_lines[0].replace("datasets[0].data", "X")
    print(data_line)
    drawn = f"seed={parsed.seed}, resamples={parsed.resamples}: pass seed={parsed.seed} to repeat; " if seed is None else ""
    print(f"{drawn}{method.algorithm} + {method.predictor}, criteria {', '.join(method.criteria)}; cube {parsed.out}")
    cube = _sweep_parsed(parsed, client=client, workers=workers, progress=progress,
                         echo=print if progress else log.info, **run)
    return Choice.of(cube, data_line=data_line, seed=parsed.seed, resamples=parsed.resamples,
                     out=parsed.out, method=f"{method.algorithm} + {method.predictor}")


def _scores(given: Any, *, with_cube: bool = False) -> Any:
    """The per-trial scores of a cube (a path, :func:`open_cube`'s Dataset, ``xarray.open_zarr``'s with Dask
    arrays) or the scores themselves, in memory; ``with_cube``: and the cube (None when given scores)."""
    import xarray as xr

    from ordercube.pipeline.cube.owner import Cube
    from ordercube.pipeline.cube.metadata import described
    from ordercube.pipeline.reduce.select import criterion_scores

    if isinstance(given, (str, os.PathLike)):
        cube = Cube.open(given).dataset()
        return (criterion_scores(cube), cube) if with_cube else criterion_scores(cube)
    if not isinstance(given, xr.Dataset):
        raise InputError(f"cube_or_scores: expected a cube (an xarray.Dataset, or its path) or its criterion scores, "
                         f"got {type(given).__name__}; e.g. ordercube.select_k('results/iris.zarr')")
    given = given.compute()  # a Dask-backed Dataset (xarray.open_zarr) indexes with its own values
    if "status" in given.variables:
        cube = described(given)
        return (criterion_scores(cube), cube) if with_cube else criterion_scores(cube)
    return (given, None) if with_cube else given


def _check_where(client: Any, workers: Any, options: Mapping[str, Any]) -> None:
    """At most one place to run, each of the right type; the waits positive numbers of seconds."""
    given = [name for name, value in (("client", client), ("workers", workers), ("scheduler", options.get("scheduler")),
                                      ("scheduler_file", options.get("scheduler_file"))) if value is not None]
    if len(given) > 1:
        raise InputError(f"{given[1]}: given together with {given[0]}; pass only one of client=, workers=, "
                         "scheduler=, scheduler_file=")
    check_run_limits(workers, {name: options.get(name) for name in ("connect_timeout", "wait_for_workers")},
                     option=str, example=lambda name, value: f"{name}={value}")
    if client is not None:
        _check_client(client)


def check_run_limits(workers: Any, waits: Mapping[str, Any], *, option: Callable[[str], str],
                     example: Callable[[str, object], str]) -> None:
    """``workers`` an integer from 0 to :func:`ordercube.pipeline.system.cores.max_workers`, each of ``waits`` a
    number of seconds > 0 and at most a week. A message names the option as ``option(name)`` and gives
    ``example(name, value)`` as the fix (``workers=2`` here, ``--workers 2`` for the CLI)."""
    from ordercube.pipeline.run.cluster import MAX_WAIT_SECONDS
    from ordercube.pipeline.system.cores import WORKERS_PER_CORE, max_workers

    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 0):
        raise InputError(f"{option('workers')}: expected an integer >= 0, got {workers!r}; e.g. "
                         f"{example('workers', 2)} (0: compute in this process)")
    if workers is not None and workers > max_workers():
        raise InputError(f"{option('workers')}: {workers} is more than the {max_workers()} local workers started at "
                         f"most ({WORKERS_PER_CORE} per usable core); give fewer, e.g. {example('workers', 2)}")
    for name, value in waits.items():
        if value is not None and not (isinstance(value, (int, float)) and not isinstance(value, bool)
                                      and math.isfinite(value) and value > 0):
            raise InputError(f"{option(name)}: expected a number of seconds > 0, got {value!r}; e.g. {example(name, 60)}")
        if value is not None and value > MAX_WAIT_SECONDS:
            raise InputError(f"{option(name)}: {value:g} seconds is more than the {MAX_WAIT_SECONDS:g} (a week) waited "
                             f"at most; give fewer seconds, e.g. {example(name, 600)}")


def _check_out(parsed: Config) -> Config:
    """``parsed``, its cube checked: a local one through the CLI's guard (never X.lock, nor inside another cube)."""
    from ordercube.pipeline.files.location import location
    from ordercube.pipeline.files.outputs import cube_output

    place = location(parsed.out, key="out")
    if place.is_local:
        cube_output(place.local(), "out")
    return parsed


def _check_client(client: Any) -> None:
    from distributed import Client

    if not isinstance(client, Client):
        raise InputError(f"client: expected a distributed.Client, got {type(client).__name__}; "
                         "pass distributed.Client(cluster) or distributed.Client('tcp://HOST:PORT')")
    if client.asynchronous:
        raise InputError("client: an asynchronous Client (asynchronous=True); sweep blocks until it is done: "
                         "pass a Client created with asynchronous=False")
    if client.status != "running":
        raise InputError(f"client: the Client is {client.status}, not running; pass an open Client")


@contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    """SIGTERM (a batch system's stop) stops the sweep as Ctrl-C does, as in the CLI, while it runs. Only
    the main thread may install a handler, and a handler the program installed itself is left alone."""
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGTERM) != signal.SIG_DFL:
        yield
        return
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


__all__ = ["ConfigError", "InputError", "choose_k", "open_cube", "partition", "report", "select_k", "sweep", "validate"]
