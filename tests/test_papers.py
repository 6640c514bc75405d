"""Paper checks (slow): the papers' published results through the whole stack, with stated tolerances."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from conftest import REPO, catalog_data, cli, write_config
from ordercube.pipeline.reduce.select import criterion_scores, failure_rate, select_k, sqrt_n_scaled, summarise
from ordercube.pipeline.cube.owner import open_cube

pytestmark = pytest.mark.slow


def run(tmp_path, config: dict):
    path = write_config(tmp_path / f"{config['name']}.yaml", **config)
    result = cli("run", str(path), "--out", str(tmp_path / "cube.zarr"), "--no-progress", timeout=900)
    assert result.returncode == 0, result.stderr
    return open_cube(tmp_path / "cube.zarr")


def test_lange2002_table1_stability_rows_for_kmeans(tmp_path):
    """Lange et al. (2002), Table 1: 3 Gaussians -> k̂ = 3; 3 rings with k-means -> k̂ = 7.

    The rings' geometry (radii, noise, counts) of Fig. 1(e) is not published: for the rings we accept
    6 <= k̂ <= 9 at n = 400 and 800: the curve is flat from k = 6 to 9 (1 in 8 seeds tried gave 9), and
    at n = 100 from k = 4 to 8 and require that k-means does not find the true k = 3 and that its best stability on the
    rings is clearly worse than on the Gaussians (the paper's remark on model mismatch).
    """
    cube = run(tmp_path, {
        "name": "table1", "seed": 2002, "k": {"from": 2, "to": 10}, "resamples": 40,
        "datasets": [{"name": "gaussians3", "kind": "lange_gaussians3", "n": [100, 400]},
                     {"name": "rings3", "kind": "rings3", "n": [400, 800]}],
        "methods": [{"name": "kmeans", "algorithm": "kmeans", "params": {"n_init": 10},
                     "predictor": "nearest_centroid", "criteria": ["lange"]}],
    })
    scores = criterion_scores(cube)
    k_hat = select_k(scores)["lange"].sel(model="kmeans")
    assert (k_hat.sel(dataset="gaussians3", n=[100, 400]) == 3).all()
    rings = k_hat.sel(dataset="rings3", n=[400, 800])
    assert ((rings >= 6) & (rings <= 9)).all(), rings.values
    best = summarise(scores)["lange_mean"].min("k")
    assert float(best.sel(dataset="rings3", n=[400, 800]).min()) > 10 * float(best.sel(dataset="gaussians3", n=[100, 400]).max())


def test_lange2002_table1_path_based_row_and_the_bayes_predictor(tmp_path):
    """Lange et al. (2002), Table 1: path-based clustering (nearest-neighbour predictor) on the 3 rings -> k̂ = 3.

    Halves must resolve the rings: at n = 800 (halves of 400) path-based recovers them exactly, at
    n = 200 it does not (measured ARI 0.5 at k = 3), so the check is at n = 800 and 1600; 20 resamples
    as in the paper. The Gaussian mixture with its Bayes-posterior predictor is checked on the 3
    Gaussians (k̂ = 3), the case where its model holds.
    """
    cube = run(tmp_path, {
        "name": "table1_path", "seed": 2002, "k": {"from": 2, "to": 7}, "resamples": 20,
        "datasets": [{"name": "rings3", "kind": "rings3", "n": [800, 1600]},
                     {"name": "gaussians3", "kind": "lange_gaussians3", "n": [200]}],
        "methods": [{"name": "path", "algorithm": "path_based", "predictor": "nearest_neighbor", "criteria": ["lange"]},
                    {"name": "gmm", "algorithm": "gaussian_mixture", "predictor": "gaussian_posterior",
                     "criteria": ["lange"]}],
    })
    k_hat = select_k(criterion_scores(cube))["lange"]
    assert (k_hat.sel(dataset="rings3", model="path", n=[800, 1600]) == 3).all(), k_hat.values
    assert int(k_hat.sel(dataset="gaussians3", model="gmm", n=200)) == 3


def test_shamir_tishby2007_figure1_trends(tmp_path):
    """Shamir & Tishby (2007), Fig. 1 and Theorem 3: the shipped config, 1000 trials, m = n/2 from 32 to 16384.

    The estimator exactly (a fresh sample of 4m points per trial, exact k-means optima); only the top of
    the n grid is lowered (the config goes to m = 2^16; this cube's cells are bit-identical to its
    cells). Claims checked, with tolerances from the binomial and resample noise of 1000 trials:
    - theta_3 has the smallest mean at every mu and m (k = 3 is the most stable);
    - the failure rate (theta_3 not the smallest in a trial) does not rise with m: at mu = 5 it ends at
      least 0.05 below where it starts (measured 0.21 -> 0.10); at mu = 8 it stays <= 0.03 at every m
      (measured 0.001-0.015; SE about 0.004);
    - it falls as mu grows: averaged over m, mu 5 > mu 7 > mu 8;
    - theta_3 and theta_4 shrink like 1/sqrt(m): sqrt(m) * mean theta_4 for m >= 256 stays within a
      factor 1.3 at every mu (measured <= 1.14 up to m = 2^20), and so does theta_3 at mu = 5 (1.06).
    theta_2 does not shrink: the mixture is symmetric and k = 2 has two mirror-image optima.
    """
    config = yaml.safe_load((REPO / "configs" / "shamir_tishby2007_fig1.yaml").read_text())
    assert config["resamples"] == 1000 and config["n"]["from"] == 64
    config["n"]["to"] = 32768
    cube = run(tmp_path, config)
    scores = criterion_scores(cube)
    summary = summarise(scores)
    assert (select_k(scores)["pairwise"] == 3).all()
    failures = failure_rate(scores)["pairwise"].sel(model="kmeans")
    mu5 = failures.sel(dataset="mu5").values
    assert mu5[-1] <= mu5[0] - 0.05, mu5
    assert (failures.sel(dataset="mu8") <= 0.03).all(), failures.sel(dataset="mu8").values
    average = failures.mean("n")
    assert float(average.sel(dataset="mu5")) > float(average.sel(dataset="mu7")) > float(average.sel(dataset="mu8"))
    scaled = sqrt_n_scaled(summary)["pairwise"].sel(model="kmeans")
    settled = scaled.sel(n=scaled["n"][scaled["n"] >= 512])
    ratio = settled.max("n") / settled.min("n")
    assert (ratio.sel(k=4) < 1.3).all() and float(ratio.sel(k=3, dataset="mu5")) < 1.3, ratio.values
    theta4 = summary["pairwise_mean"].sel(k=4, model="kmeans")
    assert (theta4.diff("n") < 0).all()  # while the raw values do shrink with m
    assert np.isfinite(summary["pairwise_mean"]).all()


def test_shamir_tishby2007_figure2_trends(tmp_path):
    """Shamir & Tishby (2007), Fig. 2: Lange's normalised stability across n on 5 Gaussians (k-means) and 2 rings (spectral).

    The paper's claim: where stability works at small n it keeps working as n grows ("no substantial
    degradation"). Checked with 60 trials: on 5 Gaussians on a pentagon, k-means picks k = 5 at every n
    and the failure rate stays below 0.12 (the full config measures 0.01-0.07) without rising by more
    than 0.08 (two binomial SEs at p = 0.1, 60 trials); on two rings, spectral clustering with the
    nearest-neighbour predictor picks k = 2 with a failure rate below 0.05 at n = 1000 and 5000.
    The counter-case of the config's comment: with one cloud far from the other four, failures *do*
    rise with n (k = 2 often has no disagreement at all).
    """
    pentagon = [[0.0, 5.0], [-4.76, 1.55], [-2.94, -4.05], [2.94, -4.05], [4.76, 1.55]]
    isolated = [[-8.0, -7.0], [-7.0, 2.0], [0.0, -4.0], [2.0, 3.0], [-3.0, -1.0]]
    cube = run(tmp_path, {
        "name": "fig2", "seed": 2007, "n": [200, 1000, 5000], "k": {"from": 2, "to": 7}, "resamples": 60,
        "datasets": [{"name": "pentagon", "kind": "gaussian_mixture", "params": {"centers": pentagon}},
                     {"name": "isolated", "kind": "gaussian_mixture", "params": {"centers": isolated}},
                     {"name": "rings2", "kind": "rings3", "params": {"radii": [1.0, 2.0], "noise": 0.1}}],
        "methods": [{"name": "kmeans", "algorithm": "kmeans", "params": {"n_init": 10},
                     "predictor": "nearest_centroid", "criteria": ["lange"]},
                    {"name": "spectral", "algorithm": "spectral", "params": {"n_neighbors": 10},
                     "predictor": "nearest_neighbor", "criteria": ["lange"]}],
    })
    scores = criterion_scores(cube)
    chosen, failures = select_k(scores)["lange"], failure_rate(scores)["lange"]
    assert (chosen.sel(dataset=["pentagon", "isolated"], model="kmeans") == 5).all()
    pentagon_failures = failures.sel(dataset="pentagon", model="kmeans").values
    assert (pentagon_failures <= 0.12).all(), pentagon_failures
    assert pentagon_failures[-1] <= pentagon_failures[0] + 0.08, pentagon_failures
    assert (chosen.sel(dataset="rings2", model="spectral", n=[1000, 5000]) == 2).all()
    assert (failures.sel(dataset="rings2", model="spectral", n=[1000, 5000]) <= 0.05).all()
    isolated_failures = failures.sel(dataset="isolated", model="kmeans").values
    assert isolated_failures[-1] > isolated_failures[0] + 0.1, isolated_failures


@pytest.mark.timeout(1800)  # the shipped config: ~6 min on 2 cores, most of it path-based Gap on the rings
def test_lange2002_table1_config_prints_the_comparison_with_the_paper_and_re_decides_without_recomputing(tmp_path):
    """Lange et al. (2002), Table 1 through the shipped config: every criterion on the same 20 resamples.

    Checked against the paper: the 3 Gaussians give k̂ = 3 for stability, Gap, Clest and Prediction
    Strength; on the 3 rings path-based stability gives 3 and the Gap statistic and Prediction Strength
    give 1 (for both algorithms). Not asserted, and stated in the closing note: k-means stability on
    our rings (flat from k = 4 to 9) and Clest on the rings (ours: 1 with k-means, 3 with path-based;
    the paper: 7 and 1).
    """
    out = tmp_path / "table1.zarr"
    result = cli("run", str(REPO / "configs/lange2002_table1.yaml"), "--out", str(out), "--no-progress", timeout=1800)
    assert result.returncode == 0, result.stderr
    report = cli("report", str(out), "--out", str(tmp_path / "report"))
    assert report.returncode == 0, report.stderr
    matrix = report.stdout.split("this cube / published")[1]
    rows = {line.split()[0]: line for line in matrix.splitlines() if "/" in line.split(" ")[0]}
    assert rows["gaussians3/kmeans"].split()[1:] == ["100", "3", "/", "3", "3", "/", "3", "3", "/", "3", "3", "/", "3"]
    scores = criterion_scores(open_cube(out))
    k_hat = select_k(scores)
    rings = {name: k_hat[name].sel(dataset="rings3", n=800) for name in ("lange", "gap", "prediction_strength")}
    assert int(rings["lange"].sel(model="path_based")) == 3
    assert (rings["gap"] == 1).all() and (rings["prediction_strength"] == 1).all()

    before = {path.name: path.read_bytes() for path in (out / "prediction_strength" / "c").rglob("*") if path.is_file()}
    lowered = cli("report", str(out), "--out", str(tmp_path / "r08"), "--threshold", "prediction_strength=0.8")
    assert lowered.returncode == 0, lowered.stderr
    after = {path.name: path.read_bytes() for path in (out / "prediction_strength" / "c").rglob("*") if path.is_file()}
    assert before == after
    expected = select_k(scores, {"prediction_strength": {"threshold": 0.8}})["prediction_strength"]
    assert f"{int(expected.sel(dataset='gaussians3', n=100, model='kmeans'))} / 3" in lowered.stdout


@pytest.mark.papers_data
def test_lange_gene_expression_config_reproduces_seed_002(tmp_path):
    """Roth et al. (2002), Sec. 3 through the shipped config (k-means, 20 splits of the whole data).

    Colon genes: "highly stable clusterings for k = 3 and k = 6": k̂ = 3 and k = 6 a local minimum of the
    instability curve. Colon tissues: k̂ = 2 (the paper's agreement with tumour/normal is > 85%; ours,
    with variance-selected genes instead of the paper's label-informed gene cluster, is about 0.8:
    required >= 0.75). Yeast: S(5) ≈ 0.19 (tolerance 0.06) and 52% agreement with the five phases at
    k = 5 (tolerance 0.06). Yeast's k̂ (paper 5, from deterministic annealing; ours 2) is not asserted.
    """
    out = tmp_path / "genes.zarr"
    catalog_data(yaml.safe_load((REPO / "configs/lange_gene_expression.yaml").read_text()))
    result = cli("run", str(REPO / "configs/lange_gene_expression.yaml"), "--out", str(out), "--no-progress", timeout=900)
    assert result.returncode == 0, result.stderr
    scores = criterion_scores(open_cube(out))
    mean = scores.mean("trial").sel(model="kmeans")
    k_hat = select_k(scores)["lange"].sel(model="kmeans")

    def at(dataset: str, variable: str):
        values = mean[variable].sel(dataset=dataset)
        return values.isel(n=int(values.notnull().any("k").argmax("n")))

    genes = at("colon_genes", "lange")
    assert int(k_hat.sel(dataset="colon_genes").max()) == 3
    assert genes.sel(k=6) < genes.sel(k=5) and genes.sel(k=6) < genes.sel(k=7)
    assert int(k_hat.sel(dataset="colon_tissues").max()) == 2
    assert float(at("colon_tissues", "agreement").sel(k=2)) >= 0.75
    assert float(at("yeast_cdc28", "lange").sel(k=5)) == pytest.approx(0.19, abs=0.06)
    assert float(at("yeast_cdc28", "agreement").sel(k=5)) == pytest.approx(0.52, abs=0.06)
