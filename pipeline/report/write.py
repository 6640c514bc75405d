"""Reports: the k̂ table (printed and as ``selection.csv``) with how sure each k̂ is, and the figures, all
from the reducers.

Figures per criterion (only those that mean something for it): ``*_vs_k`` (mean ± 1 SE against k per n, k̂
starred, Prediction Strength's threshold, Gap's s_k bars), ``*_scaling`` (with two sample sizes or more:
the mean per k against n; sqrt(n) x the mean for the instabilities that shrink like 1/sqrt(n); the failure
rate ± 1 SE where a true k is known) and ``*_selection_frequency`` (k x n: how often trials chose each k); their
values in ``curves.csv`` (:mod:`ordercube.pipeline.report.values`) and ``selection.csv`` (k̂, the failure rate and
its SE).
Then the sections the cube's criteria declare (:mod:`ordercube.pipeline.report.section`: their own tables, figures and
text), and those of any model family (the choices against a swept generator parameter).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import xarray as xr

from ordercube.pipeline.report.figures import (
    COLOUR_BAR_MARGIN, Figures, Helper, colour_bar, grid, log_axis, panels, say, title, within_noise_band,
)
from ordercube.pipeline.files.outputs import write_csv
from ordercube.pipeline.cube.grid import DIMS, Coords, planned_mask
from ordercube.pipeline.reduce.select import DECISION_DIMS, criteria_of, sqrt_n_scaled
from ordercube.pipeline.reduce.uncertainty import FIELDS, K_SET, LEVEL
from ordercube.pipeline.reduce.within_noise import rule_words, set_words
from ordercube.pipeline.report.labels import label_of, reference_lines
from ordercube.pipeline.report.within_noise import SHOWN_FLAGS, cluster_columns, within_noise_lines
from ordercube.pipeline.report.published import PUBLISHED_CSV, published_in, published_rows
from ordercube.pipeline.report.section import Reduced, Section, SectionContext, SectionResult, declared_sections, load_section
from ordercube.pipeline.report.values import CURVES_CSV, curves_frame, rows_of, stacked
from ordercube.pipeline.cube.owner import count_planned
from ordercube.pipeline.config.sweeps import swept
from ordercube.tasks.criteria import CRITERIA, Decision, is_reduced

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


def _planned(cube: xr.Dataset) -> np.ndarray:
    """Which cells of the cube its plan holds (the rest of the cube's box is never computed)."""
    coords = Coords(**{dim: tuple(cube[dim].values.tolist()) for dim in DIMS})
    return planned_mask(json.loads(cube.attrs["ordercube_plan"]), coords)


def status_counts(cube: xr.Dataset) -> dict[str, int]:
    """Planned cells by status: the integer keys ``total, ok, failed, infeasible, crashed, pending``."""
    return count_planned(cube["status"].values, _planned(cube))


# What each status other than ok means for the report: why the cell holds no value.
MISSING_MEANINGS = {
    "failed": "the fit or a criterion raised an error (reason stored; --retry-failed recomputes)",
    "infeasible": "k too large for the half (fewer than two points per cluster, or a rank above the matrix's)",
    "crashed": "its worker process died on it, every time (reason stored; --retry-failed recomputes)",
    "pending": "not computed yet (an interrupted or extended run: resume it)",
    "skipped": "not needed by the adaptive rule (the reason names the look; a run with adaptive off or more resamples "
               "fills it)",
}


def missing_cells(cube: xr.Dataset) -> pd.DataFrame:
    """The planned cells without a value, counted per (dataset, n, method, k, status), with one stored reason.

    Every reducer leaves them out of its means and counts; this says which they are and why.
    """
    from ordercube.tasks.cell import Status

    status = cube["status"].values
    missing = _planned(cube) & (status != Status.OK) & (status != Status.SKIPPED)  # skipped: adaptive_groups
    if not missing.any():
        return pd.DataFrame(columns=["dataset", "n", "method", "k", "status", "cells", "reason"])
    dims = cube["status"].dims
    index = dict(zip(dims, np.nonzero(missing)))
    # one row per (dataset, n, method, k, status), found without a Python loop over cells (10^7-cell cubes), with the
    # reason of its first cell in storage order: only those cells' reasons are read
    named = ("dataset", "n", "model", "k")
    keys = np.stack([*(index[dim] for dim in named), status[missing]], axis=1)
    groups, first, counts = np.unique(keys, axis=0, return_index=True, return_counts=True)
    at = {dim: xr.DataArray(positions[first], dims="row") for dim, positions in index.items()}
    reasons = cube["reason"].isel(at).values if "reason" in cube else np.full(len(first), "", dtype=object)
    labels = {dim: cube[dim].values[groups[:, j]] for j, dim in enumerate(named)}
    table = pd.DataFrame({"dataset": [str(v) for v in labels["dataset"]], "n": [int(v) for v in labels["n"]],
                          "method": [str(v) for v in labels["model"]], "k": [int(v) for v in labels["k"]],
                          "status": [Status(int(code)).name.lower() for code in groups[:, -1]],
                          "cells": [int(c) for c in counts], "reason": [str(reason or "") for reason in reasons]})
    return table.sort_values(["dataset", "n", "method", "k", "status"], ignore_index=True)


ADAPTIVE_COLUMNS = ["dataset", "n", "method", "criterion", "reason", "k_hat", "in_play", "r_stop", "cells", "budget",
                    "share", "mode", "delta", "epsilon", "k_hat_share", "level", "score_at_k_hat", "score_low",
                    "score_high"]


def adaptive_groups(cube: xr.Dataset) -> pd.DataFrame:
    """The decision record of every adaptive group (ordercube.pipeline.run.rounds), one row per criterion: its stop reason, k̂,
    the k's it could not tell apart, the look it stopped at, the group's cells against the fixed budget, and the
    rule's mode, delta and epsilon; a criterion reduced from stored clusterings also the share of the bootstrap's
    replicates choosing k̂ at the stop, the level it had to reach, its value at k̂ and that value's bootstrap
    percentile interval (NaN for the others)."""
    records = json.loads(str(cube.attrs.get("ordercube_adaptive", "{}")))
    rows = [{"dataset": record["dataset"], "n": record["n"], "method": record["method"], "criterion": name,
             "reason": race["reason"], "k_hat": race["k_hat"], "in_play": " ".join(map(str, race["in_play"])),
             "r_stop": race["r_stop"], "cells": record["cells"], "budget": record["budget"],
             "share": record["cells"] / record["budget"], "mode": record.get("mode", "t"), "delta": record["delta"],
             "epsilon": record["epsilon"], **_bootstrap_columns(race)}
            for record in records.values() for name, race in record["criteria"].items()]
    table = pd.DataFrame(rows, columns=ADAPTIVE_COLUMNS)
    return table.sort_values(["dataset", "n", "method", "criterion"], ignore_index=True)


def _bootstrap_columns(race: Mapping[str, Any]) -> dict[str, float]:
    """A reduced criterion's bootstrap at its stop (ordercube.pipeline.run.rounds records it): k̂'s share, the level,
    its value at k̂ and that value's percentile interval; NaN for a criterion raced on per-trial values."""
    if "k_hat_share" not in race:
        return {}
    at = race["k"].index(race["k_hat"]) if race["k_hat"] in race["k"] else None
    value = {name: np.nan if at is None or race[name][at] is None else float(race[name][at]) for name in ("curve", "lo", "hi")}
    return {"k_hat_share": race["k_hat_share"], "level": race["level"], "score_at_k_hat": value["curve"],
            "score_low": value["lo"], "score_high": value["hi"]}


# selection.csv's columns after (dataset, n, method, criterion, k_hat): reduce_uncertainty's fields renamed
UNCERTAINTY_COLUMNS = {"frequency": "k_hat_frequency", "frequency_low": "k_hat_frequency_low",
                       "frequency_high": "k_hat_frequency_high", "score": "score_at_k_hat"}


def selection_table(cube: xr.Dataset, decide: Mapping[str, Mapping[str, Any]] | None = None) -> pd.DataFrame:
    """One row per (dataset, n, method, criterion) with values: k̂, how sure it is, the true k, the failure rate.

    The uncertainty columns are ``ordercube.pipeline.reduce.uncertainty``'s fields: ``k_hat_frequency`` (with its
    bootstrap interval ``_low``, ``_high``), ``score_at_k_hat`` and ``score_se``, ``runner_up`` and
    ``difference`` (with ``_low``, ``_high``), and the flags ``at_grid_edge``, ``not_separated``, ``few_trials``.
    """
    return table_of(Reduced.of(cube, decide))


def table_of(reduced: Reduced) -> pd.DataFrame:
    scores, summary = reduced.scores, reduced.summary
    agreement = summary["agreement_mean"] if "agreement_mean" in summary else None
    frames = []
    for criterion in map(str, reduced.chosen.data_vars):
        k_hat = reduced.chosen[criterion]
        columns = {"k_hat": k_hat, "k_set": set_words(reduced.uncertainty, criterion)}
        for field in FIELDS:
            if field != "none_in_set":  # said by k_set
                columns[UNCERTAINTY_COLUMNS.get(field, field)] = reduced.uncertainty[f"{criterion}_{field}"]
        columns |= cluster_columns(reduced.clusters, criterion, k_hat)
        if criterion in reduced.failures:
            trials = scores[criterion].notnull().any("k").sum("trial")
            failures = reduced.failures[criterion]
            columns |= {"true_k": reduced.truth, "failure_rate": failures,
                        "failure_rate_se": np.sqrt(failures * (1 - failures) / trials.where(trials > 0)), "trials": trials}
        else:  # a curve reduced from stored assignments: no trial chose a k; the resamples it read
            columns |= {"true_k": reduced.truth, "failure_rate": xr.full_like(k_hat, np.nan, dtype=float),
                        "failure_rate_se": xr.full_like(k_hat, np.nan, dtype=float),
                        "trials": reduced.summary[f"{criterion}_trials"].max("k")}
        if agreement is not None:  # the known classes matched by the solution at k̂
            columns["agreement_at_k_hat"] = agreement.where(agreement["k"] == k_hat).max("k", skipna=True)
        # the cube's true_k coordinate travels along every variable: the column keeps it once
        frames.append(rows_of(columns, DECISION_DIMS, ("criterion", criterion), lambda frame: frame["trials"] > 0))
    if not frames:
        return pd.DataFrame()
    table = stacked(frames)
    table.insert(table.columns.get_loc("k_set") + 1, "rule",
                 [rule_words(reduced.rules[name]) for name in table["criterion"]])
    last = ("true_k", "failure_rate", "failure_rate_se", "trials", "agreement_at_k_hat")
    return table[[c for c in table.columns if c not in last] + [c for c in last if c in table.columns]]


FLAG_MEANINGS = {
    "at_grid_edge": "k̂ is at an edge of the grid beyond which its rule could have chosen (the largest k with a value; "
                    "the smallest, where the criterion is defined below it, except for the largest k above a "
                    "threshold): the curve may go on; widen k",
    "not_separated": f"the {LEVEL:.0%} interval of the difference to the runner-up contains 0: the data do not tell "
                     "k̂ from it; more resamples or a larger n",
    "runner_up_better": "the runner-up scores better than k̂ beyond noise: the rule chose k̂ for another reason (the Gap "
                        "statistic's standard-error rule, Clest's tests, a threshold)",
    "few_trials": "fewer than 10 trials with a value: every interval is rough",
    "within_noise": f"the rule cannot tell k̂ from the other k's of 'within noise' given the Monte Carlo error ({LEVEL:.0%} "
                    "intervals of the trials or of the bootstrap over resamples): another seed may choose any of them; "
                    "k̂ is the rule's choice among them (column rule; a line per row below); more resamples narrow the set",
    "tied": "a k ties with k̂ exactly (equal values up to rounding): the tie rule, not the data, chose between them",
    "small_cluster": "k̂'s consensus partition holds a cluster of at most max(2 items, 2% of the items): an outlier "
                     "split, not a group; 'ordercube partition' shows its items",
}


NOT_COMPUTABLE = "n/a"
# Why the share of trials choosing k̂ has no interval (shown n/a), by what the row's own numbers say.
SHARE_MEANINGS = {
    "all": "share 1 [n/a]: every trial with a choice chose k̂; a bootstrap of a share of 1 has no width, so no "
           "interval is given",
    "none": "share 0 [n/a]: no trial's own choice was k̂ (the rule read the mean curve; the trials chose other k); a "
            "bootstrap of a share of 0 has no width, so no interval is given",
    "replicates": "share [n/a] of a criterion computed from stored assignments: the share of the bootstrap replicates "
                  "over resamples whose curve chooses k̂, itself the measure of how settled k̂ is; no interval is given "
                  "around it",
}
DIFFERENCE_MEANING = ("difference [n/a]: one trial, or the same value in every trial (e.g. Prediction Strength 1 at "
                      "k = 2): a t interval needs a spread, so none is given; the value is exact for these trials, not "
                      "certain")
NO_CHOICE = "none"  # how a k̂ of -1 (no k chosen) is printed


def share_kind(criterion: str, share: float, low: float) -> str:
    """Which of :data:`SHARE_MEANINGS` explains a row's share shown without an interval, from its own numbers;
    empty when it has an interval (or no share)."""
    if np.isnan(share) or np.isfinite(low):
        return ""
    if criterion in CRITERIA and is_reduced(criterion):
        return "replicates"
    return "all" if share == 1 else "none" if share == 0 else ""


def no_choice_reason(criterion: str, decision: Decision | None) -> str:
    """Why ``criterion`` chose no k (a k̂ of -1, printed ``none``), from its rule."""
    owner = CRITERIA.get(criterion)
    if owner is not None and owner.no_choice:
        return owner.no_choice
    if decision is not None and decision.threshold is not None:
        side = "fell below" if decision.rule == "first_below" else "reached"
        return f"no k's value {side} the threshold {float(decision.threshold):g}"
    return "no k of the grid has a value for it"


def flag_notes(table: pd.DataFrame, rules: Mapping[str, Decision] | None = None) -> list[str]:
    """One line per flag raised somewhere in ``table`` (its name, how many rows, what it means); one per kind of
    share shown as n/a, each counting the rows whose numbers it describes; one for the differences shown as n/a;
    one per criterion that chose no k (``none``), saying why (``rules``: the decisions, default each criterion's)."""
    notes = [f"{flag} ({int(table[flag].sum())} of {len(table)} rows): {meaning}"
             for flag, meaning in FLAG_MEANINGS.items() if flag in table and bool(table[flag].any())]
    notes += within_noise_lines(table)
    if "k_hat_frequency" in table:
        kinds = [share_kind(row.criterion, row.k_hat_frequency, row.k_hat_frequency_low) for row in table.itertuples()]
        notes += [f"{meaning} ({kinds.count(kind)} of {len(table)} rows)" for kind, meaning in SHARE_MEANINGS.items()
                  if kind in kinds]
    if "difference" in table:
        count = int((table["difference"].notna() & table["difference_low"].isna()).sum())
        notes += [f"{DIFFERENCE_MEANING} ({count} of {len(table)} rows)"] if count else []
    if "k_hat" in table:
        for criterion in dict.fromkeys(table.loc[table["k_hat"] < 0, "criterion"]):
            rows = int(((table["k_hat"] < 0) & (table["criterion"] == criterion)).sum())
            decision = (rules or {}).get(criterion) or (CRITERIA[criterion].decision if criterion in CRITERIA else None)
            notes.append(f"{NO_CHOICE} ({criterion}, {rows} of {len(table)} rows): the rule chose no k: "
                         f"{no_choice_reason(criterion, decision)}")
    return notes


def printable(table: pd.DataFrame) -> pd.DataFrame:
    """``selection_table``'s rows as the CLI prints them: intervals in brackets, the flags by name."""
    def interval(value: float, low: float, high: float) -> str:
        if np.isnan(value):
            return "-"
        if np.isfinite(low) and abs(value) < 1e-9 * max(abs(low), abs(high)):
            value = 0.0  # a mean of paired differences that cancel, up to rounding (6.9e-19)
        return f"{value:.3g} [{low:.3g}, {high:.3g}]" if np.isfinite(low) else f"{value:.3g} [{NOT_COMPUTABLE}]"

    rows = []
    for row in table.itertuples():
        shown = {"dataset": row.dataset, "n": row.n, "method": row.method, "criterion": row.criterion,
                 "k̂": row.k_hat if row.k_hat >= 0 else NO_CHOICE,
                 "within noise": row.k_set if row.within_noise else "-",
                 f"share [{LEVEL:.0%}]": interval(row.k_hat_frequency, row.k_hat_frequency_low, row.k_hat_frequency_high),
                 "score ± SE": "-" if np.isnan(row.score_at_k_hat) else f"{row.score_at_k_hat:.3g} ± {row.score_se:.2g}",
                 "runner-up": row.runner_up if row.runner_up >= 0 else "-",
                 f"difference [{LEVEL:.0%}]": interval(row.difference, row.difference_low, row.difference_high),
                 "flags": ",".join(flag for flag in SHOWN_FLAGS if getattr(row, flag)) or "-",
                 "true k": row.true_k if row.true_k >= 0 else "-",
                 "failure": "-" if np.isnan(row.failure_rate) else f"{row.failure_rate:.2f}"}
        if "agreement_at_k_hat" in table.columns:
            shown["agreement"] = "-" if np.isnan(row.agreement_at_k_hat) else f"{row.agreement_at_k_hat:.2f}"
        rows.append(shown)
    return pd.DataFrame(rows)
def _with_values(data: xr.DataArray) -> list[tuple[str, str]]:
    """The (dataset, model) pairs with a value somewhere in ``data``."""
    present = data.notnull().any([dim for dim in data.dims if dim not in ("dataset", "model")])
    return [(str(d), str(m)) for d in data["dataset"].values for m in data["model"].values
            if bool(present.sel(dataset=d, model=m))]


def plot_curves_vs_k(summary: xr.Dataset, criterion: str, chosen: xr.DataArray | None, decision: Decision | None,
                     within: xr.DataArray | None = None) -> Figure:
    """Mean ± 1 SE of the variable ``criterion`` against k for every (dataset, method), one line per n; k̂ starred.

    The y label and the reference lines are the variable's (:func:`label_of`, :func:`reference_lines`): the
    threshold of a rule that reads this curve (Prediction Strength's), none for another output of the criterion
    (``consensus_area``'s areas A(k), whose rule reads Delta(k)). The Gap statistic gets bars of its mean s_k (the
    spread its rule uses) instead of the band. ``within`` (dims dataset, n, model, k): the k's that cannot be told
    apart from k̂, shaded in the line's colour where there are several.
    """
    mean, standard_error = summary[f"{criterion}_mean"], summary[f"{criterion}_se"]
    pairs = _with_values(mean)
    figure, axes = panels(len(pairs))
    for ax, (dataset, model) in zip(axes, pairs):
        for n in summary["n"].values:
            at = {"dataset": dataset, "model": model, "n": n}
            curve = mean.sel(at)
            if int(curve.notnull().sum()) == 0:
                continue
            ks = curve["k"].values
            line, = ax.plot(ks, curve, marker="o", ms=3, label=f"n = {n}")
            if criterion == "gap" and "gap_sd_mean" in summary:
                ax.errorbar(ks, curve, yerr=summary["gap_sd_mean"].sel(at), fmt="none", ecolor=line.get_color(), capsize=2)
            else:
                se = standard_error.sel(at)
                ax.fill_between(ks, curve - se, curve + se, color=line.get_color(), alpha=0.2, lw=0)
            k_hat = int(chosen.sel(at)) if chosen is not None else -1
            if within is not None:
                within_noise_band(ax, ks[within.sel(at).values], color=line.get_color(),
                                  label=f"within noise of k̂, n = {n}")
            if k_hat in ks and not np.isnan(float(curve.sel(k=k_hat))):
                ax.plot([k_hat], [float(curve.sel(k=k_hat))], "*", ms=12, color=line.get_color(), mec="black", mew=0.7)
        for value, name in reference_lines(criterion, decision).items():
            ax.axhline(value, color="grey", ls="--", lw=0.9, label=name)
        ax.set_gid(criterion)  # the variable the panel plots
        title(ax, f"{dataset} / {model}")
        ax.set_xlabel("k (star: k̂)" if chosen is not None else "k")
        ax.set_ylabel(label_of(criterion), fontsize=8)
    if pairs:
        axes[0].legend(fontsize=7)
    return figure


NO_TRUE_K = "no true k known for this dataset:\nfailure rates need labels or 'true_k: K'"


def _draw_vs_n(ax: Axes, curve: xr.DataArray, *, ylabel: str, log: bool, errors: xr.DataArray | None = None) -> None:
    """One panel: ``curve`` against n (log axis with the grid's n as ticks), one line per k when it has k.

    With ``errors`` the curve is a fraction drawn with ± error bars; the y range holds every bar (from 0,
    and up to 0.5 at least, so that a few failures do not fill the panel).
    """
    ns = curve["n"].values
    per_k = "k" in curve.dims
    for k in (curve["k"].values if per_k else [None]):
        y = curve.sel(k=k) if per_k else curve
        if int(y.notnull().sum()):
            ax.plot(ns, y, marker="o", ms=3, label=f"k = {k}" if per_k else None)
    if errors is not None:
        ax.errorbar(ns, curve, yerr=errors, fmt="none", capsize=2, color="black", lw=0.8)
        top = float((curve + errors.fillna(0)).max())
        bottom = float((curve - errors.fillna(0)).min())
        ax.set_ylim(min(0.0, bottom) - 0.02, max(0.5, top) * 1.05)
    log_axis(ax, "x", ticks=ns)
    if log:
        log_axis(ax, "y")
    ax.set_xlabel("n")
    ax.set_ylabel(ylabel, fontsize=8)


def plot_scaling(mean: xr.DataArray, scaled: xr.DataArray | None, failures: xr.DataArray | None,
                 errors: xr.DataArray | None, truth: xr.DataArray, criterion: str) -> Figure:
    """Shamir & Tishby's (2007) Figures 1 and 2 as a row per (dataset, method): the mean per k against n (log-log where the
    values are positive); sqrt(n) x the mean (``scaled``: flat where the score shrinks like 1/sqrt(n)); the
    failure rate ± 1 binomial SE (``failures``, where some dataset has a true k)."""
    pairs = _with_values(mean)
    log = bool((mean.fillna(1.0) > 0).all())  # Gap and BIC values can be negative: linear axes then
    columns = 1 + (scaled is not None) + (failures is not None)
    figure, axes = grid(len(pairs), columns)
    for row, (dataset, model) in zip(axes, pairs):
        at = {"dataset": dataset, "model": model}
        _draw_vs_n(row[0], mean.sel(at), ylabel=f"mean of\n{label_of(criterion)}", log=log)
        if scaled is not None:
            _draw_vs_n(row[1], scaled.sel(at), ylabel="sqrt(n) x mean", log=log)
        if failures is not None:
            ax = row[-1]
            if int(truth.sel(dataset=dataset)) < 0:
                say(ax, NO_TRUE_K)
            else:
                _draw_vs_n(ax, failures.sel(at), ylabel="failure rate (true k not chosen)\n± 1 SE", log=False,
                           errors=errors.sel(at) if errors is not None else None)
        for ax in row:
            title(ax, f"{dataset} / {model}")
    if len(mean["k"]) > 1:
        axes[0][0].legend(fontsize=6, ncol=2, loc="best", framealpha=0.6)
    return figure


def plot_selection_frequency(frequency: xr.DataArray, chosen: xr.DataArray, truth: xr.DataArray) -> Figure:
    """How often trials chose each k, as a k x n heat map for every (dataset, method); k̂ circled, true k dashed."""
    pairs = _with_values(frequency)
    figure, axes = panels(len(pairs), right=COLOUR_BAR_MARGIN)
    image = None
    for ax, (dataset, model) in zip(axes, pairs):
        shares = frequency.sel(dataset=dataset, model=model).transpose("k", "n")
        ns, ks = shares["n"].values, shares["k"].values
        image = ax.imshow(shares.values, origin="lower", aspect="auto", vmin=0, vmax=1, cmap="viridis")
        k_hat = chosen.sel(dataset=dataset, model=model).values
        shown = np.isin(k_hat, ks)
        ax.plot(np.flatnonzero(shown), np.searchsorted(ks, k_hat[shown]), "o", mfc="none", mec="red", ms=9)
        if int(truth.sel(dataset=dataset)) in ks:
            ax.axhline(np.searchsorted(ks, int(truth.sel(dataset=dataset))), color="white", ls="--", lw=0.8)
        ax.set_xticks(range(len(ns)), [str(n) for n in ns], rotation=45, fontsize=7)
        ax.set_yticks(range(len(ks)), [str(k) for k in ks], fontsize=7)
        title(ax, f"{dataset} / {model}")
        ax.set(xlabel="n (circle: k̂)", ylabel="k chosen by the trial")
    if image is not None:
        colour_bar(figure, image, "fraction of trials")
    return figure


def _criterion_figures(figures: Figures, reduced: Reduced, criterion: str, against_n: Collection[str] = ()) -> None:
    summary, scores = reduced.summary, reduced.scores
    deciding = criterion in reduced.chosen
    decision = reduced.rules[criterion] if deciding else None
    chosen = reduced.chosen[criterion] if deciding else None
    names = [criterion, *(["gap_sd"] if criterion == "gap" else [])]
    own = summary[[f"{name}_{stat}" for name in names for stat in ("mean", "se")]]
    within = reduced.uncertainty[f"{criterion}_{K_SET}"] if deciding else None
    figures.draw(f"{criterion}_vs_k", plot_curves_vs_k, own, criterion, chosen, decision, within)
    if not deciding:  # a diagnostic (agreement): its curves only
        return
    # the curves against n need a (dataset, method) computed at two sample sizes at least, and are drawn
    # here unless a section of the criterion draws its values against n itself (the classifiers' selectors)
    several_n = bool((scores[criterion].notnull().any([d for d in ("k", "trial") if d in scores[criterion].dims])
                      .sum("n") > 1).any())
    if criterion not in reduced.frequency:  # a curve reduced from stored assignments: no trial's own choice
        return
    if several_n and criterion not in against_n:
        failures = reduced.failures[criterion]
        trials = scores[criterion].notnull().any("k").sum("trial")
        errors = np.sqrt(failures * (1 - failures) / trials.where(trials > 0))  # selection.csv's failure_rate_se
        known = bool((reduced.truth >= 0).any())
        scaling = criterion in CRITERIA and CRITERIA[criterion].sqrt_n_scaling
        figures.draw(f"{criterion}_scaling", plot_scaling, summary[f"{criterion}_mean"],
                     sqrt_n_scaled(own)[criterion] if scaling else None, failures if known else None,
                     errors if known else None, reduced.truth, criterion)
    figures.draw(f"{criterion}_selection_frequency", plot_selection_frequency, reduced.frequency[criterion],
                 reduced.chosen[criterion], reduced.truth)


# Sections of any model family, called after those the cube's criteria declare.
GENERAL_SECTIONS = ("ordercube.pipeline.report.sweep:section",)


def sections_for(scores: xr.Dataset) -> list[tuple[str, Section, tuple[str, ...]]]:
    """The sections a report of ``scores`` calls, in order, each as (import path, section, the criteria that declared
    it): those declared by the criteria present (``Criterion.report_sections``) in the registry order of the criteria,
    then :data:`GENERAL_SECTIONS`. An import path that names no function is refused, naming the criterion."""
    declared = declared_sections(criteria_of(scores), CRITERIA)
    out = [(path, load_section(path, f"criterion {names[0]!r} (report_sections)"), names) for path, names in declared.items()]
    return out + [(path, load_section(path, "the report's general sections"), ()) for path in GENERAL_SECTIONS
                  if path not in declared]


def write_report(cube: xr.Dataset, out: Path, decide: Mapping[str, Mapping[str, Any]] | None = None, *,
                 fmt: str = "png", helper: Helper | None = None, replicates: int | None = None) -> pd.DataFrame:
    """``selection.csv``, the figures (``fmt``: png, svg or pdf) of every criterion, the files of the report's sections
    and ``index.html`` (the whole report in one self-contained page: :mod:`ordercube.pipeline.report.html`) in ``out``; returns
    the table, with ``table.attrs["figures"]`` = (drawn, kept: unchanged since the last report in ``out``),
    ``["without_values"]`` (criteria with no value anywhere), ``["missing_cells"]`` (:func:`missing_cells`,
    also written as ``missing_cells.csv`` when there are any), ``["published"]`` (the paper's values beside the
    cube's, also ``published.csv``, when the config quotes any: :mod:`ordercube.pipeline.report.published`),
    ``["published_hidden"]`` (why some are not shown), ``["sections"]`` (what each section returned, in order:
    :class:`ordercube.pipeline.report.section.SectionResult`) and each section's own ``attrs``.

    Sections (:func:`sections_for`): each criterion of the cube contributes those it declares, then come the
    sections of any model family (the choices against a swept generator parameter).

    ``decide`` re-decides from the stored values (``{"prediction_strength": {"threshold": 0.8}}``); ``helper``
    (:class:`ordercube.pipeline.report.figures.Helper`) draws every other figure in a second process. A figure that cannot be drawn
    is named in ``table.attrs["figures_failed"]`` with its reason, and the rest of the report is written.
    ``replicates``: the bootstrap's over resamples, for the criteria reduced from stored assignments (default
    :data:`ordercube.pipeline.reduce.assignments.REPLICATES`; 0: no intervals).
    """
    out.mkdir(parents=True, exist_ok=True)
    reduced = Reduced.of(cube, decide, replicates=replicates)
    table = table_of(reduced)
    write_csv(table, out / "selection.csv")
    sections = sections_for(reduced.scores)
    against_n = {name for _, section, names in sections if section.draws_against_n for name in names}
    figures = Figures(out, fmt, helper)
    without_values = []
    for criterion in criteria_of(reduced.scores):
        if bool(reduced.scores[criterion].notnull().any()):
            _criterion_figures(figures, reduced, criterion, against_n)
        else:  # added to the cube but not computed yet, or every one of its cells failed: no row, no figure
            without_values.append(criterion)
    table.attrs["without_values"] = without_values
    drawn = [name for name in criteria_of(reduced.scores) if name not in without_values]
    curves = curves_frame(reduced.summary, reduced.frequency, drawn + (["gap_sd"] if "gap" in drawn else []))
    write_csv(curves, out / CURVES_CSV)
    missing = missing_cells(cube)
    if not missing.empty:
        write_csv(missing, out / "missing_cells.csv")
    table.attrs["missing_cells"] = missing
    adaptive = adaptive_groups(cube)
    if not adaptive.empty:
        write_csv(adaptive, out / "adaptive.csv")
    table.attrs["adaptive"] = adaptive
    published = published_in(cube)
    context = SectionContext(cube=cube, reduced=reduced, table=table, figures=figures, published=published.values,
                             sweeps=swept(json.loads(cube.attrs.get("ordercube_config", "{}"))))
    results = _run_sections(sections, context)
    for result in results:
        table.attrs.update(result.attrs)
    table.attrs["sections"] = results
    quoted = published.values or published.hidden
    table.attrs["published"] = (published_rows(table, published.values, [row for result in results
                                                                          for row in result.published_rows])
                                if quoted else None)
    table.attrs["published_hidden"] = list(published.hidden)
    if quoted:
        write_csv(table.attrs["published"], out / PUBLISHED_CSV)
    figures.finish()
    results = [replace(result, html=figures.resolved(result.html)) for result in results]  # their figures now drawn
    table.attrs["sections"] = results
    table.attrs["figures"] = (figures.drawn, figures.kept)
    table.attrs["figures_failed"] = figures.failed
    table.attrs["figures_by_helper"] = figures.by_helper
    from ordercube.pipeline.report.html import write_html

    write_html(out, cube_attrs=cube.attrs, table=table, shown=printable(table) if not table.empty else table,
               flag_notes=flag_notes(table, reduced.rules) if not table.empty else [], missing=missing, adaptive=adaptive,
               figures=figures.names, published=published, published_table=table.attrs["published"],
               summary=reduced.summary, frequency=reduced.frequency, counts=status_counts(cube), contributed=results,
               curves=curves)
    return table


def _run_sections(sections: list[tuple[str, Section, tuple[str, ...]]], context: SectionContext) -> list[SectionResult]:
    """Call each section once with ``context`` (its ``criteria``: those that declared it); what they returned, in order.
    An error raised by a section carries a note naming it and the criteria that declared it."""
    results = []
    for path, section, names in sections:
        try:
            result = section(replace(context, criteria=names))
        except Exception as error:
            error.add_note(f"raised by the report section {path}"
                           + (f", declared by the criteria {', '.join(names)}" if names else ""))
            raise
        if result is not None:
            results.append(result)
    return results
