"""First analyses side by side: what a new user runs first, against the tools they would otherwise use.

Every tool runs as its own process, as a user would start it (Python or R start-up and imports included), and
is timed whole. Each case is repeated (``--repeats``, default 3) with the tools interleaved (A, B, C, A, B, C,
...), so a burst of load on a shared machine falls on all of them; the table gives medians and the ratios
ordercube / peer (below 1: ordercube is faster).

1. Consensus clustering (Monti, Tamayo, Mesirov & Golub 2003) on three sets: the colon config
   (configs/consensus_colon.yaml: 62 tissues x 2000 genes, clip, log10, each gene standardised), the yeast
   config (configs/consensus_yeast.yaml: 800 genes x 17 time points) and the generated ``gaussian3`` set of
   benchmarks/consensus_side_by_side.py (60 items). One design on every tool: H = 1000 resamples, p_item 0.8,
   p_feature 1, average linkage on Euclidean distances, k = 2..10, no M3C reference sets (R has none).

   - ordercube: ``ordercube run CONFIG --out X.zarr`` then ``ordercube report X.zarr`` (its default bootstrap
     included), timed together and each; and ``ordercube run CONFIG --report`` (the same, in one process);
   - R: ``ConsensusClusterPlus`` (Wilkerson & Hayes 2010; Debian's r-bioc-consensusclusterplus) and
     ``calcICL``, both drawing their PNG figures as ordercube's report draws its own, on the same CSV with the
     same preprocessing done in R;
   - ``consensusclustering`` (PyPI 0.2.4), as benchmarks/consensus_side_by_side.py's ``peer_main`` runs it, on
     the matrix ordercube's reader produced.

   The targets of the issue this benchmark was written for: ordercube at most 0.67 x R and at most 0.1 x
   consensusclustering; whether each is met is printed, nothing is asserted.

2. ``ordercube.choose_k(X, seed=0)`` with its defaults (k = 2..10, 20 resamples, the criteria lange,
   prediction_strength, gap and silhouette, k-means) on scikit-learn's iris, wine and digits, from a plain
   script file, its call at the top level without a ``__main__`` guard unless ``--guard`` (:data:`GUARD`). Against:

   - a plain scikit-learn loop of the same criteria on the same design: 20 random splits into halves per k,
     ``KMeans(n_init=10)`` on each half, the first half's solution extended to the second by nearest centroid;
     Lange et al.'s (2002, eqs. 5-6) Hungarian-matched disagreement (``scipy.optimize.linear_sum_assignment``)
     normalised by that of random labelings (Roth et al. 2002, eq. 5; 200 draws, ordercube's
     ``baseline_draws``, once per k), smallest wins; Tibshirani & Walther's (2005) prediction strength, the largest k with
     mean ps >= 0.9 (ordercube's threshold); the silhouette (Rousseeuw 1987) of both halves' own solutions,
     largest wins; the Gap statistic (Tibshirani, Walther & Hastie 2001, eqs. 2-3, W_k with squared Euclidean
     distances) once on the whole X against B = 20 uniform reference sets over its bounding box, decided by
     ``Tibs2001SEmax``. BLAS/OpenMP threads are pinned to 1; ``sklearn-2jobs`` runs the same loop with joblib
     ``n_jobs=2`` over the splits and reference sets;
   - R's ``cluster::clusGap(x, kmeans, K.max = 10, B = 100, nstart = 10)`` (its default B) with
     ``d.power = 2`` and ``spaceH0 = "original"`` (the paper's W_k and uniform box, as ordercube's gap), its
     k̂ by ``maxSE(..., "Tibs2001SEmax")`` beside ordercube's gap k̂. NbClust is not packaged by Debian: a line
     says so when apt has no candidate.

   Each tool's k̂ per criterion is printed, so agreement is visible.

3. Where ordercube prints an estimated time before computing (a line matched by :data:`ESTIMATE`), the estimate,
   the time from that line to the process's exit (what the user waits after reading it; the output is read
   unbuffered, line by line) and their ratio, beside the whole process's time.

    python benchmarks/first_analyses.py [--repeats 3] [--cases consensus choose_k] [--datasets colon iris ...]
    python benchmarks/first_analyses.py --quick      # H = 100, digits skipped, 1 repeat: a smoke run

Nothing here is a pass/fail test. A peer that fails prints the tail of its stderr and its row says "failed";
the rest goes on.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import consensus_side_by_side as side  # noqa: E402  (the gaussian3 generator, the peer and the config rewriting)

REPO = side.REPO
ORDERCUBE = side.ORDERCUBE
# The line ordercube prints before computing, e.g. "estimated wall time 3.2 s": the seconds it expects.
ESTIMATE = re.compile(r"estimated ([0-9.]+) (s|min|h)\b", re.IGNORECASE)
UNIT_SECONDS = {"s": 1.0, "min": 60.0, "h": 3600.0}
CONSENSUS_SETS = ("colon", "yeast", "gaussian3")
CHOOSE_K_SETS = ("iris", "wine", "digits")
CONSENSUS_CRITERIA = ["consensus_area", "pac", "cluster_consensus"]
TARGETS = {"R": 0.67, "consensusclustering": 0.1}  # ordercube / peer, the issue's goals
ONE_PROCESS = "ordercube --report"  # `run CONFIG --report`: the run and its report in one process
PINNED = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
R_PACKAGES = ("ConsensusClusterPlus", "cluster")
APT_PACKAGES = ("r-bioc-consensusclusterplus", "r-cran-cluster")
SEED = 2003
# choose_k's script is a plain script, its call at the top level with no __main__ guard (as the issue checks it; the
# LocalCluster's workers no longer import the main module). --guard / --no-guard choose either way.
GUARD = False
PS_THRESHOLD = 0.9
BASELINE_DRAWS = 200
GAP_REFERENCES = 20


# ----------------------------------------------------------------------------- pure helpers

def consensus_design(raw: dict[str, Any], *, resamples: int, k_max: int = 10, p_item: float = 0.8) -> dict[str, Any]:
    """A consensus config (as parsed YAML) rewritten to the benchmark's design: H resamples, k = 2..k_max,
    p_item, p_feature 1, no reference sets, the criteria R also computes. ``raw`` itself is left unchanged."""
    out = json.loads(json.dumps(raw))
    out["resamples"] = resamples
    out["k"] = {"from": 2, "to": k_max}
    out.pop("published", None)
    for method in out["methods"]:
        params = dict(method.get("scheme_params") or {})
        params.update(p_item=p_item, p_feature=1.0, references=0)
        method["scheme_params"] = params
        method["criteria"] = list(CONSENSUS_CRITERIA)
    return out


def consensus_config(name: str, folder: Path, resamples: int, k_max: int = 10, p_item: float = 0.8) -> Path:
    """configs/consensus_NAME.yaml with the benchmark's design, written into ``folder`` (paths resolved and the
    generated set's files written by consensus_side_by_side's ``run_config``)."""
    import yaml

    path = side.run_config(name, folder, resamples, k_max, p_item, 0)
    raw = consensus_design(yaml.safe_load(path.read_text()), resamples=resamples, k_max=k_max, p_item=p_item)
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def estimate_of(output: str) -> float | None:
    """The seconds of the first estimate ordercube printed (:data:`ESTIMATE`), None when it printed none."""
    match = ESTIMATE.search(output)
    if match is None:
        return None
    try:
        return float(match.group(1)) * UNIT_SECONDS[match.group(2).lower()]
    except ValueError:
        return None


def ratio(ours: float | None, theirs: float | None) -> float | None:
    """ours / theirs, None when either is missing."""
    if ours is None or theirs is None or theirs <= 0:
        return None
    return ours / theirs


def choose_k_script(dataset: str, out: Path, result: Path, *, guard: bool) -> str:
    """The plain script a user writes: load a scikit-learn dataset, ``ordercube.choose_k(X, seed=0)``, and (for
    the benchmark) k̂ per criterion written to ``result`` as JSON."""
    body = [f"X = load_{dataset}().data",
            f"choice = ordercube.choose_k(X, seed=0, out={str(out)!r})",
            "hats = {str(c): int(k) for c, k in choice.table['k_hat'].items()}",
            f"Path({str(result)!r}).write_text(json.dumps(hats))"]
    head = ["import json", "from pathlib import Path", "", f"from sklearn.datasets import load_{dataset}", "",
            "import ordercube", ""]
    if guard:
        return "\n".join([*head, 'if __name__ == "__main__":', *("    " + line for line in body)]) + "\n"
    return "\n".join([*head, *body]) + "\n"


def r_preprocess(name: str) -> str:
    """R code that reads the CSV ``path`` into ``x`` (rows: the items clustered) as the config's preprocess
    steps do (tasks/preprocess.py: standardising divides by the population SD, n in the denominator, and
    leaves a constant gene at zero)."""
    sd0 = "function(v) sqrt(mean((v - mean(v))^2))"
    if name == "colon":  # clip to [100, 16000], log10, each gene (column) standardised over the tissues
        return (f"x <- as.matrix(read.csv(path, row.names = 1, check.names = FALSE))\n"
                f"x <- log10(pmin(pmax(x, 100), 16000))\n"
                f"sd0 <- {sd0}\n"
                f"s <- apply(x, 2, sd0)\n"
                f"x <- sweep(sweep(x, 2, colMeans(x)), 2, ifelse(s > 0, s, 1), '/')\n"
                f"x[, s == 0] <- 0\n")  # a constant gene becomes zero, as in tasks/preprocess.py
    if name == "yeast":  # genes with more than 4 of 17 missing dropped, the rest imputed by the gene's mean, rows standardised
        return (f"x <- as.matrix(read.csv(path, row.names = 1, check.names = FALSE))\n"
                f"x <- x[rowSums(is.na(x)) <= 4, , drop = FALSE]\n"
                f"m <- rowMeans(x, na.rm = TRUE)\n"
                f"x[is.na(x)] <- m[row(x)[is.na(x)]]\n"
                f"sd0 <- {sd0}\n"
                f"s <- apply(x, 1, sd0)\n"
                f"x <- (x - rowMeans(x)) / ifelse(s > 0, s, 1)\n"
                f"x[s == 0, ] <- 0\n")
    if name == "gaussian3":
        return "x <- as.matrix(read.csv(path, check.names = FALSE))\n"
    raise ValueError(f"dataset {name!r} has no R preprocessing; expected one of {list(CONSENSUS_SETS)}")


def r_consensus_script(name: str, path: Path, title: Path, *, resamples: int, k_max: int, p_item: float) -> str:
    """ConsensusClusterPlus and calcICL (figures as PNG) on the items of ``path``, read and preprocessed in R."""
    return (f"suppressPackageStartupMessages(library(ConsensusClusterPlus))\n"
            f"path <- {json.dumps(str(path))}\n"
            f"{r_preprocess(name)}"
            f"if (is.null(rownames(x))) rownames(x) <- paste0('item', seq_len(nrow(x)))  # calcICL needs names\n"
            f"cat(sprintf('R read: %d rows x %d features; mean |x| %.9f\\n', nrow(x), ncol(x), mean(abs(x))))\n"
            f"res <- ConsensusClusterPlus(t(x), maxK = {k_max}, reps = {resamples}, pItem = {p_item}, pFeature = 1,\n"
            f"  clusterAlg = 'hc', innerLinkage = 'average', finalLinkage = 'average', distance = 'euclidean',\n"
            f"  title = {json.dumps(str(title))}, plot = 'png', seed = {SEED}, verbose = FALSE)\n"
            f"icl <- calcICL(res, title = {json.dumps(str(title))}, plot = 'png')\n"
            f"pac <- sapply(2:{k_max}, function(k) {{ m <- res[[k]]$consensusMatrix; f <- ecdf(m[lower.tri(m)]);"
            f" f(0.9) - f(0.1) }})\n"
            f"cat(sprintf('R smallest PAC k %d\\n', which.min(pac) + 1))\n")


def r_clusgap_script(path: Path, result: Path, *, k_max: int = 10, references: int = 100) -> str:
    """cluster::clusGap with k-means (nstart 10) on the CSV ``path`` (no header); k̂ by Tibs2001SEmax to ``result``."""
    return (f"suppressPackageStartupMessages(library(cluster))\n"
            f"x <- as.matrix(read.csv({json.dumps(str(path))}, header = FALSE))\n"
            f"set.seed({SEED})\n"
            f"g <- clusGap(x, FUNcluster = kmeans, K.max = {k_max}, B = {references}, nstart = 10, d.power = 2,\n"
            f"  spaceH0 = 'original', verbose = FALSE)\n"
            f"k <- maxSE(g$Tab[, 'gap'], g$Tab[, 'SE.sim'], method = 'Tibs2001SEmax')\n"
            f"writeLines(sprintf('{{\"gap\": %d, \"rows\": %d, \"features\": %d}}', k, nrow(x), ncol(x)), "
            f"{json.dumps(str(result))})\n")


def median_or_none(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


# ----------------------------------------------------------------------------- running a process

@dataclass
class Tool:
    """One tool of a case: its timings over the repeats, what it printed, and why it failed if it did."""

    name: str
    seconds: list[float] = field(default_factory=list)
    parts: dict[str, list[float]] = field(default_factory=dict)
    estimates: list[tuple[float, float]] = field(default_factory=list)  # (estimated, waited after it) seconds
    k_hat: dict[str, Any] = field(default_factory=dict)
    note: str = ""
    failed: str = ""

    @property
    def median(self) -> float | None:
        return None if self.failed else median_or_none(self.seconds)


def run(command: list[str], *, timeout: float, env: dict[str, str] | None = None,
        cwd: Path | None = None) -> tuple[float, str, str | None]:
    """(wall seconds, stdout + stderr, None) or (seconds, output, the reason it failed)."""
    started = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=cwd,
                              env=None if env is None else {**os.environ, **env})
    except subprocess.TimeoutExpired as error:
        out = (error.stdout or b"").decode() if isinstance(error.stdout, bytes) else (error.stdout or "")
        return time.perf_counter() - started, out, f"timed out after {timeout:g} s"
    wall = time.perf_counter() - started
    output = done.stdout + done.stderr
    if done.returncode != 0:
        return wall, output, f"exit {done.returncode}: ...{done.stderr[-1500:]}"
    return wall, output, None


def run_estimated(command: list[str], *, timeout: float, cwd: Path | None = None
                  ) -> tuple[float, str, str | None, tuple[float, float] | None]:
    """As :func:`run`, its output read line by line as it comes (unbuffered), so that the time from ordercube's
    estimate line (:data:`ESTIMATE`) to the process's exit is known: what the user waits after reading it. The last
    item: (the estimate's seconds, the seconds waited after it), None when no estimate was printed."""
    import threading

    started = time.perf_counter()
    seen: list[float] = []
    chunks: dict[str, list[str]] = {"out": [], "err": []}
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd,
                               env={**os.environ, "PYTHONUNBUFFERED": "1"})

    def read(stream: Any, into: list[str]) -> None:
        for line in stream:
            if not seen and ESTIMATE.search(line):
                seen.append(time.perf_counter())
            into.append(line)

    readers = [threading.Thread(target=read, args=(process.stdout, chunks["out"]), daemon=True),
               threading.Thread(target=read, args=(process.stderr, chunks["err"]), daemon=True)]
    for reader in readers:
        reader.start()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        return time.perf_counter() - started, "".join(chunks["out"]), f"timed out after {timeout:g} s", None
    ended = time.perf_counter()
    for reader in readers:
        reader.join(timeout=10)
    output = "".join(chunks["out"]) + "".join(chunks["err"])
    estimate = estimate_of(output)
    waited = None if estimate is None or not seen else (estimate, ended - seen[0])
    if process.returncode != 0:
        return ended - started, output, f"exit {process.returncode}: ...{''.join(chunks['err'])[-1500:]}", waited
    return ended - started, output, None, waited


