"""Decision rules: ties (tolerance, side), OP-CV's strict median, at_grid_edge per rule, intervals that cannot be
computed, threshold ranges, and published values tied to the data's digest (terminal, published.csv, index.html)."""

from __future__ import annotations

import hashlib
import html
import json
import statistics
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr
import yaml

from conftest import cli_in_process, small_config, write_config
from ordercube.pipeline.config.study import data_digest, load_config
from ordercube.pipeline.errors import ConfigError
from ordercube.pipeline.reduce.select import choice_per_trial, criterion_scores, failure_rate, select_k
from ordercube.pipeline.reduce.uncertainty import at_grid_edge, decision_uncertainty
from ordercube.pipeline.report.write import flag_notes, printable, selection_table
from ordercube.tasks.adaptive import choice_on_means, race_by
from ordercube.tasks.criteria.rank_rules import opcv_rank
from ordercube.tasks.criteria import CRITERIA, Decision
from ordercube.tasks.criteria.rules import EDGES, TIE_RTOL, choose_index

CONFIGS = Path(__file__).resolve().parents[1] / "configs"


def scores_of(name: str, values: list[list[float]], ks: list[int], true_k: int = -1) -> xr.Dataset:
    """Per-trial scores of one criterion for one (dataset, n, model): ``values[k index][trial]``."""
    array = np.asarray(values, dtype=float)[None, None, None]  # dataset, n, model, k, trial
    coords = {"dataset": ["d"], "n": [100], "model": ["m"], "k": ks, "trial": np.arange(array.shape[-1])}
    return xr.Dataset({name: (("dataset", "n", "model", "k", "trial"), array)}, coords=coords,
                      attrs={"true_k": json.dumps({"d": true_k})})


def k_hat(scores: xr.Dataset, name: str, decide: dict | None = None) -> int:
    return int(select_k(scores, decide)[name].squeeze())


# ---------------------------------------------------------------------------------------------------- ties

def test_equal_counts_whose_float_means_differ_in_the_last_bit_tie_to_the_smallest_k():
    # 20 trials of disagreeing-pair counts over C(150, 2) pairs; k = 8, 9, 10 hold the same counts in other trial
    # orders (232 pairs in total as on the quickstart rings): the same score, a float mean that depends on the order
    pairs = 150 * 149 / 2
    rng = np.random.default_rng(5)
    counts = np.array([14, 9, 13, 10, 12, 11, 15, 8, 12, 13, 11, 10, 12, 14, 9, 13, 11, 10, 12, 13], dtype=float)
    assert counts.sum() == 232
    orders = []
    for _ in range(500):  # find three orders whose means differ in the last bits, so the test means something
        orders = [counts[rng.permutation(20)] / pairs for _ in range(3)]
        if len({float(np.mean(order)) for order in orders}) == 3:
            break
    means = [float(np.mean(order)) for order in orders]
    assert len(set(means)) == 3 and max(means) - min(means) < 1e-15  # distinct floats, the same count
    worse = [counts / pairs + 0.01, counts / pairs + 0.02]  # k = 6, 7
    scores = scores_of("pairwise", [*worse, *orders], [6, 7, 8, 9, 10])
    assert k_hat(scores, "pairwise") == 8
    assert k_hat(scores, "pairwise", {"pairwise": {"ties": "largest"}}) == 10
    assert k_hat(scores, "pairwise", {"pairwise": {"ties": "smallest"}}) == 8


def test_the_tie_tolerance_is_relative_and_its_edge_is_where_the_module_says():
    base = 0.25
    inside, outside = base * (1 + 0.5 * TIE_RTOL), base * (1 + 2 * TIE_RTOL)
    curve = [base + 1.0, base, inside, outside]
    assert choose_index(curve, "smallest") == 1
    assert choose_index(curve, "smallest", ties="largest") == 2  # inside ties, outside does not
    assert choose_index([-x for x in curve], "largest", ties="largest") == 2  # the argmax mirrors it
    # exactly equal values tie at any magnitude, 0 included; 0 and 1e-300 do not (relative)
    assert choose_index([0.0, 0.0, 1.0], "smallest", ties="largest") == 1
    assert choose_index([1e-300, 0.0, 0.0], "smallest") == 1


