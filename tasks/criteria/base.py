"""The contract between the cell and the criteria."""

from __future__ import annotations

from collections.abc import Callable, Mapping
import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ordercube.tasks.params import Param, check_params, choice, number, undeclared
from ordercube.tasks.predictors import Predictor
from ordercube.tasks.process_memo import once_per_process

Labels = NDArray[np.int64]


@dataclass
class TrialFits:
    """Both halves of a trial clustered with ``k`` clusters, and what a criterion may need besides.

    Attributes
    ----------
    first, second : ndarray of shape (m, n_features)
        The disjoint halves.
    labels_first, labels_second : ndarray of shape (m,)
        Each half's own clustering.
    k : int
    predictor : callable
        Extends a solution to new points: ``predictor(X_train, labels, k, X_new)``.
    evaluation : ndarray of shape (2m, n_features) or None
        Independent points, present when a criterion of the method needs them.
    pairing : ndarray of shape (2m,) or None
        A random permutation of the evaluation points, shared by every k of the trial.
    truth : ndarray of shape (2m,) or None
        The known classes of ``first`` then ``second``, when the dataset has them.
    model_first, model_second : object or None
        Each half's fitted model, when a criterion of the method reads it (``Criterion.models``): of the kind
        ``Algorithm.model`` names (``"mixture"``: a scikit-learn-like mixture with ``score_samples``;
        ``"centroids"``: an object with ``centers`` of shape (k, n_features); ``"graph_partition"``: the Gibbs
        sampler's restarts). ``model_kind`` names the kind.
    paired : bool
        Row i of ``second`` was drawn from the same component as row i of ``first`` (a synthetic dataset
        with ``paired: true``; Frank et al. 2011's generative mapping, eq. 5).
    """

    first: NDArray[np.float64]
    second: NDArray[np.float64]
    labels_first: Labels
    labels_second: Labels
    k: int
    predictor: Predictor
    evaluation: NDArray[np.float64] | None = None
    pairing: NDArray[np.int64] | None = None
    truth: NDArray[np.int64] | None = None
    model_first: Any = None
    model_second: Any = None
    model_kind: str | None = None
    paired: bool = False

    @cached_property
    def second_predicted_from_first(self) -> Labels:
        """The first solution extended to the second half."""
        return self.predictor(self.first, self.labels_first, self.k, self.second)

    @cached_property
    def evaluation_labels(self) -> tuple[Labels, Labels]:
        """Both solutions extended to the evaluation sample."""
        if self.evaluation is None:
            raise ValueError("this criterion needs an evaluation sample, but none was drawn")
        return (
            self.predictor(self.first, self.labels_first, self.k, self.evaluation),
            self.predictor(self.second, self.labels_second, self.k, self.evaluation),
        )


