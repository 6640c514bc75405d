# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The weight of a maximum-weight perfect matching of square integer tables, compiled ahead of time
(see assignment.py)."""

from libc.stdint cimport int64_t
from libc.stdlib cimport free, malloc


cdef int64_t matched(const int64_t* table, Py_ssize_t k, int64_t* work) noexcept nogil:
    """Shortest augmenting paths with row and column potentials (Kuhn-Munkres, O(k^3)), on integers.

    Minimises ``-table``: every potential, reduced cost and slack stays an integer, so the result is
    exact. ``table`` is k x k in row order. Row and column indices are 1-based inside, index 0 being the
    free root of each search; ``work`` holds 6 (k + 1) integers.
    """
    cdef Py_ssize_t row, column, j, tree_row, next_column, before
    cdef int64_t unbounded = 0x7FFFFFFFFFFFFFFF // 4, step, reduced, total
    cdef int64_t* row_potential = work
    cdef int64_t* column_potential = work + (k + 1)
    cdef int64_t* row_of_column = work + 2 * (k + 1)  # 0: unmatched
    cdef int64_t* previous_column = work + 3 * (k + 1)
    cdef int64_t* slack = work + 4 * (k + 1)
    cdef int64_t* visited = work + 5 * (k + 1)
    for j in range(k + 1):
        row_potential[j] = 0
        column_potential[j] = 0
        row_of_column[j] = 0
        previous_column[j] = 0
    for row in range(1, k + 1):
        row_of_column[0] = row
        column = 0
        for j in range(k + 1):
            slack[j] = unbounded
            visited[j] = 0
        while True:  # grow the tree of tight edges until it reaches an unmatched column
            visited[column] = 1
            tree_row = row_of_column[column]
            step, next_column = unbounded, 0
            for j in range(1, k + 1):
                if not visited[j]:
                    reduced = -table[(tree_row - 1) * k + j - 1] - row_potential[tree_row] - column_potential[j]
                    if reduced < slack[j]:
                        slack[j] = reduced
                        previous_column[j] = column
                    if slack[j] < step:
                        step, next_column = slack[j], j
            for j in range(k + 1):
                if visited[j]:
                    row_potential[row_of_column[j]] += step
                    column_potential[j] -= step
                else:
                    slack[j] -= step
            column = next_column
            if row_of_column[column] == 0:
                break
        while column != 0:  # flip the augmenting path
            before = previous_column[column]
            row_of_column[column] = row_of_column[before]
            column = before
    total = 0
    for j in range(1, k + 1):
        total += table[(row_of_column[j] - 1) * k + j - 1]
    return total


def matched_weights(const int64_t[:, :, ::1] tables, int64_t[::1] weights):
    """The matched weight of each of ``tables`` (draws, k, k) into ``weights``."""
    cdef Py_ssize_t i, k = tables.shape[1]
    cdef int64_t* work = <int64_t*> malloc(6 * (k + 1) * sizeof(int64_t))
    if work == NULL:
        raise MemoryError()
    with nogil:
        for i in range(tables.shape[0]):
            weights[i] = matched(&tables[i, 0, 0], k, work) if k > 0 else 0
    free(work)
