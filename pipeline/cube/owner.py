"""The cube: one object owns its integrity checks, creation, growth, writer lock, region writes and status scan.

A cube is a zarr v3 group written by one process (the driver of a run) and read with xarray: per-cell
variables over ``(dataset, n, model, k, trial)``, the random-labelling baseline over ``(n, k)``, and attributes
holding the config, its identity, the plan and the package versions (:mod:`ordercube.pipeline.cube.layout`). Values of a
block are written before its status, so a cell counts as done only once its values are on disk; the cube is the
only durable state of a sweep.

Everything the rest of the code does with a cube goes through :class:`Cube`:

- finding and making one: :meth:`Cube.exists`, :meth:`Cube.check_new`, :meth:`Cube.create` (built aside and moved
  into place by one rename, or uploaded root ``zarr.json`` last);
- opening one, its metadata and coordinates checked (:mod:`ordercube.pipeline.cube.checks`): :meth:`Cube.open` to read,
  :meth:`Cube.open_for` to extend it with a config (which must agree with the cells stored);
- the writer lock, held for as long as a run writes: :meth:`Cube.lock` (:mod:`ordercube.pipeline.cube.lock`);
- growth, journalled and rolled back when interrupted: :meth:`Cube.grow`, :meth:`Cube.repair`
  (:mod:`ordercube.pipeline.cube.growth`);
- region writes of a block's results, checksums recorded in the manifest: :meth:`Cube.writer`
  (:mod:`ordercube.pipeline.cube.writes`, :mod:`ordercube.pipeline.cube.integrity`);
- the status scan, lost values read as pending: :meth:`Cube.status_for_planning`, :meth:`Cube.count_cells`,
  :meth:`Cube.verify`; and the cube as an ``xarray.Dataset``: :meth:`Cube.dataset`, :meth:`Cube.load`.

:func:`open_cube` and :func:`load_cube` are the readers of the Python API (``ordercube.open_cube``), one line each
over the Cube.
"""

from __future__ import annotations

import json
import logging
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import zarr

from ordercube.pipeline.cube.assignments import ASSIGNMENT, add_lost
from ordercube.pipeline.cube.assignments import record_unrecorded as record_assignments
from ordercube.pipeline.cube.attrs import BASELINE, variable_attrs
from ordercube.pipeline.cube.checks import check_cube, check_metadata
from ordercube.pipeline.cube.growth import extend, open_existing, repair
from ordercube.pipeline.cube.metadata import described
from ordercube.pipeline.cube.layout import (
    array, check_new_cube_path, create, is_cube, shard_cells, stored_chunk_shape,
    stored_coords,
)
from ordercube.pipeline.cube.writes import BlockWriter, flush_open_writers, flush_seconds
from ordercube.pipeline.errors import InputError
from ordercube.pipeline.cube.grid import DIMS, Coords, planned_mask
from ordercube.pipeline.cube.integrity import (
    MANIFEST, Lost, corrupt_chunks, corruption_error, growth_record, lost_cells, read_checked, record_unrecorded,
    stored_chunks,
)
from ordercube.pipeline.files.location import Location, location
from ordercube.pipeline.cube.lock import CubeLock
from ordercube.tasks.trial import Status

if TYPE_CHECKING:  # xarray (and pandas under it) only where a cube is read as a Dataset
    import xarray as xr

    from ordercube.pipeline.config.specs import Config

__all__ = ["BlockWriter", "Cube", "LostValuesWarning", "count_planned", "load_cube", "open_cube"]


class LostValuesWarning(UserWarning):
    """Cells marked done in a cube have lost their values; they are read as pending."""


