"""The partition at k̂: a method fitted on a whole dataset at the cube's chosen k, with the cube's seeds, its
agreement with known classes, and each cluster's stability over the cube's resamples.

What is fitted: a file (or in-memory) dataset's rows as the config reads and preprocesses them, all of them;
a synthetic dataset has no fixed rows, so one sample of the cube's largest n is drawn for the partition
(``Purpose.PARTITION``). The fit's randomness is ``stream(seed, PARTITION, dataset, n, 2, method, k, 0, 0)``:
the same partition on every machine.

Per-cluster stability (Hennig 2007, as ``fpc::clusterboot``): for every trial of the cube, both of its halves
are clustered at k (a file dataset's halves are the very rows of the cube's trials, fitted with the cube's
streams; a synthetic sample is split anew per trial), and each cluster's clusterwise Jaccard is the best
Jaccard similarity between its points in the half and a cluster of the half's solution. Hennig's reading: a
mean below 0.5 means the cluster dissolves, above 0.75 that it is stable, above 0.85 highly stable. A cluster of
at most max(2 items, 2% of the items) reads "small" instead: an outlier split off is found again in every
resample, and its Jaccard of 1 says nothing about a group.

A method whose cube stored its assignments (read from the cube: :mod:`ordercube.pipeline.reduce.assignments`) is not
fitted again: its partition at k̂ is the consensus partition (Monti, Tamayo, Mesirov & Golub 2003, Sec. 3; as
ConsensusClusterPlus's final linkage, Wilkerson & Hayes 2010): hierarchical clustering of 1 - the consensus matrix of
the stored clusterings at k, with each item's consensus with every cluster (Monti et al. 2003, Sec. 3.2: the
mean consensus of the item with the cluster's members) and each cluster's consensus, and the clusterwise Jaccard
of each cluster in every stored clustering.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np
import pandas as pd
import xarray as xr
from numpy.typing import NDArray

from ordercube.pipeline.config.specs import Config, DatasetSpec, MethodSpec
from ordercube.pipeline.config.study import load_config, parse_config
from ordercube.pipeline.errors import ConfigError, InputError
from ordercube.pipeline.reduce.assignments import FINAL_LINKAGE, clusterings_of, final_linkage, part_roles
from ordercube.tasks.algorithms import get_algorithm
from ordercube.tasks.algorithms.kinds import Clusterer
from ordercube.tasks.cluster_stability import clusterwise_jaccard
from ordercube.tasks.datasets.sources import SyntheticSource, halves_of_rows
from ordercube.tasks.seeding import Purpose, label_id, stream

# Hennig (2007), section 3.2: how a cluster's mean clusterwise Jaccard reads
DISSOLVED, STABLE, HIGHLY_STABLE = 0.5, 0.75, 0.85
SAMPLE, SPLIT, FIT_WHOLE, FIT_HALF = 0, 1, 2, 3  # the uses of the partition's streams


@dataclass(frozen=True, repr=False)
class Partition:
    """A dataset's partition at k; ``labels`` are cluster codes 0..k-1 of its rows (or of its drawn sample).

    ``jaccard`` : ndarray of shape (k, resamples), each cluster's clusterwise Jaccard in each half of each trial
    (NaN where none of its points is in that half).
    """

    dataset: str
    method: str
    k: int
    n: int
    chosen_by: str  # "criterion lange at n = 300" or "--k"
    labels: NDArray[np.int64]
    names: tuple[str, ...]
    truth: NDArray[np.int64] | None
    classes: tuple[str, ...]
    jaccard: NDArray[np.float64]
    read: str
    # the consensus partition of stored clusterings: each item's consensus with every cluster (items, k) and each
    # cluster's consensus (k,) (Monti et al. 2003, Sec. 3.2); None for a partition fitted on the data
    item_consensus: NDArray[np.float64] | None = None
    cluster_consensus: NDArray[np.float64] | None = None
    linkage: str = ""

    @property
    def how(self) -> str:
        """How the labels were made, for what a command prints."""
        if self.item_consensus is None:
            return f"fitted on {self.labels.size} rows"
        return (f"the consensus partition ({self.linkage} linkage on 1 - consensus) of {self.jaccard.shape[1]} stored "
                f"clusterings of {self.labels.size} items, nothing refitted")

    @property
    def resamples(self) -> str:
        """What a column of ``jaccard`` is: a half of a resample, or a stored clustering."""
        return "halves of the cube's resamples" if self.item_consensus is None else "stored clusterings"

    def __repr__(self) -> str:
        """One line: what was fitted, at which k and why, the rows, the cluster sizes, the agreement."""
        sizes = np.bincount(self.labels, minlength=self.jaccard.shape[0]).tolist()
        agreement = "" if self.truth is None else f", agreement={self.agreement:.3f}"
        why = "given" if self.chosen_by == "--k" else self.chosen_by
        return (f"Partition(dataset={self.dataset!r}, method={self.method!r}, k={self.k} ({why}), "
                f"rows={self.labels.size}, sizes={sizes}{agreement})")

    @property
    def agreement(self) -> float | None:
        """The share of rows whose cluster, matched to the known classes (Hungarian), is their class."""
        if self.truth is None:
            return None
        from ordercube.tasks.criteria.agreement import matched_accuracy

        return matched_accuracy(self.labels, self.truth)

    @property
    def adjusted_rand(self) -> float | None:
        if self.truth is None:
            return None
        from sklearn.metrics import adjusted_rand_score

        return float(adjusted_rand_score(self.truth, self.labels))

    def rows(self) -> pd.DataFrame:
        """One line per row: its name (or its position from 1), its cluster (from 1), its known class."""
        table = pd.DataFrame({"row": list(self.names) if self.names else np.arange(1, self.labels.size + 1),
                              "cluster": self.labels + 1})
        if self.truth is not None:
            table["class"] = [self.classes[c] if c < len(self.classes) else str(c) for c in self.truth]
        if self.item_consensus is not None:  # Monti et al. (2003), Sec. 3.2: with its own cluster, and with each
            table["item_consensus"] = self.item_consensus[np.arange(self.labels.size), self.labels]
            for j in range(self.item_consensus.shape[1]):
                table[f"consensus_{j + 1}"] = self.item_consensus[:, j]
        return table

    @property
    def small_clusters(self) -> NDArray[np.bool_]:
        """Which clusters (by code) hold at most max(2 items, 2% of the items)
        (:func:`ordercube.tasks.consensus.small_clusters`)."""
        from ordercube.tasks.consensus import small_clusters

        return small_clusters(self.labels, self.jaccard.shape[0])

    def clusters(self) -> pd.DataFrame:
        """One line per cluster: its size, its mean clusterwise Jaccard, the share of halves where it dissolved,
        whether it is small and how its Jaccard reads (Hennig 2007); a small cluster reads "small" whatever its
        Jaccard, never "highly stable"."""
        present = ~np.isnan(self.jaccard)
        with np.errstate(invalid="ignore"):
            mean = np.nanmean(self.jaccard, axis=1) if present.any() else np.full(self.jaccard.shape[0], np.nan)
            dissolved = (np.where(present, self.jaccard, 1.0) < DISSOLVED).sum(axis=1) / np.maximum(present.sum(axis=1), 1)
        reading = np.where(mean >= HIGHLY_STABLE, "highly stable", np.where(mean >= STABLE, "stable", np.where(
            mean >= DISSOLVED, "doubtful", "dissolves")))
        count = self.jaccard.shape[0]
        small = self.small_clusters
        # a small cluster's stability says nothing of a group (an outlier is found again in every resample)
        reading = np.where(small, "small", np.where(np.isnan(mean), "-", reading))
        table = pd.DataFrame({"cluster": np.arange(1, count + 1), "size": np.bincount(self.labels, minlength=count),
                              "jaccard_mean": mean, "dissolved_share": dissolved, "halves": present.sum(axis=1),
                              "small": small, "reading": reading})
        if self.cluster_consensus is not None:
            table = table.rename(columns={"halves": "clusterings"})
            table.insert(2, "cluster_consensus", self.cluster_consensus)
        return table


def _config_of(cube: xr.Dataset, config: Config | str | Path | None) -> Config:
    """The config that built ``cube``: the one given, or the cube's own (its file paths read from here)."""
    if isinstance(config, Config):
        return config
    if config is not None:
        return load_config(config)
    return parse_stored(stored_config(cube))


