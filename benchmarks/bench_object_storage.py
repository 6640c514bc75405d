"""A cube on object storage at scale: its object count against the stated rule, the requests a sweep makes,
and what writing a shard per task costs against holding a shard's blocks and writing it once.

Everything runs against moto's S3 server on 127.0.0.1, started here with a counter of the requests it serves
(by HTTP method), and against a local folder.

1. Shard writes: a sharded cube of 300 chunks of 100 cells a variable, shards of 1, 10 and 100 chunks; its 300
   blocks stored one per task write (each a read-modify-write of its shard: what a writer that holds nothing
   does) and held by :class:`ordercube.pipeline.cube.writes.BlockWriter` (each shard written once): blocks per
   second (CPU seconds of this process, and wall) and, on S3, requests per block.
2. A sweep onto S3 (``ordercube run ... --out s3://...``, exact 1-D k-means at small n, ~1e5 cells; ``--quick``
   ~2e4): objects stored against :func:`ordercube.pipeline.cube.layout.object_count`, requests by method, per
   task and per cell; then the rule for a 1e7-cell grid, sharded and as format 3 would store it.

    python benchmarks/bench_object_storage.py [--quick] [--only writes|sweep] [--workers N]
"""

from __future__ import annotations

import argparse
import collections
import logging
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import yaml

REPO = Path(__file__).resolve().parents[1]
BUCKET = "cubes"


