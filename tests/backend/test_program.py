"""CompiledProgram / device config / ``p4sim compile`` and the L3 router end to end with scapy."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from p4sim.errors import UserError

from .helpers import P4_DIR, needs_frontend, path_for

pytestmark = needs_frontend
ROUTER = os.path.join(P4_DIR, "l3router.p4")


@pytest.fixture(scope="module")
def router():
    from p4sim.backend import compile_file

    return compile_file(ROUTER)


def _router_path(program):
    from p4sim.runtime.tables import ActionCall, Lpm, TableEntry

    path = path_for(program)
    t = path.pipeline.tables["RouterIngress.ipv4_lpm"]
    t.insert(TableEntry((Lpm(0x0A000000, 8),), ActionCall("RouterIngress.set_nhop", (0x0000000000AA, 0x0000000000BB, 3))))
    t.insert(TableEntry((Lpm(0x0A010000, 16),), ActionCall("RouterIngress.set_nhop", (0x0000000000CC, 0x0000000000DD, 4))))
    return path


def test_router_forwards_longest_prefix_and_fixes_checksum(router):
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether

    path = _router_path(router)
    pkt = Ether(dst="00:00:00:00:00:01", src="00:00:00:00:00:02") / IP(src="1.2.3.4", dst="10.1.2.3", ttl=9) / \
        UDP(sport=1, dport=2) / b"payload"
    out = path.process(bytes(pkt), 1)
    assert len(out) == 1 and out[0][0] == 4
    got = Ether(out[0][1])
    assert got.dst == "00:00:00:00:00:cc" and got.src == "00:00:00:00:00:dd"
    assert got[IP].ttl == 8
    want = got[IP].chksum
    del got[IP].chksum
    assert Ether(bytes(got))[IP].chksum == want          # scapy recomputes the same checksum
    assert bytes(got[UDP].payload) == b"payload"
    out = path.process(bytes(Ether() / IP(dst="10.9.9.9", ttl=5)), 1)
    assert out[0][0] == 3
    assert path.process(bytes(Ether() / IP(dst="11.0.0.1", ttl=5)), 1) == []   # default: drop
    assert path.process(bytes(Ether() / IP(dst="10.1.0.1", ttl=1)), 1) == []   # ttl guard


def test_non_ip_is_dropped_by_the_else_branch(router):
    from scapy.layers.l2 import ARP, Ether

    path = _router_path(router)
    assert path.process(bytes(Ether() / ARP()), 1) == []


def test_device_config_round_trips(router):
    from p4sim.backend.program import CompiledProgram

    again = CompiledProgram.from_device_config(router.device_config())
    assert again.name == router.name
    assert again.p4info == router.p4info
    assert again.source == router.source


@pytest.mark.parametrize("data, match", [
    (b"\x00\xffgarbage", "not a p4sim JSON"),
    (b"[1, 2]", "format"),
    (json.dumps({"format": "p4sim-device-config", "version": 9}).encode(), "version"),
    (json.dumps({"format": "p4sim-device-config", "version": 1, "sources": {"a.p4": "x"},
                 "main": "b.p4"}).encode(), "main"),
    (json.dumps({"format": "p4sim-device-config", "version": 1, "sources": {"../a.p4": "x"},
                 "main": "../a.p4"}).encode(), "escapes"),
])
def test_device_config_garbage_is_a_user_error(data, match):
    from p4sim.backend.program import CompiledProgram

    with pytest.raises(UserError, match=match):
        CompiledProgram.from_device_config(data)


def test_device_config_tampered_source_is_rejected(router):
    from p4sim.backend.program import CompiledProgram

    doc = json.loads(router.device_config())
    doc["sources"][doc["main"]] += "\n// changed"
    with pytest.raises(UserError, match="sha256"):
        CompiledProgram.from_device_config(json.dumps(doc).encode())


def test_instances_do_not_share_state(router):
    a, b = router.instantiate(), router.instantiate()
    assert a.tables["RouterIngress.ipv4_lpm"] is not b.tables["RouterIngress.ipv4_lpm"]


def test_compile_cli_writes_p4info_and_device_config(tmp_path):
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-m", "p4sim.cli", "compile", ROUTER, "-o", str(out)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    from google.protobuf import text_format
    from p4.config.v1 import p4info_pb2

    info = text_format.Parse((out / "l3router.p4info.txtpb").read_text(), p4info_pb2.P4Info())
    assert [t.preamble.name for t in info.tables] == ["RouterIngress.ipv4_lpm"]
    assert json.loads((out / "l3router.p4sim.json").read_bytes())["format"] == "p4sim-device-config"


def test_compile_cli_reports_errors_in_one_line(tmp_path):
    bad = tmp_path / "bad.p4"
    bad.write_text("#include <v1model.p4>\ncontrol X( {\n")
    r = subprocess.run([sys.executable, "-m", "p4sim.cli", "compile", str(bad), "-o", str(tmp_path)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1
    assert len(r.stderr.strip().splitlines()) == 1 and "bad.p4:" in r.stderr


def test_device_config_carries_included_files(tmp_path):
    from p4sim.backend import compile_file
    from p4sim.backend.program import CompiledProgram

    inc = tmp_path / "inc"
    inc.mkdir()
    (inc / "defs.p4").write_text("#define OUT_PORT 7\nheader h_t { bit<8> a; }\n")
    main = tmp_path / "prog" / "main.p4"
    main.parent.mkdir()
    main.write_text(open(ROUTER).read().replace("#include <v1model.p4>",
                                                "#include <v1model.p4>\n#include \"defs.p4\""))
    prog = compile_file(str(main), [str(inc)])
    again = CompiledProgram.from_device_config(prog.device_config())
    assert again.p4info == prog.p4info and again.source == prog.source


def test_compile_cli_p4runtime_files_json(tmp_path):
    out = tmp_path / "info.json"
    r = subprocess.run([sys.executable, "-m", "p4sim.cli", "compile", ROUTER, "-o", str(tmp_path),
                        "--p4runtime-files", str(out)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    assert doc["tables"][0]["preamble"]["name"] == "RouterIngress.ipv4_lpm"
    assert doc["pkgInfo"]["arch"] == "v1model"
