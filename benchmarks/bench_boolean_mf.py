"""GreConD and Frank et al.'s (2011) Boolean transfer costs, compiled (``ordercube.tasks.algorithms.boolean_mf``) against numpy.

  fit       GreConD up to k = 400 on 2,400 training users x 500 permissions (density ~0.05: 60 planted roles
            of 5-15 permissions, 1-3 roles per user, 1 % of the zeros set and 2 % of the ones cleared).
            The numpy reference (:func:`greconD_numpy`) runs once, all the way (~50 s), and its factors are
            compared with the compiled ones; its time for the first 20 factors is printed too (a linear
            extrapolation from it overstates the full run, whose later factors take fewer steps);
  transfer  the transfer costs of 600 test users for k in the shipped grid, compiled vs the numpy per-k loop;
  project   the paper's Sec. 5 experiment, 5 folds x 2 datasets: projected from the planted matrix, and run
            for real on the substitutes of ``configs/frank_bmf.yaml`` (``americas_small``: 3,000 random users and the 500 most
            frequent permissions; ``apj``: all 2,044 users, 500 most frequent permissions) when
            ``/work/shared/datasets/rbac_hp_labs`` is there, with the mean transfer curve and its argmin.

Best of 3 for the compiled kernels (after a warm-up call that loads them from numba's cache); numpy with one
BLAS thread, as in a sweep's worker.

    python benchmarks/bench_boolean_mf.py
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from ordercube.tasks.algorithms.boolean_mf import bmf_transfer_costs, bmf_transfer_costs_numpy, greconD, greconD_numpy
from timing import best_seconds

KS = np.array([1, 2, 5, 10, 20, 50, 100, 150, 200, 250, 300, 400])
K_MAX = 400
RBAC = Path("/work/shared/datasets/rbac_hp_labs")


def planted(rng: np.random.Generator, n: int = 3000, d: int = 500, roles: int = 60) -> np.ndarray:
    """Users holding 1-3 of ``roles`` random roles (5-15 permissions each), then noise: 1 % of zeros on, 2 % of ones off."""
    grants = np.zeros((roles, d), dtype=bool)
    for t in range(roles):
        grants[t, rng.choice(d, size=rng.integers(5, 16), replace=False)] = True
    holds = np.zeros((n, roles), dtype=bool)
    for i in range(n):
        holds[i, rng.choice(roles, size=rng.integers(1, 4), replace=False)] = True
    X = (holds.astype(np.float32) @ grants.astype(np.float32)) > 0
    return np.where(X, rng.random((n, d)) >= 0.02, rng.random((n, d)) < 0.01)



def edges_matrix(name: str, users: int | None, rng: np.random.Generator) -> np.ndarray:
    edges = np.loadtxt(RBAC / f"{name}_edges.csv", delimiter=",", skiprows=1, dtype=np.int64)
    X = np.zeros((edges[:, 0].max(), edges[:, 1].max()), dtype=bool)
    X[edges[:, 0] - 1, edges[:, 1] - 1] = True
    X = X[:, np.argsort(-X.sum(axis=0), kind="stable")[:500]]
    if users is not None:
        X = X[np.sort(rng.choice(X.shape[0], size=users, replace=False))]
    return X


def five_folds(X: np.ndarray, rng: np.random.Generator) -> tuple[float, np.ndarray, list[int]]:
    """Seconds, the (5, len(KS)) transfer costs of 5-fold cross-validation (fit on 4/5, transfer to 1/5) and the
    number of factors of each fit (fewer than ``K_MAX`` when the fold was covered exactly)."""
    folds = np.array_split(rng.permutation(X.shape[0]), 5)
    costs = np.empty((5, KS.size))
    found = []
    started = time.perf_counter()
    for f, held_out in enumerate(folds):
        train = np.delete(X, held_out, axis=0)
        factors = greconD(train, K_MAX)
        costs[f] = bmf_transfer_costs(train, factors, X[held_out], KS)
        found.append(factors.n_factors)
    return time.perf_counter() - started, costs, found


def main() -> None:
    rng = np.random.default_rng([4, 2026])
    X = planted(rng)
    order = rng.permutation(X.shape[0])
    train, test = X[order[:2400]], X[order[2400:]]
    print(f"planted matrix: train {train.shape}, test {test.shape}, density {X.mean():.3f}")

    warm = greconD(train[:50], 3)
    bmf_transfer_costs(train[:50], warm, test[:5], [1, 2])

    factors = greconD(train, K_MAX)
    fit_s = best_seconds(lambda: greconD(train, K_MAX))
    print(f"\nfit: GreConD to k = {K_MAX}, compiled: {fit_s:.3f} s ({factors.n_factors} factors, "
          f"coverage {factors.coverage[-1]:.3f} of {factors.n_ones} ones)")
    with threadpool_limits(limits=1):
        started = time.perf_counter()
        greconD_numpy(train, 20)
        first_s = time.perf_counter() - started
        started = time.perf_counter()
        reference = greconD_numpy(train, K_MAX)
        reference_s = time.perf_counter() - started
    same = (np.array_equal(reference.Z, factors.Z) and np.array_equal(reference.U, factors.U)
            and np.array_equal(reference.covered, factors.covered))
    print(f"     numpy reference: {reference_s:.1f} s (identical factors: {same}; its first 20 factors: {first_s:.1f} s); "
          f"ratio {reference_s / fit_s:,.0f}x")

    transfer_s = best_seconds(lambda: bmf_transfer_costs(train, factors, test, KS))
    with threadpool_limits(limits=1):
        reference_transfer_s = best_seconds(lambda: bmf_transfer_costs_numpy(train, factors, test, KS))
    compiled = bmf_transfer_costs(train, factors, test, KS)
    agree = np.allclose(compiled, bmf_transfer_costs_numpy(train, factors, test, KS), rtol=0, atol=1e-12)
    print(f"\ntransfer: {test.shape[0]} test users, {KS.size} k: compiled {transfer_s * 1e3:.1f} ms, numpy per-k loop "
          f"{reference_transfer_s * 1e3:.0f} ms, ratio {reference_transfer_s / transfer_s:.0f}x (equal: {agree})")
    print("  cost per test user by k: " + ", ".join(f"{k}: {c:.2f}" for k, c in zip(KS, compiled)))

    per_fold = fit_s + transfer_s
    print(f"\nproject 004-d (5 folds x 2 datasets) from the planted matrix: 10 x {per_fold:.2f} s = {10 * per_fold:.1f} s "
          f"compiled; numpy reference ~{10 * (reference_s + reference_transfer_s) / 60:.0f} min")
    if not RBAC.is_dir():
        print(f"  ({RBAC} not found: the real substitutes are skipped)")
        return
    total = 0.0
    for name, users in (("americas_small", 3000), ("apj", None)):
        data_rng = np.random.default_rng([4, 5, len(name)])
        matrix = edges_matrix(name, users, data_rng)
        seconds, costs, found = five_folds(matrix, data_rng)
        total += seconds
        mean = costs.mean(axis=0)
        print(f"  {name} {matrix.shape} density {matrix.mean():.3f}: 5 folds in {seconds:.2f} s; mean transfer cost by "
              f"k: " + ", ".join(f"{k}: {c:.2f}" for k, c in zip(KS, mean))
              + f"; argmin k = {KS[np.argmin(mean)]}; factors per fold {found}")
    print(f"  real substitutes, 5 folds x 2 datasets: {total:.2f} s")


if __name__ == "__main__":
    main()
