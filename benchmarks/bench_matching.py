"""The compiled Hungarian (``ordercube.tasks.assignment``) against ``scipy.optimize.linear_sum_assignment``.

What a sweep pays for label matching, each measured in a fresh process (``python -c``), best of 3:

  import     ``import scipy.optimize`` against importing the compiled module and matching one table, after
             a first k-means fit (as in a k-means sweep);
  per table  matched weight of 2,000 k x k confusion tables of random labelings (k = 2, 5, 10, 20), in a warm
             process: scipy one call per table, ours one call per table and one compiled loop over all
             (the random-labeling baseline's case).

    python benchmarks/bench_matching.py
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

SWEEP_STARTED = ("import time, numpy as np; from ordercube.tasks.algorithms.kmeans import kmeans; "
                 "kmeans(np.eye(4), 2, np.random.default_rng(0), n_init=1); t = time.perf_counter(); ")
IMPORT_SCIPY = SWEEP_STARTED + "import scipy.optimize; print(time.perf_counter() - t)"
LOAD_OURS = SWEEP_STARTED + ("from ordercube.tasks.assignment import matched_weight; matched_weight(np.eye(3, dtype=np.int64)); "
                             "print(time.perf_counter() - t)")


def fresh(code: str) -> float:
    runs = [float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                                 cwd=REPO).stdout) for _ in range(3)]
    return min(runs)


def per_table(k: int, tables: int = 2000) -> tuple[float, float, float]:
    import time

    import numpy as np
    from scipy.optimize import linear_sum_assignment

    from ordercube.tasks.assignment import matched_weight, matched_weights

    rng = np.random.default_rng(k)
    a, b = rng.integers(k, size=(tables, 200)), rng.integers(k, size=(tables, 200))
    stack = np.stack([np.bincount(x * k + y, minlength=k * k).reshape(k, k) for x, y in zip(a, b)])
    matched_weights(stack[:2])

    def best(function) -> float:
        times = []
        for _ in range(3):
            started = time.perf_counter()
            function()
            times.append(time.perf_counter() - started)
        return min(times) / tables * 1e6

    scipy_us = best(lambda: [table[linear_sum_assignment(table, maximize=True)].sum() for table in stack])
    ours_us = best(lambda: [matched_weight(table) for table in stack])
    loop_us = best(lambda: matched_weights(stack))
    return scipy_us, ours_us, loop_us


def main() -> None:
    scipy_import, ours_load = fresh(IMPORT_SCIPY), fresh(LOAD_OURS)
    print(f"import scipy.optimize {scipy_import:.3f} s; compiled matching loaded from numba's cache {ours_load:.4f} s "
          f"({scipy_import / ours_load:.0f}x less)")
    print(f"{'k':>3} {'scipy us/table':>15} {'ours us/table':>14} {'ours, one loop':>15} {'ratio':>7}")
    for k in (2, 5, 10, 20):
        scipy_us, ours_us, loop_us = per_table(k)
        print(f"{k:>3} {scipy_us:>15.2f} {ours_us:>14.2f} {loop_us:>15.2f} {scipy_us / ours_us:>6.1f}x")


if __name__ == "__main__":
    main()
