"""The size of a config's work, estimated at validation and refused above limits before anything is allocated.

Four estimates, each against its own limit (``ConfigError`` with the estimate and the fix):

- cells: datasets x sample sizes x methods x k x resamples, the shape of the cube;
- the driver's arrays over that shape: the status array, the plan's mask and the work masks
  (``DRIVER_BYTES_PER_CELL``), held at once by ``validate``, ``run`` and ``status``;
- one cell's memory on a worker, at its largest n, k and number of features: the sample (and the
  pairwise criterion's evaluation sample) with its copies, the n x k work arrays (distances,
  responsibilities) and an algorithm's pairwise matrices (``Algorithm.pair_bytes`` per pair of a half);
- the random-labelling baseline in the driver: two ``baseline_draws`` x n/2 label arrays and their
  temporaries per (n, k), and one storage chunk of every variable (``k x trials_per_chunk``), and of the stored
  assignments (``trials_per_chunk x parts x items``, int16).

They are estimates of order of magnitude (a grid 10x over a limit is what they are for), so the limits
leave room: a grid at the limit still fits on a laptop's driver.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ordercube.pipeline.errors import ConfigError
from ordercube.tasks.algorithms import get_algorithm
from ordercube.tasks.criteria import get_criterion

if TYPE_CHECKING:
    from ordercube.pipeline.config.specs import Config

MAX_CELLS = 10**8
MAX_DRIVER_BYTES = 2 * 2**30
MAX_CELL_BYTES = 4 * 2**30
MAX_CHUNK_BYTES = 512 * 2**20
DRIVER_BYTES_PER_CELL = 8  # status (int8) and the plan, to-do and work masks (bool) with their temporaries
DATA_COPIES = 3  # the sample, its halves, a reference set or a predicted copy
WORK_ARRAYS = 4  # n x k arrays of both halves: squared distances, responsibilities
DEFAULT_TRIALS_PER_CHUNK = 100  # ordercube.pipeline.cube.grid.MAX_TRIALS_PER_CHUNK (grid imports this module's config)


def human(size: float) -> str:
    """``size`` bytes as KiB, MiB, GiB, TiB or PiB."""
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024:
            return f"{size:.0f} {unit}" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:,.1f} PiB"


def cell_bytes(*, n: int, features: int, k: int, evaluation: bool, pair_bytes: float) -> float:
    """The estimated memory of one cell (module docstring)."""
    rows = 2 * n if evaluation else n
    return 8.0 * (DATA_COPIES * rows * features + WORK_ARRAYS * n * k) + pair_bytes * (n / 2) ** 2


def check_size(config: Config) -> None:
    """``ConfigError`` when the grid, the driver's arrays, a cell or the baseline would exceed its limit."""
    shape = {"datasets": len(config.datasets), "n": len({n for d in config.datasets for n in d.n}),
             "methods": len(config.methods), "k": len(config.k), "resamples": config.resamples}
    cells = 1
    for size in shape.values():
        cells *= size
    product = " x ".join(f"{size:,} {name}" for name, size in shape.items())
    if cells > MAX_CELLS:
        raise ConfigError("grid", f"{product} = {cells:,} cells, more than {MAX_CELLS:,} (the driver alone would "
                          f"hold ~{human(cells * DRIVER_BYTES_PER_CELL)} of status and masks)",
                          "lower resamples, k, n or the number of datasets or methods, or split the study into "
                          "several configs and cubes")
    if cells * DRIVER_BYTES_PER_CELL > MAX_DRIVER_BYTES:
        raise ConfigError("grid", f"{product} = {cells:,} cells need ~{human(cells * DRIVER_BYTES_PER_CELL)} of "
                          f"driver arrays, more than {human(MAX_DRIVER_BYTES)}", "lower resamples, k or n, or split "
                          "the study into several configs")
    _check_cells(config)
    _check_baseline(config)
    _check_chunk(config)
    _check_assignments(config)


def _check_cells(config: Config) -> None:
    for i, dataset in enumerate(config.datasets):
        for method in config.methods:
            algorithm = get_algorithm(method.algorithm)
            n = max(dataset.n)
            k = min(max(config.k), max(n // 2, 1))
            size = cell_bytes(n=n, features=dataset.n_features, k=k, evaluation=method.needs_evaluation_sample,
                              pair_bytes=algorithm.pair_bytes)
            if size > MAX_CELL_BYTES:
                raise ConfigError(f"datasets[{i}].n", f"a cell of dataset {dataset.name!r} at n = {n:,} "
                                  f"({dataset.n_features:,} features) with method {method.name!r} ({method.algorithm}, "
                                  f"k = {k:,}) needs ~{human(size)} of memory, more than {human(MAX_CELL_BYTES)} "
                                  "per cell", "lower n (or k), or reduce the features (preprocess: pca, top_variance)")


def _check_baseline(config: Config) -> None:
    if not any(get_criterion(name).normalised_by_random_labels for name in config.criteria):
        return
    n = max(n for dataset in config.datasets for n in dataset.n)
    size = 16.0 * config.baseline_draws * n  # two int64 label arrays of draws x n/2 and two temporaries
    if size > MAX_CELL_BYTES:
        raise ConfigError("baseline_draws", f"the random-labelling baseline of {config.baseline_draws:,} draws at "
                          f"n = {n:,} needs ~{human(size)} of driver memory, more than {human(MAX_CELL_BYTES)}",
                          f"lower baseline_draws (at most {int(MAX_CELL_BYTES / (16 * n)):,} at this n) or n")


def _check_chunk(config: Config) -> None:
    trials = config.execution.trials_per_chunk or min(config.resamples, DEFAULT_TRIALS_PER_CHUNK)
    size = 8.0 * len(config.k) * trials
    if size > MAX_CHUNK_BYTES:
        raise ConfigError("execution.trials_per_chunk", f"a storage chunk of {len(config.k):,} k x {trials:,} trials "
                          f"takes ~{human(size)} per variable, more than {human(MAX_CHUNK_BYTES)}",
                          f"lower trials_per_chunk (at most {int(MAX_CHUNK_BYTES / (8 * len(config.k))):,})")


def _check_assignments(config: Config) -> None:
    """A chunk of stored assignments (one k, a trial chunk, every part and item, int16) within the chunk limit:
    it is written whole, and a block of several k is held by a worker and the driver at once."""
    from ordercube.tasks.schemes import get_scheme

    trials = config.execution.trials_per_chunk or min(config.resamples, DEFAULT_TRIALS_PER_CHUNK)
    items = max((d.items or 0 for d in config.datasets), default=0)
    for i, method in enumerate(config.methods):
        if not method.assignments:
            continue
        scheme = get_scheme(method.scheme)
        parts = len(scheme.part_roles({**scheme.defaults, **method.scheme_params}))
        size = 2.0 * trials * parts * items
        if size > MAX_CHUNK_BYTES:
            most = int(MAX_CHUNK_BYTES / (2 * parts * items))
            raise ConfigError(f"methods[{i}].assignments", f"a chunk of its stored assignments ({trials:,} trials x "
                              f"{parts:,} clusterings x {items:,} items, int16) takes ~{human(size)}, more than "
                              f"{human(MAX_CHUNK_BYTES)}", f"lower execution.trials_per_chunk (at most {max(most, 1):,}), "
                              "or store no assignments for this method")
