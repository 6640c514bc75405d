"""Minimum transfer cost (Frank, Chehreghani & Buhmann 2011): fit on one sample, pay on another.

The principle (Sec. 2.2): fit the model of order k on X⁽¹⁾, map every object of X⁽²⁾ to an object or a
structure of that solution (the mapping ψ), and choose the k of lowest transfer cost, eq. (3):

    Rᵀ(s⁽¹⁾, X⁽²⁾, k) = (1/N₂) Σ_{i'} Σ_i R_{i'}(s⁽¹⁾(i), x⁽²⁾_{i'}, k) 𝕀{ψ(i') = i}.

Every cost here is that mean over the second half's N₂ objects, read from the first half's fitted
model (``TrialFits.model_first``; nothing is fitted again):

- Gaussian mixture, eq. (6): the mean negative log-likelihood of X⁽²⁾ under the mixture fitted on
  X⁽¹⁾; no mapping is needed, each new point's likelihood is computed directly.
- Correlation clustering, eq. (8): the test graph's disagreeing edges (negative within a cluster,
  positive between) under the labels the first half's partition gives its nodes by eqs. (9)-(10).
- k-means, R = Σ_i ‖x_i − μ_{c(i)}‖² (squared Euclidean, our choice), eq. (11), with four
  mappings: to the nearest object of X⁽¹⁾ (``mtc_nn_object``), to the nearest centroid (ψˢ,
  ``mtc_nn_centroid``), to the object drawn from the same component (ψᴳ, eq. 5, ``mtc_generative``: paired
  halves only), and the soft mapping of eq. (14) (``mtc_soft``); ``train_cost`` is R(s⁽¹⁾, X⁽¹⁾, k)/N₁.

All are decided by the smallest value with ties to the smallest k (:mod:`ordercube.tasks.criteria.rules`): a transfer cost is flat
where extra clusters stay empty, and the parsimonious order is then the meaningful one.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ordercube.tasks.criteria.base import Criterion, Decision, TrialFits
from ordercube.tasks.params import choice, number

SMALLEST = Decision(rule="smallest", ties="smallest")


def _to_centers(X: NDArray[np.float64], centers: NDArray[np.float64]) -> NDArray[np.float64]:
    """‖x − μ_t‖² of every row of ``X`` to every centre, shape (len(X), k): k-means' own expansion, O(n k) memory."""
    from ordercube.tasks.algorithms.kmeans import squared_distances  # the model's module: loaded already with its centres

    return squared_distances(np.ascontiguousarray(X, dtype=np.float64), centers)


def _centers(fits: TrialFits) -> NDArray[np.float64]:
    return np.asarray(fits.model_first.centers, dtype=np.float64)


def mixture_transfer_cost(fits: TrialFits) -> float:
    """Eq. (6) over N₂: ``−(1/N₂) Σ_{i'} ln Σ_t π_t N(x⁽²⁾_{i'} | μ_t, Σ_t)`` with the first half's mixture."""
    return float(-np.mean(fits.model_first.score_samples(fits.second)))


def graph_transfer_cost(fits: TrialFits) -> float:
    """Eq. (8) on the second half's own graph with the labels transferred from the first half by eqs. (9)-(10)
    (the method's predictor, ``graph_transfer``), per node: the disagreeing edges of the test graph, over N₂."""
    from ordercube.tasks.algorithms.correlation import correlation_cost, own_graph

    return correlation_cost(own_graph(fits.second), fits.second_predicted_from_first) / fits.second.shape[0]


def transfer_cost(fits: TrialFits) -> float:
    """``mtc``: eq. (6) for a mixture, eq. (8) for a partition of a graph."""
    return {"mixture": mixture_transfer_cost, "graph_partition": graph_transfer_cost}[fits.model_kind](fits)


def train_cost(fits: TrialFits) -> float:
    """``R(s⁽¹⁾, X⁽¹⁾, k) / N₁``: the k-means cost of the first half's own solution per object (decreases in k)."""
    centers = _centers(fits)
    return float(np.mean(((fits.first - centers[fits.labels_first]) ** 2).sum(axis=1)))


def nn_object_cost(fits: TrialFits) -> float:
    """Eq. (11), first line: each x⁽²⁾_{i'} mapped to its nearest object i of X⁽¹⁾ (Euclidean; exact ties, which
    continuous data do not produce, to the lowest index), paying ‖x⁽²⁾_{i'} − μ_{c(i)}‖²."""
    from ordercube.tasks.algorithms.lowrank import nearest_rows  # blocks of rows, exact ties: memory O(block x N1)

    nearest = nearest_rows(fits.first, fits.second)
    return float(np.mean(((fits.second - _centers(fits)[fits.labels_first[nearest]]) ** 2).sum(axis=1)))


def nn_centroid_cost(fits: TrialFits) -> float:
    """Eq. (11), second line (the structure mapping ψˢ of eq. 4): ``(1/N₂) Σ_{i'} min_t ‖x⁽²⁾_{i'} − μ⁽¹⁾_t‖²``."""
    return float(np.mean(_to_centers(fits.second, _centers(fits)).min(axis=1)))


