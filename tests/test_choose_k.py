"""ordercube.choose_k: one call for an array, its printed lines and its Choice, read from the reducers."""

from __future__ import annotations

import re
import tempfile

import numpy as np
import pytest
from sklearn.datasets import load_iris

import ordercube
from ordercube.pipeline.config.defaults import CLUSTERING_CRITERIA
from ordercube.pipeline.reduce.select import criterion_scores, select_k

FAST = {"resamples": 5, "workers": 0}


def _clouds(seed: int = 3, per: int = 40) -> np.ndarray:
    """Three well separated Gaussian clouds in the plane."""
    rng = np.random.default_rng(seed)
    centres = np.array([[0.0, 0.0], [10.0, 0.0], [5.0, 9.0]])
    return np.vstack([centre + rng.normal(scale=0.6, size=(per, 2)) for centre in centres])


@pytest.fixture(scope="module")
def iris_choice(tmp_path_factory):
    return ordercube.choose_k(load_iris().data, k=range(2, 7), seed=11, out=tmp_path_factory.mktemp("iris") / "c.zarr",
                              **FAST)


def test_clean_clouds_give_three(tmp_path, capsys):
    choice = ordercube.choose_k(_clouds(), k=range(2, 7), seed=5, out=tmp_path / "clouds.zarr", **FAST)
    assert choice.k_hat == 3 and choice.tied == ()
    assert list(choice.table.index) == list(CLUSTERING_CRITERIA)
    assert (choice.table["k_hat"] == 3).sum() == choice.agreement.loc[3, "criteria"] >= 3
    printed = capsys.readouterr().out
    assert "data X: 120 rows x 2 features" in printed
    assert "pass seed" not in printed  # a seed given is not repeated before the run; the table says it
    assert "seed=5, resamples=5: pass seed=5 to repeat" in str(choice)


def test_table_is_what_the_reducers_give(iris_choice):
    chosen = select_k(criterion_scores(iris_choice.cube.load())).isel(dataset=0, n=0, model=0)
    assert set(iris_choice.table.index) == set(map(str, chosen.data_vars))
    for name in chosen.data_vars:
        assert iris_choice.table.loc[name, "k_hat"] == int(chosen[name])
        assert ordercube.select_k(iris_choice.cube)[name].item() == iris_choice.table.loc[name, "k_hat"]
    summary = ordercube.summarise(ordercube.criterion_scores(iris_choice.cube)).isel(dataset=0, n=0, model=0)
    for name in chosen.data_vars:
        k_hat = int(chosen[name])
        assert iris_choice.table.loc[name, "score_at_k_hat"] == pytest.approx(float(summary[f"{name}_mean"].sel(k=k_hat)))
    # the combined answer: the k most criteria chose, the agreement counting each criterion once
    counts = iris_choice.table["k_hat"][iris_choice.table["k_hat"] >= 0].value_counts()
    assert iris_choice.agreement["criteria"].to_dict() == counts.sort_index().to_dict()
    assert iris_choice.k_hat == min(k for k, c in counts.items() if c == counts.max())
    assert iris_choice.cube.sizes["trial"] == 5 and list(iris_choice.cube["k"].values) == [2, 3, 4, 5, 6]
    assert int(iris_choice.cube["n"].values[0]) == 150  # n: every row


def test_printed_and_displayed(iris_choice):
    text = str(iris_choice)
    assert repr(iris_choice) == text
    assert "seed=11, resamples=5: pass seed=11 to repeat" in text
    assert "kmeans + nearest_centroid, k = 2..6, n = 150" in text
    assert iris_choice.data_line.startswith("data X: 150 rows x 4 features") and iris_choice.data_line not in text
    rows = [line for line in text.splitlines() if line.split() and line.split()[0] in CLUSTERING_CRITERIA]
    assert [row.split()[0] for row in rows] == list(iris_choice.table.index)
    for row in rows:
        assert int(row.split()[1]) == iris_choice.table.loc[row.split()[0], "k_hat"]
    assert f"k̂ = {iris_choice.k_hat}" in text
    page = iris_choice._repr_html_()
    assert page.count("<tr") == len(iris_choice.table) + 1 and "pass seed=11 to repeat" in page
    figure = iris_choice.plot()
    visible = [ax for ax in figure.axes if ax.get_visible()]
    assert len(visible) == len(iris_choice.table)
    assert [ax.get_title().split(":")[0] for ax in visible] == list(iris_choice.table.index)