@dataclass
class TrialSample:
    """One trial's whole sample, for criteria that look beyond the two halves (Gap, Clest, BIC).

    Attributes
    ----------
    X : ndarray of shape (n, n_features)
        The trial's sample: the first half, then the second.
    ks : list of int
        The k values of the block that can be fitted on a half.
    fits : dict
        The halves' :class:`TrialFits` per k (a k whose fit failed is absent).
    cluster : callable
        ``cluster(X, ks, key)`` → ``{k: labels}``: the method's algorithm with its parameters on any
        data (the whole sample, a reference set), its randomness ``fit_rng(k, key)`` (``fit_rng(0, key)``
        for an algorithm that fits every k at once).
    rng : callable
        ``rng(key)`` → a generator addressed by the trial's coordinates and ``key``, the same for every
        method and k (the Gap statistic's reference sets are shared by all of them).
    fit_rng : callable
        ``fit_rng(k, key)`` → a generator addressed by the trial, the method, k and ``key``.
    algorithm : str
        The method's algorithm name, and ``params`` its parameters.
    shared_rng : callable
        ``shared_rng(key)`` → a generator addressed by the dataset, n and ``key`` only, not the trial: the same
        for every trial and method (the Gap statistic's reference sets, the same whatever the resample).
    shared_cluster : callable
        ``shared_cluster(X, ks, key)`` → ``{k: labels}``: as ``cluster``, its randomness addressed by the dataset,
        n, method, k and ``key``, not the trial: the same data give the same labels in every trial.
    scope : tuple
        What the shared streams and ``shared_cluster`` depend on besides their arguments (the root seed, dataset,
        n, method, algorithm and its parameters): with the criterion's own key, it addresses :meth:`shared`.
    fits_each_k : bool
        True when ``shared_cluster``'s labels at k depend on k alone, not on the other ks asked with it (an
        algorithm fitted one k at a time): a value computed at one k is then the same whichever block asks.

    Keys are tuples of four non-negative integers, the first naming the use (1: Gap, 2: Clest,
    3: mixture fits), so that the streams of different uses never coincide.
    """

    X: NDArray[np.float64]
    ks: list[int]
    fits: dict[int, TrialFits]
    cluster: Callable[[NDArray[np.float64], list[int], tuple[int, int, int, int]], dict[int, Labels]]
    rng: Callable[[tuple[int, int, int, int]], np.random.Generator]
    fit_rng: Callable[[int, tuple[int, int, int, int]], np.random.Generator]
    algorithm: str
    params: Mapping[str, Any]
    shared_rng: Callable[[tuple[int, int, int, int]], np.random.Generator] | None = None
    shared_cluster: Callable[[NDArray[np.float64], list[int], tuple[int, int, int, int]], dict[int, Labels]] | None = None
    scope: tuple[Any, ...] = ()
    fits_each_k: bool = False
    memo: dict[Any, Any] = field(default_factory=dict)

    def cached(self, key: Any, compute: Callable[[], Any]) -> Any:
        """``compute()`` once per trial, shared by the criteria that need the same thing (one mixture fit
        for BIC and AIC)."""
        if key not in self.memo:
            self.memo[key] = compute()
        return self.memo[key]

    def shared(self, key: Any, compute: Callable[[], Any]) -> Any:
        """``compute()`` once per worker process for every trial that asks with the same ``key``: a value that is a
        function of ``key`` and :attr:`scope` alone (drawn from ``shared_rng`` and fitted by ``shared_cluster`` on
        data ``key`` determines), so that which trial computes it, in which process, cannot change a bit.
        ``key`` must then hold everything of the trial the value depends on (a reference box's bytes, the ks)."""
        return once_per_process((self.scope, key), compute)


@dataclass(frozen=True)
class Clusterings:
    """Every stored clustering of one (dataset, n, method), per k: what a criterion computed from stored
    assignments reduces (``Criterion.reduce``), after the sweep, without refitting.

    Attributes
    ----------
    ks : tuple of int
        The orders with at least one stored clustering, ascending.
    data : mapping
        k → int array of shape (R, items): every clustering of the data (trials x data parts, in trial order),
        the cluster 0 .. k-1 of each item, -1 where the item was not drawn into that clustering. Rows of cells
        that are not ok are left out.
    references : mapping
        k → int array of shape (B, R, items): the clusterings of each of B reference data sets (John et al. 2020),
        the same resamples; empty when the scheme drew none.
    trials : ndarray of shape (R,)
        The trial each row of ``data`` came from (a bootstrap over resamples resamples trials).
    items : int
        The number of items (the dataset's rows or objects).
    rng : callable
        ``rng(key)`` → a generator addressed by the cube's seed, the group's coordinates and ``key`` (a tuple of
        non-negative integers): the reduction's own randomness (bootstrap over resamples), the same bits on
        every run.
    weights : ndarray of shape (R,) or None
        Each row's weight in every sum over resamples (a bootstrap replicate over resamples: how many times its
        trial was drawn); None: every row counts once. A reduction honours it (a consensus matrix is
        sum_h w_h [same cluster] / sum_h w_h [both drawn]).
    """

    ks: tuple[int, ...]
    data: Mapping[int, NDArray[np.int16]]
    references: Mapping[int, NDArray[np.int16]]
    trials: NDArray[np.int64]
    items: int
    rng: Callable[[tuple[int, ...]], np.random.Generator]
    weights: NDArray[np.float64] | None = None


# What a decision rule may be re-run with, per rule (``ordercube report --decide CRITERION.FIELD=VALUE``).
ADJUSTABLE: dict[str, tuple[str, ...]] = {
    "smallest": ("ties", "aggregate"),
    "largest": ("ties", "aggregate"),
    "largest_above": ("threshold",),
    "first_above": ("threshold", "aggregate"),
    "first_below": ("threshold", "aggregate"),
    "gap": ("method", "se_factor"),
    "clest": ("p_max", "d_min"),
    "none": (),
}
GAP_METHODS = ("Tibs2001SEmax", "firstSEmax", "globalSEmax", "firstmax", "globalmax")
AGGREGATES = ("mean", "median", "median_of_choices")
# The values each adjustable field accepts: a NaN threshold would silently make every k (or none) qualify.
DECISION_RANGES: dict[str, Param] = {
    "threshold": number(),
    "method": choice(*GAP_METHODS),
    "se_factor": number(0.0),
    "p_max": number(0.0, 1.0),
    "d_min": number(),
    "ties": choice("largest", "smallest"),
    "aggregate": choice(*AGGREGATES),
}


