"""The partition at k̂: the labels of a whole dataset with its row names, their
agreement with the known classes, scikit-learn's own fit at the same k and seed, and Hennig's clusterwise
Jaccard worked out by hand and by sets."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml
from sklearn.cluster import KMeans

import ordercube
from conftest import cli_in_process, write_config
from ordercube.pipeline.errors import InputError
from ordercube.tasks.cluster_stability import clusterwise_jaccard
from ordercube.tasks.seeding import Purpose, label_id, stream


def test_clusterwise_jaccard_by_hand():
    labels = np.array([0, 0, 0, 1, 1, 1, 2])
    rows = np.array([0, 1, 3, 4])
    # the half's clusters: {0, 1, 4} and {3}; cluster 2 has no point in the half
    gamma = clusterwise_jaccard(labels, 3, rows, np.array([5, 5, 7, 5]))
    assert gamma[0] == pytest.approx(2 / 3)  # {0, 1} against {0, 1, 4}
    assert gamma[1] == pytest.approx(1 / 2)  # {3, 4}: 1/4 with {0, 1, 4}, 1/2 with {3}
    assert np.isnan(gamma[2])


def test_clusterwise_jaccard_equals_the_set_definition():
    rng = np.random.default_rng(4)
    for _ in range(20):
        labels = rng.integers(0, 4, size=60)
        rows = rng.permutation(60)[:30]
        theirs = rng.integers(0, 5, size=30)
        gamma = clusterwise_jaccard(labels, 4, rows, theirs)
        for c in range(4):
            kept = {int(r) for r in rows if labels[r] == c}
            if not kept:
                assert np.isnan(gamma[c])
                continue
            best = max(len(kept & {int(r) for r, t in zip(rows, theirs) if t == d})
                       / len(kept | {int(r) for r, t in zip(rows, theirs) if t == d}) for d in set(theirs.tolist()))
            assert gamma[c] == pytest.approx(best)


@pytest.fixture(scope="module")
def blobs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("partition")
    rng = np.random.default_rng(3)
    X = np.vstack([rng.normal(center, 0.5, size=(40, 2)) for center in ((0, 0), (4, 0), (0, 4))])
    pd.DataFrame({"id": [f"s{i}" for i in range(120)], "x": X[:, 0], "y": X[:, 1],
                  "group": np.repeat(["a", "b", "c"], 40)}).to_csv(folder / "blobs.csv", index=False)
    config = {"name": "blobs", "seed": 5, "n": [60, "all"], "k": [2, 3, 4, 5], "resamples": 8,
              "datasets": [{"name": "blobs", "kind": "file", "path": "blobs.csv", "labels": {"column": "group"}}],
              "methods": [{"name": "km", "algorithm": "kmeans", "params": {"n_init": 5}, "predictor": "nearest_centroid",
                           "criteria": ["lange"]},
                          {"name": "skm", "algorithm": "sklearn.cluster.KMeans", "params": {"n_init": 3},
                           "predictor": "nearest_centroid", "criteria": ["lange"]}]}
    path = write_config(folder / "blobs.yaml", **config)
    result = cli_in_process("run", str(path), "--out", str(folder / "blobs.zarr"), "--workers", "0", "--no-progress")
    assert result.returncode == 0, result.stderr
    return folder, X


def test_the_partition_at_k_hat_with_row_names_agreement_and_stability(blobs):
    folder, X = blobs
    result = cli_in_process("partition", str(folder / "blobs.zarr"), "--dataset", "blobs", "--method", "km",
                            "--config", str(folder / "blobs.yaml"))
    assert result.returncode == 0, result.stderr
    assert "k = 3 (k̂ of lange at n = 120)" in result.stdout and "agreement with the known classes: 1.000" in result.stdout
    rows = pd.read_csv(folder / "blobs-partition-blobs-km-k3.csv")
    assert rows["row"].tolist() == [f"s{i}" for i in range(120)] and rows["class"].tolist() == list(np.repeat(list("abc"), 40))
    assert sorted(rows.groupby("cluster")["class"].nunique().tolist()) == [1, 1, 1]
    reference = KMeans(n_clusters=3, n_init=10, random_state=0).fit_predict(X)  # the same split up to numbering
    assert pd.crosstab(rows["cluster"], reference).gt(0).sum(axis=1).tolist() == [1, 1, 1]
    clusters = pd.read_csv(folder / "blobs-partition-blobs-km-k3-clusters.csv")
    assert clusters["size"].tolist() == [40, 40, 40] and (clusters["halves"] == 16).all()
    assert (clusters["jaccard_mean"] > 0.85).all() and set(clusters["reading"]) == {"highly stable"}


def test_an_estimator_by_import_path_is_scikit_learns_fit_with_the_cube_seed(blobs):
    folder, X = blobs
    part = ordercube.partition(folder / "blobs.zarr", "blobs", "skm", k=3, config=folder / "blobs.yaml")
    rng = stream(5, Purpose.PARTITION, label_id("blobs"), 120, 2, label_id("skm"), 3, 0, 0)
    expected = KMeans(n_clusters=3, n_init=3, random_state=int(rng.integers(2**31 - 1))).fit_predict(X)
    assert np.array_equal(np.unique(expected, return_inverse=True)[1], part.labels)
    assert part.agreement == pytest.approx(1.0) and part.adjusted_rand == pytest.approx(1.0)
    # an over-split: the fourth cluster is a piece of a blob, and its pieces move between halves
    four = ordercube.partition(folder / "blobs.zarr", "blobs", "km", k=4, config=folder / "blobs.yaml")
    table = four.clusters()
    assert len(table) == 4 and table["jaccard_mean"].min() < table["jaccard_mean"].max()
    assert four.agreement < 1.0


def test_bad_requests_name_the_option(blobs, tmp_path):
    folder, _ = blobs
    cube = str(folder / "blobs.zarr")
    for args, words in ((["--dataset", "nope", "--method", "km"], ["--dataset", "'nope'", "['blobs']"]),
                        (["--dataset", "blobs", "--method", "x"], ["--method", "'x'", "['km', 'skm']"]),
                        (["--dataset", "blobs", "--method", "km", "--k", "0"], ["--k", "0"]),
                        (["--dataset", "blobs", "--method", "km", "--k", "70"], ["--k", "70"])):
        result = cli_in_process("partition", cube, *args, "--config", str(folder / "blobs.yaml"))
        assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
        for word in words:
            assert word in result.stderr, (word, result.stderr)
    # the cube's own config reads blobs.csv from the current folder: elsewhere it says to give --config
    elsewhere = cli_in_process("partition", cube, "--dataset", "blobs", "--method", "km", cwd=tmp_path)
    assert elsewhere.returncode == 2 and "--config" in elsewhere.stderr
    # a changed data file is not the cube's
    changed = tmp_path / "blobs.csv"
    changed.write_text((folder / "blobs.csv").read_text().replace("s0,", "s0,1"))
    (tmp_path / "blobs.yaml").write_text((folder / "blobs.yaml").read_text())
    other = cli_in_process("partition", cube, "--dataset", "blobs", "--method", "km", "--config",
                           str(tmp_path / "blobs.yaml"))
    assert other.returncode == 2 and "not what the cube was computed from" in other.stderr
    with pytest.raises(InputError, match="^method: no method 'missing'"):
        ordercube.partition(cube, "blobs", "missing", config=folder / "blobs.yaml")
    for k in (3.0, True, 0, float("nan"), "3"):  # the API takes a whole number of clusters, as the CLI's --k
        with pytest.raises(InputError, match=r"^k: expected an integer >= 1, got "):
            ordercube.partition(cube, "blobs", "km", k=k, config=folder / "blobs.yaml")
    with pytest.raises(InputError, match=r"^decide: expected \{CRITERION: \{FIELD: VALUE\}\}, got 'lange.ties=largest'"):
        ordercube.select_k(cube, decide="lange.ties=largest")


def files_of(folder) -> dict[str, bytes]:
    """Every file under ``folder`` with its bytes: a refused command must leave the cube as it was."""
    return {str(path.relative_to(folder)): path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


def test_a_config_with_another_seed_is_refused_naming_both_seeds(blobs, tmp_path):
    """The cube's trials were drawn with its seed: stabilities under another seed would be of halves it never had."""
    folder, _ = blobs
    before = files_of(folder / "blobs.zarr")
    reseeded = tmp_path / "reseeded.yaml"
    reseeded.write_text((folder / "blobs.yaml").read_text().replace("seed: 5", "seed: 1936"))
    (tmp_path / "blobs.csv").write_bytes((folder / "blobs.csv").read_bytes())
    result = cli_in_process("partition", str(folder / "blobs.zarr"), "--dataset", "blobs", "--method", "km",
                            "--config", str(reseeded), "--out", str(tmp_path / "labels.csv"))
    assert result.returncode == 2 and result.stdout == "", result
    assert result.stderr.splitlines() == [f"error: --config: seed: 1936 in {reseeded}, 5 in the cube; give the config "
                                          "(and data) the cube was computed from, or leave --config out to use the "
                                          "cube's own: otherwise the stabilities would be of labels the cube never "
                                          "computed"]
    assert not (tmp_path / "labels.csv").exists() and files_of(folder / "blobs.zarr") == before
    with pytest.raises(InputError, match=r"^config: seed: 1936 in the config, 5 in the cube; "):
        ordercube.partition(folder / "blobs.zarr", "blobs", "km", config={
            **yaml.safe_load(reseeded.read_text()), "datasets": [
                {"name": "blobs", "kind": "file", "path": str(folder / "blobs.csv"), "labels": {"column": "group"}}]})
    # a method parameter that changes the fits is named with both values
    refit = tmp_path / "refit.yaml"
    refit.write_text((folder / "blobs.yaml").read_text().replace("n_init: 5", "n_init: 6"))
    other = cli_in_process("partition", str(folder / "blobs.zarr"), "--dataset", "blobs", "--method", "km",
                           "--config", str(refit))
    assert other.returncode == 2
    assert other.stderr.startswith(f"error: --config: method 'km' is not what the cube was computed from (params.n_init: "
                                   f"6 in {refit}, 5 in the cube); give the config"), other.stderr
    assert files_of(folder / "blobs.zarr") == before


