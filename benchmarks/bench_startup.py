"""Start-up of the ``ordercube`` command, whole process, as ratios to ``python -c "import numpy, scipy"``.

Each command runs as a user runs it (the installed ``ordercube`` script, a fresh process, its output discarded),
interleaved with the baseline so that a change in the machine's load falls on all of them:

* ``import numpy, scipy``: the baseline (``status`` is asked for at most 3x of it); ``import numpy, zarr``, the floor
  of any command that reads a cube through zarr;
* ``ordercube --help``, ``ordercube validate CONFIG``, ``ordercube status CUBE`` (a quickstart cube and a consensus
  cube), ``ordercube run`` of a tiny config in this process (2 resamples of a quickstart dataset) and of a small
  consensus study, ``ordercube report`` of the consensus cube (``--replicates 0``).

Printed for wall seconds and for CPU seconds (user + system of the process: less moved by the machine's load):
min and median of ``--repeats`` runs, and the median as a ratio to the baseline's. With ``--base REV``
the same commands run from a git worktree of REV with a copy of this venv (as ``bench_scale.py`` builds it), both
sides interleaved, and the ratio new / old of the medians is printed. Compiled bytecode is written and warmed up
first (a user's installed package has it; ``PYTHONDONTWRITEBYTECODE`` is removed from the commands' environment).

    python benchmarks/bench_startup.py [--repeats 7] [--base REV] [--only status run ...]

Takes about 1 min at 7 repeats on an idle 2-core machine (2 min with --base).
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

import numpy as np
import yaml

from bench_scale import build_base, git

ROOT = Path(__file__).resolve().parent.parent
BASELINE = "import numpy, scipy"


def tiny_config() -> dict:
    """The quickstart's first dataset at one n and 2 resamples: 18 cells, computed in this process."""
    config = yaml.safe_load((ROOT / "configs" / "quickstart.yaml").read_text())
    return {**config, "name": "tiny", "n": [100], "resamples": 2, "datasets": config["datasets"][:1]}


def consensus_config(data: Path) -> dict:
    """Consensus clustering (average linkage, M3C's reference) of 60 items x 200 features, k = 2..6, 50 resamples."""
    return {"name": "consensus", "seed": 38, "k": {"from": 2, "to": 6}, "resamples": 50,
            "datasets": [{"name": "groups", "kind": "file", "path": str(data), "n": ["all"]}],
            "methods": [{"name": "hc", "algorithm": "agglomerative", "params": {"linkage": "average"},
                         "scheme": "consensus", "scheme_params": {"p_item": 0.8, "p_feature": 1.0, "references": 5},
                         "criteria": ["consensus_area", "pac", "cluster_consensus", "m3c"]}]}


def write_inputs(folder: Path) -> dict[str, Path]:
    rng = np.random.default_rng(38)
    X = rng.normal(size=(60, 200))
    X[20:40, :50] += 1.5
    X[40:, 50:100] += 1.5
    data = folder / "groups.csv"
    np.savetxt(data, X, delimiter=",", header=",".join(f"g{j}" for j in range(200)), comments="")
    paths = {"tiny": folder / "tiny.yaml", "consensus": folder / "consensus.yaml"}
    paths["tiny"].write_text(yaml.safe_dump(tiny_config(), sort_keys=False))
    paths["consensus"].write_text(yaml.safe_dump(consensus_config(data), sort_keys=False))
    return paths


def commands(python: Path, folder: Path, inputs: dict[str, Path]) -> dict[str, tuple[list[str], Path | None]]:
    """Name -> (argv, a path to remove before each run or None)."""
    ordercube = str(python.with_name("ordercube"))
    tiny, consensus = folder / "tiny.zarr", folder / "consensus.zarr"
    again, report = folder / "again.zarr", folder / "report"
    return {
        BASELINE: ([str(python), "-c", BASELINE], None),
        "import numpy, zarr": ([str(python), "-c", "import numpy, zarr"], None),  # the floor of a command reading a cube
        "--help": ([ordercube, "--help"], None),
        "validate": ([ordercube, "validate", str(inputs["consensus"]), "--out", str(again)], None),
        "status (quickstart)": ([ordercube, "status", str(tiny)], None),
        "status (consensus)": ([ordercube, "status", str(consensus)], None),
        "run (tiny)": ([ordercube, "run", str(inputs["tiny"]), "--out", str(again), "--workers", "0", "--no-progress"],
                       again),
        "run (consensus)": ([ordercube, "run", str(inputs["consensus"]), "--out", str(again), "--workers", "0",
                             "--no-progress"], again),
        "report (consensus)": ([ordercube, "report", str(consensus), "--out", str(report), "--replicates", "0"], report),
    }


