"""Replaying the adaptive rule on a stored cube (spec §5.3, E1 and E4b): no recomputation.

For every group (dataset, n, method, criterion decided by "smallest") of a complete cube, PSE-t
(:mod:`tasks.adaptive`) is raced over the trials in index order and over ``permutations`` random orders (the
trials are exchangeable, so every order is a valid replay), and compared with the fixed budget's k̂ (the
argmin of the mean over all trials, the cube's own rule). Reported per group: the share of replays that end
on the fixed budget's k̂, the cells used against the fixed budget (mean and median), the stop reasons, and
the calibration on null races: each arm raced against an independently permuted copy of itself (a true tie,
so every *decided* stop is a false decision), with a one-sided 95% Clopper-Pearson upper bound on the rate.
The permutations come from the cube's seed (``Purpose.REPLAY``): the same table on every machine.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import xarray as xr

from pipeline.reduce import DECISION_DIMS, deciding_rules, select_k
from tasks.adaptive import doubling_looks, race
from tasks.seeding import Purpose, label_id, stream


@dataclass(frozen=True)
class Setting:
    """The rule's parameters (the config's future ``adaptive:`` block)."""

    delta: float = 0.05
    epsilon: float = 0.0
    r_min: int = 20
    permutations: int = 200


def clopper_pearson_upper(failures: int, trials: int, level: float = 0.95) -> float:
    """The one-sided upper confidence bound of a binomial rate."""
    from scipy.special import betaincinv

    return 1.0 if failures >= trials else float(betaincinv(failures + 1, trials - failures, level))


def _null_rate(values: np.ndarray, looks: tuple[int, ...], setting: Setting, rng: np.random.Generator) -> tuple[int, int]:
    """Decided stops among races of each arm against a permuted copy of itself (permutations per arm)."""
    false, races = 0, 0
    size = looks[-1]
    for arm in range(values.shape[1]):
        column = values[:, arm]
        if np.isnan(column).all():
            continue
        for _ in range(max(setting.permutations // values.shape[1], 1)):
            pair = np.column_stack([column[rng.permutation(size)], column[rng.permutation(size)]])
            false += race(pair, looks, delta=setting.delta, epsilon=0.0).reason == "decided"
            races += 1
    return false, races


def replay_group(values: np.ndarray, ks: np.ndarray, fixed_k: int, setting: Setting, rng: np.random.Generator,
                 ties: str) -> dict[str, float]:
    """The replay's summary for one group; ``values`` of shape (trials, len(ks)), smaller is better."""
    size = values.shape[0]
    looks = doubling_looks(min(setting.r_min, size), size)
    outcomes = [race(values, looks, delta=setting.delta, epsilon=setting.epsilon, ties=ties)]
    outcomes += [race(values[rng.permutation(size)], looks, delta=setting.delta, epsilon=setting.epsilon, ties=ties)
                 for _ in range(setting.permutations)]
    budget = size * len(ks)
    cells = np.array([outcome.cells for outcome in outcomes]) / budget
    agree = np.mean([ks[outcome.choice] == fixed_k for outcome in outcomes])
    reasons = pd.Series([outcome.reason for outcome in outcomes]).value_counts()
    false, races = _null_rate(values, looks, setting, rng)
    in_order = outcomes[0]
    return {"fixed_k_hat": fixed_k, "in_order_k": int(ks[in_order.choice]), "in_order_reason": in_order.reason,
            "in_order_stop": in_order.stop, "in_play": " ".join(str(ks[i]) for i in in_order.active),
            "agreement": float(agree), "cells_mean": float(cells.mean()), "cells_median": float(np.median(cells)),
            **{reason: int(reasons.get(reason, 0)) for reason in ("decided", "settled", "unsettled")},
            "null_races": races, "null_false_rate": false / races if races else np.nan,
            "null_false_upper": clopper_pearson_upper(false, races) if races else np.nan}


def replay(scores: xr.Dataset, setting: Setting, *, seed: int, criteria: list[str] | None = None) -> pd.DataFrame:
    """The replay of every group of the criteria decided by "smallest" (``criteria``: a subset)."""
    rules = {name: rule for name, rule in deciding_rules(scores, None).items()
             if rule.rule == "smallest" and rule.aggregate == "mean" and (criteria is None or name in criteria)}
    chosen = select_k(scores)
    ks = scores["k"].values
    rows = []
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
                    rng = stream(seed, Purpose.REPLAY, label_id(dataset), n, label_id(model), label_id(name))
                    summary = replay_group(group[complete], ks[defined],
                                           int(chosen[name].sel(dataset=dataset, n=n, model=model)), setting, rng,
                                           rule.ties)
                    rows.append({"dataset": dataset, "n": n, "method": model, "criterion": name,
                                 "trials": int(complete.sum()), **summary})
    return pd.DataFrame(rows)
