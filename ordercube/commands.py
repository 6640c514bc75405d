"""What the ``ordercube`` command calls: one function per command, each the work of its command and none of its
printing (:mod:`ordercube.pipeline.cli` parses the arguments and prints).

The same work as :mod:`ordercube.api` (which a Python caller uses), with the command line's option names in the
messages (``--out``, ``--workers``, ``CUBE``) and what the command prints returned. Public to the CLI, not listed in
``ordercube.__all__``. The heavy imports (xarray, zarr, distributed) happen inside the functions, so that
``ordercube --help`` stays cheap.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ordercube.pipeline.errors import InputError

if TYPE_CHECKING:
    import pandas as pd
    import xarray as xr

    from ordercube.pipeline.config.specs import Config
    from ordercube.pipeline.files.location import Location
    from ordercube.pipeline.reduce.partition import Partition
    from ordercube.pipeline.report.figures import Helper
    from ordercube.pipeline.run.sweep import Plan

Decide = Mapping[str, Mapping[str, Any]]


def command_place(where: str, key: str) -> Location:
    """The cube's place from the command line; ``memory://`` is refused, as it would vanish with this process."""
    from ordercube.pipeline.files.location import location

    place = location(where, key=key)
    if place.url and place.url.startswith("memory://"):
        raise InputError(f"{key}: {where!r} is in the memory of one Python process and vanishes when it exits; "
                         "use memory:// from Python (ordercube.open_cube, the API), or give a path or an "
                         "s3:// URL here")
    return place


def _command_output(where: str, key: str) -> None:
    """The cube ``run`` writes, checked as :func:`command_place`, and when local, by the output guard."""
    from ordercube.pipeline.files.outputs import cube_output

    place = command_place(where, key)
    if place.is_local:
        cube_output(place.local(), key)


def cube_written(out: str) -> bool:
    """Whether a stopped run left a cube at ``out``."""
    from ordercube.pipeline.cube.owner import Cube
    from ordercube.pipeline.files.location import location

    place = location(out)
    return place.local().exists() if place.is_local else Cube.exists(place)


def run_command(config: str, *, out: str | None, workers: int | None, scheduler: str | None,
                scheduler_file: str | None, connect_timeout: float | None, wait_for_workers: float | None,
                dashboard_address: str | None, no_dashboard: bool, retry_failed: bool, progress: bool,
                started: Callable[[Config], None], break_lock: str | None = None) -> tuple[Any, dict[str, int]]:
    """``ordercube run``: the config checked, ``started(config)`` called, the sweep run; returns its summary and
    the cube's cell counts. A stop raises ``KeyboardInterrupt``, :class:`ClusterLost`, :class:`NoWorkers` or
    :class:`DiskFull` (a full disk or file size limit met while growing or creating the cube) or :class:`StoreFailed`
    (another failure to write it: an object store's error after its client's retries). ``break_lock``: the
    ``HOST:PID`` of a gone run whose S3 lock object is taken over (:meth:`ordercube.pipeline.cube.owner.Cube.lock`)."""
    from ordercube.pipeline.config.study import load_config
    from ordercube.pipeline.cube.owner import Cube
    from ordercube.pipeline.run.sweep import Interrupted, run_sweep, write_stopped

    _check_run_options(workers, connect_timeout, wait_for_workers)
    dashboard = _dashboard(dashboard_address, no_dashboard, elsewhere=bool(scheduler or scheduler_file))
    parsed = load_config(config, out=out)
    _command_output(parsed.out, "--out" if out else "out")
    started(parsed)
    waits = {name: value for name, value in (("connect_timeout", connect_timeout),
                                             ("wait_for_workers", wait_for_workers)) if value is not None}
    try:
        summary = run_sweep(parsed, workers=workers, scheduler=scheduler, scheduler_file=scheduler_file,
                            retry_failed=retry_failed, show_progress=progress, dashboard_address=dashboard,
                            dashboard_asked=dashboard is not None and dashboard_address is not None,
                            **({"break_lock": break_lock} if break_lock is not None else {}), **waits)
    except Interrupted:
        raise KeyboardInterrupt from None
    except OSError as error:  # growing or creating the cube
        raise write_stopped(error) from error
    return summary, Cube.open(parsed.out).count_cells()


