"""``p4sim compile --arch tna|t2na`` and ``p4sim switch --arch``: a Tofino program compiled to a
device config that loads back as the same architecture (what a switch gets from a controller)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TOFINO = ROOT / "p4src" / "tofino" / "dlcp.p4"
INCLUDE = ROOT / "p4src" / "include"


@pytest.mark.parametrize("arch", ["tna", "t2na"])
def test_compile_cli_writes_a_tna_device_config(tmp_path: Path, arch: str) -> None:
    from p4sim.backend.program import CompiledProgram

    run = subprocess.run([sys.executable, "-c", "import sys; from p4sim.cli import main; sys.exit(main())", "compile", "--arch", arch, "-I", str(INCLUDE),
                          "-o", str(tmp_path), str(TOFINO)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    program = CompiledProgram.from_device_config((tmp_path / "dlcp.p4sim.json").read_bytes())
    assert program.arch == arch
    assert ("ghost_qdepth" in program.instantiate().registers) == (arch == "t2na")
    assert 'arch: "' + arch + '"' in (tmp_path / "dlcp.p4info.txtpb").read_text()


def test_switch_loads_a_tofino_source_with_arch(tmp_path: Path) -> None:
    from p4sim.switch.cli import load_program_file
    from p4sim.switch.device import SwitchDevice
    from p4sim.tna.pipeline import TnaPath

    program = load_program_file(str(TOFINO), [str(INCLUDE)], "t2na")
    device = SwitchDevice(name="tna-cli")
    device.load_program(program)
    assert isinstance(device.path, TnaPath) and program.arch == "t2na"


def test_v1model_compile_of_a_tna_program_names_the_architecture(tmp_path: Path) -> None:
    run = subprocess.run([sys.executable, "-c", "import sys; from p4sim.cli import main; sys.exit(main())", "compile", "-I", str(INCLUDE), "-o", str(tmp_path),
                          str(TOFINO)], capture_output=True, text=True, timeout=120)
    assert run.returncode != 0
    assert "Traceback" not in run.stderr and "architecture Switch" in run.stderr, run.stderr


def test_dlcp_exp_arch_selects_the_tofino_program(tmp_path: Path) -> None:
    from mininet_topos.experiment import compile_pipeline, parse_args
    from p4sim.backend.program import CompiledProgram

    assert parse_args(["--arch", "tna"]).arch == "tna"
    with pytest.raises(SystemExit):
        parse_args(["--arch", "tna", "--target", "bmv2"])       # the Tofino program runs on p4sim only
    files = compile_pipeline(tmp_path, "p4sim", "t2na")
    assert CompiledProgram.from_device_config(files["config"].read_bytes()).arch == "t2na"
