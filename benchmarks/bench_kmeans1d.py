"""Exact 1-D k-means: Figure 1's whole trial against a base commit, and the kernel against PyPI's ``kmeans1d``.

Default: Shamir & Tishby's (2007) Figure 1 trial (configs/shamir_tishby2007_fig1.yaml: ``shamir_mixture1d``,
``kmeans_1d_exact``, ``nearest_centroid``, ``pairwise``; k = 2, 3, 4 from one block) as the engine runs it
(``ordercube.tasks.cell.run_block``), at every n of the figure, on this checkout and on ``--base`` (default: the
merge-base with ``main``), each in a process of its own, interleaved (base, this, this, base, ...) so that the
machine's load falls on both alike. Printed per n: CPU milliseconds per trial (the smallest of ``--rounds``
timings, ``time.process_time``), the ratio base / this (> 1: this checkout is faster) and whether both computed the
same bits (every stored value); then Figure 1's projected compute, the sum over n of 3 datasets x 1000 trials x
the time per trial, and the load average.

``--kernel``: the kernel alone, ordercube's ``kmeans_1d_exact`` against PyPI's ``kmeans1d`` (one call per k; same
objective asserted to 1e-9 relative), nanoseconds per point per fit.

    python benchmarks/bench_kmeans1d.py [--base REV] [--quick] [--rounds 5]
    python benchmarks/bench_kmeans1d.py --kernel [--m 256 4096 65536 1048576] [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
CONFIG = REPO / "configs" / "shamir_tishby2007_fig1.yaml"
KS = (2, 3, 4)
FULL = [2**e for e in range(6, 18)]
QUICK = [2**e for e in range(6, 15)]
PAPER_TRIALS = 1000  # per dataset and n, as the config asks


def serve() -> None:
    """Answer ``{"n": n, "trials": t}`` lines with the CPU seconds of one block of t trials per dataset at n, and the
    values computed (as hex floats, to compare bits across processes)."""
    from ordercube.pipeline.config.study import load_config
    from ordercube.pipeline.cube.grid import Chunk, config_coords
    from ordercube.pipeline.run.execute import synthetic_sources
    from ordercube.pipeline.run.graph import block_spec
    from ordercube.tasks.cell import run_block

    config = load_config(str(CONFIG))
    coords = config_coords(config)
    sources = synthetic_sources(config)
    for line in sys.stdin:
        ask = json.loads(line)
        specs = [block_spec(config, coords, Chunk(dataset=d, n=coords.n.index(ask["n"]), model=0,
                                                  k=tuple(range(len(coords.k))), trial=tuple(range(ask["trials"]))))
                 for d in range(len(coords.dataset))]
        started = time.process_time()
        results = [run_block(spec, sources[coords.dataset[d]]) for d, spec in enumerate(specs)]
        seconds = time.process_time() - started
        bits = [float(v).hex() for result in results for name in sorted(result.values)
                for v in np.asarray(result.values[name]).ravel()]
        print(json.dumps({"seconds": seconds, "bits": bits}), flush=True)


def base_tree(rev: str, into: Path) -> Path:
    """``rev``'s sources as an importable ``ordercube`` under ``into`` (the repository maps its folders ``ordercube/``,
    ``pipeline/`` and ``tasks/`` onto one package: rebuilt here with links), with this checkout's compiled
    extensions where ``rev`` has their sources."""
    source = into / "src"
    source.mkdir()
    archive = subprocess.run(["git", "-C", str(REPO), "archive", rev], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(source)], input=archive, check=True)
    for built in (REPO / "tasks").rglob("*.so"):
        target = source / built.relative_to(REPO)
        if target.parent.exists():
            shutil.copy2(built, target)
    package = into / "tree" / "ordercube"
    package.mkdir(parents=True)
    for entry in (source / "ordercube").iterdir():
        (package / entry.name).symlink_to(entry)
    (package / "pipeline").symlink_to(source / "pipeline")
    (package / "tasks").symlink_to(source / "tasks")
    return into / "tree"


def start(pythonpath: Path | None, cwd: Path) -> subprocess.Popen:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    return subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--serve"], cwd=cwd, env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def ask(process: subprocess.Popen, n: int, trials: int) -> dict:
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(json.dumps({"n": n, "trials": trials}) + "\n")
    process.stdin.flush()
    line = process.stdout.readline()
    if not line:
        raise SystemExit(f"bench_kmeans1d: a timing process ended early (n = {n}); run it with --serve to see why")
    return json.loads(line)


def trials_for(n: int) -> int:
    """Enough trials per dataset for a timing of ~0.1-0.5 s at every n."""
    return max(2, min(200, 2**19 // n))


def compare(args: argparse.Namespace) -> None:
    rev = args.base or subprocess.run(["git", "-C", str(REPO), "merge-base", "HEAD", "main"], check=True,
                                      capture_output=True, text=True).stdout.strip()
    sizes = QUICK if args.quick else FULL
    with tempfile.TemporaryDirectory(prefix="bench_kmeans1d_") as scratch:
        scratch_path = Path(scratch)
        tree = base_tree(rev, scratch_path)
        sides = {"base": start(tree, scratch_path), "this": start(None, scratch_path)}
        try:
            print(f"Figure 1 trial (k = {KS}, 3 datasets), base {rev[:10]} vs this checkout; "
                  f"load average {os.getloadavg()[0]:.2f}; CPU ms per trial, best of {args.rounds}", flush=True)
            for process in sides.values():  # compile or load the cached machine code outside the timings
                ask(process, 64, 2)
                ask(process, 2**15, 2)
            print(f"{'n':>7} {'trials':>6} | {'base':>9} {'this':>9} | {'ratio':>6} | same bits")
            best = {name: {} for name in sides}
            for n in sizes:
                trials = trials_for(n)
                timings: dict[str, list[float]] = {name: [] for name in sides}
                bits: dict[str, list[str]] = {}
                for round_ in range(args.rounds):
                    order = ["base", "this"] if round_ % 2 == 0 else ["this", "base"]
                    for name in order:
                        answer = ask(sides[name], n, trials)
                        timings[name].append(answer["seconds"] / (3 * trials))
                        bits[name] = answer["bits"]
                for name in sides:
                    best[name][n] = min(timings[name])
                same = "yes" if bits["base"] == bits["this"] else "NO"
                print(f"{n:>7} {trials:>6} | {best['base'][n] * 1e3:>9.3f} {best['this'][n] * 1e3:>9.3f} | "
                      f"{best['base'][n] / best['this'][n]:>6.2f} | {same}", flush=True)
            total = {name: sum(3 * PAPER_TRIALS * seconds for seconds in best[name].values()) for name in sides}
            grid = f"n = {sizes[0]}..{sizes[-1]}"
            print(f"projected Figure 1 compute ({grid}, 3 datasets x {PAPER_TRIALS} trials per n, kernel only): "
                  f"base {total['base']:.1f} s, this {total['this']:.1f} s, ratio {total['base'] / total['this']:.2f}")
            print(f"load average at the end {os.getloadavg()[0]:.2f}")
        finally:
            for process in sides.values():
                if process.stdin is not None:
                    process.stdin.close()
                process.wait(timeout=60)


def kernel_table(args: argparse.Namespace) -> None:
    import kmeans1d

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from timing import best_seconds

    from ordercube.tasks.algorithms.kmeans1d import kmeans_1d_exact, within_cluster_sum_of_squares
    from ordercube.tasks.datasets.synthetic import shamir_mixture1d

    kmeans_1d_exact(np.arange(8.0), KS)  # compile (or load the cached machine code) outside the timings
    print(f"k = {KS}; best of {args.repeats}; ns per point per fit")
    print(f"{'m':>9} | {'ordercube':>10} {'kmeans1d':>10} | {'ratio':>6}")
    for m in args.m:
        x = shamir_mixture1d(m, np.random.default_rng(m), mu=5.0)[0].ravel()
        ours = kmeans_1d_exact(x, KS)
        for k in KS:
            reference = np.asarray(kmeans1d.cluster(x, k).clusters)
            ours_cost, reference_cost = within_cluster_sum_of_squares(x, ours[k]), within_cluster_sum_of_squares(x, reference)
            assert abs(ours_cost - reference_cost) <= 1e-9 * reference_cost, (m, k, ours_cost, reference_cost)
        fits = m * len(KS)
        ordercube = best_seconds(lambda x=x: kmeans_1d_exact(x, KS), args.repeats) / fits * 1e9
        reference = best_seconds(lambda x=x: [kmeans1d.cluster(x, k) for k in KS], args.repeats) / fits * 1e9
        print(f"{m:>9} | {ordercube:>10.1f} {reference:>10.1f} | {reference / ordercube:>6.1f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", help="the commit to compare with (default: the merge-base with main)")
    parser.add_argument("--quick", action="store_true", help=f"n up to {QUICK[-1]} only")
    parser.add_argument("--rounds", type=int, default=5, help="timings per side and n (the best is printed)")
    parser.add_argument("--kernel", action="store_true", help="the kernel against PyPI's kmeans1d instead")
    parser.add_argument("--m", type=int, nargs="+", default=[256, 4096, 65536, 1048576], help="with --kernel")
    parser.add_argument("--repeats", type=int, default=5, help="with --kernel")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve()
    elif args.kernel:
        kernel_table(args)
    else:
        compare(args)


if __name__ == "__main__":
    main()
