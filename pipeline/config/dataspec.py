"""One dataset entry of a config in, a validated ``DatasetSpec`` out: synthetic, a file, or an array from Python.

Kinds: a registered generator (``lange_gaussians3``, ...), ``file`` (a ``.csv`` or ``.npy`` at ``path``) and
``memory`` (a NumPy 2-D array or pandas DataFrame under ``data``, implied by ``data``; only reachable from
Python, as YAML cannot hold such objects). Files and arrays take the same reading options (``header`` for
CSV only, ``columns``, ``exclude``, ``row_names``), labels (``labels: {path, column}``, ``labels: {column}``
from the table itself, or, from Python, a 1-D sequence), ``preprocess`` steps, and every dataset takes
``true_k``, the number of clusters failure rates are counted against (it overrides the labels' classes).
"""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import sys

import numpy as np

from ordercube.pipeline.config.checks import (
    check_keys as _check_keys, integer as _integer, n_values as _n_values, require as _require, steps as _steps,
    valid_name as _name,
)
from ordercube.pipeline.config.specs import MIN_N, DatasetSpec
from ordercube.pipeline.data.catalog import resolve_path
from ordercube.pipeline.data.dissimilarity import OBJECTS, check_dissimilarities
from ordercube.pipeline.errors import ConfigError
from ordercube.tasks.capabilities import objects_kind
from ordercube.tasks.datasets import SYNTHETIC, get_synthetic
from ordercube.tasks.datasets.matrices import MATRIX_KINDS, MATRIX_PROVIDES
from ordercube.tasks.datasets.synthetic import ParameterError
from ordercube.tasks.params import show

TABLE_KINDS = ("file", "memory")
TABLE_KEYS = {"path", "data", "labels", "preprocess", "header", "columns", "exclude", "row_names"}


def _pandas(*names: str) -> tuple[type, ...]:
    """pandas' classes ``names``, or none when pandas is not imported: then no object can be one of them, and
    a config of synthetic datasets is read without importing pandas (0.15-0.3 s)."""
    pandas = sys.modules.get("pandas")
    return tuple(getattr(pandas, name) for name in names) if pandas is not None else ()


def _extension_arrays() -> tuple[type, ...]:
    """pandas' ExtensionArray (nullable and string arrays: ``pd.array(...)``), when pandas is imported."""
    pandas = sys.modules.get("pandas")
    return (pandas.api.extensions.ExtensionArray,) if pandas is not None else ()


def dataset_spec(entry: Any, i: int, global_n: list[int | str] | None, base: Path, ks: tuple[int, ...]) -> DatasetSpec:
    """The spec of ``datasets[i]``; its one-line description (``spec.read``) says what was read."""
    key = f"datasets[{i}]"
    from ordercube.pipeline.data import formats  # noqa: F401  (every reader of ordercube registered; no pandas)
    from ordercube.pipeline.data.readers import option_keys

    _check_keys(entry, {"name", "kind", "params", "n", "true_k", "learning", "sweep", "reader", *option_keys(),
                        *TABLE_KEYS}, key)
    name = _name(_require(entry, "name", f"{key}."), f"{key}.name")
    kind = entry.get("kind", "memory" if "data" in entry else None)
    if kind is None:
        raise ConfigError(f"{key}.kind", "missing", "add the key 'kind' (a generator's name, or file)")
    if not isinstance(kind, str):
        raise ConfigError(f"{key}.kind", f"expected one name, got {show(kind)}", "write e.g. kind: file")
    n_raw = _n_values(entry["n"], f"{key}.n") if "n" in entry else global_n
    reader = _reader_of(entry, key, kind)
    _check_reader_keys(entry, key, reader, kind)
    if n_raw is None:
        if reader is None and kind != "memory":
            if kind not in SYNTHETIC:
                raise _unknown_kind(key, kind)  # said before the missing n a known kind would need
            raise ConfigError(f"{key}.n", f"no sample sizes: a generated dataset ({show(kind)}) has no size to default "
                              "to", "give 'n' at the top level or in this dataset, e.g. n: [100, 300]")
        n_raw = ["all"]  # every row of a file or an array, every tile or row of a matrix
    if reader is not None:
        build = _FILE_DATASETS.get(reader.name, _file_dataset)
        spec = build(entry, key, name, n_raw, base, reader)
    elif kind == "memory":
        spec = _table_dataset(entry, key, name, kind, n_raw, base)
    else:
        spec = _synthetic_dataset(entry, key, name, kind, n_raw)
    if "true_k" in entry:
        given = _integer(entry["true_k"], f"{key}.true_k", minimum=1,
                         fix="give the number of clusters you know the data has, e.g. true_k: 3")
        if ks and given not in ks:
            warnings.warn(f"{key}.true_k: {given} is not among the k computed ({list(ks)}): a choice can never equal "
                          "it, so every trial counts as a failure; add it to k", UserWarning, stacklevel=2)
        spec = replace(spec, true_k=given)
    spec = replace(spec, provides=_provisions(spec))
    if "learning" in entry:
        from ordercube.pipeline.config.supervision import with_learning_set

        spec = with_learning_set(spec, entry["learning"], f"{key}.learning")
    spec = replace(spec, read=_describe(spec, given="true_k" in entry))
    return _with_distinct_rows(spec, key, ks)


