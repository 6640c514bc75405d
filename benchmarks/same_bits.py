"""Same bits: every shipped config's cube before and after a change, compared variable by variable.

A change of structure (moved modules, split records, a new engine loop) must not move a single bit of
any cube: every data variable and coordinate except ``seconds`` (wall-clock time, the one variable that
is not reproducible) is compared bit for bit. Only the installed ``ordercube`` command is used to make
cubes, so the same script runs on the code before and after the change, whatever the packages' layout.

    python benchmarks/same_bits.py run --out DIR [--shrink] [--only NAME ...] [--like DIR] [--interrupt NAME]
    python benchmarks/same_bits.py compare BEFORE_DIR AFTER_DIR [--only NAME ...] [--ignore-attr KEY ...]
    python benchmarks/same_bits.py legacy BEFORE_DIR [--only NAME ...]

``run`` writes ``DIR/<config>.zarr`` for every ``configs/*.yaml`` (or the ``--only`` ones), the config it
actually ran as ``DIR/configs/<config>.yaml`` and the wall-clock seconds of each run in
``DIR/timings.json``. ``--shrink`` reduces the configs listed in :data:`HEAVY` (full runs of more than a
few minutes on two shared cores) by the rule of :func:`shrink`, printed for each. ``--like BEFORE_DIR``
runs exactly the configs that an earlier ``run`` stored, so the cubes of both sides come from the same
input whatever the shrink rule becomes. ``--interrupt NAME`` also leaves ``DIR/NAME.interrupted.zarr``: the
same run stopped by SIGINT (Ctrl-C) after its first chunks, for ``legacy`` to resume.

Across a change: ``run --out BEFORE --shrink`` on the old code, ``run --out AFTER --like BEFORE`` on the new
one, then ``compare BEFORE AFTER`` and ``legacy BEFORE``.

``compare`` opens both cubes of every config with xarray (raw values: no CF decoding, so fill values and
dtypes are compared as stored) and prints a table config x (variables equal, differing, largest absolute
difference); it exits 1 on any difference of a variable, a coordinate or an attribute (attributes that
record software versions or times excepted, see :data:`IGNORED_ATTRS`).

``legacy`` checks that cubes written by older code still open, resume and report with the installed one:
the format 2 fixture (``tests/data/format2``), any other fixture cube under ``tests/`` with a config
beside it, and the cubes of BEFORE_DIR. A complete cube is resumed by ``ordercube run``: nothing may change,
``seconds`` included (nothing was computed); an interrupted one is finished and must then equal the
complete cube of BEFORE_DIR bit for bit. Each is also read by ``ordercube status --json`` and ``ordercube
report``. The cubes are copied first: BEFORE_DIR and the fixtures are never written.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

REPO = Path(__file__).resolve().parents[1]
CONFIGS = REPO / "configs"
TESTS = REPO / "tests"
FORMAT2 = TESTS / "data" / "format2"

#: Shipped configs whose full run takes more than three minutes on two shared cores, with the estimate:
#: (seconds of a one-resample run - 5 s of start-up) x resamples, measured on 2026-11-25 at a load of ~10 (the
#: code of commit d66b8e9; numba's first compilation included, so an upper bound). ``--shrink`` reduces these
#: and only these; the others run as shipped (then: frank_kmeans 8 s, quickstart 11 s, yeast_cdc28 130 s).
#: Shrunk, all fourteen took 12.5 minutes, 9 of them lange2002_table1 (path-based clustering of 400 points
#: for Gap's and Clest's references at every k).
HEAVY: dict[str, str] = {
    "daudin_colon": "12.2 s for one resample of 500: ~1 h",
    "daudin_kearns": "21.9 s for one of 100: ~28 min",
    "frank_bmf": "42.5 s for one of 20: ~12 min",
    "frank_correlation": "30.1 s for one of 20: ~8 min",
    "frank_gmm": "58.3 s for one of 100 (numba compilation included): over 10 min",
    "frank_rbac": "15.7 s for one of 20: ~3.5 min",
    "frank_svd_image": "18.1 s for one of 20: ~4.5 min",
    "lange2002_table1": "169.4 s for one of 20: ~55 min",
    "lange_gene_expression": "20.9 s for one of 20: ~5 min",
    "shamir_tishby2007_fig1": "16.7 s for one of 1000: ~3 h",
    "shamir_tishby2007_fig2": "38.8 s for one of 100: ~55 min",
}

#: The caps of :func:`shrink`: at most this many resamples, sample sizes, values of k, values of each swept
#: parameter, and random-labelling draws.
CAPS = {"resamples": 3, "n": 2, "k": 4, "sweep": 2, "baseline_draws": 50}

#: Attributes that record the software or the moment rather than the computation: never compared.
IGNORED_ATTRS = frozenset({"ordercube_versions", "source", "ordercube_created", "ordercube_updated", "date_created",
                           "date_modified", "history"})
SKIPPED_VARIABLES = frozenset({"seconds"})
TIMEOUT = 3600.0


# --------------------------------------------------------------------------------------------------- shrink


def _spread(values: Sequence[Any], cap: int) -> list[Any]:
    """At most ``cap`` of ``values``, evenly spaced, the first and the last always kept (the grid's ends)."""
    values = list(values)
    if len(values) <= cap:
        return values
    if cap == 1:
        return values[:1]
    picks = sorted({round(i * (len(values) - 1) / (cap - 1)) for i in range(cap)})
    return [values[i] for i in picks]


def _k_list(value: Any) -> list[int]:
    """A config's ``k`` as a list: ``[2, 3]`` as is, ``{from, to, step}`` expanded as the config reader does."""
    if isinstance(value, Mapping):
        return list(range(int(value["from"]), int(value["to"]) + 1, int(value.get("step", 1))))
    return list(value)


def _n_list(value: Any) -> list[Any]:
    """A config's ``n`` as a list: a single value, a list, or ``{from, to, factor}`` expanded (``all`` kept)."""
    if isinstance(value, Mapping):
        start, stop, factor = int(value["from"]), int(value["to"]), int(value.get("factor", 2))
        out = [start]
        while out[-1] * factor <= stop:
            out.append(out[-1] * factor)
        return out
    return list(value) if isinstance(value, list) else [value]


def _smallest_n(value: Any, cap: int) -> list[Any]:
    """The ``cap`` smallest sample sizes (``all``, the whole file, counts as the largest): large n is the cost."""
    values = _n_list(value)
    numbers = sorted(v for v in values if v != "all")
    kept = numbers[:cap]
    if len(kept) < cap and "all" in values:
        kept.append("all")
    return kept


def shrink(raw: Mapping[str, Any], caps: Mapping[str, int] = CAPS) -> tuple[dict[str, Any], list[str]]:
    """A reduced copy of a parsed config and the list of what was reduced (empty: the config is unchanged).

    The rule, deterministic and applied to the YAML as written: ``resamples`` at most ``caps["resamples"]``;
    each ``n`` list (top level and per dataset) its ``caps["n"]`` smallest values (the cost grows with n;
    ``all`` counts as the largest); ``k`` at most ``caps["k"]`` values evenly spread from the first to the last
    (both ends kept, so infeasible large k stay in the grid); each swept parameter at most ``caps["sweep"]``
    values spread the same way; ``baseline_draws`` (default 200) at most ``caps["baseline_draws"]``. Names,
    seeds, datasets, methods and criteria are untouched, so every code path of the config still runs.
    ``published`` (a paper's k̂ at the full grid) is dropped when anything else was reduced.
    """
    out = json.loads(json.dumps(raw))  # a deep copy of plain YAML data
    notes: list[str] = []
    resamples = out.get("resamples")
    if isinstance(resamples, int) and resamples > caps["resamples"]:
        out["resamples"] = caps["resamples"]
        notes.append(f"resamples {resamples} -> {caps['resamples']}")
    if "k" in out:
        ks = _k_list(out["k"])
        kept = _spread(ks, caps["k"])
        if kept != ks:
            out["k"] = kept
            notes.append(f"k {len(ks)} values -> {kept}")
    holders: list[tuple[str, dict[str, Any]]] = [("", out)]
    holders += [(f"datasets[{i}].", d) for i, d in enumerate(out.get("datasets", [])) if isinstance(d, dict)]
    for where, holder in holders:
        if "n" in holder:
            before = _n_list(holder["n"])
            kept_n = _smallest_n(holder["n"], caps["n"])
            if kept_n != before:
                holder["n"] = kept_n
                notes.append(f"{where}n {before} -> {kept_n}")
        sweep = holder.get("sweep") if where else None
        if isinstance(sweep, dict):
            for parameter, values in sweep.items():
                if isinstance(values, list) and len(values) > caps["sweep"]:
                    sweep[parameter] = _spread(values, caps["sweep"])
                    notes.append(f"{where}sweep.{parameter} {len(values)} values -> {sweep[parameter]}")
    draws = out.get("baseline_draws", 200)
    if isinstance(draws, int) and draws > caps["baseline_draws"]:
        out["baseline_draws"] = caps["baseline_draws"]
        notes.append(f"baseline_draws {draws} -> {caps['baseline_draws']}")
    if notes and "published" in out:
        del out["published"]
        notes.append("published dropped")
    return out, notes


# --------------------------------------------------------------------------------------------------- run


def ordercube_command() -> str:
    """The installed ``ordercube`` console script: beside this Python first (a venv), else on PATH."""
    beside = Path(sys.executable).with_name("ordercube")
    if beside.exists():
        return str(beside)
    found = shutil.which("ordercube")
    if found is None:
        raise SystemExit("same_bits: no 'ordercube' command beside " f"{sys.executable} nor on PATH; install the "
                         "package (pip install -e .) in this environment")
    return found


def _config_names(folder: Path, only: Sequence[str] | None) -> list[str]:
    names = sorted(p.stem for p in folder.glob("*.yaml"))
    if only:
        unknown = sorted(set(only) - set(names))
        if unknown:
            raise SystemExit(f"same_bits: --only {unknown}: no such config in {folder}; choose from {names}")
        names = [n for n in names if n in only]
    return names


@dataclass
class Placed:
    """A config written next to its original (relative dataset paths resolve the same) under a hidden name."""

    path: Path
    notes: list[str] = field(default_factory=list)

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _place(original: Path, raw: Mapping[str, Any]) -> Placed:
    for stale in original.parent.glob(".same_bits.*.yml"):  # left by a run that was killed
        pid = stale.suffixes[-2].lstrip(".") if len(stale.suffixes) >= 2 else ""
        if pid.isdigit() and not _alive(int(pid)):
            stale.unlink(missing_ok=True)
    path = original.with_name(f".same_bits.{original.stem}.{os.getpid()}.yml")  # not matched by configs/*.yaml
    path.write_text(f"# written by benchmarks/same_bits.py from {original.name}; removed after the run\n"
                    + yaml.safe_dump(dict(raw), sort_keys=False, allow_unicode=True))
    return Placed(path)


def _run_one(ordercube: str, config: Path, cube: Path, workers: int | None, *,
             interrupt_after_chunks: int | None = None) -> tuple[int, float, str]:
    """``ordercube run CONFIG --out CUBE``: its exit code, wall-clock seconds and output's tail. With
    ``interrupt_after_chunks``, SIGINT (a user's Ctrl-C) once that many chunks of ``status`` are on disk."""
    command = [ordercube, "run", str(config), "--out", str(cube), "--no-progress"]
    if workers is not None:
        command += ["--workers", str(workers)]
    started = time.perf_counter()
    with tempfile.TemporaryFile("w+") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, text=True, start_new_session=True)
        try:
            if interrupt_after_chunks is None:
                process.wait(timeout=TIMEOUT)
            else:
                while process.poll() is None:
                    chunks = cube / "status" / "c"
                    if chunks.exists() and sum(1 for p in chunks.rglob("*") if p.is_file()) >= interrupt_after_chunks:
                        os.killpg(process.pid, signal.SIGINT)
                        process.wait(timeout=300)
                        break
                    time.sleep(0.05)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        seconds = time.perf_counter() - started
        log.seek(0)
        tail = log.read()[-4000:]
    return process.returncode, seconds, tail


