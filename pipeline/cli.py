"""The ``ordercube`` command: run, status, report, validate.

Exit codes: 0 done, 1 finished with failed cells, 2 bad input, 3 no cluster to run on (the scheduler was
lost, or no worker came for --wait-for-workers seconds), 4 the disk is full (or a file size limit was hit)
while writing the cube, 130 interrupted (Ctrl-C or SIGTERM). After 3, 4 and 130 every finished cell is in
the cube and the message gives the command that resumes.
"""

from __future__ import annotations

import argparse
import atexit
import json
import math
import os
import resource
import shlex
import signal
import sys
import threading
import warnings
from pathlib import Path
from collections.abc import Callable
from typing import TYPE_CHECKING, NoReturn

from ordercube.pipeline.errors import InputError
from ordercube.pipeline.system.interrupts import REQUESTED, on_signal
from ordercube.pipeline.files.outputs import beside_cube, partition_paths, replay_paths, report_folder, write_csv
from ordercube.pipeline.config.plugins import describe, load_plugins

if TYPE_CHECKING:  # imported where used, like the other commands' modules
    from ordercube.pipeline.config.specs import Config
    from ordercube.pipeline.report.figures import Helper
    from ordercube.pipeline.files.location import Location

EXIT_OK, EXIT_FAILED_CELLS, EXIT_BAD_INPUT, EXIT_CLUSTER_LOST, EXIT_DISK_FULL, EXIT_INTERRUPTED = 0, 1, 2, 3, 4, 130
REPLAY_R_MIN = 20  # replay's first look when --r-min is not given
MISSING_SHOWN = 20  # rows of the report's table of cells without a value printed (all in missing_cells.csv)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # argparse exits 2 too, with our wording
        self.print_usage(sys.stderr)
        print(f"error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_BAD_INPUT)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="ordercube", description="Model-order selection by resampling, on Dask, into a zarr cube.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    run = commands.add_parser("run", help="compute the cells of CONFIG that its cube lacks")
    run.add_argument("config")
    run.add_argument("--out", help="cube path (default: the config's 'out', else results/<name>.zarr)")
    where = run.add_mutually_exclusive_group()
    where.add_argument("--workers", type=int, help="LocalCluster worker processes (default: one per core, or none for "
                                                     "a small sweep: see execution.in_process_seconds); 0 computes in "
                                                     "this process")
    where.add_argument("--scheduler", help="address of a running Dask scheduler, e.g. tcp://127.0.0.1:8786")
    where.add_argument("--scheduler-file", help="scheduler file written by 'dask scheduler --scheduler-file'")
    run.add_argument("--connect-timeout", type=_seconds("--connect-timeout"), metavar="SECONDS",
                     help="give up connecting to --scheduler/--scheduler-file after this long (default 10)")
    run.add_argument("--wait-for-workers", type=_seconds("--wait-for-workers"), metavar="SECONDS",
                     help="give up (exit 3) after this long without a Dask worker to run on (default 300)")
    dashboard = run.add_mutually_exclusive_group()
    dashboard.add_argument("--dashboard-address", metavar="HOST:PORT",
                           help="where the local cluster's Dask dashboard listens (default 127.0.0.1:8787, or a free "
                                "port when that is taken; a port given here must be free); 'none' for no dashboard")
    dashboard.add_argument("--no-dashboard", action="store_true", help="no Dask dashboard (as --dashboard-address none)")
    run.add_argument("--retry-failed", action="store_true", help="compute failed cells again")
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    status = commands.add_parser("status", help="count the cells of a cube by status")
    status.add_argument("cube")
    status.add_argument("--json", action="store_true", help="print a JSON object")
    status.add_argument("--verify", action="store_true",
                        help="read back every chunk of the cube and check its checksum (exit 2 naming damaged chunks)")
    report = commands.add_parser("report", help="print the k̂ table, write selection.csv and figures")
    report.add_argument("cube")
    report.add_argument("--out", help="report folder (default: <cube>-report next to the cube)")
    report.add_argument("--threshold", action="append", default=[], metavar="CRITERION=VALUE",
                        help="re-decide a threshold criterion from the stored values, e.g. prediction_strength=0.8")
    report.add_argument("--decide", action="append", default=[], metavar="CRITERION.FIELD=VALUE",
                        help="re-decide with another rule setting, e.g. gap.method=globalmax, gap.se_factor=2, "
                             "clest.p_max=0.1 (--threshold C=V is short for --decide C.threshold=V)")
    report.add_argument("--format", choices=("png", "svg", "pdf"), default="png",
                        help="the figures' format (svg and pdf: vector, for a paper; default png)")
    part = commands.add_parser("partition", help="fit a method on a whole dataset at k̂: its labels, their agreement "
                               "with known classes and each cluster's stability over the cube's resamples")
    part.add_argument("cube")
    part.add_argument("--dataset", required=True)
    part.add_argument("--method", required=True)
    part.add_argument("--k", type=int, help="the number of clusters (default: k̂ of --criterion at the cube's largest n)")
    part.add_argument("--criterion", help="whose k̂ (default: the first of the method's criteria that chose one)")
    part.add_argument("--config", help="the config the cube was computed from (default: the cube's own, its file "
                                       "paths read from the current folder)")
    part.add_argument("--out", help="the labels' CSV (default: <cube>-partition-DATASET-METHOD-kK.csv beside the cube); "
                                    "the clusters' table goes beside it as ...-clusters.csv")
    again = commands.add_parser("replay", help="replay the adaptive rule (PSE-t) on a stored cube: k̂ and cells against "
                                "the fixed budget, and its calibration on null races; nothing is computed")
    again.add_argument("cube")
    again.add_argument("--delta", type=float, default=0.05, help="error probability, in (0, 1) (default 0.05)")
    again.add_argument("--epsilon", type=float, default=0.0, help="indifference zone in criterion units, >= 0 (default 0)")
    again.add_argument("--r-min", type=int, help=f"the first look (default {REPLAY_R_MIN}); then doubling up to the trials")
    again.add_argument("--permutations", type=int, default=200, help="random trial orders replayed per group")
    again.add_argument("--mode", choices=("t", "guarded", "strict", "hoeffding"), default="t",
                       help="t intervals (default); guarded: t intervals once Cochran's rule holds (r > 25 skewness^2); "
                            "strict: empirical Bernstein, for criteria in [0, 1]; hoeffding: Hoeffding races (ablation)")
    again.add_argument("--criterion", action="append", help="only these criteria (default: all with a sequential rule)")
    again.add_argument("--out", help="the table's CSV (default: <cube>-replay.csv beside the cube)")
    validate = commands.add_parser("validate", help="check CONFIG and print the plan, without running")
    validate.add_argument("config")
    validate.add_argument("--out", help="cube path to plan against")
    return parser


def _seconds(option: str) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and value > 0):
            raise argparse.ArgumentTypeError(f"expected a number of seconds > 0, got {text!r}; e.g. {option} 60")
        return value
    return parse


