"""Errors that name the file and line, so an operator can fix a bad edit."""

from __future__ import annotations


class ConfigError(Exception):
    def __init__(self, file: str, line: int | None, message: str) -> None:
        self.file = file
        self.line = line
        self.message = message
        super().__init__(str(self))

    def __str__(self) -> str:
        return f"{self.file}:{self.line if self.line is not None else 0}: {self.message}"


class ConfigErrors(Exception):
    """Every error found in one file: a parser reports all of them, not the first."""

    def __init__(self, errors: list[ConfigError]) -> None:
        self.errors = list(errors)
        super().__init__("\n".join(str(e) for e in self.errors))
