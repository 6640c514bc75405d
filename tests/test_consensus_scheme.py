"""The consensus scheme's trial (Monti et al. 2003, Sec. 3; ConsensusClusterPlus's pItem/pFeature): which items and
features each resample draws, from which stream, what each part's clustering is, and how the scheme is registered.

The runner is called directly with a BlockSpec and an ArraySource, and every expected draw and label is recomputed
here from the streams the module documents."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.cluster import hierarchy
from sklearn.metrics import adjusted_rand_score

from ordercube.tasks.algorithms import get_algorithm
from ordercube.tasks.algorithms.hierarchical import agglomerative_many
from ordercube.tasks.algorithms.kinds import Clusterer
from ordercube.tasks.algorithms.kmeans import kmeans_labels
from ordercube.tasks.datasets import ArraySource, SyntheticSource
from ordercube.tasks import process_memo
from ordercube.tasks.params import ParamError
from ordercube.tasks.schemes import SCHEMES, get_scheme, scheme_of
from ordercube.tasks.seeding import Purpose, label_id, stream
from ordercube.tasks.trial import BlockSpec

SEED, DATASET, METHOD = 29, label_id("three_blobs"), label_id("km_consensus")
KMEANS = (("n_init", 3), ("max_iter", 100), ("tol", 1e-4))


def _blobs(N: int = 45, d: int = 6) -> np.ndarray:
    rng = np.random.default_rng(3)
    centres = rng.normal(0.0, 6.0, size=(3, d))
    return centres[np.arange(N) % 3] + rng.normal(size=(N, d))


def _spec(n: int, *, ks=(2, 3, 4), trials=(0, 1, 2), algorithm="kmeans", params=KMEANS, method=METHOD,
          **scheme_params) -> BlockSpec:
    return BlockSpec(root_seed=SEED, dataset_id=DATASET, n=n, method_id=method, algorithm=algorithm,
                     algorithm_params=params, predictor="", criteria=(), ks=tuple(ks), trials=tuple(trials),
                     scheme="consensus", scheme_params=tuple(scheme_params.items()), assignments=True)


def _run(spec: BlockSpec, source: ArraySource, trial: int, **options):
    algorithm = get_algorithm(spec.algorithm).on(source.objects)
    return get_scheme("consensus").runner(algorithm, spec, source, **options)(trial)


def _drawn(n: int, trial: int, p_item: float, *extra: int) -> np.ndarray:
    """The positions a resample draws, by hand: floor(p_item * n) of range(n), without replacement, sorted."""
    rng = stream(SEED, Purpose.SUBSAMPLE, DATASET, n, trial, *extra)
    return np.sort(rng.choice(n, size=math.floor(p_item * n), replace=False))


def _fit_rng(n: int, trial: int, k: int, part: int, method: int = METHOD) -> np.random.Generator:
    return stream(SEED, Purpose.FIT, DATASET, n, trial, method, k, part)


def test_the_scheme_is_registered_with_its_parameters_parts_and_cost():
    scheme = get_scheme("consensus")
    assert SCHEMES["consensus"] is scheme and scheme.gives == ("assignments",)
    assert scheme_of(_spec(45, p_item=0.5))[1] == {"p_item": 0.5, "p_feature": 1.0, "references": 0}
    assert scheme.part_roles({**scheme.defaults, "references": 2}) == ("data", "reference", "reference")
    assert scheme.part_roles(scheme.defaults) == ("data",)
    assert scheme.fits({"p_item": 0.5, "p_feature": 1.0, "references": 3}) == pytest.approx(2.0)
    for bad in ({"p_item": 0.0}, {"p_item": 1.5}, {"p_feature": -0.1}, {"references": -1}, {"references": 1.5},
                {"p_items": 0.8}):
        with pytest.raises(ParamError):
            scheme.resolve(bad)
    assert scheme.resolve({"p_item": 1.0})["p_item"] == 1.0


@pytest.mark.parametrize("p_item", [0.8, 0.75, 0.31])
def test_each_resample_draws_floor_p_item_n_items_from_its_subsample_stream(p_item):
    X = _blobs()
    source = ArraySource(X)
    for trial in (0, 5):
        outcome = _run(_spec(45, p_item=p_item), source, trial)
        expected = _drawn(45, trial, p_item)
        assert len(expected) == math.floor(p_item * 45)
        assert outcome.values == {} and outcome.failed == {} and outcome.infeasible == {}
        assert sorted(outcome.assignments) == [2, 3, 4]
        for labels in outcome.assignments.values():
            assert labels.shape == (1, 45) and labels.dtype == np.int16
            np.testing.assert_array_equal(np.flatnonzero(labels[0] >= 0), expected)


def test_the_labels_are_the_algorithms_on_the_drawn_rows_with_the_cells_fit_streams():
    X = _blobs()
    outcome = _run(_spec(45), ArraySource(X), 4)
    items = _drawn(45, 4, 0.8)
    for k in (2, 3, 4):
        by_hand = kmeans_labels(X[items], k, _fit_rng(45, 4, k, 0), **dict(KMEANS))
        np.testing.assert_array_equal(outcome.assignments[k][0, items], by_hand)
        assert set(np.unique(outcome.assignments[k][0])) == {-1, *range(k)}
    # the three blobs are found at k = 3: the labels are a clustering, not just the same bits
    truth = np.arange(45)[items] % 3
    assert adjusted_rand_score(truth, outcome.assignments[3][0, items]) == 1.0
    assert set(outcome.seconds) == {2, 3, 4} and all(s > 0 for s in outcome.seconds.values())


def test_average_linkage_fits_every_k_at_once_and_cuts_scipys_tree():
    X = _blobs(40, 3)
    spec = _spec(40, algorithm="agglomerative", params=(("linkage", "average"),), ks=(2, 3, 5))
    outcome = _run(spec, ArraySource(X), 1)
    items = _drawn(40, 1, 0.8)
    by_hand = agglomerative_many(X[items], [2, 3, 5], _fit_rng(40, 1, 0, 0), linkage="average")
    tree = hierarchy.linkage(X[items], method="average")
    for k in (2, 3, 5):
        np.testing.assert_array_equal(outcome.assignments[k][0, items], by_hand[k])
        cut = hierarchy.fcluster(tree, k, criterion="maxclust")
        assert adjusted_rand_score(cut, outcome.assignments[k][0, items]) == 1.0


@pytest.mark.parametrize("linkage", ["ward", "average"])
def test_resamples_clustered_from_the_universes_distances_are_the_same_as_from_their_points(linkage, monkeypatch):
    """An algorithm with ``on_distances`` clusters each resample from the submatrix of the distances computed once;
    the same assignments as the same algorithm without it (from each resample's points), references included."""
    from dataclasses import replace

    from ordercube.tasks.schemes import consensus

    X = _blobs(40, 30)
    spec = _spec(40, algorithm="agglomerative", params=(("linkage", linkage),), ks=(2, 3, 5), references=2)
    algorithm = get_algorithm("agglomerative")
    assert algorithm.on_distances is not None
    runner = get_scheme("consensus").runner
    calls = []
    monkeypatch.setattr(consensus, "_condensed", lambda square: calls.append(square.shape) or
                        __import__("scipy.spatial.distance", fromlist=["squareform"]).squareform(square, checks=False))
    for trial in (0, 3):
        by_distances = runner(algorithm, spec, ArraySource(X))(trial)
        by_points = runner(replace(algorithm, on_distances=None), spec, ArraySource(X))(trial)
        for k in (2, 3, 5):
            np.testing.assert_array_equal(by_distances.assignments[k], by_points.assignments[k])
    assert calls == [(32, 32)] * 6  # the data and two reference sets, 80% of 40 items, in two trials
    monkeypatch.setattr(consensus, "MAX_DISTANCE_BYTES", 8 * 40**2 * 3 - 1)  # three matrices do not fit: points
    calls.clear()
    runner(algorithm, spec, ArraySource(X))(0)
    assert calls == []


def test_below_the_datasets_size_the_universe_is_one_fixed_subset_per_dataset_and_n():
    X = _blobs(60)
    source = ArraySource(X)
    universe = np.sort(stream(SEED, Purpose.SUBSAMPLE, DATASET, 40).choice(60, size=40, replace=False))
    seen = set()
    for trial in (0, 1, 2):
        outcome = _run(_spec(40, ks=(3,)), source, trial)
        positions = _drawn(40, trial, 0.8)
        labels = outcome.assignments[3][0]
        np.testing.assert_array_equal(np.flatnonzero(labels >= 0), universe[positions])
        by_hand = kmeans_labels(X[universe[positions]], 3, _fit_rng(40, trial, 3, 0), **dict(KMEANS))
        np.testing.assert_array_equal(labels[universe[positions]], by_hand)
        seen |= set(np.flatnonzero(labels >= 0))
    assert seen <= set(universe) and len(seen) > 32  # the trials draw different items of the same 40


def test_p_feature_clusters_a_drawn_share_of_the_features():
    X = _blobs(45, 10)
    outcome = _run(_spec(45, ks=(2, 3), p_feature=0.55), ArraySource(X), 2)
    rng = stream(SEED, Purpose.SUBSAMPLE, DATASET, 45, 2)
    items = np.sort(rng.choice(45, size=36, replace=False))
    features = np.sort(rng.choice(10, size=5, replace=False))  # floor(0.55 * 10), drawn after the items
    for k in (2, 3):
        by_hand = kmeans_labels(X[np.ix_(items, features)], k, _fit_rng(45, 2, k, 0), **dict(KMEANS))
        np.testing.assert_array_equal(outcome.assignments[k][0, items], by_hand)
    # the same items as without feature sampling: the features come after them in the stream
    whole = _run(_spec(45, ks=(2,)), ArraySource(X), 2)
    np.testing.assert_array_equal(np.flatnonzero(whole.assignments[2][0] >= 0), items)
    # and fewer features than one refused, naming the key and the fix
    with pytest.raises(ValueError, match=r"scheme_params\.p_feature: 0\.05 of 10 features keeps none; raise"):
        _run(_spec(45, p_feature=0.05), ArraySource(X), 0)


def test_same_spec_same_bits_another_trial_another_resample_every_k_and_method_paired():
    X = _blobs()
    spec = _spec(45, ks=(2, 3, 4, 5))
    first, again = _run(spec, ArraySource(X), 7), _run(spec, ArraySource(X.copy()), 7)
    for k in spec.ks:
        np.testing.assert_array_equal(first.assignments[k], again.assignments[k])
    other = _run(spec, ArraySource(X), 8)
    assert not np.array_equal(first.assignments[3] >= 0, other.assignments[3] >= 0)
    # paired: every k, and another method on the same dataset and n, cluster the same resample
    drawn = {k: tuple(np.flatnonzero(first.assignments[k][0] >= 0)) for k in spec.ks}
    assert len(set(drawn.values())) == 1
    hierarchical = _run(_spec(45, ks=(2,), algorithm="agglomerative", params=(("linkage", "average"),),
                              method=label_id("hc_consensus")), ArraySource(X), 7)
    assert tuple(np.flatnonzero(hierarchical.assignments[2][0] >= 0)) == drawn[2]


def _shuffled_columns(X: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A stand-in reference (each feature permuted on its own: no cluster structure left), until M3C's lands."""
    return np.column_stack([rng.permutation(column) for column in X.T])


def test_references_are_parts_one_to_b_drawn_once_per_dataset_n_and_b_and_resampled_on_their_own():
    X = _blobs()
    spec = _spec(45, ks=(2, 3), references=2, p_item=0.7)
    assert get_scheme("consensus").part_roles(scheme_of(spec)[1]) == ("data", "reference", "reference")
    built = []

    def reference(data, rng):
        built.append(data.shape)
        return _shuffled_columns(data, rng)

    process_memo.clear()
    runner = get_scheme("consensus").runner(get_algorithm("kmeans"), spec, ArraySource(X), reference=reference)
    outcomes = {trial: runner(trial) for trial in (0, 1)}
    assert built == [(45, 6), (45, 6)]  # once per b, not per trial
    # another block of the dataset in this process (a task of its own, its data shipped again): nothing built again
    other_block = get_scheme("consensus").runner(get_algorithm("kmeans"), spec, ArraySource(X.copy()),
                                                 reference=reference)(2)
    assert built == [(45, 6), (45, 6)]
    process_memo.clear()  # a fresh process: built again, the same bits
    fresh = get_scheme("consensus").runner(get_algorithm("kmeans"), spec, ArraySource(X), reference=reference)(2)
    assert built == [(45, 6)] * 4
    for k in (2, 3):
        np.testing.assert_array_equal(fresh.assignments[k], other_block.assignments[k])
    sets = [_shuffled_columns(X, stream(SEED, Purpose.NULL_DATA, DATASET, 45, b)) for b in (0, 1)]
    for trial, outcome in outcomes.items():
        for k in (2, 3):
            labels = outcome.assignments[k]
            assert labels.shape == (3, 45)
            for b, Z in enumerate(sets):
                items = _drawn(45, trial, 0.7, b + 1)
                np.testing.assert_array_equal(np.flatnonzero(labels[b + 1] >= 0), items)
                by_hand = kmeans_labels(Z[items], k, _fit_rng(45, trial, k, b + 1), **dict(KMEANS))
                np.testing.assert_array_equal(labels[b + 1, items], by_hand)
            assert not np.array_equal(labels[1], labels[0]) and not np.array_equal(labels[1], labels[2])
    again = get_scheme("consensus").runner(get_algorithm("kmeans"), spec, ArraySource(X),
                                           reference=_shuffled_columns)(1)
    for k in (2, 3):
        np.testing.assert_array_equal(again.assignments[k], outcomes[1].assignments[k])


def _fails_at_three(X, k, rng):
    if k == 3:
        raise np.linalg.LinAlgError("singular at k = 3")
    return np.arange(X.shape[0]) % k


def _fails_on_negative_data(X, k, rng):
    if X.mean() < 0 and k == 2:
        raise FloatingPointError("negative data")
    return np.arange(X.shape[0]) % k


def test_infeasible_and_failed_ks_are_recorded_and_leave_no_assignment():
    X = _blobs(20)
    spec = _spec(20, ks=(2, 3, 4, 7, 9), params=(), p_item=0.7)  # 14 items: k = 9 needs 18
    algorithm = Clusterer("fails_at_three", _fails_at_three)
    outcome = get_scheme("consensus").runner(algorithm, spec, ArraySource(X))(0)
    assert set(outcome.infeasible) == {9} and "k=9 does not fit a resample of 14 items" in outcome.infeasible[9]
    assert outcome.failed == {3: "LinAlgError: singular at k = 3"}
    assert (outcome.assignments[9] == -1).all() and (outcome.assignments[3] == -1).all()
    items = _drawn(20, 0, 0.7)
    np.testing.assert_array_equal(outcome.assignments[4][0, items], np.arange(14) % 4)
    # a k whose fit fails on a reference set fails too, naming the set
    negative = get_scheme("consensus").runner(Clusterer("fails_on_negative", _fails_on_negative_data),
                                              _spec(20, ks=(2, 3), params=(), references=1), ArraySource(X + 50.0),
                                              reference=lambda data, rng: -data)(0)
    assert negative.failed == {2: "reference set 1: FloatingPointError: negative data"}
    assert (negative.assignments[2] == -1).all() and (negative.assignments[3][1] >= 0).sum() == 16


def test_labels_outside_zero_to_k_fail_that_k():
    outcome = get_scheme("consensus").runner(Clusterer("noise", lambda X, k, rng: np.full(X.shape[0], -1)),
                                             _spec(20, ks=(2,), params=()), ArraySource(_blobs(20)))(0)
    assert "outside 0..1 for 16 items" in outcome.failed[2]


def _round_robin(X, k, rng):
    return np.arange(X.shape[0]) % k


@settings(max_examples=60, deadline=None)
@given(N=st.integers(4, 50), share=st.floats(0.05, 1.0), p_item=st.floats(0.01, 1.0), p_feature=st.floats(0.2, 1.0),
       references=st.integers(0, 2), trial=st.integers(0, 10**6))
def test_every_part_draws_its_share_of_the_universe_and_every_k_the_same_items(N, share, p_item, p_feature,
                                                                               references, trial):
    n = max(2, math.floor(share * N))
    X = np.arange(N * 5, dtype=float).reshape(N, 5)
    spec = _spec(n, ks=(1, 2, 3), params=(), p_item=p_item, p_feature=p_feature, references=references)
    outcome = get_scheme("consensus").runner(Clusterer("round_robin", _round_robin), spec, ArraySource(X),
                                             reference=lambda data, rng: data[::-1])(trial)
    universe = set(range(N)) if n == N else \
        set(stream(SEED, Purpose.SUBSAMPLE, DATASET, n).choice(N, size=n, replace=False))
    size = math.floor(p_item * n)
    assert outcome.failed == {} and set(outcome.infeasible) == {k for k in (1, 2, 3) if 2 * k > size}
    drawn = {k: outcome.assignments[k] >= 0 for k in (1, 2, 3) if k not in outcome.infeasible}
    for k, labels in outcome.assignments.items():
        assert labels.shape == (1 + references, N) and labels.max() < k
    for mask in drawn.values():
        np.testing.assert_array_equal(mask, drawn[1])
        assert (mask.sum(axis=1) == size).all() and set(np.flatnonzero(mask.any(axis=0))) <= universe


def test_a_dissimilarity_matrix_is_resampled_rows_and_columns_together():
    X = _blobs(30, 4)
    D = np.sqrt(((X[:, None, :] - X[None, :, :]) ** 2).sum(-1))
    spec = _spec(30, ks=(2, 3), algorithm="agglomerative", params=(("linkage", "average"),))
    outcome = _run(spec, ArraySource(D, objects="dissimilarity"), 3)
    items = _drawn(30, 3, 0.8)
    on_points = agglomerative_many(X[items], [2, 3], _fit_rng(30, 3, 0, 0), linkage="average")
    for k in (2, 3):
        assert adjusted_rand_score(on_points[k], outcome.assignments[k][0, items]) == 1.0
    for key, value in (("p_feature", 0.5), ("references", 2)):
        with pytest.raises(ValueError, match=rf"scheme_params\.{key}: .*dissimilarity matrix.*set {key}: "):
            _run(_spec(30, algorithm="agglomerative", params=(("linkage", "average"),), **{key: value}),
                 ArraySource(D, objects="dissimilarity"), 0)


def test_fresh_synthetic_draws_are_refused_with_the_fix():
    spec = _spec(40, ks=(2,))
    runner = get_scheme("consensus").runner(get_algorithm("kmeans"), spec, SyntheticSource("lange_gaussians3", {}))
    with pytest.raises(ValueError, match="draws fresh points every trial; give the method a dataset read from a file"):
        runner(0)


PLUGIN = '''
    from ordercube.plugin import Scheme, TrialOutcome, register_scheme, integer


    def runner(algorithm, spec, source):
        def compute_trial(trial):
            return TrialOutcome(values={})
        return compute_trial


    register_scheme(Scheme(name="demo_jackknife", description="every item but one", runner=runner,
                           gives=("assignments",), defaults={"left_out": 1}, ranges={"left_out": integer(1, 10)},
                           part_roles=lambda params: ("data",), citation="Nobody & Someone (2031), eq. 3"))
'''


def test_a_plugin_registers_its_own_scheme_and_get_scheme_finds_it(tmp_path):
    (tmp_path / "demo_scheme_plugin.py").write_text(textwrap.dedent(PLUGIN))
    # as in a worker, whose block imports the plug-in loader: the lookup of an unknown name loads the plug-ins
    script = ("from ordercube.tasks import plugins; from ordercube.plugin import get_scheme; "
              "s = get_scheme('demo_jackknife'); print(s.name, s.defaults, s.part_roles(s.defaults)); "
              "print(plugins.loaded()[-1].registered)")
    env = {**os.environ, "ORDERCUBE_PLUGINS": "demo_scheme_plugin", "PYTHONPATH": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines() == ["demo_jackknife {'left_out': 1} ('data',)", "('scheme demo_jackknife',)"]
    with pytest.raises(KeyError, match=r"unknown scheme 'demo_jackknife'; valid: \['consensus', 'halves'\]"):
        get_scheme("demo_jackknife")  # not in this process, where no plug-in is named
    from ordercube.plugin import Scheme, register_scheme

    with pytest.raises(ValueError, match="scheme 'consensus' is registered already; give yours another name"):
        register_scheme(Scheme(name="consensus", description="", runner=lambda *a: None, gives=()))
    with pytest.raises(TypeError, match="expected a ordercube.tasks.schemes.base.Scheme, got dict"):
        register_scheme({"name": "x"})


# ----------------------------------------------------------------------------------------- through the engine
def test_a_consensus_config_runs_and_the_cube_holds_the_runners_labels(tmp_path):
    """``ordercube run`` (in this process, workers 0) on a CSV file, n = N and n < N, two reference sets: every
    cell ok, the part roles stored, and each stored clustering is the runner's for that (n, k, trial)."""
    from conftest import cli_in_process, write_config
    from ordercube.pipeline.cube.owner import open_cube

    X = _blobs(36, 4)
    np.savetxt(tmp_path / "blobs.csv", X, delimiter=",", header="a,b,c,d", comments="")
    method = {"name": "km_consensus", "algorithm": "kmeans", "params": {"n_init": 3, "max_iter": 100},
              "scheme": "consensus", "scheme_params": {"p_item": 0.75, "references": 2}, "criteria": ["pac", "m3c"]}
    config = write_config(tmp_path / "c.yaml", name="consensus", seed=SEED, k=[2, 3, 4], resamples=4, n=[36, 24],
                          datasets=[{"name": "three_blobs", "kind": "file", "path": "blobs.csv"}], methods=[method])
    done = cli_in_process("run", str(config), "--out", str(tmp_path / "c.zarr"), "--workers", "0")
    assert done.returncode == 0, done.stderr
    cube = open_cube(tmp_path / "c.zarr").load()
    assert (cube["status"] == 1).all() and cube.sizes["part"] == 3 and cube.sizes["item"] == 36
    assert json.loads(cube.attrs["ordercube_part_roles"]) == {"km_consensus": ["data", "reference", "reference"]}
    kmeans = get_algorithm("kmeans")
    params = tuple(kmeans.resolve(method["params"]).items())
    for n in (36, 24):
        spec = _spec(n, ks=(2, 3, 4), trials=(0, 1, 2, 3), params=params, p_item=0.75, references=2)
        runner = get_scheme("consensus").runner(kmeans, spec, ArraySource(X))
        for trial in range(4):
            outcome = runner(trial)
            for k in (2, 3, 4):
                stored = cube["assignment"].sel(dataset="three_blobs", n=n, model="km_consensus", k=k, trial=trial)
                np.testing.assert_array_equal(stored.values, outcome.assignments[k])
                assert ((stored.values >= 0).sum(axis=1) == math.floor(0.75 * n)).all()


def test_the_default_reference_sets_are_m3cs_drawn_from_the_null_data_stream_of_the_universe():
    from ordercube.tasks.consensus.reference import m3c_reference

    X = _blobs(50, 6)
    spec = _spec(40, ks=(2, 3), references=2)
    outcome = _run(spec, ArraySource(X), 1)
    universe = np.sort(stream(SEED, Purpose.SUBSAMPLE, DATASET, 40).choice(50, size=40, replace=False))
    for b in (0, 1):
        Z = m3c_reference(X[universe], stream(SEED, Purpose.NULL_DATA, DATASET, 40, b))
        items = _drawn(40, 1, 0.8, b + 1)
        for k in (2, 3):
            by_hand = kmeans_labels(Z[items], k, _fit_rng(40, 1, k, b + 1), **dict(KMEANS))
            np.testing.assert_array_equal(outcome.assignments[k][b + 1, universe[items]], by_hand)
            assert (outcome.assignments[k][b + 1, np.setdiff1d(np.arange(50), universe[items])] == -1).all()


def test_a_distances_file_gives_the_points_files_assignments_and_refuses_p_feature_at_validate(tmp_path):
    """Average linkage on Euclidean distances is average linkage on the points: with the same names the streams are
    the same, so the two cubes store the same clusterings bit for bit; subsampling features of a matrix is refused
    before the sweep, naming the key, the dataset and the fix."""
    import pandas as pd
    from scipy.spatial.distance import cdist

    from conftest import cli_in_process, write_config
    from ordercube.pipeline.cube.owner import open_cube

    X = _blobs(30, 3)
    names = [f"o{i}" for i in range(30)]
    pd.DataFrame({"id": names, **{f"x{j}": X[:, j] for j in range(3)}}).to_csv(tmp_path / "points.csv", index=False)
    matrix = pd.DataFrame(cdist(X, X), columns=names)
    matrix.insert(0, "id", names)
    matrix.to_csv(tmp_path / "distances.csv", index=False)
    stored = {}
    for kind, path in (("file", "points.csv"), ("distances", "distances.csv")):
        method = {"name": "hc_consensus", "algorithm": "agglomerative", "params": {"linkage": "average"},
                  "scheme": "consensus", "criteria": ["pac"]}
        config = write_config(tmp_path / f"{kind}.yaml", name="d", seed=SEED, k=[2, 3, 5], resamples=3, n=[30, 20],
                              datasets=[{"name": "three_blobs", "kind": kind, "path": path}], methods=[method])
        done = cli_in_process("run", str(config), "--out", str(tmp_path / f"{kind}.zarr"), "--workers", "0",
                              "--no-progress")
        assert done.returncode == 0, done.stderr
        cube = open_cube(tmp_path / f"{kind}.zarr").load()
        assert (cube["status"] == 1).all()
        stored[kind] = cube["assignment"].values
    np.testing.assert_array_equal(stored["file"], stored["distances"])
    assert ((stored["file"] >= 0).sum(axis=-1) > 0).all()
    method["scheme_params"] = {"p_feature": 0.5}
    config = write_config(tmp_path / "bad.yaml", name="d", seed=SEED, k=[2, 3], resamples=3, n=[30],
                          datasets=[{"name": "three_blobs", "kind": "distances", "path": "distances.csv"}],
                          methods=[method])
    refused = cli_in_process("validate", str(config))
    assert refused.returncode == 2, refused.stdout
    assert ("methods[0].scheme_params.p_feature: dataset 'three_blobs' (n = 30): a dissimilarity matrix has no features "
            "to subsample, got p_feature = 0.5; set p_feature: 1.0") in refused.stderr


def test_m3c_without_reference_sets_is_refused_before_the_sweep_naming_scheme_params(tmp_path):
    """M3C compares the data with reference data sets: under ``references: 0`` the config was accepted, the sweep
    ran, and the report ended in a traceback. Refused now by ``validate``, naming the key, what is stored, the fix."""
    from conftest import cli_in_process, write_config

    np.savetxt(tmp_path / "points.csv", _blobs(), delimiter=",", header=",".join("abcdef"), comments="")
    method = {"name": "hc", "algorithm": "agglomerative", "params": {"linkage": "average"}, "scheme": "consensus",
              "scheme_params": {"p_item": 0.8, "references": 0}, "criteria": ["pac", "m3c"]}
    raw = {"name": "m3c", "seed": 1, "k": [2, 3], "resamples": 5, "methods": [method],
           "datasets": [{"name": "d", "kind": "file", "path": "points.csv"}]}
    refused = cli_in_process("validate", str(write_config(tmp_path / "bad.yaml", **raw)))
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert refused.stderr.startswith("error: methods[0].scheme_params: m3c reads the stored clusterings of "
                                     "'reference' parts, and the scheme 'consensus' with {p_feature: 1.0, p_item: 0.8, "
                                     "references: 0} stores none (it stores ['data']); set scheme_params.references: 25")
    method["scheme_params"]["references"] = 2
    assert cli_in_process("validate", str(write_config(tmp_path / "good.yaml", **raw))).returncode == 0
    # without a scheme the halves store no reference sets either: validate accepted it, select_k raised after the sweep
    plain = {**raw, "methods": [{"name": "km", "algorithm": "kmeans", "criteria": ["m3c"]}]}
    halves = cli_in_process("validate", str(write_config(tmp_path / "halves.yaml", **plain)))
    assert halves.returncode == 2 and "Traceback" not in halves.stderr
    assert halves.stderr.startswith("error: methods[0].scheme: m3c reads the stored clusterings of 'reference' parts, "
                                    "and a method without a scheme (the halves) stores none; name a scheme that stores "
                                    "them; set scheme_params.references: 25"), halves.stderr
    # a bad scheme parameter is named as itself (it was reported as "methods[0].predictor: missing")
    method["scheme_params"]["p_item"] = 1.5
    bad = cli_in_process("validate", str(write_config(tmp_path / "p.yaml", **raw)))
    assert bad.returncode == 2 and bad.stderr.startswith("error: methods[0].scheme_params.p_item: expected a finite "
                                                         "number > 0 and <= 1, got 1.5"), bad.stderr
    assert "predictor" not in bad.stderr
    method["scheme_params"]["p_item"] = 0.8
    method["criteria"] = ["pac"]  # without m3c, no reference sets are needed
    method["scheme_params"]["references"] = 0
    assert cli_in_process("validate", str(write_config(tmp_path / "pac.yaml", **raw))).returncode == 0
