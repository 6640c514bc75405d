"""A signed graph read from a weighted edge list (``kind: edge_list``), for correlation clustering (seed 004).

The edge list is a CSV file with a header row and three columns, by position: the two end nodes (names, read as
text) and the weight, a number in [-1, 1] (seed 004's eq. 8 scores a cut by the edges' signs; a weight of 0 is the
same as no edge). Optionally ``nodes: FILE`` lists the nodes (a CSV with a header row: the node's name, and
optionally its known class in a second column): then every end node must be listed (a node in no edge is an
isolated node), and the classes give the true k. Every problem is refused with the file, the line and the fix:
an unknown node, a weight that is not a number or lies outside [-1, 1], a loop (a node with itself), an edge
given twice, a node listed twice.
"""

from __future__ import annotations

import csv
import hashlib
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from pipeline.errors import ConfigError


@dataclass(frozen=True)
class LoadedGraph:
    weights: NDArray[np.float64]  # (nodes, nodes), symmetric, zero diagonal
    labels: NDArray[np.int64] | None
    classes: tuple[str, ...]
    sha256: str
    read: str


def _rows(path: str, key: str) -> list[list[str]]:
    try:
        with open(path, newline="", encoding="utf-8-sig") as handle:
            return [row for row in csv.reader(handle) if any(cell.strip() for cell in row)]
    except FileNotFoundError:
        raise ConfigError(key, f"{path} does not exist", "give the path of the edge list (relative to the config)") from None
    except (UnicodeDecodeError, csv.Error) as error:
        raise ConfigError(key, f"{path} is not a readable CSV text file ({error})", "give a CSV file") from None


def _nodes(path: str, key: str) -> tuple[dict[str, int], list[str] | None]:
    rows = _rows(path, key)
    if len(rows) < 2:
        raise ConfigError(key, f"{path} lists no nodes (a header row, then a node per line)", "list the graph's nodes")
    index: dict[str, int] = {}
    classes: list[str] = []
    with_classes = len(rows[0]) >= 2
    for line, row in enumerate(rows[1:], start=2):
        name = row[0].strip()
        if name in index:
            raise ConfigError(key, f"{path} line {line}: node {name!r} is listed twice", "list each node once")
        index[name] = len(index)
        if with_classes:
            if len(row) < 2 or not row[1].strip():
                raise ConfigError(key, f"{path} line {line}: node {name!r} has no class in column 2",
                                  "give every node its class, or drop the column")
            classes.append(row[1].strip())
    return index, classes if with_classes else None


def load_edge_list(path: str, nodes_path: str | None, key: str) -> LoadedGraph:
    """The weight matrix of the graph in ``path`` (nodes ordered as listed in ``nodes_path``, else by first
    appearance), with the nodes' classes when ``nodes_path`` has them."""
    rows = _rows(path, f"{key}.path")
    if len(rows) < 2:
        raise ConfigError(f"{key}.path", f"{path} holds no edges (a header row, then source,target,weight per line)",
                          "give a CSV edge list")
    listed, classes = _nodes(nodes_path, f"{key}.nodes") if nodes_path else ({}, None)
    index = dict(listed)
    edges: dict[tuple[int, int], int] = {}
    ends, weights = [], []
    for line, row in enumerate(rows[1:], start=2):
        if len(row) < 3:
            raise ConfigError(f"{key}.path", f"{path} line {line}: expected source,target,weight, got {row!r}",
                              "give three columns per edge")
        source, target, text = row[0].strip(), row[1].strip(), row[2].strip()
        for node in (source, target):
            if node not in index:
                if nodes_path:
                    raise ConfigError(f"{key}.path", f"{path} line {line}: node {node!r} is not in the node list "
                                      f"{nodes_path}", "add it to the node list, or correct the edge")
                index[node] = len(index)
        try:
            weight = float(text)
        except ValueError:
            raise ConfigError(f"{key}.path", f"{path} line {line}: the weight {text!r} is not a number",
                              "give a number in [-1, 1] (+1 similar, -1 dissimilar)") from None
        if not (math.isfinite(weight) and -1.0 <= weight <= 1.0):
            raise ConfigError(f"{key}.path", f"{path} line {line}: the weight {text} lies outside [-1, 1]",
                              "rescale the weights to [-1, 1] (+1 similar, -1 dissimilar)")
        a, b = index[source], index[target]
        if a == b:
            raise ConfigError(f"{key}.path", f"{path} line {line}: a loop from {source!r} to itself",
                              "remove it: a node is always in its own cluster")
        pair = (min(a, b), max(a, b))
        if pair in edges:
            raise ConfigError(f"{key}.path", f"{path} line {line}: the edge {source!r}-{target!r} was given on line "
                              f"{edges[pair]}", "give each edge once")
        edges[pair] = line
        ends.append(pair)
        weights.append(weight)
    W = np.zeros((len(index), len(index)))
    pairs = np.asarray(ends, dtype=np.int64)
    W[pairs[:, 0], pairs[:, 1]] = weights
    W[pairs[:, 1], pairs[:, 0]] = weights
    digest = hashlib.sha256(Path(path).read_bytes())
    if nodes_path:
        digest.update(b"|nodes|" + Path(nodes_path).read_bytes())
    labels, names = None, ()
    if classes is not None:
        names = tuple(sorted(set(classes)))
        labels = np.array([names.index(c) for c in classes], dtype=np.int64)
    read = (f"{len(index)} nodes, {len(ends)} edges ({int(np.sum(np.asarray(weights) > 0))} positive) from {path}"
            + (f"; classes from {nodes_path}: " + ", ".join(f"{c} {int(np.sum(labels == i))}" for i, c in enumerate(names))
               if labels is not None else ""))
    return LoadedGraph(weights=W, labels=labels, classes=names, sha256=digest.hexdigest(), read=read)
