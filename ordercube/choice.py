"""The answer of :func:`ordercube.choose_k`: k̂ per criterion with how sure each is, and the k most criteria chose;
and the config a call of it becomes (one dataset, one method), its arguments checked.

Everything here is read from the reducers (:func:`ordercube.select_k`, :func:`ordercube.summarise` and the
uncertainty of :mod:`ordercube.pipeline.reduce.uncertainty`, gathered by the report's
:func:`ordercube.pipeline.report.write.table_of`); nothing is computed again. The agreement across criteria is
NbClust's majority table (Charrad et al. 2014): how many criteria chose each k.
"""

from __future__ import annotations

import html
import os
import re
from collections.abc import Iterable, Sequence, Sized
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ordercube.pipeline.errors import ConfigError

if TYPE_CHECKING:
    import pandas as pd
    import xarray as xr
    from matplotlib.figure import Figure

    from ordercube.pipeline.config.specs import Config

# The columns of the printed table: one row per criterion (the report's own formatting of each interval).
SHOWN = ("criterion", "k̂", "within noise", "share [95%]", "runner-up", "difference [95%]", "flags")


@dataclass(frozen=True, repr=False)
class Choice:
    """k̂ for one dataset and method, by each criterion and combined; printed as a compact table.

    Attributes
    ----------
    k_hat : int
        The combined answer: the k chosen by the most criteria (the smallest of a tie, which ``tied`` and the
        printed line state); -1 when no criterion chose one.
    tied : tuple of int
        The k's that share the most criteria when there is a tie (empty otherwise).
    table : pandas.DataFrame
        One row per criterion (the index): ``k_hat`` (-1: no choice), the share of trials that chose it
        (``k_hat_frequency``) with its 95% bootstrap interval (``_low``, ``_high``), the mean score at k̂
        (``score_at_k_hat``, ``score_se``), the ``runner_up`` and the paired ``difference`` to it with its 95%
        t interval, ``k_set`` (the k's the rule cannot tell from k̂ given the Monte Carlo error, "none" where no
        choice is among them) and ``rule`` (how the rule picks k̂ among them), the flags ``at_grid_edge``,
        ``not_separated``, ``runner_up_better``, ``few_trials``, ``within_noise``, ``tied`` and ``small_cluster``
        (with ``smallest_cluster``, the size of the smallest cluster of k̂'s consensus partition, -1 where the cube
        stored no clusterings), and, when the data have labels, ``true_k`` and ``failure_rate`` (the columns of
        ``selection.csv``).
    agreement : pandas.DataFrame
        Indexed by k (those some criterion chose): ``criteria``, how many chose it, and ``names``, which.
    cube : xarray.Dataset
        The cube the answer was read from (dimensions dataset, n, model, k, trial), at ``out``.
    data_line : str
        What was read, as the CLI prints it: ``data X: 150 rows x 4 features ...; true k 3``.
    seed, resamples : int
        The root seed (drawn when none was given) and the number of resamples: pass ``seed=`` to repeat.
    out : str
        Where the cube is.
    notes : list of str
        What each raised flag and each interval shown as n/a means.
    """

    k_hat: int
    tied: tuple[int, ...]
    table: pd.DataFrame
    agreement: pd.DataFrame
    cube: xr.Dataset
    data_line: str
    seed: int
    resamples: int
    out: str
    method: str
    notes: list[str] = field(default_factory=list)
    shown: pd.DataFrame | None = None
    summary: xr.Dataset | None = None
    thresholds: dict[str, float] = field(default_factory=dict)

    @classmethod
    def of(cls, cube: xr.Dataset, *, data_line: str, seed: int, resamples: int, out: str, method: str) -> Choice:
        """The choice read from ``cube`` (one dataset, one n, one method) by the report's reducers."""
        from ordercube.pipeline.report.section import Reduced
        from ordercube.pipeline.report.write import flag_notes, printable, table_of

        reduced = Reduced.of(cube.load())
        rows = table_of(reduced)
        table = rows.drop(columns=["dataset", "n", "method"]).set_index("criterion")
        known = len(rows) and bool((rows["true_k"] >= 0).any())  # labels or true_k: the failure rate beside k̂
        shown = printable(rows)[[*SHOWN, *(("true k", "failure") if known else ())]] if len(rows) else None
        counts = _agreement(table["k_hat"] if len(table) else None)
        most = int(counts["criteria"].max()) if len(counts) else 0
        tied = tuple(int(k) for k in counts.index[counts["criteria"] == most]) if most else ()
        thresholds = {name: float(rule.threshold) for name, rule in reduced.rules.items()
                      if name in table.index and rule.threshold is not None}
        return cls(k_hat=tied[0] if tied else -1, tied=tied if len(tied) > 1 else (), table=table, agreement=counts,
                   cube=cube, data_line=data_line, seed=seed, resamples=resamples, out=out, method=method,
                   notes=flag_notes(rows) if len(rows) else [], shown=shown, summary=reduced.summary,
                   thresholds=thresholds)

    @property
    def k_sets(self) -> dict[str, tuple[int, ...]]:
        """Each criterion's k's that cannot be told apart from its k̂ given the Monte Carlo error (the ``k_set``
        column; -1 where "no choice" is among them), ascending."""
        return {str(name): tuple(sorted(-1 if word == "none" else int(word) for word in str(words).split()))
                for name, words in self.table["k_set"].items()} if "k_set" in self.table else {}

    @property
    def within_noise(self) -> tuple[str, ...]:
        """The criteria whose k̂ cannot be told apart from another choice (flag ``within_noise``)."""
        return self._flagged("within_noise")

    @property
    def small_cluster(self) -> tuple[str, ...]:
        """The criteria whose k̂'s consensus partition holds a cluster of at most max(2 items, 2% of the items)."""
        return self._flagged("small_cluster")

    def _flagged(self, flag: str) -> tuple[str, ...]:
        return tuple(str(name) for name, raised in self.table[flag].items() if raised) if flag in self.table else ()

    @property
    def answer(self) -> str:
        """The combined answer in one line: k̂, how many criteria chose it, a tie stated, the others' choices."""
        total = len(self.table)
        if self.k_hat < 0:
            return f"k̂: none of the {total} criteria chose a k"
        chose = self.agreement.loc[self.k_hat]
        if self.tied:
            ties = " and ".join(map(str, self.tied))
            line = (f"k̂ = {self.k_hat}: a tie between k = {ties} ({chose['criteria']} of {total} criteria each); "
                    "the smallest is given")
        else:
            line = f"k̂ = {self.k_hat}: chosen by {chose['criteria']} of {total} criteria ({chose['names']})"
        others = [f"{name} chose {'none' if k < 0 else k}" for name, k in self.table["k_hat"].items()
                  if k != self.k_hat and int(k) not in self.tied]
        return line + (f"; {', '.join(others)}" if others else "")

    def _head(self) -> list[str]:
        """How the run was made (the data line, printed by :func:`ordercube.choose_k` before it computes, is
        ``self.data_line``)."""
        ks = self.cube["k"].values
        return [f"{self.method}, k = {ks.min()}..{ks.max()}, n = {int(self.cube['n'].values[0])}; "
                f"seed={self.seed}, resamples={self.resamples}: pass seed={self.seed} to repeat; cube {self.out}"]

    def __str__(self) -> str:
        body = "(no criterion has a value)" if self.shown is None else self.shown.to_string(index=False)
        return "\n".join([*self._head(), body, self.answer, *self.notes])

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        table = "" if self.shown is None else self.shown.to_html(index=False, border=0)
        lines = "".join(f"<p>{html.escape(line)}</p>" for line in self._head())
        notes = "".join(f"<li>{html.escape(note)}</li>" for note in self.notes)
        return (f"<div class='ordercube-choice'>{lines}{table}<p><b>{html.escape(self.answer)}</b></p>"
                + (f"<ul>{notes}</ul>" if notes else "") + "</div>")

    def plot(self) -> Figure:
        """Each criterion's mean over the resamples against k (± one standard error; the Gap statistic with its
        mean s_k, the spread its rule reads), k̂ starred, a threshold drawn where the rule has one, and a shaded
        band over the k's that cannot be told apart from k̂ (``k_sets``) where there are several.

        Returns
        -------
        matplotlib.figure.Figure
            One panel per criterion (displayed by Jupyter; ``figure.savefig(PATH)`` writes it).
        """
        from ordercube.pipeline.report.figures import panels, title, within_noise_band
        from ordercube.pipeline.report.write import label_of

        names = list(self.table.index)
        figure, axes = panels(len(names))
        summary = self.summary.isel(dataset=0, n=0, model=0)
        for ax, name in zip(axes, names):
            mean = summary[f"{name}_mean"]
            ks = mean["k"].values
            ax.plot(ks, mean, marker="o", ms=3, color="C0")
            if name == "gap" and "gap_sd_mean" in summary:
                ax.errorbar(ks, mean, yerr=summary["gap_sd_mean"], fmt="none", ecolor="C0", capsize=2)
            else:
                se = summary[f"{name}_se"]
                ax.fill_between(ks, mean - se, mean + se, color="C0", alpha=0.2, lw=0)
            k_hat = int(self.table.loc[name, "k_hat"])
            if k_hat in ks:
                ax.plot([k_hat], [float(mean.sel(k=k_hat))], "*", ms=12, color="C1", mec="black", mew=0.7)
            if name in self.thresholds:
                ax.axhline(self.thresholds[name], color="grey", ls="--", lw=0.9)
            within_noise_band(ax, [k for k in self.k_sets.get(name, ()) if k >= 0])
            title(ax, f"{name}: k̂ = {k_hat if k_hat >= 0 else 'none'}")
            ax.set_xlabel("k (star: k̂)")
            ax.set_ylabel(label_of(name), fontsize=8)
        return figure


