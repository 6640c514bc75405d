"""``choose_k`` with its defaults on iris, wine, digits and a 10^5 x 10 Gaussian mixture, timed whole process.

Each case is one fresh process (``python -c``: import, data, ``choose_k(X, seed=0)``, no main guard), on this
checkout and, with ``--base REV``, on a base commit built in a temporary git worktree with a copy of this venv
(as ``bench_scale.py`` builds it), the two sides interleaved (base, head, base, head, ...) so that a change in the
machine's load falls on both. Printed per run: the wall of the whole process and of the call, k̂ per criterion;
then the median wall per side and the ratio head / base. The load (``os.getloadavg``) is printed before each run.

The 10^5 x 10 table: 10 Gaussian clusters in 10 dimensions (unit variance, centres drawn in [-10, 10]^10, seed
2026), 100,000 rows.

    python benchmarks/bench_choose_k.py [--base REV] [--repeats 1] [--cases iris wine digits large]
                                        [--workers W] [--criteria gap,lange] [--resamples R]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_scale import build_base, git  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CASES = ("iris", "wine", "digits", "large")

# Run in the side's venv: the data, then choose_k timed; no `if __name__ == "__main__":` (as a user's script).
RUNNER = r'''
import json, sys, time
started = time.perf_counter()
import numpy as np
import ordercube
case, out, report, options = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
if case == "large":
    rng = np.random.default_rng(2026)
    centres = rng.uniform(-10, 10, size=(10, 10))
    X = centres[rng.integers(0, 10, size=100_000)] + rng.normal(size=(100_000, 10))
else:
    from sklearn import datasets
    X = getattr(datasets, f"load_{case}")().data
call = time.perf_counter()
choice = ordercube.choose_k(X, seed=0, out=out, **options)
done = time.perf_counter()
json.dump({"call": done - call, "process": done - started,
           "k_hat": {str(name): int(k) for name, k in choice.table["k_hat"].items()}}, open(report, "w"))
'''


def run_case(python: Path, cwd: Path, case: str, options: dict, scratch: Path) -> dict:
    runner, report, out = scratch / "runner.py", scratch / f"{case}.json", scratch / f"{case}.zarr"
    runner.write_text(RUNNER)
    shutil.rmtree(out, ignore_errors=True)
    report.unlink(missing_ok=True)
    started = time.perf_counter()
    done = subprocess.run([str(python), str(runner), case, str(out), str(report), json.dumps(options)], cwd=scratch,
                          capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode != 0 or not report.exists():
        raise SystemExit(f"{case} on {cwd} failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    figures = json.loads(report.read_text())
    shutil.rmtree(out, ignore_errors=True)
    return {**figures, "wall": wall}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", help="a commit to compare with (built in a temporary worktree)")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--cases", nargs="+", choices=CASES, default=list(CASES))
    parser.add_argument("--workers", type=int, help="choose_k's workers (default: its own choice)")
    parser.add_argument("--criteria", help="comma-separated criteria (default: choose_k's)")
    parser.add_argument("--resamples", type=int, help="default: choose_k's")
    args = parser.parse_args()
    options: dict = {}
    if args.workers is not None:
        options["workers"] = args.workers
    if args.criteria:
        options["criteria"] = args.criteria.split(",")
    if args.resamples:
        options["resamples"] = args.resamples
    with tempfile.TemporaryDirectory(prefix="bench_choose_k_") as folder:
        scratch = Path(folder)
        sides = {"head": (Path(sys.executable), ROOT)}
        if args.base:
            started = time.perf_counter()
            sides = {"base": (build_base(args.base, scratch / "base"), scratch / "base"), **sides}
            print(f"base {git('rev-parse', '--short', args.base)} built in {time.perf_counter() - started:.0f} s")
        try:
            for case in args.cases:
                walls: dict[str, list[float]] = {side: [] for side in sides}
                for repeat in range(args.repeats):
                    for side, (python, cwd) in sides.items():
                        load = os.getloadavg()[0]
                        work = scratch / f"{side}_{case}_{repeat}"
                        work.mkdir()
                        figures = run_case(python, cwd, case, options, work)
                        walls[side].append(figures["wall"])
                        print(f"{case:<7} {side:<5} load {load:4.1f}  process {figures['wall']:7.1f} s  "
                              f"call {figures['call']:7.1f} s  k̂ {figures['k_hat']}", flush=True)
                medians = {side: statistics.median(values) for side, values in walls.items()}
                line = "  ".join(f"{side} median {value:.1f} s" for side, value in medians.items())
                if "base" in medians:
                    line += f"  head / base {medians['head'] / medians['base']:.3f}"
                print(f"{case:<7} {line}", flush=True)
        finally:
            if "base" in sides:
                subprocess.run(["git", "worktree", "remove", "--force", str(scratch / "base")], cwd=ROOT,
                               capture_output=True)


if __name__ == "__main__":
    main()
