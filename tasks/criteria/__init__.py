"""Criteria, registered by name: one registry for every family.

A criterion carries its own computation and its decision rule. A clustering criterion never fits the halves
itself: the clusterer's trial (:mod:`ordercube.tasks.clustering`) fits both halves once per (trial, k) and hands every
per-k criterion of the method the same :class:`~ordercube.tasks.criteria.base.TrialFits`; criteria on the whole sample
(Gap, Clest, BIC, AIC) get a :class:`~ordercube.tasks.criteria.base.TrialSample` once per trial. A matrix model's criterion
registers its computation per model (``computations``); a classifier's error rates come from its kernel
(``reads="error_rates"``, its options the kernel's). What a criterion reads and needs is matched against the
method and the data by :func:`ordercube.tasks.capabilities.why_not`.
"""

from __future__ import annotations

from ordercube.tasks.criteria.agreement import AGREEMENT
from ordercube.tasks.criteria.base import (
    ADJUSTABLE, AGGREGATES, DECISION_RANGES, GAP_METHODS, Criterion, Decision, TrialFits, TrialSample,
)
from ordercube.tasks.criteria.clest import CLEST
from ordercube.tasks.criteria.consensus import CONSENSUS_CRITERIA
from ordercube.tasks.criteria.gap import GAP
from ordercube.tasks.criteria.internal import INTERNAL_CRITERIA
from ordercube.tasks.criteria.likelihood import AIC, BIC
from ordercube.tasks.criteria.m3c import M3C
from ordercube.tasks.criteria.matrix import MATRIX_CRITERIA
from ordercube.tasks.criteria.pairwise import PAIRWISE
from ordercube.tasks.criteria.prediction_strength import PREDICTION_STRENGTH
from ordercube.tasks.criteria.stability import LANGE
from ordercube.tasks.criteria.supervised import SUPERVISED_CRITERIA
from ordercube.tasks.criteria.transfer import TRANSFER_CRITERIA

CRITERIA: dict[str, Criterion] = {
    criterion.name: criterion
    for criterion in [LANGE, PAIRWISE, PREDICTION_STRENGTH, GAP, CLEST, BIC, AIC, AGREEMENT, *SUPERVISED_CRITERIA,
                      *TRANSFER_CRITERIA, *MATRIX_CRITERIA, *INTERNAL_CRITERIA, *CONSENSUS_CRITERIA, M3C]
}
# Every cube variable a criterion stores, mapped to its criterion ("gap_sd" -> "gap"); a criterion reduced from
# stored assignments (``reduce``) stores none, but its outputs are listed too ("consensus_delta" ->
# "consensus_area"): they name its reduced curves.
VARIABLES: dict[str, str] = {variable: name for name, criterion in CRITERIA.items() for variable in criterion.variables}


def get_criterion(name: str) -> Criterion:
    """The registered criterion ``name``; an unknown name lists the valid ones."""
    from ordercube.tasks.misses import lookup  # a plug-in's name where none is loaded yet (a worker)

    return lookup(CRITERIA, "criterion", name)


def is_reduced(name: str) -> bool:
    """Whether criterion ``name`` is computed from stored assignments after the sweep (``Criterion.reduce``,
    ``reads="assignments"``), never in a trial: it stores no cube variable and adds no work to a run."""
    criterion = get_criterion(name)
    return criterion.reduce is not None or criterion.reads == "assignments"


__all__ = ["ADJUSTABLE", "AGGREGATES", "CRITERIA", "DECISION_RANGES", "GAP_METHODS", "VARIABLES", "Criterion", "Decision",
           "TrialFits", "TrialSample", "get_criterion", "is_reduced"]
