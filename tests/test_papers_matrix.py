"""Paper checks (slow): Frank, Chehreghani & Buhmann's matrix models through the whole stack, with the shipped configs
and the paper's claims (Sec. 4.1 and Fig. 2: c1-c4; Sec. 4.2 and Fig. 3: v1-v5; Sec. 5: d1-d2), each stated where it
is tested, with tolerances of our own. Claims that do not come out
are findings, stated here with the cube's figures and not asserted:

- c4 (at low noise the deviation "has little influence on the error"): on camera_512 MTC's median rank loses
  9.9 dB at sd 2 (k̂ 22 against k* 64) and 3.3 dB at sd 5 (18 against 62), as in an earlier pilot run (10.5
  and 3.5 dB); the overlapping-patch variant loses the same (10.5 and 3.3 dB).
- d1 and d2 (a U-shaped BMF transfer cost, steadier when underfitting): with GreConD the cost falls to a floor
  and stays there (americas_small: 0.178 bits per user from k = 150 on, GreConD covering the training users
  exactly with fewer factors; apj: still falling at k = 400), so there is no interior minimum, and the spread
  over splits is largest at small k (sd 1.08 at k = 1 against 0.05 at k >= 100 on americas_small): the
  paper fits MAC, whose likelihood does not cover noise bits; a factoriser that covers the training matrix
  exactly cannot overfit in this cost.
"""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from conftest import REPO, catalog_data, cli, write_config
from ordercube.pipeline.reduce.select import criterion_scores
from ordercube.pipeline.cube.owner import open_cube
from ordercube.pipeline.reduce.select import choice_per_trial, select_k
from ordercube.pipeline.report.matrix import rank_table

pytestmark = pytest.mark.slow


def run(tmp_path, name: str, **overrides):
    """The shipped config (its ``catalog:`` paths found in ../shared) with ``overrides``: the cube's scores."""
    config = yaml.safe_load((REPO / "configs" / f"{name}.yaml").read_text())
    config.update(overrides)
    catalog_data(config)
    path = write_config(tmp_path / f"{name}.yaml", **config)
    result = cli("run", str(path), "--out", str(tmp_path / "cube.zarr"), "--no-progress", "--no-dashboard",
                 timeout=1500)
    assert result.returncode == 0, result.stderr
    return criterion_scores(open_cube(tmp_path / "cube.zarr").load())


def ranks(scores) -> dict[tuple[str, str], dict]:
    table = rank_table(scores, select_k(scores), choice_per_trial(scores))
    return {(row.dataset, row.criterion): row._asdict() for row in table.itertuples(index=False)}


@pytest.mark.papers_data
def test_image_denoising_claims_c1_c2_c3(tmp_path):
    """The shipped config without the overlapping-patch variant: 11 noise levels x 20 trials x k 1..64 (~10 s)."""
    config = yaml.safe_load((REPO / "configs" / "frank_svd_image.yaml").read_text())
    tiling = config["datasets"][0]
    sds = tiling["sweep"]["noise"]
    table = ranks(run(tmp_path, "frank_svd_image", datasets=[tiling]))
    mtc = [table[(f"camera_noise{sd:g}", "mtc_matrix")] for sd in sds]
    k_star = [row["k_star"] for row in mtc]
    k_hat = [row["k_hat"] for row in mtc]
    print("sd:", sds, "\nk*:", k_star, "\nMTC:", k_hat, "\nloss (dB):", [round(row["psnr_loss_db"], 2) for row in mtc])
    # c1: MTC's median k̂ and the oracle's k* are non-increasing in the noise
    assert all(a >= b for a, b in zip(k_hat, k_hat[1:])), k_hat
    assert all(a >= b for a, b in zip(k_star, k_star[1:])), k_star
    # c2: where k* <= 8, MTC's k̂ loses at most 0.5 dB of PSNR
    assert all(row["psnr_loss_db"] <= 0.5 for row in mtc if row["k_star"] <= 8), mtc
    # c3: at the highest noise levels both pick rank 1
    assert k_hat[-2:] == [1, 1] and k_star[-2:] == [1, 1]
    # the pilot's oracle (camera_512, 10 splits): 64 62 27 8 5 3 2 1 1 1 1; ours within 2 at every sd
    assert np.abs(np.array(k_star) - [64, 62, 27, 8, 5, 3, 2, 1, 1, 1, 1]).max() <= 2, k_star
    print("c4 (finding): loss at sd 2 and 5:", [round(row["psnr_loss_db"], 1) for row in mtc[:2]], "dB")


