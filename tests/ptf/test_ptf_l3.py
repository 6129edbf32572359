"""Run the PTF suite in tests/ptf/l3 with the real ``ptf`` runner against a switch process —
``p4sim switch``, and BMv2's ``simple_switch`` when installed, so both targets are held to one
behaviour — over the nanomsg ``nn`` platform (no root needed) and over veth pairs (root)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time

import pytest

from mininet_topos.ports import free_ports
from tests.switch.netns import have_netns, sh
from tests.switch.programs import needs_program

HERE = os.path.dirname(os.path.abspath(__file__))
SUITE = os.path.join(HERE, "l3")
PROGRAM = os.path.join(SUITE, "l3_router.p4")
PTF = shutil.which("ptf", path=os.path.dirname(sys.executable)) or shutil.which("ptf")
TESTS = [f"l3_tests.{t}" for t in ("ForwardTest", "LongestPrefixTest", "PayloadSizesTest", "DropNoRouteTest",
                                   "DropTtlTest", "DropBadChecksumTest", "DropNonIpTest")]
HAVE_BMV2 = shutil.which("simple_switch") is not None and shutil.which("p4c") is not None

pytestmark = [pytest.mark.skipif(PTF is None, reason="the ptf runner is not installed"), pytest.mark.slow]
TARGETS = [
    pytest.param("p4sim", marks=needs_program(PROGRAM)),
    pytest.param("bmv2", marks=[pytest.mark.bmv2, pytest.mark.skipif(
        not HAVE_BMV2, reason="BMv2 simple_switch and p4c are not installed")]),
]


def start_switch(target: str, tmp_path, *args: str) -> subprocess.Popen:
    if target == "p4sim":
        proc = subprocess.Popen([sys.executable, "-m", "p4sim.cli", "switch", "--no-grpc", "--ctl-addr",
                                 "127.0.0.1:0", "--name", "s-ptf", *args, PROGRAM],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = proc.stdout.readline()
        if "ready" not in line:
            proc.kill()
            raise AssertionError(f"switch did not start: {line!r} {proc.stderr.read()}")
        return proc
    subprocess.run(["p4c", "--target", "bmv2", "--arch", "v1model", "-o", str(tmp_path), PROGRAM], check=True)
    thrift = free_ports(1)[0]      # BMv2 cannot bind port 0 and report it
    proc = subprocess.Popen(["simple_switch", "--thrift-port", str(thrift), *args,
                             str(tmp_path / "l3_router.json")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:        # ready once its runtime (thrift) port answers
        try:
            socket.create_connection(("127.0.0.1", thrift), timeout=0.2).close()
            return proc
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise AssertionError(f"simple_switch did not start: {proc.stderr.read()}")


def stop_switch(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        assert proc.wait(timeout=10) in (0, -signal.SIGTERM)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def run_ptf(cwd, *platform_args: str) -> subprocess.CompletedProcess:
    return subprocess.run([PTF, "--test-dir", SUITE, "--log-file", str(cwd / "ptf.log"), *platform_args,
                           *TESTS], cwd=cwd, capture_output=True, text=True, timeout=300)


def check(result: subprocess.CompletedProcess) -> None:
    report = result.stdout + result.stderr
    assert result.returncode == 0, report
    assert f"Ran {len(TESTS)} tests" in report, report
    assert "\nOK" in report, report


@pytest.mark.parametrize("target", TARGETS)
def test_ptf_l3_over_nanomsg(target, tmp_path):
    addr = f"ipc://{tmp_path}/switch.ipc"
    proc = start_switch(target, tmp_path, "--packet-in", addr)
    try:
        check(run_ptf(tmp_path, "--platform", "nn", "--device-socket", f"0-{{1,2,3}}@{addr}"))
    finally:
        stop_switch(proc)


@pytest.mark.skipif(not have_netns(), reason="needs root for veth interfaces")
@pytest.mark.parametrize("target", TARGETS)
def test_ptf_l3_over_veths(target, tmp_path):
    tag = f"p4p{os.getpid() % 10000}"
    pairs = [(f"{tag}a{i}", f"{tag}b{i}") for i in (1, 2, 3)]
    try:
        for ptf_side, sw_side in pairs:
            sh("ip", "link", "add", ptf_side, "type", "veth", "peer", "name", sw_side)
            for dev in (ptf_side, sw_side):
                sh("sysctl", "-qw", f"net.ipv6.conf.{dev}.disable_ipv6=1")
                sh("ethtool", "-K", dev, "tx", "off", "rx", "off", check=False)
                sh("ip", "link", "set", dev, "up")
        proc = start_switch(target, tmp_path, *[a for i, (_, sw) in enumerate(pairs) for a in ("-i", f"{i + 1}@{sw}")])
        try:
            check(run_ptf(tmp_path, *[a for i, (p, _) in enumerate(pairs) for a in ("--interface", f"{i + 1}@{p}")]))
        finally:
            stop_switch(proc)
    finally:
        for ptf_side, _ in pairs:
            sh("ip", "link", "del", ptf_side, check=False)