def _resume(args: argparse.Namespace, out: str) -> str:
    """The command that resumes this run (with the options that say where and how long to wait)."""
    where = (["--scheduler", args.scheduler] if args.scheduler else
             ["--scheduler-file", args.scheduler_file] if args.scheduler_file else
             ["--workers", str(args.workers)] if args.workers is not None else [])
    for option, value in (("--connect-timeout", args.connect_timeout), ("--wait-for-workers", args.wait_for_workers)):
        if value is not None:
            where += [option, f"{value:g}"]
    if args.no_dashboard or args.dashboard_address is not None:
        where += ["--no-dashboard"] if args.no_dashboard else ["--dashboard-address", args.dashboard_address]
    return shlex.join(["ordercube", "run", args.config, "--out", out, *where])


def _kept(out: str) -> str:
    from ordercube.pipeline.cube.owner import Cube
    from ordercube.pipeline.files.location import location

    place = location(out)
    written = place.local().exists() if place.is_local else Cube.exists(place)
    return f"every finished cell is in {out}" if written else f"nothing was written to {out}"


def _cube_location(where: str, key: str) -> Location:
    """The cube's place from the command line; ``memory://`` is refused, as it would vanish with this process."""
    from ordercube.pipeline.files.location import location

    place = location(where, key=key)
    if place.url and place.url.startswith("memory://"):
        raise InputError(f"{key}: {where!r} is in the memory of one Python process and vanishes when it exits; "
                         "use memory:// from Python (ordercube.open_cube, the API), or give a path or an "
                         "s3:// URL here")
    return place


def _cube_output(where: str, key: str) -> None:
    """The cube ``run`` writes, checked as :func:`_cube_location`, and when local, by the output guard."""
    from ordercube.pipeline.files.outputs import cube_output

    place = _cube_location(where, key)
    if place.is_local:
        cube_output(place.local(), key)


