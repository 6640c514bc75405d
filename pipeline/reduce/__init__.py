"""Reducers: pure functions from a cube to choices of k, summaries and the partition at k."""
