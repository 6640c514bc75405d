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

A bootstrap over resamples reduces the same clusterings under many weightings: :func:`batched` computes the
consensus summaries of all of them at once (one matrix product per k for the whole batch:
:func:`ordercube.tasks.consensus.matrix.pair_counts`), the same values bit for bit, and the criteria read them
as they would read their own.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ordercube.tasks.consensus import (
    AREA_METHODS, LINKAGES, area_from_values, cdf_area, cluster_consensus, clusterwise_jaccard, consensus_matrix,
    consensus_partition, consensus_values, delta_area, pac_from_values, resample_agreement,
)
from ordercube.tasks.consensus.matrix import (
    drawn_labels, exact_in_single, matrix_from_quotients, pair_counts, pair_quotients, values_from_counts,
)
from ordercube.tasks.consensus.partition import cluster_consensus_from_pairs, partition_from_pairs
from ordercube.tasks.criteria.base import Clusterings, Criterion, Decision
from ordercube.tasks.params import choice, integer, pair

REPORT = ("ordercube.pipeline.report.consensus:section",)
# Bytes of consensus summaries kept for the criteria of the same reduction (the distinct entries of M per k).
CACHE_BYTES = 256 * 2**20
# The key of resample_agreement's stream of pairs: (this, k).
AGREEMENT_STREAM = 1
MAX_PAIRS = 1_000_000
# Bytes of one batch's pair counts (weightings x pairs, float32: a k's numerators and the shared denominators): the
# 796 yeast genes' curve and 100 replicates go in two batches (each batch builds every resample's co-clustering
# indicator again, 0.5-1 s per k for them).
BATCH_BYTES = 192 * 2**20
# The criteria whose reduction reads consensus summaries (a batch computes them), and what else each asks.
BATCH_READERS = ("consensus_area", "pac", "cluster_consensus", "clusterwise_jaccard", "m3c")


@dataclass
class Summary:
    """What the consensus criteria read of one consensus matrix: its distribution and what else was asked of it
    (``extras``: the ``consensusclustering`` area; per linkage, the consensus partition and its clusters'
    consensus; the readings of the distribution, keyed by a tuple: ``("area", method)``, ``("pac", u1, u2)``,
    ``("m3c", objective, u1, u2)``). A batch's summaries (:func:`batched`) keep the readings alone (``values`` and
    ``counts`` None)."""

    labels: NDArray[np.int16]
    weights: NDArray[np.float64] | None
    values: NDArray[np.float64] | None
    counts: NDArray[np.int64] | None
    extras: dict[Any, Any] = field(default_factory=dict)

    @property
    def nbytes(self) -> int:
        extra = sum(getattr(part, "nbytes", 0) for value in self.extras.values()
                    for part in (value if isinstance(value, tuple) else (value,)))
        return sum(getattr(part, "nbytes", 0) for part in (self.values, self.counts)) + extra


_CACHE: OrderedDict[tuple[int, int, int], Summary] = OrderedDict()
_LOCK = threading.Lock()  # reducers may run in threads: the cache's order and size change under it
_HELD = [0]  # the bytes of the summaries in _CACHE, kept as they change (summing them per call grew with the cache)


def summary(labels: NDArray[np.int16], weights: NDArray[np.float64] | None, k: int,
            needs: tuple[Any, ...] = ()) -> Summary:
    """The consensus summary of ``labels`` (R, N) at ``k`` with ``weights``, with the ``needs`` filled
    (``"consensusclustering"``, ``"partition:average"``, a reading such as ``("pac", 0.1, 0.9)``, ...): from the
    batch being reduced (:func:`batched`) or the cache when these very arrays were summarised before (both hold
    them, so an identity is never mistaken). The consensus matrix is computed only when something asked is
    missing; its partition only when asked for (a bootstrap of PAC needs none)."""
    key = (id(labels), id(weights), k)
    with _LOCK:
        entry = _BATCH.get(key) or _CACHE.get(key)
    if entry is not None and (entry.labels is not labels or entry.weights is not weights):
        entry = None
    missing = [need for need in needs if entry is None or need not in entry.extras]
    if entry is not None and not missing:
        with _LOCK:
            if key in _CACHE:
                _CACHE.move_to_end(key)
        return entry
    known = entry is not None and entry.values is not None
    M = None
    if not known or not all(isinstance(need, tuple) for need in missing):
        M = consensus_matrix(labels, weights=weights)
    if entry is not None and entry.values is not None:
        values, counts = entry.values, entry.counts
    else:
        values, counts = consensus_values(M)
    extras = dict(entry.extras) if entry is not None else {}
    for need in missing:
        extras[need] = _reading(values, counts, need) if isinstance(need, tuple) else _extra(M, k, need)
    entry = Summary(labels, weights, values, counts, extras)
    with _LOCK:
        held = _CACHE[key].nbytes if key in _CACHE else 0
        _CACHE[key] = entry
        _CACHE.move_to_end(key)
        _HELD[0] += entry.nbytes - held
        while len(_CACHE) > 1 and _HELD[0] > CACHE_BYTES:
            _HELD[0] -= _CACHE.popitem(last=False)[1].nbytes
    return entry


