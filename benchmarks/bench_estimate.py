"""The wall time printed before a run against the wall time it took, for every shipped config and the first analyses.

Each case runs as its own process, as a user would start it: ``ordercube run CONFIG`` for a config (into a fresh
cube), a script calling ``ordercube.choose_k`` with its defaults for a table. The script reads the process's output
line by line as it comes and times it: ``measured`` is the time from the line ``estimated ...`` to the end of the
sweep (``done: ...`` for ``run``; the return of the sweep inside ``choose_k``, its reduction left out), plus the
pilot's seconds the line reports (the pilot runs before the line is printed). ``ratio`` = estimated / measured;
a ratio outside [0.5, 2] is flagged ``*``.

Cases:
  configs/*.yaml      every shipped config; ``--quick`` (the default) reduces those that are not benchmark cases by
                      ``same_bits.shrink`` (at most 3 resamples, the 2 smallest n, 4 values of k; tighter for the
                      Table 1 grid, as benchmarks/cost_model.py does); ``--full`` runs them as shipped.
  consensus           consensus_colon, consensus_yeast and consensus_gaussian3 (the 60-item generated set) as
                      shipped: H = 1000, p_item 0.8, average linkage, k = 2..10.
  choose_k            iris, wine, digits (1797 x 64) and a 10^5 x 10 table (four Gaussian blobs) with
                      ``choose_k``'s defaults; ``--quick`` gives digits and the 10^5 table fewer resamples.

Nothing is asserted (timings depend on the machine and its load, printed last); tests/test_estimate.py checks the
arithmetic.

    python benchmarks/bench_estimate.py [--full] [--only NAME ...] [--skip NAME ...]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cost_model import TIGHTER, tighten  # noqa: E402
from same_bits import CAPS, shrink  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
CONFIGS = REPO / "configs"
BENCHMARK_CONFIGS = {"consensus_colon", "consensus_yeast", "consensus_gaussian3"}
ESTIMATED = re.compile(r"estimated ([\d.]+) (s|min|h) ")
PILOT = re.compile(r"\(pilot of (\d+) cells: ([\d.]+) s")
UNIT = {"s": 1.0, "min": 60.0, "h": 3600.0}
CLI = "from ordercube.pipeline.cli import entry_point; raise SystemExit(entry_point())"

CHOOSE_K = """
import time
import numpy as np
import ordercube
from ordercube.pipeline.run import sweep as sweep_module
original = sweep_module.run_sweep
def timed(*args, **kwargs):
    summary = original(*args, **kwargs)
    print("SWEPT", flush=True)
    return summary
sweep_module.run_sweep = timed
name = {name!r}
if name == "table1e5":
    rng = np.random.default_rng(5)
    centers = rng.normal(0, 6, size=(4, 10))
    X = centers[rng.integers(0, 4, 100_000)] + rng.normal(size=(100_000, 10))
else:
    from sklearn import datasets
    X = {{"iris": datasets.load_iris, "wine": datasets.load_wine, "digits": datasets.load_digits}}[name]().data
ordercube.choose_k(X, seed=1, out={out!r}, **{options!r})
"""


def run_timed(command: list[str], env: dict[str, str], cwd: Path, end: str) -> dict[str, Any]:
    """Run ``command``, timing its output lines: the estimate, its pilot, and the first line starting with ``end``."""
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=cwd)
    row: dict[str, Any] = {}
    assert process.stdout is not None
    lines = []
    for line in process.stdout:
        now = time.perf_counter()
        lines.append(line.rstrip())
        match = ESTIMATED.search(line)
        if match and "estimated" not in row:
            row["estimated"] = float(match[1]) * UNIT[match[2]]
            pilot = PILOT.search(line)
            row["pilot"] = float(pilot[2]) if pilot else 0.0
            row["seen"] = now
            row["line"] = line.strip()
        if line.startswith(end) and "seen" in row and "measured" not in row:
            row["measured"] = now - row["seen"] + row["pilot"]
    process.wait()
    row["process"] = time.perf_counter() - started
    if process.returncode or "measured" not in row:
        row["error"] = f"exit {process.returncode}: " + " | ".join(lines[-4:])
    return row


def config_cases(folder: Path, *, quick: bool) -> list[tuple[str, Path]]:
    """Every shipped config written to ``folder/configs`` (reduced with ``quick`` unless a benchmark case)."""
    (folder / "configs").mkdir()
    (folder / "results").mkdir()
    from consensus_side_by_side import write_gaussian3

    write_gaussian3(folder / "results")
    cases = []
    for path in sorted(CONFIGS.glob("*.yaml")):
        raw = yaml.safe_load(path.read_text())
        if quick and path.stem not in BENCHMARK_CONFIGS:
            raw, _ = shrink(raw, {**CAPS, **TIGHTER.get(path.stem, {})})
            tighten(raw, TIGHTER.get(path.stem, {}))
        target = folder / "configs" / path.name
        target.write_text(yaml.safe_dump(raw, sort_keys=False))
        cases.append((path.stem, target))
    return cases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--full", action="store_true", help="the shipped configs as they are (hours)")
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--skip", nargs="*", default=[])
    args = parser.parse_args()
    quick = not args.full
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(REPO)}
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-estimate-") as tmp:
        folder = Path(tmp)
        cases: list[tuple[str, list[str], str]] = []
        for name, path in config_cases(folder, quick=quick):
            out = folder / f"{name}.zarr"
            cases.append((name, [sys.executable, "-c", CLI, "run", str(path), "--out", str(out), "--no-progress"],
                          "done:"))
        for name in ("iris", "wine", "digits", "table1e5"):
            options: dict[str, Any] = {}
            if quick and name == "digits":
                options = {"resamples": 5}
            if quick and name == "table1e5":
                options = {"resamples": 2, "k": [2, 3, 4, 5, 6]}
            code = CHOOSE_K.format(name=name, out=str(folder / f"ck_{name}.zarr"), options=options)
            cases.append((f"choose_k:{name}", [sys.executable, "-c", code], "SWEPT"))
        for name, command, end in cases:
            if (args.only and name not in args.only) or name in args.skip:
                continue
            row = {"case": name, **run_timed(command, env, folder, end)}
            rows.append(row)
            print(_format(row), flush=True)
    print(f"\nload average {os.getloadavg()[0]:.1f} {os.getloadavg()[1]:.1f} {os.getloadavg()[2]:.1f}; "
          f"{'quick' if quick else 'full'}; flagged (*): ratio outside [0.5, 2]: "
          f"{sum(_flag(row) == '*' for row in rows)} of {sum('ratio' in row for row in rows)}")


def _flag(row: dict[str, Any]) -> str:
    ratio = row.get("ratio")
    return "*" if ratio is not None and not 0.5 <= ratio <= 2 else " "


def _format(row: dict[str, Any]) -> str:
    if "error" in row:
        return f"{row['case']:<28} ERROR {row['error'][:200]}"
    row["ratio"] = row["estimated"] / row["measured"]
    return (f"{row['case']:<28} estimated {row['estimated']:8.1f} s  measured {row['measured']:8.1f} s  "
            f"ratio {row['ratio']:5.2f} {_flag(row)}  (pilot {row['pilot']:.1f} s; process {row['process']:.1f} s)")


if __name__ == "__main__":
    main()