def _provisions(spec: DatasetSpec) -> tuple[str, ...]:
    """What the dataset offers besides its objects (:mod:`ordercube.tasks.capabilities`): its generator's provisions, labels
    from a file, a matrix kind's, and a test set (a classifier's learning set is half the sample unless the entry
    says otherwise, :mod:`ordercube.pipeline.config.supervision`)."""
    provides = list(spec.provides)
    if spec.kind in SYNTHETIC:
        provides += get_synthetic(spec.kind).provides(spec.params)
    elif spec.labels is not None:
        provides.append("labels")
    provides += MATRIX_PROVIDES.get(spec.kind, ())
    return tuple(dict.fromkeys([*provides, "test_set"]))


def _with_distinct_rows(spec: DatasetSpec, key: str, ks: tuple[int, ...]) -> DatasetSpec:
    """A k above the number of distinct objects splits identical objects arbitrarily (a k̂ there would be chosen
    among arbitrary splits): a warning says so, and the data line how many objects are distinct."""
    if spec.data is None or spec.objects not in ("points", "dissimilarity"):
        return spec
    rows = np.asarray(spec.data)
    distinct = int(np.unique(rows, axis=0).shape[0])
    if distinct == rows.shape[0] or not ks or max(ks) <= distinct:  # no repeats (a k above n is refused elsewhere)
        return spec
    warnings.warn(f"{key}: {spec.name} holds {distinct} distinct {objects_kind(spec.objects).unit} "
                  f"among {rows.shape[0]}: a k above {distinct} (k up to {max(ks)} is computed) splits identical "
                  f"ones arbitrarily; keep k <= {distinct} or check the data", UserWarning, stacklevel=3)
    return replace(spec, read=f"{spec.read}; {distinct} distinct of {rows.shape[0]} rows")


def _describe(spec: DatasetSpec, *, given: bool) -> str:
    truth = "true k unknown (failure rates need labels or true_k)" if spec.true_k < 0 else \
        f"true k {spec.true_k}" + (" (given)" if given else "")
    if spec.kind in SYNTHETIC and get_synthetic(spec.kind).target is not None:
        truth = "labels: a classifier's response (0/1), error rates exact"
    if "learning" in spec.identity:  # a classifier's split, said as it will be made
        from ordercube.pipeline.config.supervision import describe_learning

        truth = f"{truth}; {describe_learning(spec)}"
    if spec.kind in MATRIX_KINDS:
        noise = "Gaussian noise of sd" if spec.kind == "image" else "flip noise at rate"
        return f"{spec.read}; {noise} {spec.params['noise']:g} per trial, {spec.n_features} features per row"
    if spec.kind in (*TABLE_KINDS, "edge_list", "distances"):
        return f"{spec.read}; {truth}"
    return f"synthetic {spec.kind}, {objects_kind(spec.objects).fresh.format(features=spec.n_features)}; {truth}"