def command_run(args: argparse.Namespace) -> int:
    ordercube = ordercube_command()
    out = Path(args.out).resolve()
    configs_folder = Path(args.configs).resolve()
    (out / "configs").mkdir(parents=True, exist_ok=True)
    stored = Path(args.like).resolve() / "configs" if args.like else None
    names = _config_names(stored if stored else configs_folder, args.only)
    timings_path = out / "timings.json"
    timings = json.loads(timings_path.read_text()) if timings_path.exists() else {}
    failures = 0
    print(f"same_bits run: {len(names)} configs with {ordercube} into {out}")
    for name in names:
        original = configs_folder / f"{name}.yaml"
        if not original.exists():
            raise SystemExit(f"same_bits: {original} is missing (the config that {stored} holds for {name}); "
                             "run from the same repository")
        raw = yaml.safe_load((stored / f"{name}.yaml").read_text() if stored else original.read_text())
        notes: list[str] = []
        if stored is None and args.shrink and (name in HEAVY or args.shrink_all):
            raw, notes = shrink(raw)
        (out / "configs" / f"{name}.yaml").write_text(yaml.safe_dump(raw, sort_keys=False, allow_unicode=True))
        cube = out / f"{name}.zarr"
        if cube.exists():
            shutil.rmtree(cube)
        placed = _place(original, raw)
        try:
            code, seconds, tail = _run_one(ordercube, placed.path, cube, args.workers)
            interrupted = None
            if args.interrupt and name in args.interrupt and code == 0:
                partial = out / f"{name}.interrupted.zarr"
                if partial.exists():
                    shutil.rmtree(partial)
                interrupted = _run_one(ordercube, placed.path, partial, args.workers, interrupt_after_chunks=2)[0]
        finally:
            placed.remove()
        how = ("shrunk: " + "; ".join(notes)) if notes else ("as stored in " + str(stored) if stored else "full")
        print(f"  {name:<28} {seconds:8.1f} s  exit {code}  {how}", flush=True)
        if interrupted is not None:
            print(f"  {name:<28} interrupted copy: exit {interrupted} (130: stopped by SIGINT; 0: it finished first)")
        if code != 0:
            failures += 1
            print("    " + tail.replace("\n", "\n    "))
        timings[name] = {"seconds": round(seconds, 2), "exit": code, "shrunk": bool(notes), "rule": notes,
                         "workers": args.workers}
        timings_path.write_text(json.dumps(timings, indent=1, sort_keys=True) + "\n")
    return 1 if failures else 0


