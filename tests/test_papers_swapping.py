"""Paper checks (slow): Daudin & Mary-Huard's swapping method through the whole stack, with the shipped
configs and tolerances of our own for the paper's claims (A1-A6 on Kearns' intervals, Sec. 3.2-3.3 and Figs. 1-3;
B1-B4 on the colon data, Sec. 4.2 and Table 1), each stated where it is tested. A5/A6 (the gain over CV) and B4
(the paper's absolute levels) are findings, reported by the report and the closing note, not pass criteria: the
pilot did not reproduce them and neither do we."""

from __future__ import annotations

import pytest
import yaml

from conftest import REPO, catalog_data, cli, write_config
from ordercube.pipeline.reduce.select import criterion_scores
from ordercube.pipeline.cube.owner import open_cube
from ordercube.pipeline.reduce.select import choice_per_trial
from ordercube.pipeline.reduce.supervised import at_choice, selection_rows

pytestmark = pytest.mark.slow


def run(tmp_path, name: str, **overrides):
    config = yaml.safe_load((REPO / "configs" / f"{name}.yaml").read_text())
    config.update(overrides)
    catalog_data(config)
    path = write_config(tmp_path / f"{name}.yaml", **config)
    result = cli("run", str(path), "--out", str(tmp_path / "cube.zarr"), "--no-progress", timeout=1200)
    assert result.returncode == 0, result.stderr
    return criterion_scores(open_cube(tmp_path / "cube.zarr"))


def test_kearns_claims_a1_to_a4(tmp_path):
    """The shipped Kearns config (d = 10, eta 0.1-0.4, n 20/100/500, k 1..40) at 1000 trials, the
    definitive run (about 2-4.5 min on 2 cores): at the paper's 100 trials the Monte Carlo error of A3's ratio
    and of A4's optimism at eta = 0.2, n = 100 is as large as the effects (100 trials gave 0.42 for the
    ratio at n = 500 and +0.0003 for that optimism; 1000 trials 0.28 and -0.012)."""
    scores = run(tmp_path, "daudin_kearns", resamples=1000)
    mean = scores.mean("trial")
    etas = ["eta0p1", "eta0p2", "eta0p3", "eta0p4"]
    at_least_d = mean.sel(k=slice(10, None))
    # A1: CER and TER nearly parallel for k >= d: the range over k of mean(TER - CER) is <= 0.02 in every cell
    gap = at_least_d["true_error"] - at_least_d["conditional_error"]
    spread = gap.max("k") - gap.min("k")
    assert float(spread.max()) <= 0.02, spread.values
    # A2: the mean swapping curve's minimum near d at eta = 0.2, n = 100
    k_min = int(mean["swapping"].sel(dataset="eta0p2", n=100, model="intervals").idxmin("k"))
    assert 8 <= k_min <= 12, k_min
    # A3: the bias estimate's error, mean over k >= d of mean(S_n - (CER - EER)): strictly decreasing in eta,
    # > 0 at 0.1 and 0.2, < 0 at 0.4, and at 0.3 smaller than a third of the 0.2 value in magnitude. The last
    # part does not hold at n = 20 (0.36 of it at 1000 trials, 0.42 at 100; the pilot saw 0.33): a finding.
    excess = (at_least_d["swap_penalty"] - (at_least_d["conditional_error"] - at_least_d["resubstitution"])).mean("k")
    for n in (20, 100, 500):
        values = [float(excess.sel(dataset=eta, n=n, model="intervals")) for eta in etas]
        assert all(a > b for a, b in zip(values, values[1:])), (n, values)
        assert values[0] > 0 and values[1] > 0 and values[3] < 0, (n, values)
        if n > 20:
            assert abs(values[2]) < values[1] / 3, (n, values)
    # A4: optimism: CV's own estimate at its k̂ below the true error there for every eta; S's for eta >= 0.2.
    # At eta = 0.1 the paper says S is pessimistic; the pilot saw that at n = 100 only, and so do we (at
    # 1000 trials -0.063 at n = 20, +0.026 at n = 100, -0.003 at n = 500): a finding.
    rows = selection_rows(scores).set_index(["dataset", "n", "selector"])
    optimism = rows["estimate_at_k_hat"] - rows["R"]
    for eta in etas:
        for n in (20, 100, 500):
            assert optimism.loc[(eta, n, "loo_cv")] < 0, (eta, n)
            if eta != "eta0p1":
                assert optimism.loc[(eta, n, "swapping")] < 0, (eta, n)
    assert optimism.loc[("eta0p1", 100, "swapping")] > 0


@pytest.mark.papers_data
def test_colon_table1_claims_b1_to_b3(tmp_path):
    """The shipped colon config (500 resamplings, g = 2000, 1000, 500, 100, odd k 1..39, 27 + 14 learning)."""
    scores = run(tmp_path, "daudin_colon")
    rows = selection_rows(scores).set_index(["method", "selector"])["R"] * 100
    for g in ("knn_g2000", "knn_g1000", "knn_g500", "knn_g100"):
        oracle, swap, cv = (rows[(g, name)] for name in ("test_error", "swapping", "loo_cv"))
        assert oracle <= min(swap, cv) - 2, (g, oracle, swap, cv)  # B1: both far from the oracle
        assert abs(swap - cv) <= 1.5, (g, swap, cv)  # B2: S about as good as CV
    for name in ("test_error", "swapping", "loo_cv"):  # B3: all genes is the hardest case
        assert rows[("knn_g2000", name)] > rows[("knn_g100", name)], name
    # the oracle's N within 3 of Table 1 (B4's part that holds; R runs lower than the paper's, see the note)
    chosen = choice_per_trial(scores)["test_error"]
    N = chosen.where(chosen >= 0).mean("trial").sel(dataset="colon", n=62)
    for g, paper in (("knn_g2000", 6.0), ("knn_g1000", 7.6), ("knn_g100", 4.8)):
        assert abs(float(N.sel(model=g)) - paper) <= 3, (g, float(N.sel(model=g)))
    error = at_choice(scores["test_error"], chosen)
    assert float(error.mean()) > 0.05  # held-out tissues: never the leaked zero of selection on the whole file
