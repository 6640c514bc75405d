"""Consensus clustering side by side: ordercube's ``consensus`` scheme against ``consensusclustering`` 0.2.4.

The same analysis on the same matrices, each side run as its own process, as a user would start it (Python
start and imports included), and timed whole:

  theirs     ``consensusclustering.ConsensusClustering`` (PyPI 0.2.4) with scikit-learn's
             ``AgglomerativeClustering(linkage="average")`` (Euclidean), ``resample_frac`` = p_item, k = 2..K,
             H resamples per k, ``fit(X, n_jobs=J)`` (its parallelism: one joblib task per k). It has no PAC:
             PAC is computed here from its consensus matrices with the same definition as ours (below), so the
             two PAC columns differ only by their resampling. Its k̂ are its own two rules, ``best_k("knee")``
             (the knee of the CDF areas) and ``best_k("change_in_auc")`` (the largest relative change of its
             10-bin CDF area), and the smallest PAC.
  ordercube  ``ordercube run CONFIG`` then ``ordercube report CUBE``: a config of ``configs/`` (``scheme:
             consensus``, ``scheme_params: {p_item}``, algorithm ``agglomerative`` with ``linkage: average``)
             with H, K and the criteria set from the arguments. Its PAC per k with the bootstrap interval over
             resamples is read from the cube (``reduced_scores``), its k̂ from the report's ``selection.csv``.
             PAC is also recomputed here from the stored assignments with NumPy alone, as an independent
             check of the reduction.

The base clusterer is agglomerative clustering with average linkage on Euclidean distances on both sides:
it is deterministic given the resample, so the two sides differ only by which items each resample drew.

PAC (Senbabaoglu et al. 2014), both sides: the share of the consensus matrix's entries i < j with
lower < M_ij <= upper (the empirical CDF's F(upper) - F(lower), as ConsensusClusterPlus and M3C compute it),
window (0.1, 0.9).

Monte Carlo error: ordercube's PAC comes with the bootstrap over resamples that ``reduced_scores`` gives
(``pac_lo``, ``pac_hi``: the 95% percentile interval; ``pac_boot``: the replicates); its standard error is the
replicates' standard deviation. The peer draws the same number
of resamples of the same design, so its PAC has the same standard error; the difference of the two has
SE_diff = sqrt(2) x SE, and the two agree when |ours - theirs| <= 3 SE_diff + 1 / pairs (one pair of items:
the resolution of a PAC). Items per resample: floor(p_item N) on both sides (as ConsensusClusterPlus and M3C).

Datasets (rows are the objects clustered):
  colon      Alon et al. (1999): the 62 tissues x 2000 genes; intensities clipped to [100, 16000], log10, each
             gene standardised (configs/consensus_colon.yaml);
  yeast      Spellman et al. (1998) cdc28: the genes (the dataset's PROVENANCE names them the objects
             clustered), 800 x 17 time points; genes missing 5+ points dropped, the rest imputed by the gene's
             mean, each gene standardised (configs/consensus_yeast.yaml);
  gaussian3  generated here: three groups of 20 items, 600 features N(0, 1), each group with its own 100
             features shifted by +1.5 (seed 2003); configs/consensus_gaussian3.yaml.

    python benchmarks/consensus_side_by_side.py [--resamples 1000] [--k-max 10] [--datasets colon yeast gaussian3]
    python benchmarks/consensus_side_by_side.py --quick      # H = 20, k = 2..5, colon and gaussian3

Nothing here is a pass/fail test; tests/test_consensus_peers.py holds the test.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
ORDERCUBE = ([str(Path(sys.executable).with_name("ordercube"))] if Path(sys.executable).with_name("ordercube").exists()
             else [sys.executable, "-m", "ordercube.pipeline.cli"])
CONFIGS = {"colon": "consensus_colon.yaml", "yeast": "consensus_yeast.yaml", "gaussian3": "consensus_gaussian3.yaml"}
WINDOW = (0.1, 0.9)
SEED = 2003
AGREE = 3.0  # standard errors of the difference within which the two PACs agree


# ----------------------------------------------------------------------------- shared definitions (NumPy only)

def pac_of(M: np.ndarray, window: tuple[float, float] = WINDOW) -> float:
    """The share of entries i < j of ``M`` in (lower, upper]; NaN entries (never co-drawn) are left out."""
    values = M[np.tril_indices_from(M, k=-1)]
    values = values[~np.isnan(values)]
    lower, upper = window
    return float(np.mean((values > lower) & (values <= upper))) if values.size else float("nan")


def consensus_from_assignments(labels: np.ndarray) -> np.ndarray:
    """Monti et al.'s (2003) consensus matrix of ``labels`` (R, N), -1 where an item was not drawn: the times
    i and j fell in one cluster over the times both were drawn (NaN where never both)."""
    drawn = (labels >= 0).astype(np.float64)
    k = int(labels.max()) + 1
    together = np.zeros((labels.shape[1], labels.shape[1]))
    for c in range(k):
        member = (labels == c).astype(np.float64)
        together += member.T @ member
    both = drawn.T @ drawn
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(both > 0, together / both, np.nan)


def gaussian3(seed: int = SEED) -> tuple[np.ndarray, np.ndarray]:
    """Three groups of 20 items, 600 features N(0, 1); group g's features 100 g .. 100 g + 99 shifted by +1.5."""
    rng = np.random.default_rng(seed)
    groups = np.repeat(np.arange(3), 20)
    X = rng.normal(size=(60, 600))
    for g in range(3):
        X[groups == g, 100 * g:100 * g + 100] += 1.5
    return X, groups