class Cube:
    """An ordercube cube at ``place``, open as the zarr group ``group``.

    Made by :meth:`open` (to read), :meth:`open_for` (to extend it with a config) or :meth:`create` (a new
    one), never from a group that was not checked; writing (:meth:`grow`, :meth:`writer`) needs the cube open
    for writing and its lock (:meth:`lock`) held.
    """

    def __init__(self, group: zarr.Group, place: Location) -> None:
        self.group = group
        self.place = place

    def __repr__(self) -> str:
        return f"Cube({str(self.place)!r})"

    # --- finding, making and opening a cube -------------------------------------------------------------------

    @staticmethod
    def exists(where: str | Path | Location) -> bool:
        """Is there a cube (its root ``zarr.json``) at ``where``? For a URL, ``InputError`` if it cannot be reached."""
        return is_cube(where)

    @staticmethod
    def check_new(where: str | Path | Location) -> None:
        """``InputError`` unless a new cube can be created at ``where``: absent or an empty folder, writable, not
        inside another cube (for a URL: nothing stored under it but the leftovers of an interrupted creation)."""
        check_new_cube_path(where)

    @classmethod
    def create(cls, where: str | Path | Location, config: Config, coords: Coords, chunks: dict[str, int],
               prepare: Callable[[Cube], Any] = lambda cube: None) -> Cube:
        """A new all-pending cube of ``config`` at ``where`` (checked with :meth:`check_new`), the caller holding
        its lock: built aside, handed to ``prepare`` there (which fills the baseline), and moved into place by
        one rename (on object storage: uploaded, its root ``zarr.json`` last), so ``where`` never holds a
        half-made cube."""
        place = location(where)
        group = create(place, config, coords, chunks, prepare=lambda built: prepare(cls(built, place)))
        return cls(group, place)

    @classmethod
    def open(cls, where: str | Path | Location, *, storage_options: dict[str, Any] | None = None) -> Cube:
        """The cube at ``where`` for reading, its metadata, shapes and labels checked (``InputError`` naming what
        is wrong, after the key ``CUBE``). ``where`` may be a URL, with fsspec ``storage_options``."""
        place = location(where, key="CUBE", storage_options=storage_options)
        if not is_cube(place):
            raise InputError(f"CUBE: {place} is not a cube (no zarr.json); give the --out path of an ordercube run")
        check_metadata(place)
        group = ReadOnlyGroup(zarr.open_group(place.store(read_only=True), mode="r", use_consolidated=False))
        if "ordercube_plan" not in group.attrs:
            raise InputError(f"CUBE: {place} is a zarr store but not an ordercube cube")
        check_cube(group, place)
        return cls(group, place)

    @classmethod
    def open_for(cls, where: str | Path | Location, config: Config, *, writable: bool = False) -> Cube:
        """The existing cube at ``where``, checked as :meth:`open` does and against ``config``: ``InputError``
        (after the key ``--out``) when the config disagrees with it on anything its stored cells depend on.
        ``writable``: open for :meth:`grow` and :meth:`writer` (the caller holds the lock)."""
        place = location(where)
        return cls(open_existing(place, config, mode="r+" if writable else "r"), place)

    @staticmethod
    def lock(where: str | Path | Location, break_lock: str | None = None) -> CubeLock:
        """The writer lock of the cube at ``where`` (a context manager; ``InputError`` naming the holder when
        another live run writes it). Held for as long as a run creates, grows, repairs or fills the cube.
        ``break_lock``: ``HOST:PID`` of a run on another machine whose S3 lock object is to be taken over, once its
        heartbeat is older than the lease (:mod:`ordercube.pipeline.cube.remote`)."""
        return CubeLock(where, break_lock)

    # --- growth ---------------------------------------------------------------------------------------------

    def repair(self) -> list[str]:
        """Undo what an interrupted run left: temp files of an interrupted write, an unfinished growth (rolled
        back; idempotent). Returns notes saying what was done."""
        return repair(self.group, self.place)

    def grow(self, config: Config, wanted: Coords) -> tuple[Coords, list[str]]:
        """Repair the cube (:meth:`repair`), then extend it to the coordinates ``wanted`` and the variables of
        ``config`` (opened with :meth:`open_for`), as one growth that the next opener rolls back if it is
        interrupted; a format-2 cube is upgraded to format 3 inside it. Returns the coordinates and notes."""
        notes = self.repair()
        coords, grown = extend(self.group, config, wanted)
        return coords, notes + grown

    # --- what the cube holds ----------------------------------------------------------------------------------

    @property
    def coords(self) -> Coords:
        """The coordinate labels; those from before an interrupted growth while its record is there."""
        return stored_coords(self.group)

    @property
    def chunk_shape(self) -> dict[str, int]:
        """The chunk size along each cell dimension (fixed when the cube was created)."""
        return stored_chunk_shape(self.group)

    @property
    def attrs(self) -> Any:
        """The group's attributes (the adaptive rounds keep their decision records there)."""
        return self.group.attrs

    def __contains__(self, name: str) -> bool:
        return name in self.group

    def read(self, name: str) -> np.ndarray:
        """The whole array ``name`` (``status``, the baseline, a criterion), in memory (with every block the run's
        writers hold written first)."""
        flush_open_writers()
        return np.asarray(array(self.group, name)[:])

    def write_baseline(self, values: np.ndarray) -> None:
        """Store the random-labelling baseline (shape ``(n, k)``), estimated by
        :func:`ordercube.pipeline.run.sweep.fill_baseline`."""
        array(self.group, BASELINE)[:] = values

    def writer(self) -> BlockWriter:
        """The cube's arrays opened once for the region writes of a run's blocks (values, then status, then
        the chunks' checksums in the manifest)."""
        return BlockWriter(self.group)

    # --- the status scan --------------------------------------------------------------------------------------

    def lost(self, status: np.ndarray, *, baseline: bool = True, coords: Coords | None = None) -> Lost:
        """The done cells of ``status`` whose values are gone (see :func:`ordercube.pipeline.cube.integrity.lost_cells`);
        ``coords``: the cube's, when the caller has read them already."""
        models = list((self.coords if coords is None else coords).model)
        return add_lost(self.group, status, models, lost_cells(self.group, status, models, baseline=baseline))

    def status_for_planning(self, *, baseline: bool = True, coords: Coords | None = None) -> tuple[np.ndarray, Lost]:
        """The status as ``status``, ``run`` and ``validate`` count it: read with its checksums checked (the shape
        from before an unfinished growth), cells whose values were lost made pending again (without ``baseline``:
        not those whose only loss is the random-labelling baseline, which ``run`` computes again before it plans).
        ``coords``: the cube's, when the caller has read them already."""
        flush_open_writers()
        coords = self.coords if coords is None else coords
        status = read_checked(self.group, "status", self.place)[tuple(slice(0, size) for size in coords.shape)]
        lost = self.lost(status, baseline=baseline, coords=coords)
        status[lost.cells] = Status.PENDING
        return status, lost

    def record_unrecorded(self, unrecorded: Sequence[tuple[str, tuple[int, ...]]]) -> None:
        """Record the checksums of done cells' chunks that a crash left out of the manifest."""
        others = record_assignments(self.group, list(unrecorded))
        if others:
            record_unrecorded(self.group, others)

    @staticmethod
    def check_settings() -> None:
        """``ConfigError`` (exit 2) when an environment variable that sets how cubes are written holds no valid
        value (``ORDERCUBE_SHARD_CELLS``, ``ORDERCUBE_FLUSH_SECONDS``, ``ORDERCUBE_LOCK_LEASE_SECONDS``,
        ``ORDERCUBE_STORE_TIMEOUT_SECONDS``): checked before a cube is created or grown."""
        from ordercube.pipeline.cube.remote import lease_seconds
        from ordercube.pipeline.files.location import store_timeouts

        shard_cells()
        flush_seconds()
        lease_seconds()
        store_timeouts()

    def count_cells(self) -> dict[str, int]:
        """Planned cells by status (``total, ok, failed, infeasible, crashed, pending, skipped``), read as
        :meth:`dataset` reads them (lost values count as pending, with a :class:`LostValuesWarning`; an interrupted
        growth as the cube before it), from the ``status`` array alone: no xarray."""
        coords = self.coords  # read once: each reading is a round of the store's requests
        status, lost = self.status_for_planning(coords=coords)
        if lost.count:
            warnings.warn(f"{self.place}: {lost.describe()}; {lost.remedy}", LostValuesWarning, stacklevel=2)
        return count_planned(status, planned_mask(json.loads(str(self.attrs["ordercube_plan"])), coords))

    def verify(self) -> str:
        """Read back every chunk; a one-line summary, or ``InputError`` naming the damaged chunks."""
        bad = corrupt_chunks(self.group)
        if bad:
            raise corruption_error(self.place, bad)
        names = [name for name, _ in self.group.arrays()] + ([MANIFEST] if MANIFEST in self.group else [])
        chunks = sum(len(stored_chunks(self.group, name)) for name in names)
        return f"verified: {chunks} chunks of {len(names)} arrays read back and match their checksums"

    # --- the cube as an xarray.Dataset --------------------------------------------------------------------------

    def dataset(self, *, _stacklevel: int = 2) -> xr.Dataset:
        """The cube as an ``xarray.Dataset`` (lazily loaded, no Dask needed); see :func:`open_cube`."""
        import xarray as xr

        from ordercube.pipeline.system.duck_arrays import defer_dask_array_import

        defer_dask_array_import()  # a cube read never holds dask arrays: xarray's check for them need not import dask.array

        flush_open_writers()
        group, place = self.group, self.place
        record = growth_record(group)
        if record is not None:  # a crash mid-growth: read the cube as it was before (the next run rolls it back)
            cube = _before_growth(group, record)
        else:
            cube = xr.open_zarr(place.store(read_only=True), consolidated=False, chunks=None, zarr_format=3)
        status = read_checked(group, "status", place)[tuple(slice(0, size) for size in cube["status"].shape)]
        models = [str(m) for m in cube["model"].values]
        lost = add_lost(group, status, models, lost_cells(group, status, models))
        cube = described(cube)
        for name in lost.missing_variables:
            if name != ASSIGNMENT:  # its cells read as pending; a run makes it again
                cube[name] = xr.full_like(cube["seconds"], np.nan).assign_attrs(variable_attrs(name))
        if BASELINE not in cube:  # deleted: every value divided by it reads as NaN, its cells as lost (lost_baseline)
            cube[BASELINE] = xr.DataArray(np.full((cube.sizes["n"], cube.sizes["k"]), np.nan), dims=("n", "k"),
                                          attrs=variable_attrs(BASELINE))
        if lost.count:
            warnings.warn(f"{place}: {lost.describe()}; {lost.remedy}", LostValuesWarning, stacklevel=_stacklevel)
            cube["status"] = xr.DataArray(np.where(lost.cells, np.int8(0), status), dims=DIMS, attrs=cube["status"].attrs)
        return cube

    def load(self) -> xr.Dataset:
        """:meth:`dataset`, read into memory; ``InputError`` naming the damaged chunks when a read fails."""
        cube = self.dataset()
        try:
            return cube.load()
        except ValueError:
            bad = corrupt_chunks(self.group)
            if not bad:
                raise
            # zarr's other reads of that batch are abandoned mid-flight: asyncio would report each one at exit.
            logging.getLogger("asyncio").setLevel(logging.CRITICAL)
            raise corruption_error(self.place, bad) from None


