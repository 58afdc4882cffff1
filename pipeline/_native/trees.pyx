# cython: language_level=3
"""The block classifier's arithmetic: the tree ensembles of
:class:`pipeline.steps.blocks.tree_ensemble.TreeEnsemble` (complete binary trees, walked one level per step, the
leaf values summed as numpy sums) and the sparse part of
:meth:`pipeline.steps.blocks.model.BlockModel.linear`. tests/test_block_fixtures.py pins the probabilities."""

cimport cython
from libc.stdlib cimport free, malloc

import numpy as np

from pipeline._native.common cimport pairwise

include "version.pxi"


def pairwise_sum(const double[::1] values):
    """``values.sum()`` as numpy adds it (pinned against numpy by the tests)."""
    return 0.0 + pairwise(&values[0], values.shape[0]) if values.shape[0] else 0.0


def pairwise_sum32(const float[::1] values):
    """``values.sum()`` of float32 as numpy adds it (a float32 result)."""
    return np.float32(0.0 + pairwise(&values[0], values.shape[0]) if values.shape[0] else 0.0)


@cython.boundscheck(False)
@cython.wraparound(False)
def tree_raw(const double[:, ::1] D, const Py_ssize_t[:, ::1] feature, const double[:, ::1] cut,
             const double[:, ::1] value, double baseline, int depth):
    """model.TreeEnsemble.raw: per row of ``D``, the baseline plus the leaf values it reaches in every
    tree (the trees one level per step, children of k at 2k+1 and 2k+2), summed as numpy sums them."""
    cdef Py_ssize_t n = D.shape[0], n_trees = feature.shape[0], width = feature.shape[1]
    cdef Py_ssize_t r, t, node, level, n0, n1, n2, n3
    cdef const Py_ssize_t *f
    cdef const double *c
    raw_arr = np.empty(n)
    cdef double[::1] raw = raw_arr
    cdef double *reached = <double *> malloc(max(n * n_trees, 1) * sizeof(double))  # row-major: row, tree
    if reached == NULL:
        raise MemoryError()
    with nogil:
        for t in range(n_trees):  # one tree over all rows (its nodes stay in cache), four walks at a time
            f, c = &feature[t, 0], &cut[t, 0]
            r = 0
            while r + 4 <= n:
                n0 = n1 = n2 = n3 = 0
                for level in range(depth):
                    n0 = 2 * n0 + 1 + (D[r, f[n0]] > c[n0])
                    n1 = 2 * n1 + 1 + (D[r + 1, f[n1]] > c[n1])
                    n2 = 2 * n2 + 1 + (D[r + 2, f[n2]] > c[n2])
                    n3 = 2 * n3 + 1 + (D[r + 3, f[n3]] > c[n3])
                reached[r * n_trees + t] = value[t, n0 - width]
                reached[(r + 1) * n_trees + t] = value[t, n1 - width]
                reached[(r + 2) * n_trees + t] = value[t, n2 - width]
                reached[(r + 3) * n_trees + t] = value[t, n3 - width]
                r += 4
            while r < n:
                node = 0
                for level in range(depth):
                    node = 2 * node + 1 + (D[r, f[node]] > c[node])
                reached[r * n_trees + t] = value[t, node - width]
                r += 1
        for r in range(n):
            raw[r] = baseline + (0.0 + pairwise(reached + r * n_trees, n_trees))
    free(reached)
    return raw_arr


@cython.boundscheck(False)
@cython.wraparound(False)
def add_hashed(float[::1] out, list hashed, const float[::1] weights):
    """model.BlockModel.linear's sparse part: adds to ``out[i]`` the hashed weights of row i (summed in
    float64 in order, as np.bincount sums them, then rounded to float32)."""
    cdef Py_ssize_t i, index
    cdef double s
    cdef list row
    for i in range(len(hashed)):
        row = hashed[i]
        s = 0.0
        for index in row:
            s += weights[index]
        out[i] = out[i] + <float>s