def stored_config(cube: xr.Dataset, given: Collection[str] = ()) -> dict[str, Any]:
    """The config stored in ``cube``, as a dict; the datasets named in ``given`` are to be given again from Python
    (what the cube holds of their arrays, a placeholder, is left out). ``InputError`` when another of its datasets
    was given from Python: the cube keeps no copy of such data."""
    raw = json.loads(cube.attrs["ordercube_config"])
    datasets = []
    for entry in raw.get("datasets", []):
        arrays = [key for key in ("data", "labels") if isinstance(entry, dict) and _placeholder(entry.get(key))]
        if arrays and entry.get("name") in given:
            entry = {key: value for key, value in entry.items() if key not in arrays}
        elif "data" in arrays:
            raise InputError(f"data: the cube's dataset {entry.get('name')!r} was given from Python ({entry['data']}) "
                             "and the cube keeps no copy of it; give it again: ordercube.partition(cube, dataset, method, "
                             f"data={{{entry.get('name')!r}: X}}) (or (X, labels))")
        datasets.append(entry)
    return {**raw, "datasets": datasets}


def _placeholder(value: Any) -> bool:
    """Whether ``value`` is what a cube stores in place of an array given from Python (``plain_entry``)."""
    return isinstance(value, str) and value.startswith("<") and value.endswith("given from Python>")