def write_gaussian3(folder: Path) -> tuple[Path, Path]:
    """``gaussian3.csv`` (a header row, 60 rows of 600 values) and ``gaussian3_labels.csv`` (column ``group``)."""
    folder.mkdir(parents=True, exist_ok=True)
    X, groups = gaussian3()
    data, labels = folder / "gaussian3.csv", folder / "gaussian3_labels.csv"
    header = ",".join(f"f{j + 1}" for j in range(X.shape[1]))
    np.savetxt(data, X, delimiter=",", header=header, comments="", fmt="%.6f")
    labels.write_text("group\n" + "".join(f"g{g + 1}\n" for g in groups))
    return data, labels


# ----------------------------------------------------------------------------- the peer, in its own process

def peer_main(data: Path, resamples: int, k_max: int, p_item: float, jobs: int, out: Path) -> None:
    """consensusclustering 0.2.4 on ``data`` (.npy), as its README shows it; everything it computes (and the PAC
    of its consensus matrices) is written to ``out`` as JSON."""
    from consensusclustering import ConsensusClustering
    from sklearn.cluster import AgglomerativeClustering

    X = np.load(data)
    cc = ConsensusClustering(AgglomerativeClustering(linkage="average"), min_clusters=2, max_clusters=k_max,
                             n_resamples=resamples, resample_frac=p_item, rng=SEED)
    cc.fit(X, n_jobs=jobs)
    ks = cc.cluster_range_
    pac = [pac_of(cc.consensus_k(k)) for k in ks]
    with np.errstate(all="ignore"):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            knee = cc.best_k("knee")
    result = {"ks": ks, "pac": pac, "area": [float(cc.area_under_cdf(k)) for k in ks],
              "change_in_auc": [float(v) for v in cc.change_in_area_under_cdf()],
              "k_knee": None if knee is None else int(knee), "k_change_in_auc": int(cc.best_k("change_in_auc")),
              "k_pac": int(ks[int(np.argmin(pac))]), "items_per_resample": int(X.shape[0] * p_item)}
    out.write_text(json.dumps(result))


# ----------------------------------------------------------------------------- ordercube's side

