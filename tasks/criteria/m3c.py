"""M3C: PAC of the data against PAC of reference data sets without clusters (John et al. 2020, Scientific Reports
10:1816), reduced from stored assignments.

The consensus scheme clusters the data and each of B reference data sets (:func:`ordercube.tasks.consensus.reference.
m3c_reference`, drawn once per dataset, n and b) on the same resamples at every k; this criterion builds the
consensus matrix of each (Monti et al. 2003), its PAC (Senbabaoglu et al. 2014; M3C's ``pacx1``, ``pacx2``:
``window``), and compares (M3C's ``R/M3C.R``, the module :mod:`ordercube.tasks.consensus.reference` cites its
lines):

- ``rcsi``: the relative cluster stability index, mean_b log PAC_ref,b,k - log PAC_real,k; ``rcsi_se`` its
  standard error over the references;
- ``rcsi_p``: the Monte Carlo p-value (#{b : PAC_ref,b,k < PAC_real,k} + 1) / (B + 1);
- ``rcsi_fit_p``: the p-value of a beta distribution fitted to the references' PACs by the method of moments
  (with ``objective: entropy``, the R package's default since December 2019: of a normal distribution);
- ``m3c_data``, ``m3c_reference``: the data's PAC (or entropy) and the references' mean (M3C's ``PAC_REF``);
- ``m3c``: the curve k̂ is read from: the RCSI at the k that may be chosen (below), no value elsewhere.

**Decision.** The largest RCSI (M3C's ``which.max(real$RCSI)``: the first of equal values, the smallest k) among
the k whose own p-value (``test``) is below ``alpha`` (``among: significant``, the default), so that k̂ is itself
significant, as the vignette reads its example ("the RCSI reaches a maxima at K = 4, the p value supports this
optimal K decision"). When no k is significant, the curve ``m3c`` has no value and k̂ is -1, "no choice": M3C's
K = 1, no cluster structure (vignette: "If none of the p values reach significance over a reasonable range of K
(e.g. 10), then we accept the null hypothesis"; a consensus scheme clusters at k >= 2 only, so 1 is not on the
grid).

M3C's own code decides otherwise: ``R/M3C.R`` (line 360) prints the largest RCSI as the "optimal K" whatever the
p-values, which ``test: none`` reproduces. ``among: all`` is the vignette's test of K = 1 followed by that
maximum: the largest RCSI at any k once some k is significant, which may be a k whose own p-value is above
``alpha`` (M3C's vignette and code read together).
"""

from __future__ import annotations

import warnings

import numpy as np
from numpy.typing import NDArray

from ordercube.tasks.consensus import consensus_matrix, consensus_values, pac_from_values
from ordercube.tasks.consensus.reference import (
    ALPHA, AMONG, beta_p, decision_curve, entropy_from_values, monte_carlo_p, normal_p, rcsi, rcsi_se,
)
from ordercube.tasks.criteria.base import Clusterings, Criterion, Decision
from ordercube.tasks.criteria.consensus import batched_references, summary
from ordercube.tasks.params import choice, number, pair

OUTPUTS = ("m3c", "rcsi", "rcsi_se", "rcsi_p", "rcsi_fit_p", "m3c_data", "m3c_reference")
OBJECTIVES = ("pac", "entropy")
TESTS = ("fit", "monte_carlo", "none")


