"""A signed graph read from a weighted edge list (``kind: edge_list``), for correlation clustering (Frank et al. 2011, Sec. 6).

The edge list is a CSV file with a header row and three columns, by position: the two end nodes (names, read as
text) and the weight, a number in [-1, 1] (Frank et al.'s eq. 8 scores a cut by the edges' signs; a weight of 0 is the
same as no edge). Optionally ``nodes: FILE`` lists the nodes (a CSV with a header row: the node's name, and
optionally its known class in a second column): then every end node must be listed (a node in no edge is an
isolated node), and the classes give the true k. Every problem is refused with the file, the line and the fix:
an unknown node, a weight that is not a number or lies outside [-1, 1], a line of other than three cells (a
decimal comma would split a weight), a node without a name, a loop (a node with itself), an edge given twice, a
node listed twice. Both files are read once through :func:`ordercube.pipeline.files.inputfile.read_input`.

A graph without both signs is refused too. Eq. (8) of Frank, Chehreghani & Buhmann (2011) counts the negative
edges inside clusters and the positive edges between them: without a negative edge the single cluster costs 0,
so k = 1 is optimal whatever the edges (similarities in [0, 1] given as weights say nothing about clusters);
without a positive edge nothing joins two nodes, every partition without a negative edge inside costs 0 and
the cost falls with k up to a colouring of the graph, not a number of clusters; with no edge at all every
partition costs 0.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ordercube.pipeline.errors import ConfigError
from ordercube.pipeline.files.inputfile import InputFile, read_input
from ordercube.pipeline.data.matrixfiles import MAX_MATRIX_CELLS, csv_rows

Rows = list[tuple[int, list[str]]]


@dataclass(frozen=True)
class LoadedGraph:
    weights: NDArray[np.float64]  # (nodes, nodes), symmetric, zero diagonal
    labels: NDArray[np.int64] | None
    classes: tuple[str, ...]
    sha256: str
    read: str


def _nodes(rows: Rows, path: str, key: str) -> tuple[dict[str, int], list[str] | None]:
    if len(rows) < 2:
        raise ConfigError(key, f"{path} lists no nodes (a header row, then a node per line)", "list the graph's nodes")
    index: dict[str, int] = {}
    classes: list[str] = []
    with_classes = len(rows[0][1]) >= 2
    for line, row in rows[1:]:
        name = row[0].strip()
        if not name:
            raise ConfigError(key, f"{path} line {line}: a node without a name, got {row!r}", "name every node")
        if name in index:
            raise ConfigError(key, f"{path} line {line}: node {name!r} is listed twice", "list each node once")
        index[name] = len(index)
        if with_classes:
            if len(row) < 2 or not row[1].strip():
                raise ConfigError(key, f"{path} line {line}: node {name!r} has no class in column 2",
                                  "give every node its class, or drop the column")
            classes.append(row[1].strip())
    return index, classes if with_classes else None


def _weight(text: str, line: int, path: str, key: str) -> float:
    try:
        weight = float(text)
    except ValueError:
        raise ConfigError(key, f"{path} line {line}: the weight {text!r} is not a number",
                          "give a number in [-1, 1] (+1 similar, -1 dissimilar)") from None
    if not (math.isfinite(weight) and -1.0 <= weight <= 1.0):
        raise ConfigError(key, f"{path} line {line}: the weight {text} lies outside [-1, 1]",
                          "rescale the weights to [-1, 1] (+1 similar, -1 dissimilar)")
    return weight


def _edges(rows: Rows, index: dict[str, int], path: str, nodes_path: str | None,
           key: str) -> tuple[list[tuple[int, int]], list[float]]:
    """The edges of ``rows`` as node pairs (``index`` grows by the nodes met when no node list is given)."""
    edges: dict[tuple[int, int], int] = {}
    weights = []
    for line, row in rows[1:]:
        if len(row) != 3:  # a fourth cell may be a decimal comma: 0,5 read as 0 would be a silent misreading
            raise ConfigError(key, f"{path} line {line}: expected source,target,weight, got {len(row)} cells {row!r}",
                              "give three columns per edge (a decimal point, not a comma, in the weight)")
        source, target = row[0].strip(), row[1].strip()
        if not source or not target:
            raise ConfigError(key, f"{path} line {line}: an edge without a node name, got {row!r}",
                              "name both end nodes")
        for node in (source, target):
            if node not in index:
                if nodes_path:
                    raise ConfigError(key, f"{path} line {line}: node {node!r} is not in the node list {nodes_path}",
                                      "add it to the node list, or correct the edge")
                index[node] = len(index)
        weight = _weight(row[2].strip(), line, path, key)
        a, b = index[source], index[target]
        if a == b:
            raise ConfigError(key, f"{path} line {line}: a loop from {source!r} to itself",
                              "remove it: a node is always in its own cluster")
        pair = (min(a, b), max(a, b))
        if pair in edges:
            raise ConfigError(key, f"{path} line {line}: the edge {source!r}-{target!r} was given on line "
                              f"{edges[pair]}", "give each edge once")
        edges[pair] = line
        weights.append(weight)
    return list(edges), weights


def _check_signs(weights: NDArray[np.float64], path: str, key: str) -> None:
    """Refuse a graph that eq. (8) cannot cut into clusters: no edge, or edges of one sign only (see the module)."""
    positive, negative = int(np.sum(weights > 0)), int(np.sum(weights < 0))
    if positive and negative:
        return
    if not positive and not negative:
        raise ConfigError(key, f"{path} has no edge of non-zero weight: every partition costs 0", "give signed edges")
    if not negative:
        raise ConfigError(key, f"{path} has {positive} positive edges and no negative one: one cluster of every node "
                          "costs 0, so k = 1 whatever the graph", "give dissimilar pairs negative weights (similarities "
                          "s in [0, 1] as 2s - 1)")
    raise ConfigError(key, f"{path} has {negative} negative edges and no positive one: nothing joins two nodes, and "
                      "the cost falls with k up to a colouring of the graph", "give similar pairs positive weights")


def load_edge_list(path: str, nodes_path: str | None, key: str) -> LoadedGraph:
    """The weight matrix of the graph in ``path`` (nodes ordered as listed in ``nodes_path``, else by first
    appearance), with the nodes' classes when ``nodes_path`` has them."""
    edges_file = read_input(path, f"{key}.path", expected="a CSV edge list (source,target,weight)")
    nodes_file = read_input(nodes_path, f"{key}.nodes", expected="a CSV node list (node[,class])") if nodes_path else None
    return graph_of(edges_file, nodes_file, nodes_path, key)[0]


