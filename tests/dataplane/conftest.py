"""Shared fixtures: p4src/bmv2/dlcp.p4 compiled once per session by p4sim.

Why this exists: compiling the program is the slow part of every packet test;
one compile serves all of them.  p4sim's compiler is part of this repository,
so a failure to import or run it (a P4 error, or p4sim generating invalid
Python) FAILS every dependent test: a compiler regression must be visible,
never a silent skip.  Only genuinely absent external tools (p4c,
simple_switch_grpc, bf-p4c) skip, in the tests that use them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DLCP_BMV2 = ROOT / "p4src" / "bmv2" / "dlcp.p4"
INCLUDE_DIRS = [str(ROOT / "p4src" / "include")]


@pytest.fixture(scope="session")
def dlcp_program():
    """The CompiledProgram of p4src/bmv2/dlcp.p4 (fails, not skips, if p4sim cannot compile it)."""
    from p4sim.backend import compile_file
    from p4sim.v1model.pipeline import V1ModelPath  # noqa: F401  (the path every packet test runs on)

    try:
        return compile_file(str(DLCP_BMV2), INCLUDE_DIRS)
    except SyntaxError as err:
        pytest.fail(f"p4sim back end generated invalid Python for dlcp.p4: {err.msg} "
                    f"({err.filename}:{err.lineno})", pytrace=False)
