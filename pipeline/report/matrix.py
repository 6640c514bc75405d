"""The report of matrix models (Frank et al. 2011, Secs. 4-5): each criterion's rank against the oracle's, and what it costs.

``matrix_ranks.csv`` has a row per (dataset, n, method, criterion): k̂ by the criterion's own rule, the range of
the trials' own choices, the oracle's k* (``psnr``'s argmax or ``denoise_error``'s argmin, the same aggregation)
and the loss of choosing k̂ instead of k*, read from the oracle's per-k medians: ``psnr_loss_db`` = PSNR(k*) -
PSNR(k̂) (the paper's Fig. 2 claim) and ``error_ratio`` = err(k̂) / err(k*) (Fig. 3's ranks on an error scale). Figures: every
dataset's ranks side by side with the trials' ranges (Fig. 3's table as a picture), and for an image whose noise
is swept, the PSNR crest (noise x k, each noise level's PSNR below its best) with MTC's k̂ ± 3 sd of the trials'
choices and the oracle's k* (Fig. 2), its values in ``psnr_crest_<entry>_<method>.csv`` (per noise level and k) and
``..._choices.csv`` (per noise level); every table also in ``index.html``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import xarray as xr

from ordercube.pipeline.errors import InputError
from ordercube.pipeline.report.figures import Figures
from ordercube.pipeline.files.outputs import write_csv
from ordercube.pipeline.report.section import SectionContext, SectionResult, load_section
from ordercube.pipeline.report.values import section_tables
from ordercube.pipeline.config.sweeps import Swept
from ordercube.tasks.criteria import CRITERIA

if TYPE_CHECKING:
    from matplotlib.figure import Figure

ORACLES = tuple(name for name, criterion in CRITERIA.items() if criterion.oracle)  # psnr, denoise_error


def section(context: SectionContext) -> SectionResult | None:
    """``matrix_ranks.csv`` and its figures, when a criterion that declared this section has values."""
    reduced = context.reduced
    names = with_values(reduced.scores, context.criteria)
    if not names:
        return None
    ranks = write_matrix_report(reduced.scores, reduced.chosen, reduced.choices, context.sweeps, context.figures, names)
    shown = "" if ranks.empty else ranks.to_string(index=False, float_format=lambda v: f"{v:.3g}")
    page = section_tables([("matrix_ranks.csv", "Each criterion's k̂, the range of the trials' own choices, the "
                                                "oracle's k* and the loss at k̂ (the ranks figure)", ranks)])
    for stem in ranks.attrs.get("crests", []):
        page += section_tables([(f"{stem}_choices.csv", f"{stem}: the median choice over trials per noise level (MTC's "
                                                        "± 3 sd: low, high)", pd.read_csv(context.folder / f"{stem}_choices.csv")),
                                (f"{stem}.csv", f"{stem}: the median PSNR per noise level and k, and its distance below "
                                                "the level's best (the crest)", pd.read_csv(context.folder / f"{stem}.csv"))],
                               folded=True)
    return SectionResult(title="matrix models: each criterion's k̂ (the trials' range) against the oracle's k*, and the "
                               "loss at k̂ (matrix_ranks.csv)", text=shown, html=page, attrs={"matrix_ranks": ranks})


def with_values(scores: xr.Dataset, criteria: Sequence[str]) -> list[str]:
    """Those of ``criteria`` with a value in ``scores``, in their order."""
    return [name for name in criteria if name in scores and bool(scores[name].notnull().any())]


def declaring() -> list[str]:
    """The registered criteria that declare this module's section (by the function their paths name, wherever this
    module is imported from), in registry order."""
    def names_this(path: str) -> bool:
        try:
            return load_section(path, "report_matrix").render is section
        except InputError:  # another criterion's path that names nothing: not this section
            return False
    return [name for name, criterion in CRITERIA.items() if any(map(names_this, criterion.report_sections))]


def rank_table(scores: xr.Dataset, chosen: xr.Dataset, choices: xr.Dataset,
               criteria: Sequence[str] | None = None) -> pd.DataFrame:
    """One row per (dataset, n, method, criterion) with a value, for ``criteria`` (default: every criterion that
    declares this section, in registry order): k̂, the trials' range, k* and the loss at k̂."""
    names = [name for name in with_values(scores, declaring() if criteria is None else criteria) if name in chosen]
    medians = {name: scores[name].median("trial") for name in ORACLES if name in names}
    rows = []
    for dataset in scores["dataset"].values:
        for n in scores["n"].values:
            for model in scores["model"].values:
                at = {"dataset": dataset, "n": n, "model": model}
                oracle = next((name for name in ORACLES if name in names and bool(scores[name].sel(at).notnull().any())),
                              None)
                k_star = int(chosen[oracle].sel(at)) if oracle else -1
                for name in names:
                    if not bool(scores[name].sel(at).notnull().any()):
                        continue
                    k_hat = int(chosen[name].sel(at))
                    trials = choices[name].sel(at).values
                    trials = trials[trials >= 0]
                    row = {"dataset": dataset, "n": int(n), "method": model, "criterion": name, "k_hat": k_hat,
                           "k_low": int(trials.min()) if trials.size else -1,
                           "k_high": int(trials.max()) if trials.size else -1, "oracle": oracle or "", "k_star": k_star,
                           "psnr_loss_db": np.nan, "error_ratio": np.nan}
                    if oracle and k_hat > 0 and k_star > 0:
                        curve = medians[oracle].sel(at)
                        at_hat, at_star = float(curve.sel(k=k_hat)), float(curve.sel(k=k_star))
                        if oracle == "psnr":
                            row["psnr_loss_db"] = at_star - at_hat
                        else:  # the oracle denoised perfectly: any error at k̂ is infinitely worse
                            row["error_ratio"] = at_hat / at_star if at_star > 0 else 1.0 if at_hat == 0 else np.inf
                    rows.append(row)
    return pd.DataFrame(rows)