def _dashboard(args: argparse.Namespace) -> str | None:
    """The local cluster's dashboard address (None: none); with --scheduler the option is refused, the
    scheduler's own dashboard being the user's to set."""
    from ordercube.pipeline.run.cluster import DEFAULT_DASHBOARD, check_dashboard_free, parse_dashboard_address

    given = args.dashboard_address is not None or args.no_dashboard
    if given and (args.scheduler or args.scheduler_file):
        option = "--no-dashboard" if args.no_dashboard else "--dashboard-address"
        raise InputError(f"{option}: only the local cluster's dashboard is set here, not a running scheduler's "
                         "(its own --dashboard-address / --no-dashboard options); remove the option")
    if args.no_dashboard:
        return None
    if args.dashboard_address is None:
        return DEFAULT_DASHBOARD  # moves to a free port when taken
    address = parse_dashboard_address(args.dashboard_address)
    check_dashboard_free(address, strict=True)  # an address the user gave is theirs: taken, it is an error
    return address


def _check_run_options(args: argparse.Namespace) -> None:
    """--workers within :func:`ordercube.pipeline.system.cores.max_workers`, the waits within a week."""
    from ordercube.pipeline.run.cluster import MAX_WAIT_SECONDS
    from ordercube.pipeline.system.cores import WORKERS_PER_CORE, max_workers

    if args.workers is not None and args.workers < 0:
        raise InputError(f"--workers: expected an integer >= 0, got {args.workers}; e.g. --workers 2 (0: compute in "
                         "this process)")
    if args.workers is not None and args.workers > max_workers():
        raise InputError(f"--workers: {args.workers} is more than the {max_workers()} local workers started at most "
                         f"({WORKERS_PER_CORE} per usable core); give fewer, e.g. --workers 2")
    for option, value in (("--connect-timeout", args.connect_timeout), ("--wait-for-workers", args.wait_for_workers)):
        if value is not None and value > MAX_WAIT_SECONDS:
            raise InputError(f"{option}: {value:g} seconds is more than the {MAX_WAIT_SECONDS:g} (a week) waited at "
                             f"most; give fewer seconds, e.g. {option} 600")


