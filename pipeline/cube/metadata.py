"""Reading and writing the cube's description (:mod:`ordercube.pipeline.cube.attrs`) on a zarr group.

Kept apart from :mod:`ordercube.pipeline.cube.growth` and :mod:`ordercube.pipeline.cube.writes`, which change shapes and cells:
here are the consolidated metadata, the ``true_k`` coordinate, the attributes given to the arrays of a
format-2 cube when it is upgraded, and the description given in memory to cubes of formats 1 and 2 when
they are read.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np
import zarr

from ordercube.pipeline.cube.attrs import BASELINE, array_attrs, true_k_labels, variable_attrs
from ordercube.pipeline.cube.grid import DIMS, Coords
from ordercube.pipeline.cube.integrity import COMPRESSORS

if TYPE_CHECKING:  # xarray (and pandas under it) only where a cube is read as a Dataset
    import xarray as xr


def consolidate(group: zarr.Group) -> None:
    """Write the consolidated metadata (every node's metadata in the root ``zarr.json``) so that plain
    ``xr.open_zarr(path)`` opens the cube without a warning. Every write of the group's attributes drops
    it (zarr rewrites the root document), so each change of the cube's metadata ends with this.
    ordercube's own readers never use it (``use_consolidated=False``): it may be a snapshot from before
    a growth in progress, which then shows readers the cube as it was before."""
    with warnings.catch_warnings():  # zarr notes that consolidation is its own extension of format 3: we know
        warnings.filterwarnings("ignore", "Consolidated metadata is currently not part", UserWarning)
        zarr.consolidate_metadata(group.store, path=group.path or None, zarr_format=3)


def _true_k(group: zarr.Group) -> zarr.Array:
    node = group["true_k"]
    assert isinstance(node, zarr.Array)  # invariant of the layout written by ordercube.pipeline.cube.layout
    return node


def stored_true_k(group: zarr.Group, coords: Coords) -> dict[str, int]:
    """The true k of each dataset of the cube (-1 unknown): its ``true_k`` coordinate, or (format < 3) its
    JSON attribute."""
    if "true_k" in group:
        values = np.asarray(_true_k(group)[: len(coords.dataset)])
        return {name: int(value) for name, value in zip(coords.dataset, values)}
    return {str(name): int(k) for name, k in json.loads(str(group.attrs.get("ordercube_true_k", "{}"))).items()}


def write_true_k(group: zarr.Group, datasets: tuple[str, ...], known: Mapping[str, int]) -> None:
    """Store the ``true_k`` coordinate of ``datasets`` (created by an upgrade, grown with ``dataset``); only
    when it changes, so a run that computes nothing writes nothing."""
    values = true_k_labels(list(datasets), known)
    if "true_k" not in group:
        group.create_array("true_k", shape=values.shape, chunks=(max(len(values), 1),), dtype="int64", fill_value=-1,
                           dimension_names=("dataset",), compressors=COMPRESSORS, attributes=variable_attrs("true_k"))
    stored = _true_k(group)
    if not np.array_equal(np.asarray(stored[:]), values):
        stored.with_config({"write_empty_chunks": True})[:] = values


def describe_arrays(group: zarr.Group) -> None:
    """Give every array of a format-2 cube the attributes of format 3 (its old ``status`` "meaning" JSON is
    replaced by CF flags). Harmless if a roll-back leaves them: format 2 readers ignore them."""
    for name, stored in group.arrays():
        dims = tuple(getattr(stored.metadata, "dimension_names", None) or ())
        stored.attrs.put(array_attrs(name, dims if name not in DIMS else ()))


def described(cube: xr.Dataset) -> xr.Dataset:
    """The cube with format 3's description whatever its format: a cube of format 1 or 2 gets its
    ``true_k`` coordinate from its JSON attribute and the attributes of every variable, in memory only."""
    if "true_k" not in cube.coords:
        if "true_k" in cube.data_vars:  # read by _before_growth or by xarray without the coordinates attribute
            cube = cube.set_coords("true_k")
        else:
            known = json.loads(str(cube.attrs.get("ordercube_true_k", "{}")))
            labels = true_k_labels([str(name) for name in cube["dataset"].values], known)
            cube = cube.assign_coords(true_k=("dataset", labels))
    for name in [*cube.data_vars, *cube.coords]:
        if "long_name" not in cube[name].attrs:
            cube[name].attrs = variable_attrs(str(name))
    return cube[canonical_order(cube)]


CELL_AND_BASELINE = ("status", "reason", "seconds", BASELINE)


def canonical_order(cube: xr.Dataset) -> list[str]:
    """The cube's variables in a fixed order: the criteria as the config names them (a criterion's outputs
    together: ``gap``, ``gap_sd``), other variables by name, then status, reason, seconds and the baseline.

    zarr lists a group's arrays in whatever order its concurrent reads finish, so without this the
    report's rows (one per criterion) would come out in a different order from one reading to the next.
    """
    from ordercube.tasks.criteria import VARIABLES

    plan = json.loads(str(cube.attrs.get("ordercube_plan", "{}")))
    methods = plan.get("methods", {}) if isinstance(plan, dict) else {}
    named = [str(c) for criteria in (methods.values() if isinstance(methods, dict) else []) for c in criteria]
    rank = {name: i for i, name in enumerate(dict.fromkeys(named))}

    def key(name: str) -> tuple[int, int, str]:
        if name in CELL_AND_BASELINE:
            return 2, CELL_AND_BASELINE.index(name), name
        owner = VARIABLES.get(name, name)
        return (0, rank[owner], name) if owner in rank else (1, 0, name)

    return sorted(map(str, cube.data_vars), key=key)