def plot_ranks(table: pd.DataFrame) -> Figure:
    """Each dataset's k̂ per criterion (markers) with the trials' range (bars), and the oracle's k* (a star)."""
    from matplotlib.figure import Figure

    pairs = list(dict.fromkeys(zip(table["dataset"], table["n"], table["method"])))
    criteria = [name for name in dict.fromkeys(table["criterion"]) if name not in ORACLES]
    figure = Figure(figsize=(max(4.0, 1.1 * len(pairs)) + 2.2, 3.8))
    ax = figure.subplots()
    width = 0.8 / max(len(criteria), 1)
    for j, name in enumerate(criteria):
        rows = table[table["criterion"] == name].set_index(["dataset", "n", "method"])
        x, y, low, high = [], [], [], []
        for i, pair in enumerate(pairs):
            if pair in rows.index and rows.loc[pair, "k_low"] > 0:
                x.append(i - 0.4 + width * (j + 0.5))
                y.append(rows.loc[pair, "k_hat"] if rows.loc[pair, "k_hat"] > 0 else np.nan)  # -1: no choice
                low.append(rows.loc[pair, "k_low"])
                high.append(rows.loc[pair, "k_high"])
        # the range, not error bars: a rule on the per-k medians may choose outside the trials' own choices
        ax.vlines(x, low, high, lw=1.5, color=f"C{j}")
        ax.plot(x, y, "o", ms=4, color=f"C{j}", label=name)
    stars = table.drop_duplicates(["dataset", "n", "method"]).set_index(["dataset", "n", "method"])["k_star"]
    ax.plot([i for i, pair in enumerate(pairs) if stars.get(pair, -1) > 0],
            [stars[pair] for pair in pairs if stars.get(pair, -1) > 0], "*", color="black", ms=12, label="oracle k*")
    ax.set_xticks(range(len(pairs)), [f"{d}" if len(set(p[2] for p in pairs)) == 1 else f"{d}\n{m}"
                                      for d, _, m in pairs], rotation=30, ha="right", fontsize=8)
    ax.set(ylabel="rank k", title="k̂ per criterion; bars: the trials' own choices")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    figure.tight_layout()
    return figure