# --------------------------------------------------------------------------------------------------- compare


def open_raw(path: Path):
    """A cube's stored values as xarray reads them without CF decoding (fill values not masked, dtypes kept)."""
    import xarray as xr

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a cube may lack consolidated metadata; that is not what is compared
        return xr.open_zarr(path, decode_cf=False, mask_and_scale=False, chunks=None).load()


def _bits(values: np.ndarray) -> np.ndarray:
    """Fixed-width numbers as unsigned integers of the same width (bit patterns), others as they are."""
    if values.dtype.kind in "fciub" and values.dtype.itemsize in (1, 2, 4, 8, 16):
        if values.dtype.kind == "c":
            return np.ascontiguousarray(values).view(f"u{values.dtype.itemsize // 2}")
        return np.ascontiguousarray(values).view(f"u{values.dtype.itemsize}")
    return values


@dataclass
class Difference:
    """How one variable or coordinate of two cubes differs (``what`` empty: bit for bit the same)."""

    name: str
    what: str = ""
    max_abs: float = 0.0
    cells: int = 0


def compare_arrays(name: str, a: Any, b: Any) -> Difference:
    """Two ``xarray.DataArray``: same dims, shape, dtype and bits (NaN equal to the same NaN)."""
    if a.dims != b.dims:
        return Difference(name, f"dims {a.dims} vs {b.dims}")
    if a.shape != b.shape:
        return Difference(name, f"shape {a.shape} vs {b.shape}")
    if a.dtype != b.dtype:
        return Difference(name, f"dtype {a.dtype} vs {b.dtype}")
    x, y = np.asarray(a.values), np.asarray(b.values)
    same = _bits(x) == _bits(y)
    if x.dtype.kind == "c":
        same = same.reshape(*x.shape, 2).all(axis=-1)
    if bool(np.all(same)):
        return Difference(name)
    cells = int(np.size(same) - np.count_nonzero(same))
    largest = math.nan
    if x.dtype.kind in "fiub":
        with np.errstate(invalid="ignore", over="ignore"):
            gap = np.abs(x.astype(np.float64) - y.astype(np.float64))
        nan_mismatch = np.isnan(x.astype(np.float64)) != np.isnan(y.astype(np.float64))
        largest = math.inf if nan_mismatch.any() else float(np.nanmax(np.where(same, 0.0, gap)))
    return Difference(name, f"{cells} of {np.size(same)} values differ", largest, cells)


