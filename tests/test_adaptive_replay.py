"""The adaptive rule PSE-t (:mod:`ordercube.tasks.adaptive`) and its replay on a stored cube:
looks on trial-index prefixes, eliminations by paired t intervals, decided / settled / unsettled stops, and the
calibration on null races."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from conftest import cli_in_process, small_config, write_config
from ordercube.pipeline.report.replay import clopper_pearson_upper
from ordercube.tasks.adaptive import doubling_looks, race, threshold_race
from ordercube.tasks.criteria import Decision


def test_looks_double_from_r_min_to_the_budget():
    assert doubling_looks(20, 200) == (20, 40, 80, 160, 200)
    assert doubling_looks(20, 20) == (20,) and doubling_looks(10, 35) == (10, 20, 35)


def test_a_clearly_worse_arm_leaves_at_the_first_look_and_the_race_is_decided():
    rng = np.random.default_rng(0)
    shared = rng.normal(0, 1, size=(100, 1))  # paired: every arm moves with the trial
    values = shared + np.array([0.5, 0.0, 0.8]) + rng.normal(0, 0.05, size=(100, 3))
    outcome = race(values, (20, 40, 100))
    assert outcome.choice == 1 and outcome.reason == "decided" and outcome.stop == 20
    assert outcome.eliminated == ((0, 2),) and outcome.trials == (20, 20, 20) and outcome.cells == 60


def test_the_radius_is_the_bonferroni_t_interval():
    rng = np.random.default_rng(1)
    values = rng.normal(0, 1, size=(30, 2))
    values[:, 1] = values[:, 0] + 0.3 + rng.normal(0, 0.5, size=30)
    difference = values[:, 1] - values[:, 0]
    radius = stats.t.ppf(1 - 0.05 / (1 * 1) / 2, 29) * difference.std(ddof=1) / np.sqrt(30)
    decided = difference.mean() - radius > 0
    outcome = race(values, (30,))
    assert (outcome.reason == "decided") == decided and outcome.choice == (0 if decided else outcome.choice)


def test_only_the_prefix_up_to_the_stop_is_read():
    rng = np.random.default_rng(2)
    values = rng.normal(0, 1, size=(80, 1)) + np.array([0.0, 1.0]) + rng.normal(0, 0.05, size=(80, 2))
    first = race(values, (20, 40, 80))
    changed = values.copy()
    changed[first.stop:] = rng.normal(size=changed[first.stop:].shape) * 100
    assert race(changed, (20, 40, 80)) == first and first.stop == 20


def test_ties_end_unsettled_without_epsilon_and_settled_with_it():
    rng = np.random.default_rng(3)
    base = rng.normal(0.1, 0.01, size=(60, 1))
    values = np.hstack([base, base + rng.normal(0, 0.001, size=(60, 1))])
    unsettled = race(values, (20, 60))
    assert unsettled.reason == "unsettled" and unsettled.active == (0, 1) and unsettled.cells == 120
    settled = race(values, (20, 60), epsilon=0.005, ties="largest")
    assert settled.reason == "settled" and settled.choice == 1 and settled.stop == 20
    assert race(values, (20, 60), epsilon=0.005, ties="smallest").choice == 0


def test_null_races_decide_at_most_delta_of_the_time():
    rng = np.random.default_rng(4)
    decided = 0
    for _ in range(400):
        skewed = rng.exponential(0.05, size=(160, 2))  # two copies of one arm: any decided stop is false
        decided += race(skewed, (20, 40, 80, 160), delta=0.05).reason == "decided"
    assert decided / 400 <= 0.05 and clopper_pearson_upper(decided, 400) <= 0.1


def test_clopper_pearson_against_scipy():
    for failures, trials in ((0, 50), (3, 200), (10, 10)):
        expected = 1.0 if failures == trials else stats.beta.ppf(0.95, failures + 1, trials - failures)
        assert clopper_pearson_upper(failures, trials) == pytest.approx(expected)


def test_replay_of_a_stored_cube_spends_few_cells_on_easy_groups(tmp_path):
    # k from 1: Prediction Strength is defined there, the instabilities are not (their k = 1 column is left out)
    config = small_config(n=[150], k=[1, 2, 3, 4, 5], resamples=80, seed=11,
                          datasets=[{"name": "gauss", "kind": "lange_gaussians3"}],
                          execution={"trials_per_chunk": 40, "task_seconds": 0.01})
    config["methods"][0]["criteria"] = ["lange", "pairwise", "prediction_strength"]
    path = write_config(tmp_path / "c.yaml", **config)
    assert cli_in_process("run", str(path), "--out", str(tmp_path / "c.zarr"), "--workers", "0",
                          "--no-progress").returncode == 0
    result = cli_in_process("replay", str(tmp_path / "c.zarr"), "--permutations", "40", "--out", str(tmp_path / "r.csv"))
    assert result.returncode == 0, result.stderr
    table = pd.read_csv(tmp_path / "r.csv").set_index("criterion")
    assert sorted(table.index) == ["lange", "pairwise", "prediction_strength"]
    for criterion in ("lange", "pairwise"):
        row = table.loc[criterion]
        assert row.fixed_k_hat == 3 and row.agreement >= 0.95 and row.cells_median <= 0.5
        assert row.decided + row.settled + row.unsettled == 41 and row.null_false_rate <= 0.1
        curve = dict(tuple(map(float, item.split(":"))) for item in row.fixed_curve.split())
        assert list(curve) == [5, 10, 20, 50, 80] and curve[80] == 1.0  # the whole budget is its own reference
        assert row.wrong <= row.wrong_vs_fixed <= row.confident == row.decided + row.settled
        assert row.cells_median <= 0.5 and 0 < row.compute_mean < 1
    from matplotlib.image import imread

    image = imread(tmp_path / "r.png")
    assert image.shape[0] > 200 and image[..., :3].std() > 0.05  # drawn, not blank
    again = cli_in_process("replay", str(tmp_path / "c.zarr"), "--permutations", "40", "--out", str(tmp_path / "s.csv"))
    assert again.returncode == 0 and (tmp_path / "r.csv").read_text() == (tmp_path / "s.csv").read_text()
    for args, word in ((["--delta", "1.5"], "--delta"), (["--epsilon", "-1"], "--epsilon"), (["--r-min", "1"], "--r-min"),
                       (["--criterion", "gap"], "'gap'")):
        bad = cli_in_process("replay", str(tmp_path / "c.zarr"), *args)
        assert bad.returncode == 2 and word in bad.stderr and "Traceback" not in bad.stderr, bad.stderr


def test_the_fixed_budget_curve_counts_the_orders_whose_first_trials_choose_the_reference(monkeypatch):
    """By hand: column 1 is smaller in trials 0-2, column 0 in trials 3-5 by more; the whole budget picks 0. Order
    (0..5): the first 2 trials pick 1; reversed: the first 2 pick 0. So at R = 2 one of the two orders agrees."""
    import ordercube.pipeline.report.replay as replay_module

    monkeypatch.setattr(replay_module, "FIXED_BUDGETS", (2, 4))
    values = np.array([[1.0, 0.5], [1.0, 0.5], [1.0, 0.5], [0.0, 2.0], [0.0, 2.0], [0.0, 2.0]])
    smallest = Decision(rule="smallest", ties="largest")
    curve = replay_module.fixed_budget_curve(values, [np.arange(6), np.arange(6)[::-1]], reference=0, rule=smallest)
    # R = 4, order 0..5: means (0.75, 0.875) -> 0; reversed: (0.25, 1.625) -> 0
    assert curve == {2: 0.5, 4: 1.0, 6: 1.0}


def test_the_reference_set_is_what_the_full_budget_cannot_rule_out_at_999_percent():
    """The reference set by hand with scipy's t interval: arm 1 is the full budget's choice; arm 0 is worse by 0.1 with paired
    sd 0.01 (ruled out), arm 2 by 0.001 with sd 0.01 over 30 trials (not: a near-tie)."""
    from ordercube.pipeline.report.replay import reference_set

    rng = np.random.default_rng(8)
    best = rng.normal(0.2, 0.05, size=30)
    noise = rng.normal(0, 0.01, size=(30, 2))
    values = np.column_stack([best + 0.1 + noise[:, 0], best, best + 0.001 + noise[:, 1]])
    smallest = Decision(rule="smallest", ties="largest")
    for arm in (0, 2):
        difference = values[:, arm] - values[:, 1]
        low, _ = stats.t.interval(0.999, 29, loc=difference.mean(), scale=difference.std(ddof=1) / np.sqrt(30))
        assert (arm in reference_set(values, 1, smallest)) == (low <= 0)
    assert reference_set(values, 1, smallest) == {1, 2}
    threshold = Decision(rule="largest_above", threshold=0.9, aggregate="mean")
    scores = np.column_stack([np.full(30, 0.97) + noise[:, 0], 0.9 + noise[:, 1] * 3, np.full(30, 0.5)])
    assert reference_set(scores, 1, threshold) == {0, 1}  # k 1 straddles 0.9: the largest above is 0 or 1


def test_the_replay_compute_share_weighs_each_cell_by_its_seconds():
    """Two arms, 40 trials; the race stops at look 20 on every order: half of the cells. Arm 1's cells cost 3 s and
    arm 0's 1 s, so the compute share is also one half; with arm 0 eliminated alone it would differ."""
    from ordercube.pipeline.report.replay import Setting, replay_group

    rng = np.random.default_rng(3)
    values = np.column_stack([rng.normal(1.0, 0.01, 40), rng.normal(0.0, 0.01, 40)])
    seconds = np.column_stack([np.ones(40), np.full(40, 3.0)])
    summary = replay_group(values, np.array([2, 3]), 3, Setting(permutations=5), rng,
                           Decision(rule="smallest", ties="largest"), seconds=seconds)
    assert summary["cells_mean"] == 0.5 and summary["compute_mean"] == pytest.approx(0.5)
    assert summary["confident"] == 6 and summary["wrong"] == 0 and summary["reference"] == "3"


