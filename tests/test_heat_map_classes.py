"""The consensus heat maps show what the data's file says of the items: the known classes as a strip beside the
cluster strip, with a legend naming them, and the items' names on the rows when there are few enough; the cube
stores both at creation, and the report's items table holds them."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from matplotlib.colors import to_rgba

from ordercube.pipeline.reduce.assignments import KnownItems, known_items
from ordercube.pipeline.report.consensus import HeatMap, plot_heat_maps
from ordercube.pipeline.report.known_items import NAME_INCHES, NAME_POINTS, NAMES_AT_MOST, text_inches
from test_figure_labels import outside

CLASSES = ("normal", "tumour", "cell line")
LABELS = np.array([0, 1, 0, 2, 1, -1])  # item 5: no known class
NAMES = ("s0", "s1", "s2", "s3", "a_sample_name_far_longer_than_the_left_margin_holds", "s5")
ORDER = np.array([4, 0, 2, 5, 1, 3])  # the heat map's order of the six items


def six_items() -> HeatMap:
    """A hand-built heat map of 6 items in ORDER, two clusters of 3."""
    clusters = np.array([0, 0, 0, 1, 1, 1])
    matrix = (clusters[:, None] == clusters[None, :]).astype(float)
    return HeatMap(matrix=matrix, clusters=clusters, items=ORDER, step=1, total=6)


def row_names(ax) -> list[str]:
    """The item names drawn beside the rows of the heat map ``ax``, top to bottom."""
    named = sorted((text.get_position()[1], text.get_text()) for text in ax.texts if text.get_gid() == "item_name")
    return [name for _, name in named]


def strips(figure, gid):
    return [image for ax in figure.axes for image in ax.get_images() if image.get_gid() == gid]


def colours_of(image) -> np.ndarray:
    """The RGBA colour each cell of a strip image is drawn in, in the strip's order."""
    values = np.asarray(image.get_array()).ravel()
    return image.cmap(image.norm(values))


def test_the_class_strip_colours_each_shown_item_by_its_class_in_the_heat_map_s_order():
    known = KnownItems(classes=CLASSES, labels=LABELS, names=NAMES)
    figure = plot_heat_maps({2: six_items()}, "six", known)
    drawn = strips(figure, "known_class")
    assert len(drawn) == 2  # left and top
    legend = figure.legends[0]
    assert [text.get_text() for text in legend.get_texts()] == list(CLASSES)
    by_class = {text.get_text(): to_rgba(handle.get_facecolor()) for text, handle in zip(legend.get_texts(),
                                                                                         legend.legend_handles)}
    assert len(set(by_class.values())) == 3
    expected = [by_class[CLASSES[LABELS[i]]] if LABELS[i] >= 0 else (1.0, 1.0, 1.0, 1.0) for i in ORDER]
    for image in drawn:
        np.testing.assert_allclose(colours_of(image), expected)
    # the rows are named in the map's order, the long name cut to what the left margin holds
    ax = figure.axes[0]
    names = row_names(ax)
    assert names[1:] == ["s0", "s2", "s5", "s1", "s3"]
    assert names[0].endswith("…") and NAMES[4].startswith(names[0][:-1]) and len(names[0]) > 10
    assert text_inches(names[0], NAME_POINTS) <= NAME_INCHES < text_inches(NAMES[4][: len(names[0])] + "…", NAME_POINTS)
    rows = [text.get_position()[1] for text in ax.texts if text.get_gid() == "item_name"]
    np.testing.assert_allclose(rows, np.arange(6) + 0.5)  # on the rows' centres, in the data's coordinates
    assert outside(figure) == []


def test_without_labels_names_only_and_without_either_nothing_more():
    named = plot_heat_maps({2: six_items()}, "six", KnownItems(classes=(), labels=np.full(6, -1), names=NAMES))
    assert strips(named, "known_class") == [] and named.legends == []
    assert row_names(named.axes[0])[1:3] == ["s0", "s2"]
    plain = plot_heat_maps({2: six_items()}, "six")
    assert strips(plain, "known_class") == [] and row_names(plain.axes[0]) == [] and list(plain.axes[0].get_yticks()) == []


def test_above_the_names_limit_the_rows_are_not_named_but_the_classes_are_drawn():
    count = NAMES_AT_MOST + 1
    clusters = np.repeat([0, 1], [40, count - 40])
    order = np.random.default_rng(0).permutation(count)
    shown = HeatMap(matrix=np.eye(count), clusters=clusters, items=order, step=1, total=count)
    labels = np.arange(count) % 3
    figure = plot_heat_maps({2: shown}, "many", KnownItems(CLASSES, labels, tuple(f"i{j}" for j in range(count))))
    assert list(figure.axes[0].get_yticks()) == []
    left = strips(figure, "known_class")[0]
    np.testing.assert_array_equal(np.asarray(left.get_array()).ravel(), labels[order] + 1)


def write_labelled(folder, rows_per_class=6):
    """Three blobs in a CSV with a row-name column and a class column; the classes' names by code (sorted)."""
    rng = np.random.default_rng(5)
    centres = np.array([[0.0, 0.0], [6.0, 0.0], [0.0, 6.0]])
    tissues = ["tumour", "normal", "cell line"]
    frame = pd.DataFrame(np.vstack([c + rng.standard_normal((rows_per_class, 2)) for c in centres]), columns=["a", "b"])
    frame.insert(0, "id", [f"patient-{i:02d}" for i in range(len(frame))])
    frame["tissue"] = np.repeat(tissues, rows_per_class)
    frame = frame.iloc[rng.permutation(len(frame))].reset_index(drop=True)
    path = folder / "blobs.csv"
    frame.to_csv(path, index=False)
    return path, frame