def fail(tool: Tool, reason: str) -> None:
    if not tool.failed:
        print(f"  {tool.name} failed: {reason}")
    lines = [line for line in reason.splitlines() if line.strip()] or ["failed"]
    errors = [line for line in lines if "error" in line.lower() or "timed out" in line]
    tool.failed = tool.failed or (errors or lines)[-1][:90]


# ----------------------------------------------------------------------------- R

def r_available(*, install: bool) -> str | None:
    """None when Rscript and ConsensusClusterPlus + cluster load; else the reason R is skipped (after trying
    ``apt-get install`` of the Debian packages when ``install`` and apt-get is at hand as root)."""
    check = ("quit(status = !all(sapply(c(" + ", ".join(f"'{p}'" for p in R_PACKAGES)
             + "), requireNamespace, quietly = TRUE)))")

    def loads() -> bool:
        if shutil.which("Rscript") is None:
            return False
        return subprocess.run(["Rscript", "-e", check], capture_output=True).returncode == 0

    if loads():
        return None
    if install and shutil.which("apt-get") and os.geteuid() == 0:
        print(f"installing {' '.join(APT_PACKAGES)} with apt-get ...")
        subprocess.run(["apt-get", "install", "-y", *APT_PACKAGES], capture_output=True)
        if loads():
            return None
    return f"R or its packages ({', '.join(R_PACKAGES)}) missing and not installable here (apt-get as root)"