def _reader_of(entry: Mapping[str, Any], key: str, kind: str) -> Any:
    """The reader of a file dataset: ``kind: file`` with the entry's ``reader:`` (None: chosen when the file is
    read, by suffix or first bytes), or a kind named after one of ordercube's readers of other objects than points
    (``edge_list``, ``distances``, ``image``, ``boolean_matrix``); None for a generator or an array."""
    from ordercube.pipeline.data.readers import named_reader

    if kind == "file":
        if entry.get("reader") is not None:
            return named_reader(entry["reader"], key)
        return _GUESSED
    if "reader" in entry:
        raise ConfigError(f"{key}.reader", f"a {show(kind)} dataset is not read from a file by a reader",
                          "remove 'reader', or set kind: file")
    if kind in _FILE_DATASETS:
        return named_reader(kind, key)
    return None


def _check_reader_keys(entry: Mapping[str, Any], key: str, reader: Any, kind: str) -> None:
    """A key only some readers read (``nodes``, ``layer``, ...) is refused where the dataset's reader is known
    and does not read it (a reader chosen by the file's suffix is checked once chosen)."""
    from ordercube.pipeline.data.readers import not_read, option_keys

    if reader is _GUESSED:
        return
    for option in sorted(option_keys() - TABLE_KEYS):
        if option in entry and (reader is None or option not in reader.options):
            by = f" read by the {reader.name} reader" if reader is not None and reader.name != kind else ""
            raise not_read(option, f"a {show(kind)} dataset{by}", key)


class _Guessed:
    """The reader of a ``kind: file`` entry without ``reader:``, chosen by the file's suffix or first bytes."""

    name = ""


_GUESSED = _Guessed()


def _file_dataset(entry: Mapping[str, Any], key: str, name: str, n_raw: list[int | str], base: Path,
                  reader: Any) -> DatasetSpec:
    """A table of points read by its reader (the named one, or the one the file's suffix or bytes choose)."""
    return _table_dataset(entry, key, name, "file", n_raw, base, reader=reader.name or None)


def _edge_list_dataset(entry: Mapping[str, Any], key: str, name: str, n_raw: list[int | str], base: Path,
                       reader: Any = None) -> DatasetSpec:
    """A signed graph from a weighted edge list (:mod:`ordercube.pipeline.data.graphfiles`): its nodes are the objects."""
    for extra in sorted(TABLE_KEYS - {"path"}) + ["params"]:
        if extra in entry:
            raise ConfigError(f"{key}.{extra}", f"an edge_list dataset takes path and nodes, not '{extra}'",
                              "remove it (the node list's second column gives the known classes)")
    from ordercube.pipeline.data.graphfiles import load_edge_list

    given = _require(entry, "path", f"{key}.")
    if not isinstance(given, str):
        raise ConfigError(f"{key}.path", f"expected a file path, got {show(given)}", "give a string")
    nodes = entry.get("nodes")
    if nodes is not None and not isinstance(nodes, str):
        raise ConfigError(f"{key}.nodes", f"expected a file path, got {show(nodes)}", "give a string")
    path = resolve_path(given, base, f"{key}.path")
    nodes_path = resolve_path(nodes, base, f"{key}.nodes") if nodes else None
    graph = load_edge_list(path, nodes_path, key)
    size = graph.weights.shape[0]
    n = tuple(size if v == "all" else int(v) for v in n_raw)
    for j, value in enumerate(n):
        if value > size:
            raise ConfigError(f"{key}.n[{j}]", f"{value} exceeds the {size} nodes of {path}", f"use n <= {size} or 'all'")
    identity = {"kind": "edge_list", "sha256": graph.sha256}
    return DatasetSpec(name=name, kind="edge_list", params={}, n=n, true_k=len(graph.classes) if graph.labels is not None
                       else -1, n_features=size, path=path, data=graph.weights, labels=graph.labels, identity=identity,
                       read=graph.read, classes=graph.classes, objects="graph")