def _attr_differences(where: str, a: Mapping[str, Any], b: Mapping[str, Any], ignored: frozenset[str]) -> list[str]:
    out = []
    for key in sorted(set(a) | set(b)):
        if key in ignored:
            continue
        if key not in a or key not in b:
            out.append(f"{where}{key}: only in {'after' if key not in a else 'before'}")
        elif json.dumps(a[key], sort_keys=True, default=str) != json.dumps(b[key], sort_keys=True, default=str):
            out.append(f"{where}{key}: {_short(a[key])} vs {_short(b[key])}")
    return out


def _short(value: Any, width: int = 60) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= width else text[:width - 3] + "..."


@dataclass
class CubeComparison:
    """One config's cubes compared: the variables and coordinates, and the attributes."""

    name: str
    compared: list[Difference] = field(default_factory=list)
    attributes: list[str] = field(default_factory=list)
    missing: str = ""

    @property
    def differing(self) -> list[Difference]:
        return [d for d in self.compared if d.what]

    @property
    def equal(self) -> bool:
        return not self.missing and not self.differing and not self.attributes


def compare_cubes(before: Path, after: Path, ignored_attrs: Iterable[str] = ()) -> CubeComparison:
    """Every data variable and coordinate of two cubes but ``seconds``, bit for bit, and their attributes."""
    ignored = IGNORED_ATTRS | frozenset(ignored_attrs)
    result = CubeComparison(before.name.removesuffix(".zarr"))
    for side, path in (("before", before), ("after", after)):
        if not path.exists():
            result.missing = f"no cube {path} ({side})"
            return result
    a, b = open_raw(before), open_raw(after)
    result.attributes += _attr_differences("", a.attrs, b.attrs, ignored)
    names_a = {str(n) for n in [*a.data_vars, *a.coords]} - SKIPPED_VARIABLES
    names_b = {str(n) for n in [*b.data_vars, *b.coords]} - SKIPPED_VARIABLES
    for name in sorted(names_a ^ names_b):
        result.compared.append(Difference(name, f"only in {'before' if name in names_a else 'after'}"))
    for name in sorted(names_a & names_b):
        result.compared.append(compare_arrays(name, a[name].variable, b[name].variable))
        result.attributes += _attr_differences(f"{name}.", a[name].attrs, b[name].attrs, ignored)
    return result