def nbclust_line() -> str:
    """One line saying whether Debian packages NbClust here (``apt-cache policy r-cran-nbclust``)."""
    if shutil.which("apt-cache") is None:
        return "NbClust: skipped (no apt-cache to look for r-cran-nbclust)"
    policy = subprocess.run(["apt-cache", "policy", "r-cran-nbclust"], capture_output=True, text=True).stdout
    candidate = re.search(r"Candidate:\s*(\S+)", policy)
    if candidate is None or candidate.group(1) == "(none)":
        return "NbClust: skipped, not packaged by Debian here (apt-cache policy r-cran-nbclust: no candidate)"
    return f"NbClust: apt has r-cran-nbclust {candidate.group(1)}, not run by this benchmark"


# ----------------------------------------------------------------------------- case 1: consensus clustering

def consensus_case(name: str, folder: Path, args: argparse.Namespace, r_skip: str | None,
                   tools: list[Tool]) -> None:
    work = folder / name
    work.mkdir(parents=True, exist_ok=True)
    config = consensus_config(name, work, args.resamples)
    X = side.matrix_of(config)
    np.save(work / "X.npy", X)
    print(f"\n== consensus {name}: ordercube reads {X.shape[0]} rows x {X.shape[1]} features "
          f"(mean |x| {np.mean(np.abs(X)):.9f}); H = {args.resamples}, p_item 0.8, k = 2..10")
    ours, one, r, cc = Tool("ordercube"), Tool(ONE_PROCESS), Tool("R"), Tool("consensusclustering")
    tools.extend([ours, one, r, cc])
    if r_skip:
        fail(r, r_skip)
    data_path = _dataset_path(config)
    for repeat in range(args.repeats):
        cube, report = work / f"run{repeat}.zarr", work / f"report{repeat}"
        t_run, out_run, bad, waited = run_estimated([*ORDERCUBE, "run", str(config), "--out", str(cube)],
                                                    timeout=args.timeout, cwd=work)
        if bad is None:
            t_report, out_report, bad = run([*ORDERCUBE, "report", str(cube), "--out", str(report)],
                                            timeout=args.timeout, cwd=work)
        if bad is not None:
            fail(ours, bad)
        elif not ours.failed:
            ours.seconds.append(t_run + t_report)
            ours.parts.setdefault("run", []).append(t_run)
            ours.parts.setdefault("report", []).append(t_report)
            if waited is not None:
                ours.estimates.append(waited)
            if repeat == 0:
                ours.k_hat = _selection(report)
        shutil.rmtree(cube, ignore_errors=True)
        shutil.rmtree(report, ignore_errors=True)
        if not one.failed:  # the same, one process: run --report
            t, out, bad = run([*ORDERCUBE, "run", str(config), "--out", str(cube), "--report", str(report)],
                              timeout=args.timeout, cwd=work)
            if bad is not None:
                fail(one, bad)
            else:
                one.seconds.append(t)
                if repeat == 0:
                    one.k_hat = _selection(report)
            shutil.rmtree(cube, ignore_errors=True)
            shutil.rmtree(report, ignore_errors=True)
        if not r.failed:
            script = work / "ccp.R"
            title = work / f"ccp{repeat}"
            script.write_text(r_consensus_script(name, Path(data_path), title, resamples=args.resamples, k_max=10,
                                                 p_item=0.8))
            t, out, bad = run(["Rscript", str(script)], timeout=args.timeout, cwd=work)
            if bad is not None:
                fail(r, bad)
            else:
                r.seconds.append(t)
                read = re.search(r"R read: (\d+) rows x (\d+) features; mean \|x\| ([0-9.]+)", out)
                r.note = read.group(0) if read else "R printed no shape"
                pac = re.search(r"R smallest PAC k (\d+)", out)
                r.k_hat = {"smallest PAC": int(pac.group(1))} if pac else {}
                if read and (int(read.group(1)), int(read.group(2))) != X.shape:
                    fail(r, f"R read {read.group(1)} x {read.group(2)}, ordercube {X.shape[0]} x {X.shape[1]}")
            shutil.rmtree(title, ignore_errors=True)
        if not cc.failed:
            peer_out = work / "cc.json"
            t, out, bad = run([sys.executable, str(Path(side.__file__)), "--peer", str(work / "X.npy"),
                               "--resamples", str(args.resamples), "--k-max", "10", "--p-item", "0.8",
                               "--jobs", str(args.peer_jobs), "--peer-out", str(peer_out)], timeout=args.timeout)
            if bad is not None:
                fail(cc, bad)
            else:
                cc.seconds.append(t)
                got = json.loads(peer_out.read_text())
                cc.k_hat = {"knee": got["k_knee"], "change_in_auc": got["k_change_in_auc"], "smallest PAC": got["k_pac"]}
                cc.note = f"read {X.shape[0]} x {X.shape[1]} (.npy of ordercube's matrix)"
        print(f"  repeat {repeat + 1}: " + ", ".join(f"{t.name} {t.seconds[-1]:.1f} s" for t in (ours, one, r, cc)
                                                     if len(t.seconds) == repeat + 1 and not t.failed))


