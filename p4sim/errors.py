"""Errors p4sim reports to users: one line each, naming the place (file:line:col) and the problem.

Every user-facing failure in p4sim derives from ``UserError``; the CLI prints ``str(err)`` and
exits non-zero, never a traceback.
"""

from __future__ import annotations

from dataclasses import dataclass


class UserError(Exception):
    """A mistake in the user's input (program, test file, flag). Printed as one line."""


@dataclass(frozen=True)
class SourceLocation:
    """A place in a P4 source file (1-based line and column)."""

    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


class P4CompileError(UserError):
    """A P4 program that p4sim rejects: ``file:line:col: <kind>: message``.

    ``kind`` is ``error`` for syntax/type errors and ``unsupported`` for constructs outside
    the supported subset (or that BMv2 would refuse to load).
    """

    def __init__(self, location: SourceLocation | None, message: str, kind: str = "error") -> None:
        self.location = location
        self.message = message
        self.kind = kind
        super().__init__(str(self))

    def __str__(self) -> str:
        where = f"{self.location}: " if self.location else ""
        return f"{where}{self.kind}: {self.message}"


class P4UnsupportedError(P4CompileError):
    """A construct outside p4sim's supported subset: ``file:line:col: unsupported: <feature>``."""

    def __init__(self, location: SourceLocation | None, feature: str) -> None:
        super().__init__(location, feature, kind="unsupported")


class StfError(UserError):
    """A malformed STF test file: ``file:line: error: message``."""

    def __init__(self, file: str, line: int, message: str) -> None:
        self.file, self.line, self.message = file, line, message
        super().__init__(f"{file}:{line}: error: {message}")
