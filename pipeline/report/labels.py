"""What a figure says about the variable it plots: its axis label and its reference lines, from the criterion that
owns the variable (``Criterion.label``, ``labels``, ``citation``, ``reference_lines``), so that a figure never shows
one variable under another's label or threshold."""

from __future__ import annotations

from ordercube.tasks.criteria import CRITERIA, Criterion, Decision


def owner_of(variable: str) -> Criterion | None:
    """The registered criterion whose output ``variable`` is (a plug-in's too), None for another variable."""
    return next((criterion for criterion in CRITERIA.values() if variable in criterion.variables), None)


def label_of(variable: str) -> str:
    """The y label of a figure of ``variable``: what its owner says it is, and the owner's citation."""
    owner = owner_of(variable)
    return owner.axis_label(variable) if owner is not None else variable


def reference_lines(variable: str, decision: Decision | None) -> dict[float, str]:
    """The horizontal lines a figure of ``variable`` draws (``Criterion.reference_lines``): the threshold of the
    rule that reads its curve, none for any other variable."""
    owner = owner_of(variable)
    if owner is None or decision is None:
        return {}
    return owner.reference_lines(variable, decision)