def _reading(values: NDArray[np.float64], counts: NDArray[np.int64], need: tuple[Any, ...]) -> float:
    """One reading of a consensus distribution: ``("area", method)`` its CDF's area, ``("pac", u1, u2)`` its PAC,
    ``("m3c", objective, u1, u2)`` M3C's objective."""
    if need[0] == "area":
        return area_from_values(values, counts, method=need[1])
    if need[0] == "pac":
        return pac_from_values(values, counts, (need[1], need[2]))
    return reference_statistic(values, counts, need[1], need[2:])


_BATCH: dict[tuple[int, int, int], Summary] = {}  # the summaries of the batches being reduced (:func:`batched`)
# (id(references), id(weights), k, objective, window) → (references, weights, each reference's statistic)
_BATCH_REFERENCES: dict[tuple[Any, ...], tuple[Any, Any, NDArray[np.float64]]] = {}


def batch_needs(criteria: Mapping[str, Mapping[str, Any]]) -> tuple[Any, ...] | None:
    """What :func:`batched` must compute for these criteria (name → options): the summaries' readings and extras
    (:class:`Summary`); None when none of them reads a consensus summary."""
    if not any(name in BATCH_READERS for name in criteria):
        return None
    needs: list[Any] = []
    for name, options in criteria.items():
        if name == "consensus_area":
            method = str(options.get("method", "monti"))
            needs.append(method if method == "consensusclustering" else ("area", method))
        if name == "pac":
            needs.append(("pac", *_window(options.get("window", (0.1, 0.9)))))
        if name == "m3c":
            needs.append(("m3c", str(options.get("objective", "pac")), *_window(options.get("window", (0.1, 0.9)))))
        if name in ("cluster_consensus", "clusterwise_jaccard"):
            needs.append(f"partition:{options.get('linkage', 'average')}")
    return tuple(dict.fromkeys(needs))


def _window(window: Sequence[float]) -> tuple[float, float]:
    return float(window[0]), float(window[1])