def test_the_hoeffding_radius_has_no_variance_term_and_stops_later_than_t():
    from ordercube.tasks.adaptive import _radius

    assert np.isclose(_radius(np.array([0.0]), np.array([50]), 0.01, "hoeffding", np.array([2.0]))[0],
                      2.0 * np.sqrt(np.log(2 / 0.01) / 100))
    rng = np.random.default_rng(5)
    values = np.column_stack([rng.uniform(0.0, 0.2, 400), rng.uniform(0.3, 0.5, 400)])
    hoeffding = race(values, (20, 40, 80, 160, 400), mode="hoeffding", ranges=np.ones(2))
    assert hoeffding.choice == 0 and hoeffding.stop > race(values, (20, 40, 80, 160, 400)).stop
    with pytest.raises(ValueError, match="ranges"):
        race(values, (20, 40), mode="hoeffding")


def test_the_replay_modes_of_the_cli_are_the_rules_modes():
    from ordercube.pipeline.cli import _parser
    from ordercube.tasks.adaptive import RADII

    replay_parser = _parser()._subparsers._group_actions[0].choices["replay"]
    assert tuple(next(a for a in replay_parser._actions if a.dest == "mode").choices) == RADII


def test_the_threshold_race_classifies_each_k_and_needs_only_those_above_the_largest_above():
    rng = np.random.default_rng(4)
    # Prediction Strength-like arms: k = 2, 3 well above 0.9, k = 4, 5 well below
    values = np.column_stack([0.97 + 0.01 * rng.standard_normal(40), 0.95 + 0.01 * rng.standard_normal(40),
                              0.6 + 0.05 * rng.standard_normal(40), 0.4 + 0.05 * rng.standard_normal(40)])
    outcome = threshold_race(values, (20, 40), threshold=0.9)
    assert (outcome.choice, outcome.reason, outcome.stop, outcome.trials) == (1, "decided", 20, (20, 20, 20, 20))
    # arm 0 sits on the threshold, unresolved; arm 1 is above it: a smaller k cannot be the largest above
    values[:, 0] = 0.9 + 0.05 * rng.standard_normal(40)
    assert threshold_race(values, (20, 40), threshold=0.9).reason == "decided"
    # arm 3 on the threshold: it is needed (it could be the largest above) and stays so to the end
    values[:, 3] = 0.9 + 0.05 * np.where(np.arange(40) % 2, 1.0, -1.0)
    unsettled = threshold_race(values, (20, 40), threshold=0.9)
    assert unsettled.reason == "unsettled" and unsettled.active == (3,) and unsettled.trials == (20, 20, 20, 40)
    assert unsettled.choice == 3  # its mean (0.9) is at the threshold: "at least" it
    assert threshold_race(values, (20, 40), threshold=0.9, epsilon=0.1).reason == "settled"
    running = threshold_race(values, (20, 40), threshold=0.9, upto=20)
    assert running.reason == "running" and running.active == (3,) and running.stop == 20