@pytest.fixture(scope="module")
def labelled(tmp_path_factory):
    from conftest import cli_in_process, write_config

    folder = tmp_path_factory.mktemp("labelled")
    path, frame = write_labelled(folder)
    dataset = {"name": "blobs", "kind": "file", "path": str(path), "row_names": "id", "labels": {"column": "tissue"}}
    config = write_config(folder / "c.yaml", name="cc", seed=3, n=["all"], k=[2, 3], resamples=6, datasets=[dataset],
                          methods=[{"name": "km", "algorithm": "kmeans", "params": {"n_init": 2},
                                    "predictor": "nearest_centroid", "criteria": ["consensus_area", "pac"]}])
    result = cli_in_process("run", str(config), "--out", str(folder / "c.zarr"), "--workers", "0", "--no-progress")
    assert result.returncode == 0, result.stderr
    result = cli_in_process("report", str(folder / "c.zarr"), "--out", str(folder / "r"))
    assert result.returncode == 0, result.stderr
    return folder, frame


def test_the_cube_stores_each_item_s_class_and_name_in_the_file_s_order(labelled):
    from ordercube.pipeline.cube.owner import open_cube

    folder, frame = labelled
    cube = open_cube(folder / "c.zarr").load()
    known = known_items(cube, "blobs")
    assert known.names == tuple(frame["id"])
    assert [known.classes[code] for code in known.labels] == list(frame["tissue"])
    assert sorted(known.classes) == sorted(set(frame["tissue"]))
    assert "item_class" in cube.coords and "item_name" in cube.coords  # coordinates, not data variables


def test_the_items_table_names_each_item_and_its_known_class(labelled):
    folder, frame = labelled
    items = pd.read_csv(folder / "r" / "consensus_blobs_18_km_items.csv")
    assert items["name"].tolist() == frame["id"].tolist()
    assert items["known_class"].tolist() == frame["tissue"].tolist()
    page = (folder / "r" / "index.html").read_text()
    assert "its known class in the data&#x27;s labels" in page and "rows: the items&#x27; names" in page


def test_a_cube_made_before_the_items_coordinates_reports_without_them(labelled, tmp_path):
    """A cube whose assignments came without ``item_class`` and ``item_name`` (made by an earlier version) opens
    and reports; its heat maps have no class strip."""
    import shutil

    import zarr

    from conftest import cli_in_process
    from ordercube.pipeline.cube.metadata import consolidate
    from ordercube.pipeline.cube.owner import open_cube

    folder, _ = labelled
    old = tmp_path / "old.zarr"
    shutil.copytree(folder / "c.zarr", old)
    group = zarr.open_group(old, mode="r+")
    for name in ("item_class", "item_name"):
        del group[name]
    group["assignment"].attrs["coordinates"] = "true_k items"
    consolidate(group)
    cube = open_cube(old).load()
    assert known_items(cube, "blobs") is None
    result = cli_in_process("report", str(old), "--out", str(tmp_path / "r"))
    assert result.returncode == 0, result.stderr
    items = pd.read_csv(tmp_path / "r" / "consensus_blobs_18_km_items.csv")
    assert list(items.columns) == ["item", "cluster", "item_consensus"]


def test_a_dataset_added_to_the_cube_brings_its_items_classes_and_names(labelled, tmp_path):
    """Growing the cube by a second labelled dataset with more items: both datasets' classes and names, each in its
    file's order, the first's beyond its items left unknown."""
    import shutil

    import yaml

    from conftest import cli_in_process, write_config
    from ordercube.pipeline.cube.owner import open_cube

    folder, frame = labelled
    shutil.copytree(folder / "c.zarr", tmp_path / "c.zarr")
    config = yaml.safe_load((folder / "c.yaml").read_text())
    more = pd.DataFrame({"name": [f"r{i}" for i in range(25)], "x": np.arange(25.0), "y": np.arange(25.0) % 7,
                         "group": ["b", "a"] * 12 + ["b"]})
    more.to_csv(tmp_path / "more.csv", index=False)
    config["datasets"].append({"name": "more", "kind": "file", "path": str(tmp_path / "more.csv"), "row_names": "name",
                               "labels": {"column": "group"}})
    path = write_config(tmp_path / "c.yaml", **config)
    result = cli_in_process("run", str(path), "--out", str(tmp_path / "c.zarr"), "--workers", "0", "--no-progress")
    assert result.returncode == 0, result.stderr
    cube = open_cube(tmp_path / "c.zarr").load()
    first, second = known_items(cube, "blobs"), known_items(cube, "more")
    assert first.names == tuple(frame["id"]) and [first.classes[c] for c in first.labels] == list(frame["tissue"])
    assert second.names == tuple(more["name"]) and second.classes == ("a", "b")
    assert second.labels.tolist() == [1, 0] * 12 + [1]
    assert cube.sizes["item"] == 25 and cube["item_class"].sel(dataset="blobs").values[18:].tolist() == [-1] * 7
