"""Whole-process time of ``ordercube report`` on the quickstart cube: this checkout against a baseline commit.

The baseline is the report as it was before its figures were redrawn (commit f0e5763 by default: 12 PNG figures, each laid
out by ``tight_layout``, log axes with mathtext labels, a legend per panel). Both report the same cube, built
once by this checkout's ``ordercube run configs/quickstart.yaml``. The baseline runs from a git worktree of
its commit, with this checkout's compiled kernels copied in (the Cython sources did not change). Interleaved,
--repeats times, each as its own process (imports included), the load average printed with each round:

  baseline   the baseline's report into an empty folder;
  fresh      this checkout's report into an empty folder;
  unchanged  the same report again into the same folder (every figure kept: nothing to redraw);
  re-decide  ``--threshold``-like re-decision of one criterion (``--decide lange.ties=smallest``): only
             the figures that show its k̂ are redrawn;
  quickstart ``ordercube run`` of the quickstart (a new cube) plus the fresh report: the README's first command
             after installation, end to end.

    python benchmarks/bench_report.py [--baseline f0e5763] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ORDERCUBE = [str(Path(sys.executable).with_name("ordercube"))]
IN_CHECKOUT = [sys.executable, "-c", "import sys; from ordercube.pipeline.cli import main; sys.exit(main(sys.argv[1:]))"]


def timed(command: list[str], *, env: dict[str, str] | None = None, cwd: Path | None = None) -> float:
    started = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, env={**os.environ, **(env or {})}, cwd=cwd)
    wall = time.perf_counter() - started
    if result.returncode != 0:
        raise RuntimeError(f"{command} exited {result.returncode}: {result.stderr[-2000:]}")
    return wall


def baseline_worktree(commit: str, folder: Path) -> Path:
    """A worktree of ``commit`` that imports on its own: this checkout's compiled kernels copied in."""
    tree = folder / "baseline"
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(tree), commit], check=True,
                   capture_output=True)
    for built in [*REPO.glob("tasks/*.so"), *REPO.glob("tasks/algorithms/*.so")]:
        shutil.copy2(built, tree / built.relative_to(REPO))
    probe = subprocess.run([sys.executable, "-c", "import ordercube.pipeline as pipeline; print(pipeline.__file__)"], capture_output=True,
                           text=True, env={**os.environ, "PYTHONPATH": str(tree)}, cwd=tree, check=True)
    if not probe.stdout.strip().startswith(str(tree)):
        raise RuntimeError(f"the baseline imports {probe.stdout.strip()}, not its worktree {tree}")
    return tree


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default="f0e5763")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        tree = baseline_worktree(args.baseline, folder)
        try:
            cube = folder / "quickstart.zarr"
            timed([*ORDERCUBE, "run", str(REPO / "configs/quickstart.yaml"), "--out", str(cube), "--no-progress"])
            times: dict[str, list[float]] = {name: [] for name in
                                             ("baseline", "fresh", "unchanged", "re-decide", "quickstart")}
            for repeat in range(args.repeats):
                print(f"round {repeat + 1}: load average {os.getloadavg()[0]:.2f}", flush=True)
                for name in ("base", "new", "qs-report"):
                    shutil.rmtree(folder / name, ignore_errors=True)
                shutil.rmtree(folder / f"qs{repeat}.zarr", ignore_errors=True)
                times["baseline"].append(timed([*IN_CHECKOUT, "report", str(cube), "--out", str(folder / "base")],
                                               env={"PYTHONPATH": str(tree)}, cwd=tree))
                times["fresh"].append(timed([*ORDERCUBE, "report", str(cube), "--out", str(folder / "new")]))
                times["unchanged"].append(timed([*ORDERCUBE, "report", str(cube), "--out", str(folder / "new")]))
                times["re-decide"].append(timed([*ORDERCUBE, "report", str(cube), "--out", str(folder / "new"),
                                                 "--decide", f"lange.ties={'smallest' if repeat % 2 == 0 else 'largest'}"]))
                quick = folder / f"qs{repeat}.zarr"
                run = timed([*ORDERCUBE, "run", str(REPO / "configs/quickstart.yaml"), "--out", str(quick), "--no-progress"])
                times["quickstart"].append(run + timed([*ORDERCUBE, "report", str(quick), "--out", str(folder / "qs-report")]))
            print(f"load average after: {os.getloadavg()[0]:.2f}")
            base = statistics.median(times["baseline"])
            print(f"\n{'variant':<11} {'median s':>9} {'all runs':<28} {'vs baseline':>11}")
            for name, values in times.items():
                median = statistics.median(values)
                ratio = "" if name in ("baseline", "quickstart") else f"{base / median:.2f}x"
                print(f"{name:<11} {median:9.2f} {' '.join(f'{v:.2f}' for v in values):<28} {ratio:>11}")
            figures = sorted(path.name for path in (folder / "base").glob("*.png"))
            print(f"\nbaseline figures: {len(figures)}; this checkout's: {len(list((folder / 'new').glob('*.png')))}")
        finally:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(tree)], capture_output=True)


if __name__ == "__main__":
    main()
