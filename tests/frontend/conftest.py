"""Shared helpers for front-end tests: compile snippets and assert exact error lines."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from p4sim.errors import P4CompileError
from p4sim.frontend import check_source, load_program

PROGRAMS = Path(__file__).parent / "programs"

V1_PRELUDE = """#include <core.p4>
#include <v1model.p4>
"""


def compile_text(tmp_path: Path, text: str, name: str = "prog.p4", require_main: bool = True):
    """Write ``text`` to ``tmp_path/name`` and load it (preprocess, parse, check)."""
    path = tmp_path / name
    path.write_text(text)
    if require_main:
        return load_program(str(path))
    from p4sim.frontend import parse_source
    from p4sim.frontend.typecheck import check_program
    return check_program(parse_source(text, str(path)), require_main=False)


def compile_error(tmp_path: Path, text: str, name: str = "prog.p4",
                  require_main: bool = False) -> str:
    """Compile ``text`` expecting a P4CompileError; return its message with the path stripped."""
    with pytest.raises(P4CompileError) as info:
        compile_text(tmp_path, text, name, require_main)
    msg = str(info.value)
    assert "\n" not in msg, msg
    assert "Traceback" not in msg
    return msg.replace(str(tmp_path) + os.sep, "")


__all__ = ["PROGRAMS", "V1_PRELUDE", "compile_text", "compile_error", "check_source"]
