"""Issue 17: p4sim refuses what p4c 1.2.5 refuses for BMv2, so a v1model program is valid on
both or on neither.

p4c's current v1model.p4 still declares the deprecated ``clone3``, ``resubmit(data)``,
``recirculate(data)`` and ``mark_to_drop()``, but its BMv2 back end refuses them ("unknown extern
function"; "Expected 1 argument for mark_to_drop()"); p4sim ships the same v1model.p4 and its
back end refuses the same calls. A struct initializer with the wrong number of fields in a
parser state (what p4test reported for the Tofino program: 21 vs 22 fields) is a front-end
error on p4sim too. Where p4c and BMv2 are on PATH, each refused program is also checked to be
refused by real p4c (so the two lists cannot drift apart).
"""

from __future__ import annotations

import shutil
import subprocess

import pytest

from p4sim.errors import P4CompileError
from tests.backend.helpers import needs_frontend, simple_program

HEADER = "bit<8> a; bit<8> b;"
META = "bit<8> keep; bit<8> other;"

REFUSED = {
    "clone3": ("apply { clone3(CloneType.I2E, 32w5, { meta.keep }); }",
               "clone3: unknown extern function", "clone3: unknown extern function"),
    "resubmit_data": ("apply { resubmit({ meta.keep }); }",
                      "resubmit: unknown extern function", "resubmit: unknown extern function"),
    "recirculate_data": ("apply { recirculate({ meta.keep }); }",
                         "recirculate: unknown extern function", "recirculate: unknown extern function"),
    "mark_to_drop_no_args": ("apply { mark_to_drop(); }", "Expected 1 argument for mark_to_drop()",
                             "Expected 1 argument for mark_to_drop()"),
}


def _p4c_error(tmp_path, source_path) -> str | None:
    """p4c-bm2-ss's output for the program, or None when p4c is not on PATH."""
    if shutil.which("p4c") is None:
        return None
    run = subprocess.run(["p4c", "--target", "bmv2", "--arch", "v1model", "-o", str(tmp_path / "p4c"),
                          str(source_path)], capture_output=True, text=True, timeout=120)
    assert run.returncode != 0, "p4c accepted a program p4sim refuses"
    return run.stdout + run.stderr


@needs_frontend
@pytest.mark.parametrize("case", sorted(REFUSED))
def test_externs_p4c_bmv2_refuses_are_refused(tmp_path, case):
    ingress, ours, theirs = REFUSED[case]
    with pytest.raises(P4CompileError) as info:
        simple_program(tmp_path, HEADER, ingress, meta=META)
    assert ours in str(info.value) and str(info.value).startswith(str(tmp_path / "prog.p4") + ":")
    p4c = _p4c_error(tmp_path, tmp_path / "prog.p4")
    if p4c is not None:
        assert theirs in p4c, p4c


@needs_frontend
def test_preserving_field_list_forms_compile(tmp_path):
    simple_program(tmp_path, HEADER, "apply { clone_preserving_field_list(CloneType.I2E, 5, 1); "
                   "resubmit_preserving_field_list(1); mark_to_drop(sm); }",
                   meta="@field_list(1) bit<8> keep; bit<8> other;")


@needs_frontend
def test_struct_initializer_field_count_in_a_parser_state(tmp_path):
    """The Tofino parser's mistake (``meta = {0, ..., false}`` one field short) on p4sim."""
    parser = "state start { pkt.extract(hdr.h); meta = {1}; transition accept; }"
    with pytest.raises(P4CompileError) as info:
        simple_program(tmp_path, HEADER, "apply { }", meta=META, parser=parser)
    assert "meta_t has 2 fields, initializer has 1" in str(info.value)
    if shutil.which("p4test"):
        run = subprocess.run(["p4test", str(tmp_path / "prog.p4")], capture_output=True, text=True, timeout=120)
        assert run.returncode != 0 and "Number of fields 1" in run.stdout + run.stderr