def environment() -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def timed(argv: list[str], cwd: Path, remove: Path | None) -> tuple[float, float]:
    """Wall and CPU seconds (user + system, from the process's rusage) of one run. CPU seconds move less with the
    machine's load than wall seconds do."""
    if remove is not None:
        shutil.rmtree(remove, ignore_errors=True)
    with tempfile.TemporaryFile(mode="w+") as errors:
        started = time.perf_counter()
        process = subprocess.Popen(argv, cwd=cwd, env=environment(), stdout=subprocess.DEVNULL, stderr=errors, text=True)
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode != 0:
            errors.seek(0)
            raise SystemExit(f"{' '.join(argv)} exited {process.returncode}:\n{errors.read()[-2000:]}")
    return seconds, usage.ru_utime + usage.ru_stime


def prepare(python: Path, folder: Path, inputs: dict[str, Path], names: list[str]) -> None:
    """The two cubes the commands read, and one warm-up run of each command (bytecode written, caches filled)."""
    ordercube = str(python.with_name("ordercube"))
    for name, cube in (("tiny", folder / "tiny.zarr"), ("consensus", folder / "consensus.zarr")):
        shutil.rmtree(cube, ignore_errors=True)
        timed([ordercube, "run", str(inputs[name]), "--out", str(cube), "--workers", "0", "--no-progress"], folder, None)
    planned = commands(python, folder, inputs)
    for name in names:
        argv, remove = planned[name]
        timed(argv, folder, remove)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=7, help="runs of each command, interleaved (default 7)")
    parser.add_argument("--base", help="a commit to compare with, built in a temporary worktree")
    parser.add_argument("--only", nargs="+", metavar="WORD",
                        help="only the commands whose name holds one of these words (and the baseline), e.g. status")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="bench-startup-"))
    sides = {"head": (Path(sys.executable), ROOT)}
    try:
        if args.base:
            started = time.perf_counter()
            sides = {"base": (build_base(args.base, scratch / "base"), scratch / "base"), **sides}
            print(f"base {git('rev-parse', '--short', args.base)} built in {time.perf_counter() - started:.0f} s")
        plans = {}
        for side, (python, _) in sides.items():
            folder = scratch / f"run-{side}"
            folder.mkdir()
            inputs = write_inputs(folder)
            plans[side] = (folder, commands(python, folder, inputs))
            names = [name for name in plans[side][1] if name.startswith("import") or not args.only or
                     any(word in name for word in args.only)]
            prepare(python, folder, inputs, names)
        load = os.getloadavg()
        print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, {os.cpu_count()} cores, {args.repeats} repeats, "
              f"head {git('rev-parse', '--short', 'HEAD')}"
              f"{' (+ uncommitted changes)' if git('status', '--porcelain', '--untracked-files=no') else ''}")
        times: dict[tuple[str, str], list[tuple[float, float]]] = {}
        for _ in range(args.repeats):
            for name in names:
                for side, (folder, planned) in plans.items():
                    argv, remove = planned[name]
                    times.setdefault((side, name), []).append(timed(argv, folder, remove))
        for measure, column in (("wall", 0), ("CPU", 1)):
            print(f"\n{measure} seconds")
            report({key: [value[column] for value in values] for key, values in times.items()}, list(plans), names)
        load = os.getloadavg()
        print(f"load average at the end {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    finally:
        if "base" in sides:
            subprocess.run(["git", "worktree", "remove", "--force", str(scratch / "base")], cwd=ROOT,
                           capture_output=True)
        shutil.rmtree(scratch, ignore_errors=True)


def report(times: dict[tuple[str, str], list[float]], sides: list[str], names: list[str]) -> None:
    header = f"{'command':<22}" + "".join(f"{side + ' min':>10}{side + ' median':>13}{'/ numpy+scipy':>15}"
                                          for side in sides)
    print(header + (f"{'new / old':>11}" if len(sides) == 2 else ""))
    for name in names:
        line = f"{name:<22}"
        for side in sides:
            values = times[(side, name)]
            ratio = statistics.median(values) / statistics.median(times[(side, BASELINE)])
            line += f"{min(values):>9.3f}s{statistics.median(values):>12.3f}s{ratio:>14.2f}x"
        if len(sides) == 2:
            line += f"{statistics.median(times[('head', name)]) / statistics.median(times[('base', name)]):>10.2f}x"
        print(line)


if __name__ == "__main__":
    main()