def _matrix_dataset(entry: Mapping[str, Any], key: str, name: str, n_raw: list[int | str], base: Path,
                    reader: Any) -> DatasetSpec:
    kind = reader.name
    for extra in sorted(TABLE_KEYS - {"path"}):
        if extra in entry:
            raise ConfigError(f"{key}.{extra}", f"a {kind} dataset takes path and params, not '{extra}'", f"remove '{extra}'")
    path = _require(entry, "path", f"{key}.")
    if not isinstance(path, str):
        raise ConfigError(f"{key}.path", f"expected a file path, got {show(path)}", "give a string")
    from ordercube.pipeline.data.matrixfiles import matrix_dataset

    path = resolve_path(path, base, f"{key}.path")  # a file, or catalog:DATASET/FILE
    clean, params, n, features, read, identity = matrix_dataset(entry, key, kind, n_raw, path)
    return DatasetSpec(name=name, kind=kind, params=params, n=n, true_k=-1, n_features=features, path=path, read=read,
                       data=clean, identity=identity, objects="matrix")


def _unknown_kind(key: str, kind: str) -> ConfigError:
    return ConfigError(f"{key}.kind", f"unknown dataset {show(kind)}",
                       f"expected one of {sorted([*SYNTHETIC, *_FILE_DATASETS, 'file'])} (or 'data' from Python)")


def _synthetic_dataset(entry: Mapping[str, Any], key: str, name: str, kind: Any, n_raw: list[int | str]) -> DatasetSpec:
    if kind not in SYNTHETIC:
        raise _unknown_kind(key, kind)
    for extra in sorted(TABLE_KEYS):
        if extra in entry:
            raise ConfigError(f"{key}.{extra}", f"only file datasets take '{extra}'", "remove it or set kind: file")
    generator = get_synthetic(kind)
    try:
        params = generator.resolve(entry.get("params") or {})
        n_features = generator.sample(MIN_N, np.random.default_rng(0), **params)[0].shape[1]  # fail here, not in cells
    except ParameterError as error:
        problem = str(error).split(": ", 1)[1].rsplit("; ", 1)[0]  # 'expected ..., got ...' with the value as shown
        raise ConfigError(f"{key}.params.{error.name}", problem, error.fix) from None
    except (ValueError, TypeError) as error:
        raise ConfigError(f"{key}.params", str(error), f"see the parameters of {kind}") from None
    if "all" in n_raw:
        raise ConfigError(f"{key}.n", "'all' is the size of a file dataset; a synthetic one has no size",
                          "give integer sample sizes")
    if generator.smallest_n is not None:
        smallest, why = generator.smallest_n(params)
        if min(int(n) for n in n_raw) < smallest:
            raise ConfigError(f"{key}.n", f"n = {min(int(n) for n in n_raw)} cannot hold {why}", f"use n >= {smallest}")
    identity = {"kind": kind, "params": params}
    return DatasetSpec(name=name, kind=kind, params=params, n=tuple(int(n) for n in n_raw),
                       true_k=generator.true_k(params), n_features=n_features, identity=identity,
                       objects=generator.objects)


_ONE_LABEL_SET_FIX = ("give one; to compare with several label sets, list the dataset once per label column, each "
                      "with its own name, and exclude the other label columns from its features")


def _labels_entry(labels: Any, key: str, base: Path) -> tuple[str | None, Any, Any]:
    """(labels path, labels column, labels given as values) of a ``labels`` entry."""
    if labels is None:
        return None, None, None
    if isinstance(labels, _pandas("DataFrame")):
        raise ConfigError(f"{key}.labels", f"expected one label per row, got a DataFrame of shape {labels.shape}",
                          "give one column of it (frame['name']), or labels: {column: NAME} of the data's DataFrame")
    if isinstance(labels, (list, tuple)) and any(isinstance(item, Mapping) for item in labels):
        raise ConfigError(f"{key}.labels", f"expected one label set, got a list of {len(labels)}: a dataset has one "
                          "label set (one true k, one agreement score)", _ONE_LABEL_SET_FIX)
    if isinstance(labels, (np.ndarray, list, tuple, *_pandas("Series"))):
        return None, None, labels
    if isinstance(labels, (*_pandas("Index", "Categorical"), *_extension_arrays())):  # no row names: by position
        return None, None, np.asarray(labels, dtype=object)
    if not isinstance(labels, (str, Mapping)):
        raise ConfigError(f"{key}.labels", f"expected labels, got {show(labels)} ({type(labels).__name__})",
                          "give {path: FILE, column: NAME} or {column: NAME} (from Python also an array, a list or a "
                          "Series of one label per row)")
    labels = {"path": labels} if isinstance(labels, str) else labels
    _check_keys(labels, {"path", "column"}, f"{key}.labels")
    column = labels.get("column")
    if isinstance(column, (list, tuple)):
        raise ConfigError(f"{key}.labels.column", f"expected one column name, got {show(column)}: a dataset has one "
                          "label set (one true k, one agreement score)", _ONE_LABEL_SET_FIX)
    if column is not None and isinstance(column, (bool, float, dict)):
        raise ConfigError(f"{key}.labels.column", f"expected one column name, got {show(column)}",
                          "give the name of one column")
    if "path" not in labels:
        if column is None:
            raise ConfigError(f"{key}.labels", "neither 'path' nor 'column' is given",
                              "give labels: {column: NAME} for a column of the data, or labels: {path: FILE}")
        return None, column, None
    given = labels["path"]
    if not isinstance(given, str):
        raise ConfigError(f"{key}.labels.path", f"expected a file path, got {show(given)}", "give a string")
    return resolve_path(given, base, f"{key}.labels.path"), column, None  # a file, or catalog:DATASET/FILE


