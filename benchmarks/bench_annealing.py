"""Deterministic annealing against 10-restart k-means: objective and time per fit, same data, same run.

The study: 96 fits, three data families (three Gaussians, eight Gaussians at random
centres, uniform on the unit cube) x d = 1, 2, 10, 100 x n = 100, 400 x k = 2, 3, 5, 8. For each fit,
with the same seed: ``kmeans`` (10 k-means++ restarts of Lloyd), pure annealing (``n_init = 0``: the
annealed centres polished by Lloyd) and ``deterministic_annealing`` as shipped (the annealed solution
beside the same 10 restarts, the lower objective kept). Objectives are printed relative to k-means
(< 0: lower, i.e. better), and for d = 1 against the exact optimum (``kmeans_1d_exact``). Times: best of
``--repeats``, and the ratio to k-means measured in the same loop. The cluster sizes of the uniform
d = 100 fits show how (un)evenly each splits.

    python benchmarks/bench_annealing.py [--repeats 5] [--cooling 0.9 --max-iter 100 --tol 1e-6]
"""

from __future__ import annotations

import argparse

import numpy as np

from ordercube.tasks.algorithms.annealing import deterministic_annealing
from ordercube.tasks.algorithms.kmeans import kmeans
from ordercube.tasks.algorithms.kmeans1d import kmeans_1d_exact
from timing import best_seconds

FAMILIES = ("3 gaussians", "8 gaussians", "uniform")
DIMENSIONS, SIZES, ORDERS = (1, 2, 10, 100), (100, 400), (2, 3, 5, 8)


def data(family: str, n: int, d: int, rng: np.random.Generator) -> np.ndarray:
    if family == "uniform":
        return rng.random((n, d))
    clusters = 3 if family == "3 gaussians" else 8
    centres = rng.normal(scale=4.0 if clusters == 3 else 2.0, size=(clusters, d))
    return centres[rng.integers(clusters, size=n)] + rng.standard_normal((n, d))


def objective(X: np.ndarray, labels: np.ndarray) -> float:
    return float(sum(((X[labels == c] - X[labels == c].mean(axis=0)) ** 2).sum() for c in np.unique(labels)))



def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--cooling", type=float, default=None, help="annealing parameters (default: the shipped ones)")
    parser.add_argument("--max-iter", type=int, default=None)
    parser.add_argument("--tol", type=float, default=None)
    args = parser.parse_args()
    schedule = {name: value for name, value in (("cooling", args.cooling), ("max_iter", args.max_iter), ("tol", args.tol))
                if value is not None}

    def annealing(X, k, **params):
        return deterministic_annealing(X, k, np.random.default_rng(k), **schedule, **params)

    rows = []
    print(f"{'family':<12} {'d':>3} {'n':>4} {'k':>2} | {'pure DA':>8} {'shipped':>8} {'exact':>8} | "
          f"{'k-means ms':>10} {'pure x':>7} {'shipped x':>9}")
    for family in FAMILIES:
        for d in DIMENSIONS:
            for n in SIZES:
                X = data(family, n, d, np.random.default_rng([n, d, FAMILIES.index(family)]))
                for k in ORDERS:
                    reference = objective(X, kmeans(X, k, np.random.default_rng(k)).labels)
                    pure = objective(X, annealing(X, k, n_init=0))
                    shipped = objective(X, annealing(X, k))
                    exact = objective(X, kmeans_1d_exact(X, [k])[k]) if d == 1 else np.nan
                    seconds = [best_seconds(lambda X=X, k=k: kmeans(X, k, np.random.default_rng(k)), args.repeats),
                               best_seconds(lambda X=X, k=k: annealing(X, k, n_init=0), args.repeats),
                               best_seconds(lambda X=X, k=k: annealing(X, k), args.repeats)]
                    rows.append((pure / reference - 1, shipped / reference - 1, seconds[1] / seconds[0],
                                 seconds[2] / seconds[0]))
                    print(f"{family:<12} {d:>3} {n:>4} {k:>2} | {pure / reference - 1:>+8.4f} {shipped / reference - 1:>+8.4f} "
                          f"{exact / reference - 1:>+8.4f} | {seconds[0] * 1e3:>10.3f} {seconds[1] / seconds[0]:>7.2f} "
                          f"{seconds[2] / seconds[0]:>9.2f}", flush=True)
    pure, shipped, pure_x, shipped_x = (np.array(column) for column in zip(*rows))
    tolerance = 1e-12
    print(f"\n{len(rows)} fits. Objective relative to 10-restart k-means (same seed):")
    for name, excess in (("pure annealing", pure), ("shipped", shipped)):
        print(f"  {name:<15} better {np.sum(excess < -tolerance):>3}, equal {np.sum(abs(excess) <= tolerance):>3}, "
              f"worse {np.sum(excess > tolerance):>3} (largest excess {excess.max():+.4f}, best {excess.min():+.4f})")
    for name, ratio in (("pure annealing", pure_x), ("shipped", shipped_x)):
        print(f"  time / k-means, {name:<15} median {np.median(ratio):.2f}x, 90th percentile "
              f"{np.percentile(ratio, 90):.2f}x, largest {ratio.max():.2f}x")
    X = data("uniform", 400, 100, np.random.default_rng([400, 100, 2]))
    for name, labels in (("k-means", kmeans(X, 5, np.random.default_rng(5)).labels),
                         ("pure annealing", annealing(X, 5, n_init=0)),
                         ("shipped", annealing(X, 5))):
        print(f"  uniform d = 100, n = 400, k = 5, cluster sizes of {name}: {sorted(np.bincount(labels), reverse=True)}")


if __name__ == "__main__":
    main()
