"""The cost model against the clock: estimated compute of each shipped config beside what it measured.

For every ``configs/*.yaml`` (reduced by ``same_bits.shrink``: at most 3 resamples, the 2 smallest sample
sizes, 4 values of k spread over the grid, 2 values of each swept parameter; ``--resamples`` lowers them
further; a grid estimated under 1 s of work gets resamples back, at most the config's own, so that its work
stands out of what any run costs), an iris example with the Gap statistic (the first call a user makes: ``n`` =
all 150 rows, k from 2 to 10, ``gap`` with its 20 reference sets), and one run per criterion on iris
(``iris:NAME``: k-means, or the mixture for BIC, with that criterion alone, so that each criterion's cost stands
apart), this script

1. asks the plan for its estimate (``Plan.estimated_seconds``: the same figure that sizes the tasks, decides
   between this process and a LocalCluster and prints "about N s of work"), per method;
2. runs the grid in this process (``workers=0``, as many threads as the placement would use) into a fresh
   cube and measures the compute three ways: ``seconds``, the sum of the cube's ``seconds`` variable (wall-clock
   time inside the kernels, per method); ``cpu``, the process's CPU time over the run (driver, data and cube
   included); ``work``, the CPU time of the resamples alone (:func:`measure`: the run's CPU time less that of a
   run of one resample, scaled), which does not grow when other processes share the cores as wall-clock time does;
3. prints one table, config x method, with the ratios estimate / seconds and estimate / work (below 1 the model
   underestimates). The target is a ratio within [0.5, 2]; rows outside it are marked ``*``. The load average
   is printed last: on a shared machine the cube's ``seconds`` grow with it and ``work`` is the figure to read.

Nothing is asserted: the times depend on the machine and on its load. A kernel's first call in a process
includes its compilation or the loading of numba's cache: each config runs once, untimed, first.

    python benchmarks/cost_model.py [--only NAME ...] [--resamples R] [--skip NAME ...]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from same_bits import CAPS, shrink  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
CONFIGS = REPO / "configs"

#: Tighter reductions where the shared caps leave minutes of work: path-based clustering (cubic in n) with Gap's
#: 21 and Clest's 40 fits per trial took 146 s for one resample at 4 values of k on two shared cores. Fewer
#: reference sets and splits keep every criterion's code path (the estimate is linear in both: tests/test_cost_model.py).
TIGHTER: dict[str, dict[str, int]] = {"lange2002_table1": {"resamples": 2, "n": 200, "references": 4, "splits": 4}}


def tighten(raw: dict[str, Any], caps: dict[str, int]) -> list[str]:
    """Cap, in place, every dataset's ``n`` and the Gap's ``references`` and Clest's ``splits`` of every method."""
    notes = []
    for dataset in raw.get("datasets", []):
        if "n" in caps and any(isinstance(n, int) and n > caps["n"] for n in dataset.get("n", [])):
            dataset["n"] = sorted({min(n, caps["n"]) if isinstance(n, int) else n for n in dataset["n"]})
            notes.append(f"{dataset['name']}.n -> {dataset['n']}")
    for method in raw.get("methods", []):
        for entry in method.get("criteria", []):
            for options in entry.values() if isinstance(entry, dict) else ():
                for key in ("references", "splits"):
                    if key in caps and key in options and options[key] > caps[key]:
                        options[key] = caps[key]
                        notes.append(f"{method['name']}.{key} -> {caps[key]}")
    return notes


#: The first call of a user: iris, every row, k from 2 to 10, the Gap statistic with its default options.
IRIS_GAP: dict[str, Any] = {
    "name": "iris_gap", "seed": 1936, "n": ["all"], "k": {"from": 2, "to": 10}, "resamples": 3,
    "datasets": [{"name": "iris"}],
    "methods": [{"name": "kmeans", "algorithm": "kmeans", "predictor": "nearest_centroid", "criteria": ["gap"]}],
}


def _method(name: str, algorithm: str, criterion: Any, predictor: str = "nearest_centroid") -> dict[str, Any]:
    return {"name": name, "algorithm": algorithm, "predictor": predictor, "criteria": [criterion]}


