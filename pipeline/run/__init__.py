"""Running a sweep: the cells a cube lacks computed here or on a Dask cluster, and stored as they arrive."""
