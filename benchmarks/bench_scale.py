"""Throughput at scale against a base commit: the Figure 1 grid, a 10^5-cell Lange grid and the quickstart.

Each grid is run by ``ordercube run --workers W`` (a LocalCluster; ``--workers 0``: in this process) on this
checkout and on a base commit (``--base REV``, default the merge-base with ``main``), built in a temporary git
worktree with a copy of this venv (``cp -a`` + ``pip install -e . --no-deps --no-build-isolation``), removed at
the end. The two sides run interleaved (base, head, base, head, ...), each in a fresh process, so that a change
in the machine's load falls on both. Printed for every run:

* wall (the command's ``main``), compute (CPU seconds, user + system, of the driver and of its workers, from
  ``getrusage``), system seconds apart, cells and cells/s;
* the cells' kernel seconds (the cube's ``seconds``, summed), and the engine's split per task and per cell as
  the run itself measured it (``Summary``: kernel, the workers' bookkeeping, the cube's writes, the driver;
  a base without that split prints ``-``);
* the engine overhead (bookkeeping + writes + driver) as a share of compute (the kernels' seconds): the budget
  is 10% on Figure 1 and on the quickstart at 200 resamples;
* the ratios head / base of wall and compute.

The full run (Figure 1 at 108,000 cells, Lange at 100,008, quickstart at 200 resamples, both sides once) takes
about 15 min on an idle 2-core machine; ``--quick`` (Figure 1 to n = 8192 at 200 trials, 10,008 Lange cells,
quickstart at 40 resamples) about 2 min.

    python benchmarks/bench_scale.py [--quick] [--base REV | --no-base] [--workers 2] [--repeats 1]
                                     [--grids figure1 lange quickstart] [--resamples 200]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
GRIDS = ("figure1", "lange", "quickstart")
BUDGET = 0.10  # the engine's overhead allowed, as a share of the kernels' seconds

# Run inside the venv of one side: `ordercube run` through the CLI's main, timed, with the Summary the sweep
# returned (where the side has the split) and the cube's kernel seconds, written as JSON.
RUNNER = r'''
import dataclasses, json, resource, sys, time
try:
    from ordercube.pipeline import cli
    from ordercube.pipeline.run import sweep
except ImportError:  # an early layout
    from pipeline import cli
    from pipeline.run import sweep

def main():
    config, out, workers, report = sys.argv[1:5]
    captured = {}
    original = sweep.run_sweep
    def run_sweep(*args, **kwargs):
        summary = original(*args, **kwargs)
        captured.update(dataclasses.asdict(summary))
        return summary
    sweep.run_sweep = run_sweep
    started = time.perf_counter()
    code = cli.main(["run", config, "--out", out, "--workers", workers, "--no-progress", "--no-dashboard"])
    wall = time.perf_counter() - started
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    import numpy as np, zarr
    seconds = zarr.open_group(out, mode="r")["seconds"][...]
    json.dump({"code": code, "wall": wall, "summary": captured, "kernel": float(np.nansum(seconds)),
               "driver_user": own.ru_utime, "driver_sys": own.ru_stime,
               "workers_user": children.ru_utime, "workers_sys": children.ru_stime}, open(report, "w"))

if __name__ == "__main__":
    main()
'''


def figure1(quick: bool) -> dict:
    config = yaml.safe_load((ROOT / "configs" / "shamir_tishby2007_fig1.yaml").read_text())
    if quick:
        config["n"] = {"from": 64, "to": 8192, "factor": 2}
        config["resamples"] = 200
    return config


def lange(quick: bool) -> dict:
    """1 dataset x 2 n x 9 k x 5,556 trials = 100,008 cells (--quick: 556 trials, 10,008 cells) of k-means
    (one start) with the Lange criterion: cheap cells, where the engine's costs per cell show."""
    return {"name": "lange_1e5", "seed": 2002, "n": [60, 120], "k": {"from": 2, "to": 10},
            "resamples": 556 if quick else 5556,
            "datasets": [{"name": "gaussians3", "kind": "lange_gaussians3"}],
            "methods": [{"name": "kmeans", "algorithm": "kmeans", "params": {"n_init": 1},
                         "predictor": "nearest_centroid", "criteria": ["lange"]}]}


def quickstart(resamples: int) -> dict:
    config = yaml.safe_load((ROOT / "configs" / "quickstart.yaml").read_text())
    config["resamples"] = resamples
    return config


def git(*args: str, cwd: Path = ROOT) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def default_base() -> str:
    for main in ("main", "origin/main"):
        try:
            return git("merge-base", "HEAD", main)
        except subprocess.CalledProcessError:
            continue
    return git("rev-parse", "HEAD~1")


def build_base(revision: str, folder: Path) -> Path:
    """A worktree of ``revision`` in ``folder`` with a copy of this venv, the project installed in it
    (editable, no dependencies fetched); returns its python."""
    git("worktree", "add", "--detach", str(folder), revision)
    venv = Path(sys.prefix)
    shutil.copytree(venv, folder / ".venv", symlinks=True)
    python = folder / ".venv" / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", "-e", ".", "--no-deps", "--no-build-isolation"],
                   cwd=folder, check=True, capture_output=True)
    return python