def _dataset_path(config: Path) -> str:
    """The CSV the config's dataset reads (a catalog name resolved to the checked file)."""
    import yaml

    from ordercube.pipeline.data.catalog import resolve_path

    raw = yaml.safe_load(config.read_text())
    return resolve_path(str(raw["datasets"][0]["path"]), config.parent, "datasets[0].path")


def _selection(report: Path) -> dict[str, Any]:
    try:
        import pandas as pd

        table = pd.read_csv(report / "selection.csv")
        return {str(row.criterion): (None if pd.isna(row.k_hat) else int(row.k_hat)) for row in table.itertuples()}
    except (OSError, ValueError, AttributeError):
        return {}


# ----------------------------------------------------------------------------- case 2: choose_k

def load_dataset(name: str) -> np.ndarray:
    import sklearn.datasets

    return np.asarray(getattr(sklearn.datasets, f"load_{name}")().data, dtype=np.float64)


def _matched_disagreement(a: np.ndarray, b: np.ndarray, k: int) -> float:
    from scipy.optimize import linear_sum_assignment

    table = np.zeros((k, k))
    np.add.at(table, (a, b), 1.0)
    rows, cols = linear_sum_assignment(-table)
    return 1.0 - table[rows, cols].sum() / a.size


def _strength(test: np.ndarray, predicted: np.ndarray, k: int) -> float:
    table = np.zeros((k, k))
    np.add.at(table, (test, predicted), 1.0)
    sizes = table.sum(axis=1)
    paired = sizes >= 2
    together = (table * (table - 1)).sum(axis=1)
    return float((together[paired] / (sizes[paired] * (sizes[paired] - 1))).min())


