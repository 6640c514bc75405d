"""Data sources: synthetic generators (registered by name) and in-memory arrays (file datasets)."""

from ordercube.tasks.datasets.sources import ArraySource, SyntheticSource, TrialData
from ordercube.tasks.datasets.synthetic import SYNTHETIC, ParameterError, SyntheticDataset, get_synthetic

__all__ = ["SYNTHETIC", "ArraySource", "ParameterError", "SyntheticDataset", "SyntheticSource", "TrialData", "get_synthetic"]
