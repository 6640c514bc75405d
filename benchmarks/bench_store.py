"""What integrity costs the single writer: storing blocks with checksums, every chunk and the manifest,
against the plain writes of format 1 (no checksum codec, empty chunks skipped, no manifest), in one run.

Also times consolidating the metadata (done after every change of the cube's metadata: creation, growth,
roll-back) and what it saves a plain ``xr.open_zarr``, and the checks that read the cube: the lost-cell check
of ``status``/``run`` (chunk listing and manifest comparison) and ``status --verify`` (every chunk read
back), against reading the status array.

    python benchmarks/bench_store.py [--blocks 2000] [--trials-per-chunk 5]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import xarray as xr
import zarr

from ordercube.pipeline.config.study import parse_config
from ordercube.pipeline.cube.owner import Cube
from ordercube.pipeline.cube.checks import check_entries, check_metadata
from ordercube.pipeline.cube.metadata import consolidate
from ordercube.pipeline.cube.writes import write_block
from ordercube.pipeline.cube.grid import DIMS, Chunk, config_coords, default_chunks
from ordercube.pipeline.cube.integrity import corrupt_chunks
from ordercube.tasks.cell import BlockResult, Status


def _config(resamples: int, trials_per_chunk: int, out: Path):
    raw = {"name": "bench", "seed": 1, "n": [100, 200, 400, 800], "k": list(range(2, 12)), "resamples": resamples,
           "datasets": [{"name": f"g{i}", "kind": "lange_gaussians3"} for i in range(5)],
           "methods": [{"name": "km", "algorithm": "kmeans", "predictor": "nearest_centroid",
                        "criteria": ["lange", "pairwise", "prediction_strength"]}],
           "execution": {"trials_per_chunk": trials_per_chunk}}
    return parse_config(raw, out=str(out))


def _blocks(coords, chunks, count: int):
    kc, tc = chunks["k"], chunks["trial"]
    out = []
    for d in range(len(coords.dataset)):
        for n in range(len(coords.n)):
            for t0 in range(0, len(coords.trial), tc):
                trials = tuple(range(t0, min(t0 + tc, len(coords.trial))))
                out.append(Chunk(d, n, 0, tuple(range(kc)), trials))
    return out[:count]


def _result(chunk: Chunk, variables: list[str], rng: np.random.Generator) -> BlockResult:
    shape = (len(chunk.k), len(chunk.trial))
    return BlockResult(values={name: rng.random(shape) for name in variables}, status=np.full(shape, Status.OK, np.int8),
                       reason=np.full(shape, "", dtype=object), seconds=rng.random(shape))


def _plain_write(arrays, chunk: Chunk, result: BlockResult) -> None:
    """Format 1's write_block: values, reason, seconds, status; zarr's default config (empty chunks skipped)."""
    selection = (chunk.dataset, chunk.n, chunk.model, list(chunk.k), list(chunk.trial))
    for name, values in [*result.values.items(), ("reason", result.reason), ("seconds", result.seconds),
                         ("status", result.status)]:
        arrays[name].set_orthogonal_selection(selection, values)


def _plain_cube(path: Path, config, coords, chunks) -> zarr.Group:
    group = zarr.open_group(path, mode="w", zarr_format=3)
    shape, chunk_shape = coords.shape, tuple(chunks[d] for d in DIMS)
    for name in [*config.variables, "seconds"]:
        group.create_array(name, shape=shape, chunks=chunk_shape, dtype="f8", fill_value=np.nan, dimension_names=DIMS)
    group.create_array("status", shape=shape, chunks=chunk_shape, dtype="i1", fill_value=0, dimension_names=DIMS)
    group.create_array("reason", shape=shape, chunks=chunk_shape, dtype=str, fill_value="", dimension_names=DIMS)
    return group


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=2000)
    parser.add_argument("--trials-per-chunk", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        resamples = max(args.trials_per_chunk, args.blocks * args.trials_per_chunk // 20)
        config = _config(resamples, args.trials_per_chunk, Path(folder) / "cube.zarr")
        coords, chunks = config_coords(config), default_chunks(config)
        blocks = _blocks(coords, chunks, args.blocks)
        rng = np.random.default_rng(0)
        results = [_result(chunk, config.variables, rng) for chunk in blocks]
        plain = _plain_cube(Path(folder) / "plain.zarr", config, coords, chunks)
        plain_arrays = dict(plain.arrays())
        cube = Cube.create(Path(folder) / "cube.zarr", config, coords, chunks)
        group, arrays = cube.group, cube.writer().arrays
        timings = {}
        for label, write, target in (("plain", _plain_write, plain_arrays), ("checked", write_block, arrays)):
            started = time.perf_counter()
            for chunk, result in zip(blocks, results):
                write(target, chunk, result)
            timings[label] = time.perf_counter() - started
        started = time.perf_counter()
        status = np.asarray(group["status"][:])
        read_status = time.perf_counter() - started
        started = time.perf_counter()
        lost = cube.lost(status, baseline=False)  # the bench writes cells, not the baseline
        check = time.perf_counter() - started
        started = time.perf_counter()
        bad = corrupt_chunks(group)
        verify = time.perf_counter() - started
        opening = _consolidation(group, Path(folder) / "cube.zarr")
        walk = _walk(Path(folder) / "cube.zarr")
    assert lost.count == 0 and not bad, (lost.describe(), bad[:3])
    per_block = {label: seconds / len(blocks) * 1e3 for label, seconds in timings.items()}
    print(f"{len(blocks)} blocks of {len(config.variables)} criterion variables + reason, seconds, status "
          f"({chunks['k']} k x {chunks['trial']} trials per chunk)")
    print(f"store a block: format 1 {per_block['plain']:.2f} ms, with checksums + every chunk + manifest "
          f"{per_block['checked']:.2f} ms: {timings['checked'] / timings['plain']:.2f}x")
    print(f"read the status array {read_status * 1e3:.0f} ms; lost-cell check (listing + manifest) {check * 1e3:.0f} ms "
          f"({check / read_status:.1f}x); status --verify (every chunk read back) {verify:.2f} s "
          f"({verify / read_status:.0f}x)")
    print(f"consolidate the metadata ({opening['nodes']} nodes) {opening['consolidate'] * 1e3:.1f} ms; xr.open_zarr "
          f"consolidated {opening['consolidated'] * 1e3:.0f} ms, unconsolidated {opening['unconsolidated'] * 1e3:.0f} ms")
    print(f"refuse links, FIFOs and devices (lstat walk of {walk['entries']} entries) {walk['walk'] * 1e3:.0f} ms; "
          f"the whole metadata check with it {walk['metadata'] * 1e3:.0f} ms (best of 5)")


def _walk(path: Path) -> dict[str, float]:
    """Seconds to walk the cube refusing entries that are not regular files or folders, and to check its metadata."""
    timings = {}
    for label, check in (("walk", check_entries), ("metadata", check_metadata)):
        times = []
        for _ in range(5):
            started = time.perf_counter()
            check(path)
            times.append(time.perf_counter() - started)
        timings[label] = min(times)
    return {**timings, "entries": sum(1 for _ in path.rglob("*"))}


def _consolidation(group: zarr.Group, path: Path) -> dict[str, float]:
    """Seconds to consolidate (best of 5) and to open the cube with xarray with and without it (best of 3)."""
    times = []
    for _ in range(5):
        started = time.perf_counter()
        consolidate(group)
        times.append(time.perf_counter() - started)
    opened = {"consolidated": np.inf, "unconsolidated": np.inf}
    for _ in range(3):  # best of 3, alternating: the first open of all also pays for imports and caches
        for label, consolidated in (("consolidated", True), ("unconsolidated", False)):
            started = time.perf_counter()
            xr.open_zarr(path, consolidated=consolidated)
            opened[label] = min(opened[label], time.perf_counter() - started)
    nodes = len(list(path.rglob("zarr.json")))
    return {"consolidate": min(times), "nodes": nodes, **opened}


if __name__ == "__main__":
    main()
