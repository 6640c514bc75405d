"""Full-covariance Gaussian mixture fits, ordercube's compiled EM against scikit-learn, same data, same run.

The fits of Frank et al.'s (2011) Sec. 3 experiment (``configs/frank_gmm.yaml``): 2-D
points from three equal-weight isotropic Gaussians at the corners of an equilateral triangle of side 1, sd
``r`` times the circumradius (``--r``: 0.3, easy; 0.6, where BIC starts to choose k < 3; 1.5, one blob),
n = 250 (the MTC half) and 500 (the whole trial), ``n_init=5``. ``ordercube.tasks.algorithms.mixture_em.fit_mixture`` against
``sklearn.mixture.GaussianMixture(n_components=k, n_init=5, covariance_type='full')``, both with every
thread pool (BLAS and OpenMP) held to one thread. Figures: best of ``--repeats`` runs, milliseconds per fit
(all ``n_init`` restarts, k-means initialisations included), and the ratio scikit-learn / ordercube
(> 1: ordercube is faster). The projection of ``--fits`` fits on ``--cores`` cores interpolates the
measured times linearly over k = 1..10 and averages them over r, n and k. Nothing is asserted.

    python benchmarks/bench_mixture_em.py [--ks 1 3 6 10] [--r 0.3 0.6 1.5] [--repeats 3] [--fits 60000] [--cores 2]
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.mixture import GaussianMixture
from threadpoolctl import threadpool_limits

from ordercube.tasks.algorithms.mixture_em import fit_mixture
from ordercube.tasks.datasets.synthetic import gaussian_mixture
from timing import best_seconds

NS = (250, 500)
N_INIT = 5
TRIANGLE = [[0.0, 0.0], [1.0, 0.0], [0.5, np.sqrt(3.0) / 2.0]]



def measure(r: float, ks: list[int], repeats: int) -> tuple[dict[int, list[float]], dict[int, list[float]]]:
    """Milliseconds per fit, ordercube's and scikit-learn's, per n (one entry per k), printed as they come."""
    sd = r / np.sqrt(3.0)
    print(f"r = {r}: three Gaussians of sd {r} x circumradius")
    print(f"{'n':>5} {'k':>3} | {'ordercube':>10} {'sklearn':>10} | {'ratio':>6}")
    ours_ms: dict[int, list[float]] = {}
    theirs_ms: dict[int, list[float]] = {}
    for n in NS:
        X = gaussian_mixture(n, np.random.default_rng([4, n]), centers=TRIANGLE, std=sd)[0]
        for k in ks:
            ours = best_seconds(lambda X=X, k=k: fit_mixture(X, k, np.random.default_rng(k), n_init=N_INIT), repeats) * 1e3
            model = GaussianMixture(n_components=k, n_init=N_INIT, covariance_type="full", random_state=k)
            theirs = best_seconds(lambda X=X, model=model: model.fit(X), repeats) * 1e3
            ours_ms.setdefault(n, []).append(ours)
            theirs_ms.setdefault(n, []).append(theirs)
            print(f"{n:>5} {k:>3} | {ours:>10.2f} {theirs:>10.1f} | {theirs / ours:>6.1f}", flush=True)
    return ours_ms, theirs_ms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ks", type=int, nargs="+", default=[1, 3, 6, 10])
    parser.add_argument("--r", type=float, nargs="+", default=[0.3, 0.6, 1.5])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--fits", type=int, default=60_000)
    parser.add_argument("--cores", type=int, default=2)
    args = parser.parse_args()
    warnings.simplefilter("ignore", ConvergenceWarning)  # scikit-learn's, on the occasional slow restart
    fit_mixture(np.arange(8.0).reshape(4, 2), 2, np.random.default_rng(0))  # compile outside the timings
    print(f"2-D, n_init = {N_INIT}, one thread, best of {args.repeats}; ms per fit (all restarts)")
    every_k = np.arange(1, 11)
    projected: dict[str, list[float]] = {"ordercube": [], "sklearn": []}
    with threadpool_limits(limits=1):
        for r in args.r:
            for name, measured in zip(projected, measure(r, args.ks, args.repeats)):
                projected[name].append(float(np.mean([np.interp(every_k, args.ks, measured[n]) for n in NS])))
    for name, mean_ms in projected.items():
        minutes = args.fits * np.mean(mean_ms) / 1e3 / args.cores / 60
        print(f"{args.fits} fits (n in {NS}, k = 1..10, r in {tuple(args.r)}) on {args.cores} cores, {name}: "
              f"{np.mean(mean_ms):.2f} ms per fit, {minutes:.1f} min")


if __name__ == "__main__":
    main()
