"""Classifiers whose order k is chosen with labels (Daudin & Mary-Huard 2008), through the engine: the learning/test split,
the cube against the kernels called directly on the same trial, the per-trial reducers worked out by
hand, the report's Table 1 layout, and bad input refused naming the key."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import ordercube
from conftest import cli_in_process, papers_data, write_config
from ordercube.pipeline.reduce.select import choice_per_trial
from ordercube.pipeline.reduce.supervised import at_choice, gain_rows, selection_rows
from ordercube.tasks.classifiers.intervals import interval_erm_scores
from ordercube.tasks.classifiers.knn import knn_scores
from ordercube.tasks.classifiers.selection import top_by_t
from ordercube.tasks.datasets.synthetic import kearns_intervals, kearns_target
from ordercube.tasks.seeding import Purpose, label_id, stream
from ordercube.tasks.supervised import LEARN_ALL, LEARN_HALF, learning_counts, split_by_class
from test_engine import assert_same_cells, run_here, run_ok



@pytest.fixture
def colon(shared) -> Path:
    """Alon's colon data (62 tissues x 2000 genes, their labels), or the test is skipped naming what is missing."""
    return papers_data("alon_colon/expression_2000genes.csv", "alon_colon/labels.csv") / "alon_colon"


def colon_config(folder: Path, **overrides):
    dataset = {"name": "colon", "kind": "file", "path": str(folder / "expression_2000genes.csv"),
               "labels": {"path": str(folder / "labels.csv"), "column": "tissue"}, "n": ["all"],
               "learning": {"tumor": 27, "normal": 14},
               "preprocess": [{"clip": {"floor": 100, "ceiling": 16000}}, {"log": {"base": 10}},
                              {"standardize": {"axis": "rows"}}]}
    dataset.update(overrides.pop("dataset", {}))
    config = {"name": "colon_knn", "seed": 11, "k": {"from": 1, "to": 39, "step": 2}, "resamples": 4,
              "datasets": [dataset],
              "methods": [{"name": "g50", "algorithm": "knn", "params": {"genes": 50, "odd_only": True},
                           "criteria": ["swapping", "loo_cv", "test_error", "resubstitution"]}]}
    config.update(overrides)
    return config


def test_learning_counts_by_hand():
    # 40 tumour, 22 normal, 41 learning points: quotas 26.45 and 14.55 -> floors 26 + 14, the one left goes
    # to the larger remainder (normal): 26 + 15; halves of 62: 15.48 / 6.52 of 22... worked: 31 * 22/62 = 11
    sizes = np.array([22, 40])
    assert learning_counts(sizes, 41).tolist() == [15, 26]
    assert learning_counts(sizes, LEARN_HALF).tolist() == [11, 20]
    assert learning_counts(sizes, LEARN_ALL).tolist() == [22, 40]
    assert learning_counts(sizes, 0, (14, 27)).tolist() == [14, 27]
    assert learning_counts(np.array([3, 3]), 3).tolist() == [2, 1]  # equal remainders: the first class first


def test_split_by_class_is_stratified_disjoint_and_complete():
    y = np.repeat([0, 1], [22, 40])
    learn, test = split_by_class(y, np.array([14, 27]), np.random.default_rng(5))
    assert np.bincount(y[learn]).tolist() == [14, 27] and np.bincount(y[test]).tolist() == [8, 13]
    assert np.intersect1d(learn, test).size == 0 and np.union1d(learn, test).tolist() == list(range(62))
    again, _ = split_by_class(y, np.array([14, 27]), np.random.default_rng(5))
    assert np.array_equal(learn, again)


def test_colon_cube_equals_the_kernels_on_the_same_trial(tmp_path, colon):
    """The cube's values of trial t are knn_scores on that trial's split (from its DRAW stream), with the top 50
    genes chosen on its learning set only: the wiring (stream, split, selection inside the trial) is right."""
    config = colon_config(colon)
    cube = ordercube.sweep(config, out=tmp_path / "c.zarr", workers=0)
    from ordercube.pipeline.config.study import parse_config

    X = parse_config(config, base=tmp_path).datasets[0].data
    labels = pd.read_csv(colon / "labels.csv")["tissue"].map({"normal": 0, "tumor": 1}).to_numpy()
    ks = list(range(1, 40, 2))
    for trial in range(4):
        rng = stream(11, Purpose.DRAW, label_id("colon"), 62, trial)
        rows = rng.permutation(62)
        y = labels[rows]
        learn, test = split_by_class(y, np.array([14, 27]), rng)
        genes = top_by_t(X[rows][learn], y[learn], 50)
        expected = knn_scores(X[rows][learn][:, genes], y[learn], ks, X_test=X[rows][test][:, genes], y_test=y[test])
        for variable in ("swapping", "swap_penalty", "loo_cv", "test_error", "resubstitution"):
            stored = cube[variable].sel(dataset="colon", n=62, model="g50", trial=trial).values
            np.testing.assert_array_equal(stored, expected[variable], err_msg=f"{variable}, trial {trial}")
    # learning on the whole file would see the test labels: the stored test errors are not all zero
    assert float(cube["test_error"].mean()) > 0.05