def _run(args: argparse.Namespace) -> int:
    from ordercube.pipeline.config.study import load_config
    from ordercube.pipeline.cube.owner import Cube
    from ordercube.pipeline.run.sweep import DISK_FULL, ClusterLost, DiskFull, Interrupted, NoWorkers, run_sweep

    _check_run_options(args)
    dashboard = _dashboard(args)
    config = load_config(args.config, out=args.out)
    _cube_output(config.out, "--out" if args.out else "out")
    _print_datasets(config)
    waits = {name: value for name, value in (("connect_timeout", args.connect_timeout),
                                             ("wait_for_workers", args.wait_for_workers)) if value is not None}
    resume = _resume(args, config.out)
    try:
        summary = run_sweep(config, workers=args.workers, scheduler=args.scheduler, scheduler_file=args.scheduler_file,
                            retry_failed=args.retry_failed, show_progress=not args.no_progress,
                            dashboard_address=dashboard, dashboard_asked=dashboard is not None and
                            args.dashboard_address is not None, **waits)
    except (Interrupted, KeyboardInterrupt):
        print(f"interrupted: {_kept(config.out)}. Resume with:\n  {resume}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except ClusterLost as error:
        print(f"error: lost the Dask scheduler mid-sweep ({error}); {_kept(config.out)}. "
              f"Start the scheduler and workers again, then resume with:\n  {resume}", file=sys.stderr)
        return EXIT_CLUSTER_LOST
    except NoWorkers as error:
        print(f"error: {error}; {_kept(config.out)}. Start workers (or give them longer with "
              f"--wait-for-workers SECONDS), then resume with:\n  {resume}", file=sys.stderr)
        return EXIT_CLUSTER_LOST
    except (DiskFull, OSError) as error:  # an OSError out of the sweep: growing or creating the cube
        if isinstance(error, OSError) and error.errno not in DISK_FULL:
            raise
        print(f"error: cannot write the cube {config.out}: {DiskFull(error) if isinstance(error, OSError) else error}; "
              "every cell written before is kept. Free space on its disk (or raise the file size limit: ulimit -f), "
              f"then resume with:\n  {resume}", file=sys.stderr)
        return EXIT_DISK_FULL
    if summary.computed:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
        print(f"done: {summary.computed} cells in {summary.seconds:.2f} s "
              f"({summary.failed} failed, {summary.crashed} crashed, {summary.infeasible} infeasible) -> {config.out}; "
              f"driver peak memory {peak:.0f} MiB")
        if summary.isolated_tasks:
            print(f"{summary.isolated_tasks} task(s) failed as a whole (a worker died); their cells were run one by one")
    counts = Cube.open(config.out).count_cells()
    failed = counts["failed"] + counts["crashed"]
    if failed:
        print(f"{failed} planned cells of {config.out} have failed or crashed their worker (reasons in its 'reason' "
              "variable); 'ordercube run --retry-failed' computes them again", file=sys.stderr)
    return EXIT_FAILED_CELLS if failed else EXIT_OK


def _status(args: argparse.Namespace) -> int:
    from ordercube.pipeline.cube.owner import Cube

    cube = Cube.open(_cube_location(args.cube, "CUBE"))
    if args.verify:
        print(cube.verify(), file=sys.stderr)
    counts = cube.count_cells()
    if args.json:
        print(json.dumps(counts))
    else:
        print("  ".join(f"{key}: {value}" for key, value in counts.items()))
    return EXIT_FAILED_CELLS if counts["failed"] or counts["crashed"] else EXIT_OK


def _report(args: argparse.Namespace) -> int:
    from ordercube.pipeline.report.figures import Helper

    helper = Helper.start()  # now, while this process has one thread: it imports matplotlib as the cube is read
    finished = False
    try:
        code = _report_with(args, helper)
        finished = True
        return code
    finally:
        if helper is not None:
            helper.stop(now=not finished)  # an error exit is one line: the helper is not waited for


def _report_with(args: argparse.Namespace, helper: Helper | None) -> int:
    from ordercube.pipeline.files.outputs import RECORD, claim_folder
    from ordercube.pipeline.reduce.select import criterion_scores, decisions
    from ordercube.pipeline.report.write import MISSING_MEANINGS, flag_notes, printable, status_counts, write_report
    from ordercube.pipeline.cube.owner import Cube
    from ordercube.pipeline.report.published import PUBLISHED_CSV, comparison_matrix, published_of

    decide: dict[str, dict[str, str]] = {}
    for item in args.threshold:
        name, equals, value = item.partition("=")
        if not (name and equals and value):
            raise InputError(f"--threshold: expected CRITERION=NUMBER, got {item!r}; "
                             "e.g. --threshold prediction_strength=0.8")
        decide.setdefault(name, {})["threshold"] = value
    for item in args.decide:
        target, equals, value = item.partition("=")
        name, dot, field = target.partition(".")
        if not (name and dot and field and equals and value):
            raise InputError(f"--decide: expected CRITERION.FIELD=VALUE, got {item!r}; e.g. --decide gap.method=globalmax")
        decide.setdefault(name, {})[field] = value
    cube_path = _cube_location(args.cube, "CUBE")
    cube = Cube.open(cube_path).load()
    out = report_folder(cube_path, args.out)
    try:
        decisions(criterion_scores(cube), decide)
    except ValueError as error:
        raise InputError(f"{'--decide' if args.decide else '--threshold'}: {error}") from None
    counts = status_counts(cube)
    if counts["ok"] == 0:  # nothing to tabulate or draw: say so and leave the disk as it is
        others = ", ".join(f"{key}: {value}" for key, value in counts.items() if key not in ("total", "ok") and value)
        print(f"no computed cells yet in {cube_path} (0 of {counts['total']} planned cells ok; {others}); "
              "nothing to report, no report written")
        return EXIT_OK
    claim_folder(out, RECORD)
    table = write_report(cube, out, decide, fmt=args.format, helper=helper)
    if table.empty:  # e.g. only a diagnostic (agreement) was computed
        print("no k̂ to show: no model-order criterion has values in this cube (figures of the diagnostics only)")
    else:
        print(printable(table).to_string(index=False))
        for line in flag_notes(table):
            print(f"  {line}")
    for criterion in table.attrs.get("without_values", []):
        print(f"{criterion}: no value anywhere in this cube (not computed yet, every cell of it failed, or its value "
              "is undefined on these data in every cell marked ok): no row, no figure")
    missing = table.attrs.get("missing_cells")
    if missing is not None and not missing.empty:
        print(f"\ncells without a value, left out of every mean and count ({int(missing['cells'].sum())} cells; "
              "missing_cells.csv):")
        shown = missing.head(MISSING_SHOWN)
        print(shown.to_string(index=False))
        if len(missing) > MISSING_SHOWN:
            print(f"... {len(missing) - MISSING_SHOWN} more rows in missing_cells.csv")
        for status in dict.fromkeys(missing["status"]):
            print(f"  {status}: {MISSING_MEANINGS[status]}")
    adaptive = table.attrs.get("adaptive")
    if adaptive is not None and not adaptive.empty:
        groups = adaptive.drop_duplicates(["dataset", "n", "method"])
        print(f"\nadaptive resampling: {int(groups['cells'].sum())} of {int(groups['budget'].sum())} cells of the fixed "
              "budget (adaptive.csv); per-trial figures use the trials in which every k was computed")
        print(adaptive.to_string(index=False, formatters={"share": "{:.0%}".format}))
    published = published_of(cube)
    if published and not table.empty:
        print(f"\nk̂ by criterion: this cube / published (! where they differ; {PUBLISHED_CSV})")
        print(comparison_matrix(table, published).to_string())
    for line in table.attrs.get("published_hidden", []):
        print(line)
    for section in table.attrs.get("sections", []):  # what the report's sections print
        if section.text:
            print(f"\n{section.title}")
            print(section.text)
    for name, reason in table.attrs.get("figures_failed", []):
        print(f"figure {name} could not be drawn ({reason}); the rest of the report is written", file=sys.stderr)
    drawn, kept = table.attrs["figures"]
    shared = table.attrs.get("figures_by_helper", 0)
    print(f"report written to {out} ({len(drawn)} figures drawn" + (f", {shared} of them by a second process" if shared else "")
          + (f", {len(kept)} unchanged since the last report there)" if kept else ")"))
    return EXIT_OK


def _partition(args: argparse.Namespace) -> int:
    from ordercube.pipeline.cube.owner import Cube
    from ordercube.pipeline.reduce.partition import compute_partition

    place = _cube_location(args.cube, "CUBE")
    if args.out:  # before anything is computed
        partition_paths(Path(args.out))
    cube = Cube.open(place).load()
    result = compute_partition(cube, args.dataset, args.method, k=args.k, criterion=args.criterion, config=args.config)
    out, clusters_path = partition_paths(
        Path(args.out) if args.out else beside_cube(place, f"-partition-{result.dataset}-{result.method}-k{result.k}.csv"))
    write_csv(result.rows(), out)
    clusters = result.clusters()
    write_csv(clusters, clusters_path)
    print(f"data {result.dataset}: {result.read}")
    print(f"{result.method} at k = {result.k} ({result.chosen_by}), fitted on {result.labels.size} rows"
          + (f"; {clusters.shape[0]} non-empty clusters" if clusters.shape[0] != result.k else ""))
    if result.truth is not None:
        print(f"agreement with the known classes: {result.agreement:.3f} matched (Hungarian), adjusted Rand "
              f"{result.adjusted_rand:.3f}")
    print(f"per-cluster stability over {result.jaccard.shape[1]} halves of the cube's resamples (Hennig's clusterwise "
          "Jaccard: < 0.5 dissolves, >= 0.75 stable, >= 0.85 highly stable):")
    print(clusters.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    print(f"labels written to {out}; clusters to {clusters_path}")
    return EXIT_OK


def _duration(seconds: float) -> str:
    """``seconds`` in words a person plans by: 4.2 s, 3.5 min, 2.1 h."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    return f"{seconds / 60:.1f} min" if seconds < 3600 else f"{seconds / 3600:.1f} h"


def _replay(args: argparse.Namespace) -> int:
    import json

    from ordercube.pipeline.cube.owner import Cube
    from ordercube.pipeline.cube.attrs import BASELINE
    from ordercube.pipeline.reduce.select import criterion_scores
    from ordercube.pipeline.report.replay import (
        CALIBRATION_PERMUTATIONS, MAX_PERMUTATIONS, Setting, estimate_seconds, plot_replay, replay, replay_groups,
    )

    for key, value, ok, fix in (("--delta", args.delta, 0 < args.delta < 1, "e.g. --delta 0.05"),
                                ("--epsilon", args.epsilon, args.epsilon >= 0 and math.isfinite(args.epsilon), "e.g. 0.005"),
                                ("--r-min", args.r_min, args.r_min is None or args.r_min >= 2,
                                 "at least 2 trials at the first look"),
                                ("--permutations", args.permutations, 0 <= args.permutations <= MAX_PERMUTATIONS,
                                 f"from 0 to {MAX_PERMUTATIONS:,} random orders per group, e.g. 200")):
        if not ok:
            raise InputError(f"{key}: {value} is out of range; {fix}")
    place = _cube_location(args.cube, "CUBE")
    out, figure = replay_paths(Path(args.out) if args.out else beside_cube(place, "-replay.csv"))
    cube = Cube.open(place).load()
    scores = criterion_scores(cube)
    _check_replay(args, scores)
    setting = Setting(delta=args.delta, epsilon=args.epsilon, r_min=args.r_min or REPLAY_R_MIN, permutations=args.permutations,
                      mode=args.mode)
    seed = int(json.loads(cube.attrs["ordercube_config"])["seed"])
    groups = replay_groups(scores, setting, criteria=args.criterion, seconds=cube["seconds"],
                           baseline=cube[BASELINE] if BASELINE in cube else None)
    if not groups:
        print("no group to replay: the adaptive rule covers criteria decided by the smallest mean (lange, pairwise, "
              "transfer costs, bic, aic) and prediction_strength (mode strict: those with values in [0, 1]), with two "
              "complete trials at least")
        return EXIT_OK
    estimate, timed = estimate_seconds(groups, setting, seed)
    print(f"replaying {len(groups)} groups x {args.permutations + 1:,} trial orders: about {_duration(estimate)} of "
          f"computing, longer on a busy machine (from {timed} group(s) timed at "
          f"{min(args.permutations, CALIBRATION_PERMUTATIONS) + 1} orders)", flush=True)
    table = replay(scores, setting, seed=seed, groups=groups)
    write_csv(table, out)
    plot_replay(table, figure)
    shown = table[["dataset", "n", "method", "criterion", "trials", "fixed_k_hat", "reference", "agreement", "wrong",
                   "wrong_upper", "cells_median", "compute_mean", "decided", "settled", "unsettled", "in_play",
                   "null_false_rate", "null_false_upper"]]
    rule = {"t": "PSE-t", "guarded": "PSE-t guarded by Cochran's rule", "strict": "PSE-EB (strict)",
            "hoeffding": "Hoeffding races"}[args.mode]
    print(f"{rule} replayed in index order and {args.permutations} random "
          f"orders per group (delta {args.delta:g}, "
          f"epsilon {args.epsilon:g}, looks from {setting.r_min} doubling); agreement: share of replays ending on the "
          "fixed budget's k̂; reference: the k's the full budget cannot rule out at 99.9% (several: a near-tie); wrong: "
          "replays that stopped decided or settled on a k outside it, with its 95% Clopper-Pearson upper bound; "
          "cells, compute: used / fixed budget; null races: an arm against a permuted copy of itself "
          "(decided = false), with the 95% Clopper-Pearson upper bound")
    print(shown.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    print(f"written to {out}; accuracy against cells, fixed budgets and the rule: {figure}")
    return EXIT_OK


def _check_replay(args: argparse.Namespace, scores: object) -> None:
    """``--criterion`` and ``--r-min`` against the cube: criteria in it with a sequential rule, a first look
    within its trials."""
    from ordercube.pipeline.report.replay import sequential_criteria

    names = sorted(map(str, scores.data_vars))  # type: ignore[attr-defined]
    unknown = sorted(set(args.criterion or []) - set(names))
    if unknown:
        raise InputError(f"--criterion: {unknown[0]!r} is not in the cube; it has {names}")
    racing = sequential_criteria(scores, args.mode)  # type: ignore[arg-type]
    without = [name for name in args.criterion or [] if name not in racing]
    if without:
        raise InputError(f"--criterion: {without[0]!r} has no sequential rule the adaptive rule can replay (mode "
                         f"{args.mode}); those of this cube with one: {racing or 'none'}; give one of them, or leave "
                         "out --criterion")
    trials = int(scores.sizes["trial"])  # type: ignore[attr-defined]
    if args.r_min is not None and args.r_min > trials:
        raise InputError(f"--r-min: {args.r_min} is more than the {trials} trials of the cube; give from 2 to {trials}")


def _print_datasets(config: Config) -> None:
    """One line per dataset saying what was read (rows x features, header, row names, labels, true k)."""
    for dataset in config.datasets:
        print(f"data {dataset.name}: {dataset.read}")


def _validate(args: argparse.Namespace) -> int:
    from ordercube.pipeline.config.study import data_digest, load_config
    from ordercube.pipeline.system.cores import usable_cores
    from ordercube.pipeline.run.sweep import preview_plan, where_to_compute

    config = load_config(args.config, out=args.out)
    _cube_output(config.out, "--out" if args.out else "out")
    plan = preview_plan(config)
    placement = where_to_compute(plan, workers=None, elsewhere=False)
    here = placement.here
    workers = placement.threads if here else usable_cores()
    place = f"in this process on {workers} thread(s)" if here else f"on {workers} local workers"
    shape = ", ".join(f"{dim}: {size}" for dim, size in zip(plan.coords.as_dict(), plan.coords.shape))
    print(f"config {config.name!r} is valid (fingerprint {config.fingerprint})")
    print(f"  {describe(load_plugins())}")
    print(f"  cube: {config.out}  ({shape}); chunks {plan.chunk_shape}")
    print(f"  cells: {plan.planned_cells} planned, {plan.cells_to_compute} to compute in "
          f"{len(plan.tasks(workers=workers))} tasks {place} (estimated work {'under' if here else 'over'} "
          f"execution.in_process_seconds = {config.execution.in_process_seconds:g}); criteria: {', '.join(config.criteria)}")
    _print_datasets(config)
    for dataset in config.datasets:
        print(f"  dataset {dataset.name}: {dataset.kind}, n = {list(dataset.n)}, true k = {dataset.true_k}, "
              f"data digest {data_digest(dataset.identity)}")
    from ordercube.tasks.algorithms import get_algorithm  # loaded with the config already

    for method in config.methods:
        model = get_algorithm(method.algorithm)
        how = model.summary(method.predictor)
        print(f"  method {method.name}: {method.algorithm} {how} -> {', '.join(method.criteria)}, "
              f"method digest {data_digest(method.identity)}")
        if method.name in config.adaptive:
            rule = config.adaptive[method.name]
            print(f"    adaptive: stops once k̂ is settled, looks {list(rule.looks)}, delta {rule.delta:g}, epsilon "
                  f"{rule.epsilon:g}, mode {rule.mode} (its cells above are the budget: at most this many are computed)")
    return EXIT_OK


def _one_line_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                      file: object = None, line: str | None = None) -> None:
    """Our warnings reach a CLI user as one line each (the code location means nothing to them)."""
    print(f"warning: {message}", file=sys.stderr)


COMMANDS = {"run": _run, "status": _status, "report": _report, "partition": _partition, "replay": _replay,
            "validate": _validate}


def main(argv: list[str] | None = None) -> int:
    # A process started in the background by a non-interactive shell ignores SIGINT: take it back,
    # and treat SIGTERM the same way so that a stopped sweep always says how to resume.
    REQUESTED.clear()  # a new command (the tests call main again in one process)
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    args = _parser().parse_args(argv)
    warnings.showwarning = _one_line_warning
    try:
        load_plugins()
        return COMMANDS[args.command](args)
    except InputError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # the output went to a pager or `head` that closed early: not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK


def entry_point() -> int:
    """The installed ``ordercube`` command: :func:`main`, then an exit that skips the interpreter's teardown.

    Freeing every module and object at exit took 0.15-0.2 s after a sweep (numba's dispatchers, zarr, the
    arrays of the run), 5% of a sweep of 180 k-means cells at n = 10,000. Once main has returned, the atexit
    handlers (logging's flush, distributed's, zarr's loop) run and the output is flushed as at a normal exit,
    then the process ends; a thread that is not a daemon still alive (none of ours) gets the normal exit.
    """
    code = main()
    if any(thread.is_alive() and not thread.daemon for thread in threading.enumerate()
           if thread is not threading.main_thread()):
        return code
    atexit._run_exitfuncs()  # noqa: SLF001 (what a normal exit runs first, before the teardown skipped here)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more can reach it
            pass
    os._exit(code)


if __name__ == "__main__":
    # `python -m ordercube.pipeline.cli` works, but after a Ctrl-C can end by SIGINT (returncode -2) instead of with 130:
    # CPython's runpy path kills the process if a KeyboardInterrupt ever passed through exec() of a string (an
    # import scipy does so), even a caught one. The installed `ordercube` command always exits with main()'s code.
    sys.exit(main())
