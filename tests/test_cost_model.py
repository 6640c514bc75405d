"""The cost model's properties (ordercube.pipeline.run.sweep.fit_work / cell_cost, the plan's estimate): what it
grows with and how the criteria's declared fits add up. Not timings: benchmarks/cost_model.py measures those."""

from __future__ import annotations

from typing import Any

import pytest

from ordercube.tasks.criteria.gap import TRIALS_PER_PROCESS

import ordercube
from ordercube.pipeline.config.specs import MethodSpec
from ordercube.pipeline.cube.grid import CELL_SECONDS
from ordercube.pipeline.run.sweep import cell_cost, fit_work
from ordercube.tasks.algorithms import get_algorithm
from ordercube.tasks.criteria import CRITERIA, VARIABLES, Criterion, get_criterion
from ordercube.tasks.registry import register_criterion


def config(criteria: list[Any], *, resamples: int = 4, algorithm: str = "kmeans",
           predictor: str = "nearest_centroid") -> dict[str, Any]:
    return {"name": "cost", "seed": 3, "n": [60, 120], "k": {"from": 2, "to": 5}, "resamples": resamples,
            "datasets": [{"name": "g", "kind": "lange_gaussians3"}],
            "methods": [{"name": "m", "algorithm": algorithm, "predictor": predictor, "criteria": criteria}]}


def estimate(criteria: list[Any], **kwargs: Any) -> float:
    return ordercube.validate(config(criteria, **kwargs)).estimated_seconds


def method(*criteria: str, algorithm: str = "kmeans", **options: dict[str, Any]) -> MethodSpec:
    return MethodSpec(name="m", algorithm=algorithm, params={}, predictor="nearest_centroid", criteria=criteria,
                      criterion_options=options)


@pytest.mark.parametrize("criteria", [["lange"], [{"gap": {"references": 7}}, "lange"]])
def test_the_estimate_is_linear_in_resamples(criteria):
    one, three, seven = (estimate(criteria, resamples=r) for r in (1, 3, 7))
    assert one > 0
    assert three == pytest.approx(3 * one, rel=1e-12) and seven == pytest.approx(7 * one, rel=1e-12)


def test_the_estimate_is_linear_in_the_gap_reference_sets():
    by_b = {b: estimate([{"gap": {"references": b}}]) for b in (1, 11, 21, 41)}
    step = (by_b[11] - by_b[1]) / 10
    assert step > 0
    assert by_b[21] - by_b[11] == pytest.approx(10 * step, rel=1e-9)
    assert by_b[41] - by_b[21] == pytest.approx(20 * step, rel=1e-9)
    # a reference set costs what the trial's own fits cost (one fit of the n points at every k), made once per
    # process and spread over its trials: the sample's fit is TRIALS_PER_PROCESS steps, one reference set one
    assert by_b[1] == pytest.approx(estimate(["lange"]) + (TRIALS_PER_PROCESS + 1) * step, rel=1e-9)


def test_each_criterion_adds_the_fits_it_declares_for_its_options():
    gap, clest = get_criterion("gap"), get_criterion("clest")
    assert fit_work(method("lange")) == 1.0
    assert fit_work(method("gap", gap={"references": 5})) == 1.0 + gap.extra_fits({**gap.options, "references": 5})
    assert fit_work(method("gap")) == 1.0 + gap.extra_fits(gap.options)  # the default options when none are given
    both = fit_work(method("gap", "clest", "lange", gap={"references": 5}, clest={"splits": 7}))
    assert both == 1.0 + gap.extra_fits({**gap.options, "references": 5}) + clest.extra_fits({**clest.options,
                                                                                               "splits": 7})
    # Gap: the sample and 5 reference sets shared by a process's trials; Clest: both halves of 7 splits, one fit each
    assert both == 1.0 + 1 + 5 / TRIALS_PER_PROCESS + 7