def test_equal_per_trial_scores_tie_in_each_trial_and_the_true_k_in_a_tie_is_no_failure():
    # trial 0: k = 2, 3 both 0 (exactly); trial 1: k = 3 lowest; true k = 3
    scores = scores_of("lange", [[0.0, 0.4], [0.0, 0.1], [0.5, 0.5]], [2, 3, 4], true_k=3)
    assert choice_per_trial(scores)["lange"].values.ravel().tolist() == [2, 3]
    assert choice_per_trial(scores, {"lange": {"ties": "largest"}})["lange"].values.ravel().tolist() == [3, 3]
    assert float(failure_rate(scores)["lange"].squeeze()) == 0.0  # tied at the minimum: not a failure


def test_every_argmin_and_argmax_criterion_ties_to_the_smallest_k_and_can_be_told_otherwise():
    for name, criterion in CRITERIA.items():
        if criterion.decision.rule in ("smallest", "largest"):
            assert criterion.decision.ties == "smallest", name
    scores = scores_of("silhouette", [[0.5, 0.5], [0.7, 0.7], [0.7, 0.7], [0.2, 0.2]], [2, 3, 4, 5])
    assert k_hat(scores, "silhouette") == 3
    assert k_hat(scores, "silhouette", {"silhouette": {"ties": "largest"}}) == 4


def test_a_threshold_reached_up_to_rounding_counts_as_reached():
    # Prediction Strength 0.9 in every trial, summed in an order that rounds below 0.9
    values = [0.85, 0.95, 0.85, 0.95, 1.0, 0.7, 0.95, 0.95, 0.85, 0.95]  # 9.0 / 10
    assert float(np.mean(values)) < 0.9 and 0.9 - float(np.mean(values)) < 1e-15
    scores = scores_of("prediction_strength", [[1.0] * 10, [0.95] * 10, values, [0.3] * 10], [1, 2, 3, 4])
    assert k_hat(scores, "prediction_strength") == 3
    # the replay's choice on the means is the same function
    assert choice_on_means(Decision(rule="largest_above", threshold=0.9), np.array([[1.0] * 10, [0.95] * 10, values,
                                                                                    [0.3] * 10]).T) == 2


def test_the_threshold_race_classifies_a_last_look_mean_as_the_fixed_budget_does():
    values = np.array([[0.85, 0.95, 0.85, 0.95, 1.0, 0.7, 0.95, 0.95, 0.85, 0.95], [0.2] * 10]).T  # k = 2, 3
    rule = Decision(rule="largest_above", threshold=0.9)
    assert choice_on_means(rule, values) == 0  # a mean of 0.8999999999999998 reaches 0.9
    race = race_by(rule, values, (10,), delta=0.05, epsilon=0.0)  # one look: unsettled, decided by the means
    assert (race.reason, race.choice) == ("unsettled", 0)


def test_the_replays_choice_on_means_is_select_ks_on_random_tables():
    rng = np.random.default_rng(3)
    for _ in range(40):
        table = rng.choice([0.1, 0.2, 0.3], size=(5, 4))  # trials x k: frequent exact and rounded ties
        for rule in (Decision(rule="smallest"), Decision(rule="smallest", ties="largest")):
            scores = scores_of("lange", table.T.tolist(), [2, 3, 4, 5])
            expected = k_hat(scores, "lange", {"lange": {"ties": rule.ties}})
            assert [2, 3, 4, 5][choice_on_means(rule, table)] == expected


