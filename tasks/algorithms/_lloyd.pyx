# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""k-means++ seeding and Lloyd iterations over every restart, compiled ahead of time (see kmeans.py).

Every sum runs in index order and nothing is reassociated (no -ffast-math), so the results are the same
bits on every machine and for any number of workers.
"""

from libc.stdint cimport int64_t
from libc.stdlib cimport free, malloc
from libc.math cimport INFINITY


cdef inline double squared_distance(const double[:, ::1] X, Py_ssize_t i, const double* center) noexcept nogil:
    cdef double total = 0.0, diff
    cdef Py_ssize_t f
    for f in range(X.shape[1]):
        diff = X[i, f] - center[f]
        total += diff * diff
    return total


def plusplus(const double[:, ::1] X, const int64_t[::1] first, const double[:, ::1] u, double[:, :, ::1] seeds):
    """Fill ``seeds`` (n_init, k, d): restart r starts at ``X[first[r]]``; its j-th centre is the first
    point whose cumulative squared distance to the chosen centres exceeds ``u[j - 1, r]`` of the total."""
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], n_init = seeds.shape[0], k = seeds.shape[1]
    cdef Py_ssize_t r, i, j, f, pick
    cdef double threshold, cumulative, total, distance
    cdef double* closest = <double*> malloc(max(n, 1) * sizeof(double))
    if closest == NULL:
        raise MemoryError()
    with nogil:
        for r in range(n_init):
            for f in range(d):
                seeds[r, 0, f] = X[first[r], f]
            for i in range(n):
                closest[i] = squared_distance(X, i, &seeds[r, 0, 0])
            for j in range(1, k):
                total = 0.0
                for i in range(n):
                    total += closest[i]
                threshold = u[j - 1, r] * total
                pick, cumulative = n - 1, 0.0
                for i in range(n):
                    cumulative += closest[i]
                    if cumulative > threshold:
                        pick = i
                        break
                for f in range(d):
                    seeds[r, j, f] = X[pick, f]
                for i in range(n):
                    distance = squared_distance(X, i, &seeds[r, j, 0])
                    if distance < closest[i]:
                        closest[i] = distance
    free(closest)


cdef double assign(const double[:, ::1] X, const double* centers, Py_ssize_t k, int64_t* labels) noexcept nogil:
    """Nearest centre of every point (the lowest index on ties) into ``labels``; returns the inertia."""
    cdef Py_ssize_t i, c, chosen, d = X.shape[1]
    cdef double inertia = 0.0, best, distance
    for i in range(X.shape[0]):
        best, chosen = INFINITY, 0
        for c in range(k):
            distance = squared_distance(X, i, centers + c * d)
            if distance < best:
                best, chosen = distance, c
        labels[i] = chosen
        inertia += best
    return inertia


def lloyd_restarts(const double[:, ::1] X, double[:, :, ::1] centers, int64_t[:, ::1] labels, double[::1] inertia,
                   Py_ssize_t max_iter, double threshold):
    """Lloyd iterations of every restart in place: ``centers`` (n_init, k, d), ``labels`` (n_init, n)."""
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], k = centers.shape[1]
    cdef Py_ssize_t r, i, c, f, iteration
    cdef double shift, updated, step
    cdef double* sums = <double*> malloc(max(k * d, 1) * sizeof(double))
    cdef double* counts = <double*> malloc(max(k, 1) * sizeof(double))
    if sums == NULL or counts == NULL:
        free(sums)
        free(counts)
        raise MemoryError()
    with nogil:
        for r in range(centers.shape[0]):
            for iteration in range(max_iter):
                assign(X, &centers[r, 0, 0], k, &labels[r, 0])
                for c in range(k * d):
                    sums[c] = 0.0
                for c in range(k):
                    counts[c] = 0.0
                for i in range(n):
                    c = labels[r, i]
                    counts[c] += 1.0
                    for f in range(d):
                        sums[c * d + f] += X[i, f]
                shift = 0.0
                for c in range(k):
                    if counts[c] > 0:
                        for f in range(d):
                            updated = sums[c * d + f] / counts[c]
                            step = updated - centers[r, c, f]
                            shift += step * step
                            centers[r, c, f] = updated
                if shift <= threshold:
                    break
            inertia[r] = assign(X, &centers[r, 0, 0], k, &labels[r, 0])
    free(sums)
    free(counts)
