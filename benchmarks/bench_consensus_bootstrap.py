"""The bootstrap over resamples of the consensus criteria: batched against one replicate at a time, in one process.

``reduced_scores`` (what ``ordercube report`` computes first) on consensus cubes, timed in CPU seconds (robust to a
shared machine's load) with the batched reduction of this checkout (``new``) and with the reduction as it was
before (``old``: every replicate's consensus matrices computed alone, ``batched`` switched off, and the consensus
partition cut by SciPy's ``cut_tree``), interleaved old, new, old, new, ... Every output of the two is compared:
the script prints whether they are bit-identical (else the largest difference) and the ratio old / new.

    python benchmarks/bench_consensus_bootstrap.py                      # gaussian3 and colon at H = 1000 (built)
    python benchmarks/bench_consensus_bootstrap.py --quick              # gaussian3 at H = 200, 20 replicates
    python benchmarks/bench_consensus_bootstrap.py --cube results/consensus_yeast.zarr --repeats 1

The cubes are built with ``ordercube run`` from configs/consensus_{gaussian3,colon,yeast}.yaml as
benchmarks/consensus_side_by_side.py writes them (no references, so no M3C), in a temporary folder, unless
``--cube`` names existing ones (with references, M3C's references are batched too).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))


@contextlib.contextmanager
def before() -> Iterator[None]:
    """The reduction as before batches: no batch, SciPy's cut_tree for the consensus partition."""
    from scipy.cluster.hierarchy import cut_tree

    from ordercube.tasks.consensus import partition
    from ordercube.tasks.criteria import consensus

    saved = consensus.batch_needs, partition.cut_clusters
    consensus.batch_needs = lambda criteria: None
    partition.cut_clusters = lambda tree, k: cut_tree(tree, n_clusters=k).ravel()
    try:
        yield
    finally:
        consensus.batch_needs, partition.cut_clusters = saved


def timed(cube_path: Path, replicates: int, old: bool) -> tuple[float, float, dict[str, np.ndarray]]:
    import xarray as xr

    from ordercube.pipeline.reduce.assignments import reduced_scores
    from ordercube.tasks.criteria import consensus

    consensus._CACHE.clear()
    consensus._HELD[0] = 0
    cube = xr.open_zarr(cube_path).load()  # read before the clock: both sides reduce the same arrays in memory
    with before() if old else contextlib.nullcontext():
        cpu, wall = time.process_time(), time.perf_counter()
        reduced = reduced_scores(cube, replicates=replicates)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return cpu, wall, {name: reduced[name].values for name in reduced.data_vars}


def build(name: str, folder: Path, resamples: int) -> Path:
    import consensus_side_by_side as side

    work = folder / name
    work.mkdir(parents=True, exist_ok=True)
    config = side.run_config(name, work, resamples, 10, 0.8, 0)
    cube = work / f"{name}.zarr"
    subprocess.run([*side.ORDERCUBE, "run", str(config), "--out", str(cube), "--no-progress", "--no-dashboard"],
                   check=True, capture_output=True)
    return cube


def compare(old: dict[str, np.ndarray], new: dict[str, np.ndarray]) -> str:
    worst = 0.0
    for name, values in old.items():
        if not np.array_equal(values, new[name], equal_nan=True):
            worst = max(worst, float(np.nanmax(np.abs(values - new[name]))))
    return "bit-identical" if worst == 0.0 else f"max abs difference {worst:.3g}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cube", nargs="+", help="existing consensus cubes (default: build gaussian3 and colon)")
    parser.add_argument("--datasets", nargs="+", default=["gaussian3", "colon"], help="cubes to build")
    parser.add_argument("--resamples", type=int, default=1000, help="H of the cubes built (default 1000)")
    parser.add_argument("--replicates", type=int, default=100, help="bootstrap replicates (default 100)")
    parser.add_argument("--repeats", type=int, default=2, help="old/new pairs per cube (default 2)")
    parser.add_argument("--quick", action="store_true", help="gaussian3 at H = 200, 20 replicates, one pair")
    args = parser.parse_args(argv)
    sys.stdout.reconfigure(line_buffering=True)
    if args.quick:
        args.datasets, args.resamples, args.replicates, args.repeats = ["gaussian3"], 200, 20, 1
    print(f"cores {os.cpu_count()}; load {os.getloadavg()[0]:.2f}; {args.replicates} replicates; CPU seconds of "
          "reduced_scores, old (one replicate at a time) and new (batched), interleaved")
    with tempfile.TemporaryDirectory(prefix="bench-consensus-bootstrap-") as folder:
        cubes = [Path(path) for path in args.cube] if args.cube else \
            [build(name, Path(folder), args.resamples) for name in args.datasets]
        for cube in cubes:
            olds, news = [], []
            for _ in range(args.repeats):
                cpu, wall, old = timed(cube, args.replicates, old=True)
                olds.append(cpu)
                cpu, wall, new = timed(cube, args.replicates, old=False)
                news.append(cpu)
            print(f"{cube.name}: old {min(olds):.2f} s, new {min(news):.2f} s CPU (best of {args.repeats}); "
                  f"old / new {min(olds) / min(news):.1f}x; outputs {compare(old, new)}; load "
                  f"{os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
