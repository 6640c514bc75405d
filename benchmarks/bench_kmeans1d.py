"""Exact 1-D k-means, per point per fit: ordercube's kernel against PyPI's ``kmeans1d``, same data, same run.

The work of Shamir & Tishby's estimator (2007, Theorem 3): optimal k-means solutions of m points of
the 1-D mixture of Lemma 1 (mu = 5) for k = 2, 3, 4. ``kmeans1d.cluster`` is called once per k (it sorts
and builds its prefix sums every time); ``ordercube.tasks.algorithms.kmeans1d.kmeans_1d_exact`` sorts once and
reads every k from one table. Both are single-threaded. The two must agree (same objective to 1e-9
relative); that is asserted before any time is printed. Figures: best of ``--repeats`` runs, nanoseconds
per point per fit (one fit = one k), and the ratio kmeans1d / ordercube (> 1: ordercube is faster).

    python benchmarks/bench_kmeans1d.py [--m 256 4096 65536 1048576] [--repeats 5]
"""

from __future__ import annotations

import argparse

import kmeans1d
import numpy as np

from ordercube.tasks.algorithms.kmeans1d import kmeans_1d_exact, within_cluster_sum_of_squares
from ordercube.tasks.datasets.synthetic import shamir_mixture1d
from timing import best_seconds

KS = (2, 3, 4)



def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--m", type=int, nargs="+", default=[256, 4096, 65536, 1048576])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    kmeans_1d_exact(np.arange(8.0), KS)  # compile (or load the cached machine code) outside the timings
    print(f"k = {KS}; best of {args.repeats}; ns per point per fit")
    print(f"{'m':>9} | {'ordercube':>10} {'kmeans1d':>10} | {'ratio':>6}")
    for m in args.m:
        x = shamir_mixture1d(m, np.random.default_rng(m), mu=5.0)[0].ravel()
        ours = kmeans_1d_exact(x, KS)
        for k in KS:
            reference = np.asarray(kmeans1d.cluster(x, k).clusters)
            ours_cost, reference_cost = within_cluster_sum_of_squares(x, ours[k]), within_cluster_sum_of_squares(x, reference)
            assert abs(ours_cost - reference_cost) <= 1e-9 * reference_cost, (m, k, ours_cost, reference_cost)
        fits = m * len(KS)
        ordercube = best_seconds(lambda x=x: kmeans_1d_exact(x, KS), args.repeats) / fits * 1e9
        reference = best_seconds(lambda x=x: [kmeans1d.cluster(x, k) for k in KS], args.repeats) / fits * 1e9
        print(f"{m:>9} | {ordercube:>10.1f} {reference:>10.1f} | {reference / ordercube:>6.1f}", flush=True)


if __name__ == "__main__":
    main()