def run_one(python: Path, cwd: Path, config: Path, out: Path, workers: int, scratch: Path) -> dict:
    runner, report = scratch / "runner.py", scratch / f"{out.stem}.json"
    runner.write_text(RUNNER)
    shutil.rmtree(out, ignore_errors=True)
    done = subprocess.run([str(python), str(runner), str(config), str(out), str(workers), str(report)], cwd=cwd,
                          capture_output=True, text=True)
    if done.returncode != 0 or not report.exists():
        raise SystemExit(f"{config.name} on {cwd} failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    figures = json.loads(report.read_text())
    shutil.rmtree(out, ignore_errors=True)
    return figures


def describe(side: str, figures: dict) -> tuple[str, dict]:
    summary = figures["summary"]
    cells = summary.get("computed") or 0
    compute = figures["driver_user"] + figures["driver_sys"] + figures["workers_user"] + figures["workers_sys"]
    system = figures["driver_sys"] + figures["workers_sys"]
    kernel = figures["kernel"]
    line = (f"  {side:<5} wall {figures['wall']:8.1f} s  compute {compute:8.1f} s (system {system:6.1f}; driver "
            f"{figures['driver_user'] + figures['driver_sys']:6.1f})  {cells:>8} cells  "
            f"{cells / figures['wall']:9.0f} cells/s  kernels {kernel:8.1f} s")
    split = {"wall": figures["wall"], "compute": compute, "system": system, "kernel": kernel}
    if "bookkeeping_seconds" in summary and summary.get("tasks"):
        tasks = summary["tasks"]
        parts = {"kernel": summary["kernel_seconds"], "bookkeeping": summary["bookkeeping_seconds"],
                 "writes": summary["write_seconds"], "driver": summary["driver_seconds"]}
        overhead = parts["bookkeeping"] + parts["writes"] + parts["driver"]
        share = overhead / parts["kernel"] if parts["kernel"] else float("nan")
        per_task = "  ".join(f"{name} {1000 * value / tasks:.1f}" for name, value in parts.items())
        per_cell = "  ".join(f"{name} {1000 * value / max(cells, 1):.3f}" for name, value in parts.items())
        line += (f"\n        {tasks} tasks; ms per task: {per_task}\n        ms per cell: {per_cell}"
                 f"\n        engine overhead {1000 * overhead / max(cells, 1):.3f} ms per cell = {100 * share:.1f}% of compute "
                 f"(budget {100 * BUDGET:.0f}%: {'met' if share <= BUDGET else 'NOT met'})")
        split["share"] = share
    else:
        line += "\n        (no split: this side's engine does not measure it)"
    return line, split


def best(splits: list[dict], key: str) -> float:
    return min(split[key] for split in splits)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smaller grids (about 2 min in all)")
    parser.add_argument("--base", help="the commit to compare with (default: the merge-base with main)")
    parser.add_argument("--no-base", action="store_true", help="this checkout only")
    parser.add_argument("--workers", type=int, default=2, help="ordercube run --workers (0: in this process)")
    parser.add_argument("--repeats", type=int, default=1, help="runs of each side, interleaved")
    parser.add_argument("--grids", nargs="+", choices=GRIDS, default=list(GRIDS))
    parser.add_argument("--resamples", type=int, help="the quickstart's resamples (default 200; --quick 40)")
    args = parser.parse_args()
    resamples = args.resamples or (40 if args.quick else 200)
    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}, "
          f"{os.cpu_count()} cores, --workers {args.workers}, head {git('rev-parse', '--short', 'HEAD')}"
          f"{' (+ uncommitted changes)' if git('status', '--porcelain', '--untracked-files=no') else ''}")
    scratch = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    sides = {"head": (Path(sys.executable), ROOT)}
    try:
        if not args.no_base:
            base = args.base or default_base()
            started = time.perf_counter()
            sides = {"base": (build_base(base, scratch / "base"), scratch / "base"), **sides}
            print(f"base {git('rev-parse', '--short', base)} built in {time.perf_counter() - started:.0f} s")
        configs = {"figure1": figure1(args.quick), "lange": lange(args.quick), "quickstart": quickstart(resamples)}
        for grid in args.grids:
            config = scratch / f"{grid}.yaml"
            config.write_text(yaml.safe_dump(configs[grid], sort_keys=False))
            print(f"\n{grid} ({config.name}: {configs[grid]['name']}, resamples {configs[grid]['resamples']})")
            measured: dict[str, list[dict]] = {side: [] for side in sides}
            for repeat in range(args.repeats):
                for side, (python, cwd) in sides.items():
                    figures = run_one(python, cwd, config, scratch / f"{grid}-{side}-{repeat}.zarr", args.workers, scratch)
                    line, split = describe(side, figures)
                    print(line, flush=True)
                    measured[side].append(split)
            if "base" in measured:
                ratios = {key: best(measured["head"], key) / max(best(measured["base"], key), 1e-9)
                          for key in ("wall", "compute", "system", "kernel")}
                print(f"  head / base: wall {ratios['wall']:.3f}, compute {ratios['compute']:.3f}, system "
                      f"{ratios['system']:.3f}, kernels {ratios['kernel']:.3f} (best of {args.repeats})")
    finally:
        if "base" in sides:
            subprocess.run(["git", "worktree", "remove", "--force", str(scratch / "base")], cwd=ROOT,
                           capture_output=True)
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