def test_criteria_sharing_their_fits_count_them_once():
    bic, aic = get_criterion("bic"), get_criterion("aic")
    assert bic.shares_fits and bic.shares_fits == aic.shares_fits  # one mixture per trial and k serves both
    one = fit_work(method("bic", algorithm="gaussian_mixture_em"))
    assert one == 1.0 + bic.extra_fits(bic.options) > 1.0
    assert fit_work(method("bic", "aic", algorithm="gaussian_mixture_em")) == one
    assert fit_work(method("bic", "aic", "mtc", algorithm="gaussian_mixture_em")) == one


def test_the_algorithm_prices_a_fit_and_the_fits_multiply_it():
    kmeans = get_algorithm("kmeans")
    for spec in (method("lange"), method("gap", "clest")):
        for features in (1, 4, 2000):
            cost = cell_cost(spec, features=features)
            per_fit = kmeans.seconds_per_point + features * kmeans.seconds_per_feature
            assert cost.per_point == pytest.approx(fit_work(spec) * per_fit, rel=1e-12)
            assert cost.fixed == pytest.approx(CELL_SECONDS + fit_work(spec) * kmeans.seconds_per_fit, rel=1e-12)
            assert cost.per_order and cost.points_power == kmeans.points_power
    assert cell_cost(method("lange"), features=2000).per_point > cell_cost(method("lange"), features=2).per_point
    one_fit = cell_cost(method("lange", algorithm="path_based"))  # one tree cut at every k of a trial
    assert not one_fit.per_order and one_fit.points_power == get_algorithm("path_based").points_power > 1


def test_a_criterion_adds_its_own_seconds_as_declared():
    clest = get_criterion("clest")
    for splits, n in ((3, 50), (30, 400)):
        own = cell_cost(method("clest", clest={"splits": splits})).criteria(n)
        assert own > 0 and own == pytest.approx(clest.seconds_per_cell({**clest.options, "splits": splits}, n), rel=1e-12)
    by_splits = {s: estimate([{"clest": {"splits": s}}]) for s in (2, 12, 22)}
    assert by_splits[12] > by_splits[2]
    assert by_splits[22] - by_splits[12] == pytest.approx(by_splits[12] - by_splits[2], rel=1e-9)
    assert cell_cost(method("lange")).criteria(100) == 0.0  # read from the halves' fits: nothing of its own


@pytest.fixture
def undeclared_criterion():
    register_criterion(Criterion(name="cost_probe", min_k=2, description="a plug-in's criterion that declares no cost",
                                 evaluate=lambda fits: 0.0))
    yield get_criterion("cost_probe")
    CRITERIA.pop("cost_probe")
    VARIABLES.pop("cost_probe")


def test_a_criterion_without_a_declaration_adds_no_fits_and_no_seconds(undeclared_criterion):
    assert undeclared_criterion.extra_fits(undeclared_criterion.options) == 0.0 and not undeclared_criterion.shares_fits
    assert undeclared_criterion.seconds_per_cell(undeclared_criterion.options, 1000) == 0.0
    assert cell_cost(method("cost_probe")).criteria(1000) == 0.0
    assert fit_work(method("cost_probe")) == fit_work(method("lange")) == 1.0
    assert fit_work(method("cost_probe", "gap")) == fit_work(method("gap"))


def test_an_algorithm_scales_its_fits_with_its_parameters():
    kmeans = get_algorithm("kmeans")
    lange = method("lange")
    base = cell_cost(lange)
    for n_init in (1, 10, 40):
        cost = cell_cost(MethodSpec(name="m", algorithm="kmeans", params={"n_init": n_init},
                                    predictor="nearest_centroid", criteria=("lange",)))
        scale = kmeans.fit_scale({**kmeans.defaults, "n_init": n_init})
        assert cost.per_point == pytest.approx(scale * base.per_point, rel=1e-12)
        assert cost.fixed - CELL_SECONDS == pytest.approx(scale * (base.fixed - CELL_SECONDS), rel=1e-12)
    assert kmeans.fit_scale({**kmeans.defaults, "n_init": 40}) == 4 * kmeans.fit_scale(kmeans.defaults)
