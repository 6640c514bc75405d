"""The live adaptive run against the fixed budget: the quickstart at 200 resamples, same machine, same run.

Issue 18's target: the adaptive run should take less wall time than the fixed run by the factor of the cells it
saves, within 20%. Each round runs ``ordercube run`` as a user does (a fresh cube, the whole process timed) on
configs/quickstart.yaml with ``resamples: 200``, once as it is and once with ``adaptive: {delta: 0.05, r_min: 20}``,
in this process's threads (``--workers 0``) and on a LocalCluster of one and of two workers, alternating. Printed
per setting: the median wall time of the whole process and of the sweep alone (the run's own "done: ... in X s":
without the imports and the cluster's start, which both runs pay), the cells computed and the compute seconds the
cube records (its ``seconds`` variable), and the ratios fixed / adaptive; then the replay targets on the fixed
cube, the live run's stops against the replay's, and where the compute went.

    python benchmarks/bench_adaptive.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

REPO = Path(__file__).resolve().parents[1]
ORDERCUBE = str(Path(sys.executable).with_name("ordercube"))
WORKERS = ("0", "1", "2")  # this process's threads; LocalClusters of one and two single-threaded worker processes


def configs(folder: Path) -> dict[str, Path]:
    raw = yaml.safe_load((REPO / "configs" / "quickstart.yaml").read_text())
    raw["resamples"] = 200
    paths = {}
    for name, extra in (("fixed", {}), ("adaptive", {"adaptive": {"delta": 0.05, "r_min": 20}})):
        paths[name] = folder / f"{name}.yaml"
        paths[name].write_text(yaml.safe_dump({**raw, "name": f"bench_{name}", **extra}, sort_keys=False))
    return paths


def one_run(config: Path, out: Path, workers: str) -> tuple[float, float, int, float]:
    started = time.perf_counter()
    done = subprocess.run([ORDERCUBE, "run", str(config), "--out", str(out), "--workers", workers, "--no-progress",
                           "--no-dashboard"], check=True, capture_output=True, text=True)
    wall = time.perf_counter() - started
    sweep = float(re.search(r"cells in ([0-9.]+) s", done.stdout).group(1))
    import xarray as xr

    cube = xr.open_zarr(out, consolidated=False)
    computed = int((cube["status"] == 1).sum())
    return wall, sweep, computed, float(np.nansum(cube["seconds"].values))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        paths = configs(Path(folder))
        results: dict[tuple[str, str], list[tuple[float, float, int, float]]] = {}
        for round_ in range(args.rounds):
            for workers in WORKERS:
                for name in ("fixed", "adaptive"):
                    out = Path(folder) / f"{name}-{workers}-{round_}.zarr"
                    results.setdefault((workers, name), []).append(one_run(paths[name], out, workers))
        print(f"quickstart at 200 resamples; median of {args.rounds} rounds; whole `ordercube run` process")
        print(f"{'where':<24} {'run':<9} {'wall s':>7} {'sweep s':>7} {'cells':>6} {'compute s':>9}")
        for workers in WORKERS:
            where = "this process (threads)" if workers == "0" else f"LocalCluster, {workers} worker(s)"
            medians = {}
            for name in ("fixed", "adaptive"):
                runs = results[(workers, name)]
                medians[name] = [statistics.median(r[i] for r in runs) for i in range(4)]
                wall, sweep, cells, seconds = medians[name]
                print(f"{where:<24} {name:<9} {wall:>7.2f} {sweep:>7.2f} {cells:>6.0f} {seconds:>9.1f}")
            (fw, fsw, fc, fs), (aw, asw, ac, as_) = medians["fixed"], medians["adaptive"]
            print(f"{'':<24} fixed/adaptive: wall {fw / aw:.2f}x, sweep {fsw / asw:.2f}x, cells {fc / ac:.2f}x, compute "
                  f"{fs / as_:.2f}x (wall / cells factor {fw / aw / (fc / ac):.2f}, sweep / cells factor "
                  f"{fsw / asw / (fc / ac):.2f}; the target: >= 0.8)")
        replay_targets(Path(folder) / "fixed-0-0.zarr", Path(folder) / "adaptive-0-0.zarr")


def replay_targets(cube_path: Path, live_path: Path) -> None:
    """The replay's targets on the fixed cube: easy groups (3 Gaussians, n >= 300) on the full budget's k̂ in
    >= 99% of 200 replays with <= 20% of the cells; hard groups (the rings) unsettled or settled, not decided wrong.
    And the live adaptive run's stop and k̂ per group equal the replay's in index order; the compute share
    the replay predicts (mean over groups weighted by their compute) against the live run's."""
    import json

    from ordercube.pipeline.reduce.select import criterion_scores
    from ordercube.pipeline.report.replay import Setting, replay
    from ordercube.pipeline.run.rounds import ADAPTIVE_ATTRIBUTE
    from ordercube.pipeline.cube.owner import load_cube

    cube = load_cube(cube_path)
    table = replay(criterion_scores(cube), Setting(), seed=int(json.loads(cube.attrs["ordercube_config"])["seed"]),
                   baseline=cube["lange_random"], seconds=cube["seconds"])
    easy = table[(table["dataset"] == "gaussians3") & (table["n"] >= 300)]
    rings = table[table["dataset"] == "rings3"]
    print(f"replay (PSE-t, delta 0.05, 200 orders): easy groups agreement >= {easy['agreement'].min():.3f} "
          f"(target 0.99), median cells <= {easy['cells_median'].max():.3f} of the budget (target 0.20); rings: "
          f"{int(rings['decided'].sum())} decided, {int(rings['settled'].sum())} settled, {int(rings['unsettled'].sum())} "
          f"unsettled of {len(rings) * 201} replays, {int(rings['wrong'].sum())} confidently wrong; null races "
          f"false-decision rate <= {table['null_false_rate'].max():.3f} (delta 0.05)")
    live = load_cube(live_path)
    records = json.loads(live.attrs[ADAPTIVE_ATTRIBUTE])
    same = total = 0
    for row in table.itertuples():
        outcome = records[f"{row.dataset}|{row.n}|{row.method}"]["criteria"][row.criterion]
        total += 1
        same += (outcome["k_hat"], outcome["reason"], outcome["r_stop"]) == (row.in_order_k, row.in_order_reason,
                                                                             row.in_order_stop)
    print(f"live adaptive run against the replay in index order: {same} of {total} (group, criterion) stops and k̂ equal")
    fixed_seconds = cube["seconds"].sum(["k", "trial"]).to_series()
    weights = table.groupby(["dataset", "n", "method"])["compute_mean"].max()  # a group's cells: its longest race
    predicted = float((weights * fixed_seconds.reindex(weights.index)).sum() / fixed_seconds.sum())
    used = float(live["seconds"].sum() / cube["seconds"].sum())
    ok = live["status"] == 1
    same_cells = float(cube["seconds"].where(ok).sum() / cube["seconds"].sum())
    print(f"compute seconds, live / fixed: {used:.3f}; the fixed run's seconds of the very cells the live run computed: "
          f"{same_cells:.3f} of its total (the replay over random orders predicts {predicted:.3f}); the same cells took "
          f"{used / same_cells:.2f}x their fixed-run seconds in the live run")


if __name__ == "__main__":
    main()