def test_the_rules_agree_with_a_plain_loop_on_random_curves():
    rng = np.random.default_rng(0)
    for _ in range(300):
        curve = rng.choice([0.1, 0.2, 0.3, np.nan], size=6)
        present = [i for i, v in enumerate(curve) if not np.isnan(v)]
        for ties in ("smallest", "largest"):
            best = min((curve[i] for i in present), default=None)
            ties_at = [i for i in present if curve[i] == best]
            expected = -1 if not ties_at else (min(ties_at) if ties == "smallest" else max(ties_at))
            assert choose_index(curve, "smallest", ties=ties) == expected
        above = [i for i in present if curve[i] >= 0.2]
        assert choose_index(curve, "largest_above", threshold=0.2) == (max(above) if above else -1)
        assert choose_index(curve, "first_above", threshold=0.2) == (min(above) if above else -1)
        below = [i for i in present if curve[i] < 0.2]
        assert choose_index(curve, "first_below", threshold=0.2) == (min(below) if below else -1)


# --------------------------------------------------------------------------------------------------- OP-CV

def opcv_by_hand(errors: np.ndarray, ks: list[int]) -> int | None:
    """Owen & Perry's choice as Frank et al. run it, written out: per k the median over the permutations (a k missing in
    one of them has none), the lowest median, ties to the smallest k."""
    rows = [row for row in errors if not np.isnan(row).all()]
    medians = {}
    for j, k in enumerate(ks):
        column = [row[j] for row in rows]
        if not any(np.isnan(column)):
            medians[k] = statistics.median(column)
    if not medians:
        return None
    best = min(medians.values())
    return min(k for k, value in medians.items() if value == best)


def test_opcv_never_chooses_a_rank_missing_in_a_permutation_in_the_report_select_k_and_opcv_rank():
    ks = [1, 2, 3, 4]
    # rank 3 has the lowest errors where it exists, but permutation 2's block D has rank 2: no median at 3 or 4
    errors = np.array([[9.0, 5.0, 1.0, 1.5],
                       [8.0, 6.0, 2.0, 2.5],
                       [9.5, 5.5, np.nan, np.nan],
                       [8.5, 4.0, 1.5, 2.0],
                       [np.nan] * 4])  # a trial that did not run: left out
    # medians over the four permutations with values: k = 1: 8.75, k = 2: 5.25, k = 3 and 4: none
    assert opcv_by_hand(errors, ks) == 2
    assert opcv_rank(errors, ks) == 2
    scores = scores_of("opcv_half", errors.T.tolist(), ks)
    assert k_hat(scores, "opcv_half") == 2
    # the skipping median this replaces would have chosen 3 (the median of 1.0, 2.0, 1.5)
    assert int(np.nanargmin(np.nanmedian(errors, axis=0))) + 1 == 3
    # the runner-up is read on the same medians: k = 1, not the missing k = 3 (lowest mean where it exists)
    uncertainty = decision_uncertainty(scores)
    assert int(uncertainty["opcv_half_runner_up"].squeeze()) == 1
    # paired differences k = 1 - k = 2 over the four permutations: 4, 2, 4, 4.5 -> mean 3.625
    assert float(uncertainty["opcv_half_difference"].squeeze()) == pytest.approx(3.625)


def test_opcv_on_the_domino_matrix_is_the_same_in_select_k_and_opcv_rank(tmp_path, shared):
    config = yaml.safe_load((CONFIGS / "frank_rbac.yaml").read_text())
    config["datasets"] = [{**entry, "path": "catalog:rbac_hp_labs/domino_dense.csv", "sweep": {"noise": [0.05]}}
                          for entry in config["datasets"] if entry["name"] == "domino"]
    config["k"] = {"from": 1, "to": 40}
    config["methods"][0]["criteria"] = ["opcv_half", "opcv_fifth"]
    path = write_config(tmp_path / "domino.yaml", **config)
    assert cli_in_process("run", str(path), "--out", str(tmp_path / "d.zarr"), "--workers", "0",
                          "--no-progress").returncode == 0
    from ordercube.pipeline.cube.owner import load_cube

    scores = criterion_scores(load_cube(tmp_path / "d.zarr"))
    chosen = select_k(scores)
    ks = scores["k"].values
    found = {}
    for name in ("opcv_half", "opcv_fifth"):
        errors = scores[name].squeeze(("dataset", "n", "model")).transpose("trial", "k").values
        found[name] = int(chosen[name].squeeze())
        assert found[name] == opcv_rank(errors, ks) == opcv_by_hand(errors, list(ks))
    assert found == {"opcv_half": 10, "opcv_fifth": 14}  # measured; k* = 13 on this matrix at nu = 0.05