def one_split(X: np.ndarray, k: int, split: int) -> tuple[float, float, float]:
    """(Lange disagreement, prediction strength, silhouette) of one random split into halves."""
    from sklearn.cluster import KMeans
    from sklearn.metrics import silhouette_score

    rng = np.random.default_rng([split, k, SEED])
    order = rng.permutation(X.shape[0])
    half = X.shape[0] // 2
    first, second = X[order[:half]], X[order[half:2 * half]]
    fit_a = KMeans(k, n_init=10, random_state=int(rng.integers(2**31))).fit(first)
    fit_b = KMeans(k, n_init=10, random_state=int(rng.integers(2**31))).fit(second)
    distances = ((second[:, None, :] - fit_a.cluster_centers_[None]) ** 2).sum(axis=2)
    predicted = distances.argmin(axis=1)
    lange = _matched_disagreement(predicted, fit_b.labels_, k)
    ps = _strength(fit_b.labels_, predicted, k)
    sil = 0.5 * (silhouette_score(first, fit_a.labels_) + silhouette_score(second, fit_b.labels_))
    return lange, ps, sil


def random_baseline(points: int, k: int) -> float:
    """Roth et al.'s (2002, eq. 5) denominator: the mean matched disagreement of two random labelings."""
    rng = np.random.default_rng([k, points, SEED])
    return float(np.mean([_matched_disagreement(rng.integers(k, size=points), rng.integers(k, size=points), k)
                          for _ in range(BASELINE_DRAWS)]))


