"""What the ``ordercube`` command prints: the tables and lines of run, status, report, partition, replay and
validate, from what the API returned. Nothing here computes, reads a cube or writes a file."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd
    import xarray as xr

    from ordercube.pipeline.config.specs import Config
    from ordercube.pipeline.reduce.partition import Partition

MISSING_SHOWN = 20  # rows of the report's table of cells without a value printed (all in missing_cells.csv)


def print_datasets(config: Config) -> None:
    """One line per dataset saying what was read (rows x features, header, row names, labels, true k), after the
    line of the keys the config omitted (with the drawn seed), when it omitted any."""
    from ordercube.pipeline.config.defaults import describe_defaults

    if config.defaults:
        print(describe_defaults(config.defaults))
    for line in config.data_lines:
        print(line)


def overhead_line(summary: Any) -> str:
    """The engine's cost beyond the kernels of a run's ``summary`` (``ordercube.pipeline.run.execute.Summary``), per
    cell and as a share of compute (the cells' kernel seconds), split into the workers' bookkeeping, the cube's
    writes and the driver's own work."""
    cells = max(summary.computed, 1)

    def ms(seconds: float) -> str:
        return f"{1000 * seconds / cells:.3g}"

    share = "" if summary.kernel_seconds <= 0 else f", {100 * summary.overhead_share:.1f}% of compute"
    return (f"engine overhead: {ms(summary.overhead_seconds)} ms per cell{share} ({summary.kernel_seconds:.1f} s in "
            f"kernels, {summary.tasks} tasks): bookkeeping {ms(summary.bookkeeping_seconds)}, "
            f"writes {ms(summary.write_seconds)}, driver {ms(summary.driver_seconds)} ms per cell")


REASON_CHARACTERS = 400  # a failed cell's reason, as the run's summary prints it


def shortened(text: str, limit: int = REASON_CHARACTERS) -> str:
    """``text`` on one line, cut to ``limit`` characters (an ellipsis says where)."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def print_status(counts: dict[str, int], *, as_json: bool) -> None:
    """The cell counts by status: one line, or a JSON object."""
    if as_json:
        print(json.dumps(counts))
    else:
        print("  ".join(f"{key}: {value}" for key, value in counts.items()))


def print_nothing_computed(place: object, counts: dict[str, int]) -> None:
    """The report of a cube without a computed cell: one line, nothing written."""
    others = ", ".join(f"{key}: {value}" for key, value in counts.items() if key not in ("total", "ok") and value)
    print(f"no computed cells yet in {place} (0 of {counts['total']} planned cells ok; {others}); "
          "nothing to report, no report written")


def print_report(cube: xr.Dataset, table: pd.DataFrame, out: object) -> None:
    """The k̂ table with its notes, the cells without a value, the adaptive budget, the published k̂, the
    sections' text, and where the report went."""
    from ordercube.pipeline.report.published import PUBLISHED_CSV, comparison_matrix, published_of
    from ordercube.pipeline.report.write import flag_notes, printable

    if table.empty:  # e.g. only a diagnostic (agreement) was computed
        print("no k̂ to show: no model-order criterion has values in this cube (figures of the diagnostics only)")
    else:
        print(printable(table).to_string(index=False))
        for line in flag_notes(table):
            print(f"  {line}")
    for criterion in table.attrs.get("without_values", []):
        print(f"{criterion}: no value anywhere in this cube (not computed yet, every cell of it failed, or its value "
              "is undefined on these data in every cell marked ok): no row, no figure")
    _print_missing(table.attrs.get("missing_cells"))
    adaptive = table.attrs.get("adaptive")
    if adaptive is not None and not adaptive.empty:
        groups = adaptive.drop_duplicates(["dataset", "n", "method"])
        print(f"\nadaptive resampling: {int(groups['cells'].sum())} of {int(groups['budget'].sum())} cells of the fixed "
              "budget (adaptive.csv); per-trial figures use the trials in which every k was computed")
        print(adaptive.to_string(index=False, formatters={"share": "{:.0%}".format}))
    published = published_of(cube)
    if published and not table.empty:
        print(f"\nk̂ by criterion: this cube / published (! where they differ; {PUBLISHED_CSV})")
        print(comparison_matrix(table, published).to_string())
    for line in table.attrs.get("published_hidden", []):
        print(line)
    for section in table.attrs.get("sections", []):  # what the report's sections print
        if section.text:
            print(f"\n{section.title}")
            print(section.text)
    for name, reason in table.attrs.get("figures_failed", []):
        print(f"figure {name} could not be drawn ({reason}); the rest of the report is written", file=sys.stderr)
    drawn, kept = table.attrs["figures"]
    shared = table.attrs.get("figures_by_helper", 0)
    print(f"report written to {out} ({len(drawn)} figures drawn" + (f", {shared} of them by a second process" if shared else "")
          + (f", {len(kept)} unchanged since the last report there)" if kept else ")"))


def _print_missing(missing: pd.DataFrame | None) -> None:
    from ordercube.pipeline.report.write import MISSING_MEANINGS

    if missing is None or missing.empty:
        return
    print(f"\ncells without a value, left out of every mean and count ({int(missing['cells'].sum())} cells; "
          "missing_cells.csv):")
    shown = missing.head(MISSING_SHOWN)
    print(shown.to_string(index=False))
    if len(missing) > MISSING_SHOWN:
        print(f"... {len(missing) - MISSING_SHOWN} more rows in missing_cells.csv")
    for status in dict.fromkeys(missing["status"]):
        print(f"  {status}: {MISSING_MEANINGS[status]}")


def print_partition(result: Partition, clusters: pd.DataFrame, out: object, clusters_path: object) -> None:
    """What was read, the fit, its agreement with known classes, each cluster's stability, where it went."""
    print(f"data {result.dataset}: {result.read}")
    print(f"{result.method} at k = {result.k} ({result.chosen_by}), {result.how}"
          + (f"; {clusters.shape[0]} non-empty clusters" if clusters.shape[0] != result.k else ""))
    if result.truth is not None:
        print(f"agreement with the known classes: {result.agreement:.3f} matched (Hungarian), adjusted Rand "
              f"{result.adjusted_rand:.3f}")
    print(f"per-cluster stability over {result.jaccard.shape[1]} {result.resamples} (Hennig's clusterwise "
          "Jaccard: < 0.5 dissolves, >= 0.75 stable, >= 0.85 highly stable):")
    print(clusters.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    if "small" in clusters and bool(clusters["small"].any()):
        from ordercube.tasks.consensus import small_cluster_limit

        print(f"small: a cluster of at most {small_cluster_limit(int(clusters['size'].sum())):g} items (max(2 items, 2% "
              "of them)): an outlier split, whose stability says nothing about a group; its rows are in the labels file")
    print(f"labels written to {out}; clusters to {clusters_path}")


def duration(seconds: float) -> str:
    """``seconds`` in words a person plans by: 4.2 s, 3.5 min, 2.1 h."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    return f"{seconds / 60:.1f} min" if seconds < 3600 else f"{seconds / 3600:.1f} h"


def print_no_replay() -> None:
    print("no group to replay: the adaptive rule covers criteria decided by the smallest mean (lange, pairwise, "
          "transfer costs, bic, aic) and prediction_strength (mode strict: those with values in [0, 1]), with two "
          "complete trials at least")


def print_replay_estimate(groups: int, permutations: int, estimate: float, timed: int, calibration: int) -> None:
    """Before the replay: how long it will compute (flushed, as the replay may take minutes)."""
    print(f"replaying {groups} groups x {permutations + 1:,} trial orders: about {duration(estimate)} of "
          f"computing, longer on a busy machine (from {timed} group(s) timed at "
          f"{min(permutations, calibration) + 1} orders)", flush=True)


def print_replay(table: pd.DataFrame, setting: Any, out: object, figure: object) -> None:
    """The replay's table, with what its columns mean, and where it went."""
    shown = table[["dataset", "n", "method", "criterion", "trials", "fixed_k_hat", "reference", "agreement", "wrong",
                   "wrong_upper", "cells_median", "compute_mean", "decided", "settled", "unsettled", "in_play",
                   "null_false_rate", "null_false_upper"]]
    rule = {"t": "PSE-t", "guarded": "PSE-t guarded by Cochran's rule", "strict": "PSE-EB (strict)",
            "hoeffding": "Hoeffding races"}[setting.mode]
    print(f"{rule} replayed in index order and {setting.permutations} random "
          f"orders per group (delta {setting.delta:g}, "
          f"epsilon {setting.epsilon:g}, looks from {setting.r_min} doubling); agreement: share of replays ending on the "
          "fixed budget's k̂; reference: the k's the full budget cannot rule out at 99.9% (several: a near-tie); wrong: "
          "replays that stopped decided or settled on a k outside it, with its 95% Clopper-Pearson upper bound; "
          "cells, compute: used / fixed budget; null races: an arm against a permuted copy of itself "
          "(decided = false), with the 95% Clopper-Pearson upper bound")
    if "orders" in table and table["orders"].notna().any():  # groups of criteria reduced from stored clusterings
        print("criteria reduced from stored clusterings (no per-trial values): the bootstrap rule instead, stopped once "
              "the share of replicates choosing the curve's k̂ reaches 1 - delta / looks, replayed in index order and "
              f"at most {int(table['orders'].max()) - 1} random orders; no null races")
    print(shown.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    print(f"written to {out}; accuracy against cells, fixed budgets and the rule: {figure}")


def print_plan(config: Config, plan: Any, *, here: bool, workers: int, tasks: int, plugins: str) -> None:
    """``validate``'s plan: the config, the cube's shape, the cells and tasks, each dataset and method."""
    from ordercube.pipeline.config.study import data_digest
    from ordercube.tasks.algorithms import get_algorithm  # loaded with the config already

    place = f"in this process on {workers} thread(s)" if here else f"on {workers} local workers"
    shape = ", ".join(f"{dim}: {size}" for dim, size in zip(plan.coords.as_dict(), plan.coords.shape))
    print(f"config {config.name!r} is valid (fingerprint {config.fingerprint})")
    print(f"  {plugins}")
    print(f"  cube: {config.out}  ({shape}); chunks {plan.chunk_shape}")
    print(f"  cells: {plan.planned_cells} planned, {plan.cells_to_compute} to compute in "
          f"{tasks} tasks {place} (estimated work {'under' if here else 'over'} "
          f"execution.in_process_seconds = {config.execution.in_process_seconds:g}); criteria: {', '.join(config.criteria)}")
    print(f"  {plan.estimate().line(workers, cluster=not here, written=False)}")
    from ordercube.pipeline.config.schemes import size_line

    if line := size_line(config, plan):
        print(f"  {line}")
    print_datasets(config)
    for dataset in config.datasets:
        print(f"  dataset {dataset.name}: {dataset.kind}, n = {list(dataset.n)}, true k = {dataset.true_k}, "
              f"data digest {data_digest(dataset.identity)}")
    for method in config.methods:
        model = get_algorithm(method.algorithm)
        model = model.with_scheme(method.scheme) if method.scheme and hasattr(model, "with_scheme") else model
        how = model.summary(method.predictor)
        scheme = f" (scheme {method.scheme} {dict(method.scheme_params)})" if method.scheme else ""
        stored = ", stores assignments" if method.assignments else ""
        print(f"  method {method.name}: {method.algorithm} {how}{scheme} -> {', '.join(method.all_criteria)}{stored}, "
              f"method digest {data_digest(method.identity)}")
        if method.name in config.adaptive:
            rule = config.adaptive[method.name]
            print(f"    adaptive: stops once k̂ is settled, looks {list(rule.looks)}, delta {rule.delta:g}, epsilon "
                  f"{rule.epsilon:g}, mode {rule.mode} (its cells above are the budget: at most this many are computed)")
