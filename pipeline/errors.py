"""Errors that reach the user as one clear message (exit code 2 from the CLI)."""

from __future__ import annotations

from collections.abc import Sequence


class InputError(ValueError):
    """Bad input: a config, a file, an option. The message names the key, the value and the fix."""


class ConfigError(InputError):
    """A config value is wrong; ``key`` is its path, e.g. ``methods[0].criteria[1]``."""

    def __init__(self, key: str, problem: str, fix: str = "") -> None:
        self.key = key
        super().__init__(f"{key}: {problem}" + (f"; {fix}" if fix else ""))


class ConfigErrors(ConfigError):
    """Several independent config values are wrong: every one is reported at once.

    Attributes
    ----------
    errors : list of ConfigError
        One per wrong or missing key, in the order the config is read; ``key`` is the first one's. The
        message holds one line per key.
    """

    def __init__(self, errors: Sequence[ConfigError]) -> None:
        self.errors = list(errors)
        self.key = self.errors[0].key
        InputError.__init__(self, f"{len(self.errors)} problems in the config, one line per key:\n"
                            + "\n".join(f"  {error}" for error in self.errors))

    @staticmethod
    def of(errors: Sequence[ConfigError]) -> ConfigError:
        """The one error itself, or the aggregate of several (a nested aggregate's errors flattened)."""
        flat = [item for error in errors for item in (error.errors if isinstance(error, ConfigErrors) else [error])]
        return flat[0] if len(flat) == 1 else ConfigErrors(flat)