def statistic_table(clusterings: Clusterings, *, objective: str = "pac", window: tuple[float, float] = (0.1, 0.9)
                    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """M3C's objective (PAC in ``window``, or the consensus entropy) of the data's and of each reference's consensus
    matrix at every k (resamples weighted by ``clusterings.weights``).

    The data's consensus distribution comes from the consensus criteria's summaries (computed once for ``pac``,
    ``consensus_area`` and this criterion when they reduce the same arrays); each reference's is computed here, or
    taken from the batch of a bootstrap's replicates (:func:`ordercube.tasks.criteria.consensus.batched`).

    Returns
    -------
    data : ndarray of shape (K,)
    references : ndarray of shape (B, K)
        B the most references stored at any k (a consensus scheme stores the same B at every k); NaN where a k
        lacks one.
    """
    ks = clusterings.ks
    window = (float(window[0]), float(window[1]))

    def statistic(values: NDArray[np.float64], counts: NDArray[np.int64]) -> float:
        return pac_from_values(values, counts, window) if objective == "pac" else entropy_from_values(values, counts)

    data = np.full(len(ks), np.nan)
    count = max((len(clusterings.references[k]) for k in ks if k in clusterings.references), default=0)
    references = np.full((count, len(ks)), np.nan)
    for column, k in enumerate(ks):
        need = ("m3c", objective, *window)
        data[column] = summary(clusterings.data[k], clusterings.weights, k, (need,)).extras[need]
        stack = clusterings.references.get(k, ())
        ready = batched_references(stack, clusterings.weights, k, objective, window) if len(stack) else None
        if ready is not None:  # computed with the rest of a bootstrap's batch (the same values)
            references[:len(ready), column] = ready
            continue
        for b, labels in enumerate(stack):
            references[b, column] = statistic(*consensus_values(consensus_matrix(labels, weights=clusterings.weights)))
    return data, references


def reduce_m3c(clusterings: Clusterings, *, objective: str = "pac", window: tuple[float, float] = (0.1, 0.9),
               alpha: float = ALPHA, test: str = "fit", rcsi_of: str = "mean_log", among: str = "significant"
               ) -> dict[str, NDArray[np.float64]]:
    """M3C's statistics per k from the stored clusterings of the data and of its B references.

    Parameters
    ----------
    clusterings : Clusterings
        ``references`` must hold at least one reference's clusterings (``scheme_params.references`` >= 1).
    objective : {"pac", "entropy"}
        What is compared: PAC (the paper's; M3C's ``objective = "PAC"``) or the consensus entropy (the R
        package's default since December 2019).
    window : (float, float)
        PAC's ambiguity window (M3C's ``pacx1``, ``pacx2``).
    alpha : float
        The significance level of the test of K = 1.
    test : {"fit", "monte_carlo", "none"}
        The p-values the test reads: those of the distribution M3C fits to the references (beta for PAC, normal for
        entropy; the ones M3C's vignette reads), or the Monte Carlo ones; ``none``: no test, k̂ is the largest RCSI
        (M3C's code, ``R/M3C.R`` line 360).
    rcsi_of : {"mean_log", "log_mean"}
        :func:`ordercube.tasks.consensus.reference.rcsi`'s ``of``: M3C's RCSI since December 2019, or before.
    among : {"significant", "all"}
        Where k̂ may fall (:func:`ordercube.tasks.consensus.reference.decision_curve`): among the k whose own
        p-value is below ``alpha``, or at any k once some k is.

    Returns
    -------
    dict
        Each of ``OUTPUTS`` → ndarray of shape (len(clusterings.ks),): ``rcsi_fit_p`` the beta (PAC) or normal
        (entropy) p-value, ``m3c_data`` the data's PAC or entropy, ``m3c_reference`` the references' mean (M3C's
        ``PAC_REF``).
    """
    if not any(len(clusterings.references.get(k, ())) for k in clusterings.ks):
        raise ValueError("m3c: the stored assignments hold no reference data set (John et al. 2020 compares the data "
                         "with B of them); set the method's scheme_params.references: 25 (M3C's default) and run it "
                         "again")
    data, references = statistic_table(clusterings, objective=objective, window=window)
    values = rcsi(data, references, of="log_mean" if rcsi_of == "log_mean" else "mean_log")
    p_monte_carlo = monte_carlo_p(data, references)
    p_fit = beta_p(data, references) if objective == "pac" else normal_p(data, references)
    tested = None if test == "none" else p_fit if test == "fit" else p_monte_carlo
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a k without references: no mean
        reference_mean = np.nanmean(references, axis=0)
    return {
        "m3c": decision_curve(values, tested, alpha=alpha, among=among),
        "rcsi": values,
        "rcsi_se": rcsi_se(data, references),
        "rcsi_p": p_monte_carlo,
        "rcsi_fit_p": p_fit,
        "m3c_data": data,
        "m3c_reference": reference_mean,
    }


M3C = Criterion(
    name="m3c", citation="John et al. 2020",
    min_k=2,
    description="M3C (John et al. 2020): the data's PAC against reference data sets that keep its feature "
                "correlation; k̂ the largest relative cluster stability index among the significant k",
    reads="assignments",
    reduce=reduce_m3c,
    outputs=OUTPUTS,
    decision=Decision(rule="largest", error_output="rcsi_se"),
    options={"objective": "pac", "window": (0.1, 0.9), "alpha": ALPHA, "test": "fit", "rcsi_of": "mean_log",
             "among": "significant"},
    ranges={"objective": choice(*OBJECTIVES), "window": pair(0.0, 1.0),
            "alpha": number(0.0, 1.0, low_open=True, high_open=True), "test": choice(*TESTS),
            "rcsi_of": choice("mean_log", "log_mean"), "among": choice(*AMONG)},
    label="RCSI at the k that may be chosen",
    labels={"rcsi": "RCSI: mean log(PAC of references / PAC of data)", "rcsi_se": "standard error of the RCSI",
            "rcsi_p": "Monte Carlo p-value (K = 1 against k)",
            "rcsi_fit_p": "fitted p-value (K = 1 against k)", "m3c_data": "PAC (or entropy) of the data",
            "m3c_reference": "mean PAC (or entropy) of the references"},
    no_choice="no k has a p-value below alpha: M3C's K = 1, no cluster structure against the reference data",
    report_sections=("ordercube.pipeline.report.consensus:section",),
    needs_parts={"reference": "set scheme_params.references: 25 (M3C's default, John et al. 2020), or remove m3c "
                              "from the criteria"},
)