def print_table(results: Sequence[CubeComparison]) -> None:
    print(f"{'config':<28} {'equal':>5} {'differ':>6} {'max |diff|':>11}  differing (variables, attributes)")
    for r in results:
        if r.missing:
            print(f"{r.name:<28} {'-':>5} {'-':>6} {'-':>11}  {r.missing}")
            continue
        differing = r.differing
        largest = max((d.max_abs for d in differing), default=0.0)
        names = ", ".join(d.name for d in differing)
        attrs = f"; {len(r.attributes)} attribute(s)" if r.attributes else ""
        print(f"{r.name:<28} {len(r.compared) - len(differing):>5} {len(differing):>6} {largest:>11.3g}  "
              f"{names or '-'}{attrs}")
    for r in results:
        for d in r.differing:
            print(f"  {r.name}: {d.name}: {d.what}" + (f", max |diff| {d.max_abs:.3g}" if d.cells else ""))
        for line in r.attributes:
            print(f"  {r.name}: attribute {line}")


def command_compare(args: argparse.Namespace) -> int:
    before, after = Path(args.before), Path(args.after)
    names = sorted({p.name.removesuffix(".zarr") for d in (before, after) for p in d.glob("*.zarr")
                    if not p.name.endswith(".interrupted.zarr")})
    if args.only:
        names = [n for n in names if n in args.only] + [n for n in args.only if n not in names]
    if not names:
        raise SystemExit(f"same_bits: no cube (*.zarr) in {before} nor {after}")
    results = [compare_cubes(before / f"{n}.zarr", after / f"{n}.zarr", args.ignore_attr) for n in names]
    print_table(results)
    bad = [r.name for r in results if not r.equal]
    summary = f"{len(results) - len(bad)} of {len(results)} configs identical"
    print(summary + (f"; not identical: {', '.join(bad)}" if bad else ""))
    keys = sorted({line.split(":", 1)[0].rsplit(".", 1)[-1] for r in results for line in r.attributes})
    if keys and not any(r.differing or r.missing for r in results):
        print(f"only attributes differ ({', '.join(keys)}): where the change is meant (a reworded description), "
              f"say so with --ignore-attr {' '.join(keys)}; ordercube_fingerprint and ordercube_identity decide "
              "whether an old cube resumes, so a change there is never cosmetic")
    return 1 if bad else 0


