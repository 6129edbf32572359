"""``dlcpctl`` over mutual TLS against real BMv2 ``simple_switch_grpc`` (issue 11: "BMv2's flags are
accepted unchanged"): the very flags ``test_tls.py`` gives ``p4sim switch`` start simple_switch_grpc
with TLS and client authentication; ``dlcpctl apply`` pushes p4c's BMv2 JSON and installs the DLCP
state through the network YAML's ``tls`` section; a client certificate from another CA and a
plaintext controller are refused with one ``dlcpctl:`` line and nothing is written by them.

Runs where p4c and simple_switch_grpc are on PATH (``make test`` sources /work/shared/p4ref);
skips with the reason elsewhere. Budget: about 30 s (p4c compile of dlcp.p4, one switch).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import grpc
import pytest
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from mininet_topos.ports import free_ports
from tests.p4runtime.certs import Pki, make_pki

ROOT = Path(__file__).resolve().parents[2]
DLCP_P4 = ROOT / "p4src" / "bmv2" / "dlcp.p4"
TOOLS = ("p4c", "simple_switch_grpc")
pytestmark = [pytest.mark.bmv2, pytest.mark.slow,
              pytest.mark.skipif(any(shutil.which(t) is None for t in TOOLS),
                                 reason=f"BMv2 not installed (needs {', '.join(TOOLS)} on PATH)")]


def _mtls_flags(pki: Pki) -> list[str]:
    """Exactly the flags ``test_tls.py`` passes to ``p4sim switch``."""
    return ["--grpc-server-ssl", "--grpc-server-cert", str(pki.server_cert), "--grpc-server-key",
            str(pki.server_key), "--grpc-server-cacert", str(pki.ca), "--grpc-server-with-client-auth"]


def _secure(addr: str, pki: Pki) -> grpc.Channel:
    creds = grpc.ssl_channel_credentials(pki.ca.read_bytes(), pki.client_key.read_bytes(),
                                         pki.client_cert.read_bytes())
    return grpc.secure_channel(addr, creds)


def _dlcpctl(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "controller.cli", *args], capture_output=True, text=True,
                          timeout=180, cwd=ROOT)


def _has_pipeline(addr: str, pki: Pki) -> bool:
    with _secure(addr, pki) as ch:
        stub = p4runtime_pb2_grpc.P4RuntimeStub(ch)
        get = p4runtime_pb2.GetForwardingPipelineConfigRequest
        try:
            reply = stub.GetForwardingPipelineConfig(get(device_id=1, response_type=get.P4INFO_AND_COOKIE),
                                                     timeout=30)
        except grpc.RpcError as err:      # BMv2 before any SetForwardingPipelineConfig
            assert err.code() == grpc.StatusCode.FAILED_PRECONDITION, err
            return False
        return len(reply.config.p4info.tables) > 0


def _table_entries(addr: str, pki: Pki) -> int:
    with _secure(addr, pki) as ch:
        stub = p4runtime_pb2_grpc.P4RuntimeStub(ch)
        req = p4runtime_pb2.ReadRequest(device_id=1)
        req.entities.add().table_entry.SetInParent()
        return sum(len(r.entities) for r in stub.Read(req, timeout=30))


@pytest.fixture
def bmv2_mtls(tmp_path):
    (tmp_path / "pki").mkdir()
    pki = make_pki(tmp_path / "pki")
    out = tmp_path / "build"
    out.mkdir()
    subprocess.run(["p4c", "--target", "bmv2", "--arch", "v1model", "--p4runtime-files",
                    str(out / "dlcp.p4info.txtpb"), "-I", str(ROOT / "p4src" / "include"), "-o", str(out),
                    str(DLCP_P4)], check=True, capture_output=True, timeout=300)
    grpc_port, thrift_port = free_ports(2)          # BMv2 binds neither to port 0: below the ephemeral range
    addr = f"127.0.0.1:{grpc_port}"
    log = tmp_path / "bmv2.log"
    with open(log, "wb") as log_file:
        proc = subprocess.Popen(["simple_switch_grpc", "--no-p4", "--device-id", "1", "--thrift-port", str(thrift_port),
                                 "--", "--grpc-server-addr", addr, *_mtls_flags(pki)],
                                stdout=log_file, stderr=subprocess.STDOUT)
    try:
        with _secure(addr, pki) as ch:
            try:
                grpc.channel_ready_future(ch).result(timeout=30)
            except grpc.FutureTimeoutError:
                pytest.fail(f"simple_switch_grpc with TLS not ready in 30 s: {log.read_text()[-500:]}")
        yield pki, addr, out, tmp_path
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _net_yaml(path: Path, addr: str, build: Path, tls: str) -> Path:
    path.write_text(textwrap.dedent(f"""\
        defaults:
          target: bmv2
          pipeline: {{p4info: {build}/dlcp.p4info.txtpb, config: {build}/dlcp.json}}
        switches:
          s1:
            grpc: "{addr}"
            device_id: 1
        """) + tls + textwrap.dedent("""\
        hosts:
          h1: {ip: 10.0.0.1, mac: "00:00:00:00:00:01", switch: s1, port: 1}
          h2: {ip: 10.0.0.2, mac: "00:00:00:00:00:02", switch: s1, port: 2}
        """))
    return path


def _tls(ca: Path, cert: Path, key: Path) -> str:
    return textwrap.indent(f"tls:\n  ca_cert: {ca}\n  client_cert: {cert}\n  client_key: {key}\n"
                           "  server_name: p4sim.test\n", "    ")


def test_dlcpctl_applies_over_mutual_tls_to_simple_switch_grpc(bmv2_mtls):
    pki, addr, build, tmp = bmv2_mtls
    rogue = _net_yaml(tmp / "rogue.yaml", addr, build, _tls(pki.ca, pki.rogue_cert, pki.rogue_key))
    r = _dlcpctl("-c", str(rogue), "apply")
    print("rogue client:", r.returncode, r.stderr.strip())
    assert r.returncode != 0 and r.stderr.startswith("dlcpctl: ") and r.stderr.count("\n") == 1, r.stderr
    assert "s1" in r.stderr and "Traceback" not in r.stderr, r.stderr
    plain = _net_yaml(tmp / "plain.yaml", addr, build, "")
    r = _dlcpctl("-c", str(plain), "apply")
    print("plaintext client:", r.returncode, r.stderr.strip())
    assert r.returncode != 0 and r.stderr.startswith("dlcpctl: ") and "Traceback" not in r.stderr, r.stderr
    assert not _has_pipeline(addr, pki)                       # the refused controllers wrote nothing

    good = _net_yaml(tmp / "net.yaml", addr, build, _tls(pki.ca, pki.client_cert, pki.client_key))
    r = _dlcpctl("-c", str(good), "apply")
    assert r.returncode == 0, r.stderr
    assert _has_pipeline(addr, pki)
    assert "applied" in r.stdout and "pushed" in r.stdout, r.stdout
    installed = _table_entries(addr, pki)
    assert installed > 0
    r = _dlcpctl("-c", str(good), "apply")                    # idempotent over TLS: nothing to change
    assert r.returncode == 0 and "in sync" in r.stdout, r.stdout + r.stderr
    assert _table_entries(addr, pki) == installed
