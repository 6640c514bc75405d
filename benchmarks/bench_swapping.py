"""Daudin & Mary-Huard's experiments: ordercube's whole process against a plain scikit-learn loop.

Measured in one run, on this machine, with its load recorded:

- the colon config (4 gene counts x 20 odd k x 500 resamplings = 40,000 cells: swapping, leave-one-out,
  test and resubstitution errors) through ``ordercube run``, whole process;
- the plain loop a user would write for the same resamplings: per resampling the same stratified split
  and top-g genes by |t| (scipy), per (g, k) ``KNeighborsClassifier`` with ``cross_val_score`` over
  ``LeaveOneOut`` plus the test error. It computes less (no swapping penalty, which scikit-learn lacks)
  and is timed on ``--loop-resamples`` resamplings, scaled linearly to 500 (each resampling is the same
  work);
- the Kearns config at ``--kearns-trials`` trials (1000: the definitive run of claims A5/A6), whole process.

    python benchmarks/bench_swapping.py [--loop-resamples 5] [--kearns-trials 1000]
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

REPO = Path(__file__).resolve().parents[1]
ORDERCUBE = str(Path(sys.executable).with_name("ordercube"))


def timed_run(config: dict, folder: Path, name: str) -> tuple[float, str]:
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config))
    started = time.perf_counter()
    result = subprocess.run([ORDERCUBE, "run", str(path), "--out", str(folder / f"{name}.zarr"), "--no-progress"],
                            capture_output=True, text=True, check=True)
    return time.perf_counter() - started, re.search(r"done: .*", result.stdout).group(0)


def plain_loop(resamples: int) -> float:
    """The scikit-learn loop on the colon data, seconds for ``resamples`` resamplings."""
    from scipy.stats import ttest_ind
    from sklearn.model_selection import LeaveOneOut, cross_val_score
    from sklearn.neighbors import KNeighborsClassifier

    from ordercube.pipeline.config.study import load_config

    config = load_config(REPO / "configs" / "daudin_colon.yaml")
    X, y = config.datasets[0].data, config.datasets[0].labels
    rng = np.random.default_rng(0)
    started = time.perf_counter()
    for _ in range(resamples):
        learn = np.concatenate([rng.permutation(np.flatnonzero(y == 0))[:14], rng.permutation(np.flatnonzero(y == 1))[:27]])
        test = np.setdiff1d(np.arange(y.size), learn)
        t = np.abs(ttest_ind(X[learn][y[learn] == 1], X[learn][y[learn] == 0]).statistic)
        for genes in (2000, 1000, 500, 100):
            columns = np.argsort(-t, kind="stable")[:genes]
            for k in range(1, 40, 2):
                model = KNeighborsClassifier(n_neighbors=k)
                cross_val_score(model, X[learn][:, columns], y[learn], cv=LeaveOneOut())
                model.fit(X[learn][:, columns], y[learn]).score(X[test][:, columns], y[test])
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loop-resamples", type=int, default=5)
    parser.add_argument("--kearns-trials", type=int, default=1000)
    args = parser.parse_args()
    print(f"cores: {os.cpu_count()}  load average before: {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        colon = yaml.safe_load((REPO / "configs" / "daudin_colon.yaml").read_text())
        colon_seconds, colon_done = timed_run(colon, folder, "colon")
        loop = plain_loop(args.loop_resamples) * 500 / args.loop_resamples
        print(f"colon, 40,000 cells (4 g x 20 k x 500): ordercube {colon_seconds:.1f} s whole process ({colon_done})")
        print(f"  plain scikit-learn loop (LOO + test error only), {args.loop_resamples} resamplings scaled to 500: "
              f"{loop:.0f} s -> ordercube {loop / colon_seconds:.0f}x faster")
        kearns = yaml.safe_load((REPO / "configs" / "daudin_kearns.yaml").read_text())
        kearns["resamples"] = args.kearns_trials
        kearns_seconds, kearns_done = timed_run(kearns, folder, "kearns")
        print(f"Kearns, {args.kearns_trials} trials (4 eta x 3 n x 40 k): ordercube {kearns_seconds:.1f} s whole process "
              f"({kearns_done})")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