def run_config(name: str, folder: Path, resamples: int, k_max: int, p_item: float, references: int) -> Path:
    """configs/consensus_NAME.yaml with H, K, p_item and the references set (and m3c only with references),
    its relative and catalog paths kept; the synthetic set's file is written into ``folder``."""
    import yaml

    raw = yaml.safe_load((REPO / "configs" / CONFIGS[name]).read_text())
    raw["resamples"] = resamples
    raw["k"] = {"from": 2, "to": k_max}
    raw.pop("published", None)
    for method in raw["methods"]:
        params = dict(method.get("scheme_params") or {})
        params["p_item"] = p_item
        params["references"] = references
        method["scheme_params"] = params
        if references == 0:
            method["criteria"] = [c for c in method["criteria"] if c != "m3c"]
    for dataset in raw["datasets"]:
        if name == "gaussian3":
            data, labels = write_gaussian3(folder)
            dataset["path"], dataset["labels"]["path"] = str(data), str(labels)
        elif not str(dataset.get("path", "")).startswith("catalog:"):
            dataset["path"] = str((REPO / "configs" / dataset["path"]).resolve())
            if "labels" in dataset and "path" in dataset["labels"]:
                dataset["labels"]["path"] = str((REPO / "configs" / dataset["labels"]["path"]).resolve())
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def matrix_of(config: Path) -> np.ndarray:
    """The matrix ordercube clusters for the config's (only) dataset: read, checked and preprocessed by
    ordercube's own reader, so the peer gets the very same numbers (the methods play no part in it)."""
    import yaml

    from ordercube.pipeline.config.study import parse_config

    raw = yaml.safe_load(config.read_text())
    raw["methods"] = [{"name": "reader", "algorithm": "kmeans", "predictor": "nearest_centroid",
                       "criteria": ["lange"]}]
    parsed = parse_config(raw, base=config.parent, out=str(config.with_suffix(".zarr")))
    return np.asarray(parsed.datasets[0].data, dtype=np.float64)


def ours_from_cube(cube_path: Path, report: Path) -> dict[str, Any]:
    """PAC per k with its bootstrap interval (``reduced_scores``), the same recomputed from the stored assignments
    with NumPy alone, and every criterion's k̂ from the report's ``selection.csv``."""
    import pandas as pd
    import xarray as xr

    from ordercube.pipeline.reduce.assignments import reduced_scores

    cube = xr.open_zarr(cube_path)
    scores = reduced_scores(cube, replicates=100)
    one = {"dataset": 0, "n": 0, "model": 0}
    pac = scores["pac"].isel(one)
    ks = [int(k) for k in pac["k"].values]
    result: dict[str, Any] = {"ks": ks, "pac": [float(v) for v in pac.values],
                              "pac_lo": [float(v) for v in scores["pac_lo"].isel(one).values],
                              "pac_hi": [float(v) for v in scores["pac_hi"].isel(one).values],
                              "pac_se": [float(v) for v in scores["pac_boot"].isel(one).std("replicate", ddof=1).values]}
    assignment = cube["assignment"].isel(one)
    roles = json.loads(cube.attrs.get("ordercube_part_roles", "{}")) or {}
    model = str(cube["model"].values[0])
    data_parts = [p for p, role in enumerate(roles.get(model, ["data"])) if role == "data"] or [0]
    items = int(cube["items"].values[0]) if "items" in cube else assignment.sizes["item"]
    recomputed = []
    for k in ks:
        labels = assignment.sel(k=k).isel(part=data_parts, item=slice(0, items)).values.reshape(-1, items)
        labels = labels[(labels >= 0).any(axis=1)]
        recomputed.append(pac_of(consensus_from_assignments(labels)))
    result["pac_recomputed"] = recomputed
    table = pd.read_csv(report / "selection.csv")
    result["k_hat"] = {str(row.criterion): (None if pd.isna(row.k_hat) else int(row.k_hat))
                       for row in table.itertuples()}
    return result


# ----------------------------------------------------------------------------- timing

def timed(command: list[str], timeout: float | None, cwd: Path | None = None) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=cwd)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited {done.returncode}: {done.stderr[-3000:]}")
    return wall, done.stdout


