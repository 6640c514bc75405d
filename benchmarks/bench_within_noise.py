"""How often another seed's k̂ falls outside the k's a run printed as within noise of its own k̂.

For each set, the same config is run with ``--seeds`` root seeds (new resamples; for a synthetic dataset new data
too). Each run prints, per criterion, k̂ and the k's its rule cannot tell apart from k̂ given the Monte Carlo error
(``ordercube.select_k``'s ``{criterion}_k_set``, "none" for "no choice"). Over every ordered
pair of runs (s, s'), s != s', the out-of-set rate is the share whose k̂(s') is not in the set of s; the property
the sets are built for is a rate of at most 5%. Beside it: the rate at which k̂ merely changes (k̂(s') != k̂(s), what
a reader of k̂ alone would be surprised by), the mean size of the set and the share of runs flagged within_noise.

Sets:
  colon      configs/consensus_colon.yaml (Alon's 62 colon tissues; Δ(k), PAC, cluster consensus, M3C)
  gaussian3  configs/consensus_gaussian3.yaml (generated: three groups of 20 items, 600 features; its data fixed)
  weak3      as gaussian3 with the groups' shift 0.5 instead of 1.5 (generated: structure near the noise)
  blobs      lange_gaussians3 (Lange et al. 2002) with std 2 (overlapping clouds), n = 100, k-means: lange,
             prediction_strength, gap, silhouette
             (generated afresh by every seed)

Usage:
    python benchmarks/bench_within_noise.py [--seeds 20] [--resamples 200] [--references 10] [--sets ...]

The shipped consensus configs use 1000 resamples and 25 references; ``--resamples`` and ``--references`` set them
for every consensus set (the sets narrow as resamples grow, so the rate is measured at the size run).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))


def consensus_config(name: str, folder: Path, resamples: int, references: int) -> dict[str, Any]:
    """A shipped consensus config as a dict, its data files written or resolved (as consensus_side_by_side.py)."""
    import yaml

    from consensus_side_by_side import write_gaussian3

    raw = yaml.safe_load((REPO / "configs" / f"consensus_{'gaussian3' if name == 'weak3' else name}.yaml").read_text())
    raw["resamples"] = resamples
    for method in raw["methods"]:
        method["scheme_params"] = {**method["scheme_params"], "references": references}
    for dataset in raw["datasets"]:
        if name in ("gaussian3", "weak3"):
            data, labels = write_gaussian3(folder) if name == "gaussian3" else write_weak3(folder)
            dataset["path"], dataset["labels"]["path"] = str(data), str(labels)
    return raw


def write_weak3(folder: Path) -> tuple[Path, Path]:
    """gaussian3 with a shift of 0.5: three groups the resamples separate only part of the time."""
    rng = np.random.default_rng(2003)
    groups = np.repeat(np.arange(3), 20)
    X = rng.normal(size=(60, 600))
    for g in range(3):
        X[groups == g, 100 * g:100 * g + 100] += 0.5
    data, labels = folder / "weak3.csv", folder / "weak3_labels.csv"
    np.savetxt(data, X, delimiter=",", header=",".join(f"f{j + 1}" for j in range(600)), comments="", fmt="%.6f")
    labels.write_text("group\n" + "".join(f"g{g + 1}\n" for g in groups))
    return data, labels


def blobs_config() -> dict[str, Any]:
    return {"name": "blobs", "n": [100], "k": {"from": 2, "to": 8}, "resamples": 20,
            "datasets": [{"name": "gaussians3", "kind": "lange_gaussians3", "params": {"std": 2.0}}],
            "methods": [{"name": "kmeans", "algorithm": "kmeans", "params": {"n_init": 10},
                         "predictor": "nearest_centroid",
                         "criteria": ["lange", "prediction_strength", "gap", "silhouette"]}]}


def decisions_of(raw: dict[str, Any], seed: int, out: Path) -> dict[str, tuple[int, frozenset[int]]]:
    """Each criterion's k̂ and printed set (-1: no choice) of one run of ``raw`` with root ``seed``."""
    import ordercube

    cube = ordercube.sweep({**raw, "seed": seed}, out=out / f"seed{seed}.zarr", workers=1, progress=False)
    chosen = ordercube.select_k(cube).isel(dataset=0, n=0, model=0)
    out_ = {}
    for name in [str(v) for v in chosen.data_vars if f"{v}_k_set" in chosen]:
        words = str(chosen[f"{name}_k_set"].values).split()
        out_[name] = (int(chosen[name]), frozenset(-1 if word == "none" else int(word) for word in words))
    return out_


def rates(runs: list[dict[str, tuple[int, frozenset[int]]]]) -> dict[str, dict[str, float]]:
    out = {}
    for name in runs[0]:
        pairs = [(a[name], b[name]) for i, a in enumerate(runs) for j, b in enumerate(runs) if i != j]
        out[name] = {"out_of_set": float(np.mean([b[0] not in a[1] for a, b in pairs])),
                     "k_hat_changes": float(np.mean([b[0] != a[0] for a, b in pairs])),
                     "set_size": float(np.mean([len(run[name][1]) for run in runs])),
                     "within_noise": float(np.mean([len(run[name][1]) > 1 for run in runs])),
                     "k_hats": " ".join(str(run[name][0]) for run in runs)}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--resamples", type=int, default=200)
    parser.add_argument("--references", type=int, default=10)
    parser.add_argument("--sets", nargs="+", default=["colon", "gaussian3", "weak3", "blobs"],
                        choices=["colon", "gaussian3", "weak3", "blobs"])
    args = parser.parse_args(argv)
    print(f"{args.seeds} seeds per set; consensus sets at {args.resamples} resamples, {args.references} references")
    print(f"{'set':10} {'criterion':20} {'out of set':>10} {'k̂ changes':>10} {'set size':>8} {'flagged':>8}  k̂ per seed")
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        for name in args.sets:
            start = time.perf_counter()
            raw = blobs_config() if name == "blobs" else consensus_config(name, folder, args.resamples, args.references)
            runs = [decisions_of(raw, 1000 + seed, folder / name) for seed in range(args.seeds)]
            for criterion, rate in rates(runs).items():
                print(f"{name:10} {criterion:20} {rate['out_of_set']:10.3f} {rate['k_hat_changes']:10.3f} "
                      f"{rate['set_size']:8.2f} {rate['within_noise']:8.2f}  {rate['k_hats']}")
            print(f"{name}: {time.perf_counter() - start:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
