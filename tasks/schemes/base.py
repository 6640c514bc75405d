"""The record of a resampling scheme: how a clusterer's trial draws its items and fits them.

A clustering method resamples by its scheme (a config's ``methods[i].scheme``): ``halves`` (the default; Lange,
Braun, Roth & Buhmann 2002, 2004) draws a sample, splits it into two disjoint halves and clusters both once per k;
``consensus`` (Monti, Tamayo, Mesirov & Golub 2003) clusters a share of the items (and of the features) once per
k per resample. A scheme is a record like an algorithm or a criterion: the clustering family asks it for the
trial runner, the engine never names it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ordercube.tasks.params import Param, check_params, undeclared
from ordercube.tasks.trial import TrialRunner


@dataclass(frozen=True)
class Scheme:
    """A registered resampling scheme for clusterers.

    Attributes
    ----------
    name : str
        A config's ``methods[i].scheme``.
    description : str
        One line for messages and the reference.
    runner : callable
        ``runner(algorithm, spec, source) -> compute_trial``: the trial runner of a clusterer under this scheme
        (:mod:`ordercube.tasks.trial`).
    gives : tuple of str
        What its trials give the criteria (matched against ``Criterion.reads``): ``"labels"`` (the halves'
        :class:`~ordercube.tasks.criteria.base.TrialFits`), ``"assignments"`` (each trial's clusterings, stored).
    defaults, ranges : mapping
        Its parameters (a config's ``methods[i].scheme_params``) with their defaults and declared ranges.
    part_roles : callable
        ``part_roles(params)`` → the role of each clustering a trial stores per k, in order: ``"data"`` or
        ``"reference"`` (the halves: ``("data", "data")``).
    fits : callable
        ``fits(params)`` → its fits per trial and k in units of one fit of n points (the cost model).
    citation : str
    refusal : callable or None
        ``refusal(objects, params, data, n)`` → why a block of a dataset (its ``objects``, its fixed array ``data`` or
        None for fresh draws) at ``n`` cannot be resampled with ``params``, as ``"KEY: problem; fix"`` (``KEY`` a
        config key, ``methods[]`` standing for the method's own), or None; the config refuses it before the sweep.
    """

    name: str
    description: str
    runner: Callable[..., TrialRunner]
    gives: tuple[str, ...]
    defaults: Mapping[str, Any] = field(default_factory=dict)
    ranges: Mapping[str, Param] = field(default_factory=dict)
    part_roles: Callable[[Mapping[str, Any]], tuple[str, ...]] = lambda params: ("data", "data")
    fits: Callable[[Mapping[str, Any]], float] = lambda params: 1.0
    citation: str = ""
    refusal: Callable[[str, Mapping[str, Any], Any, int], str | None] | None = None

    def __post_init__(self) -> None:
        missing = undeclared(self.defaults, self.ranges)
        if missing:
            raise TypeError(f"scheme {self.name!r}: parameter(s) {missing} lack a declared range that holds "
                            "their default")

    def resolve(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """``params`` over the defaults; ``ParamError`` naming an unknown parameter or a value out of range."""
        check_params(params, self.ranges)
        return {**self.defaults, **params}
