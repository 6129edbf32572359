"""The programs compile with the real compilers when they are installed: p4c for BMv2
(`make bmv2`), bf-p4c for Tofino1 and Tofino2 (`make tofino`, needs $SDE). Neither can be
installed on the development machines, so these skip there with the reason.
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
    for name in ("DlcpIngress.ipv4_routes", "DlcpIngress.priority_map", "DlcpParser.dlcp_udp_ports",
                 "queue_depth_reg", "queue_depth_ts_reg", "DlcpEgress.port_queue_tx", "port_depth_reg",
                 "port_depth_ts_reg", "DlcpEgress.port_drain", "DlcpEgress.set_port_drain",
                 "DlcpIngress.depth_settings", "DlcpIngress.set_depth_max_age"):
        assert f'name: "{name}"' in text


@pytest.mark.tofino
@pytest.mark.parametrize("target,arch", [("tofino", "tna"), ("tofino2", "t2na")])
def test_bf_p4c_compiles_dlcp(tmp_path: Path, target: str, arch: str) -> None:
    sde = os.environ.get("SDE")
    bf_p4c = Path(sde, "install", "bin", "bf-p4c") if sde else None
    if bf_p4c is None or not bf_p4c.exists():
        pytest.skip("the Tofino SDE ($SDE with install/bin/bf-p4c) is not installed")
    subprocess.run([str(bf_p4c), "--target", target, "--arch", arch, "-I", INCLUDE, "-o", str(tmp_path),
                    str(ROOT / "p4src" / "tofino" / "dlcp.p4")], check=True, timeout=1200)
