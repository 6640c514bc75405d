"""Whole-process time of one Lange-stability workload: ordercube against reval and a plain scikit-learn loop.

Workload: 3 Gaussians (Lange et al. 2002), k = 2..10,
20 resamples, k-means with 10 restarts, nearest-centroid prediction, Hungarian matching, the
random-labeling baselines (200 draws per k), at each n. Every variant runs as its own process, as a user
would start it (Python start and imports included), interleaved per n, once; the machine's load average
is printed before and after each n, since a busy machine inflates every figure:

  ordercube  ``ordercube run CONFIG`` with its defaults (in this process for small work, else a LocalCluster
             of one worker per core); its compute time is the ``done: ... in X s`` it prints;
  loop       a serial loop in a fresh process: ``KMeans(n_init=10)`` on both halves, nearest centroid,
             ``scipy.optimize.linear_sum_assignment``, the same baselines; BLAS held to one thread;
  warm 1c    ordercube's compute on one core in a warm process (a second sweep in the same process, as a
             notebook's second call), against the loop's compute, also on one core;
  reval      reval 0.1.0's ``FindBestClustCV`` (2 folds x 20 repeats, ``KMeans(n_init=10)``, scikit-learn's
             ``NearestCentroid``, 10 random labelings), serial, in the Python given by --reval-python
             (a venv with ``pip install reval``; skipped without it, and above --reval-max-n).

Also timed: ``ordercube status`` and ``validate`` of the n = 100 cube and config, ``python -c "import numpy,
scipy"`` (the floor of any Python tool here), and the quickstart config end to end (run + report).
Ratios are against the same run's figures; nothing here is a pass/fail test.

    python benchmarks/bench_peers.py [--n 100 1000 10000 100000] [--reval-python /path/to/venv/bin/python]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# the installed command, as a user runs it (``python -m ordercube.pipeline.cli`` where the project is not installed)
ORDERCUBE = ([str(Path(sys.executable).with_name("ordercube"))] if Path(sys.executable).with_name("ordercube").exists()
             else [sys.executable, "-m", "ordercube.pipeline.cli"])
KS = list(range(2, 11))
RESAMPLES = 20
SEED = 12345
ONE_THREAD = {name: "1" for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}


def config(n: int) -> dict:
    return {"name": f"peers{n}", "seed": SEED, "n": [n], "k": {"from": 2, "to": 10}, "resamples": RESAMPLES,
            "baseline_draws": 200, "datasets": [{"name": "gaussians3", "kind": "lange_gaussians3"}],
            "methods": [{"name": "kmeans", "algorithm": "kmeans", "params": {"n_init": 10},
                         "predictor": "nearest_centroid", "criteria": ["lange"]}]}


def timed(command: list[str], *, env: dict[str, str] | None = None, cwd: Path | None = None) -> tuple[float, str]:
    started = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, env={**os.environ, **(env or {})}, cwd=cwd)
    wall = time.perf_counter() - started
    if result.returncode != 0:
        raise RuntimeError(f"{command} exited {result.returncode}: {result.stderr[-2000:]}")
    return wall, result.stdout


def ordercube_run(n: int, folder: Path) -> tuple[float, float]:
    import yaml  # not in reval's environment, which runs this file too

    path = folder / f"peers{n}.yaml"
    path.write_text(yaml.safe_dump(config(n)))
    wall, out = timed([*ORDERCUBE, "run", str(path), "--out", str(folder / f"peers{n}.zarr"),
                       "--no-progress", "--no-dashboard"])
    compute = float(re.search(r"done: \d+ cells in ([0-9.]+) s", out).group(1))
    return wall, compute


def steady_run(n: int) -> float:
    """ordercube's compute of the sweep in one process on one core, once warm (a second sweep in the same
    process, as a notebook's second call: the first pays its one-time imports and warm-ups)."""
    _, out = timed([sys.executable, __file__, "--steady", str(n)], env=ONE_THREAD)
    return float(out.split()[-1])


def steady_compute(n: int) -> float:
    from ordercube.pipeline.config.study import parse_config
    from ordercube.pipeline.run.sweep import run_sweep

    if hasattr(os, "sched_setaffinity"):  # one core: in this process ordercube would use a thread per core
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})

    with tempfile.TemporaryDirectory() as folder:
        seconds = []
        for name in ("first", "second"):
            spec = parse_config(config(n), base=Path(folder), out=str(Path(folder) / f"{name}.zarr"))
            seconds.append(run_sweep(spec, workers=0, show_progress=False, echo=lambda line: None).seconds)
    return seconds[-1]


def loop_run(n: int) -> tuple[float, float]:
    wall, out = timed([sys.executable, __file__, "--loop", str(n)], env=ONE_THREAD)
    return wall, float(out.split()[-1])


def reval_run(n: int, python: str) -> tuple[float, float]:
    wall, out = timed([python, __file__, "--reval", str(n)], env=ONE_THREAD)
    return wall, float(out.split()[-1])


