"""``ordercube report`` of consensus clustering against a base commit: whole-process time, and where it goes.

Three sets, each run once by ``ordercube run`` (this checkout, ``--workers 0``) into a cube that both sides report
on: Alon et al.'s 62 colon tissues (configs/consensus_colon.yaml), Spellman et al.'s 800 yeast genes
(configs/consensus_yeast.yaml) and the 60-item ``gaussian3`` set of benchmarks/consensus_side_by_side.py, each
with ``references: 0`` and the criteria ``consensus_area``, ``pac``, ``cluster_consensus`` (ConsensusClusterPlus's
work, whose R run of the colon set takes 3.6 s with its figures); the bootstrap over resamples is the default.

Printed for every set:

* the whole ``ordercube report`` process (wall and CPU seconds, user + system with the figure helper's, a fresh
  process each time, the base commit's and this checkout's interleaved: base, head, base, head, ...), their
  medians and the ratios head / base (on a loaded machine the CPU seconds are the steadier);
* whether both sides wrote the same ``selection.csv`` (byte for byte);
* the split of one in-process report of this checkout: the reduction (``reduced_scores``: the criteria and their
  bootstrap) and the rest (figures, tables, the page).

The base (``--base REV``, default the merge-base with ``main``) is built in a temporary git worktree with a copy of
this venv (``pip install -e . --no-deps``), as benchmarks/bench_scale.py does, and removed at the end.

    python benchmarks/bench_consensus_report.py [--base REV | --no-base] [--repeats 3] [--sets colon gaussian3 yeast]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from bench_scale import build_base, default_base, git  # noqa: E402  (one worktree builder for every benchmark)
SETS = {"colon": "consensus_colon.yaml", "gaussian3": "consensus_gaussian3.yaml", "yeast": "consensus_yeast.yaml"}
CRITERIA = ["consensus_area", "pac", "cluster_consensus"]

# Run in this checkout's venv: one report in process, the reduction timed apart from the rest.
SPLIT = r'''
import sys, time
from pathlib import Path
from ordercube.pipeline.cube.owner import Cube
from ordercube.pipeline.reduce import assignments
from ordercube.pipeline.report.write import write_report

cube = Cube.open(sys.argv[1]).load()
spent = []
original = assignments.reduced_scores
def timed(*args, **kwargs):
    started = time.perf_counter()
    try:
        return original(*args, **kwargs)
    finally:
        spent.append(time.perf_counter() - started)
assignments.reduced_scores = timed
started = time.perf_counter()
write_report(cube, Path(sys.argv[2]))
total = time.perf_counter() - started
print(f"{sum(spent):.3f} {total - sum(spent):.3f}")
'''


def config_of(name: str, scratch: Path) -> Path:
    """The set's config with ``references: 0`` and the three criteria (gaussian3's data written to ``scratch``)."""
    config = yaml.safe_load((ROOT / "configs" / SETS[name]).read_text())
    dataset = config["datasets"][0]
    if name == "gaussian3":
        sys.path.insert(0, str(ROOT / "benchmarks"))
        from consensus_side_by_side import write_gaussian3

        data, labels = write_gaussian3(scratch / "gaussian3")
        dataset["path"], dataset["labels"]["path"] = str(data), str(labels)
    method = config["methods"][0]
    method["scheme_params"]["references"] = 0
    method["criteria"] = list(CRITERIA)
    path = scratch / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def ordercube(python: Path) -> list[str]:
    return [str(python), "-m", "ordercube.pipeline.cli"]


def report_seconds(python: Path, cube: Path, out: Path) -> tuple[float, float]:
    """Wall and CPU seconds (user + system, the figure helper's included) of one ``ordercube report`` process."""
    shutil.rmtree(out, ignore_errors=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([*ordercube(python), "report", str(cube), "--out", str(out)], capture_output=True, text=True)
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"ordercube report {cube} with {python} failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    return seconds, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", help="the commit to compare with (default: the merge-base with main)")
    parser.add_argument("--no-base", action="store_true", help="this checkout only")
    parser.add_argument("--repeats", type=int, default=3, help="reports of each side per set, interleaved")
    parser.add_argument("--sets", nargs="+", choices=list(SETS), default=list(SETS))
    args = parser.parse_args()
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, {os.cpu_count()} cores, head "
          f"{git('rev-parse', '--short', 'HEAD')}"
          f"{' (+ uncommitted changes)' if git('status', '--porcelain', '--untracked-files=no') else ''}")
    scratch = Path(tempfile.mkdtemp(prefix="bench-consensus-report-"))
    sides = {"head": Path(sys.executable)}
    try:
        if not args.no_base:
            base = args.base or default_base()
            sides = {"base": build_base(base, scratch / "base"), **sides}
            print(f"base {git('rev-parse', '--short', base)}")
        for name in args.sets:
            cube = scratch / f"{name}.zarr"
            started = time.perf_counter()
            subprocess.run([*ordercube(sides["head"]), "run", str(config_of(name, scratch)), "--out", str(cube),
                            "--workers", "0"], check=True, capture_output=True)
            print(f"\n{name}: cube built in {time.perf_counter() - started:.1f} s")
            seconds: dict[str, list[tuple[float, float]]] = {side: [] for side in sides}
            for repeat in range(args.repeats):
                for side, python in sides.items():
                    seconds[side].append(report_seconds(python, cube, scratch / f"{name}-{side}"))
            medians = {side: (statistics.median(wall for wall, _ in values), statistics.median(cpu for _, cpu in values))
                       for side, values in seconds.items()}
            for side, values in seconds.items():
                print(f"  {side}: report wall {' '.join(f'{wall:.2f}' for wall, _ in values)} s (median "
                      f"{medians[side][0]:.2f}), CPU {' '.join(f'{cpu:.2f}' for _, cpu in values)} s (median "
                      f"{medians[side][1]:.2f})")
            if "base" in seconds:
                same = ((scratch / f"{name}-base" / "selection.csv").read_bytes()
                        == (scratch / f"{name}-head" / "selection.csv").read_bytes())
                print(f"  head / base: wall {medians['head'][0] / medians['base'][0]:.3f}, CPU "
                      f"{medians['head'][1] / medians['base'][1]:.3f}; selection.csv {'the same' if same else 'DIFFERS'}")
            runner = scratch / "split.py"
            runner.write_text(SPLIT)
            split = subprocess.run([str(sides["head"]), str(runner), str(cube), str(scratch / f"{name}-split")],
                                   check=True, capture_output=True, text=True).stdout.split()
            print(f"  head in process: reduction {float(split[0]):.2f} s, figures and the rest {float(split[1]):.2f} s")
    finally:
        if "base" in sides:
            subprocess.run(["git", "worktree", "remove", "--force", str(scratch / "base")], cwd=ROOT, capture_output=True)
        shutil.rmtree(scratch, ignore_errors=True)
        print(f"load average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
