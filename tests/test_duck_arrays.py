"""xarray's check for dask arrays without importing dask.array (:mod:`ordercube.pipeline.system.duck_arrays`): each
case runs in a fresh interpreter, where nothing has imported dask.array yet. That a whole report never imports it:
``tests/test_run_report.py``."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def run_fresh(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_plain_arrays_build_variables_without_importing_dask_array_and_dask_arrays_are_still_seen_as_such():
    out = run_fresh("""
        import sys
        import numpy as np
        import xarray as xr
        from ordercube.pipeline.system.duck_arrays import defer_dask_array_import

        defer_dask_array_import()
        plain = xr.DataArray(np.arange(6.0).reshape(2, 3), dims=("a", "b")) + 1
        masked = xr.Variable("x", np.ma.masked_array([1.0, 2.0], mask=[0, 1]))  # the check's other branch
        print("before", "dask.array" in sys.modules, float(plain.sum()), np.isnan(masked.values[1]))
        import dask.array as da

        lazy = xr.Variable("x", da.ones(4, chunks=2))
        print("after", lazy.chunks, type(lazy.data).__module__.split(".")[0], float((lazy * 2).sum().compute()))
        from xarray.namedarray.pycompat import mod_version
        import dask
        print("version", str(mod_version("dask")) == dask.__version__)
    """)
    assert out.splitlines() == ["before False 21.0 True", "after ((2, 2),) dask 8.0", "version True"]


def test_a_record_xarray_made_already_is_left_as_it_is():
    out = run_fresh("""
        import sys
        import dask.array as da
        import numpy as np
        import xarray as xr
        from xarray.namedarray import pycompat
        from ordercube.pipeline.system.duck_arrays import defer_dask_array_import

        xr.Variable("x", np.zeros(2))  # xarray records dask itself
        record = pycompat._cached_duck_array_modules["dask"]
        defer_dask_array_import()
        print(pycompat._cached_duck_array_modules["dask"] is record, xr.Variable("x", da.ones(2)).chunks)
    """)
    assert out.split() == ["True", "((2,),)"]
