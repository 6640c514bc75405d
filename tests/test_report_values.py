"""Every value a figure of the report shows is in a CSV the report writes and in a table of ``index.html``: for a
small cube of each model family (clustering with a swept generator and transfer costs, classifiers, matrix models),
every series the report's figures plot (read from the matplotlib objects as they are saved) is found in one column of
one of the report's CSV files, and every CSV is named in the page with its rows."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from matplotlib.collections import QuadMesh
from matplotlib.image import AxesImage

from conftest import cli_in_process, small_config, write_config

TRIANGLE = [[0.0, 1.0], [0.8660254037844386, -0.5], [-0.8660254037844386, -0.5]]


def series_of(figure) -> list[tuple[str, np.ndarray]]:
    """Every data series ``figure`` plots, named by its axes' title: each line's y values (not the reference lines
    drawn across an axes, not error-bar caps) and each image's or mesh's values; in an axes holding an image, only
    the image (the markers on it sit at its cells' positions, not at values)."""
    found = []
    for ax in figure.axes:
        if getattr(ax, "_colorbar", None) is not None:  # a colour bar's scale, not data
            continue
        name = ax.get_title() or ax.get_ylabel()
        images = [artist for artist in (*ax.images, *ax.collections) if isinstance(artist, (AxesImage, QuadMesh))]
        if images:
            found += [(f"{name}: image", np.asarray(image.get_array(), dtype=float).ravel()) for image in images]
            continue
        caps = {id(cap) for container in ax.containers for cap in getattr(container, "lines", [(), ()])[1] or ()}
        for line in ax.lines:
            if id(line) in caps or line.get_transform() != ax.transData:  # axhline, axvline: axes coordinates in x or y
                continue
            y = np.asarray(line.get_ydata(), dtype=float)
            if np.isfinite(y).any():
                found.append((f"{name}: {line.get_label()}", y[np.isfinite(y)]))
    return found


def found_in(values: np.ndarray, tables: dict[str, pd.DataFrame]) -> str | None:
    """The first ``file:column`` holding every one of ``values`` (to 1e-9, relative), None if none does."""
    for file, table in tables.items():
        for column in table.columns:
            data = pd.to_numeric(table[column], errors="coerce").to_numpy(dtype=float)
            data = np.unique(data[np.isfinite(data)])
            if data.size == 0:
                continue
            at = np.clip(np.searchsorted(data, values), 1, data.size - 1)
            nearest = np.minimum(np.abs(data[at] - values), np.abs(data[at - 1] - values))
            if data.size == 1:
                nearest = np.abs(data[0] - values)
            if np.all(nearest <= 1e-9 * np.maximum(1.0, np.abs(values))):
                return f"{file}:{column}"
    return None


@pytest.fixture
def captured(monkeypatch):
    """The figures the report saves, by file stem."""
    from ordercube.pipeline.report import figures

    saved = {}
    original = figures.save

    def save(figure, path):
        saved[path.stem] = figure
        original(figure, path)

    monkeypatch.setattr(figures, "save", save)
    return saved


def report_of(config_path, folder, saved):
    result = cli_in_process("run", str(config_path), "--out", str(folder / "c.zarr"), "--workers", "0", "--no-progress")
    assert result.returncode == 0, result.stderr
    from ordercube.pipeline.cube.owner import open_cube
    from ordercube.pipeline.report.write import write_report

    write_report(open_cube(folder / "c.zarr").load(), folder / "r")  # every figure drawn in this process
    assert saved
    return folder / "r"


def check_every_series_is_in_a_csv(report, saved, expected_csvs):
    tables = {path.name: pd.read_csv(path) for path in sorted(report.glob("*.csv")) if path.stat().st_size > 1}
    assert set(expected_csvs) <= set(tables), sorted(tables)
    missing = []
    for stem, figure in saved.items():
        for name, values in series_of(figure):
            if found_in(values, tables) is None:
                missing.append(f"{stem} / {name}: {values[:6]}")
    assert missing == [], "\n".join(missing)
    page = (report / "index.html").read_text()
    for csv in expected_csvs:  # each CSV named in the page, a table with as many rows as the file
        assert f"<code>{csv}</code>" in page, csv
        if csv != "selection.csv":
            table = page[page.index(f'<table id="{csv.removesuffix(".csv")}">'):]
            assert table[:table.index("</table>")].count("<tr>") == len(tables[csv]) + 1, csv
    return tables


def test_clustering_with_a_sweep_and_transfer_costs(tmp_path, captured):
    config = small_config(n=[60, 120], k=[1, 2, 3, 4], resamples=4,
                          datasets=[{"name": "tri", "kind": "gaussian_mixture", "params": {"centers": TRIANGLE},
                                     "sweep": {"std": [0.2, 1.5]}},
                                    {"name": "gauss", "kind": "lange_gaussians3"}],
                          methods=[{"name": "km", "algorithm": "kmeans", "params": {"n_init": 2},
                                    "predictor": "nearest_centroid",
                                    "criteria": ["lange", "prediction_strength", "gap", "train_cost", "mtc_nn_object"]}])
    report = report_of(write_config(tmp_path / "c.yaml", **config), tmp_path, captured)
    assert {"lange_vs_k", "lange_scaling", "lange_selection_frequency", "gap_vs_k", "transfer_costs_km_n60",
            "sweep_tri_km_n60"} <= set(captured)
    tables = check_every_series_is_in_a_csv(report, captured, ["curves.csv", "sweep.csv", "sweep_frequency.csv",
                                                               "transfer_costs.csv"])
    # the values are the reducers', not merely present: the shares of sweep_frequency are the selection frequency
    curves, shares = tables["curves.csv"], tables["sweep_frequency.csv"]
    joined = shares.merge(curves.rename(columns={"variable": "criterion"}), on=["dataset", "n", "method", "criterion", "k"])
    assert len(joined) == len(shares) > 0
    np.testing.assert_allclose(joined["frequency"], joined["share_choosing_k"], rtol=1e-12)
    selection = tables["selection.csv"]
    assert np.allclose(selection["failure_rate_se"],
                       np.sqrt(selection["failure_rate"] * (1 - selection["failure_rate"]) / selection["trials"]),
                       equal_nan=True)


def test_classifiers(tmp_path, captured):
    from test_supervised import tiny_config

    config = tiny_config(tmp_path)
    config["resamples"] = 3
    report = report_of(write_config(tmp_path / "c.yaml", **config), tmp_path, captured)
    assert {"supervised_error_vs_k", "supervised_selectors"} <= set(captured)
    check_every_series_is_in_a_csv(report, captured, ["curves.csv", "supervised.csv", "supervised_curves.csv"])


def test_matrix_models_with_a_noise_sweep(tmp_path, captured):
    from PIL import Image

    rng = np.random.default_rng(0)
    image = np.kron(rng.integers(0, 256, size=(4, 4)), np.ones((8, 8))).astype(np.uint8)  # 32 x 32, rank about 4
    Image.fromarray(image).save(tmp_path / "blocks.png")
    config = {"name": "img", "seed": 1, "k": {"from": 1, "to": 6}, "resamples": 2,
              "datasets": [{"name": "blocks", "kind": "image", "path": str(tmp_path / "blocks.png"),
                            "params": {"patch": 4}, "sweep": {"noise": [10, 80]}}],
              "methods": [{"name": "svd", "algorithm": "truncated_svd", "criteria": ["mtc_matrix", "psnr"]}]}
    report = report_of(write_config(tmp_path / "c.yaml", **config), tmp_path, captured)
    assert {"matrix_ranks", "psnr_crest_blocks_svd"} <= set(captured)
    check_every_series_is_in_a_csv(report, captured, ["curves.csv", "matrix_ranks.csv", "psnr_crest_blocks_svd.csv",
                                                      "psnr_crest_blocks_svd_choices.csv", "transfer_costs.csv"])


def test_a_series_not_in_any_csv_is_found_missing():
    """The check itself: a value that no column holds is reported, one that a column holds is found."""
    tables = {"a.csv": pd.DataFrame({"x": [0.1, 0.2, 0.3], "name": ["p", "q", "r"]})}
    assert found_in(np.array([0.2, 0.3]), tables) == "a.csv:x"
    assert found_in(np.array([0.2, 0.25]), tables) is None
    assert re.fullmatch(r"a\.csv:x", found_in(np.array([0.1 + 1e-12]), tables))