def test_a_data_file_changed_since_the_run_is_named_not_a_config_never_given(blobs, tmp_path):
    """With the cube's own config (no --config given), only the data can differ: the message names the dataset and
    its file's digests, never --config."""
    import shutil

    folder, _ = blobs
    shutil.copytree(folder, tmp_path / "copy")
    data = tmp_path / "copy" / "blobs.csv"
    data.write_text(data.read_text().replace("s0,", "s0x,", 1))
    result = cli_in_process("partition", str(tmp_path / "copy" / "blobs.zarr"), "--dataset", "blobs", "--method", "km",
                            cwd=tmp_path / "copy")  # where the cube's own config reads its data file from
    assert result.returncode == 2 and "--config" not in result.stderr, result.stderr
    assert result.stderr.startswith("error: --dataset: the data of 'blobs' are not what the cube was computed from "
                                    "(sha256: ") and "restore the file the cube was computed from" in result.stderr


@pytest.fixture(scope="module")
def in_memory(tmp_path_factory):
    """A cube of arrays given from Python (three blobs of 30 rows, their classes)."""
    folder = tmp_path_factory.mktemp("memory")
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(centre, 0.4, size=(30, 2)) for centre in ((0, 0), (4, 0), (0, 4))])
    y = np.repeat([0, 1, 2], 30)
    config = {"name": "mem", "seed": 3, "n": ["all"], "k": [2, 3, 4], "resamples": 4,
              "methods": [{"name": "km", "algorithm": "kmeans", "predictor": "nearest_centroid", "criteria": ["lange"]}]}
    ordercube.sweep(config, data={"blobs": (X, y)}, out=folder / "mem.zarr", workers=0)
    return folder / "mem.zarr", config, X, y


