"""The papers' datasets by name: ``path: catalog:DATASET/FILE`` in a config runs on any machine.

The registry (``catalog.yaml`` beside this module) lists each dataset's files with the sha256 of the file as
ordercube reads it, its public source, citation and licence. A name resolves, in this order, to

1. ``$ORDERCUBE_DATA/DATASET/FILE`` (a folder of the user's: a lab's copy, a cluster's shared disk);
2. ``shared/datasets/DATASET/FILE`` beside the repository (where the project keeps its copy: tests never download);
3. the cache, ``$ORDERCUBE_CACHE`` or pooch's per-user cache folder for ordercube, where a missing file is
   fetched with pooch from its source (``$ORDERCUBE_MIRROR``, a base URL, stands in for the sources' hosts:
   it serves ``DATASET/<the source's file name>``), or made from the source's own format by a converter below.

A file found anywhere is checked against its sha256: a wrong file is never read silently (``ConfigError``
naming the file, both hashes and the fix). Files whose originals are in a format nothing here reads (R data
files) are not made up: the error says what to download and where to put the result.
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from ordercube.pipeline.errors import ConfigError
from ordercube.pipeline.files.inputfile import read_input

PREFIX = "catalog:"
REGISTRY = Path(__file__).with_name("catalog.yaml")
SHARED = Path(__file__).resolve().parents[3] / "shared" / "datasets"


@cache
def registry() -> dict[str, Any]:
    return yaml.safe_load(REGISTRY.read_text(encoding="utf-8"))


def is_catalog(given: str) -> bool:
    return given.startswith(PREFIX)


def resolve_path(given: str, base: Path, key: str) -> str:
    """The file a config's path names: ``base / given``, or for ``catalog:DATASET/FILE`` the checked file
    found or fetched as the module docstring says (``ConfigError`` under ``key`` when it cannot be had)."""
    if not is_catalog(given):
        return str(base / given)
    dataset, name = _entry(given, key)
    for folder in _folders():
        path = folder / dataset / name
        if path.is_file():
            check_file(path, dataset, name, key)
            return str(path)
    return str(_fetch(dataset, name, key))


def _entry(given: str, key: str) -> tuple[str, str]:
    dataset, slash, name = given.removeprefix(PREFIX).partition("/")
    datasets = registry()
    if dataset not in datasets:
        raise ConfigError(key, f"unknown catalog dataset {dataset!r} in {given!r}",
                          f"expected catalog:DATASET/FILE with DATASET one of {sorted(datasets)}")
    files = datasets[dataset]["files"]
    if not slash or name not in files:
        raise ConfigError(key, f"{given!r} names no file of the catalog dataset {dataset}",
                          f"expected one of {[PREFIX + dataset + '/' + file for file in files]}")
    return dataset, name


def _folders() -> Iterator[Path]:
    """Where a catalog file is looked for, in order (the cache's place, which imports pooch, only when needed)."""
    if given := os.environ.get("ORDERCUBE_DATA"):
        yield Path(given)
    yield SHARED
    yield cache_folder()


def cache_folder() -> Path:
    given = os.environ.get("ORDERCUBE_CACHE")
    if given:
        return Path(given)
    import pooch

    return Path(pooch.os_cache("ordercube"))


def check_file(path: Path, dataset: str, name: str, key: str) -> None:
    """``ConfigError`` unless ``path`` is the catalog's ``dataset/name`` byte for byte."""
    expected = registry()[dataset]["files"][name]["sha256"]
    actual = read_input(path, key, expected=f"the catalog's {PREFIX}{dataset}/{name}").sha256
    if actual == expected:
        return
    cached = cache_folder() in path.parents
    fix = ("delete it and run again to fetch it anew" if cached else
           f"replace it with the catalog's file (sources: {', '.join(registry()[dataset]['source'])}), or move it "
           f"away to use the next place ({', '.join(str(folder) for folder in _folders())}); to read your own "
           f"version on purpose, give its path instead of {PREFIX}{dataset}/{name}")
    raise ConfigError(key, f"{path} is not the catalog's {PREFIX}{dataset}/{name}: its sha256 is {actual}, "
                           f"the catalog's {expected}", fix)


def _fetch(dataset: str, name: str, key: str) -> Path:
    """The file made in the cache from its source, checked; ``ConfigError`` where it cannot be made here."""
    entry, target = registry()[dataset]["files"][name], cache_folder() / dataset / name
    places = ", ".join(str(folder / dataset / name) for folder in _folders())
    if "url" not in entry and "convert" not in entry:
        raise ConfigError(key, f"{PREFIX}{dataset}/{name} is not on this machine (looked for {places})",
                          f"{registry()[dataset]['manual']}; then put it in one of those places (ORDERCUBE_DATA "
                          "names a folder of DATASET/FILE files)")
    source = entry.get("url") or entry["from"]
    if "://" in source:
        source_path = _download(source, dataset, key, places,
                                into=cache_folder() / "sources" / dataset / source.rsplit("/", 1)[1])
    else:  # another file of the dataset, found or made the same way
        source_path = Path(resolve_path(PREFIX + dataset + "/" + source, Path(), key))
    made = CONVERTERS[entry["convert"]](source_path) if "convert" in entry else source_path.read_bytes()
    if (actual := hashlib.sha256(made).hexdigest()) != entry["sha256"]:  # nothing kept: never a wrong file
        if "://" in source:
            source_path.unlink()  # the next run downloads it again
        how = f"converted by {entry['convert']} from" if "convert" in entry else "downloaded from"
        where = _where(source, dataset) if "://" in source else f"{PREFIX}{dataset}/{source}"
        raise ConfigError(key, f"{PREFIX}{dataset}/{name} {how} {where} has sha256 {actual}, the catalog's "
                               f"{entry['sha256']} (the source changed, or a mirror serves another file)",
                          f"{registry()[dataset].get('manual') or 'get the file as published'}, and put it in one "
                          f"of {places}")
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.{os.getpid()}.part")  # two runs fetching at once: one file each
    partial.write_bytes(made)
    partial.replace(target)  # whole or not at all: a second run at once may read it
    return target


def _where(url: str, dataset: str) -> str:
    """``url``, or its stand-in on ``$ORDERCUBE_MIRROR`` (a lab's copy of the sources, a test's local server)."""
    mirror = os.environ.get("ORDERCUBE_MIRROR")
    return f"{mirror.rstrip('/')}/{dataset}/{url.rsplit('/', 1)[1]}" if mirror else url


def _download(url: str, dataset: str, key: str, places: str, *, into: Path) -> Path:
    """``url`` (or its stand-in on ``$ORDERCUBE_MIRROR``) downloaded to ``into`` by pooch, unless there already."""
    import pooch
    import requests

    url = _where(url, dataset)
    pooch.get_logger().setLevel(logging.WARNING)  # its "Downloading ..." and hash lines: ours is the message
    try:
        return Path(pooch.retrieve(url, known_hash=None, fname=into.name, path=into.parent, progressbar=False))
    except (OSError, requests.RequestException, ValueError) as error:
        raise ConfigError(key, f"cannot download {url} ({type(error).__name__}: {error})",
                          f"check the connection (or ORDERCUBE_MIRROR), or put the file in one of {places}") from None


def pairs_to_edges(source: Path) -> bytes:
    """ConstrainedRM's ``user permission`` lines (whitespace-separated ids) as ``user,permission`` CSV, in order."""
    lines = ["user,permission"]
    for line in source.read_text(encoding="ascii").splitlines():
        fields = line.split()
        if fields:
            user, permission = fields
            lines.append(f"{int(user)},{int(permission)}")
    return ("\n".join(lines) + "\n").encode()


def edges_to_dense(source: Path) -> bytes:
    """A ``user,permission`` CSV as a 0/1 matrix: rows ``u1..uU``, columns ``p1..pP`` (the largest ids)."""
    import numpy as np
    import pandas as pd

    edges = pd.read_csv(source)
    users, permissions = int(edges["user"].max()), int(edges["permission"].max())
    matrix = np.zeros((users, permissions), dtype=np.int8)
    matrix[edges["user"].to_numpy() - 1, edges["permission"].to_numpy() - 1] = 1
    frame = pd.DataFrame(matrix, index=[f"u{i}" for i in range(1, users + 1)],
                         columns=[f"p{j}" for j in range(1, permissions + 1)])
    return frame.rename_axis("user").to_csv(lineterminator="\n").encode()


def png_to_csv(source: Path) -> bytes:
    """A grayscale PNG as rows of comma-separated 0-255 integers, no header."""
    import numpy as np
    from PIL import Image  # pillow: installed with matplotlib

    buffer = io.StringIO()
    np.savetxt(buffer, np.asarray(Image.open(source)), fmt="%d", delimiter=",")
    return buffer.getvalue().encode()


CONVERTERS: dict[str, Callable[[Path], bytes]] = {
    "pairs_to_edges": pairs_to_edges, "edges_to_dense": edges_to_dense, "png_to_csv": png_to_csv,
}
