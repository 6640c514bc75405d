"""The consensus figures: read from the data each figure is drawn from and from the matplotlib objects, on hand-made
consensus matrices with known structure, then end to end on a small cube that stored assignments."""

from __future__ import annotations

import base64
import math
import shutil

import numpy as np
import pytest
from matplotlib.collections import LineCollection

from ordercube.pipeline.report.consensus import (
    CAP, cap_rule, cdf_curve, heat_map, heat_map_order, plot_against_k, plot_cdf, plot_heat_maps, plot_item_consensus, plot_rcsi,
    thinned,
)
from ordercube.pipeline.report.figures import Figures


def three_blocks(sizes=(7, 5, 9), seed=0):
    """A clean consensus matrix of three clusters, its items shuffled: (M, partition, own consensus)."""
    rng = np.random.default_rng(seed)
    truth = np.repeat(np.arange(len(sizes)), sizes)
    truth = truth[rng.permutation(truth.size)]
    matrix = (truth[:, None] == truth[None, :]).astype(float)
    return matrix, truth, np.ones(truth.size)


def empirical_cdf(matrix, x):
    """The CDF of the entries i < j at ``x``, computed here directly."""
    upper = matrix[np.triu_indices(len(matrix), 1)]
    return (upper[None, :] <= np.asarray(x)[:, None]).mean(axis=1)


def test_the_ordered_heat_map_of_three_clean_blocks_is_block_diagonal():
    matrix, partition, own = three_blocks()
    assert not np.array_equal(matrix, np.kron(np.eye(3), 1))  # shuffled: not block-diagonal as given
    shown = heat_map(matrix, partition, own)
    assert shown.step == 1 and len(shown.items) == 21
    assert np.all(np.diff(shown.clusters) >= 0)  # cluster by cluster
    sizes = np.bincount(shown.clusters)
    blocks = np.zeros((21, 21))
    edges = np.concatenate([[0], np.cumsum(sizes)])
    for lo, hi in zip(edges[:-1], edges[1:]):
        blocks[lo:hi, lo:hi] = 1.0
    np.testing.assert_array_equal(shown.matrix, blocks)
    # the figure draws exactly that matrix, and the clusters as its strips
    figure = plot_heat_maps({3: shown}, "blocks")
    images = [image for ax in figure.axes for inner in (ax, *ax.child_axes) for image in inner.get_images()]
    drawn = [np.asarray(image.get_array()) for image in images if np.asarray(image.get_array()).shape == (21, 21)]
    assert len(drawn) == 1
    np.testing.assert_array_equal(drawn[0], blocks)
    strips = [np.asarray(image.get_array()).ravel() for image in images if 1 in np.asarray(image.get_array()).shape]
    assert len(strips) == 2 and all(np.array_equal(strip, shown.clusters) for strip in strips)


def test_items_within_a_cluster_are_ordered_by_their_consensus_highest_first():
    partition = np.array([1, 0, 1, 0, 1, 0])
    own = np.array([0.5, 0.9, 0.8, 0.6, 0.8, np.nan])
    order = heat_map_order(partition, own)
    # cluster 0: items 1 (0.9), 3 (0.6), 5 (NaN last); cluster 1: 2 and 4 tie at 0.8 (by index), then 0 (0.5)
    assert order.tolist() == [1, 3, 5, 2, 4, 0]


@pytest.mark.parametrize("total", [1200, 501, 999, 5000])
def test_above_the_cap_every_ceil_n_over_cap_th_item_is_shown_and_said(total):
    order = np.random.default_rng(1).permutation(total)
    items, step = thinned(order)
    assert step == math.ceil(total / CAP) and CAP / 2 < len(items) <= CAP
    np.testing.assert_array_equal(items, order[::step])
    said = cap_rule(step, total)
    assert f"{total} items" in said and f"({len(items)} items" in said
    if total == 1200:
        assert step == 3 and len(items) == 400 and "every 3rd item" in said


