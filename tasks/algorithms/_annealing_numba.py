"""The numba twin of ``_annealing.pyx``, used when the compiled kernels were not built (see ``tasks/kernels.py``).

The same loops in the same order, every sum in index order, nothing reassociated (numba's default, no
``fastmath``) and the C library's ``exp`` and ``log``, so the same bits as the compiled kernel; the tests
compare the two on random, tied and degenerate inputs.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit
from numpy.typing import NDArray


@njit(cache=True, nogil=True, error_model="numpy")
def _fixed_point(X: NDArray[np.float64], centers: NDArray[np.float64], masses: NDArray[np.float64], m: int,
                 temperature: float, max_iter: int, tol: float, logits: NDArray[np.float64], sums: NDArray[np.float64],
                 weight: NDArray[np.float64]) -> int:
    """``fixed_point`` of ``_annealing.pyx``: the soft assignments, centres and masses at one temperature."""
    n, d = X.shape
    inverse = 1.0 / temperature
    for iteration in range(max_iter):
        for c in range(m * d):
            sums[c] = 0.0
        for c in range(m):
            weight[c] = 0.0
            logits[m + c] = math.log(masses[c])  # the log masses, after the point's m logits
        for i in range(n):
            largest = -1e308
            for c in range(m):
                distance = 0.0
                for f in range(d):
                    diff = X[i, f] - centers[c * d + f]
                    distance += diff * diff
                logits[c] = logits[m + c] - distance * inverse
                if logits[c] > largest:
                    largest = logits[c]
            total = 0.0
            for c in range(m):  # exp(-40) < 1e-17: a share that adds nothing to a sum of at least 1
                logits[c] = math.exp(logits[c] - largest) if logits[c] - largest > -40.0 else 0.0
                total += logits[c]
            for c in range(m):
                p = logits[c] / total
                if p < 1e-12:  # a far cluster: its share of this point does not move anything
                    continue
                weight[c] += p
                for f in range(d):
                    sums[c * d + f] += p * X[i, f]
        shift = 0.0
        for c in range(m):
            masses[c] = weight[c] / n if weight[c] > 1e-300 else 1e-300
            if weight[c] > 1e-300:
                for f in range(d):
                    updated = sums[c * d + f] / weight[c]
                    diff = abs(updated - centers[c * d + f])
                    if diff > shift:
                        shift = diff
                    centers[c * d + f] = updated
        if shift <= tol:
            return iteration + 1
    return max_iter


@njit(cache=True, nogil=True, error_model="numpy")
def _anneal(X: NDArray[np.float64], k: int, noise: NDArray[np.float64], start: float, cooling: float, final: float,
            settle: int, max_iter: int, tol: float, scale: float, out: NDArray[np.float64]
            ) -> tuple[int, int]:
    n, d = X.shape
    m, after, iterations = 1, 0, 0
    temperature = start
    centers = np.empty(2 * k * d)
    masses = np.empty(2 * k)
    logits = np.empty(4 * k)
    sums = np.empty(2 * k * d)
    weight = np.empty(2 * k)
    gaps = np.empty(k)
    split = np.empty(k, dtype=np.int32)
    for f in range(d):
        centers[f] = 0.0
        for j in range(n):
            centers[f] += X[j, f]
        centers[f] /= n
    masses[0] = 1.0
    while temperature > final and after <= settle:
        twins = m if m < k else 0
        for c in range(twins):  # every cluster gets a slightly perturbed twin sharing its mass
            for f in range(d):
                centers[(m + c) * d + f] = centers[c * d + f] + 1e-3 * scale * noise[(c + iterations) % k, f]
            masses[c] /= 2.0
            masses[m + c] = masses[c]
        iterations += _fixed_point(X, centers, masses, m + twins, temperature, max_iter, tol, logits, sums, weight)
        if twins:
            for c in range(m):  # twins that moved apart went through their phase transition: the widest first
                gap = 0.0
                for f in range(d):
                    diff = centers[c * d + f] - centers[(m + c) * d + f]
                    gap += diff * diff
                gaps[c] = math.sqrt(gap)
                split[c] = 0
            found = 0
            while m + found < k:
                best = -1
                for c in range(m):
                    if not split[c] and gaps[c] > 1e-2 * scale and masses[c] * n >= 2.0 \
                            and masses[m + c] * n >= 2.0 and (best < 0 or gaps[c] > gaps[best]):
                        best = c
                if best < 0:
                    break
                split[best] = 1
                found += 1
            for c in range(m):  # twins that stayed together merge back, mass-weighted
                if not split[c]:
                    merged_mass = masses[c] + masses[m + c]
                    for f in range(d):
                        centers[c * d + f] = (centers[c * d + f] * masses[c]
                                              + centers[(m + c) * d + f] * masses[m + c]) / merged_mass
                    masses[c] = merged_mass
            j = m
            for c in range(m):  # the split twins become clusters m, m + 1, ...
                if split[c]:
                    for f in range(d):
                        centers[j * d + f] = centers[(m + c) * d + f]
                    masses[j] = masses[m + c]
                    j += 1
            m = j
        else:
            after += 1
        temperature *= cooling
    for c in range(m):
        for f in range(d):
            out[c, f] = centers[c * d + f]
    return m, iterations


def anneal(X: NDArray[np.float64], k: int, noise: NDArray[np.float64], start: float, cooling: float, final: float,
           settle: int, max_iter: int, tol: float, scale: float, out: NDArray[np.float64]) -> tuple[int, int]:
    """``_annealing.anneal``: anneal from one centre at the data mean down to ``final``, write the centres into
    ``out`` (k, d) and return (clusters found, fixed-point iterations spent)."""
    return _anneal(X, int(k), noise, float(start), float(cooling), float(final), int(settle), int(max_iter),
                   float(tol), float(scale), out)