@dataclass(frozen=True)
class Decision:
    """How k̂ follows from a criterion's per-k values (the mean over trials, or one trial's values).

    ``smallest``: the argmin over k. ``largest``: the argmax over k (the PSNR oracle, the silhouette). Values
    equal within ``ordercube.tasks.criteria.rules.TIE_RTOL`` (relative) tie, and a tie goes to the smallest k
    (``ties="smallest"``, the default: no registered criterion's paper states another rule) or, with
    ``ties="largest"``, to the largest.
    ``largest_above``: the largest k whose value is at least ``threshold`` (Prediction Strength);
    no choice (-1) when no k reaches it. Thresholds are compared within the same tolerance.
    ``first_above`` / ``first_below``: the smallest k whose value is at least / below ``threshold`` (Molloy's
    coverage and increment rules); -1 when none is.
    ``gap``: the Gap statistic's rules by their names in R's ``cluster::maxSE`` (``method``, ``se_factor``).
    ``clest``: Dudoit & Fridlyand's rule (``p_max``, ``d_min``).
    ``none``: not a model-order criterion (a diagnostic such as the agreement with known classes).

    ``aggregate`` (rules ``smallest``, ``largest``, ``first_above``, ``first_below``): how the trials make one
    k̂: the rule on the mean over trials (``mean``), on the per-k medians (``median``: Owen & Perry's
    bi-cross-validation as Frank et al. run it; a k missing in a trial that has values has no median), or the
    lower median of the trials' own choices (``median_of_choices``: Frank et al.'s MTC, "the median over 20
    random splits"). The rules themselves are :mod:`ordercube.tasks.criteria.rules`.

    ``threshold_range``: the thresholds that mean something for the criterion's values (a share in [0, 1] for
    Prediction Strength and Molloy's coverage); a threshold outside it is refused.

    ``output``: the output whose curve the rule reads (default, empty: the criterion's name; ``consensus_area``
    decides on its ``consensus_delta``, Monti et al. 2003's Delta(K)).

    ``error_output``: an output holding each k's standard error from draws that a bootstrap over the resamples keeps
    fixed (M3C's reference data sets: ``rcsi_se``); the k's that cannot be told apart from k̂ widen by it.
    """

    rule: str = "smallest"
    threshold: float | None = None
    method: str | None = None
    se_factor: float | None = None
    p_max: float | None = None
    d_min: float | None = None
    ties: str = "smallest"
    aggregate: str = "mean"
    threshold_range: tuple[float, float] = (-math.inf, math.inf)
    output: str = ""
    error_output: str = ""


