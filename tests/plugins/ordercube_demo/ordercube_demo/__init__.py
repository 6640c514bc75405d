"""An ordercube plug-in: how many change points a 1-D series has, chosen by held-out error.

Imported once per process through its entry point (group ``ordercube.plugins``); the import registers a dataset
kind (``piecewise_constant``, of a new kind of objects, ``series``), an algorithm (``dp_segments``) and a criterion
(``heldout_sse``, with its report section).
"""

from ordercube_demo.family import Segmenter, check_series, heldout_sse, piecewise_constant
from ordercube.plugin import (
    Criterion, Decision, ObjectKind, SyntheticDataset, register_algorithm, register_criterion, register_dataset,
    register_objects,
)

register_objects("series", ObjectKind(dataset="a series of (time, value) points", taken="series",
                                      source="kind: piecewise_constant", unit="time points",
                                      fresh="a fresh series of n time points per trial"))
register_dataset(SyntheticDataset("piecewise_constant", piecewise_constant, {"segments": 4, "jump": 2.0, "noise": 0.3},
                                  true_k=lambda params: params["segments"], check=check_series, objects="series"))
register_algorithm(Segmenter("dp_segments", takes="series", seconds_per_point=1e-6))
register_criterion(Criterion(
    name="heldout_sse", min_k=1, reads="segmentations", computations={"dp_segments": heldout_sse},
    description="mean squared error of one half about the segment means fitted on the other (smallest wins)",
    decision=Decision(rule="smallest"), label="held-out squared error",
    report_sections=("ordercube_demo.report:section",)))
