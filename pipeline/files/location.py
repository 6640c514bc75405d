"""Where a cube lives: a local folder or an object-store URL, decided in one place.

``results/x.zarr`` and ``file:///data/x.zarr`` are local folders (zarr's ``LocalStore``; the cube is
created by a rename and locked with ``flock``, see :mod:`ordercube.pipeline.cube.owner` and :mod:`ordercube.pipeline.cube.lock`).
``s3://bucket/x.zarr``, ``gs://...``, ``az://...`` and ``memory://...`` go through zarr's
``FsspecStore``: the backend package (s3fs, gcsfs, adlfs) is imported here, so that a missing one is
an ``InputError`` naming it, and credentials and endpoints come from the backend's own configuration
(for S3: ``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``, ... or ``~/.aws``). A local path that looks like
a mistyped URL (``s3:/bucket/x``) is refused, so that no local folder is ever named after a URL.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ordercube.pipeline.errors import InputError

# scheme -> the package that implements it for fsspec (None: fsspec itself)
BACKENDS: dict[str, str | None] = {"s3": "s3fs", "s3a": "s3fs", "gs": "gcsfs", "gcs": "gcsfs", "az": "adlfs",
                                   "abfs": "adlfs", "abfss": "adlfs", "memory": None}
SCHEMES = ("file", *BACKENDS)
ALIASES = {"s3a": "s3", "gcs": "gs", "abfs": "az", "abfss": "az"}  # schemes naming the same stores (one lock)
_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://(.*)$")
_SCHEME_LIKE = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):(.*)$")


@dataclass(frozen=True)
class Location:
    """A cube's place: ``path`` for a local folder, else ``url`` (with fsspec ``storage_options``)."""

    text: str
    path: Path | None = None
    url: str | None = None
    storage_options: dict[str, Any] = field(default_factory=dict, compare=False)
    option: str = field(default="--out", compare=False)  # what gave it, for messages: --out, out, CUBE

    @property
    def is_local(self) -> bool:
        return self.path is not None

    @property
    def is_s3(self) -> bool:
        """An S3 URL (``s3://``, ``s3a://``): botocore's client, with its timeouts and conditional writes."""
        return self.url is not None and self.url.split("://", 1)[0].lower() in ("s3", "s3a")

    def __str__(self) -> str:
        return self.text

    def local(self) -> Path:
        assert self.path is not None, "a local operation on an object-store location"
        return self.path

    def store(self, *, read_only: bool = False) -> Any:
        """What zarr and xarray open: the folder itself, or an ``FsspecStore`` for the URL."""
        if self.path is not None:
            return self.path
        from zarr.storage import FsspecStore

        # No listing cache: another process (a run, a notebook) may have added chunks since the last listing,
        # and a stale listing would make done cells look lost.
        defaults: dict[str, Any] = {} if self.url and self.url.startswith("memory://") else {"use_listings_cache": False}
        options = {**defaults, **self.storage_options}
        if self.is_s3:  # a request unanswered is given up and retried
            options["config_kwargs"] = {**store_timeouts(), **options.get("config_kwargs", {})}
        return FsspecStore.from_url(self.url or "", storage_options=options, read_only=read_only)

    def __truediv__(self, name: str) -> Path | str:
        """``location / "zarr.json"``: a path for a local cube, a URL for a remote one (for messages)."""
        return self.path / name if self.path is not None else self.key(name)

    def key(self, name: str) -> str:
        """The full name of ``name`` inside the cube, for messages (``s3://b/x.zarr/status/c/0``)."""
        return str(self.path / name) if self.path is not None else f"{self.text.rstrip('/')}/{name}"

    def sibling(self, suffix: str) -> str:
        """The URL (or path) of the object next to the cube whose name is the cube's plus ``suffix``."""
        return f"{self.text.rstrip('/')}{suffix}"

    @property
    def name(self) -> str:
        """The cube's last path component (``x.zarr``)."""
        return self.path.name if self.path is not None else self.text.rstrip("/").rsplit("/", 1)[-1]

    def canonical_url(self) -> str:
        """The URL spelled one way for every spelling of the same object-store place: the scheme in lower case
        and its aliases merged (``s3a`` is ``s3``, ``gcs`` is ``gs``, ``abfs``/``abfss`` are ``az``), repeated,
        leading and trailing slashes and ``.`` segments of the path dropped."""
        match = _URL.match(self.url or self.text)
        assert match is not None, "canonical_url of a local location"
        scheme = ALIASES.get(match.group(1).lower(), match.group(1).lower())
        parts = [part for part in match.group(2).split("/") if part not in ("", ".")]
        return f"{scheme}://{'/'.join(parts)}"

    def local_lock_file(self) -> Path:
        """Where runs on this machine lock a URL cube: a file keyed by its canonical URL under the user's cache folder."""
        cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ordercube" / "locks"
        digest = hashlib.sha256(self.canonical_url().encode()).hexdigest()[:16]
        return cache / f"{self.name}-{digest}.lock"


