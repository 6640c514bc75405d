"""Is the cube's metadata what ordercube wrote? Its files, its ``zarr.json`` documents, attributes and shapes.

- :func:`check_metadata` reads every ``zarr.json`` of the store before zarr does, so a damaged or foreign one is
  an error naming the file; for a local cube it first walks the folders for entries that are not regular files
  or folders (:func:`check_entries`).
- :func:`check_cube` then checks the open group: its attributes (identity, plan, config, seeds), the arrays every
  cube holds, the cell arrays' chunk shapes, data types and fill values, the shapes of all arrays, and the
  coordinate labels read back with their checksums.

The checks of the cells' chunks (checksums, the manifest, lost values) are in :mod:`ordercube.pipeline.cube.integrity`; both are
run by :class:`ordercube.pipeline.cube.owner.Cube` when it opens a cube.
"""

from __future__ import annotations

import functools
import json
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import zarr

from ordercube.pipeline.cube.assignments import ASSIGNMENT, ASSIGNMENT_DIMS, ITEM, ITEM_CLASS, ITEM_NAME, ITEMS, PART
from ordercube.pipeline.cube.attrs import BASELINE
from ordercube.pipeline.errors import InputError
from ordercube.pipeline.files.inputfile import kind_of
from ordercube.pipeline.cube.integrity import (
    ALWAYS_WRITTEN, CHECKSUMMED, COMPRESSORS, DESCRIBED, DIMS, FORMAT, FORMAT_ATTRIBUTE, MANIFEST, chunk_key,
    SHARDED, growth_record, object_grid, object_shape, read_checked, stored_chunks,
)
from ordercube.pipeline.files.location import Location
from ordercube.pipeline.cube.remote import remote_documents


def check_metadata(where: Path | Location) -> None:
    """``InputError`` naming the first ``zarr.json`` of the store that is not a zarr v3 node document, or not the
    node ordercube writes there (:func:`check_layout`); for a local cube, first any entry that is not a regular
    file or folder (:func:`check_entries`)."""
    place = where if isinstance(where, Location) else Location(text=str(where), path=Path(where))
    if not place.is_local:
        texts: Mapping[Any, str | None] = remote_documents(place)
    else:
        path = place.local()
        check_entries(path)
        texts = {document: _read_text(document)
                 for document in [path / "zarr.json", *sorted(path.glob("*/zarr.json")), *sorted(path.glob("*/*/zarr.json"))]}
    nodes, documents = {}, {}
    for document, text in texts.items():
        node = _node(text)
        if node is None:
            raise InputError(f"CUBE: {document} is damaged (not a zarr v3 metadata document); restore the cube from a "
                             "copy, or compute a new one with 'ordercube run CONFIG --out NEW_PATH'")
        name = (Path(document).relative_to(place.local()) if place.is_local else Path(str(document))).parent.as_posix()
        name = "" if name == "." else name
        nodes[name], documents[name] = node, document
    check_layout(nodes, documents)


def _node(text: str | None) -> dict | None:
    """The JSON of a zarr v3 node document, None when ``text`` is not one."""
    try:
        node = json.loads(text) if text is not None else None
    except ValueError:
        return None
    valid = isinstance(node, dict) and node.get("zarr_format") == 3 and node.get("node_type") in ("group", "array")
    if valid and node["node_type"] == "array":
        valid = isinstance(node.get("shape"), list) and isinstance(node.get("chunk_grid"), dict)
    return node if valid else None


def _read_text(document: Path) -> str | None:
    try:
        return document.read_text()
    except (OSError, UnicodeDecodeError):
        return None


ATTRIBUTE_KEYS = {"ordercube_identity": ("seed", "datasets", "methods"),
                  "ordercube_plan": ("datasets", "methods", "k", "resamples"), "ordercube_config": ()}
LEGACY_ATTRIBUTE_KEYS = {"ordercube_true_k": ()}  # format < 3: the true k as JSON (since then a coordinate)


