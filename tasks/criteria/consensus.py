"""Consensus clustering's criteria, reduced from stored assignments after the sweep (``reads="assignments"``).

Each is a ``reduce(clusterings, **options)`` over :class:`~ordercube.tasks.criteria.base.Clusterings`: per k, the
data's R resampled clusterings (an (R, N) array, -1 where an item was not drawn) and their weights (a bootstrap
replicate over resamples; None: one each) make Monti et al.'s (2003) consensus matrix
(:func:`ordercube.tasks.consensus.consensus_matrix`), from which

- ``consensus_area``: the area under the consensus CDF, A(k), and its relative increase Delta(k) (Monti,
  Tamayo, Mesirov & Golub 2003, Sec. 3.3.1, eq. 7). Monti et al. read k̂ off the Delta(k) plot, where the area
  stops growing appreciably, without a formal rule; the rule here is the R package coca's (Cabassi & Kirk 2020,
  ``chooseKusingAUC``): the largest k whose Delta(k) reaches ``threshold`` (default 0.025, coca's: reaching k
  still raised the area by 2.5 %), read on ``consensus_delta``.
- ``pac``: the proportion of ambiguous clustering, CDF(u2) - CDF(u1) (Senbabaoglu, Michailidis & Li 2014), the
  smallest is best; its ``window`` can be changed at decision time (``--decide pac.window=0.05,0.95``).
- ``cluster_consensus``: the mean over the consensus partition's clusters (at least two members) of their
  cluster consensus (Monti et al. 2003; Wilkerson & Hayes 2010's ``calcICL``), the largest is best.
- ``clusterwise_jaccard``: the mean over the consensus partition's clusters of Hennig's (2007) clusterwise
  Jaccard against the resamples (the consensus partition in place of the clustering of the whole data, which
  the resamples never fit), the largest is best.
- ``resample_agreement``: the mean adjusted Rand index between pairs of resamples on their common items, the
  largest is best.

The consensus partition is the average-linkage clustering of 1 - M cut into k clusters (ConsensusClusterPlus's
``finalLinkage = "average"``; option ``linkage``). While the same arrays are reduced, the consensus matrix of one
k is computed once for the criteria that read its distribution (``consensus_area``, ``pac``) and once more for
the first that needs its partition: a small cache keyed by the arrays' identity keeps what they read of it,
never the (N, N) matrix itself.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ordercube.tasks.consensus import (
    AREA_METHODS, LINKAGES, area_from_values, cdf_area, cluster_consensus, clusterwise_jaccard, consensus_matrix,
    consensus_partition, consensus_values, delta_area, pac_from_values, resample_agreement,
)
from ordercube.tasks.criteria.base import Clusterings, Criterion, Decision
from ordercube.tasks.params import choice, integer, pair

REPORT = ("ordercube.pipeline.report.consensus:section",)
# Bytes of consensus summaries kept for the criteria of the same reduction (the distinct entries of M per k).
CACHE_BYTES = 256 * 2**20
# The key of resample_agreement's stream of pairs: (this, k).
AGREEMENT_STREAM = 1
MAX_PAIRS = 1_000_000


@dataclass
class Summary:
    """What the consensus criteria read of one consensus matrix: its distribution and what else was asked of it
    (``extras``: the ``consensusclustering`` area; per linkage, the consensus partition and its clusters'
    consensus)."""

    labels: NDArray[np.int16]
    weights: NDArray[np.float64] | None
    values: NDArray[np.float64]
    counts: NDArray[np.int64]
    extras: dict[str, Any] = field(default_factory=dict)

    @property
    def nbytes(self) -> int:
        extra = sum(getattr(part, "nbytes", 0) for value in self.extras.values()
                    for part in (value if isinstance(value, tuple) else (value,)))
        return self.values.nbytes + self.counts.nbytes + extra


_CACHE: OrderedDict[tuple[int, int, int], Summary] = OrderedDict()
_LOCK = threading.Lock()  # reducers may run in threads: the cache's order and size change under it


def summary(labels: NDArray[np.int16], weights: NDArray[np.float64] | None, k: int,
            needs: tuple[str, ...] = ()) -> Summary:
    """The consensus summary of ``labels`` (R, N) at ``k`` with ``weights``, with the ``needs`` filled
    (``"consensusclustering"``, ``"partition:average"``, ...): from the cache when these very arrays were
    summarised before (the cache holds them, so an identity is never mistaken). The consensus matrix is computed
    only when something asked is missing; its partition only when asked for (a bootstrap of PAC needs none)."""
    key = (id(labels), id(weights), k)
    with _LOCK:
        entry = _CACHE.get(key)
    if entry is not None and (entry.labels is not labels or entry.weights is not weights):
        entry = None
    if entry is not None and all(need in entry.extras for need in needs):
        with _LOCK:
            if key in _CACHE:
                _CACHE.move_to_end(key)
        return entry
    M = consensus_matrix(labels, weights=weights)
    if entry is None:
        entry = Summary(labels, weights, *consensus_values(M))
    extras = {need: entry.extras[need] if need in entry.extras else _extra(M, k, need) for need in needs}
    entry = Summary(labels, weights, entry.values, entry.counts, {**entry.extras, **extras})
    with _LOCK:
        _CACHE[key] = entry
        _CACHE.move_to_end(key)
        while len(_CACHE) > 1 and sum(item.nbytes for item in _CACHE.values()) > CACHE_BYTES:
            _CACHE.popitem(last=False)
    return entry


def _extra(M: NDArray[np.float64], k: int, need: str) -> Any:
    if need == "consensusclustering":
        return cdf_area(M, method="consensusclustering")
    linkage = need.removeprefix("partition:")
    drawn = int(np.count_nonzero(~np.isnan(np.diagonal(M))))
    if drawn < k:  # fewer items than clusters: no partition
        return np.full(M.shape[0], -1, dtype=np.int64), np.full(k, np.nan)
    partition = consensus_partition(M, k, linkage)  # type: ignore[arg-type]
    return partition, cluster_consensus(M, partition, k)


def _per_k(clusterings: Clusterings, compute: Callable[[int, NDArray[np.int16]], float]) -> NDArray[np.float64]:
    """``compute(k, labels)`` at every k >= 2 of ``clusterings`` with at least one clustering; NaN elsewhere."""
    out = np.full(len(clusterings.ks), np.nan)
    for t, k in enumerate(clusterings.ks):
        labels = clusterings.data.get(k)
        if k >= 2 and labels is not None and labels.shape[0] > 0:
            out[t] = compute(k, labels)
    return out


def reduce_area(clusterings: Clusterings, *, method: str = "monti", running_max: bool = True) -> dict[str, NDArray[np.float64]]:
    """The area under the consensus CDF, A(k), and its relative increase Delta(k) at every k (Monti, Tamayo, Mesirov &
    Golub 2003, Sec. 3.3.1, eq. 7): :func:`ordercube.tasks.consensus.cdf_area` with ``method``,
    :func:`ordercube.tasks.consensus.delta_area` with ``running_max``. k̂ is the largest k whose Delta(k) reaches
    the decision's threshold (the R package coca's rule, Cabassi & Kirk 2020: 0.025)."""
    def area(k: int, labels: NDArray[np.int16]) -> float:
        if method == "consensusclustering":
            return float(summary(labels, clusterings.weights, k, (method,)).extras[method])
        entry = summary(labels, clusterings.weights, k)
        return area_from_values(entry.values, entry.counts, method=method)  # type: ignore[arg-type]

    areas = _per_k(clusterings, area)
    return {"consensus_area": areas,
            "consensus_delta": delta_area(areas, np.asarray(clusterings.ks), running_max=running_max)}


def reduce_pac(clusterings: Clusterings, *, window: tuple[float, float] = (0.1, 0.9)) -> dict[str, NDArray[np.float64]]:
    """The proportion of ambiguous clustering at every k, PAC = CDF(u2) - CDF(u1) with ``window`` = (u1, u2)
    (Senbabaoglu, Michailidis & Li 2014; :func:`ordercube.tasks.consensus.pac`): the share of item pairs whose
    consensus lies in (u1, u2]."""
    window = (float(window[0]), float(window[1]))

    def value(k: int, labels: NDArray[np.int16]) -> float:
        entry = summary(labels, clusterings.weights, k)
        return pac_from_values(entry.values, entry.counts, window)

    return {"pac": _per_k(clusterings, value)}


def _mean_present(values: NDArray[np.float64]) -> float:
    present = values[~np.isnan(values)]
    return float(present.mean()) if present.size else math.nan


def reduce_cluster_consensus(clusterings: Clusterings, *, linkage: str = "average") -> dict[str, NDArray[np.float64]]:
    """The mean cluster consensus m(c) (Monti et al. 2003; Wilkerson & Hayes 2010) over the clusters of two items
    or more of the consensus partition (``linkage`` on 1 - M, cut at k), at every k."""
    def value(k: int, labels: NDArray[np.int16]) -> float:
        need = f"partition:{linkage}"
        return _mean_present(summary(labels, clusterings.weights, k, (need,)).extras[need][1])

    return {"cluster_consensus": _per_k(clusterings, value)}


def reduce_jaccard(clusterings: Clusterings, *, linkage: str = "average") -> dict[str, NDArray[np.float64]]:
    """The mean over the consensus partition's clusters of Hennig's (2007) clusterwise Jaccard: how well each
    cluster is found again, as its best-matching cluster, in every resample that drew some of its items."""
    def value(k: int, labels: NDArray[np.int16]) -> float:
        need = f"partition:{linkage}"
        partition = summary(labels, clusterings.weights, k, (need,)).extras[need][0]
        if not (partition >= 0).any():
            return math.nan
        return _mean_present(clusterwise_jaccard(labels, partition, k, weights=clusterings.weights))

    return {"clusterwise_jaccard": _per_k(clusterings, value)}


def reduce_agreement(clusterings: Clusterings, *, pairs: int = 500) -> dict[str, NDArray[np.float64]]:
    """The mean adjusted Rand index (Hubert & Arabie 1985) over ``pairs`` random pairs of resamples, each pair
    compared on the items both drew, at every k."""
    def value(k: int, labels: NDArray[np.int16]) -> float:
        rng = clusterings.rng((AGREEMENT_STREAM, k))
        return resample_agreement(labels, rng, pairs, weights=clusterings.weights)

    return {"resample_agreement": _per_k(clusterings, value)}


CONSENSUS_AREA = Criterion(
    name="consensus_area",
    min_k=2,
    description="area under the consensus CDF A(k) and its relative increase Delta(k) (Monti, Tamayo, Mesirov & "
                "Golub 2003, Sec. 3.3.1); k̂: the largest k whose Delta(k) reaches the threshold",
    reads="assignments",
    reduce=reduce_area,
    outputs=("consensus_area", "consensus_delta"),
    options={"method": "monti", "running_max": True},
    ranges={"method": choice(*AREA_METHODS), "running_max": choice(True, False)},
    decision=Decision(rule="largest_above", threshold=0.025, threshold_range=(0.0, math.inf), output="consensus_delta"),
    label="relative increase of the consensus CDF area Delta(k)\n(Monti et al. 2003)",
    report_sections=REPORT,
)
PAC = Criterion(
    name="pac",
    min_k=2,
    description="proportion of ambiguous clustering CDF(u2) - CDF(u1) of the consensus matrix (Senbabaoglu, "
                "Michailidis & Li 2014); the smallest is best",
    reads="assignments",
    reduce=reduce_pac,
    options={"window": (0.1, 0.9)},
    ranges={"window": pair(0.0, 1.0)},
    decision=Decision(rule="smallest"),
    label="PAC(k): share of pairs with consensus in (u1, u2]\n(Senbabaoglu et al. 2014)",
    report_sections=REPORT,
)
CLUSTER_CONSENSUS = Criterion(
    name="cluster_consensus",
    min_k=2,
    description="mean cluster consensus of the consensus partition's clusters (Monti et al. 2003; Wilkerson & "
                "Hayes 2010); the largest is best",
    reads="assignments",
    reduce=reduce_cluster_consensus,
    options={"linkage": "average"},
    ranges={"linkage": choice(*LINKAGES)},
    decision=Decision(rule="largest"),
    label="mean cluster consensus m(k)\n(Monti et al. 2003; Wilkerson & Hayes 2010)",
    report_sections=REPORT,
)
CLUSTERWISE_JACCARD = Criterion(
    name="clusterwise_jaccard",
    min_k=2,
    description="mean over the consensus partition's clusters of the clusterwise Jaccard stability against the "
                "resamples (Hennig 2007); the largest is best",
    reads="assignments",
    reduce=reduce_jaccard,
    options={"linkage": "average"},
    ranges={"linkage": choice(*LINKAGES)},
    decision=Decision(rule="largest"),
    label="mean clusterwise Jaccard\n(Hennig 2007)",
    report_sections=REPORT,
)
RESAMPLE_AGREEMENT = Criterion(
    name="resample_agreement",
    min_k=2,
    description="mean adjusted Rand index between pairs of resampled clusterings on their common items; the "
                "largest is best",
    reads="assignments",
    reduce=reduce_agreement,
    options={"pairs": 500},
    ranges={"pairs": integer(1, MAX_PAIRS)},
    decision=Decision(rule="largest"),
    label="mean adjusted Rand index between resamples",
    report_sections=REPORT,
)

CONSENSUS_CRITERIA = (CONSENSUS_AREA, PAC, CLUSTER_CONSENSUS, CLUSTERWISE_JACCARD, RESAMPLE_AGREEMENT)