def test_the_strict_radius_is_the_empirical_bernstein_bound_and_stops_later():
    """Maurer & Pontil's bound by hand; on a clear difference t decides at the first look, strict only later."""
    from ordercube.tasks.adaptive import _radius

    log_term = np.log(4 / 0.01)
    expected = np.sqrt(2 * 0.2**2 * log_term / 50) + 7 * 2.0 * log_term / (3 * 49)
    assert np.isclose(_radius(np.array([0.2]), np.array([50]), 0.01, "strict", np.array([2.0]))[0], expected)
    rng = np.random.default_rng(5)
    values = np.column_stack([rng.uniform(0.0, 0.2, 400), rng.uniform(0.3, 0.5, 400)])
    t_mode = race(values, (20, 40, 80, 160, 400))
    strict = race(values, (20, 40, 80, 160, 400), mode="strict", ranges=np.ones(2))
    assert (t_mode.reason, t_mode.stop) == ("decided", 20) and strict.reason == "decided" and strict.stop > 20
    assert t_mode.choice == strict.choice == 0


def test_the_threshold_race_interval_is_the_bonferroni_t_interval():
    """An arm is classified above exactly when scipy's t interval at 1 - delta / (arms looks) lies above the threshold."""
    rng = np.random.default_rng(9)
    for _ in range(50):
        column = 0.9 + rng.normal(0.02, 0.04, size=30)
        low, _ = stats.t.interval(1 - 0.05, 29, loc=column.mean(), scale=column.std(ddof=1) / np.sqrt(30))
        outcome = threshold_race(column[:, None], (30,), threshold=0.9, delta=0.05)
        assert (outcome.reason == "decided" and outcome.choice == 0) == (low >= 0.9)