# --------------------------------------------------------------------------------------------------- legacy


def _cli(ordercube: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([ordercube, *args], capture_output=True, text=True, timeout=TIMEOUT)


def _every_variable_equal(a: Path, b: Path) -> list[str]:
    """The variables (``seconds`` included) whose values differ between two cubes: a resume that computed
    nothing leaves every one, even the times, as it was."""
    x, y = open_raw(a), open_raw(b)
    names = sorted({str(n) for n in [*x.data_vars, *x.coords]} & {str(n) for n in [*y.data_vars, *y.coords]})
    return [n for n in names if compare_arrays(n, x[n].variable, y[n].variable).what]


@dataclass
class LegacyCheck:
    cube: str
    outcome: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return all(v.startswith("ok") for v in self.outcome.values())


def _check_complete(ordercube: str, cube: Path, config: Path, work: Path, label: str,
                    status_expected: Mapping[str, int] | None = None) -> LegacyCheck:
    """Open (status), resume (run: nothing computed, nothing changed) and report a copy of a complete cube."""
    check = LegacyCheck(label)
    copy = work / f"{label}.zarr"
    shutil.copytree(cube, copy)
    status = _cli(ordercube, "status", str(copy), "--json")
    if status.returncode != 0:
        check.outcome["status"] = f"exit {status.returncode}: {status.stderr.strip()[-300:]}"
    else:
        counts = json.loads(status.stdout)
        expected = dict(status_expected or {})
        wrong = {k: (counts.get(k), v) for k, v in expected.items() if counts.get(k) != v}
        if counts.get("pending", 0):
            check.outcome["status"] = f"{counts['pending']} cells pending in a complete cube: {counts}"
        elif wrong:
            check.outcome["status"] = f"counts (now, then) differ: {wrong}"
        else:
            check.outcome["status"] = f"ok {counts.get('total')} cells"
    run = _cli(ordercube, "run", str(config), "--out", str(copy), "--no-progress", "--workers", "1")
    if run.returncode != 0:
        check.outcome["resume"] = f"exit {run.returncode}: {(run.stderr or run.stdout).strip()[-300:]}"
    else:
        changed = _every_variable_equal(cube, copy)
        check.outcome["resume"] = "ok nothing computed" if not changed else f"changed: {', '.join(changed)}"
    report = _cli(ordercube, "report", str(copy), "--out", str(work / f"{label}-report"))
    check.outcome["report"] = ("ok" if report.returncode == 0 and (work / f"{label}-report" / "selection.csv").exists()
                               else f"exit {report.returncode}: {report.stderr.strip()[-300:]}")
    return check


def _check_interrupted(ordercube: str, partial: Path, complete: Path, config: Path, work: Path, label: str) -> LegacyCheck:
    """Finish a copy of an interrupted cube; it must then equal the complete cube bit for bit (but seconds)."""
    check = LegacyCheck(label)
    copy = work / f"{label}.zarr"
    shutil.copytree(partial, copy)
    status = _cli(ordercube, "status", str(copy), "--json")
    pending = json.loads(status.stdout).get("pending", 0) if status.returncode == 0 else None
    check.outcome["status"] = (f"ok {pending} cells pending before the resume" if pending else
                               f"not an interrupted cube (pending {pending}): {status.stderr.strip()[-200:]}")
    run = _cli(ordercube, "run", str(config), "--out", str(copy), "--no-progress", "--workers", "1")
    if run.returncode != 0:
        check.outcome["resume"] = f"exit {run.returncode}: {(run.stderr or run.stdout).strip()[-300:]}"
    else:
        result = compare_cubes(complete, copy)
        differing = [d.name for d in result.differing] + [f"attribute {line}" for line in result.attributes]
        check.outcome["resume"] = "ok finished, equal to the complete cube" if not differing else \
            f"finished, differs from the complete cube in {', '.join(differing)}"
    report = _cli(ordercube, "report", str(copy), "--out", str(work / f"{label}-report"))
    check.outcome["report"] = "ok" if report.returncode == 0 else f"exit {report.returncode}: {report.stderr.strip()[-300:]}"
    return check


def fixture_cubes(tests: Path = TESTS) -> list[tuple[Path, Path]]:
    """Every cube kept under ``tests/`` with a ``config.yaml`` beside it (the format 2 fixture among them)."""
    found = []
    for cube in sorted(tests.rglob("*.zarr")):
        config = cube.parent / "config.yaml"
        if cube.is_dir() and config.exists() and ".zarr" not in str(cube.parent):
            found.append((cube, config))
    return found


def command_legacy(args: argparse.Namespace) -> int:
    ordercube = ordercube_command()
    before = Path(args.before).resolve() if args.before else None
    checks: list[LegacyCheck] = []
    with tempfile.TemporaryDirectory(prefix="same-bits-legacy-") as scratch:
        work = Path(scratch)
        if not args.no_fixtures:
            for cube, config in fixture_cubes():
                label = "fixture-" + cube.parent.relative_to(TESTS).as_posix().replace("/", "-")
                expected_file = cube.parent / "status.json"
                expected = json.loads(expected_file.read_text()) if expected_file.exists() else None
                checks.append(_check_complete(ordercube, cube, config, work, label, expected))
                print(f"  {label:<36} {checks[-1].outcome}", flush=True)
        if before is not None:
            configs_folder = Path(args.configs).resolve()
            names = sorted(p.name.removesuffix(".zarr") for p in before.glob("*.zarr")
                           if not p.name.endswith(".interrupted.zarr"))
            if args.only:
                names = [n for n in names if n in args.only]
            for name in names:
                stored = before / "configs" / f"{name}.yaml"
                placed = _place(configs_folder / f"{name}.yaml", yaml.safe_load(stored.read_text()))
                try:
                    checks.append(_check_complete(ordercube, before / f"{name}.zarr", placed.path, work, name))
                    print(f"  {name:<36} {checks[-1].outcome}", flush=True)
                    partial = before / f"{name}.interrupted.zarr"
                    if partial.exists():
                        checks.append(_check_interrupted(ordercube, partial, before / f"{name}.zarr", placed.path,
                                                         work, f"{name}.interrupted"))
                        print(f"  {name + '.interrupted':<36} {checks[-1].outcome}", flush=True)
                finally:
                    placed.remove()
    bad = [c.cube for c in checks if not c.ok]
    print(f"{len(checks) - len(bad)} of {len(checks)} cubes open, resume and report" +
          (f"; failing: {', '.join(bad)}" if bad else ""))
    return 1 if bad or not checks else 0


# --------------------------------------------------------------------------------------------------- main


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="same_bits.py", description=__doc__.split("\n\n")[0])
    commands = p.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run every config into DIR/<config>.zarr with the installed ordercube")
    run.add_argument("--out", required=True, help="folder of the cubes, their configs and timings.json")
    run.add_argument("--only", nargs="+", metavar="NAME", help="only these configs (names without .yaml)")
    run.add_argument("--shrink", action="store_true", help=f"reduce the heavy configs ({', '.join(HEAVY) or 'none'})")
    run.add_argument("--shrink-all", action="store_true", help="with --shrink, reduce every config")
    run.add_argument("--like", metavar="DIR", help="run exactly the configs an earlier run stored in DIR/configs")
    run.add_argument("--interrupt", nargs="+", metavar="NAME", default=[],
                     help="also leave DIR/NAME.interrupted.zarr: the run stopped by SIGINT after its first chunks")
    run.add_argument("--workers", type=int, default=1, help="passed to 'ordercube run' (default 1; bits do not depend on it)")
    run.add_argument("--configs", default=str(CONFIGS), help=f"the configs' folder (default {CONFIGS})")
    compare = commands.add_parser("compare", help="compare the cubes of two run folders bit for bit")
    compare.add_argument("before")
    compare.add_argument("after")
    compare.add_argument("--only", nargs="+", metavar="NAME")
    compare.add_argument("--ignore-attr", nargs="+", default=[], metavar="KEY",
                         help=f"attribute keys not compared, besides {sorted(IGNORED_ATTRS)}")
    legacy = commands.add_parser("legacy", help="old cubes open, resume and report with the installed ordercube")
    legacy.add_argument("before", nargs="?", help="a run folder whose cubes (and interrupted cubes) are checked")
    legacy.add_argument("--only", nargs="+", metavar="NAME")
    legacy.add_argument("--no-fixtures", action="store_true", help="skip the fixture cubes under tests/")
    legacy.add_argument("--configs", default=str(CONFIGS), help=f"the configs' folder (default {CONFIGS})")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    return {"run": command_run, "compare": command_compare, "legacy": command_legacy}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