def _agreement(k_hats: pd.Series | None) -> pd.DataFrame:
    """How many criteria chose each k, and which (NbClust's table); the criteria without a choice left out."""
    import pandas as pd

    chosen: dict[int, list[str]] = {}
    for name, k in ([] if k_hats is None else k_hats.items()):
        if int(k) >= 0:
            chosen.setdefault(int(k), []).append(str(name))
    ks: Sequence[int] = sorted(chosen)
    return pd.DataFrame({"criteria": [len(chosen[k]) for k in ks], "names": [", ".join(chosen[k]) for k in ks]},
                        index=pd.Index(ks, name="k"))


# What a choose_k call becomes: a config of one dataset and one method, checked where a config cannot be.
# The config keys choose_k passes on from ``**options`` (the rest of a config is its arguments).
CONFIG_OPTIONS = {"name", "baseline_draws", "execution", "params", "predictor"}
CHOOSE_K_FOLDER = "ordercube-choose_k"  # under the system's temporary folder: the default ``out``


def choose_k_config(X: Any, k: Any, *, labels: Any, criteria: Any, algorithm: Any, resamples: Any, seed: Any,
                    n: Any, options: dict[str, Any], run_options: set[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The config dict of a ``choose_k`` call, and its run options (those of ``options`` in ``run_options``); the
    arguments a config cannot check checked."""
    import numpy as np

    unknown = sorted(set(options) - CONFIG_OPTIONS - run_options)
    if unknown:
        raise ConfigError(unknown[0], f"not an argument of choose_k (got {options[unknown[0]]!r})",
                          f"expected one of {sorted(CONFIG_OPTIONS | run_options)}")
    frame = type(X).__name__ == "DataFrame" and hasattr(X, "columns")
    if not frame:
        X = _array(X)
    if isinstance(k, (str, bytes)) or not isinstance(k, Iterable):
        raise ConfigError("k", f"expected an iterable of integers, got {k!r}", "e.g. k=range(2, 11)")
    from itertools import islice

    from ordercube.pipeline.config.study import MAX_K_VALUES

    # counted before anything is made of them: k=range(2, 10**9) took 40 s, then a MemoryError
    if not isinstance(k, Sized):  # a generator: read once, no further than the bound
        k = list(islice(iter(k), MAX_K_VALUES + 1))
    count = len(k)
    if count > MAX_K_VALUES:
        held = f"more than {MAX_K_VALUES:,}" if isinstance(k, list) and count == MAX_K_VALUES + 1 else f"{count:,}"
        raise ConfigError("k", f"{held} values of k; at most {MAX_K_VALUES:,}",
                          "compare the numbers of clusters the data could hold, e.g. k=range(2, 11)")
    ks = [int(v) if isinstance(v, (int, np.integer)) and not isinstance(v, bool) else v for v in k]
    name = options.get("name", "X")
    dataset: dict[str, Any] = {"name": name, "data": X}
    if isinstance(labels, str):
        if not frame:
            raise ConfigError("labels", f"a column name ({labels!r}) needs X to be a DataFrame, got an array",
                              "pass the labels themselves (an array of one label per row)")
        dataset["labels"] = {"column": labels}
    elif labels is not None:
        dataset["labels"] = labels
    method: dict[str, Any] = {"name": algorithm if isinstance(algorithm, str) else "method", "algorithm": algorithm}
    for key, value in (("params", options.get("params")), ("predictor", options.get("predictor")),
                       ("criteria", None if criteria is None else list(criteria))):
        if value is not None:
            method[key] = value
    config: dict[str, Any] = {"name": name, "k": ks, "datasets": [dataset], "methods": [method]}
    for key, value in (("resamples", resamples), ("seed", seed), ("n", n), ("baseline_draws", options.get("baseline_draws")),
                       ("execution", options.get("execution"))):
        if value is not None:
            config[key] = value
    return config, {key: value for key, value in options.items() if key in run_options}


def _array(X: Any) -> Any:
    """``X`` as a 2-D array of numbers, or a ConfigError naming it."""
    import numpy as np

    fix = "pass an array of shape (n_samples, n_features), e.g. X.reshape(-1, 1) for one feature, or a DataFrame"
    try:
        array = X if isinstance(X, np.ndarray) else np.asarray(X)  # a masked array stays one: the config checks it
    except (ValueError, TypeError):
        raise ConfigError("X", f"expected an array of numbers, got {type(X).__name__}", fix) from None
    if array.ndim != 2:
        raise ConfigError("X", f"expected a 2-D array (n_samples, n_features), got a {array.ndim}-D array of shape "
                          f"{array.shape}", fix)
    if array.dtype.kind not in "biuf":
        raise ConfigError("X", f"expected real numbers, got values of dtype {array.dtype}", fix)
    return array


# The config's key paths of a choose_k call, as its arguments.
_ARGUMENTS = [(r"^datasets\[0\]\.data", "X"), (r"^datasets\[0\]\.labels", "labels"), (r"^datasets\[0\]\.n", "n"),
              (r"^datasets\[0\]\.name", "name"), (r"^datasets\[0\]", "X"), (r"^methods\[0\]\.params", "params"),
              (r"^methods\[0\]\.", ""), (r"^methods\[0\]", "algorithm")]


def as_arguments(error: ConfigError) -> ConfigError:
    """``error`` with the config's key paths named as ``choose_k``'s arguments (``criteria[1]``, ``X``)."""
    from ordercube.pipeline.errors import ConfigErrors

    if isinstance(error, ConfigErrors):
        return ConfigErrors.of([as_arguments(one) for one in error.errors])
    key = error.key
    for pattern, argument in _ARGUMENTS:
        key = re.sub(pattern, argument, key)
    return ConfigError(key, str(error)[len(error.key) + 2:])


def check_k(parsed: Config) -> None:
    """Every k of a choose_k call where each criterion is defined: the agreement compares them on one grid."""
    from ordercube.tasks.criteria import get_criterion

    criteria = parsed.methods[0].criteria
    lowest = max(get_criterion(name).min_k for name in criteria)
    if min(parsed.k) < lowest:
        undefined = [name for name in criteria if get_criterion(name).min_k > min(parsed.k)]
        raise ConfigError("k", f"k = {min(parsed.k)} is below {lowest}, the smallest k of {', '.join(undefined)}",
                          f"start k at {lowest}, e.g. k=range({lowest}, 11) (or choose criteria defined at "
                          f"k = {min(parsed.k)}: criteria=['gap'])")


def default_out(parsed: Config) -> str:
    """The default cube of a choose_k call: named by the digest of everything its values depend on."""
    import tempfile

    from ordercube.pipeline.config.specs import fingerprint

    digest = fingerprint({"identity": parsed.identity, "k": list(parsed.k), "resamples": parsed.resamples,
                          "n": [list(d.n) for d in parsed.datasets]})
    return os.fspath(Path(tempfile.gettempdir()) / CHOOSE_K_FOLDER / f"{digest}.zarr")


__all__ = ["Choice"]
