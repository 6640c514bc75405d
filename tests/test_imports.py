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


# Run in the fresh interpreter before the command: a finder that answers nothing but notes, for each module
# imported, the chain of module bodies importing it and the innermost ordercube line (a function's lazy import).
TRACER = """
import sys
IMPORTERS = {}
class Tracer:
    def find_spec(self, name, path=None, target=None):
        if name not in IMPORTERS:
            chain, line, frame = [], None, sys._getframe(1)
            while frame is not None:
                module = frame.f_globals.get("__name__", "?")
                if frame.f_code.co_name == "<module>" and not frame.f_code.co_filename.startswith("<frozen"):
                    chain.append(module)
                if line is None and module.startswith("ordercube"):
                    line = f"{module}:{frame.f_lineno} ({frame.f_code.co_name})"
                frame = frame.f_back
            IMPORTERS[name] = " <- ".join(chain[:4]) + (f" [from {line}]" if line else "")
        return None
sys.meta_path.insert(0, Tracer())
"""


def imported_by(*args: str) -> dict[str, str]:
    """The modules loaded by ``ordercube ARGS`` in a fresh interpreter (after the command has run), each with who
    imported it (the chain of importing modules, and the innermost ordercube line)."""
    code = (TRACER + "import json\nfrom ordercube.pipeline.cli import main\ncode = main(sys.argv[1:])\n"
            "print(json.dumps({'code': code, 'modules': {m: IMPORTERS.get(m, '?') for m in sorted(sys.modules)}}))")
    result = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120,
                            env={**os.environ, "PYTHONPATH": f"{STUBS}:{REPO}"})
    last = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""
    assert last.startswith("{"), result.stderr
    report = json.loads(last)
    assert report["code"] == 0, result.stderr
    return report["modules"]


def loaded(modules: dict[str, str], package: str) -> bool:
    return package in modules or any(name.startswith(package + ".") for name in modules)


def unwanted(modules: dict[str, str], packages: tuple[str, ...]) -> list[str]:
    """The ``packages`` loaded, each as ``package: imported by ...`` (its first module imported)."""
    found = []
    for package in packages:
        names = [name for name in modules if name == package or name.startswith(package + ".")]
        if names:
            first = package if package in modules else names[0]
            found.append(f"{package}: imported by {modules[first]}")
    return found


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
    assert unwanted(modules, (*HEAVY, "numba", "scipy")) == []
    assert {"ordercube.tasks.algorithms._lloyd", "ordercube.tasks._hungarian", "zarr"} <= set(modules)  # the kernels and the cube: really ran
    assert not loaded(modules, "pipeline") and not loaded(modules, "tasks")  # one namespace, though the repository is on the path


@pytest.mark.parametrize("command", ["validate", "status"])
def test_validate_and_status_import_neither_dask_nor_the_kernels(kmeans_cube, command):
    config, cube, _ = kmeans_cube
    modules = imported_by("validate", str(config)) if command == "validate" else imported_by("status", str(cube))
    assert unwanted(modules, (*HEAVY, "numba", "scipy.optimize")) == []


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


def test_status_reads_the_cube_without_the_config_the_kernels_or_the_plugins(kmeans_cube):
    """``status`` is a look at a running sweep, within 3x of ``import numpy, scipy`` (benchmarks/bench_startup.py):
    zarr and numpy and the cube's own modules; not the criteria's registry (which variables each method writes, to
    count lost values as pending, is recorded in the cube), the config's schema, the adaptive rules, the sweep, nor
    any plug-in."""
    _, cube, _ = kmeans_cube
    modules = imported_by("status", str(cube))
    assert unwanted(modules, (*HEAVY, "numba", "scipy", "rich", "threadpoolctl", "ordercube.pipeline.config.specs",
                              "ordercube.pipeline.config.adaptive", "ordercube.pipeline.run", "ordercube.tasks.criteria",
                              "ordercube.pipeline.reduce", "ordercube.pipeline.report", "ordercube_test_stubs")) == []
    assert {"zarr", "ordercube.pipeline.cube.owner"} <= set(modules)  # it did read


CONSENSUS = {"name": "consensus", "seed": 3, "k": {"from": 2, "to": 4}, "resamples": 6,
             "datasets": [{"name": "points", "kind": "file", "path": "points.csv", "n": ["all"]}],
             "methods": [{"name": "hc", "algorithm": "agglomerative", "params": {"linkage": "average"},
                          "scheme": "consensus", "scheme_params": {"p_item": 0.8, "p_feature": 1.0, "references": 2},
                          "criteria": ["consensus_area", "pac", "cluster_consensus", "m3c"]}]}


def test_a_consensus_study_runs_and_reports_without_a_cluster_scipy_stats_or_scikit_learn(tmp_path):
    """The two commands of a consensus study, raced against R's ConsensusClusterPlus: ``run`` in this process reads
    the table (pandas) and cuts trees (scipy.cluster), nothing of Dask, xarray or the figures; ``report`` reads
    the cube with xarray (which loads Dask) and draws with matplotlib, but needs no cluster, no scikit-learn
    and no scipy.stats (M3C's p-values come from scipy.special)."""
    np.savetxt(tmp_path / "points.csv", np.random.default_rng(1).normal(size=(30, 4)), delimiter=",",
               header="a,b,c,d", comments="")
    config = write_config(tmp_path / "consensus.yaml", **CONSENSUS)
    cube = str(tmp_path / "consensus.zarr")
    run = imported_by("run", str(config), "--out", cube, "--no-progress", "--workers", "0")
    assert unwanted(run, ("distributed", "dask", "xarray", "matplotlib", "sklearn", "numba", "bokeh", "pooch",
                          "scipy.stats", "ordercube.pipeline.report", "ordercube.pipeline.reduce")) == []
    assert {"pandas", "scipy.cluster.hierarchy"} <= set(run)
    report = imported_by("report", cube, "--out", str(tmp_path / "report"), "--replicates", "2")
    assert unwanted(report, ("distributed", "sklearn", "numba", "bokeh", "pooch", "scipy.stats", "jsonschema")) == []
    assert {"xarray", "matplotlib"} <= set(report)
