"""Regression: a backlog of ordinary traffic in queue 0 must not shed or mark DLCP in queue 6.

Why this exists: BMv2 and p4sim report in enq_qdepth/deq_qdepth the whole PORT's occupancy.
dlcp.p4 used to compare that with the (queue, magnitude) thresholds, so a Mininet run with
background traffic backlogged in queue 0 selectively dropped and ECN-marked DLCP packets of
strict-priority queue 6, which is served first and barely waits.  dlcp.p4 now counts each
queue's packets in (ingress) and out (egress) and drops on the difference (docs/dataplane.md
"Per-queue depth").  The first test fails on the port-depth program; the second proves a real
backlog in queue 6 itself still sheds low magnitudes at ingress, and that the count follows
the queue down as it drains (3 packets left: low magnitudes pass again).

Both run on a real p4sim switch (SwitchDevice, traffic manager, 80 kbit/s virtual port), as
tests/dataplane/test_congestion.py does, with its drain rate installed in DlcpEgress.port_drain.
"""

from __future__ import annotations

import time

import pytest
from scapy.layers.inet import IP
from scapy.layers.l2 import Ether

from tests.dataplane.packets import dlcp_packet, udp_packet
from tests.dataplane.test_congestion import Harness, dlcp_seq

QUEUE, LOW, HIGH = 6, 0, 15
DROP_DEPTH, ECN_DEPTH = 4, 2
ECN_CAPABLE = 0x08
FILLERS = 60                      # ordinary 100-byte packets: 10 ms each at 80 kbit/s


@pytest.fixture
def harness(dlcp_program):
    h = Harness(dlcp_program)
    with h.device.lock:
        t = h.route_to_port2()
        t.priority_rule(QUEUE, 10, is_dlcp=(1, 1))          # every DLCP packet -> queue 6
        t.thresholds(QUEUE, LOW, DROP_DEPTH, ECN_DEPTH)
    yield h
    h.close()


def next_dlcp(h: Harness, timeout: float) -> bytes | None:
    """The next DLCP frame out of port 2 (queue-0 fillers skipped), None after ``timeout``."""
    end = time.monotonic() + timeout
    while (left := end - time.monotonic()) > 0:
        for f in h.collect(2, 1, timeout=left):
            if dlcp_seq(f) is not None:
                return f
    return None


def counts(h: Harness) -> tuple[int, int, int]:
    c = h.device.pipeline.counters
    i = QUEUE * 16 + LOW
    return (c["DlcpIngress.selective_drops"].cells[i][0], c["DlcpEgress.egress_safety_drops"].cells[i][0],
            c["DlcpIngress.ecn_marks"].cells[i][0])


def test_queue0_backlog_neither_drops_nor_marks_queue6(harness) -> None:
    """Fails on the port-depth program: the port holds ~50 queue-0 packets (> 4), so every
    droppable queue-6 packet was dropped at ingress."""
    harness.send(1, [udp_packet(payload=bytes(58), sport=5000 + i) for i in range(FILLERS)])
    time.sleep(0.03)                                  # a few fillers dequeued: the port is deep
    delivered, ecn = [], []
    for seq in range(5):                              # one at a time: each waits <= one filler
        harness.send(1, [dlcp_packet(layer_class=7, mag_class=LOW, flags=ECN_CAPABLE, ecn=2, seq=seq)])
        got = next_dlcp(harness, timeout=0.1)
        if got is not None:
            delivered.append(dlcp_seq(got))
            ecn.append(Ether(got)[IP].tos & 3)
    port_depth = harness.device.pipeline.registers["port_depth_reg"].read(2)
    assert port_depth > DROP_DEPTH, f"precondition: the port is backlogged (depth {port_depth})"
    assert delivered == list(range(5)), f"queue 6 shed behind queue 0: delivered {delivered}"
    assert ecn == [2] * 5, "queue 6 ECN-marked behind queue 0"
    assert counts(harness) == (0, 0, 0)
    assert harness.device.pipeline.registers["queue_depth_reg"].read(2 * 8 + QUEUE) <= ECN_DEPTH


def test_backlog_in_queue6_still_drops_low_magnitudes(harness) -> None:
    """12 high-magnitude packets ahead in queue 6 (~100 ms at 80 kbit/s): the 4 low ones behind
    them are dropped at ingress (counted depth > 4).  Once 9 have left, at most 3 are queued: 2
    more low ones are delivered (depths <= 3 and <= 4 are not above 4), exactly as the queue's
    real occupancy says."""
    highs = [dlcp_packet(layer_class=7, mag_class=HIGH, seq=i) for i in range(12)]
    lows = [dlcp_packet(layer_class=7, mag_class=LOW, seq=100 + i) for i in range(4)]
    harness.send(1, highs + lows)
    first = harness.collect(2, 9, timeout=2.0)
    assert [dlcp_seq(f) for f in first] == list(range(9))
    assert counts(harness) == (4, 0, 0)
    assert harness.device.pipeline.registers["queue_depth_reg"].read(2 * 8 + QUEUE) <= 3
    harness.send(1, [dlcp_packet(layer_class=7, mag_class=LOW, seq=200 + i) for i in range(2)])
    rest = harness.collect(2, 5, timeout=2.0) + harness.collect(2, 1, timeout=0.3)
    assert [dlcp_seq(f) for f in rest] == [9, 10, 11, 200, 201]
    assert counts(harness) == (4, 0, 0)
