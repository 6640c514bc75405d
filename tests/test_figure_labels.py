"""Each figure says what it shows: its y label and its reference lines are those of the variable it plots (the
criterion that owns the variable says what it is and which paper it follows), and no text runs past the figure's
edge."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from ordercube.pipeline.report.consensus import plot_against_k, plot_item_consensus, plot_rcsi
from ordercube.pipeline.report.labels import label_of
from ordercube.pipeline.report.write import plot_curves_vs_k
from ordercube.tasks.criteria import CRITERIA

KS = np.arange(2, 7)


def _summary(variable: str, dataset: str = "d", model: str = "m") -> xr.Dataset:
    """Made-up means and SEs of ``variable`` (and of Gap's s_k) at one (dataset, n, method) over KS."""
    coords = {"dataset": [dataset], "model": [model], "n": [100], "k": KS}
    shape = (1, 1, 1, len(KS))
    values = np.linspace(0.1, 0.5, len(KS)).reshape(shape)
    data = {f"{variable}_mean": values, f"{variable}_se": values / 10, "gap_sd_mean": values / 5}
    return xr.Dataset({name: (tuple(coords), array) for name, array in data.items()}, coords=coords)


def _dashed(ax) -> list[float]:
    return sorted(float(line.get_ydata()[0]) for line in ax.lines if line.get_linestyle() == "--")


@pytest.mark.parametrize("variable", sorted({v for c in CRITERIA.values() for v in c.variables}))
def test_every_output_is_drawn_under_its_own_label_and_only_its_own_rule_s_lines(variable):
    owner = next(c for c in CRITERIA.values() if variable in c.variables)
    ax = plot_curves_vs_k(_summary(variable), variable, None, owner.decision).axes[0]
    assert ax.get_gid() == variable
    assert ax.get_ylabel() == owner.label_of(variable) + (f"\n({owner.citation})" if owner.citation else "")
    assert owner.label_of(variable) == (owner.label or variable if variable == owner.name else owner.labels.get(variable, variable))
    reads = variable == owner.decided_on and owner.decision.threshold is not None
    assert _dashed(ax) == ([float(owner.decision.threshold)] if reads else [])


def test_the_areas_are_not_drawn_under_delta_s_label_or_threshold():
    """consensus_area's own variable is the area A(k); its rule reads Delta(k): only Delta(k)'s figure has the
    threshold, and each is labelled by what it is."""
    criterion = CRITERIA["consensus_area"]
    areas = plot_curves_vs_k(_summary("consensus_area"), "consensus_area", None, criterion.decision).axes[0]
    assert "A(k)" in areas.get_ylabel() and "Δ" not in areas.get_ylabel() and _dashed(areas) == []
    delta = plot_against_k(KS, np.linspace(0.2, 0.01, 5), 3, variable="consensus_delta", label="g", name="Δ(k)",
                           rule=criterion.decision).axes[0]
    assert delta.get_ylabel() == label_of("consensus_delta") and "Δ(k)" in delta.get_ylabel()
    assert _dashed(delta) == [0.025]
    pac = plot_against_k(KS, np.linspace(0.2, 0.01, 5), 3, variable="pac", label="g", name="PAC",
                         rule=CRITERIA["pac"].decision).axes[0]
    assert pac.get_ylabel() == label_of("pac") and _dashed(pac) == []


def test_the_p_value_panel_draws_the_fitted_p_that_decides_and_alpha():
    p = {"rcsi_fit_p": ("beta fit (decides)", np.array([0.054, 0.001, 0.2, 0.5, 0.6])),
         "rcsi_p": ("Monte Carlo", np.array([0.077, 0.038, 0.3, 0.5, 0.6]))}
    left, right = plot_rcsi(KS, np.array([1.2, 0.9, 0.3, 0.1, 0.0]), p, 3, label="g", alpha=0.05).axes
    assert left.get_gid() == "rcsi" and left.get_ylabel() == label_of("rcsi")
    drawn = {line.get_gid(): line.get_ydata() for line in right.lines if line.get_gid()}
    assert set(drawn) == {"rcsi_fit_p", "rcsi_p"}
    np.testing.assert_array_equal(drawn["rcsi_fit_p"], p["rcsi_fit_p"][1])
    assert _dashed(right) == [0.05]


def outside(figure) -> list[str]:
    """Where the drawn texts of ``figure`` (titles, labels, ticks, legends: its tight box, as the renderer measures
    them) run past its edges, in pixels; empty when everything fits."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    tight = figure.get_tightbbox(canvas.get_renderer()).transformed(figure.dpi_scale_trans)  # in pixels
    box = figure.bbox
    sides = {"left": box.x0 - tight.x0, "right": tight.x1 - box.x1, "bottom": box.y0 - tight.y0, "top": tight.y1 - box.y1}
    return [f"{side} by {by:.0f} px" for side, by in sides.items() if by > 1]


def test_no_title_or_label_runs_past_the_figure():
    label = "colon_expression_2000_genes, n = 62, hc_average_linkage"
    figures = [
        plot_against_k(KS, np.linspace(0.3, 0.1, 5), 3, variable="pac", label=label, name="PAC",
                       low=np.full(5, 0.05), high=np.full(5, 0.4)),
        plot_against_k(KS, np.linspace(0.2, 0.01, 5), 3, variable="consensus_delta", label=label, name="Δ(k)",
                       rule=CRITERIA["consensus_area"].decision),
        plot_rcsi(KS, np.ones(5), {"rcsi_p": ("Monte Carlo", np.full(5, 0.04))}, 3, label=label),
        plot_item_consensus(np.array([0.9, 0.8, np.nan]), np.array([0, 0, 1]), 2, label=label, name="PAC"),
        plot_curves_vs_k(_summary("prediction_strength", "a_dataset_with_a_long_name", "kmeans_with_restarts"),
                         "prediction_strength", None, CRITERIA["prediction_strength"].decision),
    ]
    for figure in figures:
        assert outside(figure) == [], [ax.get_title() for ax in figure.axes]