@pytest.mark.papers_data
def test_access_control_claims_v1_to_v5(tmp_path):
    """hc, domino, fire1, fire2 at nu = 0.05 (the pilot run's level), 20 trials, k 1..99 (~10 s)."""
    config = yaml.safe_load((REPO / "configs" / "frank_rbac.yaml").read_text())
    datasets = [{**{key: value for key, value in entry.items() if key != "sweep"}, "params": {"noise": 0.05}}
                for entry in config["datasets"]]
    table = ranks(run(tmp_path, "frank_rbac", datasets=datasets))
    names = [entry["name"] for entry in datasets]

    def k(name: str, criterion: str) -> int:
        return table[(name, criterion)]["k_hat"]

    def distance(name: str, criterion: str) -> int:
        return abs(k(name, criterion) - table[(name, criterion)]["k_star"])

    for name in names:
        print(name, {criterion: k(name, criterion) for criterion in ("denoise_error", "mtc_matrix", "opcv_half",
                                                                     "opcv_fifth", "coverage_rule", "increment_rule")},
              "err(MTC)/err(k*) =", round(table[(name, "mtc_matrix")]["error_ratio"], 2))
    # v1: the 80% rule under-selects everywhere
    assert all(k(name, "coverage_rule") < table[(name, "coverage_rule")]["k_star"] for name in names)
    # v2: MTC at least as close as the 80% rule everywhere; closer than the increment rule on at least half
    assert all(distance(name, "mtc_matrix") <= distance(name, "coverage_rule") for name in names)
    assert sum(distance(name, "mtc_matrix") < distance(name, "increment_rule") for name in names) >= len(names) / 2
    # v3: MTC's denoising error within 1.5 times the oracle's everywhere
    assert all(table[(name, "mtc_matrix")]["error_ratio"] <= 1.5 for name in names)
    # v4: OP-CV (the large blocks, Owen-Perry's 2 x 2) within twice MTC's rank distance on at least half
    assert sum(distance(name, "opcv_half") <= 2 * distance(name, "mtc_matrix") for name in names) >= len(names) / 2
    # v5: the two block sizes disagree somewhere
    disagree = [name for name in names if k(name, "opcv_half") != k(name, "opcv_fifth")]
    assert disagree
    print("v5: OP-CV 1/2 vs 1/5 where they differ:", {name: (k(name, "opcv_half"), k(name, "opcv_fifth"),
                                                             table[(name, "opcv_half")]["k_star"]) for name in disagree})


@pytest.mark.papers_data
def test_boolean_factorisation_transfer_cost_d1_d2_findings(tmp_path):
    """americas_small (3000 users x 500 permissions) and apj, 80/20 splits, GreConD, 10 trials (~5 s)."""
    scores = run(tmp_path, "frank_bmf", resamples=10)
    for dataset in scores["dataset"].values:
        cost = scores["mtc_matrix"].sel(dataset=dataset, model="bmf").dropna("n", how="all").squeeze("n")
        mean, sd = cost.mean("trial"), cost.std("trial")
        ks = cost["k"].values
        print(dataset, "k:", ks.tolist(), "\n  mean:", np.round(mean.values, 3).tolist(),
              "\n  sd:", np.round(sd.values, 3).tolist())
        assert (cost >= 0).all()
        # more factors never cost more here: GreConD's factors are nested and exact from below
        assert bool((mean.diff("k") <= 1e-12).all()), mean.values
        assert float(mean.sel(k=1)) > 2 * float(mean.isel(k=-1))  # the roles explain the users
        best = int(ks[int(np.argmin(mean.values))])
        print("  d1 (finding): cost(k_max) / cost(k̂) =", round(float(mean.isel(k=-1) / mean.min()), 3), "at k̂ =", best)
