"""The numeric environment variables ordercube reads (``ORDERCUBE_SHARD_CELLS``, ``ORDERCUBE_FLUSH_SECONDS``,
``ORDERCUBE_MAX_INPUT_BYTES``, ``ORDERCUBE_MAX_DENSE_BYTES``, ``ORDERCUBE_LOCK_LEASE_SECONDS``,
``ORDERCUBE_STORE_TIMEOUT_SECONDS``), checked as a config key is: a value that is not a
positive number exits 2 naming the variable, what it holds and the fix, never a traceback (nor a cube created
first)."""

from __future__ import annotations

import math
import os

from ordercube.pipeline.errors import ConfigError


def positive_number(name: str, default: int | float, *, integer: bool, example: int | float, unit: str,
                    zero: bool = False) -> int | float:
    """The value of the environment variable ``name`` (``default`` when unset or empty): a positive whole number
    when ``integer``, else a positive finite number (or 0, with ``zero``); ``ConfigError`` naming it otherwise,
    with ``example`` (in ``unit``) in the fix."""
    given = os.environ.get(name)
    if not given:
        return default
    try:
        value: int | float = int(given) if integer else float(given)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and (value > 0 or (zero and value == 0))):
        expected = (f"a {'non-negative' if zero else 'positive'} whole number of {unit}" if integer
                    else f"a {'non-negative' if zero else 'positive'} number of {unit}")
        raise ConfigError(name, f"expected {expected}, got {given!r}",
                          f"unset it (default {default}) or give e.g. {name}={example}")
    return value