def _table_dataset(entry: Mapping[str, Any], key: str, name: str, kind: str, n_raw: list[int | str],
                   base: Path, objects: str = "points", reader: str | None = None) -> DatasetSpec:
    if "params" in entry:
        raise ConfigError(f"{key}.params", f"{kind} datasets take no params", "use 'preprocess' steps")
    from ordercube.pipeline.data.datafiles import load_file_dataset  # pandas: for tables only
    from ordercube.pipeline.data.readers import identity_of
    from ordercube.pipeline.data.tables import reading_of

    labels_path, labels_column, label_values = _labels_entry(entry.get("labels"), key, base)
    reading = reading_of(entry, key, label_column=labels_column, label_in_table=labels_column is not None
                         and labels_path is None)
    steps = _steps(entry.get("preprocess"), f"{key}.preprocess")
    spec = DatasetSpec(name=name, kind=kind, params={}, n=(), true_k=-1, n_features=0, labels_path=labels_path,
                       labels_column=labels_column, preprocess=steps, reading=reading, objects=objects)
    if kind == "file":
        for extra in ("data",):
            if extra in entry:
                raise ConfigError(f"{key}.data", "a file dataset reads 'path'", "remove 'data' (or remove kind: file)")
        if label_values is not None:
            raise ConfigError(f"{key}.labels", f"expected a labels file or column, got {show(label_values, 40)}",
                              "write labels: {path: FILE, column: NAME} or labels: {column: NAME}")
        path = _require(entry, "path", f"{key}.")
        if not isinstance(path, str):
            raise ConfigError(f"{key}.path", f"expected a file path, got {show(path)}", "give a string")
        spec = replace(spec, path=resolve_path(path, base, f"{key}.path"))  # a file, or catalog:DATASET/FILE
        loaded, chosen, options = load_file_dataset(spec, key, entry, TABLE_KEYS, reader)
        read_by = identity_of(chosen, options)
    else:
        loaded, read_by = _memory(entry, key, spec, label_values), {}
    size = loaded.X.shape[0]
    n = tuple(size if v == "all" else int(v) for v in n_raw)
    for j, value in enumerate(n):
        if value > size:
            raise ConfigError(f"{key}.n[{j}]", f"{value} exceeds the {size} rows of {spec.path or f'{key}.data'}",
                              f"use n <= {size} or 'all'")
    true_k = len(loaded.classes.classes) if loaded.classes is not None else -1
    identity: dict[str, Any] = {"kind": kind, "sha256": loaded.sha256, "labels_column": labels_column,
                                "preprocess": [[step, dict(params)] for step, params in steps]}
    if reading.given():  # only then: a cube made before these options resumes under the same identity
        identity["reading"] = reading.given()
    identity.update(read_by)  # the reader, but for CSV and .npy (read so before readers were registered)
    if loaded.labels_reordered:  # a cube computed with the labels in the file's order is not this dataset
        identity["labels_matched"] = "by row name"
    return replace(spec, n=n, true_k=true_k, n_features=loaded.X.shape[1], data=loaded.X, labels=loaded.labels,
                   identity=identity, read=loaded.read, row_names=loaded.row_names,
                   classes=loaded.classes.classes if loaded.classes is not None else ())


