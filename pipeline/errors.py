"""Errors that reach the user as one clear message (exit code 2 from the CLI)."""

from __future__ import annotations


class InputError(ValueError):
    """Bad input: a config, a file, an option. The message names the key, the value and the fix."""


class ConfigError(InputError):
    """A config value is wrong; ``key`` is its path, e.g. ``methods[0].criteria[1]``."""

    def __init__(self, key: str, problem: str, fix: str = "") -> None:
        self.key = key
        super().__init__(f"{key}: {problem}" + (f"; {fix}" if fix else ""))