def test_kearns_cube_equals_the_kernel_and_is_infeasible_beyond_the_learning_set(tmp_path):
    config = {"name": "kearns", "seed": 3, "k": {"from": 1, "to": 13}, "resamples": 3, "n": [12, 60],
              "datasets": [{"name": "e2", "kind": "kearns_intervals", "params": {"d": 4, "eta": 0.2},
                            "learning": "all"}],
              "methods": [{"name": "iv", "algorithm": "interval_erm",
                           "criteria": ["swapping", "loo_cv", "true_error", "conditional_error"]}]}
    cube = ordercube.sweep(config, out=tmp_path / "k.zarr", workers=0)
    for n in (12, 60):
        for trial in range(3):
            X, y = kearns_intervals(n, stream(3, Purpose.DRAW, label_id("e2"), n, trial), d=4, eta=0.2)
            ks = [k for k in range(1, 14) if k <= n]
            expected = interval_erm_scores(X[:, 0], y, ks, target=(4, 0.2))
            at = {"dataset": "e2", "n": n, "model": "iv", "trial": trial}
            for variable in ("swapping", "loo_cv", "true_error", "conditional_error"):
                np.testing.assert_array_equal(cube[variable].sel(at).sel(k=ks).values, expected[variable])
    status = cube["status"].sel(dataset="e2", n=12, model="iv", k=[12, 13]).values
    assert (status[0] == 1).all() and (status[1] == 3).all(), status  # 13 intervals on 12 points: the fit of k = 12
    assert "needs at least 13 learning points" in str(cube["reason"].sel(dataset="e2", n=12, model="iv", k=13, trial=0).values)
    assert kearns_target(np.array([0.0, 0.26, 0.5, 0.99, 1.0]), 4).tolist() == [0, 1, 0, 1, 1]  # intervals 0,1,2,3,3


def _hand_cube() -> xr.Dataset:
    """Three trials, k = 1, 3, 5: the oracle's test error and two selectors, with ties."""
    coords = {"dataset": ["d"], "n": [10], "model": ["m"], "k": [1, 3, 5], "trial": [0, 1, 2]}

    def variable(rows):  # rows[trial] = values at k = 1, 3, 5
        return (("dataset", "n", "model", "k", "trial"), np.array(rows, dtype=float).T[None, None, None])

    return xr.Dataset({
        "test_error": variable([[0.3, 0.1, 0.2], [0.2, 0.2, 0.1], [0.4, 0.3, 0.3]]),
        "swapping": variable([[0.2, 0.2, 0.3], [0.3, 0.1, 0.2], [0.1, 0.2, 0.3]]),
        "swap_penalty": variable([[0.0] * 3] * 3),
        "loo_cv": variable([[0.1, 0.3, 0.1], [0.2, 0.2, 0.2], [0.3, 0.1, 0.1]]),
    }, coords=coords)


def test_per_trial_choices_ties_to_the_smallest_k_and_errors_read_at_them():
    scores = _hand_cube()
    choices = choice_per_trial(scores)
    # oracle: argmin test error per trial, ties -> smallest k: trial 0 -> 3, trial 1 -> 5, trial 2 -> 3 (0.3 at 3 and 5)
    assert choices["test_error"].values.ravel().tolist() == [3, 5, 3]
    assert choices["swapping"].values.ravel().tolist() == [1, 3, 1]  # trial 0: tie 0.2 at 1 and 3 -> 1
    assert choices["loo_cv"].values.ravel().tolist() == [1, 1, 3]
    assert choice_per_trial(scores, {"loo_cv": {"ties": "largest"}})["loo_cv"].values.ravel().tolist() == [5, 5, 5]
    read = at_choice(scores["test_error"], choices["swapping"]).values.ravel()
    np.testing.assert_allclose(read, [0.3, 0.2, 0.4])
    rows = selection_rows(scores).set_index("selector")
    # N: mean k; R: mean test error at k: S (1+3+1)/3, (0.3+0.2+0.4)/3; CV (1+1+3)/3, (0.3+0.2+0.3)/3; O 11/3, 0.5/3
    np.testing.assert_allclose(rows.loc["swapping", ["N", "R"]].astype(float), [5 / 3, 0.3])
    np.testing.assert_allclose(rows.loc["loo_cv", ["N", "R"]].astype(float), [5 / 3, 0.8 / 3])
    np.testing.assert_allclose(rows.loc["test_error", ["N", "R"]].astype(float), [11 / 3, 0.5 / 3])
    np.testing.assert_allclose(rows.loc["loo_cv", "mean_abs_k_minus_k_oracle"], (2 + 4 + 0) / 3)
    gain = gain_rows(scores).iloc[0]
    # G = 100 (L_CV - L_S)/(L_CV - L_O) = 100 (0.8/3 - 0.9/3) / (0.8/3 - 0.5/3) = -100/3
    np.testing.assert_allclose(gain["G"], -100 / 3)
    np.testing.assert_allclose(gain["L_cv_minus_L_swap"], -0.1 / 3)
    assert gain["diff_low"] <= gain["L_cv_minus_L_swap"] <= gain["diff_high"]