def crest(scores: xr.Dataset, choices: xr.Dataset, sweeps: Mapping[str, Swept], base: str,
          model: str) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    """The PSNR crest's values: one row per (noise value, k) with the median PSNR over trials and its distance below
    that noise level's best; one row per noise value with each of ``psnr``'s and ``mtc_matrix``'s median choice over
    trials (MTC's ± 3 sd too). None for fewer than two noise levels or no PSNR."""
    members = sorted(((sweep.value, dataset) for dataset, sweep in sweeps.items()
                      if sweep.base == base and dataset in scores["dataset"].values), key=lambda pair: pair[0])
    if len(members) < 2 or "psnr" not in scores:
        return None
    values, datasets = [value for value, _ in members], [dataset for _, dataset in members]
    at = {"model": model, "n": scores["n"].values[0]}
    psnr = scores["psnr"].sel(at).sel(dataset=datasets).median("trial")
    if not bool(psnr.notnull().any()):
        return None
    relative = psnr - psnr.max("k")
    grid = pd.DataFrame({"value": np.repeat(values, psnr.sizes["k"]), "dataset": np.repeat(datasets, psnr.sizes["k"]),
                         "k": np.tile(psnr["k"].values, len(values)), "psnr_median": psnr.values.ravel(),
                         "psnr_below_best": relative.values.ravel()})
    lines = pd.DataFrame({"value": values, "dataset": datasets})
    for name in ("psnr", "mtc_matrix"):
        if name in choices:
            trials = choices[name].sel(at).sel(dataset=datasets).where(lambda c: c >= 0)
            lines[f"{name}_k_median"] = trials.median("trial").values
            if name == "mtc_matrix":
                lines["mtc_matrix_k_low"] = (trials.median("trial") - 3 * trials.std("trial")).values
                lines["mtc_matrix_k_high"] = (trials.median("trial") + 3 * trials.std("trial")).values
    return grid, lines


def plot_psnr_crest(scores: xr.Dataset, choices: xr.Dataset, sweeps: Mapping[str, Swept], base: str,
                    model: str) -> Figure | None:
    """Fig. 2: noise x k, each noise level's median PSNR minus its best, with MTC's k̂ ± 3 sd and the oracle's k*
    (the values of :func:`crest`)."""
    from matplotlib.figure import Figure

    found = crest(scores, choices, sweeps, base, model)
    if found is None:
        return None
    grid, lines = found
    values, ks = lines["value"].tolist(), np.unique(grid["k"].to_numpy())
    relative = grid["psnr_below_best"].to_numpy().reshape(len(values), len(ks))
    figure = Figure(figsize=(7, 4))
    ax = figure.subplots()
    mesh = ax.pcolormesh(np.arange(len(values) + 1) - 0.5, np.append(ks, ks[-1] + 1) - 0.5, relative.T,
                         cmap="viridis", vmin=max(float(np.nanmin(relative)), -10.0), vmax=0.0)
    figure.colorbar(mesh, ax=ax, label="PSNR below the best rank (dB, median over trials)")
    positions = np.arange(len(values))
    for name, style in (("psnr", dict(color="white", ls=":", label="oracle k* (median)")),
                        ("mtc_matrix", dict(color="black", ls="-", label="MTC k̂ (median) ± 3 sd"))):
        if f"{name}_k_median" not in lines:
            continue
        ax.plot(positions, lines[f"{name}_k_median"], lw=2, **style)
        if name == "mtc_matrix":
            for side in ("low", "high"):
                ax.plot(positions, lines[f"mtc_matrix_k_{side}"], color="black", ls="--", lw=1)
    ax.set_xticks(positions, [f"{value:g}" for value in values])
    ax.set(xlabel=f"{sweeps[lines['dataset'].iloc[0]].parameter}: the sd of the Gaussian noise (grey levels)",
           ylabel="rank k", ylim=(ks[0] - 0.5, ks[-1] + 0.5), title=f"{base} ({model}): the PSNR crest")
    ax.legend(fontsize=7, loc="upper right")
    figure.tight_layout()
    return figure


def write_matrix_report(scores: xr.Dataset, chosen: xr.Dataset, choices: xr.Dataset, sweeps: Mapping[str, Swept],
                        figures: Figures, criteria: Sequence[str]) -> pd.DataFrame:
    """``matrix_ranks.csv``, ``matrix_ranks.png`` and a PSNR crest per swept image entry, for ``criteria``; returns
    the table."""
    table = rank_table(scores, chosen, choices, criteria)
    write_csv(table, figures.folder / "matrix_ranks.csv")
    if not table.empty:
        figures.draw("matrix_ranks", plot_ranks, table)
    crests = []
    for base in sorted({sweep.base for sweep in sweeps.values()}):
        for model in map(str, scores["model"].values):
            psnr = scores[[name for name in ("psnr",) if name in scores]]
            found = crest(psnr, choices, sweeps, base, model)
            if found is not None:
                for suffix, frame in zip(("", "_choices"), found):
                    write_csv(frame, figures.folder / f"psnr_crest_{base}_{model}{suffix}.csv")
                crests.append(f"psnr_crest_{base}_{model}")
            figures.draw(f"psnr_crest_{base}_{model}", plot_psnr_crest, psnr, choices, sweeps, base, model)
    table.attrs["crests"] = crests
    return table