@dataclass(frozen=True)
class Criterion:
    """A registered criterion.

    A criterion is computed either per (trial, k) from the halves' fits (``evaluate``) or per trial
    for every k at once from the whole sample (``evaluate_trial``), never both.

    Attributes
    ----------
    name : str
        Also the name of its (first) variable in the cube.
    evaluate : callable or None
        ``evaluate(fits, **options)`` → the raw per-trial value stored in the cube.
    evaluate_trial : callable or None
        ``evaluate_trial(sample, **options)`` → ``{output: {k: value}}`` for every output and k of the sample.
    min_k : int
        The smallest k the criterion is defined for.
    needs_evaluation_sample : bool
        Whether the trial must draw an independent evaluation sample of n points.
    description : str
    normalised_by_random_labels : bool
        Whether its score divides the raw value by the same statistic for random labelings of n/2
        points with k labels (Lange et al. 2004, eq. 5); the driver then estimates that baseline per (n, k).
    decision : Decision
        Its default decision rule; the reducers can re-decide a stored cube with other parameters.
    outputs : tuple of str
        The cube variables it stores (default: its name only).
    options : mapping
        Options a config may set (``criteria: [{gap: {references: 50}}]``), with their defaults.
    ranges : mapping
        The values each option accepts (:class:`ordercube.tasks.params.Param`); every option must have one.
    algorithms : tuple of str or None
        The only algorithms it is defined for (BIC and AIC: the Gaussian mixture), or None for any.
    extra_fits : callable
        ``extra_fits(options)`` → the fits it adds to a trial, in units of the halves' fits (one fit of the
        trial's n points at every k), as a function of its resolved options: the Gap statistic's sample and its
        ``references`` sets (made once per process, spread over its trials), Clest's ``splits``, BIC's mixture. Used only to estimate the work (to size tasks,
        to choose between this process and a cluster, the "about N s of work" line). Default: no fits (0), as
        for a criterion computed from the halves' fits alone; a plug-in whose criterion fits models of its own
        declares them here, else its work is underestimated.
    seconds_per_cell : callable
        ``seconds_per_cell(options, n)`` → its own compute time per cell beyond the fits it declares (a
        classifier trained per split, O(n^2) distances), in seconds on this project's 2-core machine, for a
        trial of ``n`` points. Default: 0 (its work is in its fits). Measured by ``benchmarks/cost_model.py``.
    shares_fits : str
        Criteria of a method that name the same tag make their extra fits once and share them (BIC and AIC: one
        mixture per trial and k): the estimate counts the group's largest ``extra_fits`` once. Empty (the
        default): its fits are its own.
    reads : str
        What it is computed from, matched against what the method's algorithm gives (``gives`` of
        :mod:`ordercube.tasks.algorithms.kinds`): ``"labels"`` (the halves' fits, by ``evaluate`` or ``evaluate_trial``; the
        default), ``"error_rates"`` (a classifier's kernel computes it with the labels as the response, Daudin &
        Mary-Huard 2008; its ``options`` are the kernel's keyword arguments), ``"orders"`` (every order of a trial
        from one fit, by the computation it registers for the method's model in ``computations``), or a
        plug-in's own tag.
    computations : mapping
        Algorithm name → the function that computes it for that algorithm's family (a matrix model's:
        ``f(trial, ranks, rng)`` → values of shape (len(ranks),)); empty for a criterion computed by ``evaluate``,
        ``evaluate_trial`` or a classifier's kernel. Its keys are the algorithms it is defined for.
    needs_data : tuple of str
        What the dataset must provide (its ``provides``): ``"labels"``, ``"target"`` (exact error rates),
        ``"paired"`` (paired halves), ``"image"`` (a clean image), ``"test_set"``, ...
    check : callable or None
        ``check(options, ks)`` tests its resolved options against the config's ks and raises ``ParamError``
        (a rule stated for odd k only).
    models : tuple of str or None
        The kinds of fitted model it reads from ``TrialFits.model_first`` (an algorithm's ``Algorithm.model``:
        ``"mixture"``, ``"centroids"``); None when it reads labels only. A method whose algorithm fits no such
        model is refused when the config is read.
    needs_paired_halves : bool
        It maps row i of the second half to row i of the first (Frank et al. 2011, eq. 5): only for a
        synthetic dataset that draws paired halves.
    oracle : bool
        It reads the noise-free data (the clean image, X*): its k̂ is the best order, k*, not a choice a user
        without the clean data could make; the report measures the other criteria's loss against it.
    label : str
        The y axis of the figures of its own variable (``name``): what the value is (default: its name). The
        figures add :attr:`citation` below it (:meth:`axis_label`).
    labels : mapping
        The same for each of its other outputs (``consensus_delta``: Monti's Delta(k)); an output not named here is
        labelled by its name.
    no_choice : str
        Why its rule chose no k (a k̂ of -1, printed ``none``), in words, when its rule can choose none; empty: the
        report says it from the rule (no k reached the threshold).
    citation : str
        The one paper the report, the figures and the docs credit for it, as "Author year", "Author & Author year"
        or "Author et al. year" (Lange et al. 2004); empty for a diagnostic that follows no paper.
    sqrt_n_scaling : bool
        An instability that shrinks like 1/sqrt(n) at a stable k (Shamir & Tishby 2007, Thm. 3): the report draws
        sqrt(n) x its mean against n, flat where that holds.
    needs_coordinates : bool
        It reads the points' coordinates (distances, centroids: the internal indices), which a graph's nodes
        do not have.
    reduce : callable or None
        A criterion computed from stored assignments (``reads="assignments"``): ``reduce(clusterings, **options)``
        → ``{output: values of shape (len(clusterings.ks),)}``, run by the reducers on a stored cube
        (:class:`Clusterings`), never in a trial; it stores no cube variable, so adding it to a config whose
        cube stored assignments computes nothing new, and its options can be changed at decision time
        (``--decide pac.window=0.05,0.95``).
    report_sections : tuple of str
        The report sections it contributes beyond its k̂ row and its figures, as import paths
        ``"package.module:function"`` of functions ``section(context) -> SectionResult``
        (:mod:`ordercube.pipeline.report.section`; a path, so that this package never imports the report). A report calls
        each section declared by the criteria of its cube once, in the order of the criteria's registry.
    needs_parts : mapping of str to str
        For a criterion reduced from stored clusterings: the part roles it needs among those the method's scheme
        stores (``part_roles`` of :class:`ordercube.tasks.schemes.base.Scheme`), each with the fix to give when
        the scheme's parameters store none (M3C needs ``"reference"`` parts). A config without them is refused
        before the sweep, naming ``scheme_params``.
    """

    name: str
    min_k: int
    description: str
    evaluate: Callable[[TrialFits], float] | None = None
    evaluate_trial: Callable[..., dict[str, dict[int, float]]] | None = None
    needs_evaluation_sample: bool = False
    normalised_by_random_labels: bool = False
    decision: Decision = Decision()
    outputs: tuple[str, ...] = ()
    options: Mapping[str, Any] = field(default_factory=dict)
    ranges: Mapping[str, Param] = field(default_factory=dict)
    algorithms: tuple[str, ...] | None = None
    extra_fits: Callable[[Mapping[str, Any]], float] = lambda options: 0.0
    seconds_per_cell: Callable[[Mapping[str, Any], int], float] = lambda options, n: 0.0
    shares_fits: str = ""
    models: tuple[str, ...] | None = None
    reads: str = "labels"
    computations: Mapping[str, Callable[..., NDArray[np.float64]]] = field(default_factory=dict)
    needs_data: tuple[str, ...] = ()
    check: Callable[[Mapping[str, Any], tuple[int, ...]], None] | None = None
    needs_paired_halves: bool = False
    oracle: bool = False
    label: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    citation: str = ""
    no_choice: str = ""
    sqrt_n_scaling: bool = False
    needs_coordinates: bool = False
    report_sections: tuple[str, ...] = ()
    needs_parts: Mapping[str, str] = field(default_factory=dict)
    reduce: Callable[..., Mapping[str, NDArray[np.float64]]] | None = None

    @property
    def variables(self) -> tuple[str, ...]:
        return self.outputs or (self.name,)

    @property
    def decided_on(self) -> str:
        """The output whose curve its decision rule reads (``decision.output``, else its name)."""
        return self.decision.output or self.name

    def label_of(self, variable: str) -> str:
        """What its output ``variable`` is, in words: :attr:`label` for its own variable, :attr:`labels` for the
        others, else the variable's name."""
        if variable == self.name:
            return self.label or self.name
        return self.labels.get(variable, variable)

    def axis_label(self, variable: str) -> str:
        """The axis label of a figure that plots ``variable``: :meth:`label_of` and, below it, :attr:`citation`."""
        return self.label_of(variable) + (f"\n({self.citation})" if self.citation else "")

    def reference_lines(self, variable: str, decision: Decision | None = None) -> dict[float, str]:
        """The horizontal lines a figure of ``variable`` draws: the threshold of ``decision`` (default: its own)
        when the rule reads this variable's curve (:attr:`decided_on`), none for another output (the areas A(k) of
        ``consensus_area`` are not compared with Delta(k)'s threshold)."""
        decision = self.decision if decision is None else decision
        if variable != (decision.output or self.name) or decision.threshold is None:
            return {}
        return {float(decision.threshold): f"threshold {float(decision.threshold):g}"}

    def __post_init__(self) -> None:
        missing = undeclared(self.options, self.ranges)
        if missing:  # fail at import: an option nobody checks would reach the kernels unchecked
            raise TypeError(f"criterion {self.name!r}: option(s) {missing} lack a declared range that holds "
                            "their default")

    def reads_halves_only(self, model: str | None = None) -> bool:
        """Whether it is computed from the halves' fits alone (their labels, or a fitted model of kind ``model``),
        as objects known only by their edges or dissimilarities allow: not from coordinates, a whole sample,
        reference sets or an evaluation sample."""
        return (self.evaluate is not None and not self.needs_evaluation_sample and self.reads == "labels"
                and not self.needs_coordinates and (self.models is None or model in self.models))

    @property
    def defined_for(self) -> tuple[str, ...] | None:
        """The only algorithms it is defined for (``algorithms``, else the keys of ``computations``), or None."""
        if self.algorithms is not None:
            return self.algorithms
        return tuple(self.computations) or None

    @property
    def counts_clusters(self) -> bool:
        """Whether its k̂ is a number of clusters, comparable with a dataset's true k (a classifier's order is
        not)."""
        return self.reads != "error_rates"

    def resolve(self, options: Mapping[str, Any]) -> dict[str, Any]:
        """``options`` over the defaults; ``ParamError`` naming an unknown option or a value out of range."""
        check_params(options, self.ranges)
        return {**self.options, **options}
