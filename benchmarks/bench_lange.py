"""Throughput of one Lange-stability workload: ``ordercube run`` against plain serial loops.

Workload (the peer comparison of ``bench_peers.py``): ``lange_gaussians3``, k = 2..10, 20 resamples, k-means
(``n_init=10``) + nearest-centroid predictor + Hungarian matching, for each n in {100, 1000, 10000}.

Measured, in the same run:
  (a) ``ordercube run`` end to end (a subprocess: Python start, LocalCluster start, the zarr cube);
  (w) the same sweep on a running cluster (a LocalCluster started once, warmed up by one sweep):
      ``load_config`` + ``run_sweep`` in this process, from reading the YAML to the last cube write.
      This is the cost of a sweep where sweeps are run at scale: against a cluster that is up;
  (b) a serial loop in this process calling the same kernels (``ordercube.tasks.cell.run_block``);
  (c) a serial loop of scikit-learn ``KMeans(n_init=10)`` + nearest centroid + scipy's Hungarian.
Every variant computes the random-labeling baselines too. Threads are pinned to 1 for the serial
loops (as Dask's nanny does for workers). Figures are printed as seconds and as ratios against the
baselines; nothing here is a pass/fail test.

    python benchmarks/bench_lange.py [--n 100 1000 10000 100000] [--resamples 20] [--workers 2]
"""

from __future__ import annotations

import os

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_variable] = "1"

import argparse  # noqa: E402
import re  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from importlib import metadata  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import yaml  # noqa: E402
from sklearn.cluster import KMeans  # noqa: E402

from ordercube.pipeline.config.study import load_config  # noqa: E402
from ordercube.pipeline.run.cluster import connect  # noqa: E402
from ordercube.pipeline.run.sweep import run_sweep  # noqa: E402
from ordercube.tasks.cell import BlockSpec, run_block  # noqa: E402
from ordercube.tasks.criteria.stability import random_labeling_disagreement  # noqa: E402
from ordercube.tasks.datasets import SyntheticSource  # noqa: E402

# the installed command, as a user runs it (``python -m ordercube.pipeline.cli`` where the project is not installed)
ORDERCUBE = ([str(Path(sys.executable).with_name("ordercube"))] if Path(sys.executable).with_name("ordercube").exists()
             else [sys.executable, "-m", "ordercube.pipeline.cli"])
from ordercube.tasks.matching import matched_disagreement  # noqa: E402
from ordercube.tasks.predictors import nearest_centroid  # noqa: E402
from ordercube.tasks.seeding import Purpose, label_id, stream  # noqa: E402

KS = tuple(range(2, 11))
SEED = 12345
BASELINE_DRAWS = 200


def config(n: int, resamples: int) -> dict:
    return {"name": f"bench{n}", "seed": SEED, "n": [n], "k": {"from": 2, "to": 10}, "resamples": resamples,
            "baseline_draws": BASELINE_DRAWS, "datasets": [{"name": "gaussians3", "kind": "lange_gaussians3"}],
            "methods": [{"name": "kmeans", "algorithm": "kmeans", "params": {"n_init": 10},
                         "predictor": "nearest_centroid", "criteria": ["lange"]}]}


def through_cli(n: int, resamples: int, workers: int) -> float:
    """Wall seconds of ``ordercube run`` in a new process with its own LocalCluster."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "bench.yaml"
        path.write_text(yaml.safe_dump(config(n, resamples)))
        started = time.perf_counter()
        result = subprocess.run([*ORDERCUBE, "run", str(path), "--out",
                                 str(Path(folder) / "cube.zarr"), "--workers", str(workers), "--no-progress"],
                                capture_output=True, text=True, check=True)
        wall = time.perf_counter() - started
    assert re.search(r"done: \d+ cells", result.stdout), result.stdout
    return wall


def on_running_cluster(n: int, resamples: int, address: str) -> float:
    """Wall seconds of one sweep against the scheduler at ``address``, YAML to cube."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "bench.yaml"
        path.write_text(yaml.safe_dump(config(n, resamples)))
        started = time.perf_counter()
        summary = run_sweep(load_config(path, out=str(Path(folder) / "cube.zarr")), scheduler=address,
                            echo=lambda line: None, show_progress=False)
        wall = time.perf_counter() - started
    assert summary.computed == len(KS) * resamples
    return wall


