"""Correlation clustering in the engine (Frank et al. 2011, Sec. 6): nodes as objects, halves as node sets, the transfer of
eqs. (9)-(10) as predictor, eq. (8) as transfer cost; the tie rule; graphs and points kept apart at config load."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import cli, cli_in_process, small_config, write_config
from ordercube.pipeline.config.study import load_config
from ordercube.pipeline.errors import ConfigError
from ordercube.pipeline.reduce.select import criterion_scores, select_k
from ordercube.pipeline.cube.owner import open_cube
from ordercube.tasks.algorithms.correlation import correlation_cost, graph_transfer, own_graph
from ordercube.tasks.datasets.graphs import signed_graph
from ordercube.tasks.datasets import SyntheticSource
from ordercube.tasks.datasets.sources import node_halves as graph_halves

GRAPH = {"name": "graph", "kind": "signed_graph", "params": {"clusters": 3, "q": 0.3, "p": 0.7}}
GIBBS = {"name": "gibbs", "algorithm": "correlation_gibbs", "params": {"restarts": 3}, "predictor": "graph_transfer",
         "criteria": ["mtc", "lange", "k_effective", "agreement"]}


def test_halves_are_node_sets_with_own_columns_first():
    W = np.arange(36, dtype=float).reshape(6, 6)
    W = W + W.T
    np.fill_diagonal(W, 0)
    first, second = graph_halves(W, np.array([4, 0, 2, 5, 1, 3]))
    assert np.array_equal(own_graph(first), W[np.ix_([4, 0, 2], [4, 0, 2])])
    assert np.array_equal(own_graph(second), W[np.ix_([5, 1, 3], [5, 1, 3])])
    assert np.array_equal(second[:, 3:], W[np.ix_([5, 1, 3], [4, 0, 2])])  # edges to the first half, in its order


def test_graph_transfer_reads_the_edges_to_the_training_nodes():
    # training nodes a, b (cluster 0) and c (cluster 1); new node x: +1 to c, -1 to a and b -> cluster 1;
    # new node y: +1 to a and b -> cluster 0 (its own-half columns, which must be ignored, say the opposite)
    train = np.zeros((3, 5))
    new = np.array([[0.0, -1.0, -1.0, -1.0, 1.0],
                    [-1.0, 0.0, 1.0, 1.0, -1.0]])
    assert graph_transfer(train, np.array([0, 0, 1]), 2, new).tolist() == [1, 0]


def test_a_trial_of_a_signed_graph_is_a_fresh_graph_halved():
    source = SyntheticSource("signed_graph", {"clusters": 3, "q": 0.0, "p": 0.0})
    data = source.draw(60, np.random.default_rng(1), np.random.default_rng(2), with_eval=False)
    assert data.first.shape == data.second.shape == (30, 60)
    # the perfect graph: +1 exactly within the planted clusters, the truth follows the nodes
    same = data.truth[:30, None] == data.truth[None, :30]
    assert np.array_equal(own_graph(data.first), np.where(same, 1.0, -1.0) - np.eye(30))
    assert correlation_cost(own_graph(data.second), data.truth[30:]) == 0.0


def _run(tmp_path, **overrides):
    # 100 nodes per cluster and half at p = 0.6: a node's weight to its own cluster is 40 +- 10, so no node is
    # cheaper alone (with a few dozen nodes per cluster some are, and k_effective counts their singletons)
    graph = {**GRAPH, "params": {"clusters": 3, "q": 0.3, "p": 0.6}}
    config = small_config(n=[600], k=[1, 2, 3, 4, 5, 6], resamples=3, datasets=[graph], methods=[GIBBS], **overrides)
    path = write_config(tmp_path / "graph.yaml", **config)
    result = cli_in_process("run", str(path), "--out", str(tmp_path / "graph.zarr"), "--no-progress", "--workers", "0")
    assert result.returncode == 0, result.stderr
    return open_cube(tmp_path / "graph.zarr")


def test_correlation_sweep_finds_the_planted_clusters_and_ties_go_to_the_smallest_k(tmp_path):
    """Frank et al., Fig. 5(a), in small: at p = 0.6 (0.7 with 450 nodes per half) the sampler leaves extra clusters empty, so the
    transfer cost is flat from k = 3 on; the smallest-k tie rule gives 3 where "ties to the largest k" would give the
    largest k offered."""
    scores = criterion_scores(_run(tmp_path))
    at = {"dataset": "graph", "n": 600, "model": "gibbs"}
    assert (scores["k_effective"].sel(at).sel(k=[3, 4, 5, 6]) == 3).all()
    assert (scores["agreement"].sel(at).sel(k=3) > 0.95).all()
    mtc = scores["mtc"].sel(at)
    assert (mtc.sel(k=[1, 2]) > mtc.sel(k=3)).all()
    assert float(abs(mtc.sel(k=[4, 5, 6]) - mtc.sel(k=3)).max()) <= 0.005 * float(mtc.sel(k=3).min())
    assert int(select_k(scores)["mtc"].sel(at)) == 3
    largest = int(select_k(scores, {"mtc": {"ties": "largest"}})["mtc"].sel(at))
    assert largest > 3, "the costs are not tied past k = 3: this test no longer guards the tie rule"


def _bad(tmp_path, datasets, methods, **extra):
    config = {"n": [240], "k": [1, 2, 3], "datasets": datasets, "methods": methods, **extra}
    path = write_config(tmp_path / "bad.yaml", **small_config(**config))
    with pytest.raises(ConfigError):
        load_config(path)
    result = cli_in_process("run", str(path), "--out", str(tmp_path / "bad.zarr"))
    assert result.returncode == 2 and "Traceback" not in result.stderr and not (tmp_path / "bad.zarr").exists()
    return result.stderr


KMEANS = {"name": "km", "algorithm": "kmeans", "predictor": "nearest_centroid", "criteria": ["mtc_nn_centroid"]}
POINTS = {"name": "g", "kind": "lange_gaussians3"}


@pytest.mark.parametrize("datasets, methods, expected", [
    ([GRAPH], [KMEANS], ["methods[0].algorithm", "'graph'", "a graph", "'kmeans'", "correlation_gibbs"]),
    ([POINTS], [GIBBS], ["methods[0].algorithm", "'g'", "points", "'correlation_gibbs'"]),
    ([GRAPH], [{**GIBBS, "predictor": "nearest_centroid"}], ["methods[0].predictor", "'nearest_centroid'", "graph_transfer"]),
    ([GRAPH], [{**GIBBS, "criteria": ["gap"]}], ["methods[0].criteria[0]", "gap", "nodes of a graph"]),
    ([GRAPH], [{**GIBBS, "criteria": ["k_effective", "pairwise"]}], ["methods[0].criteria[1]", "pairwise"]),
    ([GRAPH], [{**GIBBS, "criteria": ["k_effective", "silhouette"]}], ["methods[0].criteria[1]", "silhouette", "coordinates"]),
    ([{**GRAPH, "params": {"clusters": 3, "q": 0.3, "p": 1.5}}], [GIBBS], ["datasets[0].params.p", "1.5"]),
    ([{**GRAPH, "params": {"clusters": 200}}], [GIBBS], ["datasets[0].n", "240", "200"]),
    ([GRAPH], [{**GIBBS, "params": {"restarts": 0}}], ["methods[0].params", "restarts"]),
])
def test_graphs_and_points_are_kept_apart(tmp_path, datasets, methods, expected):
    stderr = _bad(tmp_path, datasets, methods)
    for text in expected:
        assert text in stderr, (text, stderr)


def test_signed_graph_generator_default_is_the_papers_setting():
    W, labels = signed_graph([300, 300, 300], 0.3, 0.7, np.random.default_rng(0))
    assert W.shape == (900, 900) and np.bincount(labels).tolist() == [300, 300, 300]


def _edge_files(folder, edges: str, nodes: str | None = None) -> dict:
    (folder / "edges.csv").write_text(edges)
    entry = {"name": "g", "kind": "edge_list", "path": "edges.csv"}
    if nodes is not None:
        (folder / "nodes.csv").write_text(nodes)
        entry["nodes"] = "nodes.csv"
    return entry


def test_an_edge_list_is_read_as_a_signed_graph_and_clustered(tmp_path):
    W, labels = signed_graph([60, 60, 60], 0.3, 0.5, np.random.default_rng(3))
    rows = [f"v{i},v{j},{W[i, j]:g}" for i in range(180) for j in range(i + 1, 180) if (i + j) % 4]  # 3/4 of the edges
    nodes = "node,group\n" + "".join(f"v{i},{'xyz'[c]}\n" for i, c in enumerate(labels))
    entry = _edge_files(tmp_path, "source,target,weight\n" + "\n".join(rows) + "\n", nodes)
    config = load_config(write_config(tmp_path / "e.yaml", **small_config(n=["all"], k=[1, 2, 3, 4], datasets=[entry],
                                                                          methods=[GIBBS])))
    spec = config.datasets[0]
    kept = np.array([[(i + j) % 4 != 0 and i != j for j in range(180)] for i in range(180)])
    assert spec.data.shape == (180, 180) and np.array_equal(spec.data, np.where(kept, W, 0.0))
    assert spec.true_k == 3 and spec.classes == ("x", "y", "z") and spec.n == (180,)
    assert f"180 nodes, {len(rows)} edges" in spec.read and "x 60, y 60, z 60" in spec.read
    result = cli_in_process("run", str(tmp_path / "e.yaml"), "--out", str(tmp_path / "e.zarr"), "--no-progress", "--workers", "0")
    assert result.returncode == 0, result.stderr
    scores = criterion_scores(open_cube(tmp_path / "e.zarr"))
    at = {"dataset": "g", "n": 180, "model": "gibbs"}
    assert int(select_k(scores)["mtc"].sel(at)) == 3
    assert float(scores["agreement"].sel(at).sel(k=3).min()) > 0.9


HEADER = "source,target,weight\n"


@pytest.mark.parametrize("edges, nodes, expected", [
    (HEADER + "a,b,1\na,q,-1\n", "node\na\nb\n", ["datasets[0].path", "line 3", "'q'", "node list"]),
    (HEADER + "a,b,strong\n", None, ["datasets[0].path", "line 2", "'strong'", "not a number"]),
    (HEADER + "a,b,1\nb,c,2.5\n", None, ["datasets[0].path", "line 3", "2.5", "[-1, 1]"]),
    (HEADER + "a,b,nan\n", None, ["datasets[0].path", "line 2", "nan", "[-1, 1]"]),
    (HEADER + "a,a,1\n", None, ["datasets[0].path", "line 2", "loop"]),
    (HEADER + "a,b,1\nb,a,-1\n", None, ["datasets[0].path", "line 3", "line 2", "once"]),
    (HEADER + "a,b\n", None, ["datasets[0].path", "line 2", "three columns"]),
    (HEADER + "a,b,1\n", "node,group\na,x\na,y\n", ["datasets[0].nodes", "line 3", "'a'", "twice"]),
])
def test_bad_edge_lists_exit_2_naming_the_file_and_line(tmp_path, edges, nodes, expected):
    path = write_config(tmp_path / "bad.yaml", **small_config(n=["all"], k=[1, 2], datasets=[_edge_files(tmp_path, edges,
                                                                                                           nodes)],
                                                              methods=[GIBBS]))
    result = cli_in_process("validate", str(path))
    stderr = result.stderr
    assert result.returncode == 2 and "Traceback" not in stderr
    for text in expected:
        assert text in stderr, (text, stderr)


def test_an_edge_list_given_to_a_point_algorithm_is_refused(tmp_path):
    entry = _edge_files(tmp_path, HEADER + "a,b,1\nb,c,-1\nc,d,1\nd,a,-1\n")
    stderr = _bad(tmp_path, [{**entry, "n": ["all"]}], [KMEANS])
    assert "methods[0].algorithm" in stderr and "a graph" in stderr


def test_a_file_graph_gives_the_same_bits_on_a_local_cluster_and_in_this_process(tmp_path):
    """The worker halves a scattered graph as this process does (``Task.objects``)."""
    W, labels = signed_graph([30, 30], 0.2, 0.4, np.random.default_rng(4))
    rows = [f"v{i},v{j},{W[i, j]:g}" for i in range(60) for j in range(i + 1, 60)]
    entry = _edge_files(tmp_path, HEADER + "\n".join(rows) + "\n")
    path = write_config(tmp_path / "g.yaml", **small_config(n=[50], k=[1, 2, 3], resamples=2, datasets=[entry],
                                                            methods=[GIBBS]))
    for workers, name in (("0", "here.zarr"), ("1", "cluster.zarr")):
        result = cli("run", str(path), "--out", str(tmp_path / name), "--no-progress", "--workers", workers,
                     "--no-dashboard")
        assert result.returncode == 0, result.stderr
    here, cluster = open_cube(tmp_path / "here.zarr"), open_cube(tmp_path / "cluster.zarr")
    for variable in ("mtc", "lange", "k_effective"):
        assert np.array_equal(here[variable].values, cluster[variable].values, equal_nan=True), variable
    assert int(here["status"].count()) == 6 and (here["status"].values == 1).all()