def gap_logs(X: np.ndarray, b: int, ks: Sequence[int]) -> list[float]:
    """log W_k for every k of X (b = 0) or of the b-th uniform reference set over X's bounding box."""
    from sklearn.cluster import KMeans

    rng = np.random.default_rng([b, SEED])
    Z = X if b == 0 else rng.uniform(X.min(axis=0), X.max(axis=0), size=X.shape)
    return [float(np.log(KMeans(k, n_init=10, random_state=int(rng.integers(2**31))).fit(Z).inertia_)) for k in ks]


def sklearn_loop(X: np.ndarray, *, jobs: int, resamples: int = 20, ks: Sequence[int] = range(2, 11),
                 references: int = GAP_REFERENCES) -> dict[str, Any]:
    """k̂ per criterion of the plain loop described in the module docstring (serial when ``jobs`` <= 1)."""
    ks = list(ks)
    tasks = [(k, split) for k in ks for split in range(resamples)]
    if jobs > 1:
        from joblib import Parallel, delayed

        splits = Parallel(n_jobs=jobs)(delayed(one_split)(X, k, s) for k, s in tasks)
        logs = Parallel(n_jobs=jobs)(delayed(gap_logs)(X, b, ks) for b in range(references + 1))
    else:
        splits = [one_split(X, k, s) for k, s in tasks]
        logs = [gap_logs(X, b, ks) for b in range(references + 1)]
    values = np.asarray(splits).reshape(len(ks), resamples, 3)
    lange = values[:, :, 0].mean(axis=1) / [random_baseline(X.shape[0] // 2, k) for k in ks]
    ps = values[:, :, 1].mean(axis=1)
    sil = values[:, :, 2].mean(axis=1)
    observed, reference = np.asarray(logs[0]), np.asarray(logs[1:])
    gap = reference.mean(axis=0) - observed
    s = reference.std(axis=0) * np.sqrt(1.0 + 1.0 / references)
    hits = np.flatnonzero(gap[:-1] >= gap[1:] - s[1:])
    above = [k for k, v in zip(ks, ps, strict=True) if v >= PS_THRESHOLD]
    return {"lange": ks[int(np.argmin(lange))], "prediction_strength": max(above) if above else -1,
            "gap": ks[int(hits[0]) if hits.size else len(ks) - 1], "silhouette": ks[int(np.argmax(sil))]}


def choose_k_case(name: str, folder: Path, args: argparse.Namespace, r_skip: str | None,
                  tools: list[Tool]) -> None:
    work = folder / name
    work.mkdir(parents=True, exist_ok=True)
    X = load_dataset(name)
    np.savetxt(work / "X.csv", X, delimiter=",", fmt="%.10g")
    print(f"\n== choose_k {name}: {X.shape[0]} rows x {X.shape[1]} features; k = 2..10, 20 resamples"
          f", script {'with' if args.guard else 'without'} a __main__ guard")
    ours, loop1, loop2 = Tool("ordercube"), Tool("sklearn-1thread"), Tool("sklearn-2jobs")
    r = Tool("R clusGap")
    tools.extend([ours, loop1, loop2, r])
    if r_skip:
        fail(r, r_skip)
    for repeat in range(args.repeats):
        script, result = work / f"choose_k_{name}.py", work / "ours.json"
        script.write_text(choose_k_script(name, work / f"run{repeat}.zarr", result, guard=args.guard))
        t, out, bad, waited = run_estimated([sys.executable, str(script)], timeout=args.timeout, cwd=work)
        if bad is not None:
            fail(ours, bad)
        else:
            ours.seconds.append(t)
            ours.k_hat = json.loads(result.read_text())
            if waited is not None:
                ours.estimates.append(waited)
        shutil.rmtree(work / f"run{repeat}.zarr", ignore_errors=True)
        for tool, jobs in ((loop1, 1), (loop2, 2)):
            if tool.failed:
                continue
            t, out, bad = run([sys.executable, __file__, "--sklearn-loop", name, "--jobs", str(jobs), "--loop-out",
                               str(work / "loop.json")], timeout=args.timeout, env=PINNED)
            if bad is not None:
                fail(tool, bad)
            else:
                tool.seconds.append(t)
                tool.k_hat = json.loads((work / "loop.json").read_text())
        if not r.failed:
            (work / "gap.R").write_text(r_clusgap_script(work / "X.csv", work / "gap.json"))
            t, out, bad = run(["Rscript", str(work / "gap.R")], timeout=args.timeout, env=PINNED)
            if bad is not None:
                fail(r, bad)
            else:
                r.seconds.append(t)
                got = json.loads((work / "gap.json").read_text())
                r.k_hat = {"gap": got["gap"]}
                r.note = f"R read {got['rows']} x {got['features']}; B = 100, k = 1..10"
        print(f"  repeat {repeat + 1}: " + ", ".join(f"{t.name} {t.seconds[-1]:.1f} s" for t in (ours, loop1, loop2, r)
                                                     if len(t.seconds) == repeat + 1 and not t.failed))


# ----------------------------------------------------------------------------- the table

def show(value: float | None, form: str = ".1f") -> str:
    return "-" if value is None else format(value, form)


def print_table(case: str, dataset: str, tools: list[Tool]) -> None:
    if not tools:
        return
    ours = tools[0]
    print(f"\n{case} {dataset}: median of {len(ours.seconds)} (load now {os.getloadavg()[0]:.2f})")
    print(f"  {'tool':<20} {'median s':>9} {'runs':<24} {'ordercube/peer':>14} {'target':>10}  k̂")
    for tool in tools:
        runs = " ".join(f"{s:.1f}" for s in tool.seconds)
        hats = ", ".join(f"{c} {k}" for c, k in tool.k_hat.items())
        if tool.failed:
            bound = re.search(r"timed out after ([0-9.]+) s", tool.failed)
            below = ratio(ours.median, float(bound.group(1))) if bound and tool is not ours else None
            print(f"  {tool.name:<20} {'failed':>9} {tool.failed}"
                  + ("" if below is None else f"; ordercube/peer < {below:.2f}"))
            continue
        if tool is ours:
            parts = ", ".join(f"{p} {show(median_or_none(v))}" for p, v in tool.parts.items())
            print(f"  {tool.name:<20} {show(tool.median):>9} {runs:<24} {'':>14} {'':>10}  {hats}"
                  + (f"\n  {'':<20} ({parts})" if parts else ""))
            continue
        if tool.name == ONE_PROCESS:  # ours too, in one process: against the peers below
            print(f"  {tool.name:<20} {show(tool.median):>9} {runs:<24} {'':>14} {'':>10}  {hats}")
            continue
        goal = TARGETS.get(tool.name if case == "consensus" else "")
        for mine in (t for t in tools if t is ours or t.name == ONE_PROCESS):
            r = ratio(mine.median, tool.median)
            target = "-" if goal is None or r is None else f"<={goal:g} {'met' if r <= goal else 'NOT met'}"
            name = tool.name if mine is ours else f"  ({ONE_PROCESS})"
            print(f"  {name:<20} {show(tool.median if mine is ours else None):>9} "
                  f"{runs if mine is ours else '':<24} {show(r, '.2f'):>14} {target:>10}  {hats if mine is ours else ''}")
        if tool.note:
            print(f"  {'':<20} {tool.note}")
    if ours.estimates and ours.median is not None:
        # what the estimate promises: the wait from the moment it is printed to the process's exit (`run`'s own
        # process where the report is a process of its own); the start-up before it is shown, not estimated
        estimate = statistics.median(e for e, _ in ours.estimates)
        waited = statistics.median(w for _, w in ours.estimates)
        measured = median_or_none(ours.parts["run"]) if ours.parts.get("run") else ours.median
        print(f"  ordercube estimated {estimate:.1f} s before computing; from that line to the exit {waited:.1f} s: "
              f"waited/estimated {waited / estimate:.2f} (the whole {'run' if ours.parts.get('run') else 'process'}: "
              f"{measured:.1f} s)")
    elif not ours.failed:
        print("  ordercube printed no estimate before computing")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+", choices=("consensus", "choose_k"), default=["consensus", "choose_k"])
    parser.add_argument("--datasets", nargs="+", choices=(*CONSENSUS_SETS, *CHOOSE_K_SETS),
                        help="default: colon, yeast, gaussian3 for consensus; iris, wine, digits for choose_k")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each tool, interleaved (default 3)")
    parser.add_argument("--resamples", type=int, default=1000, help="H of the consensus case (default 1000)")
    parser.add_argument("--peer-jobs", type=int, default=os.cpu_count() or 1,
                        help="consensusclustering's n_jobs (default: one per core)")
    guard = parser.add_mutually_exclusive_group()
    guard.add_argument("--guard", dest="guard", action="store_true",
                       help="choose_k's script puts its call under if __name__ == '__main__' (default: GUARD, no guard)")
    guard.add_argument("--no-guard", dest="guard", action="store_false", help="a plain script, no guard")
    parser.set_defaults(guard=GUARD)
    parser.add_argument("--no-install", action="store_true", help="never apt-get install R's packages")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds any one process may take")
    parser.add_argument("--quick", action="store_true", help="H = 100, digits skipped, 1 repeat (a smoke run)")
    parser.add_argument("--keep", help="keep cubes, reports, scripts and data in this folder")
    parser.add_argument("--sklearn-loop", help=argparse.SUPPRESS)
    parser.add_argument("--jobs", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--loop-out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.sklearn_loop:
        hats = sklearn_loop(load_dataset(args.sklearn_loop), jobs=args.jobs)
        Path(args.loop_out).write_text(json.dumps(hats))
        return 0
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[attr-defined]
    if args.repeats < 1:
        parser.error(f"--repeats: expected an integer >= 1, got {args.repeats}")
    if args.quick:
        args.resamples, args.repeats = 100, 1
    chosen = args.datasets or [*CONSENSUS_SETS, *(s for s in CHOOSE_K_SETS if not (args.quick and s == "digits"))]
    print(f"cores {os.cpu_count()}; load {' '.join(f'{v:.2f}' for v in os.getloadavg())}; repeats {args.repeats}; "
          f"python {sys.version.split()[0]}")
    r_skip = r_available(install=not args.no_install)
    if r_skip is None:
        version = subprocess.run(["Rscript", "--version"], capture_output=True, text=True)
        print("R: " + ((version.stdout + version.stderr).strip().splitlines() or ["version unknown"])[0])
    else:
        print(f"R: skipped, {r_skip}")
    folder = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="first-analyses-"))
    folder.mkdir(parents=True, exist_ok=True)
    tables: list[tuple[str, str, list[Tool]]] = []
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a stopped run still prints what it measured
    try:
        if "consensus" in args.cases:
            for name in (s for s in chosen if s in CONSENSUS_SETS):
                tables.append(("consensus", name, []))
                consensus_case(name, folder, args, r_skip, tables[-1][2])
        if "choose_k" in args.cases:
            print("\n" + nbclust_line())
            for name in (s for s in chosen if s in CHOOSE_K_SETS):
                tables.append(("choose_k", name, []))
                choose_k_case(name, folder, args, r_skip, tables[-1][2])
    finally:
        print(f"\n==== summary (load {' '.join(f'{v:.2f}' for v in os.getloadavg())})")
        for case, name, tools in tables:
            print_table(case, name, tools)
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
