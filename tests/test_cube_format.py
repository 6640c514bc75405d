"""The cube describes itself (format 3) and cubes of format 2 still open, report and extend.

``tests/data/format2`` holds a cube written by format 2 (commit ec16973) with its config, its ``status
--json`` and its ``selection.csv`` as that code printed them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr
import zarr

from conftest import ORDERCUBE, REPO, STUBS, cli_in_process, write_config
from ordercube.pipeline.reduce.select import criterion_scores, select_k
from ordercube.pipeline.cube.owner import open_cube
from ordercube.pipeline.config.study import load_config
from ordercube.pipeline.cube.attrs import COORDINATES, VARIABLES
from ordercube.pipeline.cube.owner import Cube
from ordercube.pipeline.files.location import location
from ordercube.tasks.cell import Status

FORMAT2 = Path(__file__).parent / "data" / "format2"
TIMEOUT = 180
METHOD = {"name": "km", "algorithm": "kmeans", "params": {"n_init": 2}, "predictor": "nearest_centroid",
          "criteria": ["lange", "pairwise"]}
BEFORE = {"name": "described", "seed": 3, "n": [24, 40], "k": [2, 3], "resamples": 3, "baseline_draws": 20,
          "datasets": [{"name": "gauss", "kind": "lange_gaussians3"},
                       {"name": "unlabelled", "kind": "file", "path": "points.csv"}],
          "methods": [METHOD], "execution": {"trials_per_chunk": 2}}
# Grows every dimension and adds a criterion (a new variable) and a dataset of another true k.
AFTER = {**BEFORE, "n": [24, 40, 48], "k": [2, 3, 4], "resamples": 4,
         "datasets": [*BEFORE["datasets"], {"name": "mix", "kind": "shamir_mixture1d", "params": {"mu": 6.0}}],
         "methods": [METHOD, {**METHOD, "name": "ps", "criteria": ["prediction_strength"]}]}


def _run(config: Path, cube: Path, **env: str) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(STUBS), str(REPO)]), **env}
    full_env.pop("ORDERCUBE_KILL_PID", None)
    if "ORDERCUBE_KILL_AT" in env or "ORDERCUBE_KILL_COUNT" in env:
        full_env["ORDERCUBE_PLUGINS"] = "ordercube_kill_switch"
    return subprocess.run([ORDERCUBE, "run", str(config), "--out", str(cube), "--no-progress",
                           "--workers", "0"], env=full_env, capture_output=True, text=True, timeout=TIMEOUT,
                          start_new_session=True)


def _open_plain(path: Path, **kwargs) -> xr.Dataset:
    """``xr.open_zarr`` as a user calls it, any warning an error."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return xr.open_zarr(path, **kwargs).load()


def _assert_plain_open(path: Path) -> xr.Dataset:
    """Plain, consolidated and unconsolidated opens agree: the consolidated metadata is the cube's."""
    plain = _open_plain(path)
    xr.testing.assert_identical(plain, _open_plain(path, consolidated=True))
    xr.testing.assert_identical(plain, _open_plain(path, consolidated=False))
    return plain


