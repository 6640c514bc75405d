"""Matrix models (Frank et al. 2011): matrix datasets, the models' criteria in the cube, the aggregation rules, bad input.

The kernels themselves are checked in ``test_lowrank.py`` and ``test_boolean_mf.py``; here, that a sweep stores
exactly what they give for the trial's own draw, that the reducers decide as the paper does, and that nothing is
misread.
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from PIL import Image

from conftest import cli_in_process, write_config
from ordercube import open_cube
from ordercube.pipeline.reduce.select import choice_per_trial, criterion_scores, select_k
from ordercube.tasks.algorithms import boolean_mf, lowrank
from ordercube.tasks.datasets import patches
from ordercube.tasks.datasets.matrices import MatrixSource
from ordercube.tasks.seeding import Purpose, label_id, stream

SVD_CRITERIA = ["mtc_matrix", "opcv_half", "opcv_fifth", "coverage_rule", "increment_rule", "denoise_error"]


def boolean_config(path, **overrides) -> dict:
    config = {"name": "bool", "seed": 11, "k": {"from": 1, "to": 12}, "resamples": 3,
              "datasets": [{"name": "m", "kind": "boolean_matrix", "path": str(path), "params": {"noise": 0.05}}],
              "methods": [{"name": "svd", "algorithm": "boolean_svd", "criteria": SVD_CRITERIA},
                          {"name": "bmf", "algorithm": "boolean_mf", "criteria": ["mtc_matrix"]}]}
    config.update(overrides)
    return config


def blocks_matrix(rng: np.random.Generator, users: int = 60, permissions: int = 40) -> np.ndarray:
    """Users with one or two of four roles, each role a block of permissions: a Boolean matrix of rank about 4."""
    roles = np.zeros((4, permissions), dtype=int)
    for t in range(4):
        roles[t, t * 10:(t + 1) * 10] = 1
    assignment = rng.random((users, 4)) < 0.35
    assignment[np.arange(users), rng.integers(4, size=users)] = True
    return (assignment.astype(int) @ roles > 0).astype(int)


def write_dense(path, X: np.ndarray) -> None:
    header = "user," + ",".join(f"p{j}" for j in range(X.shape[1]))
    lines = [f"u{i}," + ",".join(map(str, row)) for i, row in enumerate(X)]
    path.write_text("\n".join([header, *lines]) + "\n")


# ------------------------------------------------------------------------------------------------- the data


def test_an_image_trial_is_the_noisy_images_tiles_split_at_the_train_fraction():
    clean = np.arange(32 * 24, dtype=float).reshape(32, 24) % 251
    source = MatrixSource(clean=clean, kind="image", noise=3.0, patch=8, train_fraction=0.75)
    trial = source.draw_matrix(12, np.random.default_rng(1))
    assert trial.first.shape == (9, 64) and trial.second.shape == (3, 64) and trial.whole.shape == (12, 64)
    assert np.array_equal(trial.clean, patches.tile_patches(clean, 8))
    noise = trial.whole - trial.clean
    assert 2.0 < noise.std() < 4.0 and abs(noise.mean()) < 1.0  # sd 3 on 768 pixels
    rows = {row.tobytes() for row in trial.whole}
    assert all(row.tobytes() in rows for row in np.vstack([trial.first, trial.second]))  # tiles of the noisy image
    assert len({row.tobytes() for row in np.vstack([trial.first, trial.second])}) == 12  # every tile once


def test_a_boolean_trial_flips_as_many_ones_as_zeros_and_keeps_x_star():
    X = blocks_matrix(np.random.default_rng(0))
    source = MatrixSource(clean=X.astype(float), kind="boolean_matrix", noise=0.1)
    trial = source.draw_matrix(60, np.random.default_rng(2))
    m = round(0.1 * X.sum())
    flipped = trial.whole != trial.clean
    assert flipped.sum() == 2 * m and trial.whole.sum() == trial.clean.sum()  # m ones off, m zeros on
    assert sorted(map(bytes, trial.clean.astype(np.uint8))) == sorted(map(bytes, X.astype(np.uint8)))  # its rows
    assert np.array_equal(np.vstack([trial.first, trial.second]), trial.whole)  # every row, train then test
    assert trial.first.shape[0] == 30


# ---------------------------------------------------------------------------------------- the cube's values


@pytest.fixture(scope="module")
def boolean_cube(tmp_path_factory):
    folder = tmp_path_factory.mktemp("boolean")
    write_dense(folder / "roles.csv", blocks_matrix(np.random.default_rng(3)))
    config = write_config(folder / "bool.yaml", **boolean_config(folder / "roles.csv"))
    result = cli_in_process("run", str(config), "--out", str(folder / "bool.zarr"), "--no-progress")
    assert result.returncode == 0, result.stderr
    assert "60 rows x 40 columns" in result.stdout  # what was read is said
    return folder, open_cube(folder / "bool.zarr").load()


def test_the_cube_holds_what_the_kernels_give_for_the_trials_own_draw(boolean_cube):
    folder, cube = boolean_cube
    X = np.loadtxt(folder / "roles.csv", delimiter=",", skiprows=1, usecols=range(1, 41))
    ks = np.arange(1, 13)
    for trial in range(3):
        draw = stream(11, Purpose.DRAW, label_id("m"), 60, trial)
        data = MatrixSource(clean=X, kind="boolean_matrix", noise=0.05).draw_matrix(60, draw)
        at = {"dataset": "m", "n": 60, "trial": trial}
        svd = cube.sel(model="svd", **at)
        assert np.array_equal(svd["mtc_matrix"].values, lowrank.boolean_svd_transfer_costs(data.first, data.second, ks))
        assert np.array_equal(svd["denoise_error"].values, lowrank.denoise_errors(data.whole, data.clean, ks))
        assert np.array_equal(svd["coverage_rule"].values, lowrank.coverage_shares(data.whole, ks))
        assert np.array_equal(svd["increment_rule"].values, lowrank.increments(data.whole, ks))
        fit_rng = stream(11, Purpose.FIT, label_id("m"), 60, trial, label_id("svd"), 0, 0)
        half = lowrank.opcv_errors(data.whole, ks, fit_rng, permutations=1, fraction=0.5)[0]
        fifth = lowrank.opcv_errors(data.whole, ks, fit_rng, permutations=1, fraction=0.2)[0]
        assert np.array_equal(svd["opcv_half"].values, half, equal_nan=True)
        assert np.array_equal(svd["opcv_fifth"].values, fifth, equal_nan=True)
        factors = boolean_mf.greconD(data.first, 12)
        bmf = cube.sel(model="bmf", **at)["mtc_matrix"].values
        assert np.array_equal(bmf, boolean_mf.bmf_transfer_costs(data.first, factors, data.second, ks))
    assert (cube["status"].sel(model="svd") == 1).all()


def test_the_oracle_finds_the_planted_rank_and_molloys_coverage_rule_under_selects(boolean_cube):
    _, cube = boolean_cube
    chosen = select_k(criterion_scores(cube)).sel(model="svd")
    assert int(chosen["denoise_error"].sel(dataset="m", n=60)) in (3, 4, 5)  # four roles, overlapping
    assert int(chosen["coverage_rule"].sel(dataset="m", n=60)) <= int(chosen["denoise_error"].sel(dataset="m", n=60))


def test_the_same_cube_on_a_cluster_of_two_workers(boolean_cube, tmp_path):
    folder, here = boolean_cube
    result = cli_in_process("run", str(folder / "bool.yaml"), "--out", str(tmp_path / "cluster.zarr"), "--no-progress",
                            "--workers", "2", "--no-dashboard")
    assert result.returncode == 0, result.stderr
    there = open_cube(tmp_path / "cluster.zarr").load()
    for variable in (*SVD_CRITERIA, "status"):
        assert np.array_equal(here[variable].values, there[variable].values, equal_nan=True), variable


def test_an_image_sweep_over_noise_is_stored_per_noise_level(shared, tmp_path):
    config = write_config(tmp_path / "img.yaml", name="img", seed=3, k={"from": 1, "to": 64}, resamples=2,
                          datasets=[{"name": "camera", "kind": "image",
                                     "path": str(shared / "datasets/images/camera_512.png"),
                                     "sweep": {"noise": [20, 200]}}],
                          methods=[{"name": "svd", "algorithm": "truncated_svd", "criteria": ["mtc_matrix", "psnr"]}])
    result = cli_in_process("run", str(config), "--out", str(tmp_path / "img.zarr"), "--no-progress")
    assert result.returncode == 0, result.stderr
    assert "512 x 512 grey image" in result.stdout and "4096 rows" not in result.stderr
    cube = open_cube(tmp_path / "img.zarr").load()
    assert list(cube["n"].values) == [4096]
    chosen = select_k(criterion_scores(cube)).sel(model="svd", n=4096)
    # a pilot run: k_opt 8 at sd 20 and 1 at sd 200; MTC 8 [8, 9] and 1
    assert 5 <= int(chosen["psnr"].sel(dataset="camera_noise20")) <= 12
    assert int(chosen["psnr"].sel(dataset="camera_noise200")) == 1
    assert int(chosen["mtc_matrix"].sel(dataset="camera_noise200")) == 1
    psnr = cube["psnr"].sel(dataset="camera_noise20", model="svd", n=4096, trial=0).values
    X = np.asarray(Image.open(shared / "datasets/images/camera_512.png"), dtype=float)
    rng = stream(3, Purpose.DRAW, label_id("camera_noise20"), 4096, 0)
    noisy = X + 20 * rng.standard_normal(X.shape)
    for k in (1, 8, 64):  # the whole-image reconstruction, by hand
        U, s, Vt = np.linalg.svd(patches.tile_patches(noisy, 8), full_matrices=False)
        image = patches.untile((U[:, :k] * s[:k]) @ Vt[:k], X.shape, 8)
        assert psnr[k - 1] == pytest.approx(10 * np.log10(255**2 / np.mean((image - X) ** 2)), abs=1e-9)


# ----------------------------------------------------------------------------------------- aggregation rules


def scores(values: np.ndarray) -> xr.Dataset:
    """A cube of one criterion: ``values`` of shape (k, trial) for k = 1..K."""
    data = values[None, None, None]
    coords = {"dataset": ["d"], "n": [10], "model": ["m"], "k": np.arange(1, values.shape[0] + 1),
              "trial": np.arange(values.shape[1])}
    dims = ("dataset", "n", "model", "k", "trial")
    return xr.Dataset({"mtc_matrix": (dims, data), "opcv_half": (dims, data), "coverage_rule": (dims, data),
                       "increment_rule": (dims, data), "psnr": (dims, data)}, coords=coords)


def test_mtc_takes_the_median_of_the_trials_argmins_and_opcv_the_argmin_of_the_per_k_medians():
    # trials' argmins: 1, 3, 3 (MTC: 3); per-k medians 2, 5, 4 (OP-CV: 1); per-k means 4.67, 4.33, 4.5
    values = np.array([[0.0, 2.0, 12.0],
                       [5.0, 1.0, 7.0],
                       [9.0, 0.5, 4.0]])
    chosen = select_k(scores(values)).sel(dataset="d", n=10, model="m")
    assert int(chosen["mtc_matrix"]) == 3 and int(chosen["opcv_half"]) == 1
    assert choice_per_trial(scores(values))["mtc_matrix"].values.ravel().tolist() == [1, 3, 3]
    mean = select_k(scores(values), decide={"opcv_half": {"aggregate": "mean"}}).sel(dataset="d", n=10, model="m")
    assert int(mean["opcv_half"]) == 2
    with pytest.raises(ValueError, match="aggregate"):
        select_k(scores(values), decide={"opcv_half": {"aggregate": "mode"}})


def test_the_lower_median_of_an_even_number_of_choices_is_a_k_some_trial_chose():
    values = np.array([[0.0, 9, 9, 9], [9, 0.0, 9, 9], [9, 9, 0.0, 9], [9, 9, 9, 0.0]])  # argmins 1, 2, 3, 4
    assert int(select_k(scores(values))["mtc_matrix"].squeeze()) == 2


def test_molloys_rules_take_the_first_k_past_their_thresholds_and_psnr_its_argmax():
    coverage = np.array([[0.5, 0.6], [0.79, 0.85], [0.9, 0.95], [0.99, 0.99]])  # medians .55 .82 .925 .99
    chosen = select_k(scores(coverage)).squeeze()
    assert int(chosen["coverage_rule"]) == 2 and int(chosen["psnr"]) == 4
    assert int(select_k(scores(coverage), decide={"coverage_rule": {"threshold": 0.95}})["coverage_rule"].squeeze()) == 4
    increments = np.array([[0.1, 0.1], [0.01, 0.002], [0.0005, 0.0008], [0.0, 0.0]])
    assert int(select_k(scores(increments))["increment_rule"].squeeze()) == 3
    assert int(select_k(scores(increments * 1000))["increment_rule"].squeeze()) == 4  # only the 0s: k = 4
    assert int(select_k(scores(increments + 1))["increment_rule"].squeeze()) == -1  # none below: no choice


# ---------------------------------------------------------------------------------------------------- bad input


def refused(tmp_path, config: dict, key: str, *phrases: str) -> None:
    path = write_config(tmp_path / "bad.yaml", **config)
    result = cli_in_process("run", str(path), "--out", str(tmp_path / "bad.zarr"), "--no-progress")
    assert result.returncode == 2, result.stdout + result.stderr
    assert key in result.stderr and "Traceback" not in result.stderr, result.stderr
    for phrase in phrases:
        assert phrase in result.stderr, result.stderr
    assert not (tmp_path / "bad.zarr").exists()


def image_config(path, **params) -> dict:
    return {"name": "img", "seed": 1, "k": [1, 2], "resamples": 1,
            "datasets": [{"name": "i", "kind": "image", "path": str(path), "params": params}],
            "methods": [{"name": "svd", "algorithm": "truncated_svd", "criteria": ["mtc_matrix"]}]}


def test_a_colour_image_is_refused_not_converted(tmp_path):
    Image.fromarray(np.zeros((16, 16, 3), dtype=np.uint8)).save(tmp_path / "rgb.png")
    refused(tmp_path, image_config(tmp_path / "rgb.png"), "datasets[0].path", "RGB", "convert it to grey")


def test_a_patch_that_does_not_divide_the_image_or_exceeds_it_is_refused(tmp_path):
    Image.fromarray(np.zeros((20, 16), dtype=np.uint8)).save(tmp_path / "grey.png")
    refused(tmp_path, image_config(tmp_path / "grey.png"), "datasets[0].params.patch", "does not divide", "20 x 16")
    refused(tmp_path, image_config(tmp_path / "grey.png", patch=32), "datasets[0].params.patch", "smaller than a patch")


def test_a_rank_above_what_the_matrix_allows_is_refused(tmp_path):
    Image.fromarray(np.arange(256, dtype=np.uint8).reshape(16, 16)).save(tmp_path / "grey.png")
    config = {**image_config(tmp_path / "grey.png", patch=4), "k": [1, 20]}  # 16 features, 8 training rows of 16
    refused(tmp_path, config, "k", "rank k = 20", "use k <= 8")


def test_a_grey_image_is_not_given_to_a_boolean_method(tmp_path):
    Image.fromarray(np.arange(256, dtype=np.uint8).reshape(16, 16)).save(tmp_path / "grey.png")
    config = image_config(tmp_path / "grey.png", patch=4)
    config["methods"] = [{"name": "svd", "algorithm": "boolean_svd", "criteria": ["mtc_matrix"]}]
    refused(tmp_path, config, "methods[0].algorithm", "needs a 0/1 matrix")


def test_a_matrix_that_is_not_0_1_is_refused_as_a_boolean_matrix(tmp_path):
    X = blocks_matrix(np.random.default_rng(0), 10, 40)
    X[4, 7] = 2
    write_dense(tmp_path / "m.csv", X)
    refused(tmp_path, boolean_config(tmp_path / "m.csv", k=[1, 2]), "datasets[0].path", "line 6", "not 0 or 1")


def test_an_edge_list_with_a_negative_id_is_refused(tmp_path):
    (tmp_path / "edges.csv").write_text("user,permission\n1,2\n3,-4\n")
    refused(tmp_path, boolean_config(tmp_path / "edges.csv", k=[1]), "datasets[0].path", "line 3", "non-negative")


def test_matrix_and_clustering_criteria_and_data_do_not_mix(tmp_path):
    write_dense(tmp_path / "m.csv", blocks_matrix(np.random.default_rng(0)))
    config = boolean_config(tmp_path / "m.csv", k=[1, 2])
    config["methods"] = [{"name": "svd", "algorithm": "boolean_svd", "criteria": ["lange"]}]
    refused(tmp_path, config, "methods[0].criteria[0]", "use one of")
    config["methods"] = [{"name": "svd", "algorithm": "boolean_svd", "criteria": ["psnr"]}]
    refused(tmp_path, config, "methods[0].criteria[0]", "psnr is defined for the algorithm(s) ['truncated_svd']")
    config["methods"] = [{"name": "km", "algorithm": "kmeans", "predictor": "nearest_centroid", "criteria": ["lange"]}]
    refused(tmp_path, {**config, "k": [2, 3]}, "methods[0].algorithm", "is a matrix, and 'kmeans' takes points")


def test_the_image_reads_the_same_from_its_png_and_its_csv_and_a_16_bit_png_keeps_its_peak(shared, tmp_path):
    from ordercube.pipeline.data.imagefiles import load_image

    png = load_image(str(shared / "datasets/images/camera_512.png"), "k")
    csv = load_image(str(shared / "datasets/images/camera_512.csv"), "k")
    assert np.array_equal(png.pixels, csv.pixels) and png.peak == csv.peak == 255.0 and png.pixels.shape == (512, 512)
    assert "512 x 512 grey image (peak 255)" in png.read
    deep = (np.arange(64, dtype=np.uint16).reshape(8, 8) * 1000)
    Image.fromarray(deep).save(tmp_path / "deep.png")
    image = load_image(str(tmp_path / "deep.png"), "k")
    assert image.peak == 65535.0 and np.array_equal(image.pixels, deep)


def test_an_edge_list_and_its_dense_matrix_are_the_same_matrix(shared):
    from ordercube.pipeline.data.matrixfiles import load_boolean_matrix, most_frequent_columns

    dense = load_boolean_matrix(str(shared / "datasets/rbac_hp_labs/domino_dense.csv"), "k").values
    loaded = load_boolean_matrix(str(shared / "datasets/rbac_hp_labs/domino_edges.csv"), "k")
    edges, read = loaded.values, loaded.read
    assert read.startswith("79 users x 231 permissions, 730 ones, edge list")
    assert dense.shape == edges.shape == (79, 231) and dense.sum() == edges.sum() == 730
    # the same users and permissions, up to order: compare the multisets of rows and of columns
    assert sorted(map(bytes, dense.astype(np.uint8))) == sorted(map(bytes, edges.astype(np.uint8)))
    kept = most_frequent_columns(edges, 10)
    counts = edges.sum(axis=0)
    assert kept.shape == (79, 10) and kept.sum() == np.sort(counts)[-10:].sum()


def test_the_rank_table_reads_the_oracle_and_draws_a_choice_outside_the_trials_range(tmp_path):
    from ordercube.pipeline.report.figures import save
    from ordercube.pipeline.report.matrix import plot_ranks, rank_table

    opcv = np.array([[2.0, 2, 2, 2], [1, 1, 9, 9], [9, 9, 1, 1]])  # trials choose 2, 2, 3, 3; the medians choose 1
    errors = np.array([[30.0, 30, 30, 30], [10, 10, 10, 10], [20, 20, 20, 20]])  # the oracle's k* = 2
    cube = scores(opcv)[["opcv_half"]].assign(denoise_error=scores(errors)["mtc_matrix"])
    table = rank_table(cube, select_k(cube), choice_per_trial(cube)).set_index("criterion")
    assert table.loc["opcv_half", ["k_hat", "k_low", "k_high", "k_star"]].tolist() == [1, 2, 3, 2]
    assert table.loc["opcv_half", "error_ratio"] == 3.0 and table.loc["denoise_error", "error_ratio"] == 1.0
    save(plot_ranks(table.reset_index()), tmp_path / "ranks.png")
    assert (tmp_path / "ranks.png").stat().st_size > 0


def test_the_report_of_a_matrix_cube_says_every_rank_against_the_oracle(boolean_cube, tmp_path):
    folder, _ = boolean_cube
    result = cli_in_process("report", str(folder / "bool.zarr"), "--out", str(tmp_path / "report"))
    assert result.returncode == 0, result.stderr
    assert "matrix models: each criterion's k̂" in result.stdout
    import pandas as pd

    table = pd.read_csv(tmp_path / "report" / "matrix_ranks.csv")
    svd = table[table.method == "svd"].set_index("criterion")
    assert (svd["oracle"] == "denoise_error").all() and svd.loc["denoise_error", "error_ratio"] == 1.0
    assert (svd["k_star"] == svd.loc["denoise_error", "k_hat"]).all()
    assert {"matrix_ranks.png", "transfer_costs_svd_n60.png", "transfer_costs_bmf_n60.png"} <= {
        path.name for path in (tmp_path / "report").iterdir()}
