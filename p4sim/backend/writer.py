"""Small helpers for emitting Python source: an indented line buffer with fresh temporaries,
and a scoped map from P4 declarations to the Python expressions that hold them."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any


class Writer:
    """Lines of one generated Python function (or the module), with indentation."""

    def __init__(self, indent: int = 0) -> None:
        self.lines: list[str] = []
        self.level = indent
        self._tmp = 0

    def line(self, text: str) -> None:
        self.lines.append("    " * self.level + text)

    @contextmanager
    def block(self, header: str):
        self.line(header)
        self.level += 1
        start = len(self.lines)
        yield
        if len(self.lines) == start:
            self.line("pass")
        self.level -= 1

    def tmp(self, hint: str = "t") -> str:
        self._tmp += 1
        return f"_{hint}{self._tmp}"

    def text(self) -> str:
        if not self.lines:
            return "    " * max(self.level, 1) + "pass\n"
        return "\n".join(self.lines) + "\n"


class Env:
    """Maps declarations (by identity) to Python expressions, with an enclosing scope."""

    def __init__(self, parent: Env | None = None) -> None:
        self.parent = parent
        self._names: dict[int, str] = {}
        self._keep: list[Any] = []

    def bind(self, decl: Any, expr: str) -> None:
        self._names[id(decl)] = expr
        self._keep.append(decl)

    def lookup(self, decl: Any) -> str | None:
        env: Env | None = self
        while env is not None:
            found = env._names.get(id(decl))
            if found is not None:
                return found
            env = env.parent
        return None