def test_report_prints_table_one_with_the_published_values(tmp_path, colon):
    from pathlib import Path

    import yaml

    # the digest of the data Daudin & Mary-Huard's Table 1 belongs to, as configs/daudin_colon.yaml gives it
    shipped = Path(__file__).resolve().parents[1] / "configs" / "daudin_colon.yaml"
    digest = yaml.safe_load(shipped.read_text())["published"]["data"]
    config = colon_config(colon, resamples=3, published={"colon/g50": {"swapping": {"N": 9.11, "R": 28.6}},
                                                         "data": digest})
    path = write_config(tmp_path / "c.yaml", **config)
    assert cli_in_process("run", str(path), "--out", str(tmp_path / "c.zarr"), "--workers", "0").returncode == 0
    result = cli_in_process("report", str(tmp_path / "c.zarr"), "--out", str(tmp_path / "r"))
    assert result.returncode == 0, result.stderr
    assert "Table 1" in result.stdout and "/ 9.11" in result.stdout and "/ 28.6" in result.stdout
    published = pd.read_csv(tmp_path / "r" / "published.csv")
    assert published[["criterion", "quantity", "published"]].values.tolist() == [["swapping", "N", 9.11],
                                                                               ["swapping", "R", 28.6]]
    rows = pd.read_csv(tmp_path / "r" / "supervised.csv")
    assert set(rows["selector"]) == {"test_error", "swapping", "loo_cv"} and (rows["trials"] == 3).all()
    assert (tmp_path / "r" / "supervised_error_vs_k.png").stat().st_size > 10_000
    assert (tmp_path / "r" / "supervised_selectors.png").exists()


def tiny_config(tmp_path) -> dict:
    """Colon's shape in miniature (40 rows x 50 features, tumor 25 / normal 15, labels in their own file): the
    bad-input checks read it in milliseconds."""
    rng = np.random.default_rng(1)
    pd.DataFrame(rng.lognormal(5, 1, size=(40, 50)), columns=[f"g{j}" for j in range(50)]).to_csv(
        tmp_path / "x.csv", index=False)
    pd.DataFrame({"tissue": ["tumor"] * 25 + ["normal"] * 15}).to_csv(tmp_path / "y.csv", index=False)
    return colon_config(tmp_path, k={"from": 1, "to": 25, "step": 2}, dataset={
        "path": "x.csv", "labels": {"path": "y.csv", "column": "tissue"}, "learning": {"tumor": 17, "normal": 10}})


@pytest.mark.parametrize("change, fragments", [
    ({"dataset": {"labels": None, "learning": None}},
     ["datasets[0].labels", "knn' is a classifier fitted with the labels and needs labels as its response"]),
    ({"dataset": {"labels": None}}, ["datasets[0].learning", "counts per class need the dataset's labels"]),
    ({"dataset": {"learning": 70}}, ["datasets[0].learning", "70 learning points", "n = 40"]),
    ({"dataset": {"learning": {"tumor": 17}}}, ["datasets[0].learning", "['normal', 'tumor']"]),
    ({"dataset": {"learning": {"tumor": 26, "normal": 10}}}, ["datasets[0].learning.tumor", "1 to 25", "26"]),
    ({"dataset": {"learning": "all"}}, ["methods[0].criteria", "test_error needs a test set"]),
    ({"k": {"from": 1, "to": 27, "step": 2}}, ["k", "k = 27 is too large for knn", "27 points", "k + 1"]),
    ({"k": [1, 2, 3]}, ["k", "odd_only", "[2]"]),
    ({"k": [1, 2, 3], "methods": [{"name": "g", "algorithm": "knn", "criteria": [{"swapping": {"swap_rule": "literal"}}]}]},
     ["methods[0].criteria", "swap_rule: literal", "[2]"]),
    ({"methods": [{"name": "g", "algorithm": "knn", "params": {"genes": 5000}, "criteria": ["loo_cv"]}]},
     ["methods[0].params.genes", "5000", "50 features"]),
    ({"methods": [{"name": "g", "algorithm": "knn", "predictor": "nearest_centroid", "criteria": ["loo_cv"]}]},
     ["methods[0].predictor", "no predictor"]),
    ({"methods": [{"name": "g", "algorithm": "knn", "criteria": ["lange"]}]},
     ["methods[0].criteria[0]", "lange is a clustering criterion"]),
    ({"methods": [{"name": "g", "algorithm": "knn", "criteria": ["true_error"]}]},
     ["methods[0].criteria[0]", "true_error is defined for the algorithm(s) ['interval_erm']"]),
])
def test_bad_classifier_input_exits_2_naming_the_key(tmp_path, change, fragments):
    config = tiny_config(tmp_path)
    config.update({key: value for key, value in change.items() if key != "dataset"})
    for key, value in change.get("dataset", {}).items():
        if value is None:
            config["datasets"][0].pop(key)
        else:
            config["datasets"][0][key] = value
    result = cli_in_process("validate", str(write_config(tmp_path / "c.yaml", **config)))
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