def _before_growth(group: zarr.Group, record: Mapping[str, Any]) -> xr.Dataset:
    """The cube as it was before the growth whose ``record`` is in its attributes, read into memory
    (its arrays may have mixed sizes, which xarray cannot open)."""
    import xarray as xr

    shapes = record["shapes"]
    coords = {dim: np.asarray(array(group, dim)[: shapes[dim][0]]) for dim in DIMS}
    variables = {}
    for name, stored in group.arrays():
        if name in DIMS or name not in shapes:
            continue
        dims = tuple(getattr(stored.metadata, "dimension_names", None) or ())
        values = np.asarray(stored[tuple(slice(0, size) for size in shapes[name])])
        # as xarray decodes them: its encoding attributes (coordinates, _FillValue) are not the variable's
        attrs = {key: value for key, value in stored.attrs.items() if key != "coordinates" and not key.startswith("_")}
        variables[name] = xr.Variable(dims, values, attrs=attrs)
    return xr.Dataset(variables, coords=coords, attrs=dict(record["attrs"]))


def count_planned(status: np.ndarray, planned: np.ndarray) -> dict[str, int]:
    """The ``planned`` cells of ``status`` counted by status code."""
    chosen = status[planned]
    counts = {s.name.lower(): int((chosen == s).sum()) for s in Status}
    return {"total": int(planned.sum()), "ok": counts["ok"], "failed": counts["failed"],
            "infeasible": counts["infeasible"], "crashed": counts["crashed"], "pending": counts["pending"],
            "skipped": counts["skipped"]}