class CountingS3:
    """moto's S3 server on 127.0.0.1 (a free port), counting the requests it serves by HTTP method."""

    def __init__(self) -> None:
        from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
        from werkzeug.serving import make_server

        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        self.counts: collections.Counter[str] = collections.Counter()
        self._lock = threading.Lock()
        app = DomainDispatcherApplication(create_backend_app)

        def counting(environ, start_response):  # noqa: ANN001, ANN202 - a WSGI middleware
            with self._lock:
                self.counts[environ["REQUEST_METHOD"]] += 1
            return app(environ, start_response)

        self._server = make_server("127.0.0.1", 0, counting, True, request_handler=MotoRequestHandler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        host, port = self._server.server_address[:2]
        self.env = {"AWS_ENDPOINT_URL": f"http://{host}:{port}", "AWS_ACCESS_KEY_ID": "testing",
                    "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
                    "AWS_EC2_METADATA_DISABLED": "true", "NO_PROXY": "127.0.0.1,localhost"}

    def make_bucket(self, name: str = BUCKET) -> None:
        import s3fs

        try:
            s3fs.S3FileSystem(endpoint_url=self.env["AWS_ENDPOINT_URL"], key="testing", secret="testing").mkdir(name)
        except FileExistsError:  # moto keeps its buckets per process: another server of this process made it
            pass

    def snapshot(self) -> collections.Counter[str]:
        with self._lock:
            return collections.Counter(self.counts)

    def keys(self, prefix: str) -> list[str]:
        import s3fs

        fs = s3fs.S3FileSystem(endpoint_url=self.env["AWS_ENDPOINT_URL"], key="testing", secret="testing",
                               skip_instance_cache=True, use_listings_cache=False)
        return [key for key in fs.find(prefix) if not key.endswith("/")]

    def stop(self) -> None:
        self._server.shutdown()
        self._thread.join(timeout=10)


def _requests(before: collections.Counter[str], after: collections.Counter[str]) -> dict[str, int]:
    return {method: after[method] - before[method] for method in sorted(after) if after[method] - before[method]}


# --- 1. shard writes: one per task against held ----------------------------------------------------------------

def _shard_cube(out: str, chunks_per_shard: int):
    from ordercube.pipeline.config.study import parse_config
    from ordercube.pipeline.cube.grid import config_coords, default_chunks
    from ordercube.pipeline.cube.owner import Cube

    raw = {"name": "shards", "seed": 1, "n": [100], "k": list(range(2, 12)), "resamples": 3000,
           "datasets": [{"name": "g", "kind": "lange_gaussians3"}],
           "methods": [{"name": "km", "algorithm": "kmeans", "predictor": "nearest_centroid", "criteria": ["pairwise"]}],
           "execution": {"trials_per_chunk": 10}}
    config = parse_config(raw, out=out)
    os.environ["ORDERCUBE_SHARD_CELLS"] = str(100 * chunks_per_shard)
    try:
        cube = Cube.create(out, config, config_coords(config), default_chunks(config))
    finally:
        os.environ.pop("ORDERCUBE_SHARD_CELLS")
    return cube


def _blocks():
    from ordercube.pipeline.cube.grid import Chunk
    from ordercube.tasks.cell import BlockResult, Status

    rng = np.random.default_rng(0)
    for t0 in range(0, 3000, 10):
        shape = (10, 10)
        yield Chunk(0, 0, 0, tuple(range(10)), tuple(range(t0, t0 + 10))), BlockResult(
            values={"pairwise": rng.random(shape)}, status=np.full(shape, Status.OK, dtype=np.int8),
            reason=np.full(shape, "", dtype=object), seconds=rng.random(shape) * 1e-3)


def shard_writes(s3: CountingS3, folder: Path, repeats: int) -> None:
    from ordercube.pipeline.cube.writes import BlockWriter, write_block

    print("1. storing 300 blocks of 100 cells (one chunk each) into a cube sharded by 1, 10 and 100 chunks")
    print(f"   {'where':<6} {'chunks/shard':>12} {'mode':<11} {'blocks/s CPU':>13} {'blocks/s wall':>14} "
          f"{'requests/block':>15}  requests")
    for where in ("local", "s3"):
        for per_shard in (1, 10, 100):
            figures = {}
            for repeat in range(repeats):
                for mode in ("each task", "held"):  # interleaved: A B A B
                    name = f"{where}-{per_shard}-{mode.replace(' ', '')}-{repeat}.zarr"
                    out = str(folder / name) if where == "local" else f"s3://{BUCKET}/bench/{name}"
                    cube = _shard_cube(out, per_shard)
                    writer = BlockWriter(cube.group)
                    before, cpu, wall = s3.snapshot(), time.process_time(), time.perf_counter()
                    for chunk, result in _blocks():
                        if mode == "held":
                            writer.hold(chunk, result)
                        else:  # zarr's own update of part of a shard, its manifest entry recorded
                            write_block(writer.arrays, chunk, result)
                    writer.flush()
                    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
                    requests = _requests(before, s3.snapshot()) if where == "s3" else {}
                    figures.setdefault(mode, []).append((300 / cpu, 300 / wall, sum(requests.values()) / 300, requests))
            for mode, runs in figures.items():
                cpu_rate = np.median([r[0] for r in runs])
                wall_rate = np.median([r[1] for r in runs])
                per_block = runs[-1][2]
                shown = ", ".join(f"{m} {n}" for m, n in runs[-1][3].items()) if where == "s3" else "-"
                print(f"   {where:<6} {per_shard:>12} {mode:<11} {cpu_rate:>13.0f} {wall_rate:>14.0f} "
                      f"{per_block if where == 's3' else float('nan'):>15.2f}  {shown}")
            held, each = np.median([r[0] for r in figures["held"]]), np.median([r[0] for r in figures["each task"]])
            print(f"   {where:<6} {per_shard:>12} held / each task: {held / each:.2f}x blocks per CPU second")


# --- 2. a sweep onto S3 -------------------------------------------------------------------------------------

def sweep_config(quick: bool) -> dict:
    datasets = 2
    n = [32, 64] if quick else [32, 64, 128, 256, 512]
    resamples = 500 if quick else 1000
    return {"name": "object_storage", "seed": 1, "n": n, "k": {"from": 2, "to": 11}, "resamples": resamples,
            "datasets": [{"name": f"mu{3 + i}", "kind": "shamir_mixture1d", "params": {"mu": 3.0 + i}}
                         for i in range(datasets)],
            "methods": [{"name": "exact", "algorithm": "kmeans_1d_exact", "predictor": "nearest_centroid",
                         "criteria": ["pairwise"]}],
            "execution": {"trials_per_chunk": 5}}


def sweep(s3: CountingS3, folder: Path, quick: bool, workers: str) -> None:
    from ordercube.pipeline.cube.layout import object_count

    raw = sweep_config(quick)
    config = folder / "sweep.yaml"
    config.write_text(yaml.safe_dump(raw, sort_keys=False))
    shape = (len(raw["datasets"]), len(raw["n"]), 1, 10, raw["resamples"])
    cells = int(np.prod(shape))
    url = f"s3://{BUCKET}/sweep/cube.zarr"
    env = {**os.environ, **s3.env, "XDG_CACHE_HOME": str(folder / "cache")}
    before, started = s3.snapshot(), time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "ordercube.pipeline.cli", "run", str(config), "--out", url,
                             "--no-progress", "--workers", workers], capture_output=True, text=True, env=env,
                            cwd=folder)
    wall = time.perf_counter() - started
    if result.returncode != 0:
        raise SystemExit(f"the sweep failed: {result.stderr}")
    requests = _requests(before, s3.snapshot())
    tasks = next((int(word) for line in result.stdout.splitlines() if " tasks" in line and "computing" in line
                  for word, after in zip(line.split(), line.split()[1:]) if after == "tasks" and word.isdigit()), 0)
    stored = s3.keys(f"{BUCKET}/sweep/cube.zarr")
    rule = object_count(shape, (1, 1, 1, 10, raw["execution"]["trials_per_chunk"]), 1)
    print(f"\n2. a sweep onto S3: {cells:,} cells ({' x '.join(map(str, shape))}), {tasks} tasks, {wall:.1f} s wall "
          f"(--workers {workers})")
    terms = " + ".join(f"{v} {k}" for k, v in rule.items())
    print(f"   objects stored: {len(stored)}; the rule: {sum(rule.values())} = {terms}")
    total = sum(requests.values())
    print(f"   requests: {total} (" + ", ".join(f"{m} {n}" for m, n in requests.items()) + f"); "
          f"{total / max(tasks, 1):.2f} per task, {total / cells * 1e3:.3f} per 1,000 cells")
    for label, grid in (("1e7 cells (10 datasets x 5 n x 10 k x 20,000 trials, 100 trials a chunk)", (10, 5, 1, 10, 20000)),
                        ("1e7 cells (100 datasets x 10 n x 10 k x 1,000 trials, 100 trials a chunk)", (100, 10, 1, 10, 1000))):
        sharded = object_count(grid, (1, 1, 1, 10, 100), 1)
        chunks = int(np.prod([-(-s // c) for s, c in zip(grid, (1, 1, 1, 10, 100))]))
        plain = {**sharded, "manifest": int(np.prod(grid[:3])), "cells": 4 * chunks}  # format 3: an object a chunk
        print(f"   the rule for {label}: {sum(sharded.values()):,} objects sharded "
              f"({sharded['cells']:,} shards), {sum(plain.values()):,} as format 3")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smaller sweep and one repeat of the shard writes")
    parser.add_argument("--workers", default="0", help="the sweep's --workers (default 0: in this process)")
    parser.add_argument("--only", choices=("writes", "sweep"), help="run one part (default: both)")
    args = parser.parse_args()
    print(f"load average: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")
    s3 = CountingS3()
    for name, value in s3.env.items():
        os.environ[name] = value
    s3.make_bucket()
    try:
        with tempfile.TemporaryDirectory() as folder:
            if args.only in (None, "writes"):
                shard_writes(s3, Path(folder), repeats=1 if args.quick else 3)
            if args.only in (None, "sweep"):
                sweep(s3, Path(folder), args.quick, args.workers)
    finally:
        s3.stop()
    print(f"load average: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")


if __name__ == "__main__":
    main()
