"""User-facing errors.

Anything the user can fix (a bad flag, a bad CSV, an unreachable source)
raises :class:`FinconError`. The CLI prints its message as one line and exits
with status 2; it never shows a traceback for bad input. Programming errors
stay ordinary exceptions so they are not mistaken for bad input.
"""

from __future__ import annotations


class FinconError(Exception):
    """An error the user can act on; its message is one self-contained line."""

    exit_code = 2


class DataError(FinconError):
    """Market or event data is missing, malformed or out of range."""


class ConfigError(FinconError):
    """A config file or flag names an unknown key or holds a bad value."""


class CloseOnly(ConfigError):
    """A setting needs a bar ``column`` (open, high, low, volume) that the
    close-only prices of ``which`` (ticker and source) do not have. A command
    that chose the setting itself (a forward journal always fills at the next
    open) says so in its own words instead of the flag's fix."""

    def __init__(self, message: str, column: str, which: str) -> None:
        super().__init__(message)
        self.column, self.which = column, which


class NoDayFinished(FinconError):
    """Every strategy of a run stopped before its first day (a model server gone, a spent budget): nothing
    to write. Exit 2 for a run of its own (no folder is left); a study that keeps its other units (an
    experiment) exits 3 with it, as for any unit stopped early: the same command resumes."""


class SourceUnavailable(FinconError):
    """An online source could not be reached and nothing usable was cached."""


class Busy(FinconError):
    """Another fincon command holds the folder this one would write (exit 1:
    nothing is wrong with the command; run it again once the other ends)."""

    exit_code = 1