def parse_stored(raw: dict[str, Any]) -> Config:
    """:func:`stored_config`'s dict validated, its relative paths read from the current folder."""
    try:
        return parse_config(raw, base=Path.cwd())
    except ConfigError as error:
        raise InputError(f"{error} (reading the cube's own config from {Path.cwd()}); give the config file it was "
                         "computed from with --config CONFIG") from None


def _named(items: tuple[Any, ...], name: str, key: str) -> Any:
    for item in items:
        if item.name == name:
            return item
    raise InputError(f"{key}: no {key.lstrip('-')} {name!r} in the cube; it has {[item.name for item in items]}")


def _check_identity(cube: xr.Dataset, config: Config, dataset: DatasetSpec, method: MethodSpec, source: str,
                    given: bool = True) -> None:
    """``InputError`` unless ``config`` draws the cube's resamples and fits: its seed, the dataset and the method.
    With the cube's own config (not ``given``), only the data can differ: the message names the data, not
    ``--config``."""
    stored = json.loads(cube.attrs["ordercube_identity"])
    now = json.loads(json.dumps(config.identity, default=str))
    if not given:
        changed = _differences(stored["datasets"].get(dataset.name) or {}, now["datasets"].get(dataset.name) or {})
        if changed:
            shown = "; ".join(f"{key}: {json.dumps(new)} now, {json.dumps(old)} in the cube" for key, new, old in changed[:3])
            raise InputError(f"--dataset: the data of {dataset.name!r} are not what the cube was computed from "
                             f"({shown}): its file changed since; restore the file the cube was computed from, or "
                             "run the config again into a new cube (--out) and take the partition of that")
    fix = ("give the config (and data) the cube was computed from, or leave --config out to use the cube's own: "
           "otherwise the stabilities would be of labels the cube never computed")
    if stored["seed"] != now["seed"]:
        raise InputError(f"--config: seed: {now['seed']} in {source}, {stored['seed']} in the cube; {fix}")
    for part, name in (("datasets", dataset.name), ("methods", method.name)):
        changed = _differences(stored[part].get(name) or {}, now[part].get(name) or {})
        if changed:
            shown = "; ".join(f"{key}: {json.dumps(new)} in {source}, {json.dumps(old)} in the cube"
                              for key, new, old in changed[:3])
            raise InputError(f"--config: {part[:-1]} {name!r} is not what the cube was computed from ({shown}); {fix}")


def _differences(old: Any, new: Any, key: str = "") -> list[tuple[str, Any, Any]]:
    """The dotted keys where two identities differ, with the new and the old value (None where absent)."""
    if not (isinstance(old, dict) and isinstance(new, dict)):
        return [] if old == new else [(key, new, old)]
    return [difference for part in sorted(set(old) | set(new))
            for difference in _differences(old.get(part), new.get(part), f"{key}.{part}" if key else part)]


