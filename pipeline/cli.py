"""The ``ordercube`` command: run, status, report, validate.

Exit codes: 0 done, 1 finished with failed cells, 2 bad input, 3 no cluster to run on (the scheduler was
lost, or no worker came for --wait-for-workers seconds), 4 the disk is full (or a file size limit was hit)
while writing the cube, 130 interrupted (Ctrl-C or SIGTERM). After 3, 4 and 130 every finished cell is in
the cube and the message gives the command that resumes.

A thin layer over the API: each command parses its arguments, calls one function of :mod:`ordercube.commands`
(the work, with these options' names in its messages) and prints what it returned
(:mod:`ordercube.pipeline.cli_print`).
"""

from __future__ import annotations

import argparse
import atexit
import math
import os
import resource
import shlex
import signal
import sys
import threading
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, NoReturn

from ordercube import commands
from ordercube.pipeline import cli_print as show
from ordercube.pipeline.errors import ConfigErrors, InputError
from ordercube.pipeline.system.interrupts import REQUESTED, on_signal

if TYPE_CHECKING:  # imported where used, like the other commands' modules
    from ordercube.pipeline.config.specs import Config

EXIT_OK, EXIT_FAILED_CELLS, EXIT_BAD_INPUT, EXIT_CLUSTER_LOST, EXIT_DISK_FULL, EXIT_INTERRUPTED = 0, 1, 2, 3, 4, 130
REPLAY_R_MIN = 20  # replay's first look when --r-min is not given


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # argparse exits 2 too, with our wording
        self.print_usage(sys.stderr)
        print(f"error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_BAD_INPUT)


class _Version(argparse.Action):
    """``--version``: the installed distribution's version, read only when asked (importlib.metadata)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: object,
                 option_string: str | None = None) -> NoReturn:
        from importlib.metadata import PackageNotFoundError, version

        try:
            installed = version("ordercube")
        except PackageNotFoundError:  # the sources on the path without an install
            installed = "(not installed)"
        print(f"ordercube {installed}")
        parser.exit()


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="ordercube", description="Model-order selection by resampling, on Dask, into a zarr cube.")
    parser.add_argument("--version", action=_Version, nargs=0, help="print the installed version and exit")
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
    run.add_argument("--break-lock", metavar="HOST:PID",
                     help="take over the lock object of an S3 cube held by the run HOST:PID on another machine, gone "
                          "without releasing it: refused while its heartbeat is younger than the lease (120 s)")
    run.add_argument("--report", nargs="?", const="", metavar="DIR",
                     help="then write the report as 'ordercube report' does, in this process (to DIR; default: "
                          "<cube>-report next to the cube): one start, and its figures' process warms up as the "
                          "cells are computed")
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
                             "clest.p_max=0.1 (--threshold C=V is short for --decide C.threshold=V), or another option "
                             "of a criterion computed from stored assignments, e.g. pac.window=0.05,0.95 (a pair)")
    report.add_argument("--replicates", type=int, metavar="N",
                        help="bootstrap replicates over resamples for the intervals of the criteria computed from stored "
                             "assignments (default 100; 0: no intervals)")
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
    if args.report is not None:  # the report asked for is written once the run resumed is done
        where += ["--report", args.report] if args.report else ["--report"]
    return shlex.join(["ordercube", "run", args.config, "--out", out, *where])


def _kept(out: str) -> str:
    return f"every finished cell is in {out}" if commands.cube_written(out) else f"nothing was written to {out}"


def _run(args: argparse.Namespace) -> int:
    if args.report is None:
        return _run_with(args)[0]
    def check_folder(config: Config) -> None:  # a report folder that cannot be written is refused before the sweep
        commands.run_report_folder(config.out, args.report or None)

    helper = commands.figure_helper()  # now, while this process has one thread: it imports matplotlib as cells run
    finished = False
    try:
        code, out = _run_with(args, check_folder)
        if code in (EXIT_OK, EXIT_FAILED_CELLS):  # a report of every cell computed, the failed ones named in it
            _report_with(argparse.Namespace(cube=out, out=args.report or None, decide=[], threshold=[], format="png",
                                            replicates=None), helper)
        finished = True
        return code
    finally:
        if helper is not None:
            helper.stop(now=not finished)


def _run_with(args: argparse.Namespace, before: Callable[[Config], None] | None = None) -> tuple[int, str]:
    """``ordercube run``'s work and what it prints: its exit code and the cube it wrote to. ``before(config)`` is
    called once the config is read, before the sweep starts."""
    from ordercube import ClusterLost, DiskFull, NoWorkers, StoreFailed

    started: list[Config] = []

    def start(config: Config) -> None:
        if before is not None:
            before(config)
        started.append(config)
        show.print_datasets(config)

    try:
        summary, counts = commands.run_command(
            args.config, out=args.out, workers=args.workers, scheduler=args.scheduler,
            scheduler_file=args.scheduler_file, connect_timeout=args.connect_timeout,
            wait_for_workers=args.wait_for_workers, dashboard_address=args.dashboard_address,
            no_dashboard=args.no_dashboard, retry_failed=args.retry_failed, progress=not args.no_progress, started=start,
            break_lock=args.break_lock)
    except (KeyboardInterrupt, ClusterLost, NoWorkers, DiskFull, StoreFailed) as error:
        if not started:  # stopped before the sweep: as any command
            raise
        return _stopped(error, started[0].out, _resume(args, started[0].out)), started[0].out
    out = started[0].out
    if summary.computed:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
        print(f"done: {summary.computed} cells in {summary.seconds:.2f} s "
              f"({summary.failed} failed, {summary.crashed} crashed, {summary.infeasible} infeasible) -> {out}; "
              f"driver peak memory {peak:.0f} MiB")
        print(show.overhead_line(summary))
        if summary.isolated_tasks:
            print(f"{summary.isolated_tasks} task(s) failed as a whole (a worker died); their cells were run one by one")
    failed = counts["failed"] + counts["crashed"]
    if failed:
        print(f"{failed} planned cells of {out} have failed or crashed their worker (reasons in its 'reason' "
              "variable); 'ordercube run --retry-failed' computes them again", file=sys.stderr)
        for reason, cells in summary.reasons:  # this run's: what to fix, without opening the cube
            print(f"  {cells} cell{'s' * (cells > 1)} of this run: {show.shortened(reason)}", file=sys.stderr)
    return (EXIT_FAILED_CELLS if failed else EXIT_OK), out


def _stopped(error: BaseException, out: str, resume: str) -> int:
    """What a stopped sweep says (what is kept, how to resume) and its exit code."""
    from ordercube import ClusterLost, NoWorkers, StoreFailed

    if isinstance(error, KeyboardInterrupt):
        print(f"interrupted: {_kept(out)}. Resume with:\n  {resume}", file=sys.stderr)
        return EXIT_INTERRUPTED
    if isinstance(error, ClusterLost):
        print(f"error: lost a connection to the Dask cluster mid-sweep ({error}); {_kept(out)}. "
              f"Check that the scheduler and workers run (start them again if not), then resume with:\n  {resume}",
              file=sys.stderr)
        return EXIT_CLUSTER_LOST
    if isinstance(error, NoWorkers):
        print(f"error: {error}; {_kept(out)}. Start workers (or give them longer with "
              f"--wait-for-workers SECONDS), then resume with:\n  {resume}", file=sys.stderr)
        return EXIT_CLUSTER_LOST
    if isinstance(error, StoreFailed):
        print(f"error: cannot write the cube {out}: {error} (after the storage client's own retries); every cell "
              f"written before is kept. Check the store (its endpoint, credentials, quota), then resume with:\n"
              f"  {resume}", file=sys.stderr)
        return EXIT_DISK_FULL
    print(f"error: cannot write the cube {out}: {error}; "
          "every cell written before is kept. Free space on its disk (or raise the file size limit: ulimit -f), "
          f"then resume with:\n  {resume}", file=sys.stderr)
    return EXIT_DISK_FULL


def _status(args: argparse.Namespace) -> int:
    checked, counts = commands.status_command(args.cube, verify=args.verify)
    if checked is not None:
        print(checked, file=sys.stderr)
    show.print_status(counts, as_json=args.json)
    return EXIT_FAILED_CELLS if counts["failed"] or counts["crashed"] else EXIT_OK


def _report(args: argparse.Namespace) -> int:
    helper = commands.figure_helper()  # now, while this process has one thread: it imports matplotlib as the cube is read
    finished = False
    try:
        code = _report_with(args, helper)
        finished = True
        return code
    finally:
        if helper is not None:
            helper.stop(now=not finished)  # an error exit is one line: the helper is not waited for


def _decide(args: argparse.Namespace) -> dict[str, dict[str, str | tuple[str, ...]]]:
    """--threshold C=V and --decide C.FIELD=V as ``decide={C: {FIELD: V}}``; a value with a comma is a pair (or a
    longer tuple: ``pac.window=0.05,0.95``), checked against the option's declared range where it is used."""
    decide: dict[str, dict[str, str | tuple[str, ...]]] = {}
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
        parts = tuple(part.strip() for part in value.split(","))
        if "," in value and not all(parts):
            raise InputError(f"--decide: {target} = {value!r} has an empty part; give the values separated by "
                             "commas, e.g. --decide pac.window=0.05,0.95")
        decide.setdefault(name, {})[field] = parts if "," in value else value
    return decide


def _report_with(args: argparse.Namespace, helper: object) -> int:
    cube, place, out, counts, table = commands.report_command(
        args.cube, args.out, _decide(args), key="--decide" if args.decide else "--threshold", fmt=args.format,
        helper=helper, replicates=args.replicates)  # type: ignore[arg-type]
    if table is None:
        show.print_nothing_computed(place, counts)
    else:
        show.print_report(cube, table, out)
    return EXIT_OK


def _partition(args: argparse.Namespace) -> int:
    result, clusters, out, clusters_path = commands.partition_command(
        args.cube, args.dataset, args.method, k=args.k, criterion=args.criterion, config=args.config, out=args.out)
    show.print_partition(result, clusters, out, clusters_path)
    return EXIT_OK


def _replay(args: argparse.Namespace) -> int:
    def announce(groups: int, estimate: float, timed: int, calibration: int) -> None:
        show.print_replay_estimate(groups, args.permutations, estimate, timed, calibration)

    table, setting, out, figure = commands.replay_command(
        args.cube, delta=args.delta, epsilon=args.epsilon, r_min=args.r_min, permutations=args.permutations,
        mode=args.mode, criteria=args.criterion, out=args.out, first_look=REPLAY_R_MIN, announce=announce)
    if table is None:
        show.print_no_replay()
    else:
        show.print_replay(table, setting, out, figure)
    return EXIT_OK


def _validate(args: argparse.Namespace) -> int:
    from ordercube.pipeline.config.plugins import describe, load_plugins

    config, plan, here, workers, tasks = commands.plan_command(args.config, args.out)
    show.print_plan(config, plan, here=here, workers=workers, tasks=tasks, plugins=describe(load_plugins()))
    return EXIT_OK


def _one_line_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                      file: object = None, line: str | None = None) -> None:
    """Our warnings reach a CLI user as one line each (the code location means nothing to them)."""
    print(f"warning: {message}", file=sys.stderr)


COMMANDS = {"run": _run, "status": _status, "report": _report, "partition": _partition, "replay": _replay,
            "validate": _validate}
# Commands that load no plug-in up front (the entry-point scan: 20-55 ms here): status only reads the cube, and
# a criterion it does not know (a plug-in's) loads the plug-ins on that lookup (ordercube.tasks.plugins).
NO_PRELOAD = {"status"}


def main(argv: list[str] | None = None) -> int:
    # A process started in the background by a non-interactive shell ignores SIGINT: take it back,
    # and treat SIGTERM the same way so that a stopped sweep always says how to resume.
    REQUESTED.clear()  # a new command (the tests call main again in one process)
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    args = _parser().parse_args(argv)
    warnings.showwarning = _one_line_warning
    try:
        if args.command not in NO_PRELOAD:
            from ordercube.pipeline.config.plugins import load_plugins

            load_plugins()
        return COMMANDS[args.command](args)
    except ConfigErrors as errors:  # every wrong key of a config, one line each
        for error in errors.errors:
            print(f"error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
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
