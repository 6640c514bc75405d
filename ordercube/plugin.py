"""What a plug-in imports: every name an installed package needs to add a model family to ordercube.

A plug-in is a package with an entry point in the group ``ordercube.plugins``; importing it (or calling the
function the entry point names) registers what it adds. It imports from this module only::

    from ordercube.plugin import BaseAlgorithm, Criterion, Decision, TrialOutcome, register_algorithm, ...

The names, by what they are for:

**Registries.** :func:`register_objects` (a kind of objects: what a dataset's rows are, and how messages name
it), :func:`register_dataset`, :func:`register_algorithm`, :func:`register_predictor` and
:func:`register_criterion` add a record under its name, :func:`register_scheme` a resampling scheme of
clusterers (a :class:`Scheme`: how a trial draws its items and fits them, what it gives the criteria, its
parameters and parts), and :func:`register_reader` a file format (a :class:`Reader`: the suffixes and first
bytes it recognises, its ``open(file, **options) -> TableRead``); each refuses a name already taken, naming the
plug-in that took it. :func:`get_synthetic`, :func:`get_algorithm`, :func:`get_predictor`,
:func:`get_criterion` and :func:`get_reader` look a registered record up by name (a trial runner finds its
dataset's sampler and its criteria's computations this way), and :func:`get_scheme` a scheme; an unknown name
rescans the installed plug-ins once, then raises an error that lists the known ones and the plug-ins loaded.

**Records.** :class:`ObjectKind` (the words for a kind of objects); :class:`SyntheticDataset` (a dataset
kind: its sampler, default parameters, true order, parameter check and capabilities ``objects`` and
``provides``) and :class:`ParameterError`, which its check raises; :class:`BaseAlgorithm`, the base of every
algorithm (its parameters and their ranges, what it takes, needs and gives, which orders are feasible), and
the built-in kinds a plug-in may also register: :class:`Clusterer` (a function ``cluster(X, k, rng,
**params) -> labels``, run in the clustering trial with every clustering criterion and predictor),
:class:`Classifier` and :class:`MatrixModel`; :class:`Criterion` (its computations, what it reads and needs,
its options, its report sections) and :class:`Decision` (how k̂ follows from its values per k);
:class:`Reader` and :class:`TableRead` (what a reader returns: the values, the rows' and columns' names, the
other columns of the file, the format).

**The trial contract.** An algorithm's ``trial_runner(spec, source)`` returns a :data:`TrialRunner`,
``compute_trial(trial) -> TrialOutcome``. :class:`BlockSpec` is one block of cells (a dataset, n and method,
its ks and trials); :class:`TrialOutcome` is one trial's values per cube variable for every k, with the ks
that failed or are infeasible and their reasons; :func:`scattered` lays out values computed at some ks along
all of them. A clustering criterion reads :class:`TrialFits` (both halves clustered with k clusters; its
``evaluate``) or :class:`TrialSample` (a trial's whole sample, every k at once; its ``evaluate_trial``).

**Seeding.** Every random number comes from :func:`stream` ``(root_seed, purpose, *ids)``, a generator
addressed by a :class:`Purpose` and the cell's coordinates (dataset and method ids are :func:`label_id` of
their names), so that a cube is the same bits whatever the workers, and a trial's draw (``Purpose.DRAW``) is
shared by every method: comparisons are paired. Streams follow NumPy's ``SeedSequence`` with a spawn key.

**Parameters.** :func:`integer`, :func:`number` and :func:`choice` build the :class:`Param` ranges an
algorithm's parameters and a criterion's options declare beside their defaults; a config's values are checked
against them when it is read. A ``check`` of several parameters together raises :class:`ParamError`.

**Report sections.** A criterion's ``report_sections`` name functions ``section(context) -> SectionResult``:
a :class:`SectionContext` gives the cube, its reducers, the k̂ table, the figures and the report's folder;
the :class:`SectionResult` is what the report shows of the section (title, text, HTML fragment);
:class:`Section` wraps a section that draws its criteria against n itself. These three are imported on first
use (they need xarray and pandas); the rest of this module is cheap to import.

**The conformance kit.** :func:`check_plugin` ``(name)`` runs a registered algorithm, criterion or dataset through
the smallest study it fits, in this process and in a worker process, and checks what every record must hold: every
cell ok, its outputs produced and decided on, the same bits in a worker process, other values under another seed,
and a declared cost that grows as the measured does. It raises :class:`PluginCheckError` naming each failed check,
or returns a :class:`PluginReport` (imported on first use, as the section types).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from ordercube.tasks.algorithms import get_algorithm
from ordercube.tasks.algorithms.kinds import BaseAlgorithm, Classifier, Clusterer, MatrixModel
from ordercube.tasks.capabilities import ObjectKind
from ordercube.tasks.criteria import Criterion, Decision, TrialFits, TrialSample, get_criterion
from ordercube.tasks.datasets import ParameterError, SyntheticDataset, get_synthetic
from ordercube.tasks.params import Param, ParamError, choice, integer, number
from ordercube.tasks.predictors import get_predictor
from ordercube.pipeline.data import formats as _formats  # noqa: F401  (ordercube's own readers registered first)
from ordercube.tasks.readers import Reader, TableRead, get_reader
from ordercube.tasks.registry import (
    register_algorithm, register_criterion, register_dataset, register_objects, register_predictor, register_reader,
    register_scheme,
)
from ordercube.tasks.schemes import Scheme, get_scheme
from ordercube.tasks.seeding import Purpose, label_id, stream
from ordercube.tasks.trial import BlockSpec, TrialOutcome, TrialRunner, scattered

if TYPE_CHECKING:
    from ordercube.conformance import PluginCheckError, PluginReport, check_plugin
    from ordercube.pipeline.report.section import Section, SectionContext, SectionResult

# Resolved on first use (PEP 562): the report's section types import xarray and pandas, which a plug-in's
# registration (run in every worker) does not need.
_LAZY = {
    "Section": "ordercube.pipeline.report.section",
    "SectionContext": "ordercube.pipeline.report.section",
    "SectionResult": "ordercube.pipeline.report.section",
    "check_plugin": "ordercube.conformance",
    "PluginReport": "ordercube.conformance",
    "PluginCheckError": "ordercube.conformance",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'ordercube.plugin' has no attribute {name!r}")
    return getattr(import_module(_LAZY[name]), name)


__all__ = [
    # registries
    "register_objects", "register_dataset", "register_algorithm", "register_predictor", "register_criterion",
    "register_scheme", "register_reader", "get_synthetic", "get_algorithm", "get_predictor", "get_criterion",
    "get_scheme", "get_reader",
    # records
    "ObjectKind", "SyntheticDataset", "ParameterError", "BaseAlgorithm", "Clusterer", "Classifier", "MatrixModel",
    "Criterion", "Decision", "Scheme", "Reader", "TableRead",
    # the trial contract
    "BlockSpec", "TrialOutcome", "TrialRunner", "scattered", "TrialFits", "TrialSample",
    # seeding
    "stream", "Purpose", "label_id",
    # parameters
    "integer", "number", "choice", "Param", "ParamError",
    # report sections
    "SectionContext", "SectionResult", "Section",
    # the conformance kit
    "check_plugin", "PluginReport", "PluginCheckError",
]


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