def _dashboard(address: str | None, off: bool, *, elsewhere: bool) -> str | None:
    """The local cluster's dashboard address (None: none); with a scheduler the option is refused, the
    scheduler's own dashboard being the user's to set."""
    from ordercube.pipeline.run.cluster import DEFAULT_DASHBOARD, check_dashboard_free, parse_dashboard_address

    if (address is not None or off) and elsewhere:
        option = "--no-dashboard" if off else "--dashboard-address"
        raise InputError(f"{option}: only the local cluster's dashboard is set here, not a running scheduler's "
                         "(its own --dashboard-address / --no-dashboard options); remove the option")
    if off:
        return None
    if address is None:
        return DEFAULT_DASHBOARD  # moves to a free port when taken
    parsed = parse_dashboard_address(address)
    check_dashboard_free(parsed, strict=True)  # an address the user gave is theirs: taken, it is an error
    return parsed


def _check_run_options(workers: int | None, connect_timeout: float | None, wait_for_workers: float | None) -> None:
    """--workers within :func:`ordercube.pipeline.system.cores.max_workers`, the waits within a week."""
    from ordercube.api import check_run_limits

    def option(name: str) -> str:
        return "--" + name.replace("_", "-")

    check_run_limits(workers, {"connect_timeout": connect_timeout, "wait_for_workers": wait_for_workers},
                     option=option, example=lambda name, value: f"{option(name)} {value}")


def status_command(cube: str, *, verify: bool) -> tuple[str | None, dict[str, int]]:
    """``ordercube status``: the checksum verification's text (with ``verify``) and the cell counts."""
    from ordercube.pipeline.cube.owner import Cube

    owner = Cube.open(command_place(cube, "CUBE"))
    checked = owner.verify() if verify else None
    return checked, owner.count_cells()


def run_report_folder(cube: str, given: str | None) -> Path:
    """The folder ``run --report`` writes the report of ``cube`` to (``given``, else beside the cube), checked
    before the sweep: ``InputError`` naming ``--report`` when it cannot be written."""
    from ordercube.pipeline.files.location import location
    from ordercube.pipeline.files.outputs import report_folder

    return report_folder(location(cube), given, key="--report")


def figure_helper() -> Helper | None:
    """A second process that draws figures, started while this one has one thread (see
    :class:`ordercube.pipeline.report.figures.Helper`); None where it cannot help."""
    from ordercube.pipeline.report.figures import Helper

    return Helper.start()


def report_command(cube: str, out: str | None, decide: Decide, *, key: str, fmt: str, helper: Helper | None,
                   replicates: int | None = None) -> tuple[xr.Dataset, Location, Path, dict[str, int], pd.DataFrame | None]:
    """``ordercube report``: the cube, its place, the report folder, its cell counts and the table written
    (None, and nothing written, when no cell is computed). ``key`` names the option ``decide`` came from."""
    from ordercube.api import _replicates, write_checked_report
    from ordercube.pipeline.cube.owner import Cube
    from ordercube.pipeline.files.outputs import report_folder

    replicates = _replicates(replicates, "--replicates")
    place = command_place(cube, "CUBE")
    loaded = Cube.open(place).load()
    folder = report_folder(place, out)
    counts, table = write_checked_report(loaded, folder, decide, decide_key=key, folder_key="--out", fmt=fmt,
                                         helper=helper, replicates=replicates)
    return loaded, place, folder, counts, table


def partition_command(cube: str, dataset: str, method: str, *, k: int | None, criterion: str | None,
                      config: str | None, out: str | None) -> tuple[Partition, pd.DataFrame, Path, Path]:
    """``ordercube partition``: the partition, its clusters' table, and the two CSVs written."""
    from ordercube.pipeline.cube.owner import Cube
    from ordercube.pipeline.files.outputs import beside_cube, partition_paths, write_csv
    from ordercube.pipeline.reduce.partition import compute_partition

    place = command_place(cube, "CUBE")
    if out:  # before anything is computed
        partition_paths(Path(out))
    loaded = Cube.open(place).load()
    result = compute_partition(loaded, dataset, method, k=k, criterion=criterion, config=config)
    labels, clusters_path = partition_paths(
        Path(out) if out else beside_cube(place, f"-partition-{result.dataset}-{result.method}-k{result.k}.csv"))
    write_csv(result.rows(), labels)
    clusters = result.clusters()
    write_csv(clusters, clusters_path)
    return result, clusters, labels, clusters_path


