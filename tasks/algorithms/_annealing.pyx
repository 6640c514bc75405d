# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Deterministic annealing of the k-means objective, compiled ahead of time (see annealing.py).

Every sum runs in index order and nothing is reassociated (no -ffast-math), so the results are the same
bits on every machine and for any number of workers.
"""

from libc.math cimport exp, fabs, log, sqrt
from libc.stdlib cimport free, malloc


cdef Py_ssize_t fixed_point(const double[:, ::1] X, double* centers, double* masses, Py_ssize_t m, double temperature,
                        Py_ssize_t max_iter, double tol, double* logits, double* sums, double* weight) noexcept nogil:
    """Iterate p(c|x) ∝ p_c exp(-||x - y_c||² / T), y_c = E[x | c], p_c = E[p(c|x)] at one temperature until no
    centre coordinate moves by more than ``tol``; returns the number of iterations."""
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], i, c, f, iteration
    cdef double largest, total, diff, distance, p, shift, updated, inverse = 1.0 / temperature
    cdef double* log_masses = logits + m  # the caller's logits hold 2m doubles: m for the point, m for the log masses
    for iteration in range(max_iter):
        for c in range(m * d):
            sums[c] = 0.0
        for c in range(m):
            weight[c] = 0.0
            log_masses[c] = log(masses[c])
        for i in range(n):
            largest = -1e308
            for c in range(m):
                distance = 0.0
                for f in range(d):
                    diff = X[i, f] - centers[c * d + f]
                    distance += diff * diff
                logits[c] = log_masses[c] - distance * inverse
                if logits[c] > largest:
                    largest = logits[c]
            total = 0.0
            for c in range(m):  # exp(-40) < 1e-17: a share that adds nothing to a sum of at least 1
                logits[c] = exp(logits[c] - largest) if logits[c] - largest > -40.0 else 0.0
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
                    diff = fabs(updated - centers[c * d + f])
                    if diff > shift:
                        shift = diff
                    centers[c * d + f] = updated
        if shift <= tol:
            return iteration + 1
    return max_iter


def anneal(const double[:, ::1] X, Py_ssize_t k, const double[:, ::1] noise, double start, double cooling,
           double final, Py_ssize_t settle, Py_ssize_t max_iter, double tol, double scale, double[:, ::1] out):
    """Anneal from one centre at the data mean (temperature ``start``) down to ``final``, splitting clusters one
    phase transition at a time, and write the centres into ``out`` (k, d). Returns (clusters found, fixed-point
    iterations spent). ``noise`` (k, d) gives the directions of the twins' perturbations; once k clusters exist
    the annealing goes on for ``settle`` more temperatures and stops."""
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], m = 1, twins, c, f, j, best, found, after = 0, iterations = 0
    cdef double temperature = start, gap, diff, merged_mass
    cdef double* centers = <double*> malloc(2 * k * d * sizeof(double))
    cdef double* masses = <double*> malloc(2 * k * sizeof(double))
    cdef double* logits = <double*> malloc(4 * k * sizeof(double))
    cdef double* sums = <double*> malloc(2 * k * d * sizeof(double))
    cdef double* weight = <double*> malloc(2 * k * sizeof(double))
    cdef double* gaps = <double*> malloc(k * sizeof(double))
    cdef int* split = <int*> malloc(k * sizeof(int))
    if centers == NULL or masses == NULL or logits == NULL or sums == NULL or weight == NULL or gaps == NULL \
            or split == NULL:
        free(centers); free(masses); free(logits); free(sums); free(weight); free(gaps); free(split)
        raise MemoryError()
    with nogil:
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
            iterations += fixed_point(X, centers, masses, m + twins, temperature, max_iter, tol, logits, sums, weight)
            if twins:
                # twins that moved apart (each with the mass of two points at least) went through their phase
                # transition: the widest-apart split first
                for c in range(m):
                    gap = 0.0
                    for f in range(d):
                        diff = centers[c * d + f] - centers[(m + c) * d + f]
                        gap += diff * diff
                    gaps[c] = sqrt(gap)
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
    free(centers); free(masses); free(logits); free(sums); free(weight); free(gaps); free(split)
    return m, iterations
