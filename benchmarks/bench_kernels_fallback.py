"""The compiled kernels (Cython) against their numba twins, the fallback of an install without a C compiler.

Measured in this run, one thread (best of 3 for a process, of 20 for a kernel):

  start   a fresh process importing the k-means module and fitting once (``python -c``), compiled against
          the twins (``ORDERCUBE_PURE_KERNELS=1``) loading from numba's cache, and the twins compiling anew
          (an empty ``NUMBA_CACHE_DIR``: the first run on a machine);
  kernel  each kernel on one input in a warm process: k-means++ seeding and Lloyd (10 restarts), deterministic
          annealing, the matched weights of 2,000 confusion tables; and the results compared bit for bit;
  sweep   ``ordercube run`` of a small k-means and annealing grid with ``--workers 0``, compiled against twins.

    python benchmarks/bench_kernels_fallback.py
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import yaml
from timing import best_seconds as best_of

REPO = Path(__file__).resolve().parents[1]
REPEATS = 20  # milliseconds each: the best of many, so that another process's time slice does not count
START = ("import time; t = time.perf_counter(); import numpy as np; from ordercube.tasks.algorithms.kmeans import kmeans; "
         "from ordercube.tasks.assignment import matched_weight; kmeans(np.eye(4), 2, np.random.default_rng(0), "
         "n_init=1); matched_weight(np.eye(3, dtype=np.int64)); print(time.perf_counter() - t)")
GRID = {"name": "bench_fallback", "seed": 3, "n": [100, 300], "k": {"from": 2, "to": 6}, "resamples": 5,
        "datasets": [{"name": "gauss", "kind": "lange_gaussians3"}],
        "methods": [{"name": "km", "algorithm": "kmeans", "params": {"n_init": 10}, "predictor": "nearest_centroid",
                     "criteria": ["lange", "pairwise"]},
                    {"name": "da", "algorithm": "deterministic_annealing", "predictor": "nearest_centroid",
                     "criteria": ["lange"]}]}


def fresh(code: str, env: dict[str, str], repeats: int = 3) -> float:
    return min(float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                                    cwd=REPO, env={**os.environ, **env}).stdout.splitlines()[-1]) for _ in range(repeats))


def best_seconds(function) -> float:
    return best_of(function, REPEATS)


def kernels(name: str):
    return importlib.import_module(name), importlib.import_module(name + "_numba")


def kernel_times() -> list[tuple[str, float, float]]:
    """(what, compiled seconds, twin seconds) per kernel, checking that both give the same bits."""
    rows = []
    rng = np.random.default_rng(0)
    X = np.ascontiguousarray(rng.normal(size=(500, 4)) + 5.0 * rng.integers(4, size=(500, 1)))
    k, n_init = 8, 10
    first, u = rng.integers(len(X), size=n_init), rng.random((k - 1, n_init))
    lloyd = kernels("ordercube.tasks.algorithms._lloyd")
    seeds = [np.empty((n_init, k, 4)) for _ in lloyd]
    rows.append(("k-means++ seeding, n 500, k 8, 10 restarts",
                 *(best_seconds(lambda m=m, s=s: m.plusplus(X, first, u, s)) for m, s in zip(lloyd, seeds))))
    assert seeds[0].tobytes() == seeds[1].tobytes()
    fitted = [[seeds[0].copy(), np.empty((n_init, len(X)), dtype=np.int64), np.empty(n_init)] for _ in lloyd]

    def fit(module, state) -> None:
        state[0][:] = seeds[0]
        module.lloyd_restarts(X, *state, 300, 1e-4)

    rows.append(("Lloyd, n 500, k 8, 10 restarts", *(best_seconds(lambda m=m, s=s: fit(m, s)) for m, s in zip(lloyd, fitted))))
    assert all(a.tobytes() == b.tobytes() for a, b in zip(*fitted))

    annealing = kernels("ordercube.tasks.algorithms._annealing")
    noise, out = rng.standard_normal((k, 4)), [np.zeros((k, 4)) for _ in annealing]
    scale = float(np.sqrt(np.var(X, axis=0).sum()))
    start = 2.2 * float(np.linalg.eigvalsh(np.cov(X.T, bias=True))[-1])
    found = []

    def anneal(module, into) -> None:
        found.append(module.anneal(X, k, noise, start, 0.7, 1e-3 * start, 5, 10, 1e-3 * scale, scale, into))

    rows.append(("deterministic annealing, n 500, k 8",
                 *(best_seconds(lambda m=m, o=o: anneal(m, o)) for m, o in zip(annealing, out))))
    assert out[0].tobytes() == out[1].tobytes() and found[0] == found[-1]

    hungarian = kernels("ordercube.tasks._hungarian")
    tables = np.ascontiguousarray(rng.integers(40, size=(2000, 6, 6)), dtype=np.int64)
    weights = [np.empty(len(tables), dtype=np.int64) for _ in hungarian]
    rows.append(("matched weights, 2,000 tables 6 x 6",
                 *(best_seconds(lambda m=m, w=w: m.matched_weights(tables, w)) for m, w in zip(hungarian, weights))))
    assert weights[0].tolist() == weights[1].tolist()
    return rows


def sweep_seconds(folder: Path, pure: str) -> float:
    config = folder / "grid.yaml"
    config.write_text(yaml.safe_dump(GRID, sort_keys=False))
    ordercube = str(Path(sys.executable).with_name("ordercube"))

    def run() -> None:
        subprocess.run([ordercube, "run", str(config), "--out", str(folder / f"cube{pure}.zarr"), "--workers", "0",
                        "--no-progress"], check=True, capture_output=True, env={**os.environ, "ORDERCUBE_PURE_KERNELS": pure})
        subprocess.run(["rm", "-rf", str(folder / f"cube{pure}.zarr")], check=True)

    return best_of(run)


def main() -> None:
    compiled_start = fresh(START, {"ORDERCUBE_PURE_KERNELS": "0"})
    twin_cached = fresh(START, {"ORDERCUBE_PURE_KERNELS": "1"})
    with tempfile.TemporaryDirectory() as cache:
        twin_cold = fresh(START, {"ORDERCUBE_PURE_KERNELS": "1", "NUMBA_CACHE_DIR": cache}, repeats=1)
    print(f"start (import, one k-means fit, one matching): compiled {compiled_start:.3f} s; numba twins from the cache "
          f"{twin_cached:.3f} s ({twin_cached / compiled_start:.1f}x); numba twins compiling {twin_cold:.2f} s "
          f"({twin_cold / compiled_start:.0f}x)")
    print(f"{'kernel':<45} {'compiled ms':>12} {'numba ms':>9} {'ratio':>6}")
    for what, compiled, twin in kernel_times():
        print(f"{what:<45} {compiled * 1e3:>12.3f} {twin * 1e3:>9.3f} {twin / compiled:>5.2f}x")
    with tempfile.TemporaryDirectory() as folder:
        compiled, twin = sweep_seconds(Path(folder), "0"), sweep_seconds(Path(folder), "1")
    print(f"sweep of {len(GRID['n']) * 5 * 2} cells x {GRID['resamples']} trials, --workers 0: compiled {compiled:.2f} s, "
          f"numba twins {twin:.2f} s ({twin / compiled:.2f}x)")


if __name__ == "__main__":
    main()
