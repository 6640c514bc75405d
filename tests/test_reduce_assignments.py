"""Criteria reduced from stored assignments: the reader, the bootstrap over resamples, k̂ and its uncertainty on
curves without trials, decision-time options, and the consensus partition from a stored cube."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import ordercube
from conftest import cli_in_process, write_config

from ordercube.pipeline.reduce.assignments import (
    BOOTSTRAP_KEY, clusterings_of, reduced_scores, resolved_options, scores_and_summary,
)
from ordercube.pipeline.reduce.select import (
    choice_per_trial, criterion_scores, failure_rate, select_k, selection_frequency,
)
from ordercube.pipeline.reduce.uncertainty import decision_uncertainty
from ordercube.tasks.cell import Status
from ordercube.tasks.criteria import CRITERIA, VARIABLES, Criterion, Decision
from ordercube.tasks.params import number
from ordercube.tasks.seeding import Purpose, label_id, stream

DIMS = ("dataset", "n", "model", "k", "trial")
KS = (2, 3, 4)
SEED = 11


def _pair_share(clusterings, *, low: float = 0.1) -> dict[str, np.ndarray]:
    """A reduce criterion written here from the definitions alone: the share of item pairs whose weighted
    co-clustering rate lies strictly between ``low`` and ``1 - low`` (PAC's idea), by plain loops."""
    values = []
    for k in clusterings.ks:
        rows = clusterings.data[k]
        weights = np.ones(len(rows)) if clusterings.weights is None else clusterings.weights
        same = sum(w * ((r[:, None] == r[None, :]) & (r[:, None] >= 0)) for w, r in zip(weights, rows))
        both = sum(w * ((r[:, None] >= 0) & (r[None, :] >= 0)) for w, r in zip(weights, rows))
        with np.errstate(invalid="ignore"):
            rate = (same / both)[np.triu_indices(rows.shape[1], 1)]
        rate = rate[~np.isnan(rate)]
        values.append(float(np.mean((rate > low) & (rate < 1 - low))))
    return {"pair_share": np.array(values)}


PAIR_SHARE = Criterion(name="pair_share", min_k=2, description="share of ambiguous pairs (test)", reads="assignments",
                       reduce=_pair_share, decision=Decision(rule="smallest"), options={"low": 0.1},
                       ranges={"low": number(0.0, 0.5, high_open=True)})


@pytest.fixture
def pair_share(monkeypatch):
    monkeypatch.setitem(CRITERIA, PAIR_SHARE.name, PAIR_SHARE)
    monkeypatch.setitem(VARIABLES, PAIR_SHARE.name, PAIR_SHARE.name)
    return PAIR_SHARE


def planted(trials: int, items: int = 30, *, flip: float = 0.3, seed: int = 0, references: int = 0,
            failed: tuple[int, int] | None = None, criterion: object = "pair_share") -> xr.Dataset:
    """A cube in memory: method ``m`` stored the clusterings of 80% subsamples of three planted groups (k = 3
    exact; k = 2 merges groups 1 and 2, each of their items drawn into the wrong one with probability ``flip``;
    k = 4 splits group 0 at random), with ``references`` reference parts (random labels); method ``h`` stored
    Prediction Strength per trial and no assignments. ``failed``: (k index, trial) of a failed cell of ``m``."""
    rng = np.random.default_rng(seed)
    truth = np.repeat([0, 1, 2], items // 3)
    parts = 1 + references
    stored = np.full((1, 1, 2, len(KS), trials, parts, items), -1, dtype=np.int16)
    for t in range(trials):
        drawn = rng.random(items) < 0.8
        for i, k in enumerate(KS):
            if k == 2:
                labels = np.minimum(truth, 1)
                labels = np.where((truth > 0) & (rng.random(items) < flip), 0, labels)
            elif k == 3:
                labels = truth.copy()
            else:
                labels = np.where((truth == 0) & (rng.random(items) < 0.5), 3, truth)
            stored[0, 0, 0, i, t, 0] = np.where(drawn, labels, -1)
            for b in range(references):
                stored[0, 0, 0, i, t, 1 + b] = np.where(drawn, rng.integers(0, k, items), -1)
    status = np.full((1, 1, 2, len(KS), trials), Status.OK, dtype=np.int8)
    if failed is not None:
        status[0, 0, 0, failed[0], failed[1]] = Status.FAILED
        stored[0, 0, 0, failed[0], failed[1]] = -1
    strength = rng.random((1, 1, 2, len(KS), trials))
    strength[:, :, 0] = np.nan
    config = {"seed": SEED, "datasets": [{"name": "d"}],
              "methods": [{"name": "m", "criteria": [criterion]}, {"name": "h", "criteria": ["prediction_strength"]}]}
    roles = {"m": ["data"] + ["reference"] * references}
    return xr.Dataset(
        {"prediction_strength": (DIMS, strength), "status": (DIMS, status),
         "assignment": ((*DIMS, "part", "item"), stored), "items": (("dataset",), np.array([items]))},
        coords={"dataset": ["d"], "n": [items], "model": ["m", "h"], "k": list(KS), "trial": np.arange(trials),
                "part": np.arange(parts), "item": np.arange(items)},
        attrs={"ordercube_config": json.dumps(config), "ordercube_part_roles": json.dumps(roles),
               "ordercube_true_k": json.dumps({"d": 3})})


def test_clusterings_are_the_ok_cells_rows_split_by_role_with_the_bootstrap_stream(pair_share):
    cube = planted(6, references=2, failed=(1, 4))
    clusterings = clusterings_of(cube, "d", 30, "m")
    assert clusterings.ks == KS and clusterings.items == 30
    kept = [t for t in range(6) if t != 4]  # trial 4 failed at k = 3: left out at every k (the same resamples)
    assert clusterings.trials.tolist() == kept
    raw = cube["assignment"].values[0, 0, 0]
    for i, k in enumerate(KS):
        np.testing.assert_array_equal(clusterings.data[k], np.stack([raw[i, t, 0] for t in kept]))
        assert clusterings.references[k].shape == (2, len(kept), 30)
        for b in range(2):
            np.testing.assert_array_equal(clusterings.references[k][b], np.stack([raw[i, t, 1 + b] for t in kept]))
    expected = stream(SEED, Purpose.BOOTSTRAP, label_id("d"), 30, label_id("m"), 3, 1).random(4)
    np.testing.assert_array_equal(clusterings.rng((3, 1)).random(4), expected)
    with pytest.raises(ValueError, match="'h' stored no assignments"):
        clusterings_of(cube, "d", 30, "h")


def test_reduced_curves_are_the_criterion_on_the_stored_clusterings_and_k_hat_follows_its_rule(pair_share):
    cube = planted(30)
    reduced = reduced_scores(cube, replicates=0)
    curve = reduced["pair_share"].sel(dataset="d", n=30, model="m").values
    np.testing.assert_allclose(curve, _pair_share(clusterings_of(cube, "d", 30, "m"))["pair_share"])
    assert curve[1] == 0.0 and curve[0] > 0 and curve[2] > 0  # the planted k = 3 is never ambiguous
    assert reduced["pair_share"].sel(model="h").isnull().all()  # a method without assignments: nothing computed
    scores, summary = scores_and_summary(criterion_scores(cube), reduced)
    assert "trial" not in scores["pair_share"].dims
    chosen = select_k(scores)
    assert int(chosen["pair_share"].sel(dataset="d", n=30, model="m")) == 3
    assert int(chosen["pair_share"].sel(dataset="d", n=30, model="h")) == -1
    # the per-trial reducers leave the curve out, and keep the per-trial criterion
    choices = choice_per_trial(scores)
    assert "pair_share" not in choices and "prediction_strength" in choices
    assert "pair_share" not in selection_frequency(choices, scores["k"])
    assert "pair_share" not in failure_rate(scores) and "prediction_strength" in failure_rate(scores)
    np.testing.assert_allclose(summary["pair_share_mean"].sel(model="m").values.ravel(), curve)


def test_a_cube_whose_criteria_are_all_reduced_keeps_its_coordinates_and_true_k(pair_share):
    from ordercube.pipeline.report.section import Reduced
    from ordercube.pipeline.report.write import table_of

    cube = planted(10).drop_vars("prediction_strength").assign_coords(true_k=("dataset", [3]))
    reduced = Reduced.of(cube, replicates=20)
    assert list(reduced.scores.data_vars) == ["pair_share"]
    assert int(reduced.truth.sel(dataset="d")) == 3
    table = table_of(reduced)
    assert table[["method", "criterion", "k_hat", "true_k", "trials"]].values.tolist() == [["m", "pair_share", 3, 3, 10]]


def test_an_adaptive_cubes_per_trial_reducers_leave_the_curves_as_they_are(pair_share):
    from ordercube.pipeline.reduce.select import common_prefix, summarise

    cube = planted(8)
    cube["status"].loc[{"model": "h", "k": 4, "trial": [6, 7]}] = Status.SKIPPED  # stopped early by the adaptive rule
    scores, _ = scores_and_summary(criterion_scores(cube), reduced_scores(cube, replicates=0))
    assert "complete_trial" in scores.coords
    prefix = common_prefix(scores)
    assert prefix["pair_share"].dims == scores["pair_share"].dims  # no trial dim given to the curve
    assert prefix["prediction_strength"].sel(model="h", k=2, trial=7).isnull().all()
    assert choice_per_trial(scores)["prediction_strength"].sizes["trial"] == 8
    assert int(summarise(scores)["pair_share_trials"].sel(dataset="d", n=30, model="m", k=3)) == 1


def test_a_decided_option_replaces_the_configs_and_changes_k_hat_where_it_should(pair_share):
    # k = 2: items of groups 1 and 2 co-cluster at about 0.9 (each strays with probability 0.05), with group 0 at
    # about 0.05; k = 3 exact; k = 4 splits group 0 (rates about 0.5). The config's low = 0.3 finds no ambiguous
    # pair at k = 2: a tie at 0 with k = 3, which goes to the smallest k; low = 0.02 counts them: k̂ = 3
    cube = planted(40, flip=0.05, criterion={"pair_share": {"low": 0.3}})
    clusterings = clusterings_of(cube, "d", 30, "m")
    assert resolved_options(cube)["m"]["pair_share"] == {"low": 0.3}
    by_hand = {low: _pair_share(clusterings, low=low)["pair_share"] for low in (0.3, 0.02)}
    assert by_hand[0.3][0] == 0.0 and by_hand[0.02][0] > 0.5 and by_hand[0.3][2] > 0
    at = {"dataset": "d", "n": 30, "model": "m"}
    for decide, low in ((None, 0.3), ({"pair_share": {"low": "0.02"}}, 0.02)):  # text, as the CLI gives it
        scores = scores_and_summary(criterion_scores(cube), reduced_scores(cube, decide, replicates=0))[0]
        np.testing.assert_allclose(scores["pair_share"].sel(at).values, by_hand[low])
        assert int(select_k(scores, decide)["pair_share"].sel(at)) == (2 if low == 0.3 else 3)
    decide = {"pair_share": {"ties": "largest"}}  # a decision field still decides the rule
    scores = scores_and_summary(criterion_scores(cube), reduced_scores(cube, decide, replicates=0))[0]
    assert int(select_k(scores, decide)["pair_share"].sel(at)) == 3


@pytest.mark.parametrize("value, expected", [("0.5", "pair_share.low = 0.5: expected a finite number >= 0 and < 0.5"),
                                             ("x", "pair_share.low = 'x': expected a finite number")])
def test_a_decided_option_out_of_range_is_named_with_its_value_and_fix(pair_share, value, expected):
    with pytest.raises(ValueError) as error:
        resolved_options(planted(3), {"pair_share": {"low": value}})
    assert str(error.value).startswith(expected)
    assert "e.g. --decide pair_share.low=0.1" in str(error.value)


def test_bootstrap_interval_brackets_the_estimate_and_narrows_with_more_resamples():
    # PAC with the window (0.3, 0.7) about k = 2's co-clustering rates (0.58 and 0.3: at its edge), whose
    # Monte Carlo error stays visible at every number of resamples
    widths = []
    for trials in (20, 320):
        cube = planted(trials, flip=0.3, seed=trials, criterion={"pac": {"window": [0.3, 0.7]}})
        reduced = reduced_scores(cube, replicates=100)
        at = {"dataset": "d", "n": 30, "model": "m", "k": 2}
        value, low, high = (float(reduced[name].sel(at)) for name in ("pac", "pac_lo", "pac_hi"))
        assert low < value < high
        widths.append(high - low)
        share = float(reduced["pac_k_hat_share"].sel(dataset="d", n=30, model="m"))
        assert share == pytest.approx(1.0)  # k = 3 has no ambiguous pair in any replicate
        assert int(reduced["pac_trials"].sel(dataset="d", n=30, model="m")) == trials
    assert widths[1] < 0.6 * widths[0]  # measured: 0.22 at 20 resamples, 0.10 at 320


def test_the_bootstrap_draws_are_the_groups_own_stream(pair_share):
    from ordercube.tasks.consensus import bootstrap_weights

    cube = planted(10)
    reduced = reduced_scores(cube, replicates=5)
    clusterings = clusterings_of(cube, "d", 30, "m")
    weights = bootstrap_weights(clusterings.trials, stream(SEED, Purpose.BOOTSTRAP, label_id("d"), 30, label_id("m"),
                                                           *BOOTSTRAP_KEY), 5)
    from dataclasses import replace

    for b in range(5):
        again = _pair_share(replace(clusterings, weights=weights[b]))["pair_share"]
        np.testing.assert_allclose(reduced["pair_share_boot"].sel(dataset="d", n=30, model="m").values[:, b], again)


def test_uncertainty_of_a_reduced_curve_comes_from_its_replicates(pair_share):
    cube = planted(40, flip=0.3)
    reduced = reduced_scores(cube, replicates=60)
    scores, _ = scores_and_summary(criterion_scores(cube), reduced)
    fields = decision_uncertainty(scores, reduced=reduced).sel(dataset="d", n=30, model="m")
    boot = reduced["pair_share_boot"].sel(dataset="d", n=30, model="m")  # (k, replicate)
    assert float(fields["pair_share_score"]) == 0.0
    assert int(fields["pair_share_runner_up"]) in (2, 4)
    runner = int(fields["pair_share_runner_up"])
    differences = (boot.sel(k=runner) - boot.sel(k=3)).values
    estimate = float(scores["pair_share"].sel(dataset="d", n=30, model="m", k=runner))  # minus 0 at k̂ = 3
    shift = np.median(differences) - estimate  # the replicates' median bias, removed
    assert float(fields["pair_share_difference"]) == pytest.approx(estimate)
    assert float(fields["pair_share_difference_low"]) == pytest.approx(np.percentile(differences, 2.5) - shift)
    assert float(fields["pair_share_difference_high"]) == pytest.approx(np.percentile(differences, 97.5) - shift)
    assert float(fields["pair_share_frequency"]) == pytest.approx(1.0)
    assert not bool(fields["pair_share_not_separated"]) and not bool(fields["pair_share_few_trials"])


# --- a cube computed and stored on disk: report, --decide and partition read it, nothing is refitted ------------

RESAMPLES, STORED_KS = 12, (2, 3, 4, 5)


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """k-means on three blobs, halves stored with their assignments, with PAC and the consensus area reduced
    from them, computed in this process (no cluster) into a zarr cube on disk."""
    folder = tmp_path_factory.mktemp("stored")
    rng = np.random.default_rng(3)
    points = np.concatenate([centre + rng.normal(scale=1.3, size=(20, 2)) for centre in ([0, 0], [5, 0], [0, 5])])
    np.savetxt(folder / "blobs.csv", points, delimiter=",", header="a,b", comments="")
    config = write_config(folder / "blobs.yaml", name="blobs", seed=5, resamples=RESAMPLES, k=list(STORED_KS),
                          datasets=[{"name": "blobs", "kind": "file", "path": "blobs.csv"}],
                          methods=[{"name": "km", "algorithm": "kmeans", "criteria": ["lange", "pac", "consensus_area"]},
                                   {"name": "plain", "algorithm": "kmeans", "criteria": ["lange"]}])
    run = cli_in_process("run", str(config), "--workers", "0", "--out", str(folder / "cube.zarr"), "--no-progress",
                         cwd=folder)
    assert run.returncode == 0, run.stderr
    return folder


@pytest.fixture
def sections(monkeypatch):
    """The report sections the consensus criteria declare, or none where that module is not in this checkout (its
    own tests cover it): the k̂ table, its intervals and the files are what is tested here."""
    import importlib.util
    from dataclasses import replace

    for name, criterion in list(CRITERIA.items()):
        missing = [path for path in criterion.report_sections
                   if importlib.util.find_spec(path.partition(":")[0]) is None]
        if missing:
            monkeypatch.setitem(CRITERIA, name, replace(criterion, report_sections=()))


def _files(folder: Path) -> dict[str, str]:
    return {str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(folder.rglob("*")) if path.is_file()}


def _consensus_by_loop(cube: xr.Dataset, k: int, model: str = "km") -> np.ndarray:
    """Monti et al.'s consensus matrix from the cube's own array, by plain loops over its ok cells."""
    at = {"dataset": "blobs", "n": int(cube["n"].values[-1]), "model": model}
    status = cube["status"].sel(at).sel(k=k).values
    stored = cube["assignment"].sel(at).sel(k=k).transpose("trial", "part", "item").values
    items = int(cube["items"].sel(dataset="blobs"))
    same, both = np.zeros((items, items)), np.zeros((items, items))
    for t in range(stored.shape[0]):
        if status[t] != Status.OK:
            continue
        for part in range(stored.shape[1]):
            row = stored[t, part, :items]
            for i in range(items):
                for j in range(items):
                    if row[i] >= 0 and row[j] >= 0:
                        both[i, j] += 1
                        same[i, j] += row[i] == row[j]
    with np.errstate(invalid="ignore"):
        return same / both


def _pac_by_hand(matrix: np.ndarray, window: tuple[float, float]) -> float:
    upper = matrix[np.triu_indices(matrix.shape[0], 1)]
    upper = upper[~np.isnan(upper)]
    return float(np.mean((upper > window[0]) & (upper <= window[1])))


def test_the_consensus_matrix_recomputed_from_the_stored_array_is_what_the_reducer_used(stored):
    from ordercube import open_cube
    from ordercube.tasks.consensus import consensus_matrix

    cube = open_cube(stored / "cube.zarr").load()
    clusterings = clusterings_of(cube, "blobs", 60, "km")
    assert clusterings.ks == STORED_KS and len(clusterings.trials) == 2 * RESAMPLES  # both halves of every trial
    reduced = reduced_scores(cube, replicates=0)
    for k in STORED_KS:
        matrix = _consensus_by_loop(cube, k)
        np.testing.assert_allclose(consensus_matrix(clusterings.data[k]), matrix, equal_nan=True)
        assert float(reduced["pac"].sel(dataset="blobs", n=60, model="km", k=k)) == pytest.approx(
            _pac_by_hand(matrix, (0.1, 0.9)))
    assert reduced["pac"].sel(model="plain").isnull().all()  # it stored no assignments


def test_report_on_a_stored_cube_computes_nothing_new(stored, tmp_path, sections):
    from distributed.deploy.spec import SpecCluster

    from ordercube import open_cube
    from ordercube.pipeline.report.write import status_counts

    before, counts = _files(stored / "cube.zarr"), status_counts(open_cube(stored / "cube.zarr").load())
    clusters = set(SpecCluster._instances)
    result = cli_in_process("report", str(stored / "cube.zarr"), "--out", str(tmp_path / "report"), cwd=stored)
    assert result.returncode == 0, result.stderr
    assert _files(stored / "cube.zarr") == before  # every byte of the cube as it was
    assert status_counts(open_cube(stored / "cube.zarr").load()) == counts
    assert set(SpecCluster._instances) == clusters  # no cluster started, no worker
    table = pd.read_csv(tmp_path / "report" / "selection.csv")
    rows = table[table["method"] == "km"].set_index("criterion")
    chosen = ordercube.select_k(str(stored / "cube.zarr"))
    for name in ("pac", "consensus_area", "lange"):
        assert rows.loc[name, "k_hat"] == int(chosen[name].sel(dataset="blobs", n=60, model="km"))
    assert rows.loc["pac", "trials"] == RESAMPLES
    assert "pac" not in set(table.loc[table["method"] == "plain", "criterion"])
    page = (tmp_path / "report" / "index.html").read_text()  # the drill-down per group holds the reduced curves
    assert "pac mean ± SE" in page and "consensus_area mean ± SE" in page


def test_pac_with_another_window_through_decide_is_the_hand_computed_one(stored, tmp_path, sections):
    from ordercube import open_cube

    cube = open_cube(stored / "cube.zarr").load()
    window = (0.05, 0.95)
    by_hand = np.array([_pac_by_hand(_consensus_by_loop(cube, k), window) for k in STORED_KS])
    result = cli_in_process("report", str(stored / "cube.zarr"), "--out", str(tmp_path / "report"),
                            "--decide", "pac.window=0.05,0.95", "--decide", "lange.ties=largest", cwd=stored)
    assert result.returncode == 0, result.stderr
    rows = pd.read_csv(tmp_path / "report" / "selection.csv").set_index(["method", "criterion"])
    best = np.flatnonzero(by_hand <= by_hand.min() + 1e-12)[0]  # the smallest PAC, ties to the smallest k
    assert rows.loc[("km", "pac"), "k_hat"] == STORED_KS[best]
    assert rows.loc[("km", "pac"), "score_at_k_hat"] == pytest.approx(by_hand[best])
    chosen = ordercube.select_k(str(stored / "cube.zarr"), {"pac": {"window": window}})  # the API alike
    assert int(chosen["pac"].sel(dataset="blobs", n=60, model="km")) == STORED_KS[best]


def test_pac_window_decided_moves_k_hat_on_planted_clusterings():
    # as test_a_decided_option_replaces_..., with the registered PAC: the config's window (0.3, 0.7) sees no
    # ambiguous pair at k = 2 (a tie at 0 with k = 3 goes to the smallest k); (0.02, 0.98) sees them
    cube = planted(40, flip=0.05, criterion={"pac": {"window": [0.3, 0.7]}})
    at = {"dataset": "d", "n": 30, "model": "m"}
    for decide, expected in ((None, 2), ({"pac": {"window": ("0.02", "0.98")}}, 3)):
        scores = scores_and_summary(criterion_scores(cube), reduced_scores(cube, decide, replicates=0))[0]
        assert int(select_k(scores, decide)["pac"].sel(at)) == expected


@pytest.mark.parametrize("value, problem", [
    ("0.9,0.1", "pac.window = (0.9, 0.1): expected a pair [lower, upper] of numbers with 0 <= lower < upper <= 1"),
    ("0.5,0.5", "pac.window = (0.5, 0.5): expected a pair"),
    ("-0.1,0.9", "pac.window = (-0.1, 0.9): expected a pair"),
    ("0.1,1.5", "pac.window = (0.1, 1.5): expected a pair"),
    ("0.5", "pac.window = 0.5: expected a pair"),
    ("0.1,0.5,0.9", "pac.window = (0.1, 0.5, 0.9): expected a pair"),
    ("low,high", "pac.window = ('low', 'high'): expected a pair"),
    ("0.1,", "--decide: pac.window = '0.1,' has an empty part"),
])
def test_a_bad_window_is_named_with_its_value_and_fix(stored, tmp_path, value, problem):
    result = cli_in_process("report", str(stored / "cube.zarr"), "--out", str(tmp_path / "report"),
                            "--decide", f"pac.window={value}", cwd=stored)
    assert result.returncode == 2
    assert problem in result.stderr
    assert "e.g. --decide pac.window=0.05,0.95" in result.stderr or "e.g. --decide pac.window=0.1,0.9" in result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "report").exists()


def test_partition_of_a_method_with_assignments_is_the_consensus_partition_of_its_stored_clusterings(stored, tmp_path):
    from ordercube import open_cube
    from ordercube.tasks.consensus import consensus_partition, item_consensus

    cube = open_cube(stored / "cube.zarr").load()
    out = tmp_path / "labels.csv"
    result = cli_in_process("partition", str(stored / "cube.zarr"), "--dataset", "blobs", "--method", "km",
                            "--criterion", "pac", "--out", str(out), cwd=stored)
    assert result.returncode == 0, result.stderr
    assert "nothing refitted" in result.stdout
    k = int(ordercube.select_k(cube)["pac"].sel(dataset="blobs", n=60, model="km"))
    matrix = _consensus_by_loop(cube, k)
    expected = np.unique(consensus_partition(matrix, k), return_inverse=True)[1]
    rows = pd.read_csv(out)
    assert rows["cluster"].tolist() == (expected + 1).tolist()
    consensus = item_consensus(matrix, expected, int(expected.max()) + 1)
    np.testing.assert_allclose(rows["item_consensus"], consensus[np.arange(expected.size), expected])
    np.testing.assert_allclose(rows[[f"consensus_{j + 1}" for j in range(consensus.shape[1])]].values, consensus)
    clusters = pd.read_csv(out.with_name(out.stem + "-clusters.csv"))
    assert clusters["clusterings"].tolist() == [2 * RESAMPLES] * len(clusters)


def test_partition_of_a_method_without_assignments_is_fitted_as_before(stored, tmp_path):
    out = tmp_path / "labels.csv"
    result = cli_in_process("partition", str(stored / "cube.zarr"), "--dataset", "blobs", "--method", "plain",
                            "--out", str(out), cwd=stored)
    assert result.returncode == 0, result.stderr
    assert "fitted on 60 rows" in result.stdout and "item_consensus" not in pd.read_csv(out).columns