#: One method per criterion on iris, each run on its own: each criterion's cost is then a run's work.
IRIS_CRITERIA: dict[str, Any] = {
    # n = 70: pairwise draws an evaluation sample, 2n of the 150 rows
    "name": "iris_criteria", "seed": 1936, "n": [70], "k": {"from": 2, "to": 8}, "resamples": 3,
    "datasets": [{"name": "iris"}],
    "methods": [
        _method("lange", "kmeans", "lange"),
        _method("pairwise", "kmeans", "pairwise"),
        _method("gap_b10", "kmeans", {"gap": {"references": 10}}),
        _method("gap_b20", "kmeans", {"gap": {"references": 20}}),
        _method("clest_s10", "kmeans", {"clest": {"splits": 10}}),
        _method("prediction_strength", "kmeans", "prediction_strength"),
        _method("bic", "gaussian_mixture_em", "bic"),
        _method("silhouette", "kmeans", "silhouette"),
    ],
}


def iris_data() -> dict[str, Any]:
    from sklearn.datasets import load_iris  # shipped with scikit-learn: nothing is downloaded

    iris = load_iris()
    return {"iris": (iris.data, iris.target)}


def estimates(config: Any, data: Any) -> tuple[dict[str, float], float, int]:
    """The plan's estimated seconds per method, the placement's threads, and the cells to compute."""
    import ordercube
    from ordercube.pipeline.cube.grid import estimated_seconds
    from ordercube.pipeline.run.sweep import where_to_compute

    plan = ordercube.validate(config, data=data)
    costs = plan.cell_costs if hasattr(plan, "cell_costs") else plan.seconds_per_point  # before the calibration
    by_method: dict[str, float] = defaultdict(float)
    for chunk in plan.chunks:
        by_method[plan.coords.model[chunk.model]] += estimated_seconds(chunk, plan.coords, costs)
    threads = where_to_compute(plan, workers=0, elsewhere=False).threads
    return dict(by_method), threads, plan.cells_to_compute


def measure(config: dict[str, Any], data: Any, folder: Path) -> tuple[dict[str, float], float, float, float]:
    """Run ``config`` in this process into a fresh cube: its ``seconds`` per method, the CPU time of the run, its
    wall time, and the CPU time of its work alone.

    A run of one resample comes first, untimed, into a scratch cube: the kernels' compilation (or the loading of
    numba's cache) and first imports are not the sweep's work. A second run of one resample is timed: the CPU
    time of a run of R resamples minus that of one resample, times R / (R - 1), is the work's CPU time without
    what a run costs whatever its size (reading the data, making the cube), and unlike the cube's ``seconds``
    (wall-clock time) it does not grow when other processes share the cores."""
    import ordercube

    resamples = config["resamples"]
    ordercube.sweep(dict(config, resamples=1), data=data, out=str(folder / f"{config['name']}.warm.zarr"), workers=0)
    one = time.process_time()
    ordercube.sweep(dict(config, resamples=1), data=data, out=str(folder / f"{config['name']}.one.zarr"), workers=0)
    one = time.process_time() - one
    cpu, wall = time.process_time(), time.perf_counter()
    cube = ordercube.sweep(config, data=data, out=str(folder / f"{config['name']}.zarr"), workers=0)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    seconds = cube["seconds"].load()
    per_method = {str(m): float(np.nansum(seconds.sel(model=m).values)) for m in seconds["model"].values}
    work = (cpu - one) * resamples / (resamples - 1) if resamples > 1 else float("nan")
    return per_method, cpu, wall, work


def ratio_cell(estimate: float, measured: float) -> str:
    if measured <= 0:
        return "-"
    r = estimate / measured
    return f"{r:5.2f}{'*' if not 0.5 <= r <= 2.0 else ' '}"


