"""A sweep at 10^5, 10^6 and 10^7 cells: wall, the driver's peak memory, ``status``, a resume's scan, the report.

For each size (the config's resamples scaled, every other axis kept) a fresh cube is computed by the installed
``ordercube run`` (a subprocess with a LocalCluster of ``--workers`` workers), optionally interrupted once by
SIGINT after ``--interrupt-after`` seconds and resumed by the same command; then:

- run: wall of each ``ordercube run`` (with start-up), its "done: ... in X s", the driver's peak RSS as the CLI
  prints it (``resource.getrusage(RUSAGE_SELF).ru_maxrss`` in the driver; the workers are not counted);
- status: ``ordercube status CUBE``, wall and CPU (user + sys of the process);
- resume scan: what a resumed run does before its first task, in this process: open the cube for the config,
  read its status with its checksums and the manifest checked (``status_for_planning``), plan the cells left
  and count the tasks (``make_plan``, ``Plan.task_count``), wall and CPU;
- report: ``ordercube report CUBE``, wall, CPU and peak RSS (``os.wait4`` of the process).

Then the driver's memory as a rule: MiB = a + b x cells, fitted on the sizes run (b in bytes per cell), and the
same per task (the tasks each size is cut into, planned as a new cube's run plans them): what the driver keeps per
task run (the LocalCluster's scheduler and client live in it). ``--trials-per-chunk 1 --task-seconds 0.0003``
cuts cells into many tiny tasks, to measure that figure on a few thousand tasks (as in the last command below).

    python benchmarks/bench_ten_million.py benchmarks/ten_million_cells.yaml            # 10^5, 10^6, 10^7 cells
    python benchmarks/bench_ten_million.py benchmarks/ten_million_cells.yaml --quick    # 10^4 and 10^5 cells
    python benchmarks/bench_ten_million.py CONFIG --resamples 250 2500 --interrupt-after 60 --keep DIR
    python benchmarks/bench_ten_million.py benchmarks/ten_million_cells.yaml --resamples 20 60 120 \
        --trials-per-chunk 1 --task-seconds 0.0003      # 1,000, 3,000 and 6,000 tasks of 8 cells: memory per task
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

ORDERCUBE = ([str(Path(sys.executable).with_name("ordercube"))] if Path(sys.executable).with_name("ordercube").exists()
             else [sys.executable, "-m", "ordercube.pipeline.cli"])


def timed(command: list[str], *, interrupt_after: float | None = None) -> dict:
    """Run ``command``; its wall, CPU (user + sys, with the children it waited for), peak RSS and output. With
    ``interrupt_after``: SIGINT after that many seconds (as Ctrl-C does)."""
    started = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, text=True)
        if interrupt_after is not None:
            try:
                process.wait(timeout=interrupt_after)
            except subprocess.TimeoutExpired:
                process.send_signal(signal.SIGINT)
        _, code, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(code)
        out.seek(0)
        text = out.read()
    return {"wall": time.perf_counter() - started, "cpu": usage.ru_utime + usage.ru_stime,
            "rss_mib": usage.ru_maxrss / 1024, "code": process.returncode, "out": text}


def resume_scan(config_path: Path, cube: Path, workers: int) -> dict:
    """What a resumed run does before its first task (see the module docstring), timed in this process."""
    from ordercube.pipeline.config.study import load_config
    from ordercube.pipeline.cube.owner import Cube
    from ordercube.pipeline.run.sweep import make_plan

    config = load_config(config_path, out=str(cube))
    wall, cpu = time.perf_counter(), time.process_time()
    opened = Cube.open_for(cube, config)
    status, lost = opened.status_for_planning()
    plan = make_plan(config, opened.coords, opened.chunk_shape, status)
    tasks = plan.task_count(workers)
    return {"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu, "lost": lost.count,
            "left": plan.cells_to_compute, "tasks": tasks, "chunks": int(np.prod([
                -(-size // chunk) for size, chunk in zip(opened.coords.shape, opened.chunk_shape.values())]))}


def planned_tasks(config_path: Path, workers: int) -> int:
    """The tasks a new cube's run of this config is cut into on ``workers`` workers."""
    from ordercube.pipeline.config.study import load_config
    from ordercube.pipeline.run.sweep import preview_plan

    return preview_plan(load_config(config_path)).task_count(workers)


def one_size(raw: dict, resamples: int, folder: Path, *, workers: int, interrupt_after: float | None,
             timeout: float) -> dict:
    config = folder / f"sweep_{resamples}.yaml"
    config.write_text(yaml.safe_dump({**raw, "resamples": resamples}, sort_keys=False))
    cube = folder / f"cube_{resamples}.zarr"
    run = [*ORDERCUBE, "run", str(config), "--out", str(cube), "--workers", str(workers), "--no-progress"]
    runs = []
    if interrupt_after is not None:
        runs.append(timed(["timeout", str(timeout), *run], interrupt_after=interrupt_after))
        if (cube / "zarr.json").exists():  # else interrupted before the cube was made: the next run starts afresh
            runs.append({**resume_scan(config, cube, workers), "scan": True})
    runs.append(timed(["timeout", str(timeout), *run]))
    row: dict = {"resamples": resamples, "runs": runs, "tasks": planned_tasks(config, workers)}
    row["status"] = timed([*ORDERCUBE, "status", str(cube)])
    row["scan"] = resume_scan(config, cube, workers)
    row["report"] = timed([*ORDERCUBE, "report", str(cube), "--out", str(folder / f"report_{resamples}")])
    return row