def batch_size(clusterings: Clusterings, weightings: int) -> int:
    """The weightings of one batch for these clusterings, of ``weightings`` in all: their pair counts below
    :data:`BATCH_BYTES`, the batches as even as can be (a last batch of one would build as much as a full one)."""
    pairs = max(1, clusterings.items * (clusterings.items - 1) // 2)
    largest = max(1, BATCH_BYTES // (8 * pairs))
    return -(-weightings // -(-weightings // largest))


@contextmanager
def batched(clusterings: Clusterings, weightings: Sequence[NDArray[np.float64] | None],
            criteria: Mapping[str, Mapping[str, Any]]) -> Iterator[int]:
    """Within it, the consensus summaries of ``clusterings.data`` under each of ``weightings`` (None: one each), at
    every k, are at hand to :func:`summary` (and each reference's PAC or entropy to ``m3c``), all computed at once.

    Parameters
    ----------
    clusterings : Clusterings
    weightings : sequence of (R,) arrays or None
        The weights of each reduction to come (``dataclasses.replace(clusterings, weights=w)`` with these very
        objects: the summaries are found by identity).
    criteria : mapping
        Name → options of the criteria to be reduced (:func:`batch_needs`).

    Yields
    ------
    int
        The bytes of the summaries held.

    Notes
    -----
    Each summary holds the same values as :func:`summary` computes alone, bit for bit: the counts are exact
    integers however summed (integer weights below 2**24; other weights are left to :func:`summary`), and each
    consensus value is the same quotient of them. Nothing is batched when no criterion reads a summary.
    """
    needs = batch_needs(criteria)
    rows = list(weightings)
    entries: dict[tuple[int, int, int], Summary] = {}
    references: dict[tuple[Any, ...], tuple[Any, Any, NDArray[np.float64]]] = {}
    n_rows = next((labels.shape[0] for labels in clusterings.data.values()), 0)
    if needs is not None and rows and n_rows:
        W = np.stack([np.ones(n_rows) if w is None else np.asarray(w, dtype=np.float64) for w in rows])
        if exact_in_single(W):
            _fill(clusterings, rows, W, needs, criteria.get("m3c"), entries, references)
    held = sum(entry.nbytes for entry in entries.values())
    with _LOCK:
        _BATCH.update(entries)
        _BATCH_REFERENCES.update(references)
    try:
        yield held
    finally:
        with _LOCK:
            for key in entries:
                _BATCH.pop(key, None)
            for key in references:
                _BATCH_REFERENCES.pop(key, None)


def _fill(clusterings: Clusterings, rows: list[NDArray[np.float64] | None], W: NDArray[np.float64],
          needs: tuple[Any, ...], m3c: Mapping[str, Any] | None, entries: dict[tuple[int, int, int], Summary],
          references: dict[tuple[Any, ...], tuple[Any, Any, NDArray[np.float64]]]) -> None:
    drawn: list[tuple[NDArray[np.bool_], NDArray[np.float32], NDArray[np.float64]]] = []

    def denominators(labels: NDArray[np.int16]) -> tuple[NDArray[np.float32], NDArray[np.float64]]:
        mask = labels >= 0
        for known, counts, items in drawn:  # every k (and reference) of a scheme draws the same items
            if known.shape == mask.shape and np.array_equal(known, mask):
                return counts, items
        counts, items = pair_counts(drawn_labels(labels), W), W @ mask
        drawn.append((mask, counts, items))
        return counts, items

    for k in clusterings.ks:
        labels = clusterings.data.get(k)
        if k < 2 or labels is None or labels.shape[0] == 0:
            continue
        bottom, items = denominators(labels)
        top = pair_counts(labels, W)
        matrix_needs = [need for need in needs if not isinstance(need, tuple)]
        quotients = pair_quotients(top, bottom) if matrix_needs else None
        for r, w in enumerate(rows):
            values, counts = values_from_counts(top[r], bottom[r])
            extras = {need: _reading(values, counts, need) for need in needs if isinstance(need, tuple)}
            if quotients is not None:
                extras.update({need: _extra_from_pairs(quotients[r], items[r], k, need) for need in matrix_needs})
            entries[(id(labels), id(w), k)] = Summary(labels, w, None, None, extras)
        stack = clusterings.references.get(k) if m3c is not None else None
        if stack is None or not len(stack):
            continue
        objective = str(m3c.get("objective", "pac"))
        window = _window(m3c.get("window", (0.1, 0.9)))
        table = np.full((len(rows), len(stack)), np.nan)
        for b, reference in enumerate(stack):
            bottom, _ = denominators(reference)
            top = pair_counts(reference, W)
            for r in range(len(rows)):
                table[r, b] = reference_statistic(*values_from_counts(top[r], bottom[r]), objective, window)
        for r, w in enumerate(rows):
            references[(id(stack), id(w), k, objective, window)] = (stack, w, table[r])


def reference_statistic(values: NDArray[np.float64], counts: NDArray[np.int64], objective: str,
                        window: tuple[float, ...]) -> float:
    """M3C's objective of one consensus distribution: PAC in ``window`` or the consensus entropy."""
    from ordercube.tasks.consensus.reference import entropy_from_values

    if objective == "pac":
        return pac_from_values(values, counts, (window[0], window[1]))
    return entropy_from_values(values, counts)


def batched_references(stack: Any, weights: NDArray[np.float64] | None, k: int, objective: str,
                       window: tuple[float, ...]) -> NDArray[np.float64] | None:
    """Each reference's statistic at ``k`` under ``weights`` from the batch being reduced, or None."""
    key = (id(stack), id(weights), k, objective, tuple(float(edge) for edge in window))
    with _LOCK:
        found = _BATCH_REFERENCES.get(key)
    if found is None or found[0] is not stack or found[1] is not weights:
        return None
    return found[2]


def _extra(M: NDArray[np.float64], k: int, need: str) -> Any:
    if need == "consensusclustering":
        return cdf_area(M, method="consensusclustering")
    linkage = need.removeprefix("partition:")
    drawn = int(np.count_nonzero(~np.isnan(np.diagonal(M))))
    if drawn < k:  # fewer items than clusters: no partition
        return np.full(M.shape[0], -1, dtype=np.int64), np.full(k, np.nan)
    partition = consensus_partition(M, k, linkage)  # type: ignore[arg-type]
    return partition, cluster_consensus(M, partition, k)


def _extra_from_pairs(quotients: NDArray[np.float64], drawn_items: NDArray[np.float64], k: int, need: str) -> Any:
    """:func:`_extra` of the consensus matrix whose pairs hold ``quotients`` (the items drawn ``drawn_items``
    times), the same values, without the (N, N) matrix where the need does not read it (a batch's replicates)."""
    if need == "consensusclustering":
        return _extra(matrix_from_quotients(quotients, drawn_items), k, need)
    linkage = need.removeprefix("partition:")
    if int(np.count_nonzero(drawn_items > 0)) < k:  # fewer items than clusters: no partition
        return np.full(drawn_items.shape[0], -1, dtype=np.int64), np.full(k, np.nan)
    partition = partition_from_pairs(quotients, drawn_items, k, linkage)  # type: ignore[arg-type]
    return partition, cluster_consensus_from_pairs(quotients, drawn_items, partition, k)


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
        need = ("area", method)
        return float(summary(labels, clusterings.weights, k, (need,)).extras[need])

    areas = _per_k(clusterings, area)
    return {"consensus_area": areas,
            "consensus_delta": delta_area(areas, np.asarray(clusterings.ks), running_max=running_max)}


def reduce_pac(clusterings: Clusterings, *, window: tuple[float, float] = (0.1, 0.9)) -> dict[str, NDArray[np.float64]]:
    """The proportion of ambiguous clustering at every k, PAC = CDF(u2) - CDF(u1) with ``window`` = (u1, u2)
    (Senbabaoglu, Michailidis & Li 2014; :func:`ordercube.tasks.consensus.pac`): the share of item pairs whose
    consensus lies in (u1, u2]."""
    window = (float(window[0]), float(window[1]))

    def value(k: int, labels: NDArray[np.int16]) -> float:
        need = ("pac", *window)
        return float(summary(labels, clusterings.weights, k, (need,)).extras[need])

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
    name="consensus_area", citation="Monti et al. 2003",
    min_k=2,
    description="area under the consensus CDF A(k) and its relative increase Delta(k) (Monti, Tamayo, Mesirov & "
                "Golub 2003, Sec. 3.3.1); k̂: the largest k whose Delta(k) reaches the threshold",
    reads="assignments",
    reduce=reduce_area,
    outputs=("consensus_area", "consensus_delta"),
    options={"method": "monti", "running_max": True},
    ranges={"method": choice(*AREA_METHODS), "running_max": choice(True, False)},
    decision=Decision(rule="largest_above", threshold=0.025, threshold_range=(0.0, math.inf), output="consensus_delta"),
    label="area under the consensus CDF A(k)",
    labels={"consensus_delta": "relative increase of the consensus CDF area Δ(k)"},
    report_sections=REPORT,
)
PAC = Criterion(
    name="pac", citation="Senbabaoglu et al. 2014",
    min_k=2,
    description="proportion of ambiguous clustering CDF(u2) - CDF(u1) of the consensus matrix (Senbabaoglu, "
                "Michailidis & Li 2014); the smallest is best",
    reads="assignments",
    reduce=reduce_pac,
    options={"window": (0.1, 0.9)},
    ranges={"window": pair(0.0, 1.0)},
    decision=Decision(rule="smallest"),
    label="PAC(k): share of pairs with consensus in (u1, u2]",
    report_sections=REPORT,
)
CLUSTER_CONSENSUS = Criterion(
    name="cluster_consensus", citation="Monti et al. 2003",
    min_k=2,
    description="mean cluster consensus of the consensus partition's clusters (Monti et al. 2003; Wilkerson & "
                "Hayes 2010); the largest is best",
    reads="assignments",
    reduce=reduce_cluster_consensus,
    options={"linkage": "average"},
    ranges={"linkage": choice(*LINKAGES)},
    decision=Decision(rule="largest"),
    label="mean cluster consensus m(k)",
    report_sections=REPORT,
)
CLUSTERWISE_JACCARD = Criterion(
    name="clusterwise_jaccard", citation="Hennig 2007",
    min_k=2,
    description="mean over the consensus partition's clusters of the clusterwise Jaccard stability against the "
                "resamples (Hennig 2007); the largest is best",
    reads="assignments",
    reduce=reduce_jaccard,
    options={"linkage": "average"},
    ranges={"linkage": choice(*LINKAGES)},
    decision=Decision(rule="largest"),
    label="mean clusterwise Jaccard",
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
