"""A folder the worker processes of one machine share values through (:class:`ordercube.tasks.process_memo.
SharedStore`): the Gap statistic's reference dispersions (Tibshirani, Walther & Hastie 2001, eq. 3), the same for
every process, are computed by one of them and read by the others.

A local cluster makes the folder (a temporary one, removed when the cluster stops) and names it to its workers in
:data:`VARIABLE`; each worker process installs it before its first task (:func:`share_within_machine`). Workers
started elsewhere have no such variable and compute their own, as before. Values are ``.npy`` files written
under a temporary name and renamed into place, so a reader sees a whole file or none; a claim is a file created
exclusively.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ordercube.tasks.process_memo import use_shared_store

VARIABLE = "ORDERCUBE_SHARED_DIR"
_INSTALLED: list[str | None] = [None]


class FolderStore:
    """Arrays by name in ``folder`` (see the module docstring)."""

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = Path(folder)

    def get(self, name: str) -> np.ndarray | None:
        try:
            with open(self.folder / f"{name}.npy", "rb") as file:
                value = np.load(file, allow_pickle=False)
        except (FileNotFoundError, ValueError, OSError):  # absent, or unreadable: computed again
            return None
        value.flags.writeable = False
        return value

    def put(self, name: str, value: np.ndarray) -> None:
        temporary = self.folder / f".{name}.{os.getpid()}.tmp"
        try:
            with open(temporary, "wb") as file:
                np.save(file, np.asarray(value), allow_pickle=False)
            os.replace(temporary, self.folder / f"{name}.npy")
        except OSError:  # a full disk or a removed folder: the others compute it themselves
            temporary.unlink(missing_ok=True)

    def claim(self, name: str) -> bool:
        try:
            os.close(os.open(self.folder / f"{name}.claim", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        except FileExistsError:
            return False
        except OSError:  # the folder is gone: compute it here
            return True
        return True


def share_within_machine() -> None:
    """Install the folder that :data:`VARIABLE` names as this process's shared store (once; nothing when unset or
    not a folder)."""
    folder = os.environ.get(VARIABLE) or None
    if folder == _INSTALLED[0]:
        return
    _INSTALLED[0] = folder
    use_shared_store(FolderStore(folder) if folder and os.path.isdir(folder) else None)