def test_the_cap_on_a_1200_item_matrix_shows_400_items_and_the_figure_says_so():
    matrix, partition, own = three_blocks(sizes=(500, 300, 400), seed=3)
    shown = heat_map(matrix, partition, own)
    assert shown.matrix.shape == (400, 400) and shown.step == 3 and shown.total == 1200
    figure = plot_heat_maps({3: shown}, "big")
    assert "every 3rd of 1200 items" in figure.axes[0].get_xlabel()
    assert np.all(np.diff(shown.clusters) >= 0)
    assert set(np.unique(shown.matrix)) == {0.0, 1.0}
    assert cap_rule(1, 500) == "" and heat_map(*three_blocks(sizes=(250, 250))).step == 1


def test_the_cdf_of_clean_blocks_is_a_step_at_0_and_at_1_one_line_per_k():
    matrix, _, _ = three_blocks()
    x, y = cdf_curve(matrix)
    pairs = 21 * 20 / 2
    apart = (pairs - (7 * 6 + 5 * 4 + 9 * 8) / 2) / pairs  # the pairs in different blocks: consensus 0
    np.testing.assert_array_equal(x, [0, 0, 0, 1, 1])
    np.testing.assert_allclose(y, [0, apart, apart, 1, 1])
    noisy = np.clip(matrix + np.random.default_rng(2).uniform(-0.3, 0.3, matrix.shape), 0, 1)
    noisy = (noisy + noisy.T) / 2
    x_noisy, y_noisy = cdf_curve(noisy)
    assert np.all(np.diff(x_noisy) >= 0) and np.all(np.diff(y_noisy) >= 0) and y_noisy[-1] == 1.0
    middle = (x_noisy > 0.3) & (x_noisy < 0.7)
    np.testing.assert_allclose(y_noisy[middle], empirical_cdf(noisy, x_noisy[middle]))
    figure = plot_cdf({3: (x, y), 2: (x_noisy, y_noisy)}, "blocks")
    lines = figure.axes[0].lines
    assert [line.get_label() for line in lines] == ["k = 2", "k = 3"]
    np.testing.assert_array_equal(lines[1].get_ydata(), y)
    assert lines[1].get_drawstyle() == "steps-post"


def test_k_hat_is_starred_at_its_k_with_the_bootstrap_bars():
    ks = np.arange(2, 8)
    pac = np.array([0.3, 0.02, 0.1, 0.15, 0.2, 0.25])
    figure = plot_against_k(ks, pac, 3, variable="pac", label="g", name="PAC", low=pac - 0.01, high=pac + 0.03)
    ax = figure.axes[0]
    stars = [line for line in ax.lines if line.get_marker() == "*"]
    assert len(stars) == 1 and stars[0].get_xdata()[0] == 3 and stars[0].get_ydata()[0] == pytest.approx(0.02)
    bars = [c for c in ax.collections if isinstance(c, LineCollection)]
    segments = bars[0].get_segments()
    np.testing.assert_allclose([segment[:, 0] for segment in segments], np.c_[ks, ks])
    np.testing.assert_allclose([segment[:, 1] for segment in segments], np.c_[pac - 0.01, pac + 0.03])
    # a percentile interval that leaves the curve outside it is drawn as it is
    figure = plot_against_k(ks, pac, 3, variable="pac", label="g", name="PAC", low=pac + 0.01, high=pac + 0.02)
    segments = [c for c in figure.axes[0].collections if isinstance(c, LineCollection)][0].get_segments()
    np.testing.assert_allclose([segment[:, 1] for segment in segments], np.c_[pac + 0.01, pac + 0.02])
    # no k̂ (the criterion decided none), no bars without an interval
    ax = plot_against_k(ks, pac, -1, variable="pac", label="g", name="PAC").axes[0]
    assert not [line for line in ax.lines if line.get_marker() == "*"] and not ax.collections