def test_the_tiny_config_itself_is_valid(tmp_path):
    """The bad-input cases above change one thing each from a config that validates."""
    result = cli_in_process("validate", str(write_config(tmp_path / "c.yaml", **tiny_config(tmp_path))))
    assert result.returncode == 0 and "learning set 10 normal + 17 tumor, test set the other 13" in result.stdout, \
        result.stderr


def test_labels_of_one_class_or_three_are_refused(tmp_path):
    X = np.random.default_rng(0).normal(size=(30, 3))
    for labels, fragment in ((["a"] * 30, "have 1"), (["a", "b", "c"] * 10, "have 3")):
        table = pd.DataFrame(X, columns=["x", "y", "z"]).assign(kind=labels)
        table.to_csv(tmp_path / "t.csv", index=False)
        config = {"name": "t", "seed": 1, "k": [1, 3], "resamples": 2,
                  "datasets": [{"name": "t", "kind": "file", "path": "t.csv", "labels": {"column": "kind"}, "n": ["all"]}],
                  "methods": [{"name": "knn", "algorithm": "knn", "criteria": ["loo_cv"]}]}
        result = cli_in_process("validate", str(write_config(tmp_path / "c.yaml", **config)))
        assert result.returncode == 2 and "datasets[0].labels" in result.stderr and fragment in result.stderr, result.stderr


def test_classifier_cubes_are_the_same_bits_in_this_process_and_on_two_workers(tmp_path, colon):
    """Trials split and genes selected from the trial's own stream: no dependence on where or in which
    batches the cells are computed (two Dask workers, tasks of 2 trials, against one process)."""
    config = colon_config(colon, resamples=6, execution={"trials_per_chunk": 2, "task_seconds": 0.01})
    config["datasets"].append({"name": "e3", "kind": "kearns_intervals", "params": {"d": 3, "eta": 0.3}, "n": [62],
                               "learning": 40})
    config["methods"][0].update(criteria=["swapping", "loo_cv", "test_error"], params={"genes": 0})  # both datasets
    path = write_config(tmp_path / "c.yaml", **config)
    here = run_here(path, tmp_path / "here.zarr")
    there = run_ok(path, tmp_path / "there.zarr", "--workers", "2")
    assert "in this process" in here.stdout and "dask dashboard" in there.stdout, there.stdout
    assert_same_cells(tmp_path / "here.zarr", tmp_path / "there.zarr")


def test_each_k_alone_gives_the_same_values_as_all_k_together():
    """A failing task is cut into single cells (ordercube.pipeline.run.graph.isolate): a k computed alone must give the
    bits it gets among the others, for both kernels."""
    rng = np.random.default_rng(4)
    X, y = rng.normal(size=(30, 4)), rng.integers(0, 2, 30)
    ks = [1, 3, 4, 7, 12]
    together = knn_scores(X[:20], y[:20], ks, X_test=X[20:], y_test=y[20:])
    x, labels = kearns_intervals(40, rng, d=5, eta=0.2)
    intervals = interval_erm_scores(x[:, 0], labels, ks, target=(5, 0.2))
    for i, k in enumerate(ks):
        alone = knn_scores(X[:20], y[:20], [k], X_test=X[20:], y_test=y[20:])
        assert all(alone[name][0] == together[name][i] for name in together), k
        alone = interval_erm_scores(x[:, 0], labels, [k], target=(5, 0.2))
        assert all(alone[name][0] == intervals[name][i] for name in intervals), k