#: Seconds an object-store request may go unanswered (to connect, or between bytes of the answer) before the client
#: gives it up and retries it: botocore's own default, stated; ``ORDERCUBE_STORE_TIMEOUT_SECONDS`` sets another.
STORE_TIMEOUT_SECONDS = 60.0


def store_timeouts() -> dict[str, float]:
    """The S3 client's connect and read timeouts (:data:`STORE_TIMEOUT_SECONDS`; exit 2 on a setting that is not a
    positive number). Each request so given up is retried by the client (botocore: 4 retries with backoff by
    default, ``AWS_MAX_ATTEMPTS`` and ``AWS_RETRY_MODE`` set others); past them the run stops with exit 4 and the
    command that resumes."""
    from ordercube.pipeline.system.environment import positive_number

    seconds = float(positive_number("ORDERCUBE_STORE_TIMEOUT_SECONDS", STORE_TIMEOUT_SECONDS, integer=False,
                                    example=30, unit="seconds"))
    return {"connect_timeout": seconds, "read_timeout": seconds}


def location(where: str | Path | Location, *, key: str = "--out", storage_options: dict[str, Any] | None = None) -> Location:
    """The :class:`Location` of ``where``; ``InputError`` (naming ``key``) for an unknown scheme, a missing
    backend package, or a local path that looks like a mistyped URL."""
    if isinstance(where, Location):
        return where
    if isinstance(where, Path):
        return Location(text=str(where), path=where, option=key)
    if where is None:
        raise InputError(f"{key}: no cube location given; give a path or a URL such as s3://bucket/cube.zarr")
    text = str(where)
    url = _URL.match(text)
    if url:
        scheme, rest = url.group(1).lower(), url.group(2)
        if scheme == "file":
            return Location(text=str(Path(rest or "/")), path=Path(rest or "/"), option=key)
        if scheme not in BACKENDS:
            raise InputError(f"{key}: {text!r} has the scheme {scheme}://, which ordercube does not store cubes in; "
                             f"use a local path or one of {', '.join(s + '://' for s in SCHEMES)}")
        if not rest.strip("/"):
            raise InputError(f"{key}: {text!r} names no bucket or folder; give one, e.g. {scheme}://bucket/cube.zarr")
        _require_backend(scheme, key)
        return Location(text=text, url=text, storage_options=dict(storage_options or {}), option=key)
    typo = _SCHEME_LIKE.match(text)
    if typo and (typo.group(1).lower() in SCHEMES or typo.group(2).startswith("/")):
        scheme, rest = typo.group(1), typo.group(2).lstrip("/")
        raise InputError(f"{key}: {text!r} looks like a mistyped URL (a URL has '://' after the scheme), and ordercube "
                         f"will not create a local folder named {scheme + ':'!r}; write {scheme}://{rest} for object "
                         f"storage, or ./{text} for a local folder")
    return Location(text=str(Path(text)), path=Path(text), option=key)


def _require_backend(scheme: str, key: str) -> None:
    package = BACKENDS[scheme]
    if package is None:
        return
    try:
        importlib.import_module(package)
    except ImportError:
        extra = "s3" if package == "s3fs" else None
        hint = f" (or pip install 'ordercube[{extra}]')" if extra else ""
        raise InputError(f"{key}: {scheme}:// needs the package {package}, which is not installed; "
                         f"pip install {package}{hint}") from None
