"""What a config may give each parameter: one declared :class:`Param` per parameter, checked at config load.

Every registered algorithm, criterion option and preprocessing step declares its parameters' ranges
next to their defaults (``ranges={"n_init": integer(1, 100_000)}``), so a kernel can trust its inputs
(``n_init >= 1``, ``0 < cooling < 1``) and a config that could only fail every cell, or never end, is
refused before anything runs. Parameters that constrain each other (a clip's floor and ceiling, the
number of annealing temperatures) add a ``check`` of the whole mapping. Numbers are finite, never
booleans; integers are Python or NumPy integers, never floats.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any, Literal

# Kernels are compiled with 64-bit integers: a larger count would overflow there, after the cube exists.
INT64_MAX = 2**63 - 1


class ParamError(ValueError):
    """A parameter's value is not allowed; ``name`` is the parameter, the message says what is expected and
    ``fix``, when given, what to do (else the caller suggests the default)."""

    def __init__(self, name: str, problem: str, fix: str = "") -> None:
        self.name, self.fix = name, fix
        super().__init__(problem)


def show(value: Any, limit: int = 80) -> str:
    """``repr(value)`` cut to about ``limit`` characters (its start and its end: a path's file name stays),
    so that a message stays one line whatever the config holds."""
    text = repr(value)
    if len(text) <= limit:
        return text
    return f"{text[: limit // 2]}…{text[-(limit // 4):]} ({len(text):,} characters)"


@dataclass(frozen=True)
class Param:
    """The values one parameter accepts.

    ``kind``: ``integer`` or ``number`` (finite) within ``low``/``high`` (excluded when ``low_open`` /
    ``high_open``) and different from every value in ``excluded``; or ``choice`` of ``options`` (same
    type and value); or a ``pair`` [lower, upper] of finite numbers with low <= lower < upper <= high (a window).
    ``allow_none``: null is accepted too (an optional bound).
    """

    kind: Literal["integer", "number", "choice", "pair"]
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    options: tuple[Any, ...] = ()
    excluded: tuple[float, ...] = ()
    allow_none: bool = False

    def describe(self) -> str:
        if self.kind == "choice":
            text = f"one of {list(self.options)}"
        elif self.kind == "pair":
            text = f"a pair [lower, upper] of numbers with {_number(self.low)} <= lower < upper <= {_number(self.high)}"
        else:
            bounds = [f"{'>' if self.low_open else '>='} {_number(self.low)}"] if self.low is not None else []
            if self.high is not None and self.high < 2**62:  # higher bounds only keep integers within 64 bits
                bounds.append(f"{'<' if self.high_open else '<='} {_number(self.high)}")
            bounds += [f"!= {_number(value)}" for value in self.excluded]
            text = ("an integer" if self.kind == "integer" else "a finite number") + \
                (" " + " and ".join(bounds) if bounds else "")
        return text + (", or null" if self.allow_none else "")

    def accepts(self, value: Any) -> bool:
        if value is None:
            return self.allow_none
        if self.kind == "choice":
            return any(type(value) is type(option) and value == option for option in self.options)
        if self.kind == "pair":
            return (isinstance(value, (list, tuple)) and len(value) == 2
                    and all(Param("number", low=self.low, high=self.high).accepts(bound) for bound in value)
                    and value[0] < value[1])
        if isinstance(value, bool) or not isinstance(value, Integral if self.kind == "integer" else Real):
            return False
        if isinstance(value, Integral):
            if abs(int(value)) > INT64_MAX:
                return False
        elif not math.isfinite(float(value)):
            return False
        return self._within(value)

    def _within(self, value: Any) -> bool:
        if self.low is not None and (value <= self.low if self.low_open else value < self.low):
            return False
        if self.high is not None and (value >= self.high if self.high_open else value > self.high):
            return False
        return value not in self.excluded


def _number(value: float) -> str:
    return f"{int(value):,}" if float(value).is_integer() and abs(value) >= 1000 else f"{value:g}"


def integer(low: int, high: int = INT64_MAX) -> Param:
    """An integer in [low, high]."""
    return Param("integer", low=low, high=high)


def number(low: float | None = None, high: float | None = None, *, low_open: bool = False, high_open: bool = False,
           excluded: tuple[float, ...] = (), allow_none: bool = False) -> Param:
    """A finite number, bounded as given."""
    return Param("number", low=low, high=high, low_open=low_open, high_open=high_open, excluded=excluded,
                 allow_none=allow_none)


def pair(low: float, high: float) -> Param:
    """A pair [lower, upper] with low <= lower < upper <= high (a window such as PAC's (u1, u2))."""
    return Param("pair", low=low, high=high)


def choice(*options: Any) -> Param:
    """One of ``options`` (compared by type and value: ``true`` is not ``1``)."""
    return Param("choice", options=tuple(options))


def check_params(params: Mapping[str, Any], ranges: Mapping[str, Param], *, required: tuple[str, ...] = (),
                 check: Callable[[Mapping[str, Any]], None] | None = None) -> None:
    """``ParamError`` for the first parameter of ``params`` that is unknown, missing or out of its range.

    ``ranges`` declares every parameter there is; ``check`` tests the parameters together (it sees the
    given values only, and raises ``ParamError`` itself).
    """
    for name, value in params.items():
        if not isinstance(name, str) or name not in ranges:
            valid = f"expected one of {sorted(ranges)}" if ranges else "it takes no parameters"
            raise ParamError(str(name), f"unknown parameter {show(name)}; {valid}")
        if not ranges[name].accepts(value):
            raise ParamError(name, f"expected {ranges[name].describe()}, got {show(value)}")
    for name in required:
        if name not in params:
            raise ParamError(name, f"missing; give {name}: {ranges[name].describe()}")
    if check is not None:
        check(params)


def undeclared(defaults: Mapping[str, Any], ranges: Mapping[str, Param]) -> list[str]:
    """Parameters that have a default but no declared range, or whose default is outside it (a registry bug)."""
    return [name for name, value in defaults.items() if name not in ranges or not ranges[name].accepts(value)]