def _memory(entry: Mapping[str, Any], key: str, spec: DatasetSpec, label_values: Any) -> Any:
    """An array or DataFrame given from Python, read like a file (its bytes, shape and dtype are its identity)."""
    data = _require(entry, "data", f"{key}.")
    if "path" in entry:
        raise ConfigError(f"{key}.path", "both 'path' and 'data' are given", "give one: a file path or an array")
    if entry.get("header") is not None:
        raise ConfigError(f"{key}.header", "an array has no header row", "remove 'header'")
    from ordercube.pipeline.data.datafiles import load_table
    from ordercube.pipeline.data.tables import Table, array_table, frame_table, label_set

    source = f"{key}.data"
    digest = hashlib.sha256()
    if isinstance(data, _pandas("DataFrame")):
        table: Table = frame_table(data, f"the DataFrame {source}")
        for label, column in data.items():
            values = column.to_numpy()
            raw = values.tobytes() if values.dtype.kind in "biuf" else "\x1f".join(map(str, values)).encode()
            digest.update(f"{label!r}|{column.dtype}|{len(values)}|".encode() + raw)
    elif isinstance(data, np.ndarray):
        data = _unmasked(data, source, "pass array.filled(numpy.nan) and add a preprocess step '- impute: "
                         "{strategy: column_mean}' or '- drop_missing: {}'")
        if data.ndim not in (1, 2) or data.dtype.kind not in "biuf" or 0 in data.shape:
            raise ConfigError(source, f"expected a 1-D or 2-D array of real numbers with rows, got a {data.ndim}-D "
                              f"{data.dtype} array of shape {data.shape}", "give e.g. X.astype(float) of shape "
                              "(n_samples, n_features)")
        table = array_table(data, f"the array {source}")
        digest.update(f"{data.shape}|{data.dtype.str}|".encode() + np.ascontiguousarray(data).tobytes())
    else:
        raise ConfigError(source, f"expected a NumPy 2-D array or a pandas DataFrame, got {type(data).__name__}",
                          "pass numpy.asarray(values, dtype=float) or a DataFrame (from Python only; a YAML config "
                          "reads a file: kind: file, path: FILE)")
    given = None
    if label_values is not None:
        values, how = _labels_in_row_order(label_values, data, f"{key}.labels")
        labels = label_set(values, f"{key}.labels", f"the labels of {key}", "row index")
        if labels.codes.shape[0] != table.cells.shape[0]:
            raise ConfigError(f"{key}.labels", f"{labels.codes.shape[0]} labels for the {table.cells.shape[0]} rows of "
                              f"{source}", "give one label per row")
        digest.update(b"labels|" + labels.codes.tobytes() + "\x1f".join(labels.classes).encode())
        given = (labels, how)
    return load_table(table, spec, key, source, digest.hexdigest(), given=given)


def _unmasked(array: np.ndarray, key: str, fix: str) -> np.ndarray:
    """A NumPy masked array's values when nothing is masked; refused otherwise (its hidden values would be read)."""
    if not isinstance(array, np.ma.MaskedArray):
        return array
    hidden = int(np.ma.getmaskarray(array).sum())
    if hidden:
        raise ConfigError(key, f"a masked array with {hidden} masked value{'s' if hidden > 1 else ''}: ordercube "
                          "would read every value, the masked ones too", fix)
    return np.ma.getdata(array)


