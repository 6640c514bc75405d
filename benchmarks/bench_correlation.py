"""The compiled Gibbs sampler of correlation clustering (``ordercube.tasks.algorithms.correlation``) against its plain
reference, on what experiment 004-e asks of one half of one trial: a signed graph of 450 nodes (3 clusters of
150, q = 0.3, p = 0.8), k = 1..10, 10 restarts each.

The reference takes minutes for all of it, so it runs ``REFERENCE_RESTARTS`` restarts per k and its time is
scaled to 10; the compiled kernel runs the same calls as well, to show that both give the same labels.

    python benchmarks/bench_correlation.py
"""

from __future__ import annotations

import time

import numpy as np

from ordercube.tasks.algorithms.correlation import correlation_gibbs_restarts, gibbs_reference
from ordercube.tasks.datasets.graphs import signed_graph

SIZES = (150, 150, 150)
Q, P = 0.3, 0.8
KS = range(1, 11)
RESTARTS = 10
REFERENCE_RESTARTS = 2


def sweep(function, W: np.ndarray, restarts: int) -> tuple[float, list]:
    """Seconds for k = 1..10, each from its own Generator (the same for both implementations)."""
    results = []
    started = time.perf_counter()
    for k in KS:
        results.append(function(W, k, np.random.default_rng([4, k]), restarts=restarts))
    return time.perf_counter() - started, results


def main() -> None:
    W, _ = signed_graph(SIZES, Q, P, np.random.default_rng([4, 0]))
    correlation_gibbs_restarts(W[:10, :10], 2, np.random.default_rng(0), restarts=1)  # load or compile the kernel

    compiled = min(sweep(correlation_gibbs_restarts, W, RESTARTS)[0] for _ in range(3))
    runs = len(KS) * RESTARTS
    print(f"graph: n = {W.shape[0]}, clusters {SIZES}, q = {Q}, p = {P}; k = {KS.start}..{KS.stop - 1}, "
          f"{RESTARTS} restarts each ({runs} runs)")
    print(f"compiled:  {compiled:8.3f} s for the sweep, {compiled / runs * 1e3:.2f} ms per (k, restart) (best of 3)")

    compiled_few, fast = sweep(correlation_gibbs_restarts, W, REFERENCE_RESTARTS)
    reference_few, slow = sweep(gibbs_reference, W, REFERENCE_RESTARTS)
    scaled = reference_few * RESTARTS / REFERENCE_RESTARTS
    identical = all(np.array_equal(a.labels, b.labels) and np.array_equal(a.restart_costs, b.restart_costs)
                    for a, b in zip(fast, slow))
    print(f"reference: {reference_few:8.1f} s for {REFERENCE_RESTARTS} restarts per k, scaled to {RESTARTS}: "
          f"{scaled:.1f} s, {scaled / runs:.2f} s per (k, restart)")
    print(f"ratio:     {scaled / compiled:8.0f} x (on the {REFERENCE_RESTARTS}-restart calls: "
          f"{reference_few / compiled_few:.0f} x); same labels and costs on those calls: {identical}")
    print("best cost and k_effective per k: "
          + ", ".join(f"{k}: {r.cost:.0f}/{r.k_effective}" for k, r in zip(KS, sweep(correlation_gibbs_restarts, W,
                                                                                      RESTARTS)[1])))


if __name__ == "__main__":
    main()