def test_the_threshold_race_misclassifies_at_most_delta_of_the_time():
    """Arms just above the threshold (mean 0.92, sd 0.05): a race that ends decided with the arm below is an error."""
    rng = np.random.default_rng(12)
    errors = decided = 0
    for _ in range(400):
        outcome = threshold_race(rng.normal(0.92, 0.05, size=(80, 1)), (20, 40, 80), threshold=0.9, delta=0.05)
        decided += outcome.reason == "decided"
        errors += outcome.reason == "decided" and outcome.choice == -1
    assert decided > 200 and errors / 400 <= 0.05


def test_cochrans_rule_is_25_times_the_squared_sample_skewness():
    from ordercube.tasks.adaptive import _too_skewed

    rng = np.random.default_rng(21)
    for size in (10, 30, 100):
        for draw in (rng.normal(size=size), rng.exponential(size=size), np.where(rng.random(size) < 0.05, 1.0, 0.0)):
            expected = size <= 25 * stats.skew(draw, bias=True) ** 2 if draw.std() > 0 else False
            assert _too_skewed((draw - draw.mean())[:, None], np.array([size]))[0] == expected
    assert not _too_skewed(np.zeros((20, 1)), np.array([20]))[0]  # no spread: no skewness


def test_guarded_mode_decides_wrong_less_often_on_an_arm_with_rare_large_values():
    """The Figure 2 failure in miniature: arm 0 is 0 or tiny in most trials and 0.9 in 3% (mean ~0.028), arm 1 is
    ~0.005 in every trial, so arm 1 is the best. A prefix without a 0.9 makes arm 0 look better with confidence.
    Plain t intervals decide on arm 0 in about half of the races; Cochran's rule (the prefix's small values are
    skewed already) holds some of them back, at more cells, and it never decides on a worse arm where t does not."""
    rng = np.random.default_rng(11)
    wrong = {False: 0, True: 0}
    cells = {False: 0, True: 0}
    for _ in range(200):
        rare = np.where(rng.random(100) < 0.6, 0.0, rng.exponential(0.004, 100))
        rare[rng.random(100) < 0.03] = 0.9
        values = np.column_stack([rare, rng.normal(0.005, 0.002, 100)])
        outcomes = {guarded: race(values, (20, 40, 80, 100), mode="guarded" if guarded else "t") for guarded in (False, True)}
        for guarded, outcome in outcomes.items():
            wrong[guarded] += outcome.reason == "decided" and outcome.choice == 0
            cells[guarded] += outcome.cells
        assert not (outcomes[True].reason == "decided" and outcomes[True].choice == 0 and outcomes[False].choice == 1)
    assert wrong[False] > 60 and wrong[True] < 0.8 * wrong[False] and cells[True] > cells[False]
