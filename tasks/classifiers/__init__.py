"""Classifiers whose order k is selected with labels (Daudin & Mary-Huard 2008): every k of a trial from one fit.

Each kernel takes a learning set (and, where there is one, a test set) as arrays and returns, per k,
the error rates and penalties that the supervised criteria store: pure numpy/numba, no IO, no Dask.
"""
