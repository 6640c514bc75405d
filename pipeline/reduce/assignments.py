"""Criteria computed from stored assignments: reductions of a cube's clusterings, after the sweep, never refitted.

A method that stores assignments (a config's ``methods[i].assignments``) keeps, for every cell, which cluster each
item of the dataset went to in each of the trial's clusterings (its "parts": the two halves, or the data and its
reference sets; the cube's ``assignment`` variable, -1 where an item was not drawn). A criterion with ``reduce``
(``Criterion.reads == "assignments"``: PAC, the consensus CDF's area, ...) is a function of those clusterings
(:class:`ordercube.tasks.criteria.base.Clusterings`), so :func:`reduced_scores` computes it from the cube alone: adding
such a criterion to the config of a cube that stored assignments computes nothing new, and its options are
decision-time settings (``ordercube report --decide pac.window=0.05,0.95``).

Its Monte Carlo error is the bootstrap over resamples: every replicate draws the cube's trials with replacement
(:func:`ordercube.tasks.consensus.bootstrap_weights`; a trial's clusterings go together) and computes the criterion
again with each row weighted by how often its trial was drawn (Efron & Tibshirani 1993, ch. 13, the percentile
interval, moved by the replicates' median bias: :func:`ordercube.pipeline.reduce.uncertainty.centred_interval`).
The replicates' own choices of k give the share that chose k̂: how settled k̂ is on these resamples.

Which methods stored assignments is read from the cube (its group attribute ``ordercube_part_roles`` and the
``assignment`` variable), never from a scheme's name.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import xarray as xr
from numpy.typing import NDArray

from ordercube.pipeline.reduce.uncertainty import LEVEL, centred_interval
from ordercube.tasks.cell import Status
from ordercube.tasks.criteria import CRITERIA, Criterion
from ordercube.tasks.criteria.base import Clusterings
from ordercube.tasks.params import ParamError, show
from ordercube.tasks.seeding import Purpose, label_id, stream

ASSIGNMENT = "assignment"
ITEMS = "items"
ITEM_CLASS, ITEM_NAME, CLASSES = "item_class", "item_name", "classes"  # each item's known class and name
PART_ROLES = "ordercube_part_roles"
GROUP_DIMS = ("dataset", "n", "model")
#: The bootstrap's replicates unless told otherwise (``ordercube report --replicates``). Measured on this project's
#: 2-core machine (shared, load 50-70): the consensus criteria of 1,000 resamples at k = 2..10 (CDF area, PAC,
#: cluster consensus; batched) cost 1.6 s of CPU for 100 replicates of 62 items (Alon's colon tissues) and
#: about 0.6 s per replicate for 796 items (Spellman's yeast genes); 100 is the fewest for the 2.5% and 97.5%
#: percentiles to rest on more than two replicates each.
REPLICATES = 100
MAX_REPLICATES = 100_000
#: The key of the bootstrap's stream among a group's reduction streams (a criterion's own draws use others).
BOOTSTRAP_KEY = (0, 0)


def part_roles(cube: xr.Dataset) -> dict[str, list[str]]:
    """Each method that stored assignments → the role (``"data"`` or ``"reference"``) of each of its parts."""
    if ASSIGNMENT not in cube.variables:
        return {}
    return {str(model): list(roles) for model, roles in json.loads(str(cube.attrs.get(PART_ROLES, "{}"))).items()}


def _raw_config(cube: xr.Dataset) -> dict[str, Any]:
    return dict(json.loads(str(cube.attrs.get("ordercube_config", "{}"))))


def _seed(cube: xr.Dataset) -> int:
    raw = _raw_config(cube)
    return int(raw["seed"]) if "seed" in raw else int(cube.attrs["ordercube_seed"])


def reduce_criteria(cube: xr.Dataset) -> dict[str, dict[str, dict[str, Any]]]:
    """Method → {criterion: the options its config gave} for every criterion with ``reduce`` of every method of the
    cube's stored config that stored assignments, in the config's order."""
    stored = part_roles(cube)
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for method in _raw_config(cube).get("methods", []):
        if not isinstance(method, Mapping) or str(method.get("name")) not in stored:
            continue
        found: dict[str, dict[str, Any]] = {}
        for entry in method.get("criteria") or []:
            name, given = next(iter(entry.items())) if isinstance(entry, Mapping) else (entry, {})
            criterion = CRITERIA.get(str(name))
            if criterion is not None and criterion.reduce is not None:
                found[str(name)] = dict(given or {})
        if found:
            out[str(method["name"])] = found
    return out


def reduced_names(cube: xr.Dataset) -> list[str]:
    """The criteria with ``reduce`` of the cube's config (of a method that stored assignments), in order."""
    return list(dict.fromkeys(name for found in reduce_criteria(cube).values() for name in found))


