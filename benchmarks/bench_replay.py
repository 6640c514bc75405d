"""The adaptive rule replayed on the shipped configs' fixed-budget cubes: what it decides
and what it spends under each setting, with no recomputation.

For every cube and setting, over all of its groups (dataset, n, method, criterion with a sequential rule), each
replayed in index order and ``--permutations`` random orders: the groups, the near-ties (the full budget cannot
separate its top k's at 99.9%), the lowest agreement with the full budget's k̂, the mean share of cells
and of compute seconds used, the confident stops (decided or settled) and those wrong against the full budget's
k̂ and against the reference set (with the largest per-group Clopper-Pearson bound), the unsettled share and
the null races' false-decision rate (pooled and the largest group's). Settings: PSE-t at delta 0.05 and
epsilon 0 (the default), delta 0.01 and 0.1, epsilon 0.001, 0.005 and 0.01, and the ablations: mode
guarded, strict (empirical Bernstein) and Hoeffding races (the last two on criteria in [0, 1] only).

    python benchmarks/bench_replay.py [--cubes results] [--permutations 200] [--only quickstart_200 ...]

Cubes are read from ``--cubes``: ``<config name>.zarr`` for lange2002_table1, shamir_tishby2007_fig1,
shamir_tishby2007_fig2 and yeast_cdc28 (``ordercube run configs/<name>.yaml --out <cubes>/<name>.zarr``) and
``quickstart_200.zarr``, the quickstart at 200 resamples, which this script computes when it is missing. A
missing cube is named with the command that makes it, and skipped.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

CUBES = ("quickstart_200", "lange2002_table1", "shamir_tishby2007_fig1", "shamir_tishby2007_fig2", "yeast_cdc28")
SETTINGS = {  # name: (mode, delta, epsilon)
    "t": ("t", 0.05, 0.0),
    "t delta 0.01": ("t", 0.01, 0.0),
    "t delta 0.1": ("t", 0.1, 0.0),
    "t eps 0.001": ("t", 0.05, 0.001),
    "t eps 0.005": ("t", 0.05, 0.005),
    "t eps 0.01": ("t", 0.05, 0.01),
    "guarded": ("guarded", 0.05, 0.0),
    "strict": ("strict", 0.05, 0.0),
    "hoeffding": ("hoeffding", 0.05, 0.0),
}


def quickstart_200(path: Path) -> None:
    raw = yaml.safe_load((REPO / "configs" / "quickstart.yaml").read_text())
    with tempfile.TemporaryDirectory() as folder:
        config = Path(folder) / "quickstart_200.yaml"
        config.write_text(yaml.safe_dump({**raw, "name": "quickstart_200", "resamples": 200}, sort_keys=False))
        subprocess.run([str(Path(sys.executable).with_name("ordercube")), "run", str(config), "--out", str(path),
                        "--no-progress"], check=True, capture_output=True, text=True)


def summarise(table: pd.DataFrame) -> dict[str, object]:
    replays = table[["decided", "settled", "unsettled"]].to_numpy().sum()
    null = table.dropna(subset=["null_false_rate"])
    return {
        "groups": len(table),
        "near-ties": int((table["reference"].str.split().str.len() > 1).sum()),
        "agree min": table["agreement"].min(),
        "cells": table["cells_mean"].mean(),
        "compute": table["compute_mean"].mean(),
        "confident": int(table["confident"].sum()),
        "wrong/fixed": int(table["wrong_vs_fixed"].sum()),
        "wrong/ref": int(table["wrong"].sum()),
        "wrong CP max": table["wrong_upper"].max(),
        "unsettled": table["unsettled"].sum() / replays,
        "null rate": (null["null_false_rate"] * null["null_races"]).sum() / max(null["null_races"].sum(), 1),
        "null max": null["null_false_rate"].max() if len(null) else float("nan"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cubes", default=str(REPO / "results"))
    parser.add_argument("--permutations", type=int, default=200)
    parser.add_argument("--only", nargs="*", default=list(CUBES))
    parser.add_argument("--csv", help="also write every group's row under every setting to this CSV")
    args = parser.parse_args()

    from ordercube.pipeline.cube.attrs import BASELINE
    from ordercube.pipeline.reduce.select import criterion_scores
    from ordercube.pipeline.report.replay import Setting, replay
    from ordercube.pipeline.cube.owner import load_cube

    folder = Path(args.cubes)
    rows, groups = [], []
    for name in args.only:
        path = folder / f"{name}.zarr"
        if name == "quickstart_200" and not path.exists():
            folder.mkdir(parents=True, exist_ok=True)
            quickstart_200(path)
        if not path.exists():
            print(f"{name}: no cube at {path}; make it with: ordercube run configs/{name}.yaml --out {path}")
            continue
        cube = load_cube(path)
        scores = criterion_scores(cube)
        seed = int(json.loads(cube.attrs["ordercube_config"])["seed"])
        for setting_name, (mode, delta, epsilon) in SETTINGS.items():
            started = time.perf_counter()
            table = replay(scores, Setting(delta=delta, epsilon=epsilon, mode=mode, permutations=args.permutations),
                           seed=seed, baseline=cube[BASELINE] if BASELINE in cube else None, seconds=cube["seconds"])
            if table.empty:
                continue
            rows.append({"cube": name, "setting": setting_name, **summarise(table),
                         "replay s": time.perf_counter() - started})
            groups.append(table.assign(cube=name, setting=setting_name))
    pd.set_option("display.width", 250)
    print(f"replays per group: index order + {args.permutations} random orders; cells and compute: mean share of the "
          "fixed budget's; wrong/fixed: confident stops not on the full budget's k̂; wrong/ref: not in the reference "
          "set (several k's in it: a near-tie); CP max: the largest per-group 95% Clopper-Pearson bound on wrong/ref; "
          "null: decided stops in races of an arm against itself (pooled, largest group)")
    print(pd.DataFrame(rows).to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    if args.csv:
        pd.concat(groups).to_csv(args.csv, index=False)


if __name__ == "__main__":
    main()
