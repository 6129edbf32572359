"""Congestion on a real p4sim switch (SwitchDevice + traffic manager, virtual ports) running
dlcp.p4: a rate-limited egress port, low-magnitude DATA dropped at ingress once its queue holds
more than the threshold, high-magnitude and CRITICAL packets delivered, ECN CE above the
marking threshold, a threshold changed at run time applied to the next packets, counters equal
to what was sent and received.

The depth is the queue's counted occupancy (docs/dataplane.md "Per-queue depth"): the packets
of the same (port, queue) ahead of the arriving one, counted in at ingress and out at egress.

Determinism: as in tests/switch/scenarios.py, a 1000-byte blocker holds the 80 kbit/s link
for 100 ms (about 12 DLCP packet times), so the whole phase-1 burst is queued before any of it
leaves: the depth each packet sees is its position among the packets accepted before it,
which ``phase1_outcome`` models.
"""

from __future__ import annotations

import time

import pytest
from scapy.layers.inet import IP
from scapy.layers.l2 import Ether

from tests.dataplane.packets import dlcp_packet, host_ip, udp_packet
from tests.dataplane.tables import DlcpTables

LINK_BPS = 80_000
SLOW_LINK_MAX_AGE_US = 500_000          # 5 x the blocker's 100 ms on the wire
DLCP_FRAME_BYTES = 82                    # dlcp_packet() with its default 4-element payload
PKTS_PER_S = LINK_BPS // (8 * DLCP_FRAME_BYTES)     # 121: DlcpEgress.port_drain for port 2
LOW, ECN_MAG, HIGH = 0, 8, 15
KINDS = [
    ("low", dict(mag_class=LOW)),
    ("critical", dict(mag_class=LOW, flags=0x80)),
    ("high", dict(mag_class=HIGH)),
    ("ecn", dict(mag_class=ECN_MAG, flags=0x08, ecn=2)),
]


def ip_int(addr: str) -> int:
    return int.from_bytes(bytes(int(x) for x in addr.split(".")), "big")


class Harness:
    def __init__(self, program) -> None:
        from p4sim.switch.device import SwitchDevice

        self.device = SwitchDevice(name="dlcp-congestion", priority_queues=8, queue_depth=64)
        self.device.load_program(program)
        self.peers = {p: self.device.add_virtual_port(p) for p in (1, 2)}
        self.tables = DlcpTables(self.device.pipeline)
        self.device.tm.set_port_rate(2, LINK_BPS)
        with self.device.lock:
            self.tables.depth_max_age(SLOW_LINK_MAX_AGE_US)
            self.tables.port_drain(2, PKTS_PER_S)
        self.device.start()

    def route_to_port2(self) -> DlcpTables:
        """Install the route to the host on port 2 (caller holds the device lock); the tables."""
        self.tables.nexthop(2, 2)
        self.tables.route(ip_int(host_ip(2)) & 0xFFFFFF00, 24, 2)
        return self.tables

    def send(self, port: int, frames: list[bytes]) -> None:
        for f in frames:
            self.peers[port].send(f)

    def collect(self, port: int, n: int, timeout: float) -> list[bytes]:
        out: list[bytes] = []
        end = time.monotonic() + timeout
        while len(out) < n and (left := end - time.monotonic()) > 0:
            f = self.peers[port].recv(left)
            if f is not None:
                out.append(f)
        return out

    def close(self) -> None:
        self.device.stop()


@pytest.fixture
def harness(dlcp_program):
    h = Harness(dlcp_program)
    yield h
    h.close()


def dlcp_seq(frame: bytes) -> int | None:
    """The DLCP seq of a frame, None for anything that is not DLCP."""
    pkt = Ether(frame)
    if IP not in pkt:
        return None
    udp = bytes(pkt[IP].payload)
    if len(udp) < 32 or int.from_bytes(udp[2:4], "big") != 9290 or udp[8] >> 4 != 1:
        return None
    return int.from_bytes(udp[28:32], "big")


def wait_for(predicate, timeout: float = 5.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.002)
    return predicate()


def burst(phase: int, rounds: int, layer_class: int = 7) -> dict[int, tuple[str, bytes]]:
    """seq -> (kind, frame) for ``rounds`` x the four kinds, seq = phase*100 + position."""
    out = {}
    for i in range(rounds * len(KINDS)):
        kind, fields = KINDS[i % len(KINDS)]
        seq = phase * 100 + i
        out[seq] = (kind, dlcp_packet(layer_class=layer_class, seq=seq, offset=seq * 4, **fields))
    return out