def test_rcsi_marks_k_hat_in_both_panels_and_draws_the_p_values_and_se_bars():
    ks = np.arange(2, 6)
    rcsi, mc, beta = np.array([0.1, 0.9, 0.4, 0.2]), np.array([0.3, 0.002, 0.04, 0.5]), np.array([0.2, 0.001, 0.03, 0.6])
    se = np.array([0.05, 0.1, 0.02, 0.03])
    figure = plot_rcsi(ks, rcsi, {"rcsi_fit_p": ("beta fit", beta), "rcsi_p": ("Monte Carlo", mc)}, 3, label="g", se=se,
                       alpha=0.01)
    left, right = [ax for ax in figure.axes if ax.get_visible()]
    star = [line for line in left.lines if line.get_marker() == "*"]
    assert star[0].get_xdata()[0] == 3 and star[0].get_ydata()[0] == pytest.approx(0.9)
    segments = left.containers[0].lines[2][0].get_segments()
    np.testing.assert_allclose([segment[:, 1] for segment in segments], np.c_[rcsi - se, rcsi + se])
    curves = {line.get_label(): line.get_ydata() for line in right.lines if line.get_marker() == "o"}
    np.testing.assert_array_equal(curves["Monte Carlo"], mc)
    np.testing.assert_array_equal(curves["beta fit"], beta)
    assert [line.get_ydata()[0] for line in right.lines if line.get_linestyle() == "--"] == [0.01]
    assert right.get_yscale() == "log"
    assert len([ax for ax in plot_rcsi(ks, rcsi, {}, 3, label="g").axes if ax.get_visible()]) == 1


def test_item_consensus_has_a_box_and_the_points_of_every_cluster():
    partition = np.array([0, 0, 0, 1, 1, 2, 2, 2, 2])
    own = np.array([0.9, 0.8, 0.7, 1.0, 0.5, 0.6, 0.6, 0.9, 0.95])
    ax = plot_item_consensus(own, partition, 3, label="g", name="PAC").axes[0]
    points = [line for line in ax.lines if line.get_marker() == "o"]
    assert len(points) == 3
    for c, line in enumerate(points):
        np.testing.assert_array_equal(np.sort(line.get_ydata()), np.sort(own[partition == c]))
        assert np.all(np.abs(line.get_xdata() - c) <= 0.25)
    assert [label.get_text() for label in ax.get_xticklabels()] == ["1\n(3)", "2\n(2)", "3\n(4)"]


def test_a_cluster_of_one_item_is_counted_and_said_alone_not_drawn_empty():
    """An item alone in its cluster has no pair within it, so no item consensus (NaN): its cluster still counts one
    item and says so, as ConsensusClusterPlus's item consensus is a mean over the other items of the cluster."""
    partition = np.array([0, 0, 0, 1, 0, 0])
    own = np.array([0.9, 0.8, 0.7, np.nan, 0.85, 0.6])
    ax = plot_item_consensus(own, partition, 2, label="g", name="PAC").axes[0]
    assert [label.get_text() for label in ax.get_xticklabels()] == ["1\n(5)", "2\n(1)"]
    assert [text.get_text() for text in ax.texts] == ["alone"] and ax.texts[0].get_position()[0] == 1


