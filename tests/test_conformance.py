"""The conformance kit (``ordercube.plugin.check_plugin``): ordercube's own families pass it, the demo plug-in passes it
from its installed package, and records with the defects it is for fail it, each by the check named for the defect."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import numpy as np
import pytest

from ordercube.plugin import Criterion, PluginCheckError, check_plugin, register_criterion
from ordercube.pipeline.errors import ConfigError
from ordercube.tasks.criteria import CRITERIA
from ordercube.tasks.registry import VARIABLES


@pytest.fixture
def registered():
    """Register test criteria in this process (the checks run in process: ``worker_process=False``); removed after."""
    names = []

    def add(criterion: Criterion) -> str:
        register_criterion(criterion)
        names.append(criterion.name)
        return criterion.name

    yield add
    for name in names:
        for variable in CRITERIA.pop(name).variables:
            VARIABLES.pop(variable, None)


def _failed(report) -> dict[str, str]:
    return {check.name: check.detail for check in report.failures}


def test_kmeans_with_its_default_criteria_passes_every_check_in_process_and_in_a_worker_process():
    report = check_plugin("kmeans")
    assert [check.name for check in report.checks] == ["runs", "outputs", "same bits in a worker process",
                                                       "seeds change the values", "declared cost"]
    assert report.passed and report.config["methods"][0]["criteria"] == ["lange", "prediction_strength", "gap",
                                                                         "silhouette"]
    assert report.config["datasets"][0]["kind"] == "gaussian_mixture"
    assert "8 variables identical" in report.checks[2].detail
    assert str(report).splitlines()[0].startswith("check_plugin('kmeans'): algorithm; probe: dataset 'gaussian_mixture'")


def test_each_record_is_probed_with_data_it_takes():
    """A 1-D algorithm gets 1-D data, a criterion on stored clusterings fixed rows, a matrix model a 0/1 matrix."""
    found = {name: check_plugin(name, worker_process=False, **extra).config
             for name, extra in (("kmeans_1d_exact", {}), ("truncated_svd", {}),
                                 ("m3c", {"method": {"scheme": "consensus", "scheme_params": {"references": 3}}}))}
    assert found["kmeans_1d_exact"]["datasets"][0]["kind"] == "shamir_mixture1d"
    assert found["truncated_svd"]["datasets"][0]["kind"] == "boolean_matrix"
    assert found["m3c"]["datasets"][0]["kind"] == "file" and found["m3c"]["methods"][0]["criteria"] == ["m3c"]


def test_a_name_registered_nowhere_or_fitting_no_probe_is_refused_saying_what_to_pass():
    with pytest.raises(ConfigError, match="'no_such_record' is no registered algorithm, criterion or synthetic"):
        check_plugin("no_such_record")
    with pytest.raises(ConfigError, match="no probe dataset fits criterion 'psnr'.*pass dataset="):
        check_plugin("psnr")  # it needs a clean image to compare with


def test_a_criterion_that_fails_fails_runs_naming_the_reason(registered):
    def broken(fits):
        raise ValueError("the plug-in's own bug")

    name = registered(Criterion(name="broken_probe", min_k=2, description="a test criterion", evaluate=broken))
    with pytest.raises(PluginCheckError) as raised:
        check_plugin(name, worker_process=False)
    assert _failed(raised.value.report) == {"runs": "9 of 9 cells not ok (failed): ValueError: the plug-in's own bug"}


def test_a_declared_output_never_produced_fails_outputs(registered):
    def half_done(sample, **options):
        # hollow_probe_sd is declared, never given
        return {"hollow_probe": {k: float(k + sample.X.mean()) for k in sample.ks}}

    name = registered(Criterion(name="hollow_probe", min_k=2, description="a test criterion", evaluate_trial=half_done,
                                outputs=("hollow_probe", "hollow_probe_sd")))
    failed = _failed(check_plugin(name, worker_process=False, raise_on_failure=False))
    assert failed.keys() == {"outputs"} and "['hollow_probe_sd']" in failed["outputs"]


def test_values_that_ignore_the_seed_fail_seeds(registered):
    name = registered(Criterion(name="constant_probe", min_k=2, description="a test criterion",
                                evaluate=lambda fits: 0.5))
    failed = _failed(check_plugin(name, worker_process=False, raise_on_failure=False))
    assert failed.keys() == {"seeds change the values"}
    assert "gave the same ['constant_probe']" in failed["seeds change the values"]


def test_a_cost_that_grows_as_n_squared_but_is_declared_constant_fails_declared_cost(registered):
    def quadratic(fits):
        m = fits.first.shape[0] + fits.second.shape[0]
        time.sleep(4e-7 * m * m)  # 1.4 ms per cell at n = 60, 23 ms at n = 240: 16x where the model says ~2x
        return float(fits.labels_first[0])

    name = registered(Criterion(name="quadratic_probe", min_k=2, description="a test criterion", evaluate=quadratic,
                                seconds_per_cell=lambda options, n: 1e-3))
    failed = _failed(check_plugin(name, worker_process=False, raise_on_failure=False))
    assert "declared cost" in failed and "within 0.5-2: no" in failed["declared cost"], failed


@pytest.mark.slow
@pytest.mark.parametrize("name, extra", [
    ("knn", {}), ("correlation_gibbs", {}), ("truncated_svd", {}), ("boolean_mf", {}), ("agglomerative", {}),
    ("gaussian_mixture", {}), ("pac", {"method": {"scheme": "consensus"}}),
    ("m3c", {"method": {"scheme": "consensus", "scheme_params": {"references": 3}}}),
])
def test_every_built_in_family_passes_in_process_and_in_a_worker_process(name, extra):
    """Clustering (kmeans: in the default suite), classifiers, correlation clustering, matrix models and consensus."""
    report = check_plugin(name, raise_on_failure=False, **extra)
    assert report.passed, str(report)


@pytest.mark.slow
def test_the_demo_plugin_passes_from_its_installed_package(tmp_path_factory):
    """The plug-in of tests/plugins, installed: its algorithm checked in a fresh process whose worker finds it by its
    entry point (no preload, no ORDERCUBE_PLUGINS)."""
    from test_plugins import site  # the installed demo, as test_plugins installs it

    target = site.__wrapped__(tmp_path_factory)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(target), str(os.getcwd())])}
    env.pop("ORDERCUBE_PLUGINS", None)
    code = ("from ordercube.plugin import check_plugin\nreport = check_plugin('dp_segments', k=(1, 2, 3, 4))\n"
            "print(report)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          cwd=tmp_path_factory.mktemp("demo"), timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("check_plugin('dp_segments'): algorithm; probe: dataset 'piecewise_constant'")
    assert all(line.startswith("  ok") for line in lines[1:]) and len(lines) == 6, done.stdout
    assert np.all([" FAIL " not in line for line in lines])


def _guide_clusterer() -> str:
    """The python block of the plug-in guide's section "A clusterer and a criterion" (docs/guide/plugins.md)."""
    import re

    from conftest import REPO

    page = (REPO / "docs" / "guide" / "plugins.md").read_text(encoding="utf-8")
    section = page[page.index("## A clusterer and a criterion"):page.index("## Check it: the conformance kit")]
    blocks = re.findall(r"^```python\n(.*?)^```", section, flags=re.S | re.M)
    assert len(blocks) == 1, "the guide's second example is one python block"
    return blocks[0]


def test_the_guide_s_clusterer_and_criterion_pass_every_check_with_a_worker_process(tmp_path):
    """The guide's second worked example, as a module named in ORDERCUBE_PLUGINS (so the worker process loads it
    too): both records pass, the worker's cube included; the clusterer's declared cost is its measured one."""
    from conftest import REPO

    (tmp_path / "ordercube_kmedians.py").write_text(_guide_clusterer())
    code = ("from ordercube.plugin import check_plugin\n"
            "for name in ('kmedians', 'l1_separation'):\n    print(check_plugin(name, raise_on_failure=False))\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO)]),
           "ORDERCUBE_PLUGINS": "ordercube_kmedians"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    heads = [line for line in lines if line.startswith("check_plugin(")]
    assert heads[0].startswith("check_plugin('kmedians'): algorithm; probe: dataset 'gaussian_mixture', algorithm "
                               "'kmedians'")
    assert heads[1].startswith("check_plugin('l1_separation'): criterion; probe: dataset 'gaussian_mixture', "
                               "algorithm 'kmeans', criteria ['l1_separation']")
    checks = [line for line in lines if line.startswith("  ")]
    assert len(checks) == 10 and all(line.startswith("  ok ") for line in checks), done.stdout
