"""Is the cube on disk what ordercube wrote? Checksums, lost chunks, damaged metadata.

- Every chunk of a cube created by this version ends in a CRC32C of its bytes (zarr v3's ``crc32c``
  codec, after zstd): a changed byte fails the read, and :func:`read_checked` and :func:`verify` name the
  chunk.
- Every block of cells the driver stores writes one chunk per variable of its method (empty or not:
  see :func:`pipeline.store.write_block`), so a cell marked done whose chunk is absent has lost its
  values (a deleted file or folder). :func:`lost_cells` finds them; runs compute them again, readers
  count them as pending, never as silent NaN.
- A checksum is blind to position: a valid chunk copied over another reads fine. So the driver also
  records, after storing a block, the CRC of every chunk it wrote in a manifest at that chunk's grid
  position (``integrity/crc``, variables by row). A chunk whose CRC is not the one recorded for its
  place counts as lost like a missing one. A crash between a block's writes and its manifest entry
  leaves a mismatch too; that costs only recomputing the block (cells are reproducible bit for bit).
- :func:`check_metadata` reads every ``zarr.json`` of the store before zarr does, so a damaged or
  foreign one is an error naming the file.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import stat
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import product
from pathlib import Path
from typing import Any

import numpy as np
import zarr
from zarr.codecs import Crc32cCodec, ZstdCodec
from zarr.abc.store import SuffixByteRequest
from zarr.core.buffer import default_buffer_prototype
from zarr.core.sync import sync

from pipeline.cube_attrs import BASELINE
from pipeline.errors import InputError
from pipeline.inputfile import kind_of
from pipeline.location import Location
from pipeline.remote import remote_documents
from tasks.cell import Status

DIMS = ("dataset", "n", "model", "k", "trial")
# Cubes of format 2 write every chunk of a stored block and checksum every chunk (format 1 did neither);
# format 3 describes itself (CF attributes, status flags, true_k as a coordinate, consolidated metadata).
FORMAT = 3
CHECKSUMMED = 2  # the first format that writes and checksums every chunk
FORMAT_ATTRIBUTE = "ordercube_format"
COMPRESSORS = (ZstdCodec(level=0), Crc32cCodec())
ALWAYS_WRITTEN = ("reason", "seconds", "status")
GROWTH = "ordercube_growth"  # the record of a growth in progress (old shapes and attributes): see pipeline.store
MANIFEST = "integrity/crc"  # uint64 per (variable, chunk grid position): 2**32 + CRC32C, 0 = not recorded
RECORDED = np.uint64(1 << 32)


def growth_record(group: zarr.Group) -> dict | None:
    """The record of an unfinished growth (old shapes and attributes), None when there is none."""
    return json.loads(str(group.attrs[GROWTH])) if GROWTH in group.attrs else None


def chunk_key(name: str, index: Iterable[int]) -> str:
    return f"{name}/c/" + "/".join(map(str, index))


def stored_chunks(group: zarr.Group, name: str) -> set[tuple[int, ...]]:
    """Grid indices of the chunks of array ``name`` present in the store."""
    prefix = f"{name}/c/"

    async def keys() -> list[str]:
        return [key async for key in group.store.list_prefix(prefix)]

    found = set()
    for key in sync(keys()):
        parts = key[len(prefix):].split("/")
        if all(part.isdigit() for part in parts):
            found.add(tuple(int(part) for part in parts))
    return found


def chunk_grid_any(mask: np.ndarray, chunks: tuple[int, ...]) -> np.ndarray:
    """For each chunk of a cell array chunked by ``chunks``: does ``mask`` hold a True cell in it?"""
    grid = tuple(-(-size // chunk) for size, chunk in zip(mask.shape, chunks))
    padded = np.zeros(tuple(g * c for g, c in zip(grid, chunks)), dtype=bool)
    padded[tuple(slice(0, size) for size in mask.shape)] = mask
    blocks = padded.reshape([x for g, c in zip(grid, chunks) for x in (g, c)])
    return blocks.any(axis=tuple(range(1, 2 * len(grid), 2)))


def expand_grid(grid_mask: np.ndarray, chunks: tuple[int, ...], shape: tuple[int, ...]) -> np.ndarray:
    """The cells of the chunks marked in ``grid_mask`` (the inverse of :func:`chunk_grid_any`'s reduction)."""
    cells = grid_mask
    for axis, chunk in enumerate(chunks):
        cells = np.repeat(cells, chunk, axis=axis)
    return cells[tuple(slice(0, size) for size in shape)]


def variables_of_models(group: zarr.Group, models: list[str]) -> dict[str, np.ndarray]:
    """Per cell variable the cube should hold: which of its models write it (a boolean per model)."""
    from tasks.criteria import get_criterion

    methods = json.loads(str(group.attrs["ordercube_identity"]))["methods"]
    uses: dict[str, np.ndarray] = {name: np.ones(len(models), dtype=bool) for name in ALWAYS_WRITTEN}
    for m, model in enumerate(models):
        for criterion in methods.get(model, {}).get("criteria", []):
            try:
                variables = get_criterion(criterion).variables
            except (KeyError, ValueError):  # a plugin's criterion that is not loaded: its chunks are not checked
                continue
            for variable in variables:
                uses.setdefault(variable, np.zeros(len(models), dtype=bool))[m] = True
    return uses


@dataclass
class Lost:
    """Cells marked done (any status but pending) whose values are gone."""

    cells: np.ndarray
    missing_variables: list[str] = field(default_factory=list)
    missing_chunks: list[str] = field(default_factory=list)
    misplaced_chunks: list[str] = field(default_factory=list)
    unrecorded: list[tuple[str, tuple[int, ...]]] = field(default_factory=list)
    baseline: str = ""  # where the random-labelling baseline that a criterion is divided by is lost

    @property
    def count(self) -> int:
        return int(self.cells.sum())

    def describe(self) -> str:
        where = [f"variable {name} missing" for name in self.missing_variables]
        where += _first(self.missing_chunks, "missing")
        where += _first(self.misplaced_chunks, "not the chunk recorded at its place")
        where += [self.baseline] if self.baseline else []
        return (f"{self.count} cell(s) marked done have lost their values ({'; '.join(where)}): "
                "they count as pending")

    @property
    def remedy(self) -> str:
        """What ``ordercube run`` does about it (for a lost baseline alone: computes the baseline, not the cells)."""
        only_baseline = not (self.missing_variables or self.missing_chunks or self.misplaced_chunks)
        return ("'ordercube run' computes the baseline again (not the cells)" if self.baseline and only_baseline
                else "'ordercube run' computes them again")


def _first(keys: list[str], what: str, shown: int = 3) -> list[str]:
    if not keys:
        return []
    more = f" and {len(keys) - shown} more" if len(keys) > shown else ""
    return [f"{', '.join(keys[:shown])}{more} {what}"]


def lost_cells(group: zarr.Group, status: np.ndarray, models: list[str], *, baseline: bool = True) -> Lost:
    """The cells whose status says done but whose value chunks (or whole variables) are absent; with
    ``baseline``, also the ok cells of a criterion divided by the random-labelling baseline
    (:func:`lost_baseline`) where that baseline is lost.

    Cubes of format 1 wrote no chunk that held only fill values, so for them only missing variables
    are detected.
    """
    done = status != 0
    lost = np.zeros(status.shape, dtype=bool)
    result = Lost(cells=lost)
    if not done.any():
        return result
    if baseline:
        cells, result.baseline = lost_baseline(group, status, models)
        lost |= cells
    every_chunk = int(group.attrs.get(FORMAT_ATTRIBUTE, 1)) >= CHECKSUMMED
    present_arrays = {name for name, _ in group.arrays()}
    for name, used in variables_of_models(group, models).items():
        expected = done & used[None, None, :, None, None]
        if not expected.any():
            continue
        if name not in present_arrays:
            result.missing_variables.append(name)
            lost |= expected
            continue
        if not every_chunk:
            continue
        chunks = tuple(group[name].chunks)  # type: ignore[union-attr]
        grid = chunk_grid_any(expected, chunks)
        absent = grid.copy()
        for index in stored_chunks(group, name):
            if len(index) == grid.ndim and all(i < s for i, s in zip(index, grid.shape)):
                absent[index] = False
        same_grid = chunks == tuple(group["status"].chunks)  # type: ignore[union-attr]
        misplaced = misplaced_chunks(group, name, grid & ~absent, result.unrecorded) if same_grid else np.zeros_like(grid)
        if absent.any() or misplaced.any():
            result.missing_chunks += [chunk_key(name, index) for index in zip(*np.nonzero(absent))]
            result.misplaced_chunks += [chunk_key(name, index) for index in zip(*np.nonzero(misplaced))]
            lost |= expected & expand_grid(absent | misplaced, chunks, status.shape)
    return result


def lost_baseline(group: zarr.Group, status: np.ndarray, models: list[str]) -> tuple[np.ndarray, str]:
    """The ok cells of the models with a criterion divided by the random-labelling baseline (Lange et al.
    2004, eq. 5: ``lange`` / ``lange_random`` at the same n and k) where that baseline is lost (its array
    deleted, or its chunk: NaN where a value was stored), and a description of the loss ("" when none).
    The baseline is written before any cell, so an ok cell always had it."""
    from tasks.criteria import get_criterion

    methods = json.loads(str(group.attrs["ordercube_identity"]))["methods"]
    normalised: list[str] = []
    uses = np.zeros(len(models), dtype=bool)
    for m, model in enumerate(models):
        for criterion in methods.get(model, {}).get("criteria", []):
            try:
                divided = get_criterion(criterion).normalised_by_random_labels
            except (KeyError, ValueError):  # a plugin's criterion that is not loaded
                continue
            if divided:
                uses[m] = True
                normalised += [criterion] if criterion not in normalised else []
    cells = (status == Status.OK) & uses[None, None, :, None, None]
    if not cells.any():
        return np.zeros(status.shape, dtype=bool), ""
    if BASELINE in group:
        stored = read_checked(group, BASELINE, _store_name(group.store))[: status.shape[1], : status.shape[3]]
        cells &= np.isnan(stored)[None, :, None, :, None]
    if not cells.any():
        return cells, ""
    n_labels = np.asarray(group["n"][: status.shape[1]])  # type: ignore[index]
    at = sorted(int(n) for n in n_labels[cells.any(axis=(0, 2, 3, 4))])
    gone = "is missing" if BASELINE not in group else f"is lost at n = {', '.join(map(str, at))}"
    return cells, f"the random-labelling baseline {BASELINE} that {', '.join(normalised)} is divided by {gone}"


def _chunk_indices(stored: zarr.Array) -> Iterator[tuple[int, ...]]:
    grid = tuple(-(-size // chunk) for size, chunk in zip(stored.shape, stored.chunks))
    return iter(product(*(range(g) for g in grid)))


def corrupt_chunks(group: zarr.Group, names: Iterable[str] | None = None) -> list[str]:
    """Every chunk of the named arrays (all by default) that cannot be read back: a failed checksum,
    a truncated or garbled file. Reads the whole cube (``ordercube status --verify``)."""
    bad = []
    every = [*group.arrays(), *([(MANIFEST, group[MANIFEST])] if MANIFEST in group else [])]
    for name, stored in every:
        if names is not None and name not in names:
            continue
        present = stored_chunks(group, name)
        bad += corrupt_chunks_at(group, name, (index for index in _chunk_indices(stored) if index in present))
    return bad


def corruption_error(path: Path | str | Location, bad: list[str]) -> InputError:
    listed = ", ".join(bad[:5]) + (f" and {len(bad) - 5} more" if len(bad) > 5 else "")
    return InputError(f"CUBE: {path}: {len(bad)} chunk(s) fail their checksum or cannot be decoded: {listed}. The files "
                      "were changed after ordercube wrote them; delete those chunk files (their cells become pending and "
                      "the next 'ordercube run' computes them again) or restore the cube from a copy")


def read_checked(group: zarr.Group, name: str, path: Path | Location) -> np.ndarray:
    """The whole array ``name``; ``InputError`` naming the damaged chunks when a read fails."""
    try:
        return np.asarray(group[name][:])  # type: ignore[index]
    except Exception:  # noqa: BLE001 - find out which chunk it was
        bad = corrupt_chunks(group, [name])
        if not bad:
            raise
        raise corruption_error(path, bad) from None


def chunk_grid_shape(shape: Sequence[int], chunks: Sequence[int]) -> tuple[int, ...]:
    return tuple(-(-size // chunk) for size, chunk in zip(shape, chunks))


def manifest_rows(variables: Sequence[str]) -> list[str]:
    """The arrays whose chunks the manifest records: all cell arrays but the wall-clock ``seconds``, so
    that the manifest, like the rest of the cube, is the same bit for bit in every run of a config."""
    return [*variables, "reason", "status"]


def create_manifest(group: zarr.Group, variables: Sequence[str]) -> None:
    """An empty manifest for the cell ``variables`` of a new cube (see the module docstring)."""
    status = group["status"]
    grid = chunk_grid_shape(status.shape, status.chunks)  # type: ignore[union-attr]
    manifest = group.require_group("integrity").create_array(
        "crc", shape=(len(variables), *grid), chunks=(len(variables), 1, 1, 1, *grid[3:]), dtype="uint64",
        fill_value=0, compressors=COMPRESSORS, dimension_names=("variable", "dataset", "n", "model", "k", "trial"))
    manifest.attrs["variables"] = list(variables)


def grow_manifest(group: zarr.Group, variables: Sequence[str]) -> None:
    """Fit the manifest to the cube's grown chunk grid and add rows for new ``variables`` (inside a growth)."""
    if MANIFEST not in group:
        return
    manifest = group[MANIFEST]
    known = list(manifest.attrs["variables"])  # type: ignore[arg-type]
    known += [name for name in variables if name not in known]
    status = group["status"]
    manifest.resize((len(known), *chunk_grid_shape(status.shape, status.chunks)))  # type: ignore[union-attr]
    manifest.attrs["variables"] = known


def _suffixes(store: Any, keys: Sequence[str]) -> list[bytes | None]:
    """The last 4 bytes (the CRC32C the codec appended) of each stored chunk, None for an absent one."""
    prototype = default_buffer_prototype()

    async def read() -> list:
        return await asyncio.gather(*(store.get(key, prototype=prototype, byte_range=SuffixByteRequest(4)) for key in keys))

    return [None if buffer is None else buffer.to_bytes() for buffer in sync(read())]


def _as_recorded(suffix: bytes | None) -> np.uint64:
    return np.uint64(0) if suffix is None else RECORDED | np.uint64(int.from_bytes(suffix, "little"))


def record_chunks(arrays: Mapping[str, zarr.Array], names: Iterable[str], position: tuple[int, ...], *,
                  forget: bool = False) -> None:
    """Record in ``arrays[MANIFEST]`` the CRCs of the chunks of ``names`` at grid ``position``, as stored now;
    with ``forget``, mark them not recorded (before they are rewritten: a crash in between then leaves
    entries that accept the chunk, which the next run records, not a mismatch that discards done cells)."""
    manifest = arrays[MANIFEST]
    rows = list(manifest.attrs["variables"])  # type: ignore[arg-type]
    names = [name for name in names if name in rows]
    if forget:
        values = np.zeros(len(names), dtype=np.uint64)
    else:
        suffixes = _suffixes(manifest.store, [chunk_key(arrays[name].path, position) for name in names])
        values = np.array([_as_recorded(s) for s in suffixes], dtype=np.uint64)
    manifest.set_orthogonal_selection(([rows.index(name) for name in names], *(int(i) for i in position)), values)


def record_unrecorded(group: zarr.Group, unrecorded: Sequence[tuple[str, tuple[int, ...]]]) -> None:
    """Record the CRCs of done cells' chunks whose manifest entries a crash left unrecorded."""
    by_position: dict[tuple[int, ...], list[str]] = {}
    for name, position in unrecorded:
        by_position.setdefault(position, []).append(name)
    arrays = {name: group[name] for names in by_position.values() for name in names} | {MANIFEST: group[MANIFEST]}
    for position, names in by_position.items():
        record_chunks(arrays, names, position)  # type: ignore[arg-type]


def misplaced_chunks(group: zarr.Group, name: str, expected: np.ndarray,
                     unrecorded: list[tuple[str, tuple[int, ...]]] | None = None) -> np.ndarray:
    """Of the chunks marked in ``expected`` (a chunk-grid mask), those whose CRC is not the one the
    manifest recorded at their place (copied from elsewhere, rewritten by someone else). Chunks whose
    entry is not recorded (a crash mid-write) are accepted and appended to ``unrecorded``."""
    misplaced = np.zeros(expected.shape, dtype=bool)
    if MANIFEST not in group:
        return misplaced
    manifest = group[MANIFEST]
    rows = list(manifest.attrs["variables"])  # type: ignore[arg-type]
    if name not in rows:
        return misplaced
    try:
        recorded = np.asarray(manifest[rows.index(name)])  # type: ignore[index]
    except ValueError:  # the manifest's own checksum failed
        raise corruption_error(_store_name(group.store), corrupt_chunks(group, [MANIFEST])) from None
    positions = list(zip(*np.nonzero(expected)))
    actual = _suffixes(group.store, [chunk_key(name, position) for position in positions])
    for position, suffix in zip(positions, actual):
        inside = all(i < s for i, s in zip(position, recorded.shape))
        if suffix is None:
            continue
        if not inside or recorded[position] == 0:
            if unrecorded is not None and inside:
                unrecorded.append((name, tuple(int(i) for i in position)))
        elif recorded[position] != _as_recorded(suffix):
            misplaced[position] = True
    undecodable = corrupt_chunks_at(group, name, zip(*np.nonzero(misplaced)))
    if undecodable:  # a run would read it to rewrite part of it, a report to show it: damage, not a loss
        raise corruption_error(_store_name(group.store), undecodable)
    return misplaced


def corrupt_chunks_at(group: zarr.Group, name: str, positions: Iterable[tuple[int, ...]]) -> list[str]:
    """Of the chunks of array ``name`` at grid ``positions``, those that cannot be decoded (as :func:`corrupt_chunks`)."""
    stored, bad = group[name], []
    for position in positions:
        index = tuple(int(i) for i in position)
        try:
            stored.get_block_selection(index)  # type: ignore[union-attr]
        except Exception as error:  # any decoding failure of the stored bytes is damage  # noqa: BLE001
            bad.append(f"{chunk_key(name, index)} ({str(error).split('.')[0]})")
    return bad


def _store_name(store: Any) -> Path | str:
    """The folder, or the URL, of a zarr store (for messages)."""
    if getattr(store, "root", None) is not None:
        return Path(str(store.root))
    protocol = getattr(getattr(store, "fs", None), "protocol", "")
    protocol = protocol[0] if isinstance(protocol, (tuple, list)) else protocol
    return f"{protocol}://{getattr(store, 'path', '')}" if protocol else str(store)


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
    legacy = LEGACY_ATTRIBUTE_KEYS if cube_format < FORMAT else {}
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
                *(["true_k"] if cube_format >= FORMAT else [])]
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
    for name in (*DIMS, "true_k", BASELINE):  # small arrays, read by every command: a changed byte is named here
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
            if dim in DIMS:
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
        grid = (len(manifest.attrs.get("variables", [])), *chunk_grid_shape(status.shape, status.chunks))  # type: ignore
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
    shapes = [stored.chunks for stored in cells.values()]
    agreed = max(set(shapes), key=shapes.count)
    for name, stored in sorted(cells.items()):
        expected = {"status": (np.dtype("int8"), 0), "reason": (None, "")}.get(name, (np.dtype("float64"), np.nan))
        fill = stored.fill_value
        if stored.chunks != agreed:
            problem = f"its chunk shape says {list(stored.chunks)}, where the cube's other arrays have {list(agreed)}"
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
