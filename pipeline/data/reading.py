"""How a dataset entry says its table is read: header, columns, row names, the labels' column.

A record of the config (part of a dataset's identity) that the table reader (:mod:`ordercube.pipeline.data.tables`)
follows; apart from it so that the specs can name it without importing pandas.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Reading:
    """How the entry says its table is read (``None``: not given)."""

    header: bool | None = None
    columns: tuple[Any, ...] | None = None
    exclude: tuple[Any, ...] = ()
    row_names: Any = None
    label_column: Any = None  # a column holding the labels (``labels: {column: NAME}``)
    label_in_table: bool = False  # True: the labels must come from this table (no labels path)

    def given(self) -> dict[str, Any]:
        """The options that change what is read, for the dataset's identity (empty for the defaults)."""
        out: dict[str, Any] = {}
        if self.header is False:
            out["header"] = False
        if self.columns is not None:
            out["columns"] = [str(c) for c in self.columns]
        if self.exclude:
            out["exclude"] = [str(c) for c in self.exclude]
        if self.row_names is not None:
            out["row_names"] = str(self.row_names)
        if self.label_in_table:
            out["labels_from_data"] = str(self.label_column)
        return out