def _done(out: str) -> tuple[int, float] | None:
    found = re.search(r"done: (\d+) cells in ([\d.]+) s", out)
    return (int(found.group(1)), float(found.group(2))) if found else None


def _driver_mib(out: str) -> float:
    found = re.search(r"driver peak memory (\d+) MiB", out)
    return float(found.group(1)) if found else float("nan")


def print_row(row: dict, cells: int) -> float:
    print(f"\n== {cells:,} cells ({row['resamples']:,} resamples, {row['tasks']:,} tasks)")
    peak = float("nan")
    for run in row["runs"]:
        if run.get("scan"):
            print(f"  after the interrupt: {run['left']:,} cells left in {run['tasks']:,} tasks, scan {run['wall']:.2f} s "
                  f"wall / {run['cpu']:.2f} s CPU")
            continue
        done = _done(run["out"])
        interrupted = "interrupted" in run["out"].lower() or run["code"] not in (0,)
        if np.isfinite(_driver_mib(run["out"])):  # an interrupted run prints no figure
            peak = _driver_mib(run["out"]) if np.isnan(peak) else max(peak, _driver_mib(run["out"]))
        print(f"  run: exit {run['code']}, wall {run['wall']:.1f} s, CPU of driver and workers {run['cpu']:.1f} s, "
              + (f"{done[0]:,} cells in {done[1]:.1f} s ({done[0] / done[1]:,.0f} cells/s), " if done else "")
              + f"driver peak {_driver_mib(run['out']):.0f} MiB" + (" (interrupted)" if interrupted and not done else ""))
    print(f"  status: wall {row['status']['wall']:.2f} s, CPU {row['status']['cpu']:.2f} s, exit {row['status']['code']}")
    scan = row["scan"]
    print(f"  resume scan: wall {scan['wall']:.2f} s, CPU {scan['cpu']:.2f} s ({scan['chunks']:,} chunks per variable, "
          f"{scan['left']:,} cells left)")
    report = row["report"]
    print(f"  report: wall {report['wall']:.1f} s, CPU {report['cpu']:.1f} s, peak RSS {report['rss_mib']:.0f} MiB, "
          f"exit {report['code']}")
    return peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("config")
    parser.add_argument("--resamples", type=int, nargs="+", help="the sizes, as resamples (default: the config's / 100, "
                                                                 "/ 10 and as given)")
    parser.add_argument("--quick", action="store_true", help="the config's resamples / 1000 and / 100 only")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--interrupt-after", type=float, help="SIGINT each run once after this many seconds, then resume")
    parser.add_argument("--timeout", type=float, default=6 * 3600, help="seconds a run may take (default 6 h)")
    parser.add_argument("--keep", type=Path, help="keep the cubes and reports in this folder")
    parser.add_argument("--task-seconds", type=float, help="the config's execution: task_seconds (e.g. 0.01: many "
                                                           "tiny tasks, for the driver's memory per task)")
    parser.add_argument("--trials-per-chunk", type=int, help="the config's execution: trials_per_chunk (1 with "
                                                                 "--task-seconds 0.0003: a task per chunk of 8 cells)")
    args = parser.parse_args()
    raw = yaml.safe_load(Path(args.config).read_text())
    for key in ("task_seconds", "trials_per_chunk"):
        if getattr(args, key) is not None:
            raw["execution"] = {**(raw.get("execution") or {}), key: getattr(args, key)}
    full = int(raw["resamples"])
    sizes = args.resamples or ([full // 1000, full // 100] if args.quick else [full // 100, full // 10, full])
    per_trial = int(np.prod([len(raw["datasets"]), len(raw["n"]), len(raw["methods"]),
                             len(range(raw["k"]["from"], raw["k"]["to"] + 1)) if isinstance(raw["k"], dict)
                             else len(raw["k"])]))
    print(f"config: {args.config}  workers: {args.workers}  cores: {os.cpu_count()}  load: {os.getloadavg()[0]:.1f}")
    folder_context = tempfile.TemporaryDirectory() if args.keep is None else None
    folder = args.keep or Path(folder_context.name)  # type: ignore[union-attr]
    folder.mkdir(parents=True, exist_ok=True)
    cells, peaks, tasks = [], [], []
    try:
        for resamples in sizes:
            row = one_size(raw, resamples, folder, workers=args.workers, interrupt_after=args.interrupt_after,
                           timeout=args.timeout)
            cells.append(per_trial * resamples)
            tasks.append(row["tasks"])
            peaks.append(print_row(row, cells[-1]))
    finally:
        if folder_context is not None:
            folder_context.cleanup()
    if len(cells) > 1:
        slope, intercept = np.polyfit(np.array(cells, dtype=float), np.array(peaks), 1)
        print(f"\ndriver peak memory: {intercept:.0f} MiB + {slope * 2**20:.2f} bytes per cell "
              f"(fitted on {', '.join(f'{c:,}' for c in cells)} cells; load now {os.getloadavg()[0]:.1f})")
        slope, intercept = np.polyfit(np.array(tasks, dtype=float), np.array(peaks), 1)
        print(f"driver peak memory per task: {intercept:.0f} MiB + {slope * 1024:.1f} KiB per task "
              f"(fitted on {', '.join(f'{t:,}' for t in tasks)} tasks)")


if __name__ == "__main__":
    main()