def baselines(n: int) -> None:
    for k in KS:
        random_labeling_disagreement(n // 2, k, stream(SEED, Purpose.BASELINE, n, k), draws=BASELINE_DRAWS)


def serial_same_kernels(n: int, resamples: int) -> float:
    started = time.perf_counter()
    baselines(n)
    source = SyntheticSource("lange_gaussians3", {"centers": [[-2.5, 4.0], [2.5, 4.0], [0.0, 0.0]], "std": 0.8})
    for trial in range(resamples):
        spec = BlockSpec(root_seed=SEED, dataset_id=label_id("gaussians3"), n=n, method_id=label_id("kmeans"),
                         algorithm="kmeans", algorithm_params=(("max_iter", 300), ("n_init", 10), ("tol", 1e-4)),
                         predictor="nearest_centroid", criteria=("lange",), ks=KS, trials=(trial,))
        run_block(spec, source)
    return time.perf_counter() - started


def serial_sklearn(n: int, resamples: int) -> float:
    started = time.perf_counter()
    baselines(n)
    source = SyntheticSource("lange_gaussians3", {"centers": [[-2.5, 4.0], [2.5, 4.0], [0.0, 0.0]], "std": 0.8})
    for trial in range(resamples):
        data = source.draw(n, np.random.default_rng([trial, SEED]), np.random.default_rng(0), with_eval=False)
        for k in KS:
            first = KMeans(n_clusters=k, n_init=10, random_state=trial).fit(data.first)
            second = KMeans(n_clusters=k, n_init=10, random_state=trial + 1).fit(data.second)
            predicted = nearest_centroid(data.first, first.labels_, k, data.second)
            matched_disagreement(predicted, second.labels_, k)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[100, 1000, 10000, 100000])
    parser.add_argument("--resamples", type=int, default=20)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    versions = ", ".join(f"{p} {metadata.version(p)}" for p in ("numpy", "scikit-learn", "dask", "zarr"))
    print(f"cores: {os.cpu_count()}; workers: {args.workers}; {versions}")
    print("seconds of wall time for the whole workload; ratios > 1 mean ordercube is faster")
    print(f"{'n':>7} {'cells':>6} | {'(a) cli':>8} {'(w) warm':>8} | {'(b) serial':>10} {'(c) sklearn':>11} | "
          f"{'c/w':>6} {'c/a':>6} {'b/w':>6} {'c/b':>6}")
    with connect(workers=args.workers, scheduler=None, scheduler_file=None) as client:
        address = client.scheduler.address
        # Warm-up, untimed: worker imports, compiled kernels loaded (numba's cache) in the workers and in
        # this process, scikit-learn's first call.
        on_running_cluster(100, 2, address)
        serial_same_kernels(100, 1)
        serial_sklearn(100, 1)
        for n in args.n:
            warm = on_running_cluster(n, args.resamples, address)
            cli = through_cli(n, args.resamples, args.workers)
            serial = serial_same_kernels(n, args.resamples)
            sklearn = serial_sklearn(n, args.resamples)
            print(f"{n:>7} {len(KS) * args.resamples:>6} | {cli:>8.2f} {warm:>8.2f} | {serial:>10.2f} {sklearn:>11.2f} | "
                  f"{sklearn / warm:>6.1f} {sklearn / cli:>6.2f} {serial / warm:>6.2f} {sklearn / serial:>6.1f}", flush=True)


if __name__ == "__main__":
    main()
