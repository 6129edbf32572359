"""The same controller against BMv2 ``simple_switch_grpc`` (runs only where p4c and BMv2 are
installed; neither is installable on our CI machines): pipeline push of p4c's BMv2 JSON, apply,
idempotence, a live threshold change, and queue settings through ``simple_switch_CLI``."""

from __future__ import annotations

import shutil
import subprocess

import grpc
import pytest
from switch_proc import DLCP_P4, ROOT, free_port

from controller import dlcp_tables as api
from controller import netconfig, reconcile
from controller.cli import EXIT_OK, main
from controller.controller import Controller

TOOLS = ("p4c", "simple_switch_grpc", "simple_switch_CLI")
pytestmark = [pytest.mark.bmv2, pytest.mark.slow,
              pytest.mark.skipif(any(shutil.which(t) is None for t in TOOLS),
                                 reason=f"BMv2 not installed (needs {', '.join(TOOLS)} on PATH)")]


@pytest.fixture
def bmv2(tmp_path):
    out = tmp_path / "build"
    out.mkdir()
    subprocess.run(["p4c", "--target", "bmv2", "--arch", "v1model", "--p4runtime-files",
                    str(out / "dlcp.p4info.txtpb"), "-I", str(ROOT / "p4src" / "include"), "-o", str(out),
                    str(DLCP_P4)], check=True, capture_output=True)
    grpc_port, thrift_port = free_port(), free_port()
    proc = subprocess.Popen(["simple_switch_grpc", "--no-p4", "--device-id", "1", "--thrift-port", str(thrift_port),
                             "--", "--grpc-server-addr", f"127.0.0.1:{grpc_port}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    channel = grpc.insecure_channel(f"127.0.0.1:{grpc_port}")
    try:
        grpc.channel_ready_future(channel).result(timeout=30)
        channel.close()
        path = tmp_path / "net.yaml"
        path.write_text(
            f"defaults:\n  target: bmv2\n  pipeline: {{p4info: {out}/dlcp.p4info.txtpb, config: {out}/dlcp.json}}\n"
            f'switches:\n  s1: {{grpc: "127.0.0.1:{grpc_port}", device_id: 1, runtime: {{thrift_port: {thrift_port}}}}}\n'
            "hosts:\n"
            '  h1: {ip: 10.0.0.1, mac: "00:00:00:00:00:01", switch: s1, port: 1}\n'
            '  h2: {ip: 10.0.0.2, mac: "00:00:00:00:00:02", switch: s1, port: 2}\n'
            "queues: {depth: 64}\n")
        yield path
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_apply_idempotent_and_live_threshold_on_bmv2(bmv2, capsys):
    ctl = Controller(netconfig.load(bmv2))
    ctl.connect()
    try:
        assert ctl.apply()["s1"].pipeline == "pushed"
        s = ctl.sessions["s1"]
        held = reconcile.read_current(s.client, s.index)
        assert set(held) == {reconcile.entry_key(e) for e in ctl.desired(s).entries}
        # DLCP's UDP port is a table entry BMv2's P4Runtime server accepts (it refuses value-set writes)
        udp_table = s.index.table(api.UDP_PORTS).preamble.id
        assert [e for e in held.values() if e.table_id == udp_table]
        assert ctl.apply()["s1"].plan.empty()
    finally:
        ctl.close()
    assert main(["-c", str(bmv2), "thresholds", "set", "s1", "--queue", "1", "--mag", "0", "--drop", "3",
                 "--ecn", "1"]) == EXIT_OK
    assert main(["-c", str(bmv2), "queues", "set", "s1", "--port", "1", "--depth", "32"]) == EXIT_OK
    assert main(["-c", str(bmv2), "--json", "apply", "--dry-run"]) == EXIT_OK
    assert '"modify": 1' in capsys.readouterr().out