def _number(text: str) -> Any:
    """A number written on the command line as the number; other text as it is."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _option_value(value: Any) -> Any:
    if isinstance(value, str):
        return _number(value.strip())
    if isinstance(value, (list, tuple)):
        return tuple(_option_value(part) for part in value)
    return value


def option_changes(decide: Mapping[str, Mapping[str, Any]] | None) -> dict[str, dict[str, Any]]:
    """The fields of ``decide`` that name an option of a criterion with ``reduce`` (not a decision field), as
    values: text that reads as a number becomes the number, a pair ("0.05,0.95" split by the CLI) a tuple."""
    out: dict[str, dict[str, Any]] = {}
    if not isinstance(decide, Mapping):  # None, or malformed: refused where the decisions are read
        return out
    for name, fields in decide.items():
        criterion = CRITERIA.get(str(name))
        if criterion is None or criterion.reduce is None or not isinstance(fields, Mapping):
            continue
        for field, value in fields.items():
            if field in criterion.options:
                out.setdefault(str(name), {})[str(field)] = _option_value(value)
    return out


def resolved_options(cube: xr.Dataset, decide: Mapping[str, Mapping[str, Any]] | None = None
                     ) -> dict[str, dict[str, dict[str, Any]]]:
    """Method → {criterion: its options}: the config's, with those ``decide`` gives in their place.

    A ``ValueError`` names the criterion, the option, the value given and what it accepts (``pac.window =
    (0.9, 0.1): ...; e.g. --decide pac.window=0.05,0.95``).
    """
    changes = option_changes(decide)
    ks = tuple(int(k) for k in cube["k"].values)
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for method, found in reduce_criteria(cube).items():
        out[method] = {name: _resolve(CRITERIA[name], {**given, **changes.get(name, {})}, changes.get(name, {}), ks)
                       for name, given in found.items()}
    return out


def _resolve(criterion: Criterion, options: dict[str, Any], given: Mapping[str, Any], ks: tuple[int, ...]) -> dict[str, Any]:
    try:
        resolved = criterion.resolve(options)
        if criterion.check is not None:
            criterion.check(resolved, ks)
    except ParamError as error:
        value = given.get(error.name, options.get(error.name))
        default = criterion.options.get(error.name)
        example = ",".join(map(str, default)) if isinstance(default, (list, tuple)) else default
        fix = error.fix or f"e.g. --decide {criterion.name}.{error.name}={example} (its default)"
        raise ValueError(f"{criterion.name}.{error.name} = {show(value)}: {error}; {fix}") from None
    return resolved


def clusterings_of(cube: xr.Dataset, dataset: str, n: int, model: str) -> Clusterings:
    """Every stored clustering of ``(dataset, n, model)``, per k, for a criterion's ``reduce``.

    ``ks``: the k's with an ok cell. Rows: the trials whose cells are ok at every one of those k's (a criterion
    compares the k's on the same resamples, as the per-trial reducers read the common prefix of an adaptive cube),
    in trial order, each trial's parts of role ``"data"`` in their order; ``references[k][b]``: each trial's b-th
    part of role ``"reference"``. ``rng(key)`` is ``stream(seed, BOOTSTRAP, dataset_id, n, method_id, *key)``, the
    ids made as the sweep makes them (:func:`ordercube.pipeline.run.graph.block_spec`).
    """
    roles = part_roles(cube).get(model)
    if roles is None:
        raise ValueError(f"model {model!r} stored no assignments in this cube; those of {sorted(part_roles(cube))} did")
    at = {"dataset": dataset, "n": n, "model": model}
    ok = (cube["status"].sel(at).transpose("k", "trial").values == Status.OK)
    ks_all = cube["k"].values.astype(np.int64)
    with_cells = ok.any(axis=1)
    common = ok[with_cells].all(axis=0) if with_cells.any() else np.zeros(ok.shape[1], dtype=bool)
    items = int(cube[ITEMS].sel(dataset=dataset))
    if items < 0:  # a dataset without fixed items (fresh synthetic draws) stores none
        with_cells[:] = False
        common[:] = False
        items = 0
    stored = cube[ASSIGNMENT].sel(at).transpose("k", "trial", "part", "item")
    stored = stored.isel(k=np.flatnonzero(with_cells), trial=np.flatnonzero(common), item=slice(0, items))
    labels = np.asarray(stored.values, dtype=np.int16)  # (ks, trials, parts, items)
    data_parts = [i for i, role in enumerate(roles) if role == "data"]
    reference_parts = [i for i, role in enumerate(roles) if role == "reference"]
    trials = cube["trial"].values[common].astype(np.int64)
    ks = tuple(int(k) for k in ks_all[with_cells])
    data = {k: labels[i][:, data_parts].reshape(-1, items) for i, k in enumerate(ks)}
    references = {k: np.moveaxis(labels[i][:, reference_parts], 1, 0) for i, k in enumerate(ks)} if reference_parts else {}
    ids = (label_id(dataset), int(n), label_id(model))
    seed = _seed(cube)

    def rng(key: tuple[int, ...]) -> np.random.Generator:
        return stream(seed, Purpose.BOOTSTRAP, *ids, *key)

    return Clusterings(ks=ks, data=data, references=references, trials=np.repeat(trials, len(data_parts)),
                       items=items, rng=rng)


@dataclass(frozen=True)
class KnownItems:
    """What a dataset's file says of its items: their known classes and their names.

    Attributes
    ----------
    classes : tuple of str
        The class names, by code (empty when the dataset has no labels).
    labels : ndarray of shape (N,)
        Each item's class code into ``classes``; -1 where unknown (every item when the dataset has no labels).
    names : tuple of str
        Each item's name (its row name in the file); empty when the data names no rows.
    """

    classes: tuple[str, ...]
    labels: NDArray[np.int64]
    names: tuple[str, ...]


def known_items(cube: xr.Dataset, dataset: str) -> KnownItems | None:
    """The known classes and names of ``dataset``'s items as the cube stores them (its ``item_class`` and
    ``item_name``); None when it stores neither for it (no labels and no row names, or a cube made before them)."""
    if ITEM_CLASS not in cube.variables or ITEM_NAME not in cube.variables or ITEMS not in cube.variables:
        return None
    items = int(cube[ITEMS].sel(dataset=dataset))
    if items <= 0:
        return None
    classes = tuple(map(str, dict(cube[ITEM_CLASS].attrs.get(CLASSES, {})).get(dataset, ())))
    labels = np.asarray(cube[ITEM_CLASS].sel(dataset=dataset).values[:items], dtype=np.int64)
    names = tuple(str(name) for name in np.asarray(cube[ITEM_NAME].sel(dataset=dataset).values[:items]))
    if not classes:
        labels = np.full(items, -1, dtype=np.int64)
    if not any(names):
        names = ()
    return KnownItems(classes=classes, labels=labels, names=names) if classes or names else None


def _curves(criterion: Criterion, clusterings: Clusterings, options: Mapping[str, Any]) -> dict[str, NDArray[np.float64]]:
    values = criterion.reduce(clusterings, **options)  # type: ignore[misc]
    return {output: np.asarray(values[output], dtype=np.float64) for output in criterion.variables}


def group_reduction(clusterings: Clusterings, criteria: Mapping[str, Mapping[str, Any]], replicates: int
                    ) -> dict[str, tuple[NDArray[np.float64], NDArray[np.float64]]]:
    """Output → (its curve over ``clusterings.ks``, the bootstrap replicates' curves (replicates, len(ks))) of
    every criterion in ``criteria`` (name → options); the replicates weight every row by the times its trial was
    drawn, the same draws for every criterion (paired).

    The curve and the replicates go by batches (:func:`ordercube.tasks.criteria.consensus.batched`, as many
    weightings as :func:`~ordercube.tasks.criteria.consensus.batch_size` allows): the consensus summaries of a
    batch's weightings are computed at once, the same values as one by one."""
    from ordercube.tasks.criteria.consensus import batch_size, batched

    weightings: list[NDArray[np.float64] | None] = [None]  # the curve: every resample once
    if replicates:
        from ordercube.tasks.consensus import bootstrap_weights

        weights = bootstrap_weights(clusterings.trials, clusterings.rng(BOOTSTRAP_KEY), replicates)
        weightings += list(weights)  # these very rows: a batch's summaries are found by their identity
    point: dict[str, NDArray[np.float64]] = {}
    boot: dict[str, NDArray[np.float64]] = {}
    size = batch_size(clusterings, len(weightings))
    for start in range(0, len(weightings), size):
        batch = weightings[start:start + size]
        with batched(clusterings, batch, criteria):
            for row, weights in enumerate(batch, start):
                if row == 0:
                    point = {output: curve for name, options in criteria.items()
                             for output, curve in _curves(CRITERIA[name], clusterings, options).items()}
                    boot = {output: np.full((replicates, len(clusterings.ks)), np.nan) for output in point}
                    continue
                replicate = replace(clusterings, weights=weights)  # every criterion on it: they share its summaries
                for name, options in criteria.items():
                    for output, curve in _curves(CRITERIA[name], replicate, options).items():
                        boot[output][row - 1] = curve
    return {output: (point[output], boot[output]) for output in point}


def reduced_scores(cube: xr.Dataset, decide: Mapping[str, Mapping[str, Any]] | None = None, *,
                   replicates: int = REPLICATES, level: float = LEVEL) -> xr.Dataset:
    """Every criterion with ``reduce`` of the cube's config, computed from the stored assignments.

    Parameters
    ----------
    cube : xarray.Dataset
        A cube whose methods stored assignments (any other cube gives an empty Dataset).
    decide : mapping, optional
        ``{criterion: {field: value}}``: a field that names an option of a criterion with ``reduce`` replaces the
        config's (``{"pac": {"window": (0.05, 0.95)}}``); decision fields (``ties``) choose k̂ as everywhere.
    replicates : int
        Bootstrap replicates over resamples (0: none, and no intervals).
    level : float
        The intervals' level.

    Returns
    -------
    xarray.Dataset
        Over (dataset, n, model, k), NaN where not computed: ``{output}`` (the criterion on every resample),
        ``{output}_lo``, ``{output}_hi`` (the percentile interval of the bootstrap over resamples, moved by the
        replicates' median bias: :func:`~ordercube.pipeline.reduce.uncertainty.centred_interval`) and
        ``{output}_boot`` (the replicates, dim ``replicate``); over (dataset, n, model): ``{criterion}_k_hat_share``
        (the share of replicates whose own choice is the k̂ of the whole curve) and ``{criterion}_trials`` (the
        resamples read).
    """
    options = resolved_options(cube, decide)
    if not options:
        return xr.Dataset()
    names = list(dict.fromkeys(name for found in options.values() for name in found))
    outputs = [output for name in names for output in CRITERIA[name].variables]
    coords = {dim: cube[dim].values for dim in (*GROUP_DIMS, "k")}
    point, boot, trials = _reduce_groups(cube, options, coords, outputs, replicates)
    dims = (*GROUP_DIMS, "k")
    variables: dict[str, Any] = {}
    for output in outputs:
        variables[output] = (dims, point[output])
        variables[f"{output}_boot"] = ((*dims, "replicate"), boot[output])
        low, high = centred_interval(point[output], boot[output], level)
        variables[f"{output}_lo"], variables[f"{output}_hi"] = (dims, low), (dims, high)
    for name in names:  # the resamples read, where the criterion has a value
        held = np.isfinite(point[CRITERIA[name].variables[0]]).any(axis=-1)
        variables[f"{name}_trials"] = (GROUP_DIMS, np.where(held, trials, 0))
    out = xr.Dataset(variables, coords={**coords, "replicate": np.arange(replicates)},
                     attrs={"level": level, "replicates": replicates})
    return out.assign(_k_hat_shares(out, names, decide))


def _reduce_groups(cube: xr.Dataset, options: Mapping[str, Mapping[str, Mapping[str, Any]]], coords: Mapping[str, Any],
                   outputs: list[str], replicates: int
                   ) -> tuple[dict[str, NDArray[np.float64]], dict[str, NDArray[np.float64]], NDArray[np.int64]]:
    """Every output's curve and replicates over (dataset, n, model, k[, replicate]) and the resamples read per
    group, from the groups of the methods with reduced criteria (NaN and 0 elsewhere)."""
    shape = tuple(len(values) for values in coords.values())
    point = {output: np.full(shape, np.nan) for output in outputs}
    boot = {output: np.full((*shape, replicates), np.nan) for output in outputs}
    trials = np.zeros(shape[:3], dtype=np.int64)
    k_index = {int(k): i for i, k in enumerate(coords["k"])}
    for m, model in enumerate(coords["model"]):
        criteria = options.get(str(model), {})
        for d, dataset in enumerate(coords["dataset"] if criteria else []):
            for j, n in enumerate(coords["n"]):
                clusterings = clusterings_of(cube, str(dataset), int(n), str(model))
                if not clusterings.ks:
                    continue
                at = [k_index[k] for k in clusterings.ks]
                for output, (curve, replicated) in group_reduction(clusterings, criteria, replicates).items():
                    point[output][d, j, m, at] = curve
                    boot[output][d, j, m][at] = replicated.T
                trials[d, j, m] = np.unique(clusterings.trials).size
    return point, boot, trials


def _k_hat_shares(reduced: xr.Dataset, names: list[str], decide: Mapping[str, Mapping[str, Any]] | None
                  ) -> dict[str, xr.DataArray]:
    """``{criterion}_k_hat_share``: the share of the replicates (with a choice) whose own choice is the k̂ of the
    curve on every resample, by the criterion's rule with ``decide``'s fields; NaN without k̂."""
    from ordercube.pipeline.reduce.select import choose_on_curves, decisions_of

    own = {name: fields for name, fields in decide.items() if name in names} if isinstance(decide, Mapping) else None
    rules = decisions_of(names, own)
    out = {}
    for name in names:
        if rules[name].rule == "none":
            continue
        outputs = list(CRITERIA[name].variables)
        k_hat = choose_on_curves(reduced[outputs], name, rules[name])
        replicated = reduced[[f"{output}_boot" for output in outputs]].rename(
            {f"{output}_boot": output for output in outputs})
        choices = choose_on_curves(replicated, name, rules[name])
        chose = (choices >= 0).sum("replicate")
        share = ((choices == k_hat) & (k_hat >= 0)).sum("replicate") / chose.where(chose > 0)
        out[f"{name}_k_hat_share"] = share.where(k_hat >= 0)
    return out


def point_curves(reduced: xr.Dataset) -> xr.Dataset:
    """The criteria's curves of :func:`reduced_scores` alone (its outputs), to sit beside a cube's per-trial scores."""
    names = [output for name in reduced_criteria_in(reduced) for output in CRITERIA[name].variables]
    return reduced[names].drop_vars("replicate", errors="ignore")


def reduced_criteria_in(reduced: xr.Dataset) -> list[str]:
    """The criteria :func:`reduced_scores` computed (those with a ``{criterion}_trials`` variable)."""
    return [str(name).removesuffix("_trials") for name in reduced.data_vars
            if str(name).endswith("_trials") and str(name).removesuffix("_trials") in CRITERIA]


def scores_and_summary(scores: xr.Dataset, reduced: xr.Dataset) -> tuple[xr.Dataset, xr.Dataset]:
    """A cube's per-trial ``scores`` with the curves of ``reduced`` (:func:`reduced_scores`) beside them, and their
    summary (:func:`ordercube.pipeline.reduce.select.summarise`), where a reduced curve's standard error is its
    bootstrap's standard deviation and its trials the resamples it read."""
    from ordercube.pipeline.reduce.select import summarise, with_reduced

    scores = with_reduced(scores, point_curves(reduced))
    summary = summarise(scores)
    for name in reduced_criteria_in(reduced):
        for output in CRITERIA[name].variables:
            at = {dim: summary[dim].values for dim in reduced[output].dims}
            if reduced.sizes.get("replicate", 0) > 1:
                with np.errstate(all="ignore"), warnings.catch_warnings():
                    warnings.filterwarnings("ignore", "Degrees of freedom <= 0", RuntimeWarning)
                    summary[f"{output}_se"] = reduced[f"{output}_boot"].std("replicate", ddof=1).reindex(at)
            summary[f"{output}_trials"] = reduced[f"{name}_trials"].reindex(
                {dim: at[dim] for dim in GROUP_DIMS}).where(reduced[output].reindex(at).notnull(), 0)
    return scores, summary


FINAL_LINKAGE = "average"  # ConsensusClusterPlus's default finalLinkage (Wilkerson & Hayes 2010)


def final_linkage(cube: xr.Dataset, method: str) -> str:
    """The linkage of the consensus partition of ``method``: the ``linkage`` option its config gave a criterion
    reduced from its assignments (the criteria of the consensus partition's clusters), else
    :data:`FINAL_LINKAGE`."""
    for options in resolved_options(cube).get(method, {}).values():
        if "linkage" in options:
            return str(options["linkage"])
    return FINAL_LINKAGE


def k_hat_clusters(cube: xr.Dataset, chosen: xr.Dataset) -> xr.Dataset:
    """The size of the smallest cluster of each k̂'s consensus partition, where the method stored assignments.

    For every criterion of ``chosen`` (:func:`ordercube.pipeline.reduce.select.select_k`) and (dataset, n, model) whose
    method stored its clusterings, the consensus partition at k̂ (hierarchical clustering of 1 - the consensus matrix
    of the stored clusterings, with the method's final linkage: Monti et al. 2003, Sec. 3; the partition
    ``ordercube partition`` gives) of the items drawn. Returns ``{criterion}_smallest_cluster`` (its size; -1: not
    known, no stored clusterings or no k̂) and ``{criterion}_small_cluster`` (it holds at most
    :func:`ordercube.tasks.consensus.small_cluster_limit` items) over (dataset, n, model). Each k̂ of a group is
    partitioned once, whichever criteria chose it.
    """
    from ordercube.tasks.consensus import consensus_matrix, consensus_partition, small_cluster_limit

    if not chosen.data_vars:  # no criterion decides (each one's rule is "none"): no k̂ to partition
        return xr.Dataset()
    coords = {dim: chosen[dim].values for dim in GROUP_DIMS}
    shape = tuple(len(values) for values in coords.values())
    smallest = {name: np.full(shape, -1, dtype=np.int64) for name in map(str, chosen.data_vars)}
    small = {name: np.zeros(shape, dtype=bool) for name in smallest}
    stored = part_roles(cube)
    k_hats = {name: chosen[name].transpose(*GROUP_DIMS).values for name in smallest}
    for index in np.ndindex(shape):
        dataset, n, model = (values[i] for values, i in zip(coords.values(), index))
        if str(model) not in stored:
            continue
        ks = {name: int(k_hats[name][index]) for name in smallest}
        clusterings, sizes = None, {}
        for name, k in ks.items():
            if k < 2:
                continue
            if clusterings is None:
                clusterings = clusterings_of(cube, str(dataset), int(n), str(model))
            if k not in clusterings.ks:
                continue
            if k not in sizes:
                labels = np.asarray(clusterings.data[k])
                labels = labels[:, (labels >= 0).any(axis=0)]
                partition = consensus_partition(consensus_matrix(labels), k, final_linkage(cube, str(model)))
                counts = np.bincount(partition[partition >= 0])
                sizes[k] = (int(counts[counts > 0].min()), labels.shape[1])
            smallest[name][index] = sizes[k][0]
            small[name][index] = sizes[k][0] <= small_cluster_limit(sizes[k][1])
    variables = {f"{name}_{field}": (GROUP_DIMS, values[name]) for name in smallest
                 for field, values in (("smallest_cluster", smallest), ("small_cluster", small))}
    return xr.Dataset(variables, coords=coords)