def _labels_in_row_order(values: Any, data: Any, key: str) -> tuple[Any, str]:
    """Labels given from Python in the data's row order, and how they were matched when it needs saying: a pandas
    Series against a DataFrame by their index when both name their rows (an index other than 0..n-1), else by
    position (a Series whose index numbers the rows in increasing order, as filtering leaves it, too); a Series
    indexed by names or out of order for unnamed rows, masked labels and labels of more than one dimension are
    refused."""
    if isinstance(values, np.ndarray):
        values = _unmasked(values, key, "give every row a label (or leave the unlabelled rows out of the data too)")
        if values.ndim != 1:
            raise ConfigError(key, f"expected one label per row (a 1-D array), got an array of shape {values.shape}",
                              "pass labels.ravel() if it is one column, or one column of it")
    elif isinstance(values, (list, tuple)) and any(isinstance(value, (list, tuple, np.ndarray, dict, set))
                                                   for value in values):
        raise ConfigError(key, "expected one label per row, got a list holding sequences",
                          "give a flat list, array or Series of labels")
    series, frame = _pandas("Series"), _pandas("DataFrame")
    if not (series and isinstance(values, series)):
        return values, ""
    named, data_named = _named(values.index), isinstance(data, frame) and _named(data.index)
    if named and not data_named:
        if values.index.dtype.kind in "iu" and values.index.is_monotonic_increasing:  # rows filtered in order
            return values, "by position (the Series' index numbers its rows in increasing order)"  # df.loc[mask, "y"]
        raise ConfigError(key, "the labels Series is indexed by names or by numbers out of order, and the data's "
                          "rows have no names to match them to", "pass the data as a DataFrame indexed like the "
                          "Series, or labels.to_numpy() if they are in the data's row order")
    if not (named and data_named):
        return values, ""
    if values.index.equals(data.index):
        return values, "matched by index"
    if not (values.index.is_unique and data.index.is_unique and set(values.index) == set(data.index)):
        raise ConfigError(key, "the labels Series and the DataFrame have different index values, so the labels "
                          "cannot be matched to the rows", "give labels indexed like the DataFrame (labels.reindex("
                          "frame.index)), or a NumPy array in the DataFrame's row order")
    return values.reindex(data.index), "reordered to the DataFrame's rows by index"


def _named(index: Any) -> bool:
    """Whether a pandas index names rows (anything but the default 0, 1, ..., n - 1)."""
    return not (isinstance(index, _pandas("RangeIndex")) and index.start == 0 and index.step == 1)


def plain_entry(entry: Any) -> Any:
    """A dataset entry with arrays replaced by a short description: what the cube's config attribute stores."""
    label_types = (np.ndarray, list, tuple, *_pandas("Series", "Index", "Categorical"), *_extension_arrays())
    in_memory_labels = isinstance(entry, Mapping) and isinstance(entry.get("labels"), label_types)
    if not isinstance(entry, Mapping) or ("data" not in entry and not in_memory_labels):
        return entry
    out = dict(entry)
    data = entry.get("data")
    if isinstance(data, (np.ndarray, *_pandas("DataFrame"))):
        out["data"] = f"<{type(data).__name__} of shape {tuple(data.shape)} given from Python>"
    labels = entry.get("labels")
    if isinstance(labels, label_types):
        out["labels"] = f"<{len(labels)} labels given from Python>"
    return out


def distances_dataset(entry: Mapping[str, Any], key: str, name: str, n_raw: list[int | str], base: Path,
                      reader: Any = None) -> Any:
    """The ``DatasetSpec`` of a distance-matrix file."""
    for extra in ("preprocess", "columns", "exclude", "params"):
        if extra in entry:
            raise ConfigError(f"{key}.{extra}", f"a distances dataset takes no '{extra}': its columns are its objects",
                              "remove it (prepare the matrix before, or give the points as kind: file)")
    spec = _table_dataset({k: v for k, v in entry.items() if k not in ("kind", "reader")}, key, name, "file", n_raw,
                          base, OBJECTS, reader="distances")
    check_dissimilarities(spec.data, f"{key}.path", str(spec.path))
    size = spec.data.shape[0]
    read = spec.read.replace(f"{size} rows x {size} features", f"{size} x {size} dissimilarities", 1)
    return replace(spec, kind="distances", objects=OBJECTS, n_features=size, read=read,
                   identity={**spec.identity, "kind": "distances"})


#: The datasets of ordercube's readers of other objects than a table of points, by reader; any other reader's
#: (a plug-in's too) is a table of points (:func:`_file_dataset`).
_FILE_DATASETS = {"distances": distances_dataset, "edge_list": _edge_list_dataset, "image": _matrix_dataset,
                  "boolean_matrix": _matrix_dataset}
