"""Reports of file datasets without labels: at one or several sample sizes, with
or without a true k given, `ordercube report` exits 0 with the table and every figure; failure rates exist
exactly where a true k is known. (It crashed in matplotlib, exit 1, with a partial report, on unlabeled
data at two or more n.)"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from conftest import cli_in_process, write_config
from ordercube.pipeline.reduce.select import criterion_scores, select_k
from ordercube.pipeline.cube.owner import open_cube

CRITERIA = ["lange", "prediction_strength"]
SEVERAL_N = ["vs_k", "scaling", "selection_frequency"]
ONE_N = ["vs_k", "selection_frequency"]


def _blobs(folder) -> None:
    rng = np.random.default_rng(3)
    X = np.vstack([rng.normal(center, 0.4, size=(40, 2)) for center in ((0, 0), (4, 0), (0, 4))])
    pd.DataFrame(X, columns=["x", "y"]).to_csv(folder / "blobs.csv", index=False)


@pytest.mark.parametrize("n, with_true_k", [([20, 40], False), ([20, 40], True), ([40], True)],
                         ids=["several n, no true k anywhere", "several n, with and without true k",
                              "one n, with and without true k"])
def test_unlabeled_file_data_reports_fully(tmp_path, n, with_true_k):
    _blobs(tmp_path)
    datasets = [{"name": "blobs", "kind": "file", "path": "blobs.csv"}]
    if with_true_k:
        datasets.append({"name": "blobs_k", "kind": "file", "path": "blobs.csv", "true_k": 3})
    config = write_config(tmp_path / "c.yaml", name="u", seed=5, n=n, k=[2, 3, 4], resamples=4, datasets=datasets,
                          methods=[{"name": "km", "algorithm": "kmeans", "params": {"n_init": 3},
                                    "predictor": "nearest_centroid", "criteria": CRITERIA}],
                          execution={"task_seconds": 0.01})
    cube = tmp_path / "u.zarr"
    run = cli_in_process("run", str(config), "--out", str(cube), "--workers", "0", "--no-progress")
    assert run.returncode == 0, run.stderr
    assert "true k unknown (failure rates need labels or true_k)" in run.stdout
    report = cli_in_process("report", str(cube), "--out", str(tmp_path / "r"))
    assert report.returncode == 0 and "Traceback" not in report.stderr, report.stderr
    assert "report written to" in report.stdout
    names = SEVERAL_N if len(n) > 1 else ONE_N
    expected = {"selection.csv", "curves.csv", "index.html", ".ordercube-figures.json",
                *(f"{c}_{name}.png" for c in CRITERIA for name in names)}
    written = {path.name for path in (tmp_path / "r").iterdir()}
    assert written == expected
    assert all((tmp_path / "r" / name).stat().st_size > 10_000 for name in expected if name.endswith(".png"))

    table = pd.read_csv(tmp_path / "r" / "selection.csv")
    assert len(table) == len(datasets) * len(n) * len(CRITERIA)
    chosen = select_k(criterion_scores(open_cube(cube)))
    for row in table.itertuples():
        assert row.k_hat == int(chosen[row.criterion].sel(dataset=row.dataset, n=row.n, model="km"))
        assert row.trials == 4
        if row.dataset == "blobs":  # no labels, no true k: no failure rate
            assert row.true_k == -1 and np.isnan(row.failure_rate)
        else:
            assert row.true_k == 3 and 0.0 <= row.failure_rate <= 1.0
    # three well separated blobs: k = 3 is the most stable solution at n = 40
    assert table[(table.criterion == "lange") & (table.n == 40)].k_hat.tolist() == [3] * len(datasets)