def side_by_side(name: str, folder: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Both sides on one dataset (or the one ``args.only`` names: the other's figures are read from an earlier
    run kept in the same ``--keep`` folder, with the same H and K)."""
    work = folder / name
    work.mkdir(parents=True, exist_ok=True)
    config = run_config(name, work, args.resamples, args.k_max, args.p_item, 0)
    X = matrix_of(config)
    np.save(work / "X.npy", X)
    theirs_json, theirs_seconds = work / "theirs.json", work / "theirs_seconds.json"
    cube, report = work / f"{name}.zarr", work / f"{name}-report"
    load_before = os.getloadavg()[0]
    if args.only != "ours":
        peer = [sys.executable, __file__, "--peer", str(work / "X.npy"), "--resamples", str(args.resamples),
                "--k-max", str(args.k_max), "--p-item", str(args.p_item), "--jobs", str(args.peer_jobs),
                "--peer-out", str(theirs_json)]
        t_theirs, _ = timed(peer, args.timeout)
        theirs_seconds.write_text(json.dumps({"seconds": t_theirs, "resamples": args.resamples, "k_max": args.k_max,
                                              "jobs": args.peer_jobs, "load": os.getloadavg()[0]}))
    theirs = json.loads(theirs_json.read_text())
    timing = json.loads(theirs_seconds.read_text())
    if (timing["resamples"], timing["k_max"]) != (args.resamples, args.k_max):
        raise SystemExit(f"{theirs_seconds} holds H = {timing['resamples']}, K = {timing['k_max']}: run both sides")
    seconds = {"theirs": timing["seconds"]}
    result: dict[str, Any] = {"dataset": name, "shape": list(X.shape), "pairs": X.shape[0] * (X.shape[0] - 1) // 2,
                              "theirs": theirs, "seconds": seconds,
                              "items_per_resample": {"ours": int(math.floor(args.p_item * X.shape[0])),
                                                     "theirs": theirs["items_per_resample"]}}
    if args.only == "theirs":
        result["load"] = [load_before, os.getloadavg()[0]]
        return result
    if cube.exists():
        shutil.rmtree(cube)
    where = ["--workers", str(args.workers)] if args.workers is not None else []
    seconds["ordercube_run"], _ = timed([*ORDERCUBE, "run", str(config), "--out", str(cube), "--no-progress",
                                         "--no-dashboard", *where], args.timeout)
    replicates = [] if args.report_replicates is None else ["--replicates", str(args.report_replicates)]
    seconds["ordercube_report"], _ = timed([*ORDERCUBE, "report", str(cube), "--out", str(report), *replicates],
                                           args.timeout)
    seconds["ordercube"] = seconds["ordercube_run"] + seconds["ordercube_report"]
    result["load"] = [load_before, os.getloadavg()[0]]
    result["ours"] = ours_from_cube(cube, report)
    return result


def agreement(result: dict[str, Any]) -> list[dict[str, Any]]:
    """Per k: PAC ours [interval], theirs, the difference and whether it is within the stated error."""
    rows = []
    ours, theirs = result["ours"], result["theirs"]
    for i, k in enumerate(theirs["ks"]):
        if k not in ours["ks"]:
            continue
        j = ours["ks"].index(k)
        se = ours["pac_se"][j]
        se_diff = math.sqrt(2.0) * se
        diff = ours["pac"][j] - theirs["pac"][i]
        rows.append({"k": k, "ours": ours["pac"][j], "lo": ours["pac_lo"][j], "hi": ours["pac_hi"][j],
                     "recomputed": ours["pac_recomputed"][j], "theirs": theirs["pac"][i], "diff": diff,
                     "se_diff": se_diff, "agree": abs(diff) <= AGREE * se_diff + 1.0 / result["pairs"]})
    return rows


def print_result(result: dict[str, Any]) -> None:
    theirs, seconds = result["theirs"], result["seconds"]
    items = result["items_per_resample"]
    print(f"\n== {result['dataset']}: {result['shape'][0]} items x {result['shape'][1]} features; items per resample "
          f"ours {items['ours']}, theirs {items['theirs']}; load {result['load'][0]:.2f} -> {result['load'][1]:.2f}")
    if "ours" not in result:
        print(f"theirs only: PAC {[round(v, 4) for v in theirs['pac']]}; k̂ knee {theirs['k_knee']}, change_in_auc "
              f"{theirs['k_change_in_auc']}, smallest PAC {theirs['k_pac']}; {seconds['theirs']:.1f} s")
        return
    ours = result["ours"]
    print(f"{'k':>3} | {'PAC ours':>8} {'[95% bootstrap]':>17} {'recomp.':>8} | {'PAC theirs':>10} | "
          f"{'diff':>7} {'SE diff':>7} {'agree':>5}")
    for row in agreement(result):
        print(f"{row['k']:>3} | {row['ours']:8.4f} [{row['lo']:7.4f}, {row['hi']:7.4f}] {row['recomputed']:8.4f} | "
              f"{row['theirs']:10.4f} | {row['diff']:+7.4f} {row['se_diff']:7.4f} {'yes' if row['agree'] else 'NO':>5}")
    hats = ", ".join(f"{c} {k}" for c, k in ours["k_hat"].items())
    print(f"k̂ ours: {hats}")
    print(f"k̂ theirs: knee {theirs['k_knee']}, change_in_auc {theirs['k_change_in_auc']}, smallest PAC {theirs['k_pac']}")
    ratio = seconds["theirs"] / seconds["ordercube"]
    print(f"wall seconds: theirs {seconds['theirs']:.1f}; ordercube {seconds['ordercube']:.1f} (run "
          f"{seconds['ordercube_run']:.1f} + report {seconds['ordercube_report']:.1f}); ratio theirs/ours {ratio:.1f}x")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", choices=sorted(CONFIGS), default=["colon", "yeast", "gaussian3"])
    parser.add_argument("--resamples", type=int, default=1000, help="H, resamples per k (default 1000)")
    parser.add_argument("--k-max", type=int, default=10, help="the largest k (from 2; default 10)")
    parser.add_argument("--p-item", type=float, default=0.8, help="share of the items per resample (default 0.8)")
    parser.add_argument("--peer-jobs", type=int, default=os.cpu_count() or 1,
                        help="consensusclustering's n_jobs (default: one per core; 0: serial)")
    parser.add_argument("--workers", type=int, help="ordercube run --workers (default: its own choice)")
    parser.add_argument("--report-replicates", type=int,
                        help="ordercube report --replicates (the bootstrap's replicates; default: the report's own)")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds any one process may take")
    parser.add_argument("--quick", action="store_true", help="H = 20, k = 2..5, colon and gaussian3 (a smoke run)")
    parser.add_argument("--only", choices=("theirs", "ours"),
                        help="run one side; the other's figures come from an earlier run in the --keep folder")
    parser.add_argument("--json", help="also write every figure to this JSON file")
    parser.add_argument("--keep", help="keep the cubes, reports and data in this folder")
    parser.add_argument("--write-gaussian3", metavar="FOLDER", help="only write the synthetic set's two files there")
    parser.add_argument("--peer", help=argparse.SUPPRESS)
    parser.add_argument("--jobs", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--peer-out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    sys.stdout.reconfigure(line_buffering=True)  # each table as soon as it is measured, also into a file
    if args.write_gaussian3:
        for path in write_gaussian3(Path(args.write_gaussian3)):
            print(path)
        return 0
    if args.peer:
        peer_main(Path(args.peer), args.resamples, args.k_max, args.p_item, args.jobs, Path(args.peer_out))
        return 0
    if args.only and not args.keep:
        parser.error("--only needs --keep FOLDER (where the other side's figures are kept)")
    if args.quick:
        args.resamples, args.k_max = 20, 5
        if args.datasets == parser.get_default("datasets"):
            args.datasets = ["colon", "gaussian3"]
    print(f"cores: {os.cpu_count()}; H = {args.resamples}, k = 2..{args.k_max}, p_item = {args.p_item}, "
          f"consensusclustering n_jobs = {args.peer_jobs}; clusterer: average linkage, Euclidean")
    folder = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="consensus-side-by-side-"))
    folder.mkdir(parents=True, exist_ok=True)
    results = []
    try:
        for name in args.datasets:
            result = side_by_side(name, folder, args)
            print_result(result)
            results.append(result)
            if args.json:  # after each dataset: a run stopped later keeps what it measured
                Path(args.json).write_text(json.dumps(results, indent=1))
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