def test_a_figure_a_section_shows_is_drawn_by_finish_kept_when_unchanged_and_left_out_of_the_page_list(tmp_path):
    ks, pac = np.arange(2, 5), np.array([0.2, 0.1, 0.3])
    figures = Figures(tmp_path)
    figures.draw("other", plot_against_k, ks, pac, 3, variable="pac", label="g", name="PAC")
    fragment = "<p>before</p>" + figures.shown("consensus_g_pac", "PAC & more", plot_against_k, ks, pac, 3,
                                               variable="pac", label="g", name="PAC")
    fragment += figures.shown("nothing", "never shown", lambda: None)
    path = tmp_path / "consensus_g_pac.png"
    assert not path.exists() and figures.names == ["other.png"]  # asked for, drawn by finish
    figures.finish()
    assert path.read_bytes()[:4] == b"\x89PNG" and sorted(figures.drawn) == ["consensus_g_pac.png", "other.png"]
    page = figures.resolved(fragment)
    assert page.startswith("<p>before</p><figure id=\"consensus_g_pac\"") and page.endswith("</figcaption></figure>")
    assert "PAC &amp; more" in page and "never shown" not in page and "<!--" not in page
    assert base64.b64decode(page.split("base64,")[1].split('"')[0]) == path.read_bytes()
    again = Figures(tmp_path)
    kept = again.shown("consensus_g_pac", "PAC", plot_against_k, ks, pac, 3, variable="pac", label="g", name="PAC")
    again.finish()
    assert again.kept == ["consensus_g_pac.png"] and again.drawn == [] and "base64," in again.resolved(kept)


@pytest.fixture(scope="module")
def plain_cube(tmp_path_factory):
    """A cube of k-means over two halves: no method stored assignments."""
    from conftest import cli_in_process, small_config, write_config

    folder = tmp_path_factory.mktemp("plain")
    path = write_config(folder / "c.yaml", **small_config(n=[40], resamples=4))
    result = cli_in_process("run", str(path), "--out", str(folder / "c.zarr"), "--workers", "0", "--no-progress")
    assert result.returncode == 0, result.stderr
    return folder / "c.zarr"


def context_of(cube, folder):
    from ordercube.pipeline.report.section import Reduced, SectionContext
    from ordercube.pipeline.report.write import table_of

    reduced = Reduced.of(cube)
    return SectionContext(cube=cube, reduced=reduced, table=table_of(reduced), figures=Figures(folder), published={},
                          sweeps={}, criteria=("consensus_area", "pac"))


def test_the_section_is_none_for_a_cube_without_assignments(plain_cube, tmp_path):
    from ordercube.pipeline.cube.owner import open_cube
    from ordercube.pipeline.report.consensus import groups_with_assignments, section

    cube = open_cube(plain_cube).load()
    assert "assignment" not in cube and groups_with_assignments(cube) == []
    context = context_of(cube, tmp_path)
    assert section(context) is None
    assert list(tmp_path.iterdir()) == [] and context.figures.names == []


BLOB_CENTRES = np.array([[0.0, 0.0, 0.0], [6.0, 0.0, 0.0], [0.0, 6.0, 0.0]])


@pytest.fixture(scope="module")
def consensus_report(tmp_path_factory):
    """Three well-separated blobs of 20 items in a file, k-means over k = 2..5 storing its assignments; the report."""
    from conftest import cli_in_process, write_config

    folder = tmp_path_factory.mktemp("consensus")
    rng = np.random.default_rng(5)
    points = np.vstack([centre + rng.standard_normal((20, 3)) for centre in BLOB_CENTRES])
    np.savetxt(folder / "blobs.csv", points, delimiter=",")
    path = write_config(folder / "c.yaml", name="cc", seed=3, n=["all"], k=[2, 3, 4, 5], resamples=10,
                        datasets=[{"name": "blobs", "kind": "file", "path": str(folder / "blobs.csv"), "header": False}],
                        methods=[{"name": "km", "algorithm": "kmeans", "params": {"n_init": 3},
                                  "predictor": "nearest_centroid", "criteria": ["lange", "consensus_area", "pac"]}])
    result = cli_in_process("run", str(path), "--out", str(folder / "c.zarr"), "--workers", "0", "--no-progress")
    assert result.returncode == 0, result.stderr
    result = cli_in_process("report", str(folder / "c.zarr"), "--out", str(folder / "r"))
    assert result.returncode == 0, result.stderr
    return folder / "c.zarr", folder / "r", result.stdout


GROUP = "consensus_blobs_60_km"


