"""Report sections: what a criterion adds to a report beyond its row of the k̂ table and its own figures.

A criterion names the sections it needs in ``Criterion.report_sections``, as import paths
``"package.module:function"`` (``tasks`` never imports ``pipeline``; a plug-in names a function of its own
package). A section is a function ``section(context) -> SectionResult | None``: it reads the cube and its
reducers from the :class:`SectionContext`, writes its own files (CSV tables) into ``context.folder``, asks
for its figures from ``context.figures`` and returns what the rest of the report shows of it. The report
calls every section declared by the criteria in the cube once (its ``context.criteria``: the cube's
criteria that declared it, in registry order), in the registry order of the criteria that declare them,
then its general sections (a swept generator parameter, whatever the model family); ``index.html`` and
``ordercube report`` render the results without knowing any section by name.

A section that also draws its criteria's values against n (the classifiers' selectors per n) is
wrapped in a :class:`Section` with ``draws_against_n=True``: the report then draws no ``*_scaling`` figure of
those criteria.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import xarray as xr

from ordercube.pipeline.errors import InputError
from ordercube.pipeline.report.figures import Figures
from ordercube.pipeline.reduce.select import (
    choice_per_trial, criterion_scores, decisions, failure_rate, select_k, selection_frequency, true_k,
)
from ordercube.pipeline.reduce.uncertainty import decision_uncertainty
from ordercube.pipeline.config.sweeps import Swept
from ordercube.tasks.criteria import Decision


@dataclass
class Reduced:
    """Every reducer a report reads, computed once from the cube and the decision rules."""

    scores: xr.Dataset
    decide: Mapping[str, Mapping[str, Any]] | None
    summary: xr.Dataset
    chosen: xr.Dataset
    choices: xr.Dataset
    frequency: xr.Dataset
    failures: xr.Dataset
    uncertainty: xr.Dataset
    truth: xr.DataArray
    rules: dict[str, Decision]  # every criterion's decision rule, ``decide`` applied
    # the criteria reduced from stored assignments, with their bootstrap (ordercube.pipeline.reduce.assignments)
    reduced: xr.Dataset = field(default_factory=xr.Dataset)
    # the smallest cluster of each k̂'s consensus partition (ordercube.pipeline.reduce.assignments.k_hat_clusters)
    clusters: xr.Dataset = field(default_factory=xr.Dataset)

    @classmethod
    def of(cls, cube: xr.Dataset, decide: Mapping[str, Mapping[str, Any]] | None = None, *,
           replicates: int | None = None) -> Reduced:
        """Every reducer of ``cube``; ``replicates``: the bootstrap's over resamples of the criteria reduced from
        stored assignments (default :data:`ordercube.pipeline.reduce.assignments.REPLICATES`)."""
        from ordercube.pipeline.reduce.assignments import REPLICATES, k_hat_clusters, reduced_scores, scores_and_summary

        reduced = reduced_scores(cube, decide, replicates=REPLICATES if replicates is None else replicates)
        scores, summary = scores_and_summary(criterion_scores(cube), reduced)
        chosen, choices = select_k(scores, decide), choice_per_trial(scores, decide)
        return cls(scores=scores, decide=decide, summary=summary, chosen=chosen, choices=choices,
                   frequency=selection_frequency(choices, scores["k"]), failures=failure_rate(scores, decide),
                   uncertainty=decision_uncertainty(scores, decide, chosen=chosen, choices=choices, reduced=reduced),
                   truth=true_k(scores), rules=decisions(scores, decide), reduced=reduced,
                   clusters=k_hat_clusters(cube, chosen))


@dataclass(frozen=True)
class SectionContext:
    """What a section reads, and where it writes.

    Attributes
    ----------
    cube : xarray.Dataset
        The cube as stored.
    reduced : Reduced
        Its reducers: per-trial ``scores``, ``summary`` (mean, SE, median, quartiles per k), k̂ (``chosen``),
        the trials' own choices, selection frequencies, failure rates, the true k, the decision rules and the
        ``decide`` overrides they were re-decided with.
    table : pandas.DataFrame
        The k̂ table (``selection.csv``), one row per (dataset, n, method, criterion).
    figures : ordercube.pipeline.report.figures.Figures
        The report's figures: ``figures.draw(stem, function, *args)`` asks for one.
    published : mapping
        The paper's values the report shows (``{DATASET/METHOD: {CRITERION: value}}``), whose data and method
        are the cube's (:mod:`ordercube.pipeline.report.published`).
    sweeps : mapping of str to ordercube.pipeline.config.sweeps.Swept
        The cube's datasets made by a swept generator parameter.
    criteria : tuple of str
        The cube's criteria that declared this section, in registry order (empty for a general section).
    """

    cube: xr.Dataset
    reduced: Reduced
    table: pd.DataFrame
    figures: Figures
    published: Mapping[str, Mapping[str, Any]]
    sweeps: Mapping[str, Swept]
    criteria: tuple[str, ...] = ()

    @property
    def folder(self) -> Path:
        """The report's folder, where a section writes its files."""
        return self.figures.folder


