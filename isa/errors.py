"""Exceptions of the `isa` package.

Each carries the place it is about (file:line:col, or the element that is wrong) in its message, so
the CLI can print it as it is and a user knows what to fix.
"""

from __future__ import annotations


class IsaError(Exception):
    """Base of every error the `isa` package raises on purpose."""


class SpecError(IsaError):
    """A spec file that cannot be read, parsed or resolved, or a spec that cannot be found."""

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None,
                 col: int | None = None) -> None:
        self.path = path
        self.line = line
        self.col = col
        where = ""
        if path is not None:
            where = str(path)
            if line is not None:
                where += f":{line}"
                if col is not None:
                    where += f":{col}"
            where += ": "
        super().__init__(where + message)
        self.reason = message