# ------------------------------------------------------------------------------------------------ grid edge

@pytest.mark.parametrize("rule", sorted(EDGES))
def test_at_grid_edge_only_where_the_rule_could_have_chosen_beyond_the_grid(rule):
    ks = np.array([2, 3, 4, 5])
    lower_matters = rule in ("smallest", "largest", "gap", "clest", "first_above", "first_below")
    upper_matters = rule in ("smallest", "largest", "gap", "clest", "largest_above")
    assert set(EDGES[rule]) == {edge for edge, matters in (("lower", lower_matters), ("upper", upper_matters))
                                if matters}
    assert at_grid_edge(5, ks, rule, min_k=1) == upper_matters
    assert at_grid_edge(2, ks, rule, min_k=1) == lower_matters
    assert not at_grid_edge(2, ks, rule, min_k=2)  # the criterion is not defined below the grid
    assert not at_grid_edge(3, ks, rule, min_k=1)


def test_prediction_strength_k_hat_2_at_the_grids_start_is_not_flagged_but_at_its_end_is():
    values = [[0.95, 0.97, 1.0], [0.5, 0.6, 0.55], [0.4, 0.3, 0.35]]  # k = 2, 3, 4
    low = decision_uncertainty(scores_of("prediction_strength", values, [2, 3, 4]))
    assert not bool(low["prediction_strength_at_grid_edge"].squeeze())
    high = decision_uncertainty(scores_of("prediction_strength", values[::-1], [2, 3, 4]))  # k̂ = 4
    assert k_hat(scores_of("prediction_strength", values[::-1], [2, 3, 4]), "prediction_strength") == 4
    assert bool(high["prediction_strength_at_grid_edge"].squeeze())


# ---------------------------------------------------------------------------------------------- intervals

def ps_cube(values: list[list[float]], ks: list[int]) -> xr.Dataset:
    """A stored-cube-like Dataset of Prediction Strength values (all cells ok), for selection_table."""
    scores = scores_of("prediction_strength", values, ks)
    cube = scores.assign(status=xr.ones_like(scores["prediction_strength"], dtype=np.int8))
    cube.attrs = {"ordercube_true_k": json.dumps({"d": 2})}
    return cube


def test_an_interval_from_identical_trials_is_shown_as_not_computable_with_its_reason():
    # PS = 1 at k = 2 in every trial: the margin to the threshold 0.9 is 0.1 exactly, with no spread
    table = selection_table(ps_cube([[1.0] * 6, [0.2, 0.3, 0.4, 0.3, 0.2, 0.4], [0.1] * 6], [2, 3, 4]))
    row = table.iloc[0]
    assert row.k_hat == 2 and row.difference == pytest.approx(0.1)
    assert np.isnan(row.difference_low) and np.isnan(row.difference_high)
    assert row.k_hat_frequency == 1.0 and np.isnan(row.k_hat_frequency_low)  # all six trials chose 2
    shown = printable(table).iloc[0]
    assert shown["difference [95%]"] == "0.1 [n/a]" and shown["share [95%]"] == "1 [n/a]"
    notes = "\n".join(flag_notes(table))
    assert "difference [n/a]: one trial, or the same value in every trial" in notes
    assert "share 1 [n/a]: every trial with a choice chose k̂" in notes and "share 0" not in notes
    assert "at_grid_edge" not in notes  # k̂ = 2 at the grid's start: Prediction Strength could not go lower


