"""Stored assignments (methods[i].assignments): what the cube holds is each trial's clusterings of the dataset's
items, written, checked, grown and resumed like every variable, and refused where it cannot mean anything."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
import zarr

from conftest import cli_in_process, write_config
from ordercube.pipeline.config.schemes import COMPRESSION_RATIO
from ordercube.pipeline.config.study import parse_config
from ordercube.pipeline.cube import assignments as stored
from ordercube.pipeline.cube.owner import Cube, open_cube
from ordercube.pipeline.errors import ConfigError
from ordercube.pipeline.run.sweep import Interrupted, run_sweep
from ordercube.pipeline.system import interrupts
from ordercube.tasks.algorithms import get_algorithm
from ordercube.tasks.cell import Status
from ordercube.tasks.criteria import CRITERIA, VARIABLES, Criterion
from ordercube.tasks.schemes import SCHEMES, Scheme
from ordercube.tasks.seeding import Purpose, label_id, stream
from ordercube.tasks.trial import TrialOutcome

ROWS = 90


def _rows() -> np.ndarray:
    """Iris-like rows: three groups of 30 in 4 features."""
    rng = np.random.default_rng(11)
    return np.concatenate([rng.normal(center, 0.6, size=(30, 4)) for center in (0.0, 3.0, 6.0)])


def _config(tmp_path: Path, *, out: str = "c.zarr", methods: list | None = None, **top) -> dict:
    np.savetxt(tmp_path / "rows.csv", _rows(), delimiter=",", header="a,b,c,d", comments="")
    return {"name": "a", "seed": 17, "k": [2, 3, 4], "resamples": 6, "n": [60, ROWS], "baseline_draws": 10,
            "out": str(tmp_path / out),
            "datasets": [{"name": "rows", "kind": "file", "path": "rows.csv"}],
            "methods": methods or [{"name": "km", "algorithm": "kmeans", "params": {"n_init": 2},
                                    "criteria": ["lange"], "assignments": True}], **top}


def _run(tmp_path: Path, raw: dict, **options) -> None:
    run_sweep(parse_config(raw, base=tmp_path), show_progress=False, echo=lambda line: None,
              **{"workers": 0, **options})


def _raw(path: Path) -> xr.Dataset:
    return xr.open_zarr(path, consolidated=False, mask_and_scale=False, decode_cf=False, chunks=None).load()


def _same_bits(one: Path, two: Path) -> None:
    """Every variable and coordinate but ``seconds``, bit for bit."""
    a, b = _raw(one), _raw(two)
    assert set(a.variables) == set(b.variables)
    for name in a.variables:
        if name == "seconds":
            continue
        order = {dim: np.sort(a[dim].values) for dim in ("n", "k", "trial") if dim in a[name].dims}
        left, right = a[name].sel(order), b[name].sel(order)
        assert left.dtype == right.dtype and np.array_equal(left.values, right.values, equal_nan=left.dtype.kind == "f"), name


def test_stored_halves_are_the_clusterings_recomputed_from_the_same_streams(tmp_path):
    raw = _config(tmp_path)
    _run(tmp_path, raw)
    cube = open_cube(tmp_path / "c.zarr").load()
    X = _rows()
    kmeans = get_algorithm("kmeans")
    params = kmeans.resolve({"n_init": 2})
    dataset_id, method_id = label_id("rows"), label_id("km")
    assert cube["assignment"].dtype == np.int16 and cube.sizes["part"] == 2 and cube.sizes["item"] == ROWS
    assert int(cube["items"].sel(dataset="rows")) == ROWS
    assert json.loads(cube.attrs[stored.ROLES_ATTRIBUTE]) == {"km": ["data", "data"]}
    for n in (60, ROWS):
        for trial in range(6):
            order = stream(17, Purpose.DRAW, dataset_id, n, trial).permutation(ROWS)
            first, second = order[: n // 2], order[n // 2 : 2 * (n // 2)]
            for k in (2, 3, 4):
                got = cube["assignment"].sel(dataset="rows", n=n, model="km", k=k, trial=trial).values
                for part, rows in enumerate((first, second)):
                    rng = stream(17, Purpose.FIT, dataset_id, n, trial, method_id, k, part)
                    labels = kmeans.cluster(X[rows], k, rng, **params)
                    assert np.array_equal(got[part, rows], labels)
                    undrawn = np.setdiff1d(np.arange(ROWS), rows)
                    assert (got[part, undrawn] == -1).all() and (got[part, rows] >= 0).all()
    assert (cube["status"] == Status.OK).all()


def test_the_same_bits_in_this_process_and_on_a_local_cluster_of_two(tmp_path):
    raw = _config(tmp_path, out="here.zarr")
    _run(tmp_path, raw)
    _run(tmp_path, {**raw, "out": str(tmp_path / "cluster.zarr")}, workers=2)
    _same_bits(tmp_path / "here.zarr", tmp_path / "cluster.zarr")


def test_growing_k_trials_n_and_a_larger_dataset_gives_the_one_shot_cube(tmp_path):
    small = _config(tmp_path, out="grown.zarr", k=[2, 3], resamples=3, n=[60])
    _run(tmp_path, small)
    bigger = np.concatenate([_rows(), _rows()[:30] + 9.0])
    np.savetxt(tmp_path / "more.csv", bigger, delimiter=",", header="a,b,c,d", comments="")
    grown = {**_config(tmp_path, out="grown.zarr"), "n": [60]}
    grown["datasets"] = [*grown["datasets"], {"name": "more", "kind": "file", "path": "more.csv", "n": [60, 120]}]
    _run(tmp_path, grown)
    _run(tmp_path, {**grown, "out": str(tmp_path / "once.zarr")})
    _same_bits(tmp_path / "grown.zarr", tmp_path / "once.zarr")
    cube = open_cube(tmp_path / "grown.zarr")
    assert cube.sizes["item"] == 120 and list(cube["items"].values) == [ROWS, 120]
    assert (cube["status"].sel(dataset="more", n=120) == Status.OK).all()


def test_a_run_interrupted_after_its_first_block_resumes_to_the_same_bits(tmp_path, monkeypatch):
    raw = _config(tmp_path, out="resumed.zarr", execution={"task_seconds": 1e-6})
    original = stored.record
    calls = []

    def record_then_stop(arrays, chunk):
        original(arrays, chunk)
        calls.append(chunk)
        interrupts.on_signal(2, None)  # Ctrl-C once the first block's assignments are on disk

    monkeypatch.setattr(stored, "record", record_then_stop)
    try:
        with pytest.raises(Interrupted):
            _run(tmp_path, raw)
    finally:
        interrupts.REQUESTED.clear()
    monkeypatch.setattr(stored, "record", original)
    counts = Cube.open(tmp_path / "resumed.zarr").count_cells()
    assert calls and 0 < counts["ok"] < counts["total"]
    _run(tmp_path, raw)
    _run(tmp_path, {**raw, "out": str(tmp_path / "once.zarr")})
    _same_bits(tmp_path / "resumed.zarr", tmp_path / "once.zarr")


def test_a_deleted_or_swapped_assignment_chunk_is_lost_and_computed_again(tmp_path):
    raw = _config(tmp_path)
    _run(tmp_path, raw)
    shutil.copytree(tmp_path / "c.zarr", tmp_path / "copy.zarr")
    chunks = tmp_path / "c.zarr" / "assignment" / "c" / "0" / "0" / "0"
    (chunks / "1" / "0" / "0" / "0").unlink()  # k = 3 of n = 60
    shutil.copyfile(chunks / "0" / "0" / "0" / "0", chunks / "2" / "0" / "0" / "0")  # k = 2's chunk at k = 4
    with pytest.warns(UserWarning, match="lost their values"):
        counts = Cube.open(tmp_path / "c.zarr").count_cells()
    assert counts["pending"] == 12 and counts["ok"] == counts["total"] - 12
    _run(tmp_path, raw)
    _same_bits(tmp_path / "c.zarr", tmp_path / "copy.zarr")


def test_with_the_assignment_manifest_deleted_a_swapped_chunk_is_not_trusted(tmp_path):
    """The assignments' manifest chunks deleted (the fix a damaged one's message gives): no assignment chunk is
    vouched for, so a chunk copied over another is not kept; the ok cells are pending and computed again."""
    raw = _config(tmp_path)
    _run(tmp_path, raw)
    shutil.copytree(tmp_path / "c.zarr", tmp_path / "copy.zarr")
    chunks = tmp_path / "c.zarr" / "assignment" / "c" / "0" / "0" / "0"
    shutil.copyfile(chunks / "0" / "0" / "0" / "0", chunks / "2" / "0" / "0" / "0")  # k = 2's chunk at k = 4
    shutil.rmtree(tmp_path / "c.zarr" / "integrity" / "assignment_crc" / "c")
    with pytest.warns(UserWarning, match="lost their values"):
        counts = Cube.open(tmp_path / "c.zarr").count_cells()
    assert counts["ok"] == 0 and counts["pending"] == counts["total"]
    _run(tmp_path, raw)
    _same_bits(tmp_path / "c.zarr", tmp_path / "copy.zarr")


def test_a_deleted_assignment_variable_is_made_again_and_its_cells_computed_again(tmp_path):
    raw = _config(tmp_path)
    _run(tmp_path, raw)
    shutil.copytree(tmp_path / "c.zarr", tmp_path / "copy.zarr")
    shutil.rmtree(tmp_path / "c.zarr" / "assignment")
    with pytest.warns(UserWarning, match="variable assignment missing"):
        counts = Cube.open(tmp_path / "c.zarr").count_cells()
    assert counts["pending"] == counts["total"] == 36
    _run(tmp_path, raw)
    _same_bits(tmp_path / "c.zarr", tmp_path / "copy.zarr")


def test_validate_states_a_size_the_written_cube_keeps_to(tmp_path):
    raw = _config(tmp_path, k=[2, 3, 4, 5, 6], resamples=20)
    config = write_config(tmp_path / "a.yaml", **raw)
    shown = cli_in_process("validate", str(config))
    assert shown.returncode == 0, shown.stderr
    line = next(line for line in shown.stdout.splitlines() if "assignments:" in line)
    cells = 2 * 5 * 20
    assert f"{cells} cells x 2 parts x {ROWS} items" in line
    raw_bytes = cells * 2 * ROWS * 2
    estimate = raw_bytes / COMPRESSION_RATIO
    _run(tmp_path, raw)
    folder = tmp_path / "c.zarr" / "assignment" / "c"
    written = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
    # the estimate is within a factor 2 of what zstd made of it (measured 5.2:1 on halves of 150 rows)
    assert estimate / 2 <= written <= estimate * 2, (estimate, written)


def test_a_cube_without_assignments_is_unchanged_and_its_values_match(tmp_path):
    plain = [{"name": "km", "algorithm": "kmeans", "params": {"n_init": 2}, "criteria": ["lange"]}]
    _run(tmp_path, _config(tmp_path, out="plain.zarr", methods=plain))
    _run(tmp_path, _config(tmp_path, out="stored.zarr"))
    group = zarr.open_group(tmp_path / "plain.zarr", mode="r")
    assert not any(name in group for name in (stored.ASSIGNMENT, stored.PART, stored.ITEM, stored.ITEMS,
                                              stored.ASSIGNMENT_MANIFEST))
    assert stored.ROLES_ATTRIBUTE not in group.attrs
    identity = json.loads(str(group.attrs["ordercube_identity"]))["methods"]["km"]
    assert set(identity) == {"algorithm", "params", "predictor", "criteria"}
    a, b = _raw(tmp_path / "plain.zarr"), _raw(tmp_path / "stored.zarr")
    for name in ("lange", "status", "reason", "lange_random"):
        assert np.array_equal(a[name].values, b[name].values, equal_nan=a[name].dtype.kind == "f"), name


def _reads_assignments(name: str = "agree_share") -> Criterion:
    """A criterion reduced from stored assignments: the share of items drawn into both halves (always 0)."""
    def reduce(clusterings, **options):
        return {name: np.array([float(((clusterings.data[k] >= 0).sum(axis=0) > 1).mean()) for k in clusterings.ks])}

    return Criterion(name=name, min_k=2, description="a test reduction", reads="assignments", reduce=reduce)


@pytest.fixture
def reducer(monkeypatch):
    criterion = _reads_assignments()
    monkeypatch.setitem(CRITERIA, criterion.name, criterion)
    return criterion.name


def test_adding_a_reduced_criterion_to_a_cube_that_stored_assignments_computes_nothing(tmp_path, reducer):
    raw = _config(tmp_path)
    _run(tmp_path, raw)
    before = {path: path.read_bytes() for path in (tmp_path / "c.zarr").rglob("*") if path.is_file()
              and path.name != "zarr.json"}
    lines: list[str] = []
    more = _config(tmp_path)
    more["methods"][0]["criteria"] = ["lange", reducer]
    config = parse_config(more, base=tmp_path)
    assert config.variables == ["lange"] and config.reduced == [reducer] and config.methods[0].criteria == ("lange",)
    summary = run_sweep(config, workers=0, show_progress=False, echo=lines.append)
    assert summary.computed == 0 and any("nothing to compute" in line for line in lines)
    after = {path: path.read_bytes() for path in (tmp_path / "c.zarr").rglob("*") if path.is_file()
             and path.name != "zarr.json"}
    assert after == before  # not one chunk written
    plan = json.loads(str(zarr.open_group(tmp_path / "c.zarr", mode="r", use_consolidated=False).attrs["ordercube_plan"]))
    assert plan["methods"] == {"km": ["lange"]} and plan["reduced"] == {"km": {reducer: {}}}
    assert reducer not in VARIABLES and reducer not in open_cube(tmp_path / "c.zarr")


def test_a_reduced_criterion_alone_turns_assignments_on_by_default(tmp_path, reducer):
    raw = _config(tmp_path, methods=[{"name": "km", "algorithm": "kmeans", "criteria": [reducer]}])
    config = parse_config(raw, base=tmp_path)
    assert config.methods[0].assignments and config.defaults["methods[0].assignments"] is True
    assert config.variables == [] and config.methods[0].identity["criteria"] == []


def _refusal(tmp_path: Path, raw: dict) -> str:
    done = cli_in_process("validate", str(write_config(tmp_path / "bad.yaml", **raw)))
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    return done.stderr


def test_assignments_on_fresh_synthetic_points_are_refused_naming_key_dataset_and_fix(tmp_path, reducer):
    raw = _config(tmp_path, methods=[{"name": "km", "algorithm": "kmeans", "criteria": ["lange"], "assignments": True},
                                     {"name": "km2", "algorithm": "kmeans", "criteria": [reducer]}])
    raw["datasets"].append({"name": "gauss", "kind": "lange_gaussians3"})
    said = _refusal(tmp_path, raw)
    assert said.count("error: methods[") == 2  # both, at once
    assert "methods[0].assignments: true, and dataset 'gauss' (datasets[1], kind lange_gaussians3) draws fresh points" in said
    assert f"methods[1].assignments: true (the default: {reducer} read assignments)" in said
    assert "store assignments on data of fixed rows" in said


def test_refusals_of_scheme_keys_name_key_value_and_fix(tmp_path, reducer, monkeypatch):
    said = _refusal(tmp_path, _config(tmp_path, methods=[{"name": "km", "algorithm": "kmeans", "scheme": "bootstrap"}]))
    assert f"methods[0].scheme: unknown scheme 'bootstrap'; expected one of {sorted(SCHEMES)}" in said
    said = _refusal(tmp_path, _config(tmp_path, methods=[{"name": "km", "algorithm": "kmeans", "scheme": "halves",
                                                          "scheme_params": {"p_item": 0.5}}]))
    assert "methods[0].scheme_params.p_item: unknown parameter 'p_item'" in said
    said = _refusal(tmp_path, _config(tmp_path, methods=[{"name": "km", "algorithm": "kmeans",
                                                          "criteria": ["lange", reducer], "assignments": False}]))
    assert (f"methods[0].assignments: false, and {reducer} is computed from stored assignments; remove 'assignments: "
            f"false' (or drop {reducer} from methods[0].criteria)") in said
    said = _refusal(tmp_path, _config(tmp_path, methods=[{"name": "km", "algorithm": "kmeans", "assignments": "yes"}]))
    assert "methods[0].assignments: expected true or false, got 'yes'" in said


def _tiny_consensus(algorithm, spec, source):
    """Each trial clusters every item once per k (one part): a scheme that gives assignments and no halves."""
    items = source.items

    def compute_trial(trial: int) -> TrialOutcome:
        labels = {k: algorithm.cluster(source.X, k, stream(spec.root_seed, Purpose.FIT, spec.dataset_id, spec.n, trial,
                                                           spec.method_id, k, 0), **dict(spec.algorithm_params))
                  for k in spec.ks}
        return TrialOutcome(values={}, assignments={k: labels[k].astype(np.int16).reshape(1, items) for k in spec.ks})

    return compute_trial


def _tiny_refusal(objects, params, data, n):
    if params["share"] < 1.0 and n > 60:
        return f"methods[].scheme_params.share: a share below 1 needs n <= 60, got n = {n}; lower n or set share: 1"
    return None


@pytest.fixture
def tiny_scheme(monkeypatch):
    from ordercube.tasks.params import number

    scheme = Scheme(name="tiny", description="every item, once per k", runner=_tiny_consensus, gives=("assignments",),
                    defaults={"share": 1.0}, ranges={"share": number(0.0, 1.0, low_open=True)},
                    part_roles=lambda params: ("data",), fits=lambda params: 2.0, refusal=_tiny_refusal)
    monkeypatch.setitem(SCHEMES, "tiny", scheme)  # register_scheme is another part's: the registry itself here
    return scheme


def test_a_scheme_without_labels_refuses_label_criteria_listing_what_fits(tmp_path, reducer, tiny_scheme):
    said = _refusal(tmp_path, _config(tmp_path, methods=[{"name": "km", "algorithm": "kmeans", "scheme": "tiny",
                                                          "criteria": ["lange", "gap", reducer]}]))
    assert "methods[0].criteria[0]: lange reads 'labels', and the scheme 'tiny' gives ['assignments']" in said
    from ordercube.tasks.capabilities import fitting_criteria

    fitting = fitting_criteria(None, get_algorithm("kmeans").with_scheme("tiny"))
    assert reducer in fitting and "lange" not in fitting and "gap" not in fitting
    assert "methods[0].criteria[1]: gap reads 'labels'" in said and f"use one of {fitting} with scheme 'tiny'" in said
    said = _refusal(tmp_path, _config(tmp_path, methods=[{"name": "km", "algorithm": "kmeans", "scheme": "tiny",
                                                          "scheme_params": {"share": 2}, "criteria": [reducer]}]))
    assert "methods[0].scheme_params.share:" in said and "2" in said
    said = _refusal(tmp_path, _config(tmp_path, methods=[{"name": "km", "algorithm": "kmeans", "scheme": "tiny",
                                                          "scheme_params": {"share": 0.5}, "criteria": [reducer]}]))
    assert ("methods[0].scheme_params.share: dataset 'rows' (n = 90): a share below 1 needs n <= 60, got n = 90; "
            "lower n or set share: 1") in said
    said = _refusal(tmp_path, _config(tmp_path, methods=[{"name": "nn", "algorithm": "knn", "scheme": "tiny",
                                                          "criteria": ["loo_cv"]}]))
    assert "methods[0].scheme: 'tiny' is a resampling scheme of clustering algorithms, and 'knn' is" in said


def test_a_scheme_of_one_part_stores_its_roles_and_its_fits_count_in_the_cost(tmp_path, reducer, tiny_scheme):
    from ordercube.pipeline.run.sweep import fit_work

    raw = _config(tmp_path, n=[ROWS], methods=[{"name": "km", "algorithm": "kmeans", "params": {"n_init": 1},
                                                "scheme": "tiny", "criteria": [reducer]}])
    config = parse_config(raw, base=tmp_path)
    method = config.methods[0]
    assert method.assignments and method.predictor == "none" and fit_work(method) == 2.0
    assert method.identity["scheme"] == "tiny" and method.identity["scheme_params"] == {"share": 1.0}
    _run(tmp_path, raw)
    cube = open_cube(tmp_path / "c.zarr").load()
    assert cube.sizes["part"] == 1 and json.loads(cube.attrs[stored.ROLES_ATTRIBUTE]) == {"km": ["data"]}
    assert (cube["assignment"] >= 0).all() and (cube["status"] == Status.OK).all()
    assert set(cube.data_vars) == {"assignment", "status", "reason", "seconds", "lange_random"}


def test_an_interrupted_growth_that_added_assignments_is_rolled_back(tmp_path, monkeypatch):
    from ordercube.pipeline.cube import growth

    plain = [{"name": "km", "algorithm": "kmeans", "params": {"n_init": 2}, "criteria": ["lange"]}]
    _run(tmp_path, _config(tmp_path, methods=plain))
    more = _config(tmp_path, methods=[*plain, {"name": "km2", "algorithm": "kmeans", "criteria": ["lange"],
                                               "assignments": True}])

    def killed(group):
        raise KeyboardInterrupt  # as if the process died right after the arrays were made

    monkeypatch.setattr(growth, "grow_assignment_manifest", killed)
    with pytest.raises(KeyboardInterrupt):
        _run(tmp_path, more)
    monkeypatch.undo()
    group = zarr.open_group(tmp_path / "c.zarr", mode="r", use_consolidated=False)
    assert stored.ASSIGNMENT in group  # the growth was cut short
    notes = Cube.open_for(tmp_path / "c.zarr", parse_config(more, base=tmp_path), writable=True).repair()
    assert any("rolled back" in note for note in notes)
    group = zarr.open_group(tmp_path / "c.zarr", mode="r", use_consolidated=False)
    assert not any(name in group for name in (stored.ASSIGNMENT, stored.ITEMS, stored.ASSIGNMENT_MANIFEST))
    _run(tmp_path, more)
    _run(tmp_path, {**more, "out": str(tmp_path / "once.zarr")})
    _same_bits(tmp_path / "c.zarr", tmp_path / "once.zarr")
    assert os.path.isdir(tmp_path / "c.zarr" / "integrity" / "assignment_crc")


def test_a_chunk_of_assignments_over_the_limit_is_refused_with_the_trials_that_fit():
    raw = {"name": "big", "seed": 1, "k": [2], "resamples": 1000, "n": [100],
           "datasets": [{"name": "many", "data": np.arange(200_000.0).reshape(-1, 1)}],
           "methods": [{"name": "km", "algorithm": "kmeans", "criteria": ["lange"], "assignments": True}],
           "execution": {"trials_per_chunk": 1000}}
    with pytest.raises(ConfigError) as refused:
        parse_config(raw)
    said = str(refused.value)
    assert said.startswith("methods[0].assignments: a chunk of its stored assignments (1,000 trials x 2 clusterings x "
                           "200,000 items, int16) takes ~762.9 MiB") and "at most 671" in said
    parse_config({**raw, "execution": {"trials_per_chunk": 671}})


def test_an_ok_cell_whose_trial_gave_no_assignments_fails_and_stores_none(monkeypatch):
    from ordercube.tasks.cell import BlockSpec, run_block
    from ordercube.tasks.datasets import ArraySource

    def forgetful(algorithm, spec, source):
        def compute_trial(trial):
            given = {k: np.zeros((1, source.items), dtype=np.int16) for k in spec.ks if k != 3}
            return TrialOutcome(values={}, assignments=given)
        return compute_trial

    monkeypatch.setitem(SCHEMES, "forgetful", Scheme(name="forgetful", description="", runner=forgetful,
                                                     gives=("assignments",), part_roles=lambda params: ("data",)))
    spec = BlockSpec(root_seed=1, dataset_id=2, n=40, method_id=3, algorithm="kmeans", algorithm_params=(),
                     predictor="none", criteria=(), ks=(2, 3), trials=(0, 1), scheme="forgetful", assignments=True)
    result = run_block(spec, ArraySource(_rows()))
    assert result.assignments.shape == (2, 2, 1, ROWS)
    assert (result.status[0] == Status.OK).all() and (result.assignments[0] == 0).all()
    assert (result.status[1] == Status.FAILED).all() and (result.assignments[1] == -1).all()
    assert "no assignments of shape (1, 90) at k=3 (got none)" in result.reason[1, 0]