@dataclass(frozen=True)
class SectionResult:
    """What the report shows of a section beyond the files and figures it wrote.

    Attributes
    ----------
    title : str
        Its heading in ``index.html`` and in what ``ordercube report`` prints.
    text : str
        Printed by ``ordercube report`` under the title (nothing printed when empty).
    html : str
        An HTML fragment shown in ``index.html`` under the title (nothing shown when empty); the section
        escapes what it writes into it. Its figures are placeholders of
        :meth:`ordercube.pipeline.report.figures.Figures.shown`, drawn and put in place after every section ran.
    attrs : mapping
        Added to the returned table's ``attrs`` (its tables, for the API's callers).
    published_rows : sequence of sequences
        Rows added to ``published.csv``, in :data:`ordercube.pipeline.report.published.COLUMNS` order: the paper's values
        this section computes the cube's side of.
    """

    title: str = ""
    text: str = ""
    html: str = ""
    attrs: Mapping[str, Any] = field(default_factory=dict)
    published_rows: Sequence[Sequence[Any]] = ()


SectionFunction = Callable[[SectionContext], SectionResult | None]


@dataclass(frozen=True)
class Section:
    """A section function with what the report must know of it before calling it.

    ``draws_against_n``: the section draws its criteria's values against n itself, so the report draws no
    ``*_scaling`` figure of them.
    """

    render: SectionFunction
    draws_against_n: bool = False

    def __call__(self, context: SectionContext) -> SectionResult | None:
        return self.render(context)


HOW = "name a function section(context) -> SectionResult as 'package.module:function'"


def load_section(path: str, owner: str) -> Section:
    """The section at the import path ``path`` (``"package.module:function"``: a function or a :class:`Section`),
    declared by ``owner``; :class:`~ordercube.pipeline.errors.InputError` naming ``owner`` (``"criterion 'mtc_matrix'"``), the
    path and what is wrong with it when it names none."""
    module_name, colon, attribute = path.partition(":") if isinstance(path, str) else ("", "", "")
    if not (module_name and colon and attribute):
        raise InputError(f"{owner}: report section {path!r} is not an import path; {HOW}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise InputError(f"{owner}: report section {path!r}: module {module_name!r} cannot be imported ({error}); "
                         f"{HOW}, of an installed package") from None
    function = getattr(module, attribute, None)
    if isinstance(function, Section):
        return function
    if not callable(function):
        raise InputError(f"{owner}: report section {path!r}: module {module_name!r} has no function {attribute!r}; {HOW}")
    return Section(function)


def declared_sections(criteria: Iterable[str], registry: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    """Each section path declared by one of ``criteria`` (names; those not in ``registry`` declare none) with the
    criteria that declare it, both in ``registry``'s order."""
    present = set(criteria)
    sections: dict[str, list[str]] = {}
    for name, criterion in registry.items():
        if name in present:
            for path in criterion.report_sections:
                sections.setdefault(path, []).append(name)
    return {path: tuple(names) for path, names in sections.items()}