def generative_cost(fits: TrialFits) -> float:
    """The generative mapping ψᴳ (eq. 5, Sec. 2.2): row i' of X⁽²⁾ was drawn from the component of row i = i'
    of X⁽¹⁾, so it pays ‖x⁽²⁾_{i'} − μ_{c(i')}‖² (paired halves only: the config checks the dataset)."""
    if not fits.paired:
        raise ValueError("mtc_generative needs paired halves (a synthetic dataset with paired: true)")
    return float(np.mean(((fits.second - _centers(fits)[fits.labels_first]) ** 2).sum(axis=1)))


def soft_cost(fits: TrialFits, *, beta_factor: float = 0.75, r1: str = "per_object") -> float:
    """Eq. (14): ``(1/N₂) Σ_{i'} Σ_t d_t · exp(−β d_t) / Σ_{t'} exp(−β d_{t'})``, d_t = ‖μ⁽¹⁾_t − x⁽²⁾_{i'}‖².

    β = ``beta_factor`` / R1 (Sec. 7: "β = 0.75 * R(s⁽¹⁾, X⁽¹⁾, 1)⁻¹"), R1 the cost of the one-cluster solution
    on X⁽¹⁾: per object (``r1 = "per_object"``, mean ‖x − x̄‖², the reading that reproduces the paper)
    or the literal sum of eq. (2) (``r1 = "sum"``, which makes the mapping nearly uniform).
    """
    spread = ((fits.first - fits.first.mean(axis=0)) ** 2).sum(axis=1)
    r1_cost = float(spread.mean() if r1 == "per_object" else spread.sum())
    beta = beta_factor / r1_cost if r1_cost > 0 else np.inf
    d = _to_centers(fits.second, _centers(fits))
    if np.isinf(beta):  # every point of X1 identical: the hard (nearest-centroid) mapping is the limit
        return float(np.mean(d.min(axis=1)))
    logits = -beta * (d - d.min(axis=1, keepdims=True))  # shifted: exp never overflows, the weights are unchanged
    weights = np.exp(logits)
    weights /= weights.sum(axis=1, keepdims=True)
    return float(np.mean((weights * d).sum(axis=1)))


TRANSFER_REPORT = ("ordercube.pipeline.report.transfer:section",)  # every mapping's cost curve against k (Frank et al., Fig. 6)
MTC = Criterion(
    name="mtc", citation="Frank et al. 2011", min_k=1, evaluate=transfer_cost, decision=SMALLEST, models=("mixture", "graph_partition"),
    description="minimum transfer cost (Frank et al.): a mixture's mean negative log-likelihood of the second half "
                "(eq. 6), or a graph partition's disagreeing edges of the second half's graph per node (eq. 8)",
    report_sections=TRANSFER_REPORT,
)
TRAIN_COST = Criterion(
    name="train_cost", citation="Frank et al. 2011", min_k=1, evaluate=train_cost, decision=SMALLEST, models=("centroids",),
    description="k-means cost of the first half's own solution per object, R(s1, X1, k)/N1 (decreases in k)",
    report_sections=TRANSFER_REPORT,
)
MTC_NN_OBJECT = Criterion(
    name="mtc_nn_object", citation="Frank et al. 2011", min_k=1, evaluate=nn_object_cost, decision=SMALLEST, models=("centroids",),
    description="transfer cost, nearest-object mapping (Frank et al. eq. 11, first line)",
    report_sections=TRANSFER_REPORT,
)
MTC_NN_CENTROID = Criterion(
    name="mtc_nn_centroid", citation="Frank et al. 2011", min_k=1, evaluate=nn_centroid_cost, decision=SMALLEST, models=("centroids",),
    description="transfer cost, nearest-centroid mapping (Frank et al. eq. 11, second line)",
    report_sections=TRANSFER_REPORT,
)
MTC_GENERATIVE = Criterion(
    name="mtc_generative", citation="Frank et al. 2011", min_k=1, evaluate=generative_cost, decision=SMALLEST, models=("centroids",),
    needs_paired_halves=True,
    description="transfer cost, generative mapping of paired halves (Frank et al. eq. 5)",
    report_sections=TRANSFER_REPORT,
)
MTC_SOFT = Criterion(
    name="mtc_soft", citation="Frank et al. 2011", min_k=1, evaluate=soft_cost, decision=SMALLEST, models=("centroids",),
    options={"beta_factor": 0.75, "r1": "per_object"},
    ranges={"beta_factor": number(0.0, low_open=True), "r1": choice("per_object", "sum")},
    description="transfer cost, soft mapping (Frank et al. eq. 14, beta = beta_factor / R1)",
    report_sections=TRANSFER_REPORT,
)


def effective_clusters(fits: TrialFits) -> float:
    """The number of non-empty clusters of the first half's solution: an algorithm may leave clusters empty (Frank et al. 2011,
    Sec. 6: the Gibbs sampler "always selects the correct number of clusters on its own. The extra clusters are
    simply left empty"), and then the transfer cost is flat in k."""
    return float(np.unique(fits.labels_first).size)


K_EFFECTIVE = Criterion(
    name="k_effective", citation="Frank et al. 2011", min_k=1, evaluate=effective_clusters, decision=Decision(rule="none"),
    description="number of non-empty clusters of the first half's solution (a diagnostic)",
    report_sections=TRANSFER_REPORT,
)
TRANSFER_CRITERIA = (MTC, TRAIN_COST, MTC_NN_OBJECT, MTC_NN_CENTROID, MTC_GENERATIVE, MTC_SOFT, K_EFFECTIVE)
