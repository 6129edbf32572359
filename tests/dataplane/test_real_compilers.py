"""The programs compile with the real compilers when they are installed: p4c for BMv2
(`make bmv2`), p4c's p4test type-checks the TNA program against the public tna.p4/t2na.p4 for
Tofino1 and Tofino2, bf-p4c compiles it (`make tofino`, needs $SDE). Where a tool is absent the
test skips with the reason.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
INCLUDE = str(ROOT / "p4src" / "include")


@pytest.mark.bmv2
def test_p4c_bmv2_compiles_dlcp(tmp_path: Path) -> None:
    p4c = shutil.which("p4c") or shutil.which("p4c-bm2-ss")
    if p4c is None:
        pytest.skip("p4c is not on PATH")
    info = tmp_path / "dlcp.p4info.txtpb"
    subprocess.run([p4c, "--target", "bmv2", "--arch", "v1model", "--p4runtime-files", str(info),
                    "-I", INCLUDE, "-o", str(tmp_path), str(ROOT / "p4src" / "bmv2" / "dlcp.p4")],
                   check=True, timeout=300)
    text = info.read_text()
    assert "value_sets" not in text          # BMv2's P4Runtime server cannot write them
    for name in ("DlcpIngress.ipv4_routes", "DlcpIngress.priority_map", "DlcpIngress.dlcp_udp_ports",
                 "queue_depth_reg", "enq_count_reg", "deq_count_reg", "DlcpEgress.port_queue_tx", "port_depth_reg",
                 "port_depth_ts_reg", "DlcpEgress.port_drain", "DlcpEgress.set_port_drain",
                 "DlcpIngress.depth_settings", "DlcpIngress.set_depth_max_age"):
        assert f'name: "{name}"' in text


def tna_include_dir(p4test: str) -> Path | None:
    """The public TNA headers (tna.p4, t2na.p4 and their includes): $DLCP_TNA_INCLUDE, else the
    ``share/tna-include`` beside p4test's ``bin`` (as in the reference build ../shared/p4ref)."""
    env = os.environ.get("DLCP_TNA_INCLUDE")
    candidates = [Path(env)] if env else []
    candidates.append(Path(p4test).resolve().parent.parent / "share" / "tna-include")
    return next((c for c in candidates if (c / "tna.p4").is_file() and (c / "t2na.p4").is_file()), None)


@pytest.mark.bmv2
@pytest.mark.parametrize("tofino", [1, 2])
def test_p4test_type_checks_the_tofino_program(tofino: int) -> None:
    """Regression: the shared metadata grew for the BMv2 program and the TNA parser's initializer
    was not updated; only a real front end against the real tna.p4 notices."""
    p4test = shutil.which("p4test")
    if p4test is None:
        pytest.skip("p4test (p4c) is not on PATH")
    include = tna_include_dir(p4test)
    if include is None:
        pytest.skip("no tna.p4/t2na.p4: set DLCP_TNA_INCLUDE or install p4c's share/tna-include beside p4test")
    done = subprocess.run([p4test, f"-D__TARGET_TOFINO__={tofino}", "-I", str(include), "-I", INCLUDE,
                           str(ROOT / "p4src" / "tofino" / "dlcp.p4")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.mark.tofino
@pytest.mark.parametrize("target,arch", [("tofino", "tna"), ("tofino2", "t2na")])
def test_bf_p4c_compiles_dlcp(tmp_path: Path, target: str, arch: str) -> None:
    sde = os.environ.get("SDE")
    bf_p4c = Path(sde, "install", "bin", "bf-p4c") if sde else None
    if bf_p4c is None or not bf_p4c.exists():
        pytest.skip("the Tofino SDE ($SDE with install/bin/bf-p4c) is not installed")
    subprocess.run([str(bf_p4c), "--target", target, "--arch", arch, "-I", INCLUDE, "-o", str(tmp_path),
                    str(ROOT / "p4src" / "tofino" / "dlcp.p4")], check=True, timeout=1200)