@pytest.fixture(scope="module")
def cubes(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("described")
    rows = np.random.default_rng(0).normal(size=(120, 2))
    np.savetxt(folder / "points.csv", rows, delimiter=",", header="x,y", comments="")
    before, after = write_config(folder / "before.yaml", **BEFORE), write_config(folder / "after.yaml", **AFTER)
    created, grown = folder / "created.zarr", folder / "grown.zarr"
    result = _run(before, created)
    assert result.returncode == 0, result.stderr
    shutil.copytree(created, grown)
    counts = folder / "counts.json"
    result = _run(after, grown, ORDERCUBE_KILL_COUNT=str(counts))
    assert result.returncode == 0, result.stderr
    return {"before": before, "after": after, "created": created, "grown": grown,
            "grow changes": json.loads(counts.read_text())["grow"]}


def test_every_variable_and_coordinate_says_what_it_is(cubes):
    cube = _assert_plain_open(cubes["created"])
    for name in [*cube.data_vars, *cube.coords]:
        attrs = cube[name].attrs
        assert attrs["long_name"] and attrs["description"], name
        assert attrs == {**(VARIABLES.get(str(name)) or COORDINATES[str(name)]), **attrs}, name
    assert cube["seconds"].attrs["units"] == "s"
    # dimensionless values and counts carry no units (CF allows omitting them); their descriptions say so
    assert not [name for name in [*cube.data_vars, *cube.coords] if name != "seconds" and "units" in cube[name].attrs]
    assert "dimensionless" in cube["lange"].attrs["description"] and "dimensionless" in cube["pairwise"].attrs["description"]
    lange = cube["lange"].attrs["description"]
    assert "NOT normalised" in lange and "'lange_random'" in lange and "eq. (5)" in lange and "Lange" in lange
    assert "Theorem 3" in cube["pairwise"].attrs["description"]
    assert cube["trial"].attrs["long_name"] == "resample index"
    assert "one split into halves per resample" in cube["trial"].attrs["description"]


def test_status_is_described_by_cf_flags_of_the_status_enum(cubes):
    cube = _open_plain(cubes["created"])
    attrs = cube["status"].attrs
    assert attrs["flag_values"] == [0, 1, 2, 3, 4, 5] == [int(s) for s in Status]
    assert attrs["flag_meanings"].split() == [s.name.lower() for s in Status]
    assert "meaning" not in attrs and "ordercube_status_codes" not in cube.attrs  # no JSON any more
    ok = attrs["flag_values"][attrs["flag_meanings"].split().index("ok")]
    assert int((cube["status"] == ok).sum()) == 2 * 2 * 1 * 2 * 3  # every cell of the grid computed


def test_true_k_is_a_coordinate_on_dataset_with_minus_one_where_unknown(cubes):
    cube = _open_plain(cubes["created"])
    assert cube["true_k"].dims == ("dataset",) and cube["true_k"].dtype == np.int64
    config = load_config(cubes["before"])
    assert dict(zip(cube["dataset"].values.tolist(), cube["true_k"].values.tolist())) == \
        {d.name: d.true_k for d in config.datasets} == {"gauss": 3, "unlabelled": -1}
    assert zarr.open_group(cubes["created"], mode="r", use_consolidated=False)["true_k"].fill_value == -1
    assert "ordercube_true_k" not in cube.attrs
    assert "true_k" in cube["lange"].coords  # travels with every variable on dataset, into the reducers
    grown = _open_plain(cubes["grown"])
    assert dict(zip(grown["dataset"].values.tolist(), grown["true_k"].values.tolist())) == \
        {"gauss": 3, "unlabelled": -1, "mix": 3}


def test_provenance_is_plain_attributes(cubes):
    cube = _open_plain(cubes["created"])
    config = load_config(cubes["before"])
    assert cube.attrs["ordercube_seed"] == 3 and cube.attrs["ordercube_name"] == "described"
    assert cube.attrs["ordercube_fingerprint"] == config.fingerprint
    assert cube.attrs["ordercube_format"] == 3 and cube.attrs["Conventions"] == "CF-1.10"
    versions = dict(part.rsplit(" ", 1) for part in cube.attrs["ordercube_versions"].split("; "))
    assert versions["numpy"] == np.__version__ and versions["zarr"] == zarr.__version__
    assert cube.attrs["source"] == f"ordercube {versions['ordercube']}"
    assert "Shamir & Tishby (2007)" in cube.attrs["references"]
    assert json.loads(cube.attrs["ordercube_config"])["resamples"] == 3  # the nested config stays JSON text


def test_consolidated_metadata_follows_every_growth(cubes):
    grown = _assert_plain_open(cubes["grown"])
    assert dict(grown.sizes) == {"dataset": 3, "n": 3, "model": 2, "k": 3, "trial": 4}
    assert grown["prediction_strength"].attrs["long_name"] == "prediction strength"
    assert "true_k" in grown["prediction_strength"].coords  # a variable added by a growth, written by zarr
    xr.testing.assert_identical(open_cube(cubes["grown"]).load(), grown)


def test_a_killed_growth_rolled_back_leaves_valid_consolidated_metadata(cubes, tmp_path):
    cube = tmp_path / "cube.zarr"
    shutil.copytree(cubes["created"], cube)
    before = _open_plain(cubes["created"])
    # killed before its last two changes (the attributes that end it, the consolidation): the record is there
    killed = _run(cubes["after"], cube, ORDERCUBE_KILL_AT=str(cubes["grow changes"] - 1))
    assert killed.returncode == -9, killed.stderr
    assert "ordercube_growth" in json.loads((cube / "zarr.json").read_text())["attributes"]
    # meanwhile plain xarray reads the snapshot consolidated when the growth began: the cube before it
    meanwhile = _open_plain(cube)
    assert dict(meanwhile.sizes) == dict(before.sizes)
    xr.testing.assert_identical(meanwhile.drop_attrs(), before.drop_attrs())
    xr.testing.assert_identical(open_cube(cube).load(), before)  # our reader ignores the snapshot
    notes = Cube(zarr.open_group(cube, mode="r+", use_consolidated=False), location(cube)).repair()  # as the next run does
    assert "rolled back the growth an earlier run left unfinished" in notes
    xr.testing.assert_identical(_assert_plain_open(cube), before)


def _raw_select_k(path: Path) -> dict[str, np.ndarray]:
    """k̂ per (dataset, n, model) from the stored arrays alone: Lange's score normalised by the baseline,
    pairwise raw, mean over ok trials, argmin over k with exact ties to the largest k."""
    group = zarr.open_group(path, mode="r", use_consolidated=False)
    ok = np.asarray(group["status"][:]) == 1
    ks = np.asarray(group["k"][:])
    scores = {"lange": np.asarray(group["lange"][:]) / np.asarray(group["lange_random"][:])[None, :, None, :, None],
              "pairwise": np.asarray(group["pairwise"][:])}
    chosen = {}
    for name, values in scores.items():
        mean = np.where(ok, values, 0).sum(-1) / ok.sum(-1)
        reversed_k = mean[..., ::-1]
        chosen[name] = ks[::-1][np.argmin(reversed_k, axis=-1)]
    return chosen


def test_a_format_2_cube_reads_with_the_numbers_it_had(tmp_path):
    files = {p: p.read_bytes() for p in sorted((FORMAT2 / "cube.zarr").rglob("*")) if p.is_file()}
    status = cli_in_process("status", str(FORMAT2 / "cube.zarr"), "--json")
    assert status.returncode == 0, status.stderr
    # the numbers it had, and the count of the status added since (skipped, by the adaptive rule): none
    assert json.loads(status.stdout) == {**json.loads((FORMAT2 / "status.json").read_text()), "skipped": 0}
    # ties went to the largest k then (the smallest now): re-decided that way, the same numbers come out
    report = cli_in_process("report", str(FORMAT2 / "cube.zarr"), "--out", str(tmp_path / "report"),
                 "--decide", "lange.ties=largest", "--decide", "pairwise.ties=largest")
    assert report.returncode == 0, report.stderr
    # the columns the report wrote then, to the digit (it has more now: each k̂'s uncertainty)
    then = pd.read_csv(FORMAT2 / "selection.csv")
    now = pd.read_csv(tmp_path / "report" / "selection.csv")
    assert now[then.columns].to_csv(index=False) == (FORMAT2 / "selection.csv").read_text()
    validate = cli_in_process("validate", str(FORMAT2 / "config.yaml"), "--out", str(FORMAT2 / "cube.zarr"))
    assert validate.returncode == 0, validate.stderr
    cube = open_cube(FORMAT2 / "cube.zarr")
    assert cube.attrs["ordercube_format"] == 2
    assert cube["true_k"].values.tolist() == [3, 3]  # from the JSON attribute, as a coordinate
    assert cube["status"].attrs["flag_meanings"].split() == [s.name.lower() for s in Status]
    chosen = select_k(criterion_scores(cube), {"lange": {"ties": "largest"}, "pairwise": {"ties": "largest"}})
    for name, expected in _raw_select_k(FORMAT2 / "cube.zarr").items():
        np.testing.assert_array_equal(chosen[name].values, expected)
    assert {p: p.read_bytes() for p in sorted((FORMAT2 / "cube.zarr").rglob("*")) if p.is_file()} == files, \
        "reading a format 2 cube changed it"


def test_a_run_upgrades_a_format_2_cube_in_place_keeping_its_cells(tmp_path):
    cube = tmp_path / "cube.zarr"
    shutil.copytree(FORMAT2 / "cube.zarr", cube)
    old = open_cube(cube).load()
    config = tmp_path / "config.yaml"
    config.write_text((FORMAT2 / "config.yaml").read_text().replace("k: [2, 3, 4]", "k: [2, 3, 4, 5]"))
    result = _run(config, cube)
    assert result.returncode == 0, result.stderr
    assert "upgraded the cube from format 2 to 3" in result.stdout + result.stderr
    upgraded = _assert_plain_open(cube)
    assert upgraded.attrs["ordercube_format"] == 3 and "ordercube_true_k" not in upgraded.attrs
    assert upgraded["true_k"].values.tolist() == [3, 3]
    assert upgraded["status"].attrs["flag_values"] == [0, 1, 2, 3, 4, 5]
    assert all(upgraded[name].attrs.get("long_name") for name in [*upgraded.data_vars, *upgraded.coords])
    for name in ("lange", "pairwise", "status", "lange_random"):  # the old cells are untouched
        xr.testing.assert_equal(upgraded[name].sel(k=[2, 3, 4]).drop_vars("true_k", errors="ignore"),
                                old[name].drop_vars("true_k", errors="ignore"))
    assert int((upgraded["status"] == 1).sum()) == 2 * 2 * 4 * 3


def _xarray_template(coords, chunks: dict[str, int], variables: list[str], true_k: dict[str, int]) -> xr.Dataset:
    """The all-pending cube as format 3 first wrote it, through ``xarray.Dataset.to_zarr`` (a lazy Dataset
    of dask arrays, then encodings): the reference for the layout ``ordercube.pipeline.cube.layout`` now writes with zarr."""
    import dask.array as da

    from ordercube.pipeline.cube.attrs import BASELINE, true_k_labels, variable_attrs
    from ordercube.pipeline.cube.grid import DIMS

    cell_chunks = tuple(chunks[d] for d in DIMS)
    data = {name: (DIMS, da.full(coords.shape, np.nan, chunks=cell_chunks)) for name in variables}
    data["status"] = (DIMS, da.full(coords.shape, 0, dtype=np.int8, chunks=cell_chunks))
    data["seconds"] = (DIMS, da.full(coords.shape, np.nan, chunks=cell_chunks))
    data[BASELINE] = (("n", "k"), da.full((len(coords.n), len(coords.k)), np.nan, chunks=(1, len(coords.k))))
    labels = coords.as_dict()
    ds = xr.Dataset(data, coords={dim: np.array(labels[dim], dtype=object if dim in ("dataset", "model") else np.int64)
                                  for dim in DIMS})
    ds = ds.assign_coords(true_k=("dataset", true_k_labels(list(coords.dataset), true_k)))
    for name in [*ds.data_vars, *ds.coords]:
        ds[name].attrs = variable_attrs(str(name))
    return ds


def test_a_cube_created_through_zarr_has_the_layout_that_xarray_wrote(tmp_path):
    """Cube creation writes zarr metadata directly (no lazy Dataset, 0.7 s less per run); every node's
    metadata document equals the one ``Dataset.to_zarr`` wrote for the same cube, and both open equal."""
    from ordercube.pipeline.cube.attrs import array_attrs
    from ordercube.pipeline.cube.grid import DIMS, Coords
    from ordercube.pipeline.cube.integrity import COMPRESSORS
    from ordercube.pipeline.cube.layout import write_layout

    coords = Coords(dataset=("gauss", "file"), n=(40, 80, 120), model=("km",), k=(2, 3, 4), trial=tuple(range(6)))
    chunks = {"dataset": 1, "n": 1, "model": 1, "k": 3, "trial": 4}
    variables, true_k = ["lange", "pairwise"], {"gauss": 3}
    ours = zarr.create_group(str(tmp_path / "ours.zarr"), zarr_format=3)
    write_layout(ours, coords, chunks, variables, true_k)

    reference = _xarray_template(coords, chunks, variables, true_k)
    cell_chunks = tuple(chunks[d] for d in DIMS)
    encoding = {str(name): {"chunks": cell_chunks if reference[name].dims == DIMS else (1, len(coords.k)),
                            "fill_value": 0 if reference[name].dtype.kind == "i" else np.nan, "compressors": COMPRESSORS}
                for name in reference.data_vars}
    encoding.update({str(name): {"compressors": COMPRESSORS, **({"fill_value": -1} if reference[name].dtype.kind == "i"
                                                                 else {})} for name in reference.coords})
    reference.to_zarr(tmp_path / "xarray.zarr", mode="w-", compute=False, encoding=encoding, zarr_format=3,
                      consolidated=False)
    zarr.open_group(str(tmp_path / "xarray.zarr"), mode="r+").create_array(
        "reason", shape=coords.shape, chunks=cell_chunks, dtype=str, fill_value="", dimension_names=DIMS,
        compressors=COMPRESSORS, attributes=array_attrs("reason", DIMS))

    def documents(root: Path) -> dict[str, dict]:
        return {str(path.relative_to(root)): json.loads(path.read_text()) for path in root.rglob("zarr.json")}

    mine, theirs = documents(tmp_path / "ours.zarr"), documents(tmp_path / "xarray.zarr")
    assert sorted(mine) == sorted(theirs) and len(mine) == 1 + 5 + 1 + 5 + 1  # group, 5 cell vars, baseline, 5 dims, true_k
    assert [name for name in mine if mine[name] != theirs[name]] == []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # no consolidated metadata in either: only this test reads them so
        assert xr.open_zarr(tmp_path / "ours.zarr").load().identical(xr.open_zarr(tmp_path / "xarray.zarr").load())