def configs_to_run(only: list[str], skip: list[str], caps: dict[str, int]) -> list[tuple[str, dict, Any, list[str], int]]:
    """(name, reduced config, the in-memory data it needs, what was reduced, the resamples it may grow back to)."""
    runs = []
    for path in sorted(CONFIGS.glob("*.yaml")):
        raw = yaml.safe_load(path.read_text())
        tighter = TIGHTER.get(path.stem, {})
        small, notes = shrink(raw, {**caps, **{key: min(value, caps[key]) for key, value in tighter.items() if key in caps}})
        notes += tighten(small, tighter)
        small.pop("out", None)
        runs.append((path.stem, small, None, notes, int(raw.get("resamples", caps["resamples"]))))
    small = min(IRIS_GAP["resamples"], caps["resamples"])
    runs.append((IRIS_GAP["name"], dict(IRIS_GAP, resamples=small), "iris", [], 20))
    for method in IRIS_CRITERIA["methods"]:  # one run per criterion: each its own work
        name = f"iris:{method['name']}"
        runs.append((name, dict(IRIS_CRITERIA, name=name.replace(":", "_"), methods=[method], resamples=small),
                     "iris", [], 30))
    def wanted(name: str) -> bool:
        return not only or name in only or name.split(":")[0] in only

    return [r for r in runs if wanted(r[0]) and r[0] not in skip]


#: The estimated work below which a reduced grid gets back some of its resamples (at most the config's own): the
#: CPU time of a run's fixed part (reading the data, making the cube) varies by tenths of a second.
MIN_WORK = 1.0


def grow(resamples: int, estimate: float, most: int) -> int:
    """The resamples that bring ``estimate`` (seconds at ``resamples``) to :data:`MIN_WORK`, at most ``most``."""
    if estimate <= 0 or estimate >= MIN_WORK:
        return resamples
    return max(resamples, min(most, int(np.ceil(resamples * MIN_WORK / estimate))))


HEADER = (f"{'config':<22} {'method':<20} {'cells':>5} {'estimate':>9} {'seconds':>9} {'cpu':>7} {'work':>7} "
          f"{'est/sec':>8} {'est/work':>8}")


def row(name: str, method: str, cells: str, estimate: float, seconds: float, cpu: float | None,
        work: float | None) -> str:
    def number(value: float | None, width: int) -> str:
        return f"{'':>{width}}" if value is None or value != value else f"{value:{width}.3f}"

    return (f"{name:<22} {method:<20} {cells:>5} {estimate:9.3f} {seconds:9.3f} {number(cpu, 7)} {number(work, 7)} "
            f"{ratio_cell(estimate, seconds):>8} {ratio_cell(estimate, work) if work and work == work else '':>8}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=[],
                        help="config names (file stems, iris_gap, iris: for every iris:CRITERION run, or one of them)")
    parser.add_argument("--skip", nargs="*", default=[])
    parser.add_argument("--resamples", type=int, default=CAPS["resamples"], help="resamples cap (default 3)")
    args = parser.parse_args()
    caps = dict(CAPS, resamples=args.resamples)
    iris = None
    lines, notes_of = [], []
    started = time.perf_counter()
    print(HEADER, flush=True)
    with tempfile.TemporaryDirectory(prefix="cost_model_") as tmp:
        for name, config, needs, notes, most in configs_to_run(args.only, args.skip, caps):
            if needs == "iris" and iris is None:
                iris = iris_data()
            data = iris if needs == "iris" else None
            estimate, threads, cells = estimates(config, data)
            grown = grow(config["resamples"], sum(estimate.values()), most)
            if grown > config["resamples"]:  # a small grid's work would be lost in what any run costs
                notes = [*notes, f"resamples back up to {grown} (work of {MIN_WORK:g} s estimated)"]
                config = dict(config, resamples=grown)
                estimate, threads, cells = estimates(config, data)
            measured, cpu, wall, work = measure(config, data, Path(tmp))
            notes_of.append(f"{name}: {cells} cells on {threads} thread(s) in {wall:.1f} s"
                            + (f"; reduced: {', '.join(notes)}" if notes else ""))
            block = [row(name, "(all)", str(cells), sum(estimate.values()), sum(measured.values()), cpu, work)]
            if len(measured) > 1:
                block += [row(name, method, "", estimate.get(method, 0.0), measured[method], None, None)
                          for method in measured]
            print("\n".join(block), flush=True)
            lines += block
    print("\n" + "\n".join(notes_of))
    print("\nseconds: the sum of the cube's seconds (wall-clock time in the kernels); cpu: the process's CPU time "
          "during the run (driver, data and cube included); work: the CPU time of the resamples alone (see measure). "
          "* outside [0.5, 2].")
    print(f"load average over the last 1, 5, 15 minutes: {', '.join(f'{x:.1f}' for x in os.getloadavg())} "
          f"on {os.cpu_count()} cores")
    print(f"whole script: {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
