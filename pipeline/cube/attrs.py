"""What the cube says about itself: CF-style attributes of its variables, coordinates and group.

Every variable and coordinate gets a ``long_name`` and a ``description`` citing the paper and equation
it implements; ``units`` only where a quantity has a dimension (``seconds``: "s"). The criteria's values
are dimensionless (fractions, indices, log ratios, likelihoods), and CF lets dimensionless quantities
omit ``units``; their descriptions say "dimensionless". Counts and indices (``n``, ``k``, ``trial``) omit
it too. ``status`` carries CF ``flag_values``/``flag_meanings`` from :class:`ordercube.tasks.cell.Status`.

The group's attributes: CF's ``Conventions``, ``title``, ``source``, ``references``, plain numbers and
strings for the provenance a reader looks up (``ordercube_seed``, ``ordercube_name``,
``ordercube_fingerprint``, ``ordercube_versions`` as "package version; ..."), and the nested config,
identity and plan as JSON text (``ordercube_config``, ``ordercube_identity``, ``ordercube_plan``: zarr
could store them as nested objects, but netCDF and other readers of CF attributes could not).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ordercube.tasks.trial import Status

BASELINE = "lange_random"
CONVENTIONS = "CF-1.10"
#: Group attributes of formats 1 and 2 that format 3 replaced (by the ``true_k`` coordinate, the status
#: flags and the readable ``ordercube_versions``); an upgrade removes them.
LEGACY_ATTRIBUTES = ("ordercube_true_k", "ordercube_status_codes")
#: The cube's ``trial`` dimension is the config's ``resamples``: it is not renamed (``Dataset.resample``
#: is an xarray method, and every reader indexes ``trial``), so its attributes say so.
TRIAL_MEANING = "resample index (one split into halves per resample; the config's 'resamples' counts them)"

LANGE_2002 = "Lange, Braun, Roth & Buhmann (2002), Stability-Based Model Selection, NIPS 15"
DAUDIN = "Daudin & Mary-Huard, Model Selection in Classification: the Swapping Method"
LANGE_2004 = "Lange, Roth, Braun & Buhmann (2004), Stability-based validation of clustering solutions, Neural Computation 16"
SHAMIR_TISHBY = "Shamir & Tishby (2007), Cluster Stability for Finite Samples, NIPS 20"
TIBSHIRANI_WALTHER = "Tibshirani & Walther (2005), Cluster validation by prediction strength, JCGS 14"
GAP = "Tibshirani, Walther & Hastie (2001), Estimating the number of clusters in a data set via the gap statistic, JRSS B 63"
DUDOIT_FRIDLYAND = ("Dudoit & Fridlyand (2002), A prediction-based resampling method for estimating the number of "
                    "clusters in a dataset, Genome Biology 3")
REFERENCES = "\n".join([LANGE_2002, DAUDIN, LANGE_2004, SHAMIR_TISHBY, TIBSHIRANI_WALTHER, GAP, DUDOIT_FRIDLYAND,
                        "Schwarz (1978), Estimating the dimension of a model, Annals of Statistics 6",
                        "Akaike (1974), A new look at the statistical model identification, IEEE TAC 19"])

COORDINATES: dict[str, dict[str, str]] = {
    "dataset": {"long_name": "dataset", "description": "the config's datasets[].name"},
    "n": {"long_name": "sample size",
          "description": "points drawn per resample, split into two disjoint halves of n//2 (pairwise also draws an "
                         "evaluation sample of n more points); a count, no units"},
    "model": {"long_name": "method", "description": "the config's methods[].name (algorithm, parameters, predictor)"},
    "k": {"long_name": "number of clusters", "description": "candidate model order k; a count, no units"},
    "trial": {"long_name": "resample index", "description": TRIAL_MEANING},
    "part": {"long_name": "clustering of a trial",
             "description": "index of one of a trial's clusterings whose assignments are stored (the two halves, "
                            "Lange et al. 2002, or the data and its reference sets); its role per model is the group "
                            "attribute ordercube_part_roles"},
    "item": {"long_name": "item", "description": "a dataset's row (object), in the order of its file; a dataset's items "
                                                 "are those below its 'items'"},
    "items": {"long_name": "number of items",
              "description": "the dataset's number of fixed rows (objects), N; -1 where its trials draw fresh points"},
    "item_class": {"long_name": "known class of the item",
                   "description": "the item's class in the dataset's labels, a code into the attribute 'classes' "
                                  "({dataset: [name of code 0, ...]}); -1 where the dataset has no labels"},
    "item_name": {"long_name": "name of the item",
                  "description": "the item's row name in the data file; empty where the data names no rows"},
    "true_k": {"long_name": "true number of clusters",
               "description": "the dataset's known number of clusters (config 'true_k', else its generator's or its "
                              "label classes'), used for failure rates; -1 where unknown (also the array's fill value)"},
}

VARIABLES: dict[str, dict[str, str]] = {
    "status": {"long_name": "cell status",
               "description": "state of the cell: pending (not computed yet, the fill value), ok (values stored), failed, "
                              "infeasible (k > n/4: a half has fewer than 2 points per cluster; a classifier's learning "
                              "set too small for k), crashed (its worker process died computing it, every time)"},
    "reason": {"long_name": "reason of a failed, infeasible or crashed cell",
               "description": "the error message; empty for ok and pending cells"},
    "seconds": {"long_name": "compute time of the cell", "units": "s",
                "description": "wall-clock seconds spent computing the cell (the only variable not reproducible bit for bit)"},
    BASELINE: {"long_name": "random-labeling disagreement",
               "description": f"mean Hungarian-matched disagreement of two independent uniform random labelings of n//2 "
                              f"points with k labels: S(rho_k), the denominator of {LANGE_2004}, eq. (5); estimated from "
                              "the config's baseline_draws pairs; dimensionless, in [0, 1 - 1/k]"},
    "assignment": {"long_name": "assignment of items to clusters",
                   "description": "per resample and k, each of the trial's clusterings (part) as the cluster 0 .. k-1 "
                                  "of every item of the dataset, -1 where the item was not drawn into it or the cell is "
                                  "not ok: what co-clustering, consensus (Monti, Tamayo, Mesirov & Golub 2003) and "
                                  "other label-based criteria are reduced from without refitting"},
    "lange": {"long_name": "Lange stability, raw disagreement",
              "description": f"per resample, the Hungarian-matched disagreement between the second half's own clustering "
                             f"and the first half's solution extended to it by the predictor, {LANGE_2002}, eq. (5); "
                             f"dimensionless, in [0, 1). Stored raw, NOT normalised: the report and "
                             f"ordercube.criterion_scores divide it by the variable '{BASELINE}' at the same (n, k), "
                             f"S = S(alpha)/S(rho_k) of {LANGE_2004}, eq. (5) ({LANGE_2002}, eq. (6))"},
    "pairwise": {"long_name": "pairwise co-membership instability",
                 "description": f"per resample, theta_k: the share of m random pairs of the evaluation sample that the two "
                                f"halves' solutions disagree on putting together, {SHAMIR_TISHBY}, Theorem 3; "
                                "dimensionless, in [0, 1]; used as stored (smaller is more stable)"},
    "prediction_strength": {"long_name": "prediction strength",
                            "description": f"per resample, ps(k) = min over test clusters of the share of their pairs "
                                           f"that the training half's nearest-centroid solution also puts together, "
                                           f"{TIBSHIRANI_WALTHER}, definition of ps(k); "
                                           "dimensionless, in [0, 1]; larger is better"},
    "gap": {"long_name": "Gap statistic",
            "description": f"per resample, Gap(k) = mean_b log W*_kb - log W_k, {GAP}, eq. (3); dimensionless "
                           "(a difference of logs); decided with its standard error 'gap_sd'"},
    "gap_sd": {"long_name": "standard error of the Gap statistic",
               "description": f"per resample, s_k = sd_k sqrt(1 + 1/B) of the B reference sets, {GAP}, section 3 step 3; "
                              "dimensionless"},
    "clest": {"long_name": "Clest observed statistic",
              "description": f"per resample, the Fowlkes-Mallows index between an LDA classifier's prediction of the second "
                             f"half and its own clustering, {DUDOIT_FRIDLYAND}; t_k is its median over resamples; "
                             "dimensionless, in [0, 1]"},
    "clest_null": {"long_name": "Clest reference statistic",
                   "description": f"per resample, t0_k: the same statistic's median over splits of one reference set drawn "
                                  f"from the Gap statistic's null, {DUDOIT_FRIDLYAND}; the decision compares t_k with them "
                                  "(step 4); dimensionless, in [0, 1]"},
    "bic": {"long_name": "Bayesian information criterion",
            "description": "per resample, BIC(k) = -2 log L + p log n of a Gaussian mixture fitted by EM to the whole "
                           "sample (Schwarz 1978); dimensionless; smaller is better"},
    "aic": {"long_name": "Akaike information criterion",
            "description": "per resample, AIC(k) = -2 log L + 2 p of a Gaussian mixture fitted by EM to the whole sample "
                           "(Akaike 1974); dimensionless; smaller is better"},
    "swapping": {"long_name": "swapping criterion",
                 "description": f"per resample, C(phi_k) = resubstitution error + swap_penalty, {DAUDIN}, eq. (5); an "
                                "estimate of the conditional error rate; dimensionless; smaller is better"},
    "swap_penalty": {"long_name": "swapping covariance penalty",
                     "description": f"per resample, (2/n) sum_i p_i (1 - p_i) [phi(x_i|Y_i=1) - phi(x_i|Y_i=0)] with the "
                                    f"plug-in p_i of eq. (4)/(6) (n0 = 10 unless the config says otherwise), {DAUDIN}; "
                                    "the estimate of the bias CER - EER; dimensionless"},
    "loo_cv": {"long_name": "leave-one-out error rate",
               "description": f"per resample, the share of learning points misclassified by the classifier fitted on the "
                              f"others ((n-1,1) cross-validation, {DAUDIN}, method CV); dimensionless, in [0, 1]"},
    "resubstitution": {"long_name": "empirical (resubstitution) error rate",
                       "description": "per resample, the share of learning points the fitted classifier misclassifies "
                                      "(kNN: each point counts as its own first neighbour); a diagnostic; in [0, 1]"},
    "test_error": {"long_name": "test error rate",
                   "description": "per resample, the share of the held-out test points misclassified; its argmin is the "
                                  f"oracle (O) of {DAUDIN}, Table 1; dimensionless, in [0, 1]"},
    "true_error": {"long_name": "true error rate",
                   "description": "per resample, P(phi(X) != Y) computed exactly from the generator (Kearns' intervals: "
                                  f"eta + (1 - 2 eta) lambda(phi != f*)); its argmin is the oracle (O) of {DAUDIN}"},
    "conditional_error": {"long_name": "conditional error rate",
                          "description": "per resample, the error of the fitted classifier on new labels drawn at the "
                                         f"learning points, computed exactly (CER of {DAUDIN}); in [0, 1]"},
    "agreement": {"long_name": "agreement with known classes",
                  "description": f"per resample, share of points whose cluster, matched one-to-one to the known classes by "
                                 f"the Hungarian method, is their class ({LANGE_2002}, section 4); a diagnostic, not a "
                                 "model-order criterion; NaN without labels; dimensionless, in [0, 1]"},
}


def status_attrs() -> dict[str, Any]:
    """CF flags of ``status``, one per :class:`Status` member, in code order."""
    return {**VARIABLES["status"], "flag_values": [int(s) for s in Status],
            "flag_meanings": " ".join(s.name.lower() for s in Status)}


def variable_attrs(name: str) -> dict[str, Any]:
    """The attributes of cube variable or coordinate ``name``: written here, or a registered criterion's own
    description (Frank et al.'s (2011) transfer costs and matrix criteria, a plugin's); an unregistered name a generic one."""
    if name == "status":
        return status_attrs()
    if name in COORDINATES:
        return dict(COORDINATES[name])
    if name in VARIABLES:
        return dict(VARIABLES[name])
    from ordercube.tasks.criteria import CRITERIA, VARIABLES as CRITERION_OF  # a registered criterion describes itself

    if CRITERION_OF.get(name) in CRITERIA:
        return {"long_name": name, "description": f"per resample, {CRITERIA[CRITERION_OF[name]].description}"}
    return {"long_name": name, "description": f"per resample, the value of the plugin criterion output {name!r} as its "
                                              "criterion computed it (see the plugin's documentation)"}


def array_attrs(name: str, dims: tuple[str, ...]) -> dict[str, Any]:
    """:func:`variable_attrs` for an array written through zarr, not xarray: with the CF ``coordinates``
    attribute xarray adds itself, so that ``true_k`` reads as a coordinate of every variable on ``dataset``."""
    return {**variable_attrs(name), **({"coordinates": "true_k"} if "dataset" in dims else {})}


def versions_text(versions: Mapping[str, str]) -> str:
    """Package versions as one readable line: ``"ordercube 0.1.0; numpy 2.4.6; ..."``."""
    return "; ".join(f"{package} {version}" for package, version in versions.items())


def group_attrs(name: str, seed: int, fingerprint: str, versions: Mapping[str, str]) -> dict[str, Any]:
    """The group's attributes a reader looks up without decoding JSON."""
    return {"Conventions": CONVENTIONS, "title": f"ordercube cube of config {name!r}",
            "source": f"ordercube {versions.get('ordercube', '')}".strip(), "references": REFERENCES,
            "ordercube_name": name, "ordercube_seed": int(seed), "ordercube_fingerprint": fingerprint,
            "ordercube_versions": versions_text(versions)}


def true_k_labels(names: list[str], known: Mapping[str, int]) -> np.ndarray:
    """The ``true_k`` coordinate's values for the datasets ``names``: -1 where unknown."""
    return np.array([int(known.get(name, -1)) for name in names], dtype=np.int64)
