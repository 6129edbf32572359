"""Issue 14: p4sim's P4Info equals p4c's for the same program.

``p4info_p4c/<name>.p4info.txtpb`` are what p4c 1.2.5 (``p4c --target bmv2 --arch v1model
--p4runtime-files``) wrote for the STF corpus program ``<name>.p4``. Each is compared with what
p4sim writes, byte for byte: ids, names, aliases,
annotations, ``has_initial_entries``/``is_const_table``, ``$valid$`` key names, default-action
argument bytes (full parameter width) and which actions appear. With p4c on PATH the data is
also checked to be what p4c writes today.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.backend.helpers import needs_frontend

HERE = Path(__file__).parent
DATA = sorted((HERE / "p4info_p4c").glob("*.p4info.txtpb"))
CORPUS = HERE.parent / "stf" / "corpus"


def canonical(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if line and not line.startswith("#")) + "\n"


@needs_frontend
@pytest.mark.parametrize("expected", DATA, ids=lambda p: p.name.split(".")[0])
def test_p4info_is_p4cs(expected: Path) -> None:
    from p4sim.backend.p4info import to_text
    from p4sim.backend.program import compile_file

    program = compile_file(str(CORPUS / (expected.name.split(".")[0] + ".p4")))
    assert to_text(program.p4info) == expected.read_text()      # byte-identical


@pytest.mark.parametrize("expected", DATA, ids=lambda p: p.name.split(".")[0])
def test_kept_data_is_what_p4c_writes(tmp_path: Path, expected: Path) -> None:
    if shutil.which("p4c") is None:
        pytest.skip("p4c not on PATH (. ../shared/p4ref/env.sh)")
    out = tmp_path / "p4c.txtpb"
    subprocess.run(["p4c", "--target", "bmv2", "--arch", "v1model", "-o", str(tmp_path),
                    "--p4runtime-files", str(out), str(CORPUS / (expected.name.split(".")[0] + ".p4"))],
                   check=True, capture_output=True, timeout=300)
    assert canonical(out.read_text()) == canonical(expected.read_text())
