"""p4sim's back end: checked P4 AST -> generated Python, P4Info and device config.

Public API (Contract 3): ``compile_file(path, include_dirs) -> CompiledProgram``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from p4sim.backend.program import CompiledProgram, Pipeline

__all__ = ["compile_file", "CompiledProgram", "Pipeline"]


def compile_file(path: str, include_dirs=()) -> CompiledProgram:
    """Compile the v1model program at ``path`` (see ``p4sim.backend.program.compile_file``)."""
    from p4sim.backend.program import compile_file as _compile_file

    return _compile_file(path, include_dirs)


def __getattr__(name: str):
    if name in ("CompiledProgram", "Pipeline"):
        from p4sim.backend import program

        return getattr(program, name)
    raise AttributeError(name)
