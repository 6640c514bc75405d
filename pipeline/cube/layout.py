"""The cube's layout on disk, and making a new cube: a zarr v3 group written by one process, read with xarray.

Layout: per-cell variables over ``(dataset, n, model, k, trial)`` (one float variable per criterion
with the raw value, ``status``, ``reason`` and ``seconds``), the random-labeling baseline over
``(n, k)``, and attributes holding the config, its identity and fingerprint, the plan and the
package versions. A new cube is built in a hidden folder beside its path and moved into place by one
rename (on object storage: built in memory and uploaded, :mod:`ordercube.pipeline.cube.remote`). Every chunk is
checksummed (see :mod:`ordercube.pipeline.cube.integrity`).

The implementation of :class:`ordercube.pipeline.cube.owner.Cube`'s creation; other modules go through the Cube.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import zarr

from ordercube.pipeline.cube.assignments import new_layout, roles_attribute
from ordercube.pipeline.cube.attrs import BASELINE, array_attrs, group_attrs, true_k_labels, variable_attrs
from ordercube.pipeline.cube.metadata import consolidate
from ordercube.pipeline.errors import InputError
from ordercube.pipeline.cube.grid import DIMS, Coords, plan_of
from ordercube.pipeline.cube.integrity import (
    COMPRESSORS, DESCRIBED, FORMAT, FORMAT_ATTRIBUTE, OUTPUTS, SHARDED, create_manifest, growth_record, is_sharded,
    manifest_rows, outputs_of,
)
from ordercube.pipeline.files.location import Location, location
from ordercube.pipeline.files.outputs import enclosing_store
from ordercube.pipeline.cube.remote import check_new_remote, create_remote, remote_is_cube
from ordercube.pipeline.system.environment import positive_number
from ordercube.pipeline.system.software import package_versions
from ordercube.tasks.trial import Status

if TYPE_CHECKING:  # the config's modules import the registries: not needed to read a cube
    from ordercube.pipeline.config.specs import Config

STATUS_MEANINGS = {int(s): s.name.lower() for s in Status}
CREATING = ".creating-"  # a cube being created: .NAME.creating-PID beside NAME
PACKAGES = ("ordercube", "numpy", "scipy", "scikit-learn", "dask", "distributed", "xarray", "zarr")


def array(group: zarr.Group, name: str) -> zarr.Array:
    """The array ``name`` of the cube (the cube's layout guarantees it is an array, not a group)."""
    node = group[name]
    assert isinstance(node, zarr.Array)  # invariant of the layout written by this module
    return node


def versions() -> dict[str, str]:
    return package_versions(PACKAGES)


# xarray's CF encoding of a NaN fill value, which it writes on float variables: kept so that a cube made
# here reads exactly as one made by ``Dataset.to_zarr`` (tests/test_cube_format.py compares the two).
NAN_FILL_ATTRIBUTE = {"_FillValue": "AAAAAAAA+H8="}


#: A cube of more chunks than this per cell variable is sharded (format 4); a smaller one is stored as format 3
#: stored it, one object per chunk (at most this many objects per variable, and no shard to rewrite).
SHARD_ABOVE_CHUNKS = 256
#: The cells one shard holds at most (one stored object: 512 KiB of a float64 variable before compression);
#: ``ORDERCUBE_SHARD_CELLS`` sets another size for the cubes a process creates (its benchmarks and tests do).
SHARD_CELLS = 1 << 16


def shard_cells() -> int:
    """The cells a shard holds at most: ``ORDERCUBE_SHARD_CELLS``, else :data:`SHARD_CELLS` (exit 2 on a value
    that is not a positive whole number)."""
    return int(positive_number("ORDERCUBE_SHARD_CELLS", SHARD_CELLS, integer=True, example=4096, unit="cells"))


def shard_shape(shape: tuple[int, ...], cell_chunks: tuple[int, ...]) -> tuple[int, ...] | None:
    """The shard shape of the cell arrays of a new cube of ``shape`` chunked by ``cell_chunks``, None for no shards.

    Chunks are grouped into shards of at most ``SHARD_CELLS`` cells (at least one chunk), along ``trial``
    first, then ``model``, ``n`` and ``dataset``: the order in which the sweep's tasks come (dataset by dataset,
    n by n, method by method, trials in order), so a shard fills up within a short stretch of the run and the
    driver writes it once (:class:`ordercube.pipeline.cube.writes.BlockWriter`). Each cell variable then holds
    ``prod(ceil(shape / shard))`` objects. A cube of at most ``SHARD_ABOVE_CHUNKS`` chunks per variable is not
    sharded (None).
    """
    grid = [-(-size // chunk) for size, chunk in zip(shape, cell_chunks)]
    if int(np.prod(grid)) <= SHARD_ABOVE_CHUNKS:
        return None
    most = shard_cells()
    shard = list(cell_chunks)
    for axis in (4, 2, 1, 0):  # trial, model, n, dataset
        cells = int(np.prod(shard))
        shard[axis] = cell_chunks[axis] * max(1, min(grid[axis], most // cells))
        if shard[axis] < cell_chunks[axis] * grid[axis]:
            break  # this axis is not whole: grouping along the next would break the order of the writes
    return tuple(shard)


def object_count(shape: tuple[int, ...], cell_chunks: tuple[int, ...], variables: int) -> dict[str, int]:
    """The stored objects (files, or objects on S3) of a new cube of ``shape`` chunked by ``cell_chunks`` with
    ``variables`` criterion outputs once every cell is done, by kind (the rule docs/explanation/cube.md states):

    - ``metadata``: one ``zarr.json`` per node: the group, its ``integrity`` subgroup, the manifest, the five
      coordinates, ``true_k``, the baseline and every cell array (the criteria's, ``status``, ``reason``, ``seconds``);
    - ``labels``: one chunk per coordinate and ``true_k``; ``baseline``: one chunk per n (stored when a criterion is
      divided by it, as Lange's is: an upper bound otherwise);
    - ``manifest``: its chunks (:func:`ordercube.pipeline.cube.integrity.create_manifest`);
    - ``cells``: per cell array, one object per shard (or, unsharded, per chunk): ``prod(ceil(shape / shard))``.

    A cube that stores assignments adds their arrays (not sharded); growth adds objects by the same rule.
    """
    from ordercube.pipeline.cube.integrity import MANIFEST_ENTRIES, chunk_grid_shape

    arrays = variables + 3
    stored = shard_shape(shape, cell_chunks) or cell_chunks
    grid = chunk_grid_shape(shape, stored)
    rows = len(manifest_rows([""] * variables))
    if stored != cell_chunks:
        per_dataset = rows * int(np.prod(grid[1:]))
        manifest = -(-grid[0] // max(1, min(grid[0], MANIFEST_ENTRIES // max(per_dataset, 1))))
    else:
        manifest = int(np.prod(grid[:3]))
    return {"metadata": 3 + 5 + 1 + 1 + arrays, "labels": 6, "baseline": shape[1], "manifest": manifest,
            "cells": arrays * int(np.prod(grid))}


def write_layout(group: zarr.Group, coords: Coords, chunks: dict[str, int], variables: list[str],
                 true_k: Mapping[str, int]) -> None:
    """Every array of an all-pending cube, described (:mod:`ordercube.pipeline.cube.attrs`), straight through zarr:
    the layout ``xarray.Dataset.to_zarr`` wrote for the same cube (chunk shapes, fill values, CF attributes,
    ``true_k`` a coordinate on ``dataset``), without building the lazy Dataset (0.7 s of a small run); the cell
    arrays sharded (:func:`shard_shape`) when the cube has more than ``SHARD_ABOVE_CHUNKS`` chunks a variable."""
    cell_chunks = chunk_shape_of(chunks)
    shards = shard_shape(coords.shape, cell_chunks)
    cells: list[tuple[str, Any]] = [*((name, np.float64) for name in variables), ("status", np.int8),
                                    ("seconds", np.float64), ("reason", str)]
    for name, dtype in cells:
        group.create_array(name, shape=coords.shape, chunks=cell_chunks, shards=shards, dtype=dtype,
                           fill_value=_fill(dtype), dimension_names=DIMS, compressors=COMPRESSORS,
                           attributes={**array_attrs(name, DIMS), **(NAN_FILL_ATTRIBUTE if dtype is np.float64 else {})})
    create_baseline(group, coords)
    labels = {**coords.as_dict(), "true_k": true_k_labels(list(coords.dataset), true_k)}
    for name, values in labels.items():
        text = name in ("dataset", "model")
        # Labels are never -1 (n >= 4, k >= 1, trial >= 0): so no chunk of labels equals the fill value, every
        # one is stored, and a missing one means lost labels (trial [0] with zarr's default fill 0 was not stored).
        stored = group.create_array(name, shape=(len(values),), chunks=(max(len(values), 1),),
                                    dtype=str if text else np.int64, fill_value="" if text else -1,
                                    dimension_names=("dataset",) if name == "true_k" else (name,),
                                    compressors=COMPRESSORS, attributes=variable_attrs(name))
        stored[:] = np.array(values, dtype=object if text else np.int64)


def create_baseline(group: zarr.Group, coords: Coords) -> None:
    """The random-labelling baseline over ``(n, k)``, all NaN (filled by :func:`ordercube.pipeline.run.sweep.fill_baseline`)."""
    group.create_array(BASELINE, shape=(len(coords.n), len(coords.k)), chunks=(1, max(len(coords.k), 1)),
                       dtype=np.float64, fill_value=np.nan, dimension_names=("n", "k"), compressors=COMPRESSORS,
                       attributes={**variable_attrs(BASELINE), **NAN_FILL_ATTRIBUTE})


def _fill(dtype: Any) -> Any:
    if dtype is str:
        return ""
    return np.nan if np.dtype(dtype).kind == "f" else 0


def cube_attributes(config: Config, identity: dict[str, Any], true_k: dict[str, int], *,
                    cube_format: int = FORMAT, roles: Mapping[str, list[str]] | None = None,
                    outputs: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The group's attributes. Cubes of format 3 hold the true k as a coordinate and status codes as CF
    flags; older ones (format 1, which is not upgraded) keep them as JSON attributes, as they were read.
    ``roles``: the part roles of the models that store assignments (:mod:`ordercube.pipeline.cube.assignments`;
    none: no attribute). ``outputs``: what the cube recorded of its methods' outputs before (a growing cube's:
    kept for a method whose plug-in criterion is not loaded here; see :func:`outputs_of`)."""
    from ordercube.pipeline.config.specs import fingerprint

    legacy = {"ordercube_true_k": json.dumps(true_k), "ordercube_status_codes": json.dumps(STATUS_MEANINGS),
              "ordercube_versions": json.dumps(versions())} if cube_format < DESCRIBED else {}
    return {
        **group_attrs(config.name, int(identity["seed"]), fingerprint(identity), versions()),
        "ordercube_config": json.dumps(config.raw, default=str),
        "ordercube_identity": json.dumps(identity, sort_keys=True),
        "ordercube_plan": json.dumps(plan_of(config)),
        OUTPUTS: json.dumps(outputs_of(identity["methods"], outputs), sort_keys=True),
        **roles_attribute(roles or {}),
        **legacy,
    }


def is_cube(where: str | Path | Location) -> bool:
    """Is there a cube (its root ``zarr.json``) at ``where``? For a URL, ``InputError`` if it cannot be reached."""
    place = location(where)
    return (place.local() / "zarr.json").exists() if place.is_local else remote_is_cube(place)


def check_new_cube_path(where: str | Path | Location) -> None:
    """``InputError`` unless a new cube can be created at ``where``: absent or an empty folder, writable
    (for a URL: nothing stored under it but the leftovers of an interrupted creation, its bucket there)."""
    place = location(where)
    if not place.is_local:
        check_new_remote(place)
        return
    path = place.local()
    store = enclosing_store(path.parent)
    if store is not None:
        raise InputError(f"--out: {path} is inside the cube {store} (a zarr store), whose files only its own runs "
                         "write; choose an --out outside it")
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise InputError(f"--out: {path} exists and is not an ordercube cube; choose another --out")
    existing = next(folder for folder in (path, *path.absolute().parents) if folder.exists())
    if not existing.is_dir():
        raise InputError(f"--out: cannot create the cube {path}: {existing} is a file, not a folder; choose another --out")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise InputError(f"--out: cannot create the cube {path}: {existing} is not writable; "
                         "choose an --out in a folder you can write to")


def create(where: str | Path | Location, config: Config, coords: Coords, chunks: dict[str, int],
           prepare: Callable[[zarr.Group], Any] = lambda group: None) -> zarr.Group:
    """A new all-pending cube at ``where`` (checked with :func:`check_new_cube_path`), the caller holding its lock.

    The cube is built in a hidden folder beside ``path``, handed to ``prepare`` there (which fills the
    baseline), and moved into place by one rename: ``path`` never holds a half-made cube. Folders left by
    an interrupted creation are removed first (the lock says nobody is making them). Object storage has no
    rename: there the cube is built in memory and uploaded, its root ``zarr.json`` last
    (:func:`ordercube.pipeline.cube.remote.create_remote`).
    """
    place = location(where)
    if not place.is_local:
        return create_remote(place, lambda store: _build(store, config, coords, chunks, prepare))
    path = place.local()
    for leftover in path.parent.glob(f".{path.name}{CREATING}*"):
        shutil.rmtree(leftover, ignore_errors=True)
    aside = path.parent / f".{path.name}{CREATING}{os.getpid()}"
    _build(aside, config, coords, chunks, prepare)
    os.rename(aside, path)  # onto nothing, or onto the empty folder check_new_cube_path allowed
    return zarr.open_group(path, mode="r+", use_consolidated=False)


def _build(store: Any, config: Config, coords: Coords, chunks: dict[str, int],
           prepare: Callable[[zarr.Group], Any]) -> None:
    """Write a new all-pending cube into ``store`` (a folder aside, or a memory store to upload)."""
    from ordercube.pipeline.config.schemes import part_roles_of

    attributes = cube_attributes(config, config.identity, {}, roles=part_roles_of(config))
    group = zarr.create_group(store, zarr_format=3, attributes=attributes)
    write_layout(group, coords, chunks, config.variables, {d.name: d.true_k for d in config.datasets})
    group.attrs[FORMAT_ATTRIBUTE] = SHARDED if is_sharded(array(group, "status")) else DESCRIBED
    create_manifest(group, manifest_rows(config.variables))
    new_layout(group, config, coords, chunk_shape_of(chunks))
    prepare(group)
    consolidate(group)


def chunk_shape_of(chunks: dict[str, int]) -> tuple[int, ...]:
    return tuple(chunks[d] for d in DIMS)


def stored_chunk_shape(group: zarr.Group) -> dict[str, int]:
    """The cube's chunk size along each cell dimension (fixed when the cube was created)."""
    return dict(zip(DIMS, array(group, "status").chunks, strict=True))


def stored_coords(group: zarr.Group) -> Coords:
    """The cube's coordinate labels; those from before an interrupted growth while its record is there."""
    old_shapes = (growth_record(group) or {}).get("shapes", {})

    def labels(dim: str) -> list:
        return np.asarray(array(group, dim)[: old_shapes.get(dim, [None])[0]]).tolist()

    return Coords(dataset=tuple(map(str, labels("dataset"))), n=tuple(map(int, labels("n"))),
                  model=tuple(map(str, labels("model"))), k=tuple(map(int, labels("k"))),
                  trial=tuple(map(int, labels("trial"))))

