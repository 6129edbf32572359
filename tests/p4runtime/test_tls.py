"""P4Runtime over TLS and mutual TLS, with simple_switch_grpc's own flags, on a real ``p4sim switch``.

Certificates are made in the test (``certs.make_pki``). End to end: ``dlcpctl apply`` configures a
switch that demands client certificates, through the network YAML's ``tls`` section. Refused:
a client whose certificate comes from another CA, a client without a certificate, a plaintext
client, and a client that does not trust the server's CA. Flag mistakes are one-line errors.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import grpc
import pytest
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from tests.p4runtime.certs import Pki, make_pki
from tests.p4runtime.switch_process import start_switch as start
from tests.p4runtime.switch_process import stop_switch as stop

ROOT = Path(__file__).resolve().parents[2]
DLCP_P4 = ROOT / "p4src" / "bmv2" / "dlcp.p4"


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


def start_switch(*flags: str) -> tuple[subprocess.Popen, str]:
    return start("--no-p4", "--device-id", "1", *flags)


def mtls_flags(pki: Pki) -> list[str]:
    return ["--grpc-server-ssl", "--grpc-server-cert", str(pki.server_cert), "--grpc-server-key",
            str(pki.server_key), "--grpc-server-cacert", str(pki.ca), "--grpc-server-with-client-auth"]


def capabilities(channel: grpc.Channel) -> str:
    stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
    return stub.Capabilities(p4runtime_pb2.CapabilitiesRequest(), timeout=5).p4runtime_api_version


def secure(addr: str, ca: Path, cert: Path | None = None, key: Path | None = None) -> grpc.Channel:
    creds = grpc.ssl_channel_credentials(ca.read_bytes(), key.read_bytes() if key else None,
                                         cert.read_bytes() if cert else None)
    return grpc.secure_channel(addr, creds)


def refused(channel: grpc.Channel) -> grpc.StatusCode:
    with channel, pytest.raises(grpc.RpcError) as info:
        capabilities(channel)
    return info.value.code()


def test_mutual_tls_accepts_the_right_client_and_refuses_the_others(pki):
    proc, addr = start_switch(*mtls_flags(pki))
    try:
        with secure(addr, pki.ca, pki.client_cert, pki.client_key) as ok:
            assert capabilities(ok).startswith("1.")
        assert refused(secure(addr, pki.ca, pki.rogue_cert, pki.rogue_key)) == grpc.StatusCode.UNAVAILABLE
        assert refused(secure(addr, pki.ca)) == grpc.StatusCode.UNAVAILABLE               # no certificate
        assert refused(grpc.insecure_channel(addr)) == grpc.StatusCode.UNAVAILABLE         # plaintext
        assert refused(secure(addr, pki.rogue_ca, pki.client_cert, pki.client_key)) == \
            grpc.StatusCode.UNAVAILABLE                                                  # server not trusted
    finally:
        stop(proc)


def test_server_tls_without_client_auth_refuses_plaintext(pki):
    proc, addr = start_switch("--", "--grpc-server-ssl", "--grpc-server-cert", str(pki.server_cert),
                              "--grpc-server-key", str(pki.server_key))     # simple_switch_grpc's spelling
    try:
        with secure(addr, pki.ca) as ok:
            assert capabilities(ok).startswith("1.")
        assert refused(grpc.insecure_channel(addr)) == grpc.StatusCode.UNAVAILABLE
    finally:
        stop(proc)


@pytest.mark.parametrize("flags, message", [
    (["--grpc-server-ssl"], "--grpc-server-ssl needs --grpc-server-cert FILE and --grpc-server-key FILE"),
    (["--grpc-server-cert", "x.pem"],
     "--grpc-server-cert needs --grpc-server-ssl (without it the server would be plaintext)"),
    (["--grpc-server-ssl", "--grpc-server-cert", "/nonexistent.pem", "--grpc-server-key", "/etc/hostname"],
     "--grpc-server-cert /nonexistent.pem: No such file or directory"),
    (["--grpc-server-ssl", "--grpc-server-cert", "/etc/hostname", "--grpc-server-key", "/etc/hostname"],
     "--grpc-server-cert /etc/hostname: not a PEM file (no '-----BEGIN' line)"),
])
def test_tls_flag_mistakes_are_one_line_errors(flags, message):
    r = subprocess.run([sys.executable, "-m", "p4sim.cli", "switch", "--no-p4", "--grpc-server-addr", "127.0.0.1:0",
                        "--ctl-addr", "127.0.0.1:0", *flags], capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and r.stderr.strip() == f"p4sim: {message}", r.stderr


def test_plaintext_on_a_non_loopback_address_warns():
    proc, _ = start("--no-p4", "--grpc-server-addr", "0.0.0.0:0")
    assert "P4Runtime on 0.0.0.0:0 without TLS" in stop(proc)


@pytest.fixture(scope="module")
def dlcp_build(tmp_path_factory) -> tuple[Path, Path]:
    out = tmp_path_factory.mktemp("dlcp")
    subprocess.run([sys.executable, "-m", "p4sim.cli", "compile", "-o", str(out), "-I", str(ROOT / "p4src" / "include"),
                    str(DLCP_P4)], check=True, capture_output=True, timeout=300)
    return out / "dlcp.p4info.txtpb", out / "dlcp.p4sim.json"


def net_yaml(path: Path, addr: str, build: tuple[Path, Path], tls: str) -> Path:
    path.write_text(textwrap.dedent(f"""\
        defaults:
          target: p4sim
          pipeline: {{p4info: {build[0]}, config: {build[1]}}}
        switches:
          s1:
            grpc: "{addr}"
            device_id: 1
        """) + tls)
    return path


def dlcpctl(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "controller.cli", *args], capture_output=True, text=True,
                          timeout=180, cwd=ROOT)


def test_dlcpctl_applies_over_mutual_tls(pki, dlcp_build, tmp_path):
    proc, addr = start_switch(*mtls_flags(pki))
    try:
        tls = textwrap.indent(textwrap.dedent(f"""\
            tls:
              ca_cert: {pki.ca}
              client_cert: {pki.client_cert}
              client_key: {pki.client_key}
              server_name: p4sim.test
            """), "    ")
        good = net_yaml(tmp_path / "net.yaml", addr, dlcp_build, tls)
        r = dlcpctl("-c", str(good), "apply")
        assert r.returncode == 0, r.stderr
        with secure(addr, pki.ca, pki.client_cert, pki.client_key) as ch:
            stub = p4runtime_pb2_grpc.P4RuntimeStub(ch)
            Get = p4runtime_pb2.GetForwardingPipelineConfigRequest
            cfg = stub.GetForwardingPipelineConfig(Get(device_id=1, response_type=Get.COOKIE_ONLY), timeout=10)
            assert cfg.config.HasField("cookie") or cfg.config is not None
        rogue = net_yaml(tmp_path / "rogue.yaml", addr, dlcp_build, tls.replace(str(pki.client_cert),
                         str(pki.rogue_cert)).replace(str(pki.client_key), str(pki.rogue_key)))
        r = dlcpctl("-c", str(rogue), "apply")
        assert r.returncode != 0 and "s1" in r.stderr and "Traceback" not in r.stderr, r.stderr
        plain = net_yaml(tmp_path / "plain.yaml", addr, dlcp_build, "")
        r = dlcpctl("-c", str(plain), "apply")
        assert r.returncode != 0 and "Traceback" not in r.stderr, r.stderr
    finally:
        stop(proc)
