"""What the Dask dashboard (bokeh) costs a small run: the wall time of a whole ``ordercube run`` process.

A tiny sweep (4 cells, one worker) is run ``--repeats`` times with the default dashboard and as many times
with ``--no-dashboard``, alternating so that a busy machine slows both alike; each run is a fresh process,
a fresh LocalCluster and a fresh cube. Printed: the median and spread of each, their difference in seconds
and their ratio (with / without), the same for the time until the "computing" line (cluster start included);
and, as a check on a noisy machine, the time to import the dashboard's code (bokeh) in a fresh process.

    python benchmarks/bench_dashboard.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

TINY = {"name": "tiny", "seed": 1, "n": [40], "k": [2, 3], "resamples": 2,
        "datasets": [{"name": "gauss", "kind": "lange_gaussians3"}],
        "methods": [{"name": "km", "algorithm": "kmeans", "params": {"n_init": 1}, "predictor": "nearest_centroid",
                     "criteria": ["lange"]}]}
REPO = Path(__file__).resolve().parents[1]
# the installed command, as a user runs it (``python -m ordercube.pipeline.cli`` where the project is not installed)
ORDERCUBE = ([str(Path(sys.executable).with_name("ordercube"))] if Path(sys.executable).with_name("ordercube").exists()
             else [sys.executable, "-m", "ordercube.pipeline.cli"])


def one_run(config: Path, out: Path, extra: list[str]) -> tuple[float, float]:
    """(seconds to the process's end, seconds to its 'computing' line) of one ``ordercube run``."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    start = time.perf_counter()
    process = subprocess.Popen([*ORDERCUBE, "run", str(config), "--out", str(out),
                                "--workers", "1", "--no-progress", *extra],
                               stdout=subprocess.PIPE, text=True, env=env)
    assert process.stdout is not None
    started = None
    for line in process.stdout:
        if started is None and line.startswith("computing "):
            started = time.perf_counter() - start
    if process.wait(timeout=600) != 0:
        raise SystemExit(f"ordercube run {' '.join(extra)} failed")
    return time.perf_counter() - start, started or float("nan")


def import_seconds() -> float:
    """Seconds to import the scheduler's dashboard (bokeh and its pages) after distributed, in a fresh process."""
    code = ("import time, distributed; t = time.perf_counter(); import distributed.dashboard.scheduler; "
            "print(time.perf_counter() - t)")
    return float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)


def summary(label: str, values: list[float]) -> str:
    return f"{label}: median {statistics.median(values):.2f} s (min {min(values):.2f}, max {max(values):.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    results: dict[str, list[tuple[float, float]]] = {"dashboard": [], "no dashboard": []}
    with tempfile.TemporaryDirectory() as folder:
        config = Path(folder) / "tiny.yaml"
        config.write_text(yaml.safe_dump(TINY))
        for i in range(args.repeats):
            for label, extra in (("dashboard", []), ("no dashboard", ["--no-dashboard"])):
                results[label].append(one_run(config, Path(folder) / f"{label}-{i}.zarr", extra))
    for column, name in ((0, "whole run"), (1, "to the 'computing' line")):
        with_, without = ([r[column] for r in results[label]] for label in ("dashboard", "no dashboard"))
        print(f"{name}, {args.repeats} runs each")
        print("  " + summary("with the dashboard   ", with_))
        print("  " + summary("without the dashboard", without))
        difference = statistics.median(with_) - statistics.median(without)
        ratio = statistics.median(with_) / statistics.median(without)
        print(f"  dashboard costs {difference:+.2f} s; ratio with/without {ratio:.2f}")
    print(summary(f"importing the dashboard's code, {args.repeats} fresh processes",
                  [import_seconds() for _ in range(args.repeats)]))


if __name__ == "__main__":
    main()