def test_an_interval_with_a_spread_is_kept():
    table = selection_table(ps_cube([[0.95, 0.99, 0.92, 0.97], [0.5] * 4, [0.1] * 4], [2, 3, 4]))
    row = table.iloc[0]
    assert row.difference_low < row.difference < row.difference_high
    assert "n/a" not in printable(table).iloc[0]["difference [95%]"]


# ---------------------------------------------------------------------------------------------- thresholds

@pytest.fixture(scope="module")
def ps_run(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("ps")
    config = small_config(n=[40], k=[2, 3], resamples=4, datasets=[{"name": "gauss", "kind": "lange_gaussians3"}])
    config["methods"][0]["criteria"] = ["prediction_strength"]
    path = write_config(folder / "c.yaml", **config)
    assert cli_in_process("run", str(path), "--out", str(folder / "c.zarr"), "--workers", "0",
                          "--no-progress").returncode == 0
    return folder


def tree_digest(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        digest.update(str(path.relative_to(folder)).encode())
        if path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()


@pytest.mark.parametrize(("option", "value", "expected"), [
    ("--threshold", "prediction_strength=-5", "prediction_strength.threshold = '-5': expected a number (finite, in [0, 1])"),
    ("--threshold", "prediction_strength=1.5", "prediction_strength.threshold = '1.5': expected a number (finite, in [0, 1])"),
    ("--decide", "prediction_strength.threshold=nan", "prediction_strength.threshold = 'nan'"),
    ("--decide", "prediction_strength.ties=smallest", "prediction_strength.ties: the decision rule of prediction_strength"),
])
def test_a_threshold_outside_the_criterions_values_is_refused_and_nothing_is_written(ps_run, option, value, expected):
    before = tree_digest(ps_run / "c.zarr")
    result = cli_in_process("report", str(ps_run / "c.zarr"), "--out", str(ps_run / "refused"), option, value)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {option}: ") and expected in lines[0], result.stderr
    assert "Traceback" not in result.stderr
    assert not (ps_run / "refused").exists() and tree_digest(ps_run / "c.zarr") == before


def test_a_threshold_in_range_re_decides(ps_run):
    result = cli_in_process("report", str(ps_run / "c.zarr"), "--out", str(ps_run / "r0"), "--threshold",
                            "prediction_strength=0")
    assert result.returncode == 0, result.stderr
    assert (pd.read_csv(ps_run / "r0" / "selection.csv")["k_hat"] == 3).all()  # every k reaches 0: the largest


# ----------------------------------------------------------------------------------------------- published

def run_with_published(folder: Path, digest: str | None, params: dict | None = None) -> Path:
    """A tiny cube of gauss/km whose config quotes k̂ = 3 for lange and 2 for pairwise; ``digest``: published.data."""
    dataset = {"name": "gauss", "kind": "lange_gaussians3", **({"params": params} if params else {})}
    config = small_config(n=[40], k=[2, 3], resamples=4, datasets=[dataset])
    config["published"] = {"gauss/km": {"lange": 3, "pairwise": 2}, **({"data": {"gauss": digest}} if digest else {})}
    path = write_config(folder / "c.yaml", **config)
    assert cli_in_process("run", str(path), "--out", str(folder / "c.zarr"), "--workers", "0",
                          "--no-progress").returncode == 0
    return path


def gauss_digest(folder: Path) -> str:
    config = small_config(n=[40], k=[2, 3], resamples=4, datasets=[{"name": "gauss", "kind": "lange_gaussians3"}])
    return data_digest(load_config(write_config(folder / "plain.yaml", **config)).datasets[0].identity)


def test_published_values_of_the_same_data_are_beside_the_cubes_in_terminal_csv_and_html(tmp_path):
    digest = gauss_digest(tmp_path)
    run_with_published(tmp_path, digest)
    result = cli_in_process("report", str(tmp_path / "c.zarr"), "--out", str(tmp_path / "r"))
    assert result.returncode == 0, result.stderr
    selection = pd.read_csv(tmp_path / "r" / "selection.csv").set_index("criterion")
    published = pd.read_csv(tmp_path / "r" / "published.csv")
    assert list(published.columns) == ["dataset", "n", "method", "criterion", "quantity", "cube", "published", "agrees"]
    assert published[["criterion", "quantity", "published"]].values.tolist() == [["lange", "k_hat", 3],
                                                                               ["pairwise", "k_hat", 2]]
    for row in published.itertuples():
        assert row.cube == selection.loc[row.criterion, "k_hat"] and row.agrees == (row.cube == row.published)
    assert "this cube / published" in result.stdout and "not shown" not in result.stdout
    page = (tmp_path / "r" / "index.html").read_text()
    assert 'id="published"' in page and "Published values beside this cube" in page
    assert f"{published.iloc[0].cube}</td><td>3</td>" in page


def test_published_values_of_other_data_under_the_same_name_are_not_shown_and_the_report_says_why(tmp_path):
    digest = gauss_digest(tmp_path)
    run_with_published(tmp_path, digest, params={"std": 1.5})  # another generator, the same dataset name
    other = data_digest(json.loads(xr.open_zarr(tmp_path / "c.zarr").attrs["ordercube_identity"])["datasets"]["gauss"])
    assert other != digest
    result = cli_in_process("report", str(tmp_path / "c.zarr"), "--out", str(tmp_path / "r"))
    assert result.returncode == 0, result.stderr
    why = (f"published values of gauss/km not shown: they belong to the data of digest {digest}, and this cube's "
           f"gauss has digest {other}")
    assert why in result.stdout and "this cube / published" not in result.stdout
    assert pd.read_csv(tmp_path / "r" / "published.csv").empty
    page = (tmp_path / "r" / "index.html").read_text()
    assert html.escape(why) in page and 'id="published"' not in page and "<th>published</th>" not in page


def test_published_values_of_another_method_under_the_same_name_are_not_shown(tmp_path):
    """published.methods ties the values to the method too: the same name with other parameters is not it."""
    digest = gauss_digest(tmp_path)
    path = run_with_published(tmp_path, digest)
    config = load_config(path)
    method = data_digest(config.methods[0].identity)
    validated = cli_in_process("validate", str(path))
    assert f"method digest {method}" in validated.stdout
    raw = small_config(n=[40], k=[2, 3], resamples=4, datasets=[{"name": "gauss", "kind": "lange_gaussians3"}])
    raw["methods"][0]["params"] = {**raw["methods"][0].get("params", {}), "n_init": 5}  # another km
    raw["published"] = {"gauss/km": {"lange": 3}, "data": {"gauss": digest}, "methods": {"km": method}}
    other = write_config(tmp_path / "other.yaml", **raw)
    assert cli_in_process("run", str(other), "--out", str(tmp_path / "o.zarr"), "--workers", "0").returncode == 0
    result = cli_in_process("report", str(tmp_path / "o.zarr"), "--out", str(tmp_path / "r"))
    assert result.returncode == 0, result.stderr
    assert f"published values of gauss/km not shown: they belong to the method of digest {method}" in result.stdout
    assert "this cube / published" not in result.stdout and pd.read_csv(tmp_path / "r" / "published.csv").empty
    raw["published"]["methods"] = {"km": "nothex"}
    with pytest.raises(ConfigError, match=r"^published\.methods\.km: expected the method digest of 16 hexadecimal"):
        load_config(write_config(tmp_path / "bad.yaml", **raw))


def test_published_values_without_a_digest_are_not_shown_and_the_report_gives_the_line_to_add(tmp_path):
    digest = gauss_digest(tmp_path)
    run_with_published(tmp_path, None)
    result = cli_in_process("report", str(tmp_path / "c.zarr"), "--out", str(tmp_path / "r"))
    assert result.returncode == 0, result.stderr
    assert f"(add published.data.gauss: {digest} if this cube's gauss is the paper's data)" in result.stdout


@pytest.mark.parametrize(("data", "key", "words"), [
    ({"gauss": "xyz"}, "published.data.gauss", "expected the data digest of 16 hexadecimal digits"),
    ({"other": "0123456789abcdef"}, "published.data", "unknown key"),
])
def test_a_malformed_published_data_block_is_refused_naming_the_key(tmp_path, data, key, words):
    config = small_config()
    config["published"] = {"gauss/km": {"lange": 3}, "data": data}
    result = cli_in_process("validate", str(write_config(tmp_path / "c.yaml", **config)))
    assert result.returncode == 2 and key in result.stderr and words in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_validate_prints_each_datasets_data_digest(tmp_path):
    result = cli_in_process("validate", str(CONFIGS / "lange2002_table1.yaml"))
    assert result.returncode == 0, result.stderr
    quoted = yaml.safe_load((CONFIGS / "lange2002_table1.yaml").read_text())["published"]["data"]
    for name, digest in quoted.items():
        assert f"dataset {name}: " in result.stdout and f"data digest {digest}" in result.stdout


def test_every_shipped_config_that_quotes_a_paper_names_the_digests_of_its_data_and_methods(shared):
    for path in sorted(CONFIGS.glob("*.yaml")):
        raw = yaml.safe_load(path.read_text())
        pairs = [pair for pair in (raw.get("published") or {}) if pair not in ("data", "methods")]
        if not pairs:
            continue
        config = load_config(path)
        digests = {dataset.name: data_digest(dataset.identity) for dataset in config.datasets}
        methods = {method.name: data_digest(method.identity) for method in config.methods}
        for pair in pairs:
            name, method = pair.split("/")
            assert raw["published"]["data"][name] == digests[name], f"{path.name}: {name}"
            assert raw["published"]["methods"][method] == methods[method], f"{path.name}: {method}"


def test_every_rank_table_config_includes_opcv():
    for path in sorted(CONFIGS.glob("*.yaml")):
        raw = yaml.safe_load(path.read_text())
        for method in raw["methods"]:
            if method.get("algorithm") in ("truncated_svd", "boolean_svd"):
                criteria = [c if isinstance(c, str) else next(iter(c)) for c in method["criteria"]]
                assert {"opcv_half", "opcv_fifth"} <= set(criteria), path.name


def test_the_share_footnote_is_the_one_each_row_s_numbers_say_and_none_is_explained():
    """A share of 1 is explained as every trial choosing k̂; a share below 1 without an interval (a criterion reduced
    from stored assignments: the bootstrap replicates' share) never is; a k̂ of -1 is printed "none" with why."""
    from ordercube.pipeline.report.write import SHARE_MEANINGS, share_kind

    assert share_kind("prediction_strength", 1.0, np.nan) == "all"
    assert share_kind("prediction_strength", 0.0, np.nan) == "none"
    assert share_kind("prediction_strength", 0.7, 0.4) == ""
    for share in (0.49, 0.75, 0.99, 1.0):
        assert share_kind("pac", share, np.nan) == "replicates"
    # no k reaches 0.9 in the mean: prediction strength chooses none
    table = selection_table(ps_cube([[0.5] * 6, [0.4] * 6, [0.3] * 6], [2, 3, 4]))
    row = table.iloc[0]
    assert row.k_hat == -1 and printable(table).iloc[0]["k̂"] == "none"
    notes = "\n".join(flag_notes(table))
    assert "none (prediction_strength, 1 of 1 rows): the rule chose no k" in notes and "ps(1) = 1" in notes
    assert SHARE_MEANINGS["all"] not in notes
