"""Frank et al.'s (2011) transfer costs: values by hand, against scikit-learn, the fitted-model contract, the tie rule,
paired halves and the bad inputs they bring."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from conftest import cli_in_process, small_config, write_config
from ordercube.pipeline.config.study import load_config
from ordercube.pipeline.errors import ConfigError
from ordercube.pipeline.reduce.select import select_k
from ordercube.tasks.algorithms import get_algorithm
from ordercube.tasks.algorithms.kmeans import KMeansResult, kmeans_fit, kmeans_labels
from ordercube.tasks.algorithms.mixture import gaussian_mixture, gaussian_mixture_fit
from ordercube.tasks.cell import BlockSpec, run_block
from ordercube.tasks.criteria import get_criterion
from ordercube.tasks.criteria.base import TrialFits
from ordercube.tasks.criteria.transfer import (
    effective_clusters, generative_cost, mixture_transfer_cost, nn_centroid_cost, nn_object_cost, soft_cost, train_cost,
)
from ordercube.tasks.datasets import SyntheticSource
from ordercube.tasks.predictors import nearest_centroid

TRIANGLE = [[0.0, 1.0], [0.8660254037844386, -0.5], [-0.8660254037844386, -0.5]]


def _fits(first, second, labels_first, centers, *, paired=False) -> TrialFits:
    first, second = np.asarray(first, float), np.asarray(second, float)
    labels_first = np.asarray(labels_first)
    model = KMeansResult(labels=labels_first, centers=np.asarray(centers, float), inertia=0.0)
    return TrialFits(first=first, second=second, labels_first=labels_first, labels_second=labels_first, k=len(centers),
                     predictor=nearest_centroid, model_first=model, paired=paired)


# First half on a line: objects at 0, 1 (cluster 0, centre 0.5) and 10 (cluster 1, centre 10); second half: 2
# and 6. Worked out by hand:
#   train cost: (0.25 + 0.25 + 0) / 3 = 1/6
#   nearest object: 2 -> object 1 (cluster 0): (2 - 0.5)^2 = 2.25; 6 -> object 10 (4 < 5): (6 - 10)^2 = 16
#   nearest centroid: 2 -> 0.5: 2.25; 6 -> 10 (4 < 5.5): 16; both means (2.25 + 16) / 2 = 9.125
HAND = _fits([[0.0], [1.0], [10.0]], [[2.0], [6.0]], [0, 0, 1], [[0.5], [10.0]])


def test_costs_by_hand():
    assert train_cost(HAND) == pytest.approx(1 / 6)
    assert nn_object_cost(HAND) == pytest.approx(9.125)
    assert nn_centroid_cost(HAND) == pytest.approx(9.125)
    # generative: row i' of the second half pays the centre of row i' of the first: 2 with object 0 (cluster 0,
    # 2.25) and 6 with object 1 (cluster 0, 30.25), though 6 lies nearer the other centre
    paired = _fits([[0.0], [1.0]], [[2.0], [6.0]], [0, 0], [[0.5], [10.0]], paired=True)
    assert generative_cost(paired) == pytest.approx((2.25 + 30.25) / 2)


def test_nearest_object_and_nearest_centroid_part_where_an_object_sits_in_a_far_cluster():
    # object 4 belongs to the cluster centred at 10; a new point at 4.2 maps to object 4 (cost (4.2 - 10)^2 =
    # 33.64) under the object mapping, to the centre 0.5 (cost 13.69) under the structure mapping
    fits = _fits([[0.0], [1.0], [4.0], [10.0], [16.0]], [[4.2]], [0, 0, 1, 1, 1], [[0.5], [10.0]])
    assert nn_object_cost(fits) == pytest.approx(33.64)
    assert nn_centroid_cost(fits) == pytest.approx(13.69)


def test_soft_mapping_limits_and_value():
    # beta -> infinity: the nearest-centroid mapping; beta -> 0: the uniform mapping (the mean distance)
    assert soft_cost(HAND, beta_factor=1e9) == pytest.approx(nn_centroid_cost(HAND))
    d = np.array([[2.25, 64.0], [30.25, 16.0]])
    assert soft_cost(HAND, beta_factor=1e-12) == pytest.approx(d.mean(axis=1).mean())
    # the paper's beta: 0.75 / (R1 / N1), R1/N1 = mean squared distance to the mean (11/3) of 0, 1, 10
    beta = 0.75 / np.mean((np.array([0.0, 1.0, 10.0]) - 11 / 3) ** 2)
    weights = np.exp(-beta * d) / np.exp(-beta * d).sum(axis=1, keepdims=True)
    assert soft_cost(HAND) == pytest.approx((weights * d).sum(axis=1).mean())
    literal = 0.75 / np.sum((np.array([0.0, 1.0, 10.0]) - 11 / 3) ** 2)  # r1: sum, three times smaller here
    weights = np.exp(-literal * d) / np.exp(-literal * d).sum(axis=1, keepdims=True)
    assert soft_cost(HAND, r1="sum") == pytest.approx((weights * d).sum(axis=1).mean())


def test_generative_cost_refuses_unpaired_halves():
    with pytest.raises(ValueError, match="paired halves"):
        generative_cost(_fits([[0.0]], [[1.0]], [0], [[0.0]]))


def test_mixture_transfer_cost_is_scikit_learns_mean_negative_log_likelihood():
    rng = np.random.default_rng(0)
    first = rng.normal(size=(200, 2)) + rng.integers(2, size=(200, 1)) * 4
    second = rng.normal(size=(150, 2)) + rng.integers(2, size=(150, 1)) * 4
    labels, model = gaussian_mixture_fit(first, 2, np.random.default_rng(1))
    fits = TrialFits(first=first, second=second, labels_first=labels, labels_second=labels, k=2,
                     predictor=nearest_centroid, model_first=model)
    assert mixture_transfer_cost(fits) == pytest.approx(-model.score(second), rel=1e-12)
    assert mixture_transfer_cost(fits) == pytest.approx(-np.mean(model.score_samples(second)), rel=1e-12)


def test_fit_gives_the_labels_cluster_gives_from_the_same_stream():
    """Nothing changes for a cube of labels-only criteria: fit is cluster plus the model, bit for bit."""
    X = np.random.default_rng(2).normal(size=(120, 2))
    labels, model = kmeans_fit(X, 4, np.random.default_rng(3))
    assert np.array_equal(labels, kmeans_labels(X, 4, np.random.default_rng(3)))
    assert model.centers.shape == (4, 2)
    labels, mixture = gaussian_mixture_fit(X, 3, np.random.default_rng(4))
    assert np.array_equal(labels, gaussian_mixture(X, 3, np.random.default_rng(4)))
    assert mixture.means_.shape == (3, 2)
    assert get_algorithm("kmeans").model == "centroids" and get_algorithm("gaussian_mixture").model == "mixture"


def _block(criteria: tuple[str, ...], params: dict) -> dict[str, np.ndarray]:
    spec = BlockSpec(root_seed=9, dataset_id=1, n=200, method_id=2, algorithm="kmeans",
                     algorithm_params=(("n_init", 3), ("max_iter", 300), ("tol", 1e-4)), predictor="nearest_centroid",
                     criteria=criteria, ks=(2, 3, 4, 5), trials=(0, 1, 2))
    return run_block(spec, SyntheticSource("gaussian_mixture", params)).values


def test_criteria_that_read_models_leave_the_labels_criteria_unchanged():
    params = {"centers": TRIANGLE, "std": 0.3}
    alone = _block(("lange", "pairwise"), params)
    together = _block(("lange", "pairwise", "mtc_nn_centroid", "train_cost", "k_effective"), params)
    for name in ("lange", "pairwise"):
        assert np.array_equal(alone[name], together[name], equal_nan=True)
    assert (together["k_effective"] == np.array([2, 3, 4, 5])[:, None]).all()  # k-means keeps every cluster here
    assert (np.diff(together["train_cost"], axis=0) < 0).all()  # the training cost falls with k


def test_paired_halves_share_their_components_and_unpaired_draws_are_unchanged():
    source = SyntheticSource("gaussian_mixture", {"centers": TRIANGLE, "std": 0.1, "paired": True})
    data = source.draw(101, np.random.default_rng(5), np.random.default_rng(6), with_eval=False)
    assert data.paired and data.first.shape == data.second.shape == (50, 2)
    assert np.array_equal(data.truth[:50], data.truth[50:])
    assert len(set(data.truth[:50].tolist())) == 3
    # rows are pairs: each second-half point lies near the centre of its first-half partner's component
    centers = np.asarray(TRIANGLE)
    assert np.abs(data.second - centers[data.truth[:50]]).max() < 0.6
    plain = SyntheticSource("gaussian_mixture", {"centers": TRIANGLE, "std": 0.1})
    given = SyntheticSource("gaussian_mixture", {"centers": TRIANGLE, "std": 0.1, "paired": False})
    one = plain.draw(100, np.random.default_rng(7), np.random.default_rng(8), with_eval=False)
    two = given.draw(100, np.random.default_rng(7), np.random.default_rng(8), with_eval=False)
    assert np.array_equal(one.first, two.first) and not one.paired


def test_a_dataset_without_paired_keeps_its_identity(tmp_path):
    """paired is optional: configs written before it resolve to the same parameters, so their cubes resume."""
    config = load_config(write_config(tmp_path / "c.yaml", **small_config(datasets=[
        {"name": "g", "kind": "gaussian_mixture", "params": {"centers": TRIANGLE}}])))
    assert "paired" not in config.datasets[0].params


def test_transfer_costs_tie_to_the_smallest_k():
    """Flat costs where extra clusters stay empty (spec G6): the parsimonious k, not the largest offered."""
    for name in ("mtc", "train_cost", "mtc_nn_object", "mtc_nn_centroid", "mtc_generative", "mtc_soft"):
        assert get_criterion(name).decision.ties == "smallest"
    values = np.array([[5.0, 3.0, 3.0, 3.0]]).T[:, :, None] * np.ones((1, 1, 4))  # k x trial x ... flat from k = 2
    cube = xr.Dataset({"mtc": (("k", "trial", "x"), values)}, coords={"k": [1, 2, 3, 4]}).isel(x=0)
    scores = cube.expand_dims(dataset=["d"], n=[100], model=["m"])
    assert int(select_k(scores)["mtc"].squeeze()) == 2


@pytest.mark.parametrize("case", ["mtc on k-means", "generative unpaired", "paired not a bool"])
def test_bad_transfer_inputs_exit_2_naming_the_key(tmp_path, case):
    method = {"name": "m", "algorithm": "kmeans", "predictor": "nearest_centroid", "criteria": ["mtc"]}
    dataset = {"name": "g", "kind": "gaussian_mixture", "params": {"centers": TRIANGLE}}
    expected = ["methods[0].criteria[0]", "mtc", "'kmeans'", "gaussian_mixture"]
    if case == "generative unpaired":
        method["criteria"] = ["mtc_generative"]
        expected = ["methods[0].criteria[0]", "mtc_generative", "'g'", "paired: true"]
    elif case == "paired not a bool":
        method["criteria"] = ["mtc_generative"]
        dataset["params"] = {"centers": TRIANGLE, "paired": "yes"}
        expected = ["datasets[0].params.paired", "'yes'"]
    path = write_config(tmp_path / "bad.yaml", **small_config(k=[1, 2, 3], datasets=[dataset], methods=[method]))
    with pytest.raises(ConfigError):
        load_config(path)
    result = cli_in_process("run", str(path), "--out", str(tmp_path / "bad.zarr"))
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "bad.zarr").exists()
    for text in expected:
        assert text in result.stderr, (text, result.stderr)


def test_effective_clusters_counts_non_empty_clusters():
    assert effective_clusters(_fits([[0.0], [1.0], [2.0]], [[0.0]], [0, 4, 4], [[0.0]] * 5)) == 2.0
