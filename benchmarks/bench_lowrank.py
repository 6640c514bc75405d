"""Frank et al.'s (2011) Sec. 4 kernels against their literal loops: eq. (7) for every rank, and OP-CV for every rank.

1. ``svd_transfer_costs`` (one nearest-neighbour pass, every k from prefix sums) against nearest neighbours by
   brute force or by ``scipy.spatial.cKDTree`` followed by one reconstruction ``X1[nn] V_k V_kᵀ`` per k, on the
   halves (2048 + 2048 rows) of the non-overlapping 8 x 8 tiling of a generated smooth 512 x 512 image with
   Gaussian noise (sd 20 on 0-255), k = 1..64.
2. ``opcv_errors`` (one SVD of D per permutation, every k from prefix sums) against ``numpy.linalg.pinv`` of the
   explicitly truncated D per k, on a 500 x 347 Boolean matrix (an OR of random roles with 5 % of its bits
   flipped), 20 permutations, k = 0..100.

Prints the best of ``--repeats`` wall times, the ratio loop / kernel (> 1: the kernel is faster) and the largest
relative difference of the two results. BLAS runs on ``--threads`` threads (1 by default, as a sweep's workers do).
Never asserts.

    python benchmarks/bench_lowrank.py [--repeats 3] [--sigma 20] [--permutations 20] [--threads 1]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy.spatial import cKDTree
from threadpoolctl import threadpool_limits

from ordercube.tasks.algorithms.lowrank import opcv_errors, svd_transfer_costs
from ordercube.tasks.datasets.patches import tile_patches


def best_seconds(function, repeats: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeats):
        started = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - started)
    return min(times), result


def smooth_image(rng: np.random.Generator, side: int = 512) -> np.ndarray:
    """A camera-like grey image: a shaded background, a few discs and soft blobs, a striped patch; 0-255."""
    y, x = np.mgrid[0:side, 0:side] / side
    image = 90 + 80 * x + 30 * np.sin(6 * y)
    for _ in range(6):
        cy, cx, radius = rng.uniform(0.15, 0.85), rng.uniform(0.15, 0.85), rng.uniform(0.05, 0.15)
        image[(y - cy) ** 2 + (x - cx) ** 2 < radius ** 2] = rng.uniform(10, 245)
        image += rng.uniform(-60, 60) * np.exp(-((y - cy) ** 2 + (x - cx) ** 2) / (2 * (2 * radius) ** 2))
    stripes = (y > 0.6) & (y < 0.8) & (x > 0.1) & (x < 0.4)
    image[stripes] += 40 * np.sign(np.sin(80 * x[stripes]))
    return np.clip(image, 0, 255)


def loop_transfer_costs(X1: np.ndarray, X2: np.ndarray, ks: np.ndarray, nearest: str) -> np.ndarray:
    Vt = np.linalg.svd(X1, full_matrices=False)[2]
    if nearest == "kdtree":
        nn = cKDTree(X1).query(X2, k=1)[1]
    else:
        d2 = (X2 * X2).sum(1)[:, None] - 2 * X2 @ X1.T + (X1 * X1).sum(1)[None, :]
        nn = d2.argmin(axis=1)
    return np.array([((X2 - X1[nn] @ Vt[:k].T @ Vt[:k]) ** 2).sum(axis=1).mean() for k in ks])


def loop_opcv(X: np.ndarray, ks: np.ndarray, rng: np.random.Generator, permutations: int) -> np.ndarray:
    n, d = X.shape
    p, q = n // 2, d // 2
    errors = np.empty((permutations, ks.size))
    for t in range(permutations):
        Y = X[rng.permutation(n)][:, rng.permutation(d)]
        A, B, C, D = Y[:p, :q], Y[:p, q:], Y[p:, :q], Y[p:, q:]
        U, s, Vt = np.linalg.svd(D, full_matrices=False)
        for column, k in enumerate(ks):
            truncated = (U[:, :k] * s[:k]) @ Vt[:k]
            errors[t, column] = ((A - B @ np.linalg.pinv(truncated, rcond=1e-10) @ C) ** 2).sum()
    return errors


def relative_difference(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.nanmax(np.abs(a - b) / np.maximum(np.abs(b), 1e-300)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sigma", type=float, default=20.0)
    parser.add_argument("--permutations", type=int, default=20)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    with threadpool_limits(limits=args.threads):
        run(args)


def run(args: argparse.Namespace) -> None:
    rng = np.random.default_rng([4, 2024])

    clean = smooth_image(rng)
    X = tile_patches(clean + rng.normal(0, args.sigma, clean.shape), 8)
    order = rng.permutation(X.shape[0])
    X1, X2 = X[order[:2048]], X[order[2048:]]
    ks = np.arange(1, 65)
    print(f"eq. (7): halves {X1.shape} + {X2.shape}, k = 1..64, sigma = {args.sigma}; best of {args.repeats}")
    ours, costs = best_seconds(lambda: svd_transfer_costs(X1, X2, ks), args.repeats)
    print(f"  {'svd_transfer_costs':<36} {ours:8.3f} s   k-hat = {ks[np.argmin(costs)]}")
    for nearest in ("brute", "kdtree"):
        seconds, reference = best_seconds(lambda nearest=nearest: loop_transfer_costs(X1, X2, ks, nearest), args.repeats)
        print(f"  {'NN ' + nearest + ' + reconstruction per k':<36} {seconds:8.3f} s   ratio {seconds / ours:6.1f}   "
              f"max rel diff {relative_difference(costs, reference):.1e}", flush=True)

    roles = rng.random((500, 40)) < 0.08
    permissions = rng.random((40, 347)) < 0.06
    B = ((roles.astype(np.int64) @ permissions) > 0).astype(np.float64)
    flips = rng.random(B.shape) < 0.05
    B[flips] = 1 - B[flips]
    ks = np.arange(0, 101)
    print(f"OP-CV: {B.shape} Boolean (density {B.mean():.2f}), {args.permutations} permutations, k = 0..100, fraction 1/2")
    ours, errors = best_seconds(lambda: opcv_errors(B, ks, np.random.default_rng(7), permutations=args.permutations),
                                args.repeats)
    print(f"  {'opcv_errors':<36} {ours:8.3f} s   k-hat = {ks[np.argmin(np.median(errors, axis=0))]}")
    seconds, reference = best_seconds(lambda: loop_opcv(B, ks, np.random.default_rng(7), args.permutations), 1)
    print(f"  {'pinv of truncated D per k':<36} {seconds:8.3f} s   ratio {seconds / ours:6.1f}   "
          f"max rel diff {relative_difference(errors, reference):.1e}")


if __name__ == "__main__":
    main()