def graph_of(edges_file: InputFile, nodes_file: InputFile | None, nodes_path: str | None,
             key: str) -> tuple[LoadedGraph, tuple[str, ...]]:
    """The graph of an edge list's bytes and its optional node list's (the ``edge_list`` reader; see
    :func:`load_edge_list`), with the nodes' names in the matrix's order."""
    path = str(edges_file.path)
    rows = csv_rows(edges_file, f"{key}.path")
    if len(rows) < 2:
        raise ConfigError(f"{key}.path", f"{path} holds no edges (a header row, then source,target,weight per line)",
                          "give a CSV edge list")
    digest = hashlib.sha256(edges_file.data)
    listed: dict[str, int] = {}
    classes = None
    if nodes_file is not None:
        listed, classes = _nodes(csv_rows(nodes_file, f"{key}.nodes"), nodes_path, f"{key}.nodes")
        digest.update(b"|nodes|" + nodes_file.data)
    index = dict(listed)
    ends, weights = _edges(rows, index, path, nodes_path, f"{key}.path")
    if len(index) ** 2 > MAX_MATRIX_CELLS:
        raise ConfigError(f"{key}.path", f"{path} names {len(index)} nodes: their weight matrix would hold "
                          f"{len(index) ** 2} cells, above the {MAX_MATRIX_CELLS} held at most", "give a smaller graph")
    _check_signs(np.asarray(weights), path, f"{key}.path")
    W = np.zeros((len(index), len(index)))
    pairs = np.asarray(ends, dtype=np.int64)
    W[pairs[:, 0], pairs[:, 1]] = weights
    W[pairs[:, 1], pairs[:, 0]] = weights
    labels, names = None, ()
    if classes is not None:
        names = tuple(sorted(set(classes)))
        labels = np.array([names.index(c) for c in classes], dtype=np.int64)
    read = (f"{len(index)} nodes, {len(ends)} edges ({int(np.sum(np.asarray(weights) > 0))} positive) from {path}"
            + (f"; classes from {nodes_path}: " + ", ".join(f"{c} {int(np.sum(labels == i))}" for i, c in enumerate(names))
               if labels is not None else ""))
    return LoadedGraph(weights=W, labels=labels, classes=names, sha256=digest.hexdigest(), read=read), tuple(index)