def replay_command(cube: str, *, delta: float, epsilon: float, r_min: int, permutations: int, mode: str,
                   criteria: list[str] | None, out: str | None, first_look: int,
                   announce: Callable[[int, float, int, int], None]) -> tuple[pd.DataFrame | None, Any, Path, Path]:
    """``ordercube replay``: the adaptive rule replayed on a stored cube. ``announce(groups, seconds, timed,
    calibration orders)`` is called before the replay computes; the table is None when no group qualifies."""
    import json

    from ordercube.pipeline.cube.attrs import BASELINE
    from ordercube.pipeline.cube.owner import Cube
    from ordercube.pipeline.files.outputs import beside_cube, replay_paths, write_csv
    from ordercube.pipeline.reduce.select import criterion_scores
    from ordercube.pipeline.report.replay import (
        CALIBRATION_PERMUTATIONS, MAX_PERMUTATIONS, Setting, estimate_seconds, plot_replay, reduced_groups, replay,
        replay_groups,
    )

    for key, value, ok, fix in (("--delta", delta, 0 < delta < 1, "e.g. --delta 0.05"),
                                ("--epsilon", epsilon, epsilon >= 0 and math.isfinite(epsilon), "e.g. 0.005"),
                                ("--r-min", r_min, r_min is None or r_min >= 2, "at least 2 trials at the first look"),
                                ("--permutations", permutations, 0 <= permutations <= MAX_PERMUTATIONS,
                                 f"from 0 to {MAX_PERMUTATIONS:,} random orders per group, e.g. 200")):
        if not ok:
            raise InputError(f"{key}: {value} is out of range; {fix}")
    place = command_place(cube, "CUBE")
    table_path, figure = replay_paths(Path(out) if out else beside_cube(place, "-replay.csv"))
    loaded = Cube.open(place).load()
    scores = criterion_scores(loaded)
    _check_replay(scores, criteria, mode, r_min, loaded)
    setting = Setting(delta=delta, epsilon=epsilon, r_min=r_min or first_look, permutations=permutations, mode=mode)
    seed = int(json.loads(loaded.attrs["ordercube_config"])["seed"])
    groups = replay_groups(scores, setting, criteria=criteria, seconds=loaded["seconds"],
                           baseline=loaded[BASELINE] if BASELINE in loaded else None)
    groups += reduced_groups(loaded, setting, criteria=criteria)
    if not groups:
        return None, setting, table_path, figure
    estimate, timed = estimate_seconds(groups, setting, seed)
    announce(len(groups), estimate, timed, CALIBRATION_PERMUTATIONS)
    table = replay(scores, setting, seed=seed, groups=groups)
    write_csv(table, table_path)
    plot_replay(table, figure)
    return table, setting, table_path, figure


def _check_replay(scores: xr.Dataset, criteria: list[str] | None, mode: str, r_min: int | None,
                  cube: xr.Dataset | None = None) -> None:
    """``--criterion`` and ``--r-min`` against the cube: criteria in it with a sequential rule (those reduced
    from its stored clusterings too), a first look within its trials."""
    from ordercube.pipeline.report.replay import reduced_sequential, sequential_criteria

    reduced = reduced_sequential(cube, mode) if cube is not None else ([], [])
    names = sorted([*map(str, scores.data_vars), *reduced[0]])
    unknown = sorted(set(criteria or []) - set(names))
    if unknown:
        raise InputError(f"--criterion: {unknown[0]!r} is not in the cube; it has {names}")
    racing = sequential_criteria(scores, mode) + reduced[1]  # type: ignore[arg-type]
    without = [name for name in criteria or [] if name not in racing]
    if without:
        raise InputError(f"--criterion: {without[0]!r} has no sequential rule the adaptive rule can replay (mode "
                         f"{mode}); those of this cube with one: {racing or 'none'}; give one of them, or leave "
                         "out --criterion")
    trials = int(scores.sizes["trial"])
    if r_min is not None and r_min > trials:
        raise InputError(f"--r-min: {r_min} is more than the {trials} trials of the cube; give from 2 to {trials}")


def plan_command(config: str, out: str | None) -> tuple[Config, Plan, bool, int, int]:
    """``ordercube validate``: the config, its plan, whether it would run in this process, on how many
    workers (threads here), in how many tasks."""
    from ordercube.pipeline.config.study import load_config
    from ordercube.pipeline.run.sweep import preview_plan, where_to_compute
    from ordercube.pipeline.system.cores import usable_cores

    parsed = load_config(config, out=out)
    _command_output(parsed.out, "--out" if out else "out")
    plan = preview_plan(parsed)
    placement = where_to_compute(plan, workers=None, elsewhere=False, work=plan.estimate().remaining)
    here = placement.here
    workers = placement.threads if here else usable_cores()
    return parsed, plan, here, workers, plan.task_count(workers=workers)