def open_cube(path: str | Path | Location, *, storage_options: dict[str, Any] | None = None) -> xr.Dataset:
    """The cube at ``path`` as an ``xarray.Dataset`` (lazily loaded, no Dask needed): ``Cube.open(path).dataset()``.

    Dimensions: ``dataset``, ``n``, ``model`` (the config's methods), ``k``, ``trial`` (resamples).
    Coordinates appear in the order they were added; sort with ``cube.sortby('n')`` when it matters.
    Cells marked done whose values were lost (deleted chunks or variables) are returned as pending,
    with a :class:`LostValuesWarning`; a damaged chunk or metadata file is an ``InputError`` naming it.
    A growth interrupted by a crash is invisible: the shapes from before it are read.

    ``path`` may be a URL (``s3://bucket/cube.zarr``, ``memory://...``; see :mod:`ordercube.pipeline.files.location`),
    with fsspec ``storage_options`` for its backend (e.g. ``{"endpoint_url": ...}``).
    """
    return Cube.open(path, storage_options=storage_options).dataset(_stacklevel=3)


def load_cube(path: str | Path | Location, *, storage_options: dict[str, Any] | None = None) -> xr.Dataset:
    """:func:`open_cube`, read into memory (``Cube.open(path).load()``); ``InputError`` naming the damaged chunks
    when a read fails."""
    return Cube.open(path, storage_options=storage_options).load()


class ReadOnlyGroup:
    """A cube's zarr group opened for reading, its members listed and opened once, all together: the checks of
    :meth:`Cube.open` and the counts of ``status`` look arrays up many times (``status`` 13 times) and list them
    three times, and every lookup is a metadata read and a round trip to zarr's event loop (0.5-1 ms each; a
    listing 14 ms). Anything else is the group's own."""

    def __init__(self, group: zarr.Group) -> None:
        self._group = group
        self._members: dict[str, Any] | None = None

    def _listed(self) -> dict[str, Any]:
        if self._members is None:
            self._members = dict(self._group.members())  # one listing, the members' metadata read concurrently
        return self._members

    def __getitem__(self, name: str) -> Any:
        members = self._listed()
        return members[name] if name in members else self._group[name]  # a path within a member: the group's

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and (name in self._listed() or ("/" in name and name in self._group))

    def arrays(self) -> Iterator[tuple[str, zarr.Array]]:
        return ((name, member) for name, member in self._listed().items() if isinstance(member, zarr.Array))

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self._group, attribute)
