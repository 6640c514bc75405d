"""The figures of consensus clustering, from the stored assignments: what ConsensusClusterPlus and M3C draw.

Per (dataset, n, method) that stored assignments (Monti, Tamayo, Mesirov & Golub 2003, Sec. 3; Wilkerson & Hayes
2010; Senbabaoglu, Michailidis & Li 2014; John et al. 2020), ``<group>`` being ``<dataset>_<n>_<method>``:

- ``consensus_<group>_heatmaps``: the consensus matrix of every k, its items ordered by the consensus partition of
  that k (cluster by cluster, each cluster's items by their item consensus, highest first), with the items' clusters
  as a colour strip beside and above the map, as ConsensusClusterPlus draws it. When the data has labels, their
  known classes as a second strip outside it, with a legend naming them; when it names its rows and the map shows
  at most :data:`~ordercube.pipeline.report.known_items.NAMES_AT_MOST` items, their names on the rows. Above
  :data:`CAP` items the map shows every ``ceil(N / CAP)``-th item of that order (the caption says so); the files
  hold every item. A small cluster (at most max(2 items, 2% of the items):
  :func:`ordercube.tasks.consensus.small_clusters`) is framed in red and its size written under its map.
- ``consensus_<group>_cdf``: the empirical CDF of the consensus values (pairs i < j) per k, one line per k, drawn
  exactly (a step at every distinct value).
- ``consensus_<group>_delta``: Monti's relative increase of the area under the CDF, Δ(k), against k, with its
  rule's threshold and its bootstrap interval over resamples as bars.
- ``consensus_<group>_pac``: the proportion of ambiguous clustering against k, with its bootstrap interval over
  resamples as bars where the reduction gives one.
- ``consensus_<group>_rcsi``: M3C's relative cluster stability index against k (bars: ± 1 SE over the reference data
  sets; band: the bootstrap interval over resamples) and its Monte Carlo and beta p-values (when the method drew
  reference data sets and the config lists ``m3c``).
- ``consensus_<group>_item_consensus``: each item's consensus with its own cluster, a box and the items per
  cluster, at the k̂ of the first of the section's criteria (registry order) that chose one.

k̂ is marked (a star) where the report chose one by the criterion the figure shows, and the k's its rule cannot tell
apart from k̂ given the bootstrap's error are shaded (:mod:`ordercube.pipeline.reduce.within_noise`). The consensus matrices are
also written as ``consensus_<group>_matrices.npz`` (``numpy.load``: ``k3`` the N x N matrix of k = 3, NaN for
pairs never drawn together; ``partition_k3`` the consensus partition; ``order_k3`` the heat map's order; ``ks``),
every figure is shown in this section of ``index.html``, and ``ordercube report`` prints k̂ by each criterion.
"""

from __future__ import annotations

import html
import io
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import xarray as xr

from ordercube.pipeline.files.outputs import write_output
from ordercube.pipeline.reduce.assignments import KnownItems, clusterings_of, known_items, part_roles, resolved_options
from ordercube.pipeline.report.figures import COLOUR_BAR_MARGIN, Figures, colour_bar, grid, log_axis, title, \
    within_noise_band