def test_printed_seed_repeats_the_run_bit_for_bit(tmp_path, capsys):
    X = _clouds(seed=8, per=25)
    first = ordercube.choose_k(X, k=[2, 3, 4], criteria=["lange", "silhouette"], out=tmp_path / "a.zarr", **FAST)
    seed = int(re.search(r"pass seed=(\d+) to repeat", capsys.readouterr().out).group(1))
    assert first.seed == seed
    again = ordercube.choose_k(X, k=[2, 3, 4], criteria=["lange", "silhouette"], seed=seed, out=tmp_path / "b.zarr",
                               **FAST)
    a, b = first.cube.load(), again.cube.load()
    for name in a.variables:
        if name != "seconds":
            assert a[name].values.tobytes() == b[name].values.tobytes(), name
    other = ordercube.choose_k(X, k=[2, 3, 4], criteria=["lange", "silhouette"], seed=seed + 1,
                               out=tmp_path / "c.zarr", **FAST).cube.load()
    assert a["lange"].values.tobytes() != other["lange"].values.tobytes()


def test_dataframe_with_a_label_column(tmp_path, capsys):
    iris = load_iris(as_frame=True)
    frame = iris.data.assign(species=iris.target_names[iris.target])
    choice = ordercube.choose_k(frame, labels="species", k=range(2, 5), criteria=["lange", "prediction_strength"],
                                seed=2, out=tmp_path / "frame.zarr", **FAST)
    printed = capsys.readouterr().out
    assert "150 rows x 4 features" in printed and "3 classes" in printed and "species" in printed
    assert (choice.table["true_k"] == 3).all()
    assert str(choice).splitlines()[1].split()[-3:] == ["true", "k", "failure"]
    assert choice.table["failure_rate"].between(0, 1).all()


@pytest.mark.parametrize(("call", "key", "words"), [
    (lambda X: ordercube.choose_k(X[:, 0], seed=1), "X", ["1-D array of shape (150,)", "reshape(-1, 1)"]),
    (lambda X: ordercube.choose_k(X, k=range(1, 5), seed=1), "k", ["k = 1", "start k at 2"]),
    (lambda X: ordercube.choose_k(X, criteria=["lnage"], seed=1), "criteria[0]",
     ["unknown criterion 'lnage'", "expected one of"]),
    (lambda X: ordercube.choose_k(X, k="2-10", seed=1), "k", ["'2-10'", "range(2, 11)"]),
    # counted before the list is made (it took 40 s, then a MemoryError), a generator read no further than the bound
    (lambda X: ordercube.choose_k(X, k=range(2, 10**9), seed=1), "k", ["999,999,998 values of k", "at most 10,000"]),
    (lambda X: ordercube.choose_k(X, k=(k for k in range(2, 10**18)), seed=1), "k", ["more than 10,000 values"]),
    # too few rows for any k: the fix asks for rows (it said "use k <= 0")
    (lambda X: ordercube.choose_k(X[:3], seed=1), "k", ["halves of 1 points", "give at least 8 rows"]),
    (lambda X: ordercube.choose_k(X, seed=1, resamples=0), "resamples", ["got 0", "at least 1"]),
    (lambda X: ordercube.choose_k(X, seed=1, algorithm="kmeens"), "algorithm", ["unknown algorithm 'kmeens'"]),
    (lambda X: ordercube.choose_k(X, labels="species", seed=1), "labels", ["DataFrame", "labels themselves"]),
    (lambda X: ordercube.choose_k(X, seed=1, n_clusters=3), "n_clusters", ["not an argument", "expected one of"]),
])
def test_bad_input_names_key_value_and_fix(call, key, words, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where the default cube would go
    with pytest.raises(ordercube.ConfigError) as caught:
        call(load_iris().data)
    assert caught.value.key == key
    assert str(caught.value).startswith(f"{key}: ")
    for word in words:
        assert word in str(caught.value)
    assert not list(tmp_path.iterdir())  # nothing written


def test_several_wrong_arguments_at_once(tmp_path):
    with pytest.raises(ordercube.ConfigErrors) as caught:
        ordercube.choose_k(load_iris().data, seed=-1, resamples=0, criteria=["lnage"], out=tmp_path / "x.zarr")
    assert [error.key for error in caught.value.errors] == ["seed", "resamples", "criteria[0]"]
    assert len(str(caught.value).splitlines()) == 4


def test_choose_k_is_exported_and_import_stays_cheap():
    import subprocess
    import sys

    assert {"choose_k", "Choice", "ConfigErrors"} <= set(ordercube.__all__)
    from ordercube.choice import Choice

    assert ordercube.Choice is Choice
    code = ("import sys, ordercube; "
            "print(sorted(m for m in ('xarray', 'pandas', 'distributed', 'matplotlib') if m in sys.modules))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == "[]"
