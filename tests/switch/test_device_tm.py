"""The switch's traffic manager seen by a real program, through in-process virtual ports."""

from __future__ import annotations

import time

import pytest
from scapy.layers.inet import IP
from scapy.layers.l2 import Ether

from p4sim.switch.ctl_server import CtlServer
from p4sim.switch.device import SwitchDevice
from tests.switch import scenarios
from tests.switch.programs import (
    CLONE_RECIRC_P4,
    TM_PROBE_P4,
    compiled,
    needs_program,
    probe_frame,
    read_probe,
)


class VirtualHarness:
    def __init__(self, priority_queues: int = 8, pcap_dir: str | None = None) -> None:
        self.device = SwitchDevice(name="s-virt", priority_queues=priority_queues, pcap_dir=pcap_dir)
        self.device.load_program(compiled(TM_PROBE_P4))
        self.peers = {p: self.device.add_virtual_port(p) for p in (1, 2, 3)}
        self.device.start()
        self._ctl = CtlServer(self.device, "127.0.0.1:0")   # execute() in-process, same code path

    def send(self, port: int, frames: list[bytes]) -> None:
        for f in frames:
            self.peers[port].send(f)

    def collect(self, port: int, n: int, timeout: float) -> list[bytes]:
        """Up to ``n`` probe frames leaving ``port`` (other frames are ignored)."""
        out: list[bytes] = []
        end = time.monotonic() + timeout
        while len(out) < n and (left := end - time.monotonic()) > 0:
            f = self.peers[port].recv(left)
            if f is not None and read_probe(f) is not None:
                out.append(f)
        return out

    def ctl(self, cmd: str, **args):
        return self._ctl.execute(cmd, args)

    def close(self) -> None:
        self._ctl.stop()
        self.device.stop()


@pytest.fixture
def harness():
    h = VirtualHarness()
    yield h
    h.close()


def test_forwarding_and_counters(harness):
    harness.send(1, [probe_frame(i) for i in range(5)])
    got = harness.collect(2, 5, timeout=2.0)
    assert [read_probe(f)["seq"] for f in got] == list(range(5))
    harness.send(2, [probe_frame(7)])
    assert read_probe(harness.collect(1, 1, timeout=2.0)[0])["seq"] == 7
    stats = harness.device.stats()
    assert stats["counters"]["rx"] == 6 and stats["counters"]["tx"] == 6


def test_a_frame_is_counted_before_a_receiver_can_see_it(harness):
    """``stats()`` read the moment a frame arrives already counts it in ``tx``, and no frame twice.

    The switch sends a turn's frames one by one; when it counted them after the turn, a receiver woken
    by the first frame read a smaller ``tx`` (session 14: tx 5 of 6 in the test above). Read right after
    every receive, batches of 4 frames: that code lagged on 75 % of the frames (904 of 1,200)."""
    batch = [probe_frame(i) for i in range(4)]
    peer = harness.peers[2]
    seen = 0
    wrong = []
    for _ in range(250):
        harness.send(1, batch)
        round_end = seen + len(batch)      # the next round is not sent yet: tx cannot pass this
        for _frame in batch:
            assert peer.recv(2.0) is not None, f"frame {seen} not forwarded"
            seen += 1
            tx = harness.device.stats()["counters"].get("tx", 0)
            if not seen <= tx <= round_end:
                wrong.append((seen, tx))
    assert not wrong, (f"{len(wrong)} of {seen} reads outside [frames received, frames sent]; "
                       f"(received, tx) first ones: {wrong[:8]}")
    assert harness.device.stats()["counters"]["tx"] == seen


def test_high_priority_overtakes(harness):
    scenarios.high_priority_overtakes(harness)


def test_qid_seen_by_program(harness):
    scenarios.qid_seen_by_program(harness)


def test_qdepth_metadata_matches_queue(harness):
    scenarios.qdepth_metadata_matches_queue(harness)


def test_tail_drops_counted(harness):
    scenarios.tail_drops_counted(harness)


def test_out_of_range_priority_dropped():
    h = VirtualHarness(priority_queues=4)
    try:
        scenarios.out_of_range_priority_dropped(h)
    finally:
        h.close()


def test_pcap_files_per_port_and_direction(tmp_path):
    from scapy.utils import rdpcap

    h = VirtualHarness(pcap_dir=str(tmp_path))
    try:
        frames = [probe_frame(i) for i in range(3)]
        h.send(1, frames)
        assert len(h.collect(2, 3, timeout=2.0)) == 3
    finally:
        h.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["vport1_in.pcap", "vport2_out.pcap"]
    assert [bytes(p) for p in rdpcap(str(tmp_path / "vport1_in.pcap"))] == frames
    outs = [read_probe(bytes(p))["seq"] for p in rdpcap(str(tmp_path / "vport2_out.pcap"))]
    assert outs == [0, 1, 2]


def test_load_program_swaps_atomically_and_clears_queues(harness):
    harness.ctl("set_port_rate", port=2, bits=8_000)           # 100-byte probe: 100 ms
    harness.send(1, [probe_frame(i) for i in range(5)])
    deadline = time.monotonic() + 5
    while harness.device.tm.size < 4 and time.monotonic() < deadline:   # one left, four wait
        time.sleep(0.005)
    assert harness.device.tm.size == 4
    harness.device.load_program(compiled(TM_PROBE_P4))         # queued packets are dropped
    assert harness.device.tm.size == 0
    got = harness.collect(2, 5, timeout=0.5)
    assert [read_probe(f)["seq"] for f in got] == [0]


def test_cpu_port_packet_in_and_packet_out():
    """Frames the program sends to the CPU port reach the packet-in handler; packet-outs enter
    ingress on the CPU port (tm_probe forwards 1 -> 2 and 2 -> 1, and 2 is the CPU port here)."""
    dev = SwitchDevice(name="s-cpu", cpu_port=2)
    dev.load_program(compiled(TM_PROBE_P4))
    host = dev.add_virtual_port(1)
    got: list[bytes] = []
    dev.set_packet_in_handler(got.append)
    dev.start()
    try:
        host.send(probe_frame(5))
        deadline = time.monotonic() + 2
        while not got and time.monotonic() < deadline:
            time.sleep(0.01)
        assert [read_probe(f)["seq"] for f in got] == [5]
        dev.inject_packet_out(probe_frame(6))
        assert read_probe(host.recv(2.0))["seq"] == 6
        dev.set_packet_in_handler(None)
        host.send(probe_frame(7))
        time.sleep(0.1)
        assert dev.counters["packet_in_dropped"] == 1 and len(got) == 1
    finally:
        dev.stop()


@needs_program(CLONE_RECIRC_P4)
def test_clone_and_recirculation_through_the_switch():
    dev = SwitchDevice(name="s-clone")
    dev.load_program(compiled(CLONE_RECIRC_P4))
    with dev.lock:
        dev.pipeline.pre.mirroring_add(5, 3)          # clone session 5 -> port 3
    peers = {p: dev.add_virtual_port(p) for p in (1, 2, 3)}
    dev.start()
    try:
        sent = probe_frame(1)
        peers[1].send(sent)
        assert peers[2].recv(2.0) == sent                       # the original, unchanged
        clone = Ether(peers[3].recv(2.0))
        assert clone.src == "00:00:00:00:00:cc" and bytes(clone)[12:] == sent[12:]
        peers[2].send(probe_frame(2))
        out = Ether(peers[3].recv(2.0))                         # recirculated, field list kept
        assert out[IP].ttl == 8
        assert peers[1].recv(0.2) is None                       # recirculated packets do not leave
        assert dev.counters["tx"] == 3
    finally:
        dev.stop()
