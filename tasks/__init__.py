"""Pure kernels of ordercube: data generators, clustering algorithms, predictors and criteria.

Nothing in this package imports Dask, zarr or xarray or touches files; every function takes
arrays plus an explicit :class:`numpy.random.Generator` and returns arrays or small dataclasses.
"""