def _gaussians(n: int, rng):
    """Lange et al.'s 3 Gaussians as ordercube draws them (clouds of 1/4, 1/4, 1/2 of the points)."""
    import numpy as np

    centers = np.array([[-2.5, 4.0], [2.5, 4.0], [0.0, 0.0]])
    sizes = [n // 4, n // 4, n - 2 * (n // 4)]
    return np.concatenate([rng.normal(center, 0.8, size=(size, 2)) for center, size in zip(centers, sizes)])


def loop_compute(n: int) -> float:
    """The plain loop, in this (fresh) process: the time from its first kernel call to its last."""
    import numpy as np
    from scipy.optimize import linear_sum_assignment
    from sklearn.cluster import KMeans

    started = time.perf_counter()
    rng = np.random.default_rng(SEED)
    for k in KS:  # the random-labeling baseline of Lange et al. (eq. 6): 200 draws of two labelings of n/2
        for _ in range(200):
            a, b = rng.integers(k, size=n // 2), rng.integers(k, size=n // 2)
            confusion = np.zeros((k, k))
            np.add.at(confusion, (a, b), 1)
            rows, cols = linear_sum_assignment(-confusion)
    for trial in range(RESAMPLES):
        X = rng.permutation(_gaussians(n, rng))
        first, second = X[: n // 2], X[n // 2: 2 * (n // 2)]
        for k in KS:
            one = KMeans(n_clusters=k, n_init=10, random_state=2 * trial).fit(first)
            two = KMeans(n_clusters=k, n_init=10, random_state=2 * trial + 1).fit(second)
            predicted = ((second[:, None, :] - one.cluster_centers_[None]) ** 2).sum(-1).argmin(1)
            confusion = np.zeros((k, k))
            np.add.at(confusion, (predicted, two.labels_), 1)
            rows, cols = linear_sum_assignment(-confusion)
            _ = 1 - confusion[rows, cols].sum() / len(second)
    return time.perf_counter() - started


def reval_compute(n: int) -> float:
    import numpy as np
    from reval.best_nclust_cv import FindBestClustCV
    from sklearn.cluster import KMeans
    from sklearn.neighbors import NearestCentroid

    X = _gaussians(n, np.random.default_rng(SEED))
    started = time.perf_counter()
    search = FindBestClustCV(s=NearestCentroid(), c=KMeans(n_init=10), nrand=10, nfold=2, n_jobs=1, nclust_range=KS)
    search.best_nclust(X, iter_cv=RESAMPLES)
    return time.perf_counter() - started


def load() -> str:
    return "/".join(f"{value:.2f}" for value in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[100, 1000, 10000, 100000])
    parser.add_argument("--reval-python", help="a Python with reval installed (pip install reval)")
    parser.add_argument("--reval-max-n", type=int, default=10000,
                        help="largest n given to reval (serial reval took 1384 s at n = 100,000 in one measured run)")
    parser.add_argument("--loop", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--reval", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--steady", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.steady:
        print(f"{steady_compute(args.steady):.4f}")
        return
    if args.loop:
        print(f"{loop_compute(args.loop):.4f}")
        return
    if args.reval:
        print(f"{reval_compute(args.reval):.4f}")
        return

    print(f"cores: {os.cpu_count()}; load average (1/5/15 min) at start: {load()}")
    print("whole process and compute seconds; ratios > 1: ordercube is faster; one run each, interleaved per n")
    header = (f"{'n':>7} | {'ordercube':>9} {'(compute)':>9} | {'loop':>6} {'(compute)':>9} | {'reval':>7} "
              f"{'(compute)':>9} | {'loop/oc':>7} {'cells/s oc/loop':>15} {'reval/oc':>8} | "
              f"{'warm 1c':>6} {'loop/warm':>8} | load")
    print(header)
    cells = len(KS) * RESAMPLES
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        timed([*ORDERCUBE, "run", str(_write(work, 100)), "--out", str(work / "warm.zarr"),
               "--no-progress"])  # warm-up, untimed: the OS's file cache
        loop_run(100)
        for n in args.n:
            before = load()
            order = [("ordercube", partial(ordercube_run, n, work)), ("loop", partial(loop_run, n)),
                     ("steady", partial(steady_run, n))]
            if args.reval_python and n <= args.reval_max_n:
                order.append(("reval", partial(reval_run, n, args.reval_python)))
            turn = args.n.index(n) % len(order)
            results = dict((name, run()) for name, run in order[turn:] + order[:turn])
            (oc, oc_compute), (loop, loop_compute_s) = results["ordercube"], results["loop"]
            reval = results.get("reval")
            reval_text = f"{reval[0]:7.1f} {reval[1]:9.1f}" if reval else f"{'-':>7} {'-':>9}"
            reval_ratio = f"{reval[0] / oc:8.1f}" if reval else f"{'-':>8}"
            throughput = (cells / oc_compute) / (cells / loop_compute_s)
            steady = results["steady"]
            print(f"{n:>7} | {oc:9.2f} {oc_compute:9.2f} | {loop:6.2f} {loop_compute_s:9.2f} | {reval_text} | "
                  f"{loop / oc:7.2f} {throughput:15.1f} {reval_ratio} | {steady:6.2f} {loop_compute_s / steady:8.1f} | "
                  f"{before} -> {load()}", flush=True)
        floor, _ = timed([sys.executable, "-c", "import numpy, scipy"])
        status, _ = timed([*ORDERCUBE, "status", str(work / "warm.zarr")])
        validate, _ = timed([*ORDERCUBE, "validate", str(work / "peers100.yaml")])
        quick_run, _ = timed([*ORDERCUBE, "run", str(REPO / "configs" / "quickstart.yaml"),
                              "--out", str(work / "quick.zarr"), "--no-progress"])
        quick_report, _ = timed([*ORDERCUBE, "report", str(work / "quick.zarr")])
    print(f"python -c 'import numpy, scipy': {floor:.2f} s; ordercube status: {status:.2f} s ({status / floor:.1f}x), "
          f"validate: {validate:.2f} s ({validate / floor:.1f}x)")
    print(f"quickstart (1620 cells): run {quick_run:.2f} s + report {quick_report:.2f} s = {quick_run + quick_report:.2f} s; "
          f"load at the end: {load()}")


def _write(folder: Path, n: int) -> Path:
    import yaml

    path = folder / "warm.yaml"
    path.write_text(yaml.safe_dump({**config(n), "resamples": 2}))
    return path


if __name__ == "__main__":
    main()
