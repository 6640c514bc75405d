"""How long the embedded LocalCluster takes to be ready when its workers import the main script, and when not.

A typical analysis script imports scikit-learn, pandas and matplotlib at its top. Before, each spawned worker
imported the script again (as ``__mp_main__``), and with it those packages; now it imports nothing of the
script (:mod:`ordercube.pipeline.run.nomain`). Measured in the same process, interleaved, ``--repeats`` times
each: the wall time of :func:`ordercube.pipeline.run.cluster.connect` with 2 workers until a first task has run on
both, with the seam in place ("now") and without it ("main imported", the old behaviour). Medians and their ratio.

    python benchmarks/bench_worker_start.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import time

import matplotlib.pyplot  # noqa: F401 - what a script's workers imported again before
import pandas  # noqa: F401
import sklearn.cluster  # noqa: F401

from ordercube.pipeline.run import cluster


def ready_seconds() -> float:
    start = time.perf_counter()
    with cluster.connect(workers=2, scheduler=None, scheduler_file=None, dashboard_address=None) as client:
        client.run(os.getpid)
        return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    repeats = parser.parse_args().repeats
    seam = cluster.workers_without_main
    times: dict[str, list[float]] = {"now": [], "main imported": []}
    for _ in range(repeats):
        for name in times:
            cluster.workers_without_main = seam if name == "now" else contextlib.nullcontext  # type: ignore[assignment]
            times[name].append(ready_seconds())
    cluster.workers_without_main = seam
    for name, values in times.items():
        print(f"{name:>14}: median {statistics.median(values):.2f} s  ({', '.join(f'{v:.2f}' for v in values)})")
    print(f"ratio main imported / now: {statistics.median(times['main imported']) / statistics.median(times['now']):.2f}"
          f"  (load {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