from ordercube.pipeline.report.consensus_tables import curves_table, items_table, write_tables
from ordercube.pipeline.report.known_items import NAMES_AT_MOST, ROW_INCHES, known_items_drawn, legend_inches
from ordercube.pipeline.report.labels import label_of, reference_lines
from ordercube.pipeline.report.section import SectionContext, SectionResult
from ordercube.tasks.criteria import Decision
from ordercube.tasks.criteria.base import Clusterings
from ordercube.tasks.consensus import (
    consensus_cdf, consensus_matrix, consensus_partition, consensus_values, item_consensus, small_clusters,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

CAP = 500  # the most items a heat map shows: above it, every ceil(N / CAP)-th item of the ordered list
# How the text and the figures name the consensus criteria (others: by their own name).
NAMES = {"consensus_area": "Δ(k)", "pac": "PAC", "m3c": "M3C"}
# A figure's title names the variable it plots, short (its axis label says what it is).
SHORT = {"consensus_delta": "Δ(k)", "consensus_area": "A(k)", "pac": "PAC"}
NO_CHOICE = "none"  # how the text says that a criterion chose no k
# The page's own style (no style sheet is loaded): the smaller figures side by side, each captioned below.
ROW_STYLE = "display: flex; flex-wrap: wrap; gap: 1em; align-items: flex-start"


@dataclass(frozen=True)
class HeatMap:
    """What one heat map shows: the consensus matrix of the shown items in the shown order.

    Attributes
    ----------
    matrix : ndarray of shape (m, m)
        The consensus values of the shown items, rows and columns in ``items``' order (NaN: never drawn together).
    clusters : ndarray of shape (m,)
        The consensus cluster of each shown item.
    items : ndarray of shape (m,)
        The shown items (indices into the dataset's items), in the heat map's order.
    step : int
        Every ``step``-th item of the ordered list is shown (1: all of them).
    total : int
        The number of items N.
    """

    matrix: np.ndarray
    clusters: np.ndarray
    items: np.ndarray
    step: int
    total: int
    small: tuple[tuple[int, int], ...] = ()  # the small clusters (:func:`ordercube.tasks.consensus.small_clusters`): code, size


def heat_map_order(partition: np.ndarray, own: np.ndarray) -> np.ndarray:
    """The items ordered by cluster (0, 1, ...), within a cluster by their consensus with it (highest first), ties
    by item index.

    Parameters
    ----------
    partition : ndarray of shape (N,)
        The consensus partition (Monti et al. 2003, Sec. 3.1: clusters of 1 - M by the final linkage).
    own : ndarray of shape (N,)
        Each item's item consensus with its own cluster (Monti et al. 2003, Sec. 3.2, m_i(k)).
    """
    own = np.where(np.isnan(own), -np.inf, own)
    return np.lexsort((np.arange(len(partition)), -own, partition))


def thinned(order: np.ndarray, cap: int = CAP) -> tuple[np.ndarray, int]:
    """The items a heat map shows and the step: all of ``order`` up to ``cap`` items, else every
    ``ceil(N / cap)``-th item of it (between cap / 2 and cap items)."""
    step = max(1, math.ceil(len(order) / cap))
    return order[::step], step


def heat_map(matrix: np.ndarray, partition: np.ndarray, own: np.ndarray, cap: int = CAP) -> HeatMap:
    """The heat map of the consensus ``matrix`` (N x N) ordered by ``partition`` and the items' consensus ``own``
    with their cluster, capped at ``cap`` items (:func:`thinned`)."""
    items, step = thinned(heat_map_order(partition, own), cap)
    partition = np.asarray(partition)
    small = tuple((int(c), int((partition == c).sum())) for c in np.flatnonzero(small_clusters(partition)))
    return HeatMap(matrix=matrix[np.ix_(items, items)], clusters=partition[items], items=items, step=step,
                   total=len(partition), small=small)


def ordinal(number: int) -> str:
    """``3`` → ``"3rd"``."""
    suffix = "th" if 10 <= number % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(number % 10, "th")
    return f"{number}{suffix}"


def cap_rule(step: int, total: int) -> str:
    """What a capped heat map shows, in words (empty when it shows every item)."""
    if step == 1:
        return ""
    return (f"{total} items: every {ordinal(step)} item of the ordered list is shown ({math.ceil(total / step)} "
            f"items; above {CAP} items a heat map shows every ceil(N / {CAP})-th)")


def _cluster_colours(count: int) -> np.ndarray:
    from matplotlib import colormaps

    palette = colormaps["tab10" if count <= 10 else "tab20"]
    return np.array([palette(i % palette.N) for i in range(max(count, 1))])


def plot_heat_maps(maps: Mapping[int, HeatMap], label: str, known: KnownItems | None = None) -> Figure:
    """One consensus heat map per k (white 0 to dark blue 1, grey: never drawn together), each with its items'
    clusters as a colour strip on the left and on top: three images in one axes per k (the strips placed beside
    the map in its data coordinates, not in axes of their own, which cost more to make and draw than the maps).
    With ``known`` (the dataset's labels and row names), the known classes as a second strip outside the clusters'
    and the items' names on the rows
    (:func:`ordercube.pipeline.report.known_items.known_items_drawn`)."""
    from matplotlib import colormaps
    from matplotlib.colors import ListedColormap

    ks = sorted(maps)
    largest = max(maps[k].matrix.shape[0] for k in ks)
    named = known is not None and bool(known.names) and largest <= NAMES_AT_MOST
    side = max(2.6, ROW_INCHES * 1.15 * largest) if named else 2.6  # a row per name, at NAME_POINTS
    columns = min(len(ks), 2 if named else 3)
    rows = math.ceil(len(ks) / columns)
    legend = legend_inches(known)
    figure, axes = grid(rows, columns, width=side, height=side, right=COLOUR_BAR_MARGIN + legend)
    shades = colormaps["Blues"].with_extremes(bad="0.8")
    image = None
    for ax, k in zip(axes.ravel(), ks):
        shown = maps[k]
        m = shown.matrix.shape[0]
        image = ax.imshow(shown.matrix, cmap=shades, vmin=0.0, vmax=1.0, interpolation="nearest",
                          extent=(0.0, m, m, 0.0))
        strip = ListedColormap(_cluster_colours(k)[: max(k, 1)])
        near, far = -0.02 * m, -0.07 * m  # the strips: 5% of the map wide, 2% away from it
        for extent, data in (((far, near, m, 0.0), shown.clusters[:, None]),
                             ((0.0, m, near, far), shown.clusters[None, :])):
            ax.imshow(data, cmap=strip, vmin=-0.5, vmax=k - 0.5, interpolation="nearest", extent=extent)
        _mark_small(ax, shown)
        ax.set(xlim=(far, m), ylim=(m, far), aspect="equal", xticks=[], yticks=[])
        ax.spines[:].set_visible(False)
        ax.set_xlabel(f"k = {k}" + (f"; every {ordinal(shown.step)} of {shown.total} items" if shown.step > 1 else "")
                      + ("\nsmall: " + ", ".join(f"{size} item{'s' * (size > 1)}" for _, size in shown.small)
                         if shown.small else ""), fontsize=8, color="C3" if shown.small else "black")
    for ax in axes.ravel()[len(ks):]:
        ax.set_visible(False)
    if known is not None:
        known_items_drawn(figure, axes.ravel()[: len(ks)], [maps[k] for k in ks], known, named=named, legend=legend)
    # above the top strips, inside the figure's fixed top margin
    figure.text(0.5, 1 - 0.03 / figure.get_size_inches()[1], f"{label}: consensus matrices",
                ha="center", va="top", fontsize=9)
    if image is not None:
        colour_bar(figure, image, "consensus index")
    return figure


def _mark_small(ax: Axes, shown: HeatMap) -> None:
    """A red frame around each small cluster's block on the diagonal (and its strip), where it has shown items."""
    from matplotlib.patches import Rectangle

    for code, _ in shown.small:
        at = np.flatnonzero(shown.clusters == code)
        if at.size:
            start, width = float(at.min()), float(at.max() - at.min() + 1)
            ax.add_patch(Rectangle((start, start), width, width, fill=False, edgecolor="C3", lw=1.5))
            ax.add_patch(Rectangle((-0.07 * shown.matrix.shape[0], start), 0.05 * shown.matrix.shape[0], width,
                                   fill=False, edgecolor="C3", lw=1.5))


def cdf_curve(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The consensus CDF of ``matrix`` (Monti et al. 2003, Sec. 3.3.1: over the pairs i < j drawn together) exactly,
    as the points of a step drawn ``steps-post``: from (0, 0) up to the share of pairs at 0, then at every distinct
    value, to (1, 1)."""
    values, _ = consensus_values(matrix)
    x = np.concatenate([[0.0, 0.0], values, [1.0]])
    y = np.concatenate([[0.0], np.asarray(consensus_cdf(matrix, x[1:]), dtype=float)])
    return x, y


def plot_cdf(curves: Mapping[int, tuple[np.ndarray, np.ndarray]], label: str) -> Figure:
    """The consensus CDF of every k on one axis (Monti et al. 2003, Sec. 3.3.1, Fig. 3), one line per k: ``curves``
    maps k to its points (:func:`cdf_curve`)."""
    figure, axes = grid(1, 1, width=4.2, height=3.0, right=1.0)
    ax = axes[0, 0]
    for k in sorted(curves):
        x, y = curves[k]
        ax.plot(x, y, drawstyle="steps-post", lw=1.2, label=f"k = {k}")
    ax.set(xlim=(-0.01, 1.01), ylim=(0.0, 1.02), xlabel="consensus index", ylabel="CDF (pairs of items)")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    title(ax, f"{label}: consensus CDF")
    return figure


def _interval(ax: Axes, ks: np.ndarray, low: np.ndarray, high: np.ndarray) -> None:
    """Bars from ``low`` to ``high`` at each k, with caps."""
    ax.vlines(ks, low, high, color="C0", lw=1)
    for end in (low, high):
        ax.plot(ks, end, "_", color="C0", ms=7, ls="none")


def _mark(ax: Axes, ks: np.ndarray, values: np.ndarray, k_hat: int, name: str) -> None:
    at = np.flatnonzero(ks == k_hat)
    if at.size and np.isfinite(values[at[0]]):
        ax.plot([k_hat], [values[at[0]]], "*", ms=13, color="C3", mec="black", mew=0.7, label=f"k̂ = {k_hat} ({name})")
        ax.legend(fontsize=7, loc="best")


def plot_against_k(ks: np.ndarray, values: np.ndarray, k_hat: int, *, variable: str, label: str, name: str,
                   rule: Decision | None = None, low: np.ndarray | None = None, high: np.ndarray | None = None,
                   within: tuple[int, ...] = ()) -> Figure:
    """The curve of ``variable`` (a criterion's output) against k with k̂ starred (``k_hat`` < 0: none); its y label
    and dashed reference lines are the variable's (:func:`ordercube.pipeline.report.labels.label_of`,
    ``reference_lines`` of ``rule``, drawn only when that rule reads this variable); ``low``/``high``: its bootstrap
    interval over resamples, drawn as bars; ``within``: the k's that cannot be told apart from k̂, shaded where
    there are several."""
    figure, axes = grid(1, 1, width=4.2, height=2.8)
    ax = axes[0, 0]
    ks, values = np.asarray(ks), np.asarray(values, dtype=float)
    ax.plot(ks, values, marker="o", ms=4, color="C0", gid=variable)
    if low is not None and high is not None:  # a percentile interval need not hold the curve: drawn as it is
        _interval(ax, ks, low, high)
    for value, text in reference_lines(variable, rule).items():
        ax.axhline(value, color="grey", ls="--", lw=0.9, label=text)
    within_noise_band(ax, within)
    _mark(ax, ks, values, k_hat, name)
    ax.set_xticks(ks)
    ax.set(xlabel="k")
    ax.set_ylabel(label_of(variable), fontsize=8)
    ax.set_gid(variable)
    title(ax, f"{label}: {SHORT.get(variable, variable)}")
    return figure


def plot_rcsi(ks: np.ndarray, rcsi: np.ndarray, p_values: Mapping[str, tuple[str, np.ndarray]], k_hat: int, *,
              label: str, se: np.ndarray | None = None, low: np.ndarray | None = None,
              high: np.ndarray | None = None, alpha: float = 0.05, within: tuple[int, ...] = ()) -> Figure:
    """M3C's RCSI against k with k̂ starred (John et al. 2020, Fig. 2), bars ± 1 ``se`` (over the reference data sets,
    as M3C draws them), a band from ``low`` to ``high`` (the bootstrap over resamples); beside it, each of
    ``p_values`` (output → (its name in the legend, p per k): the fitted p-value that decides, the Monte Carlo one)
    on a log scale, ``alpha`` dashed."""
    ks, rcsi = np.asarray(ks), np.asarray(rcsi, dtype=float)
    figure, axes = grid(1, 2 if p_values else 1, width=3.6, height=2.8)
    ax = axes[0, 0]
    ax.plot(ks, rcsi, marker="o", ms=4, color="C0", gid="rcsi")
    if se is not None:
        ax.errorbar(ks, rcsi, yerr=np.asarray(se, dtype=float), fmt="none", ecolor="C0", capsize=3, lw=1)
    if low is not None and high is not None:
        ax.fill_between(ks, low, high, color="C0", alpha=0.15, lw=0)
    within_noise_band(ax, within)
    _mark(ax, ks, rcsi, k_hat, "M3C")
    ax.set_xticks(ks)
    ax.set(xlabel="k")
    ax.set_ylabel(label_of("rcsi"), fontsize=8)
    ax.set_gid("rcsi")
    title(ax, f"{label}: RCSI")
    if p_values:
        ax = axes[0, 1]
        for i, (output, (name, p)) in enumerate(p_values.items()):
            ax.plot(ks, np.asarray(p, dtype=float), marker="o", ms=4, color=f"C{i + 1}", label=name, gid=output)
        ax.axhline(alpha, color="grey", ls="--", lw=0.9, label=f"alpha = {alpha:g}")
        ax.legend(fontsize=7, loc="best")
        every = np.concatenate([np.asarray(p, dtype=float) for _, p in p_values.values()])
        if np.all(np.isfinite(every) & (every > 0)) and every.min() < 0.5:
            log_axis(ax, "y")
        ax.set_xticks(ks)
        ax.set(xlabel="k")
        ax.set_ylabel("p-value (K = 1 against k)\n(John et al. 2020)", fontsize=8)
        ax.set_gid(",".join(p_values))
        title(ax, f"{label}: p-value per k")
    return figure


def plot_item_consensus(own: np.ndarray, partition: np.ndarray, k: int, *, label: str, name: str) -> Figure:
    """Each item's consensus with its own cluster at ``k`` (Monti et al. 2003, Sec. 3.2): a box per cluster and its
    items as points spread evenly across the box; each cluster labelled with its number of items. An item alone in
    its cluster has no consensus with it (no other item to pair with): its cluster is marked "alone", not drawn as
    empty."""
    figure, axes = grid(1, 1, width=max(3.0, 0.55 * k + 1.5), height=2.8)
    ax = axes[0, 0]
    colours = _cluster_colours(k)
    partition = np.asarray(partition)
    sizes = [int((partition == c).sum()) for c in range(k)]
    groups = [np.asarray(own)[partition == c] for c in range(k)]
    groups = [np.sort(group[np.isfinite(group)]) for group in groups]
    ax.boxplot([group if group.size else [np.nan] for group in groups], positions=range(k), widths=0.6,
               showfliers=False, medianprops={"color": "black"})
    for c, group in enumerate(groups):
        spread = np.linspace(-0.22, 0.22, group.size) if group.size > 1 else np.zeros(group.size)
        ax.plot(c + spread, group, "o", ms=2.5, alpha=0.6, color=colours[c], ls="none")
        if not group.size and sizes[c]:
            ax.text(c, 0.5, "alone" if sizes[c] == 1 else "no pair", rotation=90, ha="center", va="center",
                    fontsize=7, color=colours[c])
    ax.set_xticks(range(k), [f"{c + 1}\n({sizes[c]})" for c in range(k)], fontsize=7)
    ax.set(ylim=(-0.02, 1.02), xlabel="consensus cluster (items)")
    ax.set_ylabel("item consensus\nwith its cluster", fontsize=8)
    title(ax, f"{label}: item consensus at k̂ = {k} ({name})")
    return figure


def slug(text: str) -> str:
    """``text`` as part of a file name (letters, digits, ``.``, ``_``, ``-``)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", str(text)).strip("-") or "x"


@dataclass(frozen=True)
class Consensus:
    """The consensus of one (dataset, n, method): per k its matrix, consensus partition and item consensus."""

    ks: tuple[int, ...]
    matrices: Mapping[int, np.ndarray]
    partitions: Mapping[int, np.ndarray]
    own: Mapping[int, np.ndarray]  # each item's consensus with its own cluster


def consensus_of(clusterings: Clusterings, linkage: str = "average") -> Consensus:
    """The consensus matrix (Monti et al. 2003, Eq. 2), the consensus partition (hierarchical clustering of 1 - M by
    ``linkage``, ConsensusClusterPlus's final linkage) and each item's consensus with its cluster, for every k of
    ``clusterings``' data."""
    matrices, partitions, own = {}, {}, {}
    for k in clusterings.ks:
        matrix = consensus_matrix(np.asarray(clusterings.data[k]))
        partition = np.asarray(consensus_partition(matrix, k, linkage))
        matrices[k], partitions[k] = matrix, partition
        own[k] = np.asarray(item_consensus(matrix, partition, k))[np.arange(len(partition)), partition]
    return Consensus(ks=tuple(clusterings.ks), matrices=matrices, partitions=partitions, own=own)


def write_matrices(path: Path, consensus: Consensus, orders: Mapping[int, np.ndarray]) -> None:
    """The matrices, partitions and heat-map orders as a compressed ``.npz`` (``numpy.load``)."""
    arrays: dict[str, np.ndarray] = {"ks": np.asarray(consensus.ks, dtype=np.int64)}
    for k in consensus.ks:
        arrays[f"k{k}"] = consensus.matrices[k]
        arrays[f"partition_k{k}"] = consensus.partitions[k].astype(np.int64)
        arrays[f"order_k{k}"] = np.asarray(orders[k], dtype=np.int64)
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    write_output(path, buffer.getvalue())


def heat_map_strips(known: KnownItems | None, shown: int) -> str:
    """The end of the heat maps' caption: what the strips and the rows show beyond each item's cluster."""
    said = ""
    if known is not None and known.classes:
        said += " (inner) and its known class in the data's labels (outer; legend: the classes)"
    if known is not None and known.names and shown <= NAMES_AT_MOST:
        said += "; rows: the items' names"
    elif known is not None and known.names:
        said += f"; the items' names are not shown above {NAMES_AT_MOST} items (they are in the items' table)"
    return said + "."


def _k_hat(chosen: xr.Dataset, name: str, at: Mapping[str, object]) -> int:
    if name not in chosen:
        return -1
    try:
        return int(chosen[name].sel(at))
    except (KeyError, TypeError, ValueError):
        return -1


def _curve(scores: xr.Dataset, name: str, at: Mapping[str, object]) -> np.ndarray | None:
    if name not in scores:
        return None
    values = scores[name].sel(at)
    return None if not bool(values.notnull().any()) else values.values.astype(float)


def groups_with_assignments(cube: xr.Dataset) -> list[tuple[str, int, str]]:
    """The (dataset, n, method) of the methods that store assignments (the cube's ``ordercube_part_roles``), in the
    cube's order; those without an ok cell give no clustering and are left out later."""
    storing = set(part_roles(cube))
    return [(str(d), int(n), str(m)) for d in cube["dataset"].values for n in cube["n"].values
            for m in cube["model"].values if str(m) in storing]


def _within(uncertainty: xr.Dataset | None, name: str, at: Mapping[str, object]) -> tuple[int, ...]:
    """The k's criterion ``name`` cannot tell apart from its k̂ in group ``at`` (empty: not known)."""
    variable = f"{name}_k_set"
    if uncertainty is None or variable not in uncertainty:
        return ()
    members = uncertainty[variable].sel(at)
    return tuple(int(k) for k in members["k"].values[members.values])


WITHIN_NOISE = " Shaded: the k's the rule cannot tell apart from k̂ given the bootstrap's error."


def _curve_figures(figures: Figures, scores: xr.Dataset, chosen: xr.Dataset, at: Mapping[str, object], stem: str,
                   label: str, options: Mapping[str, Mapping[str, Any]], rules: Mapping[str, Decision],
                   uncertainty: xr.Dataset | None = None) -> tuple[list[str], dict[str, str]]:
    """Δ(k), PAC and RCSI against k, each where the reduction gave it: their HTML, and M3C's p-values at its k̂;
    ``options``: each criterion's (the config's, ``--decide`` applied), ``rules``: their decisions;
    ``uncertainty``: :func:`ordercube.pipeline.reduce.uncertainty.decision_uncertainty` (the k's within noise)."""
    if "k" not in scores.coords:  # no criterion reduced from the assignments
        return [], {}
    ks, parts, notes = scores["k"].values, [], {}
    delta = _curve(scores, "consensus_delta", at)
    if delta is not None:
        rule = rules.get("consensus_area")
        lines = reference_lines("consensus_delta", rule)
        low, high = _curve(scores, "consensus_delta_lo", at), _curve(scores, "consensus_delta_hi", at)
        within = _within(uncertainty, "consensus_area", at)
        parts.append(figures.shown(f"{stem}_delta", "Relative increase of the area under the consensus CDF, Δ(k) (Monti et al. 2003, "
                                  "Sec. 3.3.1)." + "".join(f" Dashed: the rule's threshold {value:g} (k̂: the largest "
                                                           "k whose Δ(k) reaches it)." for value in lines)
                                   + (" Bars: bootstrap interval over resamples." if low is not None else "")
                                   + (WITHIN_NOISE if len(within) > 1 else ""),
                                   plot_against_k, ks, delta, _k_hat(chosen, "consensus_area", at),
                                   variable="consensus_delta", label=label, name=NAMES["consensus_area"], rule=rule,
                                   low=low, high=high, within=within))
    pac = _curve(scores, "pac", at)
    if pac is not None:
        low, high = _curve(scores, "pac_lo", at), _curve(scores, "pac_hi", at)
        within = _within(uncertainty, "pac", at)
        window = tuple(options.get("pac", {}).get("window", ()))
        parts.append(figures.shown(f"{stem}_pac", "Proportion of ambiguous clustering (Senbabaoglu et al. 2014): the share of pairs "
                                  "whose consensus falls inside the window"
                            + (f" ({window[0]:g}, {window[1]:g})." if len(window) == 2 else ".")
                                   + (" Bars: bootstrap interval over resamples." if low is not None else "")
                                   + (WITHIN_NOISE if len(within) > 1 else ""),
                                   plot_against_k, ks, pac, _k_hat(chosen, "pac", at), variable="pac", label=label,
                                   name="PAC", rule=rules.get("pac"), low=low, high=high, within=within))
    rcsi = _curve(scores, "rcsi", at)
    if rcsi is not None:
        k_hat = _k_hat(chosen, "m3c", at)
        own = options.get("m3c", {})
        p_values = p_value_curves(scores, at, own)
        low, high = _curve(scores, "rcsi_lo", at), _curve(scores, "rcsi_hi", at)
        se = _curve(scores, "rcsi_se", at)
        within = _within(uncertainty, "m3c", at)
        parts.append(figures.shown(f"{stem}_rcsi", "M3C's relative cluster stability index against the reference data sets, and the "
                                  "p-values of each k against K = 1 (John et al. 2020); k̂ is the largest RCSI among "
                                  "the k whose p-value marked 'decides' is below alpha."
                            + (" Bars: ± 1 SE over the reference data sets." if se is not None else "")
                                   + (" Band: bootstrap interval over resamples." if low is not None else "")
                                   + (WITHIN_NOISE if len(within) > 1 else ""),
                                   plot_rcsi, ks, rcsi, p_values, k_hat, label=label, se=se, low=low, high=high,
                                   alpha=float(own.get("alpha", 0.05)), within=within))
        if k_hat in ks:
            at_k = list(ks).index(k_hat)
            notes["m3c"] = " (" + ", ".join(f"{name.replace(' (decides)', '')} p = {p[at_k]:.3g}"
                                            for name, p in p_values.values()) + ")"
        else:
            notes["m3c"] = f" {NO_CHOICE}: no k significant (M3C's K = 1)"
    return parts, notes


def p_value_curves(scores: xr.Dataset, at: Mapping[str, object], options: Mapping[str, Any]
                   ) -> dict[str, tuple[str, np.ndarray]]:
    """M3C's p-values per k that the reduction gave, each with its name in a legend: the fitted one (beta for PAC,
    normal for the entropy) first, then the Monte Carlo one; the one the rule reads (``test``) marked "decides"."""
    test = str(options.get("test", "fit"))
    fitted = "normal fit" if options.get("objective", "pac") == "entropy" else "beta fit"
    out = {}
    for output, name, deciding in (("rcsi_fit_p", fitted, test == "fit"), ("rcsi_p", "Monte Carlo", test == "monte_carlo")):
        p = _curve(scores, output, at)
        if p is not None:
            out[output] = (name + (" (decides)" if deciding else ""), p)
    return out


def group_figures(context: SectionContext, scores: xr.Dataset, dataset: str, n: int, model: str,
                  consensus: Consensus, options: Mapping[str, Mapping[str, Any]]) -> tuple[str, str]:
    """Draw one group's figures and write its matrices; its HTML and its line of text. ``options``: the method's
    criteria's (:func:`ordercube.pipeline.reduce.assignments.resolved_options`); the dataset's known classes and item
    names as the cube stores them (:func:`ordercube.pipeline.reduce.assignments.known_items`)."""
    figures, chosen, criteria = context.figures, context.reduced.chosen, context.criteria
    at = {"dataset": dataset, "n": n, "model": model}
    label = f"{dataset}, n = {n}, {model}"
    stem = f"consensus_{slug(dataset)}_{n}_{slug(model)}"
    orders = {k: heat_map_order(consensus.partitions[k], consensus.own[k]) for k in consensus.ks}
    write_matrices(figures.folder / f"{stem}_matrices.npz", consensus, orders)
    maps = {k: heat_map(consensus.matrices[k], consensus.partitions[k], consensus.own[k]) for k in consensus.ks}
    capped = cap_rule(maps[consensus.ks[0]].step, maps[consensus.ks[0]].total)
    known = known_items(context.cube, dataset)
    parts = [f"<h3>{html.escape(label)}</h3>",
             "<p>Consensus matrices of every k (NaN where two items were never drawn together), partitions and orders: "
             f"<code>{html.escape(stem)}_matrices.npz</code> (<code>numpy.load(path)['k3']</code>).</p>",
             figures.shown(f"{stem}_heatmaps",
                           "Consensus matrices, items ordered by consensus cluster and, within it, by item consensus; "
                           "strips: each item's cluster" + heat_map_strips(known, maps[consensus.ks[0]].matrix.shape[0])
                           + " Framed in red: a small cluster (at most max(2 items, 2% of the items))."
                           + (f" {capped}." if capped else ""), plot_heat_maps, maps, label, known)]
    row = [figures.shown(f"{stem}_cdf", "Empirical CDF of the consensus values of every pair of items, one line per k "
                         "(Monti et al. 2003): the flatter its middle, the cleaner the clusters.",
                         plot_cdf, {k: cdf_curve(consensus.matrices[k]) for k in consensus.ks}, label)]
    curves, notes = _curve_figures(figures, scores, chosen, at, stem, label, options, context.reduced.rules,
                                   context.reduced.uncertainty)
    row += curves
    said = []
    for name in criteria:
        k_hat = _k_hat(chosen, name, at)
        if k_hat > 0:
            said.append(f"{NAMES.get(name, name)} {k_hat}{notes.get(name, '')}")
        elif name in notes:
            said.append(f"{NAMES.get(name, name)}{notes[name]}")
    shown = next(((name, k) for name in criteria if (k := _k_hat(chosen, name, at)) in consensus.ks), None)
    if shown is not None:
        name, k = shown
        row.append(figures.shown(f"{stem}_item_consensus",
                                 f"Each item's consensus with its own cluster at k̂ = {k} (by {NAMES.get(name, name)}).",
                                 plot_item_consensus, consensus.own[k], consensus.partitions[k], k, label=label,
                                 name=NAMES.get(name, name)))
    parts.append(f'<div style="{ROW_STYLE}">{"".join(row)}</div>')
    parts.append(write_tables(figures.folder, stem, curves_table(scores, at),
                              items_table(consensus.own[shown[1]], consensus.partitions[shown[1]], known) if shown else None,
                              shown[1] if shown else None))
    line = f"{label}: k̂ by " + (", ".join(said) if said else "no criterion yet") + (f"; heat maps: {capped}" if capped else "")
    return "".join(parts), line


def section(context: SectionContext) -> SectionResult | None:
    """The consensus figures and matrices of every (dataset, n, method) that stored assignments; None when none did."""
    groups = groups_with_assignments(context.cube)
    if not groups:
        return None
    scores = context.reduced.reduced  # the curves reduced from the stored assignments, with their bootstrap
    options = resolved_options(context.cube, context.reduced.decide)
    fragments, lines = [], []
    for dataset, n, model in groups:
        clusterings = clusterings_of(context.cube, dataset, n, model)
        if not clusterings.ks:
            continue
        own = options.get(model, {})
        # the partition the cluster-wise criteria used, where one of them is in the config
        linkage = next((own[name]["linkage"] for name in ("cluster_consensus", "clusterwise_jaccard")
                        if "linkage" in own.get(name, {})), "average")
        fragment, line = group_figures(context, scores, dataset, n, model, consensus_of(clusterings, linkage), own)
        fragments.append(fragment)
        lines.append(line)
    if not lines:
        return None
    intro = ("<p>From the stored assignments, without refitting. Heat maps show at most "
             f"{CAP} items: above that, every ceil(N / {CAP})-th item of the ordered list.</p>")
    return SectionResult(title="Consensus clustering: heat maps, CDF, Δ(k), PAC, M3C", text="\n".join(lines),
                         html=intro + "".join(fragments), attrs={})

