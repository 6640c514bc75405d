"""Criteria computed from one trial's two fitted halves, registered by name.

A criterion never fits anything: the cell fits both halves once per (trial, k) and hands every
criterion of the method the same :class:`~tasks.criteria.base.TrialFits`.
"""

from __future__ import annotations

from tasks.criteria.base import Criterion, Decision, TrialFits
from tasks.criteria.pairwise import PAIRWISE
from tasks.criteria.prediction_strength import PREDICTION_STRENGTH
from tasks.criteria.stability import LANGE

CRITERIA: dict[str, Criterion] = {criterion.name: criterion for criterion in [LANGE, PAIRWISE, PREDICTION_STRENGTH]}


def get_criterion(name: str) -> Criterion:
    """The registered criterion ``name``; an unknown name lists the valid ones."""
    try:
        return CRITERIA[name]
    except KeyError:
        raise ValueError(f"unknown criterion {name!r}; expected one of {sorted(CRITERIA)}") from None


__all__ = ["CRITERIA", "Criterion", "Decision", "TrialFits", "get_criterion"]
