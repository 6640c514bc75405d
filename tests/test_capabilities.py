"""What fits what (ordercube.tasks.capabilities.why_not), the plug-in registry, and the trial contract of run_block with a
family the engine has never heard of."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from ordercube.tasks.algorithms import ALGORITHMS, get_algorithm
from ordercube.tasks.algorithms.kinds import BaseAlgorithm, Classifier, Clusterer, MatrixModel
from ordercube.tasks.capabilities import DataObjects, fitting_algorithms, fitting_criteria, fitting_predictors, why_not
from ordercube.tasks.cell import BlockSpec, Status, run_block
from ordercube.tasks.criteria import CRITERIA, VARIABLES, Criterion, Decision, get_criterion
from ordercube.tasks.registry import register_algorithm, register_criterion, register_predictor
from ordercube.tasks.trial import TrialOutcome

POINTS = DataObjects("p", "points")
GRAPH = DataObjects("g", "graph")
DISTANCES = DataObjects("d", "dissimilarity")
IMAGE = DataObjects("i", "matrix", ("image", "test_set"))
BOOLEAN = DataObjects("b", "matrix", ("boolean", "test_set"))
LABELLED = DataObjects("l", "points", ("labels", "test_set"))


def test_every_registered_record_is_of_one_kind_and_no_slot_holds_a_sentinel():
    kinds = {name: type(algorithm) for name, algorithm in ALGORITHMS.items()}
    assert kinds["kmeans"] is Clusterer and kinds["knn"] is Classifier and kinds["boolean_mf"] is MatrixModel
    assert not any(hasattr(algorithm, "classify") for algorithm in ALGORITHMS.values() if isinstance(algorithm, Clusterer))
    assert not any(hasattr(algorithm, "cluster") for algorithm in ALGORITHMS.values() if not isinstance(algorithm, Clusterer))
    variant = get_algorithm("agglomerative").on("dissimilarity")
    assert variant.takes == "dissimilarity" and variant.gives == ("labels", "assignments") and variant.cluster_many is not None
    assert get_algorithm("kmeans").on("dissimilarity") is get_algorithm("kmeans")  # no variant: itself


@pytest.mark.parametrize("data, algorithm, criterion, predictor, part, words", [
    (POINTS, "kmeans", "lange", "nearest_centroid", None, ()),
    (GRAPH, "kmeans", None, None, "algorithm", ("'g' is a graph", "correlation_gibbs", "separate configs")),
    (DISTANCES, "agglomerative", "lange", "nearest_object", None, ()),
    (DISTANCES, "agglomerative", "silhouette", "nearest_object", "criterion", ("not dissimilarities", "lange")),
    (DISTANCES, "kmeans", None, None, "algorithm", ("agglomerative or path_based or spectral",)),
    (POINTS, "agglomerative", None, "nearest_object", "predictor", ("kind: distances", "nearest_neighbor")),
    (POINTS, "knn", "loo_cv", None, "dataset", ("needs labels as its response",)),
    (LABELLED, "knn", "loo_cv", None, None, ()),
    (LABELLED, "knn", "loo_cv", "nearest_centroid", "predictor", ("no predictor",)),
    (LABELLED, "knn", "true_error", None, "criterion", ("['interval_erm'] only",)),
    (LABELLED, "interval_erm", "true_error", None, "criterion", ("known exactly", "kearns_intervals")),
    (IMAGE, "boolean_svd", None, None, "algorithm", ("needs a 0/1 matrix",)),
    (BOOLEAN, "truncated_svd", "psnr", None, "criterion", ("clean image",)),
    (BOOLEAN, "boolean_svd", "lange", None, "criterion", ("lange is a clustering criterion", "coverage_rule")),
    (POINTS, "kmeans", "mtc", "nearest_centroid", "criterion", ("reads the fitted model", "gaussian_mixture")),
    (POINTS, "kmeans", "mtc_generative", "nearest_centroid", "criterion", ("paired halves",)),
    (DataObjects("q", "points", ("paired",)), "kmeans", "mtc_generative", "nearest_centroid", None, ()),
])
def test_why_not_names_what_to_change_and_what_would_fit(data, algorithm, criterion, predictor, part, words):
    misfit = why_not(data, get_algorithm(algorithm), None if criterion is None else get_criterion(criterion), predictor)
    if part is None:
        assert misfit is None, misfit
        return
    assert misfit is not None and misfit.part == part, misfit
    for word in words:
        assert word in str(misfit), (word, str(misfit))


def test_what_fits_is_listed_from_the_declarations():
    assert fitting_algorithms(DISTANCES) == ["agglomerative", "path_based", "spectral"]
    assert fitting_algorithms(BOOLEAN) == ["boolean_mf", "boolean_svd", "truncated_svd"]
    assert fitting_algorithms(IMAGE) == ["truncated_svd"]
    assert fitting_criteria(IMAGE, get_algorithm("truncated_svd")) == ["mtc_matrix", "opcv_fifth", "opcv_half", "psnr"]
    assert fitting_criteria(None, get_algorithm("boolean_mf")) == ["mtc_matrix"]
    assert fitting_predictors("graph") == ["graph_transfer"]
    assert "nearest_object" not in fitting_predictors("points")


def test_a_matrix_criterion_carries_its_computation_per_model():
    mtc = get_criterion("mtc_matrix")
    assert mtc.defined_for == ("truncated_svd", "boolean_svd", "boolean_mf") and mtc.reads == "orders"
    assert get_criterion("psnr").defined_for == ("truncated_svd",) and get_criterion("lange").defined_for is None


# ------------------------------------------------------------------------------------------ a family of a plug-in


def _count_scores(ks: list[int], k_true: int) -> np.ndarray:
    return np.abs(np.asarray(ks, dtype=float) - k_true)


@dataclass(frozen=True)
class Counter(BaseAlgorithm):
    """A toy family: each trial draws a number, and a criterion scores every k by its distance to it."""

    kind = "a counting model"

    @property
    def gives(self) -> tuple[str, ...]:
        return ("counts",)

    def feasible(self, k: int, size: int) -> bool:
        return k <= size

    def trial_runner(self, spec: BlockSpec, source: Any):
        def compute_trial(trial: int) -> TrialOutcome:
            if trial == 3:
                raise RuntimeError("no count in trial 3")
            ks = [k for k in spec.ks if self.feasible(k, 4)]
            values = {name: np.full(len(spec.ks), np.nan) for name in spec.criteria}
            for name in spec.criteria:
                values[name][: len(ks)] = get_criterion(name).computations[self.name](ks, 2 + trial)
            return TrialOutcome(values=values, failed={2: "k = 2 broke"} if trial == 1 else {},
                                infeasible={k: f"k = {k} above 4" for k in spec.ks if k not in ks})
        return compute_trial


@pytest.fixture
def counting_family():
    register_algorithm(Counter("counter", takes="tallies"))
    register_criterion(Criterion(name="count_gap", min_k=1, description="distance to the drawn count", reads="counts",
                                 computations={"counter": _count_scores}, decision=Decision(rule="smallest"),
                                 report_sections=("counts",)))
    yield
    ALGORITHMS.pop("counter")
    CRITERIA.pop("count_gap")
    VARIABLES.pop("count_gap")


def test_a_new_family_runs_through_the_one_block_loop(counting_family):
    spec = BlockSpec(root_seed=1, dataset_id=2, n=10, method_id=3, algorithm="counter", algorithm_params=(),
                     predictor="none", criteria=("count_gap",), ks=(1, 2, 3, 5), trials=(0, 1, 3))
    result = run_block(spec, source=None)
    assert result.values["count_gap"][:3, 0].tolist() == [1.0, 0.0, 1.0]  # |k - 2|
    assert result.status[:, 0].tolist() == [Status.OK, Status.OK, Status.OK, Status.INFEASIBLE]
    assert result.reason[3, 0] == "k = 5 above 4"
    assert result.status[1, 1] == Status.FAILED and result.reason[1, 1] == "k = 2 broke"
    assert result.values["count_gap"][2, 1] == 0.0  # |3 - 3|
    assert (result.status[:, 2] == Status.FAILED).all() and result.reason[0, 2] == "RuntimeError: no count in trial 3"
    assert np.isnan(result.values["count_gap"][:, 2]).all() and np.isnan(result.values["count_gap"][3, 0])
    data = DataObjects("t", "tallies")
    assert why_not(data, ALGORITHMS["counter"], CRITERIA["count_gap"]) is None
    assert "'t' is tallies objects, and 'kmeans' takes points" in str(why_not(data, get_algorithm("kmeans")))
    assert fitting_algorithms(data) == ["counter"]
    assert "count_gap is a criterion of counts" in str(why_not(POINTS, get_algorithm("kmeans"), CRITERIA["count_gap"]))


def test_the_registry_refuses_a_taken_name_naming_the_plug_in(counting_family):
    with pytest.raises(ValueError, match=r"^test_capabilities: criterion 'count_gap' is registered already"):
        register_criterion(Criterion(name="count_gap", min_k=1, description=""))
    with pytest.raises(ValueError, match=r"stores \['gap'\], which \['gap'\] store already"):
        register_criterion(Criterion(name="other", min_k=1, description="", outputs=("gap",)))
    with pytest.raises(TypeError, match="expected a ordercube.tasks.algorithms.kinds.BaseAlgorithm"):
        register_algorithm("kmeans")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="predictor 'nearest_centroid' is registered already"):
        register_predictor("nearest_centroid", lambda X, labels, k, Y: labels)