def _k_hat(cube: xr.Dataset, dataset: str, method: str, n: int, criterion: str | None) -> tuple[int, str]:
    from ordercube.pipeline.reduce.assignments import point_curves, reduced_scores
    from ordercube.pipeline.reduce.select import criterion_scores, select_k, with_reduced

    chosen = select_k(with_reduced(criterion_scores(cube), point_curves(reduced_scores(cube, replicates=0))))
    names = [criterion] if criterion is not None else list(map(str, chosen.data_vars))
    if criterion is not None and criterion not in chosen:
        raise InputError(f"--criterion: {criterion!r} does not choose a k in this cube; use one of {list(chosen.data_vars)}")
    for name in names:
        k = int(chosen[name].sel(dataset=dataset, model=method, n=n))
        if k >= 1:
            return k, f"k̂ of {name} at n = {n}"
    raise InputError(f"--k: no criterion chose a k for {dataset}/{method} at n = {n}; give --k K")


def compute_partition(cube: xr.Dataset, dataset: str, method: str, *, k: int | None = None, criterion: str | None = None,
                      config: Config | str | Path | None = None) -> Partition:
    """``method`` fitted on ``dataset`` at ``k`` (default: k̂ of ``criterion``, or of the method's first criterion
    with a choice, at the cube's largest n), with the per-cluster stability over the cube's trials.

    ``config``: the config the cube was computed from (a ``Config``, or a YAML path; default: the cube's own);
    an ``InputError`` when its dataset or method is not the cube's.
    """
    if k is not None and (isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1):
        raise InputError(f"--k: expected an integer >= 1, got {k!r}; "
                         "give a whole number of clusters, e.g. 3 (none: the cube's k̂)")
    cfg = _config_of(cube, config)
    spec, m = _named(cfg.datasets, dataset, "--dataset"), _named(cfg.methods, method, "--method")
    _check_identity(cube, cfg, spec, m, str(config) if isinstance(config, (str, Path)) else
                    "the config" if config is not None else "the cube's own config", given=config is not None)
    if method in part_roles(cube):
        return stored_partition(cube, spec, method, k=k, criterion=criterion, linkage=final_linkage(cube, method))
    algorithm = get_algorithm(m.algorithm)
    if spec.objects != "points":
        raise InputError(f"--dataset: {dataset!r} holds {spec.objects} data; a partition of it is not available yet "
                         "(points only)")
    if not algorithm.partitions or algorithm.takes != spec.objects:
        raise InputError(f"--method: {method!r} ({m.algorithm}) does not partition points; partition a method whose "
                         "algorithm clusters points (kmeans, gaussian_mixture, agglomerative, ...)")
    clusterer = cast(Clusterer, algorithm)  # a kind that partitions labels its objects through cluster()
    n = _largest_n(cube, dataset, method)
    chosen_by = "--k"
    if k is None:
        k, chosen_by = _k_hat(cube, dataset, method, n, criterion)
    ids = (label_id(dataset), n)
    seed, params = cfg.seed, dict(m.params)
    if spec.data is not None:
        X, truth, names = np.asarray(spec.data), spec.labels, spec.row_names
    else:
        drawn = SyntheticSource(spec.kind, dict(spec.params)).draw(
            n, stream(seed, Purpose.PARTITION, *ids, SAMPLE, 0, 0, 0, 0), stream(seed, Purpose.EVAL, *ids, 0), with_eval=False)
        X, truth, names = np.concatenate([drawn.first, drawn.second]), drawn.truth, ()
    if not algorithm.feasible(k, X.shape[0] // 2):
        raise InputError(f"--k: k = {k} is too large for halves of {X.shape[0] // 2} rows of {dataset}; give a smaller k")
    method_id = label_id(method)
    labels = np.asarray(clusterer.cluster(X, k, stream(seed, Purpose.PARTITION, *ids, FIT_WHOLE, method_id, k, 0, 0),
                                          **params), dtype=np.int64)
    labels = np.unique(labels, return_inverse=True)[1].astype(np.int64)  # codes 0.. of the clusters that are not empty
    k_found = int(labels.max()) + 1
    scores = []
    for trial in map(int, cube["trial"].values):
        if spec.data is not None:  # the cube's own rows and fit streams for this trial
            order = stream(seed, Purpose.DRAW, *ids, trial).permutation(X.shape[0])
            halves = halves_of_rows(order, n)
            rngs = [stream(seed, Purpose.FIT, *ids, trial, method_id, k, part) for part in (0, 1)]
        else:
            halves = halves_of_rows(stream(seed, Purpose.PARTITION, *ids, SPLIT, trial, 0, 0, 0).permutation(n), n)
            rngs = [stream(seed, Purpose.PARTITION, *ids, FIT_HALF, method_id, k, trial, part) for part in (0, 1)]
        for rows, rng in zip(halves, rngs):
            scores.append(clusterwise_jaccard(labels, k_found, rows, np.asarray(clusterer.cluster(X[rows], k, rng, **params))))
    read = spec.read or f"{X.shape[0]} points drawn from {spec.kind} {dict(spec.params)} (the partition's own sample)"
    return Partition(dataset=dataset, method=method, k=k, n=n, chosen_by=chosen_by, labels=labels, names=tuple(names),
                     truth=None if truth is None else np.asarray(truth, dtype=np.int64), classes=spec.classes,
                     jaccard=np.column_stack(scores) if scores else np.full((k_found, 0), np.nan), read=read)


def _largest_n(cube: xr.Dataset, dataset: str, method: str) -> int:
    present = cube["status"].sel(dataset=dataset, model=method) == 1
    sizes = [int(v) for v in cube["n"].values if bool(present.sel(n=v).any())]
    if not sizes:
        raise InputError(f"--dataset: {dataset}/{method} has no computed cell in this cube; run it first")
    return max(sizes)


def stored_partition(cube: xr.Dataset, spec: DatasetSpec, method: str, *, k: int | None = None,
                     criterion: str | None = None, linkage: str = FINAL_LINKAGE) -> Partition:
    """The consensus partition at ``k`` (default: k̂, as :func:`compute_partition`) of ``method``'s clusterings of
    ``spec``'s items stored in ``cube`` at its largest n, without refitting: hierarchical clustering with ``linkage``
    on 1 - the consensus matrix (:func:`ordercube.tasks.consensus.consensus_partition`), each item's consensus with
    every cluster and each cluster's consensus (Monti et al. 2003, Sec. 3.2), and each cluster's clusterwise Jaccard
    (Hennig 2007) in every stored clustering. Items never drawn (outside an n-subset) are left out."""
    from ordercube.tasks.consensus import cluster_consensus, consensus_matrix, consensus_partition, item_consensus

    dataset = spec.name
    n = _largest_n(cube, dataset, method)
    chosen_by = "--k"
    if k is None:
        k, chosen_by = _k_hat(cube, dataset, method, n, criterion)
    clusterings = clusterings_of(cube, dataset, n, method)
    if k not in clusterings.ks:
        raise InputError(f"--k: {dataset}/{method} stored no clustering at k = {k} at n = {n}; give one of "
                         f"{list(clusterings.ks)}")
    stored = np.asarray(clusterings.data[k], dtype=np.int64)
    drawn = np.flatnonzero((stored >= 0).any(axis=0))
    stored = stored[:, drawn]
    matrix = consensus_matrix(stored)
    labels = np.unique(consensus_partition(matrix, k, linkage=linkage), return_inverse=True)[1].astype(np.int64)
    found = int(labels.max()) + 1
    jaccard = [clusterwise_jaccard(labels, found, np.flatnonzero(row >= 0), row[row >= 0]) for row in stored]
    truth = None if spec.labels is None else np.asarray(spec.labels, dtype=np.int64)[drawn]
    names = tuple(np.asarray(spec.row_names)[drawn]) if spec.row_names else ()
    read = spec.read or f"{clusterings.items} items"
    return Partition(dataset=dataset, method=method, k=k, n=n, chosen_by=chosen_by, labels=labels, names=names,
                     truth=truth, classes=spec.classes,
                     jaccard=np.column_stack(jaccard) if jaccard else np.full((found, 0), np.nan), read=read,
                     item_consensus=item_consensus(matrix, labels, found),
                     cluster_consensus=cluster_consensus(matrix, labels, found), linkage=linkage)