def check_cube(group: zarr.Group, path: Path | Location) -> None:
    """``InputError`` naming what is damaged when the cube's attributes, shapes or coordinate labels are not
    as ordercube wrote them (the group's ``zarr.json`` edited, an array's shape edited, a coordinate chunk
    deleted or changed); the coordinates, ``true_k`` and the baseline are read back with their checksums."""
    cube_format = cube_format_of(group.attrs, path / "zarr.json")
    if FORMAT_ATTRIBUTE not in group.attrs and MANIFEST in group:  # format 1 wrote neither
        raise InputError(f"CUBE: {path / 'zarr.json'}: the attribute {FORMAT_ATTRIBUTE!r} is missing, where a cube with "
                         f"{MANIFEST!r} (format {CHECKSUMMED} on) holds it; restore the cube from a copy")
    legacy = LEGACY_ATTRIBUTE_KEYS if cube_format < DESCRIBED else {}
    for key, fields in {**ATTRIBUTE_KEYS, **legacy}.items():
        try:
            value = json.loads(str(group.attrs[key]))
            valid = isinstance(value, dict) and all(field in value for field in fields)
        except (KeyError, ValueError):
            valid = False
        if not valid:
            raise InputError(f"CUBE: {path / 'zarr.json'}: the attribute {key!r} is missing or damaged; restore the cube "
                             "from a copy, or compute a new one with 'ordercube run CONFIG --out NEW_PATH'")
    check_seeds(group.attrs, path / "zarr.json")
    required = [*ALWAYS_WRITTEN, *([MANIFEST] if cube_format >= CHECKSUMMED else []),
                *(["true_k"] if cube_format >= DESCRIBED else [])]
    for name in required:
        if name not in group:
            raise InputError(f"CUBE: {path}: the array {name!r} is missing ({path / f'{name}/zarr.json'}), which no run "
                             "can compute again; restore the cube from a copy")
    if cube_format >= CHECKSUMMED:
        check_cell_layout(group, path)
    record = growth_record(group)
    if record is None:  # mid-growth the arrays' shapes differ until the roll-back; the record holds the old ones
        check_shapes(group, path)
    if cube_format < CHECKSUMMED:  # format 1 did not store a chunk of labels [0]
        return
    old_shapes = (record or {}).get("shapes", {})
    for dim in DIMS:
        if dim not in group:
            raise InputError(f"CUBE: {path}: the coordinate {dim!r} is missing; restore the cube from a copy")
        size, chunk = old_shapes.get(dim, group[dim].shape)[0], group[dim].chunks[0]  # type: ignore[union-attr]
        present = stored_chunks(group, dim)
        missing = [(index,) for index in range(-(-size // chunk)) if (index,) not in present]
        if missing:
            raise InputError(f"CUBE: {path}: the labels of {dim!r} are lost ({chunk_key(dim, missing[0])} is missing); "
                             "restore the cube from a copy")
    for name in (*DIMS, "true_k", BASELINE, PART, ITEM, ITEMS, ITEM_CLASS, ITEM_NAME):  # small arrays: a changed byte is named
        if name in group:
            read_checked(group, name, path)


def check_seeds(attributes: Mapping[str, Any], document: Path | Location) -> None:
    """``InputError`` naming ``document`` when the seeds the group's attributes state disagree: ``ordercube_seed``,
    the identity's (the seed every cell was computed with) and, when it names one, the stored config's."""
    identity = json.loads(str(attributes["ordercube_identity"]))
    config = json.loads(str(attributes.get("ordercube_config", "{}")))
    stated = {"ordercube_identity": identity.get("seed")}
    if "ordercube_seed" in attributes:
        stated["ordercube_seed"] = attributes["ordercube_seed"]
    if isinstance(config, dict) and "seed" in config:
        stated["ordercube_config"] = config["seed"]
    if len({json.dumps(seed) for seed in stated.values()}) > 1:
        said = ", ".join(f"{key!r} says {seed!r}" for key, seed in stated.items())
        raise InputError(f"CUBE: {document}: the seed attributes disagree ({said}): the file was edited; restore the "
                         "cube from a copy")


def check_shapes(group: zarr.Group, path: Path | Location) -> None:
    """``InputError`` naming the ``zarr.json`` of an array whose size along a dimension differs from the one the
    other arrays of the cube agree on (an edited shape), and the manifest's when it does not fit the cube's
    variables and chunk grid."""
    sizes: dict[str, dict[str, int]] = {}  # dimension -> array -> its size along it
    for name, stored in group.arrays():
        for dim, size in zip(getattr(stored.metadata, "dimension_names", None) or (), stored.shape):
            if dim in (*DIMS, PART, ITEM):
                sizes.setdefault(dim, {})[name] = int(size)
    for dim, by_array in sizes.items():
        values = list(by_array.values())
        agreed = max(set(values), key=lambda size: (values.count(size), by_array.get(dim) == size))
        odd = sorted(name for name, size in by_array.items() if size != agreed)
        if odd:
            raise InputError(f"CUBE: {path / f'{odd[0]}/zarr.json'}: its shape says {by_array[odd[0]]} along {dim!r}, "
                             f"where the cube's other arrays have {agreed}: the file was edited; restore the cube from "
                             "a copy")
    if MANIFEST in group and "status" in group:
        manifest, status = group[MANIFEST], group["status"]
        grid = (len(manifest.attrs.get("variables", [])), *object_grid(status))  # type: ignore
        if tuple(manifest.shape) != grid:  # type: ignore[union-attr]
            raise InputError(f"CUBE: {path / f'{MANIFEST}/zarr.json'}: its shape {list(manifest.shape)} does not fit the "  # type: ignore[union-attr]
                             f"cube's variables and chunk grid {list(grid)}: the file was edited; restore the cube from a copy")


def check_cell_layout(group: zarr.Group, path: Path | Location) -> None:
    """``InputError`` naming the ``zarr.json`` of a cell array (over every dimension) whose chunk shape, data type
    or fill value is not the one ordercube writes (one chunk shape for all; ``status`` int8 filled with 0, for
    pending; the values float64 filled with NaN). Cubes of format 2 on: format 1 chunked the variables it added
    later its own way."""
    cells = {name: stored for name, stored in group.arrays()
             if tuple(getattr(stored.metadata, "dimension_names", None) or ()) == DIMS}
    shapes = [(stored.chunks, object_shape(stored)) for stored in cells.values()]
    agreed = max(set(shapes), key=shapes.count)
    for name, stored in sorted(cells.items()):
        expected = {"status": (np.dtype("int8"), 0), "reason": (None, "")}.get(name, (np.dtype("float64"), np.nan))
        fill = stored.fill_value
        if stored.chunks != agreed[0]:
            problem = f"its chunk shape says {list(stored.chunks)}, where the cube's other arrays have {list(agreed[0])}"
        elif object_shape(stored) != agreed[1]:
            problem = (f"its shard shape says {list(object_shape(stored))}, where the cube's other arrays have "
                       f"{list(agreed[1])}")
        elif expected[0] is not None and stored.dtype != expected[0]:
            problem = f"its data type says {stored.dtype}, where ordercube writes {expected[0]}"
        elif name != "reason" and not (fill == expected[1] or (np.isnan(expected[1]) and np.isnan(fill))):
            problem = f"its fill value says {fill}, where ordercube writes {expected[1]}"
        else:
            continue
        raise InputError(f"CUBE: {path / f'{name}/zarr.json'}: {problem}: the file was edited; restore the cube from a copy")


# --- the files and metadata documents ordercube writes ------------------------------------------------------------

def check_entries(root: Path) -> None:
    """``InputError`` naming the first entry under the local cube ``root`` that is not a regular file or a folder
    (by ``lstat``: a symbolic link, FIFO, device or socket, which a read would follow, block on or never finish),
    or a node folder without its ``zarr.json`` (zarr would skip it with a warning, its cells silently lost).
    Reads no file: a walk of the folders' entries, whose types come with the listing (23 ms for a cube of
    14,400 chunks, 14,926 entries; ``benchmarks/bench_store.py``)."""
    folders = [root]
    while folders:
        folder = folders.pop()
        with os.scandir(folder) as listing:
            entries = list(listing)
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                folders.append(Path(entry.path))
            elif not entry.is_file(follow_symlinks=False):
                _refuse_entry(Path(entry.path))
        relative = folder.relative_to(root).parts
        # a node's folder holds its zarr.json, or the temp file of its write (a crash mid-growth: rolled back)
        if relative and "c" not in relative and not any(entry.name == "zarr.json" or entry.name.endswith(".partial")
                                                        for entry in entries):
            _refuse_lost_node(root, "/".join(relative))


def _refuse_entry(entry: Path) -> None:
    mode = entry.lstat().st_mode
    kind = kind_of(mode)
    if stat.S_ISLNK(mode):
        kind += f" to {os.readlink(entry)}"
    raise InputError(f"CUBE: {entry} is {kind}, where ordercube writes only regular files and folders (reading it "
                     "would follow it, block or never end); remove it and restore the file from a copy of the cube")


def _refuse_lost_node(root: Path, name: str) -> None:
    kept = name in (*DIMS, *ALWAYS_WRITTEN, "true_k", "integrity", MANIFEST)
    delete = ("" if kept else f", or delete the folder {root / name} (its cells become pending and the next 'ordercube "
              "run' computes them again)")
    raise InputError(f"CUBE: {root}: the array {name!r} is missing ({root / name / 'zarr.json'} was deleted, its folder "
                     f"remains); restore the cube from a copy{delete}")


def cube_format_of(attributes: Any, document: Path | str) -> int:
    """The cube's format from its group attributes (1 when absent: format 1 did not write it); ``InputError`` naming
    ``document`` for a format this version does not know."""
    value = attributes.get(FORMAT_ATTRIBUTE, 1) if isinstance(attributes, Mapping) else 1
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= FORMAT:
        raise InputError(f"CUBE: {document}: the attribute {FORMAT_ATTRIBUTE!r} says {value!r}, where this version of "
                         f"ordercube reads formats 1 to {FORMAT}: a cube of a newer ordercube needs that version "
                         "(pip install -U ordercube); else the file was edited: restore the cube from a copy")
    return value


@functools.cache
def _written_codecs(data_type: str) -> str:
    """The codecs ordercube writes for an array of ``data_type`` (as zarr serialises them), as JSON text."""
    dtype = str if data_type == "string" else np.dtype(data_type)
    written = zarr.create_array(store={}, shape=(1,), dtype=dtype, compressors=COMPRESSORS)
    return json.dumps(written.metadata.to_dict()["codecs"], default=str, sort_keys=True)


INDEX_CODECS = [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]


def _sharded_codecs(found: Any, inner: list) -> list:
    """The codecs ordercube writes for a cell array of a format-4 cube whose ``zarr.json`` says ``found``: when
    it is sharded, one ``sharding_indexed`` codec whose chunks are encoded with ``inner`` and whose index ends
    in a CRC32C (its chunk shape is checked against the other cell arrays by :func:`check_cell_layout`)."""
    if not (isinstance(found, list) and len(found) == 1 and isinstance(found[0], dict)
            and found[0].get("name") == "sharding_indexed"):
        return inner
    chunk_shape = (found[0].get("configuration") or {}).get("chunk_shape")
    return [{"name": "sharding_indexed", "configuration": {"chunk_shape": chunk_shape, "codecs": inner,
                                                           "index_codecs": INDEX_CODECS, "index_location": "end"}}]


def _expected_node(name: str) -> dict[str, Any]:
    """What ordercube writes at node ``name`` ("" the root): its node type and, for an array, its dimension
    names, data type and (coordinates, baseline, manifest) fill value."""
    if name in ("", "integrity"):
        return {"node_type": "group"}
    if name == MANIFEST:
        return {"node_type": "array", "dimension_names": ["variable", *DIMS], "data_type": "uint64", "fill_value": 0}
    if name in DIMS or name == "true_k":
        text = name in ("dataset", "model")
        return {"node_type": "array", "dimension_names": ["dataset" if name == "true_k" else name],
                "data_type": "string" if text else "int64", "fill_value": "" if text else -1}
    if name == BASELINE:
        return {"node_type": "array", "dimension_names": ["n", "k"], "data_type": "float64", "fill_value": "NaN"}
    if name == ASSIGNMENT:
        return {"node_type": "array", "dimension_names": list(ASSIGNMENT_DIMS), "data_type": "int16", "fill_value": -1}
    if name in (PART, ITEM, ITEMS):
        return {"node_type": "array", "dimension_names": ["dataset" if name == ITEMS else name], "data_type": "int64",
                "fill_value": -1}
    if name in (ITEM_CLASS, ITEM_NAME):
        return {"node_type": "array", "dimension_names": ["dataset", ITEM],
                "data_type": "int64" if name == ITEM_CLASS else "string", "fill_value": -1 if name == ITEM_CLASS else ""}
    data_type = {"status": "int8", "reason": "string"}.get(name, "float64")
    return {"node_type": "array", "dimension_names": list(DIMS), "data_type": data_type}


def check_layout(nodes: Mapping[str, dict], documents: Mapping[str, Any]) -> None:
    """``InputError`` naming the first ``zarr.json`` (``documents[name]``) whose node is not what ordercube writes:
    its node type and dimension names, and in cubes of format 2 on its data type, fill value (coordinates,
    baseline, manifest: the cell arrays' are checked by :func:`check_cell_layout`), codecs (byte order,
    compression, checksum) and chunk key encoding. ``nodes``: each document's JSON by node name ("" the root)."""
    cube_format = cube_format_of(nodes.get("", {}).get("attributes"), documents.get("", "zarr.json"))
    keys = ["node_type", "dimension_names"] + (["data_type", "fill_value"] if cube_format >= CHECKSUMMED else [])
    for name, node in nodes.items():
        if "/" in name and name != MANIFEST:
            continue  # a node ordercube does not write (integrity/...): not read
        expected = _expected_node(name)
        found = {key: node.get(key) for key in keys if key in expected}
        if cube_format >= CHECKSUMMED and expected["node_type"] == "array":
            expected["codecs"] = json.loads(_written_codecs(expected["data_type"]))
            if cube_format >= SHARDED and expected["dimension_names"] == list(DIMS):  # a cell array may be sharded
                expected["codecs"] = _sharded_codecs(node.get("codecs"), expected["codecs"])
            expected["chunk_key_encoding"] = {"name": "default", "configuration": {"separator": "/"}}
            found |= {"codecs": node.get("codecs"), "chunk_key_encoding": node.get("chunk_key_encoding")}
        for key, value in found.items():
            if _differs(value, expected[key]):
                raise InputError(f"CUBE: {documents[name]}: its {key} says {_shown(key, value)}, where ordercube writes "
                                 f"{_shown(key, expected[key])}: the file was edited; restore the cube from a copy")


def _differs(value: Any, expected: Any) -> bool:
    return json.dumps(value, sort_keys=True) != json.dumps(expected, sort_keys=True)


def _shown(key: str, value: Any) -> str:
    """A metadata value for a message: codecs as ``bytes(endian=big) zstd(level=0, checksum=false) crc32c``."""
    if key != "codecs" or not isinstance(value, list) or not all(isinstance(codec, dict) for codec in value):
        return json.dumps(value)
    return "[" + ", ".join(str(codec.get("name")) + (
        "(" + ", ".join(f"{k}={json.dumps(v)}" for k, v in sorted(codec["configuration"].items())) + ")"
        if isinstance(codec.get("configuration"), dict) and codec["configuration"] else "") for codec in value) + "]"
