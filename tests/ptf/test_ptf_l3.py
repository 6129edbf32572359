"""Run the PTF suite in tests/ptf/l3 with the real ``ptf`` runner against a ``p4sim switch``
process: over the nanomsg ``nn`` platform (no root needed) and over veth pairs (root)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys

import pytest

from tests.switch.netns import have_netns, sh
from tests.switch.programs import needs_program

HERE = os.path.dirname(os.path.abspath(__file__))
SUITE = os.path.join(HERE, "l3")
PROGRAM = os.path.join(SUITE, "l3_router.p4")
PTF = shutil.which("ptf", path=os.path.dirname(sys.executable)) or shutil.which("ptf")
TESTS = [f"l3_tests.{t}" for t in ("ForwardTest", "LongestPrefixTest", "PayloadSizesTest", "DropNoRouteTest", "DropTtlTest",
         "DropBadChecksumTest", "DropNonIpTest")]

pytestmark = [
    needs_program(PROGRAM),
    pytest.mark.skipif(PTF is None, reason="the ptf runner is not installed"),
    pytest.mark.slow,
]


def start_switch(*args: str) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-m", "p4sim.cli", "switch", "--no-grpc", "--ctl-addr", "127.0.0.1:0",
                             "--name", "s-ptf", *args, PROGRAM],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if "ready" not in line:
        proc.kill()
        raise AssertionError(f"switch did not start: {line!r} {proc.stderr.read()}")
    return proc


def stop_switch(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        assert proc.wait(timeout=10) == 0
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
    assert "OK" in report.splitlines()[-1] or "\nOK" in report, report


def test_ptf_l3_over_nanomsg(tmp_path):
    addr = f"ipc://{tmp_path}/p4sim.ipc"
    proc = start_switch("--packet-in", addr)
    try:
        check(run_ptf(tmp_path, "--platform", "nn", "--device-socket", f"0-{{1,2,3}}@{addr}"))
    finally:
        stop_switch(proc)


@pytest.mark.skipif(not have_netns(), reason="needs root for veth interfaces")
def test_ptf_l3_over_veths(tmp_path):
    tag = f"p4p{os.getpid() % 10000}"
    pairs = [(f"{tag}a{i}", f"{tag}b{i}") for i in (1, 2, 3)]
    try:
        for ptf_side, sw_side in pairs:
            sh("ip", "link", "add", ptf_side, "type", "veth", "peer", "name", sw_side)
            for dev in (ptf_side, sw_side):
                sh("sysctl", "-qw", f"net.ipv6.conf.{dev}.disable_ipv6=1")
                sh("ethtool", "-K", dev, "tx", "off", "rx", "off", check=False)
                sh("ip", "link", "set", dev, "up")
        proc = start_switch(*[a for i, (_, sw) in enumerate(pairs) for a in ("-i", f"{i + 1}@{sw}")])
        try:
            check(run_ptf(tmp_path, *[a for i, (p, _) in enumerate(pairs) for a in ("--interface", f"{i + 1}@{p}")]))
        finally:
            stop_switch(proc)
    finally:
        for ptf_side, _ in pairs:
            sh("ip", "link", "del", ptf_side, check=False)