def phase1_outcome(phase1: dict[int, tuple[str, bytes]]) -> tuple[set[int], set[int]]:
    """(dropped seqs, CE-marked seqs) of a burst queued at once: low (drop 4) and ecn (mark 3)
    against the count of packets accepted ahead of each in the same queue."""
    depth, dropped, marked = 0, set(), set()
    for seq, (kind, _) in sorted(phase1.items()):
        if kind == "low" and depth > 4:
            dropped.add(seq)
            continue
        if kind == "ecn" and depth > 3:
            marked.add(seq)
        depth += 1
    return dropped, marked


@pytest.mark.parametrize("queue", [6, 2, 4])
def test_selective_drop_ecn_and_runtime_threshold_change(harness, queue: int) -> None:
    t = harness.tables
    with harness.device.lock:
        t.nexthop(2, 2)
        t.route(ip_int(host_ip(2)) & 0xFFFFFF00, 24, 2)
        t.priority_rule(queue, 10, is_dlcp=(1, 1))
        t.thresholds(queue, LOW, 4, 2)
        t.thresholds(queue, ECN_MAG, 1000, 3)

    # phase 1: blocker, then 24 DLCP packets queued behind it; from the 9th on the queue holds
    # more than 4: low magnitudes are dropped at ingress, ECN-capable ones marked above 3
    phase1 = burst(1, 6, layer_class=queue)
    assert len(phase1[100][1]) == DLCP_FRAME_BYTES
    dropped1, marked1 = phase1_outcome(phase1)
    assert dropped1 == {108, 112, 116, 120} and marked1 == {107, 111, 115, 119, 123}
    harness.send(1, [udp_packet(payload=bytes(958))] + [f for _, f in phase1.values()])
    first = harness.collect(2, 2, timeout=5.0)               # blocker + first delivered DLCP packet
    assert len(first) == 2
    drops = harness.device.pipeline.counters["DlcpIngress.selective_drops"]
    assert drops.cells[queue * 16 + LOW][0] == 4, "phase 1 not dropped at ingress"
    depth = harness.device.pipeline.registers["queue_depth_reg"].read(2 * 8 + queue)
    assert depth > 4, "egress did not record the queue's depth"

    # phase 2: the queue still holds ~19 packets: ingress drops low, marks ecn
    phase2 = burst(2, 2, layer_class=queue)
    harness.send(1, [f for _, f in phase2.values()])
    assert wait_for(lambda: drops.cells[queue * 16 + LOW][0] == 6), "phase 2 not dropped at ingress"
    # phase 3: raise the low-magnitude threshold at run time: the next packets pass
    with harness.device.lock:
        from p4sim.runtime import tables as rt
        harness.device.pipeline.tables["DlcpIngress.drop_thresholds"].modify(rt.TableEntry(
            match=(rt.Exact(queue), rt.Exact(LOW)),
            action=rt.ActionCall("DlcpIngress.set_thresholds", (100_000, 100_000))))
    phase3 = {300 + i: ("low", dlcp_packet(layer_class=queue, mag_class=LOW, seq=300 + i)) for i in range(2)}
    harness.send(1, [f for _, f in phase3.values()])

    expect1 = set(phase1) - dropped1
    expect2 = {s for s, (k, _) in phase2.items() if k != "low"}
    expect3 = set(phase3)
    expected = expect1 | expect2 | expect3
    rest = harness.collect(2, len(expected) - 1, timeout=5.0)
    rest += harness.collect(2, 1, timeout=0.3)              # anything beyond is an error
    assert dlcp_seq(first[0]) is None                        # the blocker left first
    assert dlcp_seq(first[1]) == 100                         # the queue was empty: it passed
    frames = first[1:] + rest
    got = {dlcp_seq(f): f for f in frames}
    assert set(got) == expected, (sorted(set(got) - expected), sorted(expected - set(got)))
    assert len(frames) == len(expected)                      # no duplicates

    for seq, frame in got.items():
        ip = Ether(frame)[IP]
        assert ip.tos >> 2 == queue << 3
        marked = seq in marked1 or (seq in phase2 and phase2[seq][0] == "ecn")
        ect = (seq in phase1 and phase1[seq][0] == "ecn") or (seq in phase2 and phase2[seq][0] == "ecn")
        assert (ip.tos & 3) == (3 if marked else (2 if ect else 0)), seq

    p = harness.device.pipeline
    assert p.counters["DlcpIngress.selective_drops"].cells[queue * 16 + LOW][0] == 6
    assert p.counters["DlcpEgress.egress_safety_drops"].cells[queue * 16 + LOW][0] == 0
    assert p.counters["DlcpIngress.ecn_marks"].cells[queue * 16 + ECN_MAG][0] == len(marked1) + 2
    assert sum(c[0] for c in p.counters["DlcpIngress.selective_drops"].cells) == 6
    assert p.counters["DlcpEgress.port_queue_tx"].cells[2 * 8 + queue][0] == len(expected)
    assert p.counters["DlcpEgress.port_queue_tx"].cells[2 * 8 + 0][0] == 1      # the blocker
