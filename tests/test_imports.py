"""Each command imports what it needs and no more (an import diet): the modules a command loads
are listed, not timed, so the check holds on a loaded machine. What each costs here (``python -X importtime``):
distributed 0.2 s, xarray with pandas 0.3-0.5 s, scipy's hierarchy 0.3 s, numba 0.25 s, matplotlib 0.3 s."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import REPO, STUBS, write_config

# Never needed by a sweep of synthetic data with k-means, its status or its validation.
HEAVY = ("distributed", "xarray", "pandas", "scipy.cluster", "matplotlib", "dask", "sklearn", "bokeh")
KMEANS = {"name": "light", "seed": 5, "n": [60], "k": [2, 3, 4], "resamples": 4,
          "datasets": [{"name": "gauss", "kind": "lange_gaussians3"}],
          "methods": [{"name": "km", "algorithm": "kmeans", "params": {"n_init": 2}, "predictor": "nearest_centroid",
                       "criteria": ["lange", "pairwise"]}]}


def imported_by(*args: str) -> set[str]:
    """The modules loaded by ``ordercube ARGS`` in a fresh interpreter (after the command has run)."""
    code = ("import json, sys\nfrom ordercube.pipeline.cli import main\ncode = main(sys.argv[1:])\n"
            "print(json.dumps({'code': code, 'modules': sorted(sys.modules)}))")
    result = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120,
                            env={**os.environ, "PYTHONPATH": f"{STUBS}:{REPO}"})
    last = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""
    assert last.startswith("{"), result.stderr
    report = json.loads(last)
    assert report["code"] == 0, result.stderr
    return set(report["modules"])


def loaded(modules: set[str], package: str) -> bool:
    return package in modules or any(name.startswith(package + ".") for name in modules)


@pytest.fixture(scope="module")
def kmeans_cube(tmp_path_factory) -> tuple:
    folder = tmp_path_factory.mktemp("imports")
    config = write_config(folder / "light.yaml", **KMEANS)
    return config, folder / "light.zarr", imported_by("run", str(config), "--out", str(folder / "light.zarr"),
                                                       "--no-progress")


def test_a_small_kmeans_sweep_computes_without_dask_xarray_pandas_scipy_or_numba(kmeans_cube):
    _, _, modules = kmeans_cube
    # k-means and the Hungarian method are Cython: neither numba (0.3 s to import, 0.45 s to first dispatch)
    # nor scipy.optimize
    assert [package for package in (*HEAVY, "numba", "scipy") if loaded(modules, package)] == []
    assert {"ordercube.tasks.algorithms._lloyd", "ordercube.tasks._hungarian", "zarr"} <= modules  # the kernels and the cube: really ran
    assert not loaded(modules, "pipeline") and not loaded(modules, "tasks")  # one namespace, though the repository is on the path


@pytest.mark.parametrize("command", ["validate", "status"])
def test_validate_and_status_import_neither_dask_nor_the_kernels(kmeans_cube, command):
    config, cube, _ = kmeans_cube
    modules = imported_by("validate", str(config)) if command == "validate" else imported_by("status", str(cube))
    assert [package for package in (*HEAVY, "numba", "scipy.optimize") if loaded(modules, package)] == []


def test_a_file_dataset_imports_pandas_to_read_it_and_a_cluster_run_imports_distributed(tmp_path):
    np.savetxt(tmp_path / "points.csv", np.random.default_rng(0).normal(size=(130, 2)), delimiter=",",
               header="x,y", comments="")
    config = write_config(tmp_path / "file.yaml", **{**KMEANS, "datasets": [{"name": "points", "kind": "file",
                                                                            "path": "points.csv"}]})
    here = imported_by("run", str(config), "--out", str(tmp_path / "here.zarr"), "--no-progress")
    assert loaded(here, "pandas") and not loaded(here, "distributed")
    cluster = imported_by("run", str(config), "--out", str(tmp_path / "cluster.zarr"), "--no-progress", "--workers", "1",
                          "--no-dashboard")
    assert loaded(cluster, "distributed") and not loaded(cluster, "scipy.cluster")
