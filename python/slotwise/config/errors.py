"""Errors that name the file and line, so an operator can fix a bad edit."""

from __future__ import annotations

import re

#: Longest message kept: an echoed value can be anything the file holds.
MAX_MESSAGE = 400
_CONTROL = re.compile(r"[\x00-\x1f\x7f\u2028\u2029]")


def one_line(text: str, limit: int = MAX_MESSAGE) -> str:
    """``text`` as one printable line: control characters escaped (a value
    with a newline cannot start a line that looks like FILE:LINE), cut to
    ``limit`` characters."""
    out = _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)
    return out if len(out) <= limit else out[:limit - 3] + "..."


class ConfigError(Exception):
    """One error: FILE:LINE: message, or FILE: message when no line applies
    (a missing file)."""

    def __init__(self, file: str, line: int | None, message: str) -> None:
        self.file = file
        self.line = line or None
        self.message = one_line(message)
        super().__init__(str(self))

    def __str__(self) -> str:
        where = one_line(self.file, 1000)
        return f"{where}:{self.line}: {self.message}" if self.line else f"{where}: {self.message}"


class ConfigErrors(Exception):
    """Every error found in one file: a parser reports all of them, not the first."""

    def __init__(self, errors: list[ConfigError], warnings: list[ConfigError] | None = None) -> None:
        self.errors = list(errors)
        #: The file's warnings too, for a report of everything.
        self.warnings = list(warnings or [])
        super().__init__("\n".join(str(e) for e in self.errors))