def test_partition_of_arrays_from_python_reads_the_cubes_own_config(in_memory):
    cube, config, X, y = in_memory
    alone = ordercube.partition(cube, "blobs", "km", data={"blobs": (X, y)})
    with_config = ordercube.partition(cube, "blobs", "km", config=config, data={"blobs": (X, y)})
    assert np.array_equal(alone.labels, with_config.labels) and alone.k == 3
    assert alone.agreement == pytest.approx(1.0) and np.bincount(alone.labels).tolist() == [30, 30, 30]
    # other arrays (one row changed) are not the cube's data
    changed = (r"^config: dataset 'blobs' is not what the cube was computed from "
               r"\(sha256: \"[0-9a-f]{64}\" in the config, \"[0-9a-f]{64}\" in the cube\)")
    with pytest.raises(InputError, match=changed):
        ordercube.partition(cube, "blobs", "km", data={"blobs": (np.vstack([X[:-1], X[:1]]), y)})
    # without the arrays: what to pass, not a complaint about a string
    for call in (lambda: ordercube.partition(cube, "blobs", "km"),
                 lambda: ordercube.partition(cube, "blobs", "km", data={"other": X})):
        with pytest.raises(InputError, match=r"^data: the cube's dataset 'blobs' was given from Python \(<ndarray of "
                                             r"shape \(90, 2\) given from Python>\) .*data=\{'blobs': X\}"):
            call()
    result = cli_in_process("partition", str(cube), "--dataset", "blobs", "--method", "km")
    assert result.returncode == 2 and result.stderr.startswith("error: data: the cube's dataset 'blobs' was given")


def test_a_partitions_repr_is_one_short_line(in_memory):
    cube, _, X, y = in_memory
    assert repr(ordercube.partition(cube, "blobs", "km", data={"blobs": (X, y)})) == (
        "Partition(dataset='blobs', method='km', k=3 (k̂ of lange at n = 90), rows=90, sizes=[30, 30, 30], "
        "agreement=1.000)")
    assert repr(ordercube.partition(cube, "blobs", "km", k=2, data={"blobs": (X, y)})).startswith(
        "Partition(dataset='blobs', method='km', k=2 (given), rows=90, sizes=[")
