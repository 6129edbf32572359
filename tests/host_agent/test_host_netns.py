"""Round trips across two network namespaces joined by a veth pair (root only).

Sender in namespace A, receiver (and, for loss, a lossy relay) in namespace B: the packets cross
a real veth link. No netem/iptables here, so loss comes from a `dlcp-agent relay` process in B.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("ip") is None,
                                reason="needs root and iproute2 to create network namespaces")
AGENT = [sys.executable, "-m", "host_agent.cli"]
A_IP, B_IP = "10.251.7.1", "10.251.7.2"
# How long the test lets the sender run, start-up included, and the receiver finish after it. The
# receiver's idle limit (--timeout: no packet for that long) is the sender's whole bound: before the
# first packet it is waiting for the relay and the sender to start (measured: 0.6 s of CPU to import,
# the sender 1.3 s more to make and packetize its 161 tensors), which took over 20 s at nice 19 on the
# loaded 2-core machine (recv left after 20 s idle, 8 s after the sender had opened its output file;
# the sender then found nobody behind the relay: "no answer ... to the OPEN"). The test's waits
# end when the processes exit; these bounds only decide how long a real hang takes to be reported.
GEN_WAIT_S = 60
RECV_WAIT_S = 30


def sh(*cmd: str) -> None:
    subprocess.run(cmd, check=True, capture_output=True)


@pytest.fixture
def netns_pair():
    tag = f"dh{os.getpid() % 100000}"
    a, b = f"{tag}a", f"{tag}b"
    try:
        sh("ip", "netns", "add", a)
        sh("ip", "netns", "add", b)
        sh("ip", "link", "add", f"{tag}x", "type", "veth", "peer", "name", f"{tag}y")
        sh("ip", "link", "set", f"{tag}x", "netns", a)
        sh("ip", "link", "set", f"{tag}y", "netns", b)
        sh("ip", "-n", a, "addr", "add", f"{A_IP}/24", "dev", f"{tag}x")
        sh("ip", "-n", b, "addr", "add", f"{B_IP}/24", "dev", f"{tag}y")
        for ns, dev in ((a, f"{tag}x"), (b, f"{tag}y")):
            sh("ip", "-n", ns, "link", "set", dev, "up")
            sh("ip", "-n", ns, "link", "set", "lo", "up")
        yield a, b
    finally:
        for ns in (a, b):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def in_ns(ns: str, args: list[str], **kw) -> subprocess.Popen:
    return subprocess.Popen(["ip", "netns", "exec", ns, *AGENT, *args], **kw)


def first_address(path: Path, timeout: float = 20.0) -> str:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if path.exists() and path.read_text().strip():
            return json.loads(path.read_text().splitlines()[0])["address"]
        time.sleep(0.05)
    raise AssertionError(f"{path} never announced its address")


def records(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def run_gen_recv(tmp_path: Path, a: str, b: str, loss: float, bound: float,
                 offload: str = "auto") -> tuple[dict, dict, list]:
    rx_out, tx_out, relay_out = tmp_path / "rx.jsonl", tmp_path / "tx.jsonl", tmp_path / "relay.jsonl"
    procs = [in_ns(b, ["recv", "--bind", "0.0.0.0:9290", "--count", "161", "--timeout", str(GEN_WAIT_S),
                       "--out", str(rx_out)])]
    try:
        first_address(rx_out)
        dest = f"{B_IP}:9290"
        if loss:
            procs.append(in_ns(b, ["relay", "--bind", f"{B_IP}:9291", "--target", "127.0.0.1:9290",
                                   "--drop-noncritical", str(loss), "--seed", "4", "--out", str(relay_out)]))
            first_address(relay_out)
            dest = f"{B_IP}:9291"
        gen = in_ns(a, ["gen", "--dest", dest, "--profile", "resnet50", "--scale", "0.005", "--worker", "1",
                        "--loss-bound", str(bound), "--offload", offload, "--out", str(tx_out)])
        assert gen.wait(GEN_WAIT_S) == 0
        assert procs[0].wait(RECV_WAIT_S) == 0
    finally:
        for p in procs[1:]:
            p.terminate()
            p.wait(10)
        for p in procs:
            p.kill()
    sent = records(tx_out)[0]
    got = {r["tensor_id"]: r for r in records(rx_out) if r["event"] == "tensor"}
    relay = records(relay_out)[-1] if loss else {}
    return sent, got, [relay]


@pytest.mark.parametrize("offload", ["auto", "on"])
def test_lossless_across_namespaces_bit_exact(tmp_path, netns_pair, offload):
    """auto: one datagram per syscall across the veth; on: GSO batches segmented by the kernel."""
    sent, got, _ = run_gen_recv(tmp_path, *netns_pair, loss=0.0, bound=0.1, offload=offload)
    assert len(got) == 161
    assert [got[t]["sha256"] for t in range(161)] == sent["sha256"]
    assert sent["retransmissions"] == 0 and sent["zero_filled_elements"] == 0


def test_loss_across_namespaces_with_zero_bound_is_repaired(tmp_path, netns_pair):
    sent, got, (relay,) = run_gen_recv(tmp_path, *netns_pair, loss=0.05, bound=0.0)
    assert relay["dropped"].get("DATA_noncritical", 0) > 0
    assert [got[t]["sha256"] for t in range(161)] == sent["sha256"]
    assert sent["retransmissions"] >= relay["dropped"]["DATA_noncritical"]


def test_loss_across_namespaces_within_bound(tmp_path, netns_pair):
    sent, got, (relay,) = run_gen_recv(tmp_path, *netns_pair, loss=0.05, bound=0.1)
    dropped = relay["dropped"].get("DATA_noncritical", 0)
    assert dropped > 0
    zero = sum(r["zero_filled_packets"] for r in got.values())
    assert 0 < zero <= dropped
    for r in got.values():
        assert r["zero_filled_packets"] <= 0.1 * r["packets"] + 1
