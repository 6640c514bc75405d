"""Engine figures of one sweep: wall time, kernel time, overhead ratio, points per second per core.

Runs a config through ``ordercube run`` (a subprocess, a fresh LocalCluster, a fresh cube), then reads
the cube's per-cell ``seconds``:

- compute wall: the CLI's "done: X cells in Y s" (submission to last write);
- kernel seconds: the sum of ``seconds`` over cells (time inside ``run_block``);
- overhead ratio: compute wall / (kernel seconds / workers); 1.0 means no engine overhead at all;
- points per second per core: points drawn by the trials (2n per trial for the pairwise criterion,
  n otherwise), summed over (dataset, n, trial), divided by compute wall and workers.

    python benchmarks/bench_sweep.py configs/shamir_tishby2007_fig1.yaml [--resamples 100] [--workers 2]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

from ordercube.pipeline.cube.owner import open_cube

# the installed command, as a user runs it (``python -m ordercube.pipeline.cli`` where the project is not installed)
ORDERCUBE = ([str(Path(sys.executable).with_name("ordercube"))] if Path(sys.executable).with_name("ordercube").exists()
             else [sys.executable, "-m", "ordercube.pipeline.cli"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("config")
    parser.add_argument("--resamples", type=int, help="override the config's resamples")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    raw = yaml.safe_load(Path(args.config).read_text())
    if args.resamples:
        raw["resamples"] = args.resamples
    with tempfile.TemporaryDirectory() as folder:
        config = Path(folder) / "sweep.yaml"
        raw = {**raw, "datasets": [_absolute(d, Path(args.config).resolve().parent) for d in raw["datasets"]]}
        config.write_text(yaml.safe_dump(raw))
        started = time.perf_counter()
        result = subprocess.run([*ORDERCUBE, "run", str(config), "--out",
                                 str(Path(folder) / "cube.zarr"), "--workers", str(args.workers), "--no-progress"],
                                capture_output=True, text=True, check=True)
        wall = time.perf_counter() - started
        compute = float(re.search(r"done: \d+ cells in ([\d.]+) s", result.stdout).group(1))
        tasks = int(re.search(r"in (\d+) tasks", result.stdout).group(1))
        driver_memory = re.search(r"driver peak memory (\d+) MiB", result.stdout).group(1)
        cube = open_cube(Path(folder) / "cube.zarr").load()
    kernel = float(cube["seconds"].sum())
    cells = int((cube["status"] > 0).sum())
    pairwise = "pairwise" in cube
    trials_per_n = (cube["status"] > 0).any(["model", "k"]).sum(["dataset", "trial"])
    points = float(((2 if pairwise else 1) * cube["n"] * trials_per_n).sum())
    print(f"config: {args.config}  workers: {args.workers}  cores: {os.cpu_count()}")
    print(f"cells: {cells}  tasks: {tasks}  cells per task: {cells / tasks:.1f}")
    print(f"wall (with start-up): {wall:.1f} s  compute wall: {compute:.1f} s  kernel: {kernel:.1f} s")
    print(f"overhead ratio (compute wall / (kernel / workers)): {compute / (kernel / args.workers):.3f}")
    print(f"driver peak memory: {driver_memory} MiB")
    print(f"points per second per core: {points / compute / args.workers:,.0f}")
    per_n = cube["seconds"].where(cube["status"] == 1).mean(["dataset", "model", "k", "trial"])
    for n, seconds in zip(per_n["n"].values, per_n.values):
        if np.isfinite(seconds):
            print(f"  n = {n:>8}: {seconds * 1e3:8.2f} ms per cell, {seconds / n * 1e9:7.1f} ns per point")


def _absolute(dataset: dict, base: Path) -> dict:
    """File paths in the config are relative to its folder; the temporary copy lives elsewhere."""
    out = dict(dataset)
    for key in ("path",):
        if key in out:
            out[key] = str((base / out[key]).resolve())
    if isinstance(out.get("labels"), dict) and "path" in out["labels"]:
        out["labels"] = {**out["labels"], "path": str((base / out["labels"]["path"]).resolve())}
    return out


if __name__ == "__main__":
    main()
