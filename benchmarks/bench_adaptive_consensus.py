"""The adaptive rule of criteria reduced from stored clusterings (PAC, Monti's Delta(k)): live and replayed.

For each dataset, consensus k-means (p_item 0.8, k = 2..6, R = 80 resamples, looks 20, 40, 80; 200 bootstrap
replicates per look) is run twice, with and without the ``adaptive:`` block, in this process. Per dataset and
criterion: the full run's k̂, the live adaptive run's stop (look, reason, k̂, share of replicates on it) and its
cells against the full budget, the whole run's seconds of each, whether the kept cells equal the full run's bit
for bit, and the replay on the full cube (``ordercube.pipeline.report.replay``: index order and 10 random trial
orders) with its agreement with the full k̂ and its mean share of cells.

Datasets: three clean Gaussian blobs (60 points), three overlapping blobs (90 points, sd 1.3 with centres 3
apart), and Alon et al.'s colon tissues (62 x 2000, log10, each gene standardised; read from the shared
datasets folder, skipped when it is absent).

    python benchmarks/bench_adaptive_consensus.py [--out table.csv]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
COLON = REPO.parent / "shared" / "datasets" / "alon_colon" / "expression_2000genes.csv"


def blobs(path: Path, per: int, sd: float, centres: list[list[float]]) -> Path:
    rng = np.random.default_rng(42)
    rows = np.vstack([np.asarray(c) + rng.normal(0, sd, size=(per, 2)) for c in centres])
    np.savetxt(path, rows, delimiter=",", header="x,y", comments="", fmt="%.6f")
    return path


def config(name: str, entry: dict, adaptive: bool) -> dict:
    raw = {"name": name, "seed": 3, "n": ["all"], "k": [2, 3, 4, 5, 6], "resamples": 80, "datasets": [entry],
           "methods": [{"name": "cc", "algorithm": "kmeans", "params": {"n_init": 2}, "scheme": "consensus",
                        "scheme_params": {"p_item": 0.8}, "criteria": ["pac", "consensus_area"]}]}
    if adaptive:
        raw["adaptive"] = {"delta": 0.05, "looks": [20, 40, 80], "replicates": 200}
    return raw


def sweep(folder: Path, raw: dict, name: str):
    from ordercube.pipeline.config.study import parse_config
    from ordercube.pipeline.cube.owner import open_cube
    from ordercube.pipeline.run.sweep import run_sweep

    started = time.perf_counter()
    run_sweep(parse_config(raw, base=folder, out=str(folder / name)), show_progress=False, echo=lambda line: None,
              workers=0)
    return open_cube(folder / name).load(), time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=None, help="also write the table as CSV")
    args = parser.parse_args()
    from ordercube.pipeline.reduce.assignments import reduced_scores
    from ordercube.pipeline.reduce.select import choose_on_curves
    from ordercube.pipeline.report.replay import Setting, reduced_groups
    from ordercube.tasks.criteria import get_criterion

    folder = Path(tempfile.mkdtemp(prefix="bench-adaptive-consensus-"))
    entries = {
        "blobs_clean": {"kind": "file", "path": str(blobs(folder / "clean.csv", 20, 0.4, [[0, 0], [6, 0], [3, 5]]))},
        "blobs_overlap": {"kind": "file", "path": str(blobs(folder / "overlap.csv", 30, 1.3, [[0, 0], [3, 0], [1.5, 2.6]]))},
    }
    if COLON.exists():
        entries["colon"] = {"kind": "file", "path": str(COLON),
                            "preprocess": [{"log": {"base": 10}}, {"standardize": {"axis": "columns"}}]}
    else:
        print(f"skipped colon: {COLON} is absent")
    rows = []
    setting = Setting(delta=0.05, r_min=20, permutations=10, replicates=200)
    for name, entry in entries.items():
        entry = {"name": name, **entry}
        adaptive, adaptive_seconds = sweep(folder, config(name, entry, True), f"{name}-adaptive.zarr")
        print(f"{name}: adaptive run {adaptive_seconds:.1f} s", flush=True)
        fixed, fixed_seconds = sweep(folder, config(name, entry, False), f"{name}-fixed.zarr")
        print(f"{name}: full run {fixed_seconds:.1f} s", flush=True)
        record = next(iter(json.loads(adaptive.attrs["ordercube_adaptive"]).values()))
        r_stop = record["r_stop"]
        same = all(np.array_equal(adaptive[v].isel(trial=slice(0, r_stop)).values,
                                  fixed[v].isel(trial=slice(0, r_stop)).values) for v in ("status", "assignment"))
        curves = reduced_scores(fixed, replicates=0)
        started = time.perf_counter()
        replays = {group.criterion: group.run(setting, 3) for group in reduced_groups(fixed, setting)}
        print(f"{name}: replayed in {time.perf_counter() - started:.1f} s", flush=True)
        for criterion, race in record["criteria"].items():
            rule = get_criterion(criterion)
            full = int(choose_on_curves(curves[list(rule.variables)], criterion, rule.decision).squeeze())
            replay = replays[criterion]
            rows.append({"dataset": name, "criterion": criterion, "full_k_hat": full, "live_k_hat": race["k_hat"],
                         "live_reason": race["reason"], "live_r_stop": race["r_stop"],
                         "live_share": round(race["k_hat_share"], 3), "group_r_stop": r_stop,
                         "cells": f"{record['cells']}/{record['budget']}", "kept_bits_equal": same,
                         "seconds_adaptive": round(adaptive_seconds, 1), "seconds_full": round(fixed_seconds, 1),
                         "replay_in_order": f"{replay['in_order_reason']} at {replay['in_order_stop']}, k {replay['in_order_k']}",
                         "replay_agreement": round(replay["agreement"], 3), "replay_cells": round(replay["cells_mean"], 3),
                         "replay_orders": replay["orders"], "replay_wrong": replay["wrong"]})
        print(pd.DataFrame(rows[-len(record["criteria"]):]).to_string(index=False), flush=True)
    table = pd.DataFrame(rows)
    print(table.to_string(index=False))
    if args.out:
        table.to_csv(args.out, index=False)


if __name__ == "__main__":
    main()