def test_the_report_writes_the_figures_and_matrices_and_says_k_hat(consensus_report):
    import pandas as pd

    from ordercube.pipeline.cube.owner import open_cube

    cube_path, folder, printed = consensus_report
    for figure in ("heatmaps", "cdf", "delta", "pac", "item_consensus"):
        assert (folder / f"{GROUP}_{figure}.png").read_bytes()[:4] == b"\x89PNG", figure
    assert not (folder / f"{GROUP}_rcsi.png").exists()  # no reference data sets: no M3C
    # the matrices, recomputed here from the stored assignments: co-clustered over co-drawn
    stored = np.load(folder / f"{GROUP}_matrices.npz")
    assignment = open_cube(cube_path)["assignment"].sel(dataset="blobs", n=60, model="km").values
    assert stored["ks"].tolist() == [2, 3, 4, 5]
    for i, k in enumerate(stored["ks"]):
        labels = assignment[i].reshape(-1, 60)
        drawn = (labels[:, :, None] >= 0) & (labels[:, None, :] >= 0)
        together = drawn & (labels[:, :, None] == labels[:, None, :])
        with np.errstate(invalid="ignore"):
            expected = together.sum(0) / drawn.sum(0)
        np.testing.assert_allclose(stored[f"k{k}"], expected)
        partition, order = stored[f"partition_k{k}"], stored[f"order_k{k}"]
        assert sorted(order.tolist()) == list(range(60)) and np.all(np.diff(partition[order]) >= 0)
        assert len(np.unique(partition)) == k
    # three blobs 6 sd apart: the consensus partition at k = 3 is the blobs, up to the labels' names
    blobs = np.repeat(np.arange(3), 20)
    assert len({(a, b) for a, b in zip(blobs, stored["partition_k3"])}) == 3
    table = pd.read_csv(folder / "selection.csv").set_index("criterion")
    k_hat = {name: int(table.loc[name, "k_hat"]) for name in ("consensus_area", "pac")}
    assert k_hat["pac"] == 3
    assert f"blobs, n = 60, km: k̂ by Δ(k) {k_hat['consensus_area']}, PAC {k_hat['pac']}" in printed


def test_the_page_embeds_every_consensus_figure_once_and_loads_nothing(consensus_report):
    import re

    _, folder, _ = consensus_report
    page = (folder / "index.html").read_text()
    alts = re.findall(r'<img alt="([^"]+)"', page)
    assert sorted(alts) == sorted(path.stem for path in folder.glob("*.png"))  # each figure once
    assert {f"{GROUP}_{name}" for name in ("heatmaps", "cdf", "delta", "pac", "item_consensus")} <= set(alts)
    sources = re.findall(r'(?:src|href)="([^"]*)"', page)
    assert sources and all(source.startswith(("data:image/png;base64,", "#")) for source in sources), sources
    section = page[page.index("Consensus clustering"):page.index("<h2>Figures</h2>")]
    assert f"{GROUP}_matrices.npz" in section and f'alt="{GROUP}_heatmaps"' in section


@pytest.mark.skipif(shutil.which("chromium") is None, reason="Debian's chromium is not installed (apt-get install chromium)")
def test_chromium_loads_the_consensus_figures_without_console_errors(consensus_report):
    from test_report_html import Page, _browser

    _, folder, _ = consensus_report
    loaded = _browser("--dump-dom", page=folder / "index.html")
    assert loaded.returncode == 0, loaded.stderr[-2000:]
    assert [line for line in loaded.stderr.splitlines() if "CONSOLE" in line or "Uncaught" in line] == []
    page = Page()
    page.feed(loaded.stdout)
    shown = {image["alt"]: image for image in page.images}
    assert sorted(shown) == sorted(path.stem for path in folder.glob("*.png"))
    for name in ("heatmaps", "cdf", "pac"):
        image = shown[f"{GROUP}_{name}"]
        assert image["data-loaded"] == "yes" and int(image["data-width"]) > 300


