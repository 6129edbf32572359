"""Run the STF tests of tests/dataplane/stf/ against p4src/bmv2/dlcp.p4 on p4sim and on real
BMv2 (``p4sim stf --target bmv2``: p4c + simple_switch, skipped with the reason where absent).

Each .stf file is a fresh switch: tables, packets in, exact packets expected out (written
from the spec by make_stf.py), counters checked.  Any control-plane refusal (an `add` the
runtime rejects) also fails the test, so a renamed table or key cannot pass silently.
"""

from __future__ import annotations

from pathlib import Path

import pytest

STF_DIR = Path(__file__).resolve().parent / "stf"
STF_FILES = sorted(p.name for p in STF_DIR.glob("*.stf"))


def test_stf_files_exist() -> None:
    assert {"forwarding.stf", "priority.stf", "malformed.stf", "ecmp.stf", "selective_drop.stf"} <= set(STF_FILES)


@pytest.mark.parametrize("name", STF_FILES)
def test_stf(name: str, dlcp_program) -> None:
    from p4sim.stf.runner import StfRun, parse_file
    from p4sim.v1model.pipeline import V1ModelPath

    run = StfRun(dlcp_program.instantiate(), parse_file(str(STF_DIR / name)), V1ModelPath)
    errors = run.run()
    assert run.notes == [], "\n".join(run.notes)
    assert errors == [], "\n".join(errors)


@pytest.mark.bmv2
@pytest.mark.slow
@pytest.mark.parametrize("name", STF_FILES)
def test_stf_on_bmv2(name: str) -> None:
    """The same files, expectations and counters on simple_switch (started with the file's
    ``priority_queues``): p4sim and BMv2 agree on the DLCP program."""
    from p4sim.stf import bmv2_target
    from p4sim.stf.runner import run_stf

    reason = bmv2_target.skip_reason()
    if reason:
        pytest.skip(reason)
    root = STF_DIR.parents[2]
    result = run_stf(str(root / "p4src" / "bmv2" / "dlcp.p4"), str(STF_DIR / name),
                     [str(root / "p4src" / "include")], target="bmv2")
    assert result.notes == [], "\n".join(result.notes)
    assert result.errors == [], "\n".join(result.errors)
