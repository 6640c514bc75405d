"""Data sources: synthetic generators (registered by name) and in-memory arrays (file datasets)."""

from tasks.datasets.sources import ArraySource, SyntheticSource, TrialData
from tasks.datasets.synthetic import SYNTHETIC, SyntheticDataset, get_synthetic

__all__ = ["SYNTHETIC", "ArraySource", "SyntheticDataset", "SyntheticSource", "TrialData", "get_synthetic"]