def test_m3c_on_the_consensus_scheme_draws_rcsi_and_says_its_k_hat(tmp_path):
    """The consensus scheme with M3C's reference data sets (once the scheme and the criterion are registered)."""
    import pandas as pd

    from conftest import cli_in_process, write_config
    from ordercube.tasks.criteria import CRITERIA
    from ordercube.tasks.schemes import SCHEMES

    if "consensus" not in SCHEMES or "m3c" not in CRITERIA:
        pytest.skip("the consensus scheme or the m3c criterion is not registered in this checkout")
    rng = np.random.default_rng(5)
    points = np.vstack([centre + rng.standard_normal((20, 3)) for centre in BLOB_CENTRES])
    np.savetxt(tmp_path / "blobs.csv", points, delimiter=",")
    path = write_config(tmp_path / "m.yaml", name="m", seed=3, n=["all"], k=[2, 3, 4, 5], resamples=10,
                        datasets=[{"name": "blobs", "kind": "file", "path": str(tmp_path / "blobs.csv"), "header": False}],
                        methods=[{"name": "km", "algorithm": "kmeans", "params": {"n_init": 3}, "scheme": "consensus",
                                  "scheme_params": {"p_item": 0.8, "references": 3},
                                  "criteria": ["consensus_area", "pac", "m3c"]}])
    result = cli_in_process("run", str(path), "--out", str(tmp_path / "m.zarr"), "--workers", "0", "--no-progress")
    assert result.returncode == 0, result.stderr
    result = cli_in_process("report", str(tmp_path / "m.zarr"), "--out", str(tmp_path / "r"))
    assert result.returncode == 0, result.stderr
    folder = tmp_path / "r"
    assert (folder / f"{GROUP}_rcsi.png").read_bytes()[:4] == b"\x89PNG"
    table = pd.read_csv(folder / "selection.csv").set_index("criterion")
    k_hat = int(table.loc["m3c", "k_hat"])
    line = next(line for line in result.stdout.splitlines() if line.startswith("blobs, n = 60, km: k̂ by"))
    assert (f"M3C {k_hat} (beta fit p = " if k_hat > 0 else "M3C none") in line
    assert k_hat < 0 or ", Monte Carlo p = " in line
    assert f'alt="{GROUP}_rcsi"' in (folder / "index.html").read_text()


def test_every_curve_the_figures_draw_is_a_column_of_a_csv_and_a_table_of_the_page(consensus_report):
    """Δ(k), the areas, PAC and its bootstrap bounds per k, as the reduction gives them, in
    ``<group>_curves.csv`` and in a table of index.html; the item consensus the figure draws in ``<group>_items.csv``."""
    import pandas as pd

    from ordercube.pipeline.cube.owner import open_cube
    from ordercube.pipeline.report.section import Reduced

    cube_path, folder, _ = consensus_report
    curves = pd.read_csv(folder / f"{GROUP}_curves.csv")
    reduced = Reduced.of(open_cube(cube_path).load()).reduced
    at = {"dataset": "blobs", "n": 60, "model": "km"}
    assert curves["k"].tolist() == [2, 3, 4, 5]
    for name in ("consensus_area", "consensus_delta", "pac", "pac_lo", "pac_hi"):
        np.testing.assert_allclose(curves[name], reduced[name].sel(at).values, rtol=1e-12, err_msg=name)
    page = (folder / "index.html").read_text()
    table = page[page.index(f'<table id="{GROUP}_curves">'):]
    table = table[:table.index("</table>")]
    assert "<th>consensus_delta</th>" in table and f"<td>{curves['consensus_delta'].iloc[0]:.4g}</td>" in table
    items = pd.read_csv(folder / f"{GROUP}_items.csv")
    stored = np.load(folder / f"{GROUP}_matrices.npz")
    k = int(pd.read_csv(folder / "selection.csv").set_index("criterion").loc["consensus_area", "k_hat"])
    assert len(items) == 60 and (items["cluster"] - 1).tolist() == stored[f"partition_k{k}"].tolist()
