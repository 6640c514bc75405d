"""Growing a cube, journalled: a growth is rolled back if it is interrupted.

Growing a cube (new datasets, sample sizes, methods, k, trials or variables) records its old shapes and
attributes in the group's attributes first (one atomic file write) and clears that record last, so an
interrupted growth is rolled back by whoever opens the cube next (:func:`roll_back_growth`), and readers see
the cube as it was before it meanwhile.

The implementation of :meth:`ordercube.pipeline.cube.owner.Cube.grow`; other modules go through the Cube.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import zarr
from zarr.core.sync import sync

from ordercube.pipeline.cube.assignments import (
    ASSIGNMENT_MANIFEST, ROLES_ATTRIBUTE, assignments_grow, grow_assignments, stored_roles,
)
from ordercube.pipeline.cube.assignments import grow_manifest as grow_assignment_manifest
from ordercube.pipeline.cube.attrs import BASELINE, LEGACY_ATTRIBUTES, array_attrs
from ordercube.pipeline.cube.checks import check_cube, check_metadata
from ordercube.pipeline.cube.metadata import consolidate, describe_arrays, stored_true_k, write_true_k
from ordercube.pipeline.cube.layout import array, create_baseline, cube_attributes, stored_coords
from ordercube.pipeline.errors import InputError
from ordercube.pipeline.cube.grid import DIMS, Coords, merge_coords
from ordercube.pipeline.cube.integrity import (
    CHECKSUMMED, COMPRESSORS, DESCRIBED, FORMAT_ATTRIBUTE, GROWTH, MANIFEST, OUTPUTS, grow_manifest, growth_record, manifest_rows,
    is_sharded, object_shape, record_objects,
)
from ordercube.pipeline.files.location import Location, location

if TYPE_CHECKING:  # the config's modules import the registries: not needed to read a cube
    from ordercube.pipeline.config.specs import Config


def compatibility_problem(stored: dict[str, Any], wanted: dict[str, Any]) -> str | None:
    """The first difference that would change stored cells, or None when the cube can be extended."""
    for key in ("seed", "baseline_draws"):
        if stored[key] != wanted[key]:
            return f"'{key}' is {stored[key]} in the cube but {wanted[key]} in the config"
    for section in ("datasets", "methods"):
        for name, spec in wanted[section].items():
            old = stored[section].get(name)
            if old is not None and old != spec:
                changed = sorted(k for k in set(old) | set(spec) if old.get(k) != spec.get(k))
                return (f"{section[:-1]} {name!r} differs from the one stored in the cube in {changed}: "
                        f"stored {json.dumps({k: old.get(k) for k in changed})}, "
                        f"config {json.dumps({k: spec.get(k) for k in changed})}")
    return None


def _grow(group: zarr.Group, dim: str, labels: tuple, old_size: int) -> None:
    """Append coordinate labels along ``dim`` and resize every array that has that dimension.

    The new region reads as the fill value (pending / NaN / ''); it is written explicitly so that a
    partly used edge chunk cannot carry stale values into it (chunks left all-fill are not stored).
    """
    new_size = len(labels)
    coordinate = array(group, dim)
    coordinate.resize((new_size,))
    fresh = np.array(labels[old_size:], dtype=object if dim in ("dataset", "model") else np.int64)
    coordinate[old_size:] = fresh
    for name, stored in group.arrays():
        names = list(getattr(stored.metadata, "dimension_names", None) or ())
        if name in DIMS or name == dim or dim not in names:
            continue
        axis = names.index(dim)
        shape = list(stored.shape)
        shape[axis] = new_size
        stored.resize(tuple(shape))
        _clear_edge(stored, axis, old_size, new_size, group)


def _clear_edge(stored: zarr.Array, axis: int, old_size: int, new_size: int, group: zarr.Group) -> None:
    """Fill values beyond ``old_size`` along ``axis`` in the edge chunks that also hold cells before it.

    So that no stale value shows when the array grows, and none stays behind when it shrinks back.
    Chunks wholly beyond ``old_size`` hold nothing (resizing down deletes them). The chunk is written
    even when it then holds only fill values, as write_block does: an edge chunk of done cells with
    empty reasons must not vanish, or its cells would read as lost.
    """
    chunk = object_shape(stored)[axis]  # a shard partly beyond the old size holds stale cells too
    edge_end = min(new_size, -(-old_size // chunk) * chunk)
    if edge_end > old_size:
        region: list[slice] = [slice(None)] * len(stored.shape)
        region[axis] = slice(old_size, edge_end)
        edge = _recorded_edge(group, stored, axis, old_size // chunk)
        stored.with_config({"write_empty_chunks": True})[tuple(region)] = stored.fill_value
        name = stored.name.lstrip("/").split("/")[-1]
        if edge:  # the shards rewritten hold the same done cells: their new bytes recorded
            record_objects({name: stored, MANIFEST: array(group, MANIFEST)}, [(name, position) for position in edge])


def _recorded_edge(group: zarr.Group, stored: zarr.Array, axis: int, index: int) -> list[tuple[int, ...]]:
    """The grid positions of the recorded shards of ``stored`` (a sharded cell array) at ``index`` along ``axis``,
    their manifest entries forgotten before :func:`_clear_edge` rewrites them (a crash in between leaves them
    unrecorded, which the next scan accepts and records). Unsharded arrays: none (a chunk holds no cell beyond
    the edge that a growth clears, and is recorded as written)."""
    name = stored.name.lstrip("/").split("/")[-1]
    if not is_sharded(stored) or MANIFEST not in group:
        return []
    manifest = array(group, MANIFEST)
    rows = list(manifest.attrs["variables"])  # type: ignore[arg-type]
    if name not in rows or index >= manifest.shape[axis + 1]:
        return []
    region = [slice(None)] * (manifest.ndim - 1)
    region[axis] = slice(index, index + 1)
    entries = np.asarray(manifest[(rows.index(name), *region)])
    positions = [tuple(int(i) + (index if a == axis else 0) for a, i in enumerate(at)) for at in zip(*np.nonzero(entries))]
    record_objects({name: stored, MANIFEST: manifest}, [(name, position) for position in positions], forget=True)
    return positions


def _begin_growth(group: zarr.Group) -> None:
    """Record the shapes and attributes to return to if the growth that follows is interrupted."""
    record: dict[str, Any] = {"shapes": {name: list(stored.shape) for name, stored in group.arrays()},
                              "attrs": dict(group.attrs)}
    if MANIFEST in group:
        manifest = array(group, MANIFEST)
        record["manifest"] = {"shape": list(manifest.shape), "variables": manifest.attrs["variables"]}
    if ASSIGNMENT_MANIFEST in group:
        record["assignment_manifest"] = list(array(group, ASSIGNMENT_MANIFEST).shape)
    group.attrs[GROWTH] = json.dumps(record)


def roll_back_growth(group: zarr.Group) -> bool:
    """Undo a growth that was interrupted (its record is still in the attributes); True if there was one.

    Idempotent, so an interrupted roll-back is finished by the next one: arrays created by the growth
    are deleted, grown arrays are refilled beyond their old shape and shrunk back to it (chunks outside
    it are deleted), and the old attributes, which lack the record, are written back last.
    """
    record = growth_record(group)
    if record is None:
        return False
    old_shapes = record["shapes"]

    async def children() -> list[str]:
        return [key async for key in group.store.list_dir(group.path)]

    for child in sync(children()):
        if child not in ("zarr.json", "integrity") and child not in old_shapes:  # created by the growth, whole or not
            sync(group.store.delete_dir(child))
    if "manifest" in record:
        manifest = array(group, MANIFEST)
        manifest.resize(tuple(record["manifest"]["shape"]))
        manifest.attrs["variables"] = record["manifest"]["variables"]
    if "assignment_manifest" in record:
        array(group, ASSIGNMENT_MANIFEST).resize(tuple(record["assignment_manifest"]))
    elif ASSIGNMENT_MANIFEST in group:  # created by the growth, with the assignments (deleted above)
        sync(group.store.delete_dir(f"{group.path}/{ASSIGNMENT_MANIFEST}".lstrip("/")))
    for name, stored in group.arrays():
        old = tuple(old_shapes[name])
        if stored.shape != old:
            for axis, (size, old_size) in enumerate(zip(stored.shape, old)):
                if size > old_size:
                    _clear_edge(stored, axis, old_size, size, group)
            stored.resize(old)
    group.attrs.put(record["attrs"])
    consolidate(group)
    return True


def open_existing(where: str | Path | Location, config: Config, *, mode: Literal["r", "r+"] = "r") -> zarr.Group:
    """The cube at ``where``, after checking that ``config`` may extend it (``InputError`` if not)."""
    path = location(where)
    check_metadata(path)
    try:
        group = zarr.open_group(path.store(read_only=mode == "r"), mode=mode, use_consolidated=False)
        stored_identity = json.loads(str(group.attrs["ordercube_identity"]))
    except (KeyError, ValueError, TypeError, zarr.errors.BaseZarrError) as error:
        raise InputError(f"--out: {path} is not an ordercube cube ({error}); choose another --out") from None
    check_cube(group, path)
    problem = compatibility_problem(stored_identity, config.identity)
    if problem:
        raise InputError(f"--out: the cube at {path} was computed with another config: {problem}. "
                         "Old cells would no longer match it; write to a new cube with --out NEW_PATH "
                         "(or restore the old setting to extend this one)")
    return group


def remove_partial_files(path: Path) -> int:
    """Delete the temp files a crash can leave behind (zarr writes ``*.partial`` then renames)."""
    leftovers = list(path.rglob("*.partial"))
    for file in leftovers:
        file.unlink(missing_ok=True)
    return len(leftovers)


def repair(group: zarr.Group, place: Location) -> list[str]:
    """Undo what an interrupted run left in the cube at ``place`` (open for writing, the caller holding its lock):
    temp files of an interrupted write, an unfinished growth. Returns the notes saying what was done."""
    notes: list[str] = []
    removed = remove_partial_files(place.local()) if place.is_local else 0  # an object is stored whole or not at all
    if removed:
        notes.append(f"removed {removed} temp file(s) left by an interrupted write")
    if roll_back_growth(group):
        notes.append("rolled back the growth an earlier run left unfinished")
    return notes


def extend(group: zarr.Group, config: Config, wanted: Coords) -> tuple[Coords, list[str]]:
    """Extend the repaired cube ``group`` (see :func:`repair`) to the coordinates ``wanted`` and ``config``'s
    variables; returns its coordinates and notes.

    The config was checked against the cube (:func:`open_existing`): new datasets, sample sizes, methods, k and
    trials are appended, as one growth that is rolled back if interrupted.
    """
    from ordercube.pipeline.config.schemes import part_roles_of

    notes: list[str] = []
    stored_identity = json.loads(str(group.attrs["ordercube_identity"]))
    coords = stored_coords(group)
    merged = merge_coords(coords, wanted)
    if BASELINE not in group:  # deleted: recreated empty, and filled by run.fill_baseline from its own streams
        create_baseline(group, coords)
        notes.append(f"the random-labelling baseline {BASELINE} was missing: recreated (its cells are kept)")
    missing = [name for name in config.variables if name not in group]
    growing = [dim for dim in DIMS if len(getattr(merged, dim)) > len(getattr(coords, dim))]
    assigning = assignments_grow(group, config, merged, bool(growing))
    true_k = {**stored_true_k(group, coords), **{d.name: d.true_k for d in config.datasets}}
    upgrading = int(group.attrs.get(FORMAT_ATTRIBUTE, 1)) == CHECKSUMMED  # format 2 -> 3, inside the growth journal
    status = array(group, "status")
    if growing or missing or upgrading or assigning:
        _begin_growth(group)
        consolidate(group)  # plain xarray readers see the cube as it was until the growth ends
    for dim in growing:
        old_size = len(getattr(coords, dim))
        _grow(group, dim, getattr(merged, dim), old_size)
        notes.append(f"extended {dim} by {list(getattr(merged, dim)[old_size:])}")
    for name in missing:  # in the cube's own layout: sharded like its other cell arrays, or not
        group.create_array(name, shape=merged.shape, chunks=status.chunks, shards=status.shards, dtype="float64",
                           fill_value=np.nan, dimension_names=DIMS, compressors=COMPRESSORS,
                           attributes=array_attrs(name, DIMS))
        notes.append(f"added variable {name}")
    if growing or missing:
        grow_manifest(group, manifest_rows(config.variables))
    if assigning:
        notes += grow_assignments(group, config, merged, lambda dim, labels, old: _grow(group, dim, labels, old))
        grow_assignment_manifest(group)
    identity = {**stored_identity, "datasets": {**stored_identity["datasets"], **config.identity["datasets"]},
                "methods": {**stored_identity["methods"], **config.identity["methods"]}}
    if upgrading:
        describe_arrays(group)
        notes.append(f"upgraded the cube from format {CHECKSUMMED} to {DESCRIBED} (attributes, true_k coordinate)")
    cube_format = DESCRIBED if upgrading else int(group.attrs.get(FORMAT_ATTRIBUTE, 1))
    if cube_format >= DESCRIBED:
        write_true_k(group, merged.dataset, true_k)
    dropped = {GROWTH, *(LEGACY_ATTRIBUTES if cube_format >= DESCRIBED else ())}
    kept = {key: value for key, value in group.attrs.items() if key not in dropped}
    # One write, which also clears the growth record; then the consolidated metadata of the new shapes.
    roles = {**stored_roles(group), **part_roles_of(config)}
    kept.pop(ROLES_ATTRIBUTE, None)
    try:
        outputs = json.loads(str(kept.get(OUTPUTS, "{}")))
    except ValueError:  # damaged: made again from the registry
        outputs = {}
    group.attrs.put({**kept, **cube_attributes(config, identity, true_k, cube_format=cube_format, roles=roles,
                                               outputs=outputs if isinstance(outputs, dict) else {}),
                     FORMAT_ATTRIBUTE: cube_format})
    consolidate(group)
    return merged, notes

