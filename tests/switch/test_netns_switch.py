"""The ``p4sim switch`` process between hosts in network namespaces: real veths, AF_PACKET,
scapy-built frames; priority queues, tail drops and queue metadata observed from the hosts."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from scapy.utils import rdpcap

from p4sim.switch.ctl import CtlClient
from tests.switch import scenarios
from tests.switch.netns import HostSocket, VethTopology, have_netns
from tests.switch.programs import TM_PROBE_P4, needs_compiler, probe_frame, read_probe

pytestmark = [pytest.mark.skipif(not have_netns(), reason="needs root and iproute2 for network namespaces"),
              needs_compiler]


class NetnsHarness:
    def __init__(self, topo: VethTopology, *extra: str) -> None:
        self.topo = topo
        self.hosts = {i + 1: HostSocket(h) for i, h in enumerate(topo.hosts)}
        args = [sys.executable, "-m", "p4sim.cli", "switch", "--no-grpc", "--ctl-addr", "127.0.0.1:0",
                "--name", "s-netns", "--log-console", "--priority-queues", "8"]   # tm_probe: DSCP -> 0..7
        for i, sw in enumerate(topo.switch_ifaces):
            args += ["-i", f"{i + 1}@{sw}"]
        self.proc = subprocess.Popen(args + list(extra) + [TM_PROBE_P4], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if "ready" not in line:
            self.proc.kill()
            raise AssertionError(f"switch did not start: {line!r} {self.proc.stderr.read()}")
        self.ctl_addr = line.split("ctl=")[1].split()[0]
        self.client = CtlClient(self.ctl_addr)

    def send(self, port: int, frames: list[bytes]) -> None:
        for f in frames:
            self.hosts[port].send(f)

    def collect(self, port: int, n: int, timeout: float) -> list[bytes]:
        """Up to ``n`` probe frames leaving ``port`` (other frames are ignored)."""
        out: list[bytes] = []
        end = time.monotonic() + timeout
        while len(out) < n and (left := end - time.monotonic()) > 0:
            f = self.hosts[port].recv(left)
            if f is not None and read_probe(f) is not None:
                out.append(f)
        return out

    def ctl(self, cmd: str, **args):
        return self.client.call(cmd, **args)

    def stop(self, sig: int = signal.SIGTERM) -> tuple[int, str]:
        self.client.close()
        self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout=10)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
        for s in self.hosts.values():
            s.close()
        return rc, self.proc.stderr.read()


@pytest.fixture
def harness():
    with VethTopology(3, tag=f"p4n{os.getpid() % 10000}") as topo:
        h = NetnsHarness(topo)
        yield h
        if h.proc.poll() is None:
            h.stop()


def test_forwarding_between_namespaces(harness):
    harness.send(1, [probe_frame(i, size=200) for i in range(20)])
    got = [read_probe(f) for f in harness.collect(2, 20, timeout=3.0)]
    assert [p["seq"] for p in got if p] == list(range(20))
    harness.send(2, [probe_frame(77)])
    assert read_probe(harness.collect(1, 1, timeout=2.0)[0])["seq"] == 77
    # the switch transmitted 21 frames, but read none of its own transmissions back as input
    assert harness.ctl("stats")["counters"]["rx"] == 21


def test_high_priority_overtakes(harness):
    scenarios.high_priority_overtakes(harness)


def test_qid_seen_by_program(harness):
    scenarios.qid_seen_by_program(harness)


def test_qdepth_metadata_matches_queue(harness):
    scenarios.qdepth_metadata_matches_queue(harness)


def test_tail_drops_counted(harness):
    scenarios.tail_drops_counted(harness)


def test_out_of_range_priority_dropped_with_four_queues():
    with VethTopology(3, tag="p4q") as topo:
        h = NetnsHarness(topo, "--priority-queues", "4")
        try:
            scenarios.out_of_range_priority_dropped(h)
        finally:
            h.stop()


def test_sigterm_shutdown_and_pcap(tmp_path):
    with VethTopology(3, tag="p4c") as topo:
        h = NetnsHarness(topo, "--pcap", str(tmp_path))
        h.send(1, [probe_frame(i) for i in range(4)])
        assert len(h.collect(2, 4, timeout=3.0)) == 4
        rc, err = h.stop(signal.SIGTERM)
        assert rc == 0
        assert "[s-netns] stopped" in err
    names = sorted(p.name for p in tmp_path.iterdir())
    assert "p4cs1_in.pcap" in names and "p4cs2_out.pcap" in names
    ins = [read_probe(bytes(p)) for p in rdpcap(str(tmp_path / "p4cs1_in.pcap"))]
    assert [p["seq"] for p in ins if p] == [0, 1, 2, 3]
    outs = [read_probe(bytes(p)) for p in rdpcap(str(tmp_path / "p4cs2_out.pcap"))]
    assert [p["seq"] for p in outs if p] == [0, 1, 2, 3]
