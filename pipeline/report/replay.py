"""Replaying the adaptive rule on a stored cube (its compute share and its null-race calibration): no recomputation.

For every group (dataset, n, method, criterion decided by "smallest", or Prediction Strength's threshold) of a
complete cube, the rule (:func:`ordercube.tasks.adaptive.race_by`) is raced over the trials in index order and over
``permutations`` random orders (the trials are exchangeable, so every order is a valid replay), and compared
with the fixed budget's k̂ (the cube's own rule on the means over all trials). Reported per group: the share of replays that end
on the fixed budget's k̂, the cells used against the fixed budget (mean and median), the stop reasons, and
the calibration on null races: each arm raced against an independently permuted copy of itself (a true tie,
so every *decided* stop is a false decision), with a one-sided 95% Clopper-Pearson upper bound on the rate.
The permutations come from the cube's seed (``Purpose.REPLAY``): the same table on every machine.

A criterion reduced from stored clusterings (PAC, the consensus CDF's area) has one curve over k, no per-trial
values: its groups (:class:`ReducedGroup`) replay the bootstrap rule (:func:`ordercube.tasks.adaptive.bootstrap_race`)
on the stored clusterings of each order's first r trials at each look, in index order (the live run's stops
exactly) and in at most ``REDUCED_ORDERS`` random orders: what the rule would have saved and whether k̂ would
have changed. Its reference set is the k's some bootstrap replicate of the full budget chooses; it has no null
races (no two arms are raced).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from ordercube.pipeline.reduce.select import DECISION_DIMS, deciding_rules, select_k
from ordercube.tasks.adaptive import (BOUNDED, REPLICATES, bootstrap_race, choice_on_means, doubling_looks, has_race,
                                      mean_and_radius, race, race_by, replicate_choices)
from ordercube.tasks.criteria import Decision
from ordercube.tasks.seeding import Purpose, label_id, stream


@dataclass(frozen=True)
class Setting:
    """The rule's parameters (as the config's ``adaptive:`` block gives them) and the replays per group."""

    delta: float = 0.05
    epsilon: float = 0.0
    r_min: int = 20
    permutations: int = 200
    mode: str = "t"  # or guarded, strict, hoeffding (ordercube.tasks.adaptive.RADII; the last an ablation only)
    replicates: int = REPLICATES  # the bootstrap over resamples at each look of a reduced criterion


def clopper_pearson_upper(failures: int, trials: int, level: float = 0.95) -> float:
    """The one-sided upper confidence bound of a binomial rate."""
    from scipy.special import betaincinv

    return 1.0 if failures >= trials else float(betaincinv(failures + 1, trials - failures, level))


def _null_rate(values: np.ndarray, looks: tuple[int, ...], setting: Setting, rng: np.random.Generator,
               ranges: np.ndarray | None) -> tuple[int, int]:
    """Decided stops among races of each arm against a permuted copy of itself (permutations per arm)."""
    false, races = 0, 0
    size = looks[-1]
    for arm in range(values.shape[1]):
        column = values[:, arm]
        if np.isnan(column).all():
            continue
        for _ in range(max(setting.permutations // values.shape[1], 1)):
            pair = np.column_stack([column[rng.permutation(size)], column[rng.permutation(size)]])
            pair_ranges = None if ranges is None else np.array([ranges[arm], ranges[arm]])
            false += race(pair, looks, delta=setting.delta, epsilon=0.0, mode=setting.mode,
                          ranges=pair_ranges).reason == "decided"
            races += 1
    return false, races


FIXED_BUDGETS = (5, 10, 20, 50, 100, 200, 500, 1000)  # the R grid of the fixed-budget accuracy curve


def fixed_budget_curve(values: np.ndarray, orders: list[np.ndarray], reference: int, rule: Decision) -> dict[int, float]:
    """For each fixed budget R of ``FIXED_BUDGETS`` below the group's trials (and the whole), the share of the trial
    orders whose first R trials choose column ``reference`` by ``rule`` on their means (the target: the full
    budget's choice; -1 where it chooses none)."""
    size = values.shape[0]
    budgets = [r for r in FIXED_BUDGETS if r < size] + [size]
    return {r: float(np.mean([choice_on_means(rule, values[order[:r]]) == reference for order in orders]))
            for r in budgets}


REFERENCE_LEVEL = 0.999  # a group whose full budget cannot separate its top arms at 99.9% is a near-tie


def reference_set(values: np.ndarray, fixed: int, rule: Decision, epsilon: float = 0.0,
                  level: float = REFERENCE_LEVEL) -> set[int]:
    """The arms (columns; -1: none) the full budget cannot rule out as a right answer of the rule (the near-ties;
    within ``epsilon`` of the best, the guarantee's G_eps), by two-sided Student-t intervals at ``level`` over every
    trial. Smallest mean: the full budget's choice ``fixed`` and every arm whose paired difference to it has an
    interval reaching ``epsilon``. Threshold (Prediction Strength): every arm whose mean's interval reaches
    threshold - epsilon while no larger arm's lies above threshold + epsilon (-1 if none lies above). More than
    one arm: a near-tie, where a stop on any of them is not an error."""
    if rule.rule == "largest_above":
        means, radius = mean_and_radius(values, 1 - level, "t", None)
        possible_above = means + radius >= rule.threshold - epsilon
        surely_above = means - radius >= rule.threshold + epsilon
        arms = {arm for arm in range(values.shape[1]) if possible_above[arm] and not surely_above[arm + 1:].any()}
        return arms | ({-1} if not surely_above.any() else set()) | {fixed}
    if fixed < 0:
        return set()
    means, radius = mean_and_radius(values - values[:, [fixed]], 1 - level, "t", None)
    return {fixed} | {int(arm) for arm in np.flatnonzero(means - radius <= epsilon)}


def replay_group(values: np.ndarray, ks: np.ndarray, fixed_k: int, setting: Setting, rng: np.random.Generator,
                 rule: Decision, ranges: np.ndarray | None = None, seconds: np.ndarray | None = None) -> dict[str, Any]:
    """The replay's summary for one group; ``values`` of shape (trials, len(ks)), decided by ``rule`` (smallest
    mean, or Prediction Strength's largest k above its threshold). ``fixed_curve``: the fixed budget's accuracy
    against the share of cells (:func:`fixed_budget_curve`), over the same orders. Null races (an arm against a
    copy of itself) only for the smallest-mean rule: a threshold rule compares no two arms. ``ranges``: each arm's
    values lie in [0, ranges[k]] (the bounded modes, strict and hoeffding). ``seconds``: each cell's compute
    seconds, as ``values``: the share of the fixed budget's compute the rule used (cells differ in cost).

    Errors: ``wrong_vs_fixed``, the confident stops (decided or settled) on another k than the full
    budget's; ``wrong``, those on a k outside the :func:`reference_set` (a near-tie's arms are all right), with its
    one-sided 95% Clopper-Pearson bound over the confident stops."""
    size = values.shape[0]
    looks = doubling_looks(min(setting.r_min, size), size)
    orders = [np.arange(size)] + [rng.permutation(size) for _ in range(setting.permutations)]
    ranges = ranges if setting.mode in BOUNDED else None
    outcomes = [race_by(rule, values[order], looks, delta=setting.delta, epsilon=setting.epsilon, mode=setting.mode,
                        ranges=ranges) for order in orders]
    budget = size * len(ks)
    cells = np.array([outcome.cells for outcome in outcomes]) / budget
    chosen = [int(ks[outcome.choice]) if outcome.choice >= 0 else -1 for outcome in outcomes]
    agree = np.mean([k == fixed_k for k in chosen])
    reference = int(np.flatnonzero(ks == fixed_k)[0]) if fixed_k in ks else -1
    plausible = reference_set(values, reference, rule, setting.epsilon)
    confident = [outcome for outcome in outcomes if outcome.reason != "unsettled"]
    wrong_vs_fixed = sum(outcome.choice != reference for outcome in confident)
    wrong = sum(outcome.choice not in plausible for outcome in confident)
    compute = np.nan
    if seconds is not None:
        used = [sum(seconds[order[:count], arm].sum() for arm, count in enumerate(outcome.trials))
                for order, outcome in zip(orders, outcomes)]
        compute = float(np.mean(used) / seconds.sum()) if seconds.sum() > 0 else np.nan
    curve = fixed_budget_curve(values, orders, reference, rule)
    reasons = pd.Series([outcome.reason for outcome in outcomes]).value_counts()
    false, races = _null_rate(values, looks, setting, rng, ranges) if rule.rule == "smallest" else (0, 0)
    in_order = outcomes[0]
    return {"fixed_k_hat": fixed_k, "in_order_k": chosen[0], "in_order_reason": in_order.reason,
            "in_order_stop": in_order.stop, "in_play": " ".join(str(ks[i]) for i in in_order.active),
            "agreement": float(agree), "reference": " ".join(str(ks[arm]) if arm >= 0 else "none" for arm in sorted(plausible)),
            "confident": len(confident), "wrong_vs_fixed": wrong_vs_fixed, "wrong": wrong,
            "wrong_upper": clopper_pearson_upper(wrong, len(confident)) if confident else np.nan,
            "cells_mean": float(cells.mean()), "cells_median": float(np.median(cells)),
            "compute_mean": compute,
            **{reason: int(reasons.get(reason, 0)) for reason in ("decided", "settled", "unsettled")},
            "null_races": races, "null_false_rate": false / races if races else np.nan,
            "null_false_upper": clopper_pearson_upper(false, races) if races else np.nan,
            "fixed_curve": " ".join(f"{r}:{share:.4g}" for r, share in curve.items())}


#: The most random orders replayed per group. Enough for any figure of the table: at B = 10,000 the agreement's
#: standard error is at most 0.005 and the Clopper-Pearson bound of zero wrong stops 3.0e-4; beyond it the time
#: and the orders held (B x trials integers per group) grow without adding a digit.
MAX_PERMUTATIONS = 10_000
CALIBRATION_PERMUTATIONS = 10  # the orders of the timed runs that estimate how long the chosen B takes
CALIBRATION_SECONDS = 2.0  # at most this long (past the first group) spent timing them


@dataclass(frozen=True)
class Group:
    """One replayed group: its labels, its complete trials' values (trials, k's with values) and what the rule needs."""

    dataset: str
    n: int
    method: str
    criterion: str
    values: np.ndarray
    ks: np.ndarray
    fixed_k: int
    rule: Decision
    ranges: np.ndarray | None
    cost: np.ndarray | None

    def rng(self, seed: int) -> np.random.Generator:
        return stream(seed, Purpose.REPLAY, label_id(self.dataset), self.n, label_id(self.method), label_id(self.criterion))

    @property
    def trials(self) -> int:
        return int(self.values.shape[0])

    def run(self, setting: Setting, seed: int) -> dict[str, Any]:
        return replay_group(self.values, self.ks, self.fixed_k, setting, self.rng(seed), self.rule, self.ranges, self.cost)


REDUCED_ORDERS = 20  # the most random orders a reduced criterion's group is replayed in (each look: B + 1 reductions)


@dataclass(frozen=True)
class ReducedGroup:
    """One replayed group of a criterion reduced from stored clusterings: the cube (in memory), its labels, the
    criterion's options and rule, the trials whose cells are ok at every k (in index order) and their seconds."""

    dataset: str
    n: int
    method: str
    criterion: str
    cube: xr.Dataset
    options: dict[str, Any]
    rule: Decision
    trial_ids: np.ndarray
    ks: np.ndarray
    cost: np.ndarray | None

    rng = Group.rng

    @property
    def trials(self) -> int:
        return len(self.trial_ids)

    def curves(self, trials: np.ndarray, replicates: int) -> tuple[np.ndarray, np.ndarray]:
        """The criterion's curve on the clusterings of ``trials`` (cube trial positions) and its ``replicates``
        bootstrap curves, over ``self.ks`` (NaN at a k without clusterings)."""
        from ordercube.pipeline.reduce.assignments import clusterings_of, group_reduction

        clusterings = clusterings_of(self.cube.isel(trial=np.sort(trials)), self.dataset, self.n, self.method)
        from ordercube.tasks.criteria import get_criterion

        output = get_criterion(self.criterion).decided_on
        curve, boot = group_reduction(clusterings, {self.criterion: self.options}, replicates)[output]
        at = [int(np.flatnonzero(self.ks == k)[0]) for k in clusterings.ks]
        full_curve, full_boot = np.full(len(self.ks), np.nan), np.full((replicates, len(self.ks)), np.nan)
        full_curve[at], full_boot[:, at] = curve, boot
        return full_curve, full_boot

    def run(self, setting: Setting, seed: int) -> dict[str, Any]:
        return replay_reduced(self, setting, self.rng(seed))


def replay_reduced(group: ReducedGroup, setting: Setting, rng: np.random.Generator) -> dict[str, Any]:
    """The replay's summary for one group of a reduced criterion (module docstring), with the columns of
    :func:`replay_group`: the bootstrap rule in index order (the trials as stored: the live run's looks) and in
    ``min(setting.permutations, REDUCED_ORDERS)`` random orders; ``orders``: how many were replayed."""
    positions = np.flatnonzero(np.isin(group.cube["trial"].values, group.trial_ids))
    size = len(positions)
    looks = doubling_looks(min(setting.r_min, size), size)
    orders = [positions] + [positions[rng.permutation(size)] for _ in range(min(setting.permutations, REDUCED_ORDERS))]
    full, boot = group.curves(positions, setting.replicates)
    reference = int(replicate_choices(full[None, :], group.rule)[0])
    fixed_k = int(group.ks[reference]) if reference >= 0 else -1
    plausible = {reference} | {int(c) for c in replicate_choices(boot, group.rule)}
    outcomes = [bootstrap_race(lambda r, order=order: group.curves(order[:r], setting.replicates), looks, group.rule,
                               delta=setting.delta, epsilon=setting.epsilon) for order in orders]
    cells = np.array([outcome.stop / size for outcome in outcomes])
    chosen = [int(group.ks[outcome.choice]) if outcome.choice >= 0 else -1 for outcome in outcomes]
    confident = [outcome for outcome in outcomes if outcome.reason != "unsettled"]
    wrong_vs_fixed = sum(outcome.choice != reference for outcome in confident)
    wrong = sum(outcome.choice not in plausible for outcome in confident)
    compute = np.nan
    if group.cost is not None and group.cost.sum() > 0:  # cost: (cube trials, ks) seconds
        compute = float(np.mean([group.cost[order[:outcome.stop]].sum() for order, outcome in zip(orders, outcomes)])
                        / group.cost[positions].sum())
    budgets = [r for r in FIXED_BUDGETS if r < size] + [size]
    curve = {r: float(np.mean([replicate_choices(group.curves(order[:r], 0)[0][None, :], group.rule)[0] == reference
                               for order in orders])) for r in budgets}
    reasons = pd.Series([outcome.reason for outcome in outcomes]).value_counts()
    in_order = outcomes[0]
    return {"fixed_k_hat": fixed_k, "in_order_k": chosen[0], "in_order_reason": in_order.reason,
            "in_order_stop": in_order.stop, "in_order_share": in_order.share,
            "in_play": " ".join(str(group.ks[i]) for i in in_order.active),
            "agreement": float(np.mean([k == fixed_k for k in chosen])),
            "reference": " ".join(str(group.ks[arm]) if arm >= 0 else "none" for arm in sorted(plausible)),
            "confident": len(confident), "wrong_vs_fixed": wrong_vs_fixed, "wrong": wrong,
            "wrong_upper": clopper_pearson_upper(wrong, len(confident)) if confident else np.nan,
            "cells_mean": float(cells.mean()), "cells_median": float(np.median(cells)), "compute_mean": compute,
            **{reason: int(reasons.get(reason, 0)) for reason in ("decided", "settled", "unsettled")},
            "null_races": 0, "null_false_rate": np.nan, "null_false_upper": np.nan,
            "fixed_curve": " ".join(f"{r}:{share:.4g}" for r, share in curve.items()), "orders": len(orders)}


def reduced_groups(cube: xr.Dataset, setting: Setting, *, criteria: list[str] | None = None) -> list[ReducedGroup]:
    """The groups of the criteria reduced from stored clusterings of ``cube`` (in memory; ``criteria``: a subset)
    that have a bootstrap rule (``ordercube.tasks.adaptive.has_curve_race``), per dataset, n and method with two
    trials whose cells are ok at every k and two k's at least. None for the bounded modes (strict, hoeffding):
    a curve has no per-trial values to bound."""
    from ordercube.pipeline.reduce.assignments import clusterings_of, resolved_options
    from ordercube.tasks.adaptive import has_curve_race
    from ordercube.tasks.criteria import get_criterion

    if setting.mode in BOUNDED:
        return []
    groups = []
    for model, found in resolved_options(cube).items():
        for name, options in found.items():
            rule = get_criterion(name).decision
            if not has_curve_race(rule) or (criteria is not None and name not in criteria):
                continue
            for dataset in map(str, cube["dataset"].values):
                for n in map(int, cube["n"].values):
                    clusterings = clusterings_of(cube, dataset, n, model)
                    trial_ids = np.unique(clusterings.trials)
                    if len(trial_ids) < 2 or len(clusterings.ks) < 2:
                        continue
                    ks = np.array(clusterings.ks)
                    cost = cube["seconds"].sel(dataset=dataset, n=n, model=model, k=ks).transpose("trial", "k").values
                    groups.append(ReducedGroup(dataset, n, model, name, cube, options, rule, trial_ids, ks, cost))
    return groups


def sequential_criteria(scores: xr.Dataset, mode: str) -> list[str]:
    """The criteria of ``scores`` the adaptive rule can replay in ``mode``: those with a sequential rule (decided by
    the smallest mean, or prediction_strength's threshold), and for the bounded modes only those in [0, 1]."""
    from ordercube.pipeline.config.adaptive import UNIT_RANGE

    return [name for name, rule in deciding_rules(scores, None).items()
            if has_race(rule) and (mode not in BOUNDED or name in UNIT_RANGE)]


def replay_groups(scores: xr.Dataset, setting: Setting, *, criteria: list[str] | None = None,
                  baseline: xr.DataArray | None = None, seconds: xr.DataArray | None = None) -> list[Group]:
    """The groups :func:`replay` replays: per criterion with a sequential rule (``criteria``: a subset; the bounded
    modes, strict and hoeffding: only those with values in [0, 1], ``ordercube.pipeline.config.adaptive.UNIT_RANGE``, Lange's score in
    [0, 1 / ``baseline``]), dataset, n and method with two complete trials and two k's at least."""
    from ordercube.pipeline.config.adaptive import UNIT_RANGE, score_ranges

    rules = {name: rule for name, rule in deciding_rules(scores, None).items()
             if has_race(rule) and (criteria is None or name in criteria)
             and (setting.mode not in BOUNDED or name in UNIT_RANGE)}
    chosen = select_k(scores)
    ks = scores["k"].values
    groups = []
    for name, rule in rules.items():
        values = scores[name].transpose(*DECISION_DIMS, "trial", "k")
        for dataset in map(str, scores["dataset"].values):
            for n in map(int, scores["n"].values):
                for model in map(str, scores["model"].values):
                    group = values.sel(dataset=dataset, n=n, model=model).values
                    defined = ~np.isnan(group).all(axis=0)  # the k's the criterion has values at (lange: k >= 2)
                    group = group[:, defined]
                    complete = ~np.isnan(group).any(axis=1)
                    if complete.sum() < 2 or group.shape[1] < 2:
                        continue
                    ranges = score_ranges(name, None if baseline is None else baseline.sel(n=n).values[defined],
                                          int(defined.sum()))
                    cost = None if seconds is None else seconds.sel(dataset=dataset, n=n, model=model).transpose(
                        "trial", "k").sel(trial=scores["trial"], k=scores["k"]).values[:, defined][complete]
                    groups.append(Group(dataset, n, model, name, group[complete], ks[defined],
                                        int(chosen[name].sel(dataset=dataset, n=n, model=model)), rule, ranges, cost))
    return groups


def estimate_seconds(groups: list[Group | ReducedGroup], setting: Setting, seed: int) -> tuple[float, int]:
    """How long replaying ``groups`` with ``setting`` computes (CPU seconds of this process): groups replayed
    with ``CALIBRATION_PERMUTATIONS`` random orders (spread over the list, as many as ``CALIBRATION_SECONDS``
    allow; at least one), each one's time scaled by the orders it replays (B + 1, and about B null races; a
    reduced criterion's group at most ``REDUCED_ORDERS`` + 1) and by the groups not timed. Returns (the
    estimate, the groups timed); the tables are unchanged (each group's random orders come from its own
    stream)."""
    calibration = replace(setting, permutations=min(setting.permutations, CALIBRATION_PERMUTATIONS))
    step = max(len(groups) // 8, 1)
    order = [*range(0, len(groups), step), *(i for i in range(len(groups)) if i % step)]
    spent, scaled, timed = 0.0, 0.0, 0
    for index in order:
        started = time.process_time()  # this process's CPU time: a busy machine's other work is not counted
        groups[index].run(calibration, seed)
        took = time.process_time() - started
        spent, timed = spent + took, timed + 1
        scaled += took * _orders(groups[index], setting) / _orders(groups[index], calibration)
        if spent > CALIBRATION_SECONDS:
            break
    return scaled * len(groups) / timed, timed


def _orders(group: Group | ReducedGroup, setting: Setting) -> int:
    """The trial orders ``group`` is replayed in with ``setting``."""
    return 1 + (min(setting.permutations, REDUCED_ORDERS) if isinstance(group, ReducedGroup) else setting.permutations)


def replay(scores: xr.Dataset, setting: Setting, *, seed: int, criteria: list[str] | None = None,
           baseline: xr.DataArray | None = None, seconds: xr.DataArray | None = None,
           groups: list[Group | ReducedGroup] | None = None) -> pd.DataFrame:
    """The replay of every group of :func:`replay_groups` (or of ``groups``, when they were built already).
    ``seconds``: the cube's compute seconds per cell (the share of compute used)."""
    if groups is None:
        groups = replay_groups(scores, setting, criteria=criteria, baseline=baseline, seconds=seconds)
    return pd.DataFrame([{"dataset": g.dataset, "n": g.n, "method": g.method, "criterion": g.criterion,
                          "trials": g.trials, **g.run(setting, seed)} for g in groups])


def plot_replay(table: pd.DataFrame, path: Path) -> None:
    """Accuracy against cells, one panel per (criterion, dataset): for every n, the fixed budget's
    curve (the share of trial orders whose first R trials choose the full budget's k̂, against R / the budget) and
    the adaptive rule's point (its agreement against its mean share of cells). A point on or above its curve: the
    same accuracy for fewer cells."""
    import matplotlib

    matplotlib.use("Agg")
    from ordercube.pipeline.report.figures import grid, log_axis, save, title

    keys = list(dict.fromkeys(zip(table["criterion"], table["dataset"])))
    columns = min(3, len(keys))
    figure, axes = grid((len(keys) + columns - 1) // columns, columns)
    for ax, (criterion, dataset) in zip(axes.ravel(), keys):
        rows = table[(table["criterion"] == criterion) & (table["dataset"] == dataset)]
        for (_, row), colour in zip(rows.iterrows(), matplotlib.colormaps["viridis"](np.linspace(0, 0.85, len(rows)))):
            points = [tuple(map(float, item.split(":"))) for item in row["fixed_curve"].split()]
            trials = np.array([r for r, _ in points]) / row["trials"]
            ax.plot(trials, [share for _, share in points], "-o", color=colour, markersize=3, label=f"n = {row['n']}")
            ax.plot(row["cells_mean"], row["agreement"], "*", color=colour, markersize=11, markeredgecolor="black",
                    markeredgewidth=0.5)
        log_axis(ax, "x")
        ax.set_ylim(-0.03, 1.03)
        ax.set_xlabel("cells / fixed budget")
        ax.set_ylabel("same k̂ as the full budget")
        title(ax, f"{criterion}: {dataset} (star: adaptive)")
        ax.legend(fontsize=7, loc="lower right")
    for ax in axes.ravel()[len(keys):]:
        ax.set_visible(False)
    save(figure, path)


def reduced_sequential(cube: xr.Dataset, mode: str) -> tuple[list[str], list[str]]:
    """The criteria reduced from ``cube``'s stored clusterings, and those of them the adaptive rule can replay in
    ``mode`` (a bootstrap rule on their curve; none in the bounded modes)."""
    from ordercube.pipeline.reduce.assignments import reduced_names
    from ordercube.tasks.adaptive import has_curve_race
    from ordercube.tasks.criteria import get_criterion

    names = reduced_names(cube)
    return names, [name for name in names if mode not in BOUNDED and has_curve_race(get_criterion(name).decision)]
