"""The selective-drop rule acts on a queue's real occupancy, not on time spent waiting.

Why this exists (issue 10, hypothesis 3): dlcp.p4 used to estimate a queue's depth as
deq_timedelta x the port's drain rate.  A wait also grows while higher queues are served and
while a software switch stalls, so in Mininet 99 % of selective drops happened while the
queue held <= 16 packets.  dlcp.p4 now counts each (port, queue)'s packets in at ingress and
out at egress (docs/dataplane.md "Per-queue depth").  The first two tests fail on the timed
estimate (checked against the program before this change: every low-magnitude packet was
dropped by the egress re-check); the third shows a queue that is really deep still sheds its
non-critical packets and never a critical one; the last two check egress's corrections.

All but the last run a real p4sim switch (SwitchDevice, traffic manager, 80 kbit/s virtual
port: 8.2 ms per 82-byte DLCP packet) through the harness of test_congestion.py, whose
port_drain and max-age settings are the ones the old estimate needed to be right.
Budget: about 8 s for the module.
"""

from __future__ import annotations

import time

import pytest

from p4sim.v1model.pipeline import QueueMetadata
from tests.dataplane.packets import dlcp_packet, udp_packet
from tests.dataplane.targets import DlcpTarget
from tests.dataplane.test_congestion import Harness, dlcp_seq

HIGH_QUEUE, DATA_QUEUE, CONTROL_QUEUE = 6, 1, 7
LOW, HIGH, CRITICAL, DROP_DEPTH = 0, 15, 0x80, 4


@pytest.fixture
def harness(dlcp_program):
    """Port 2 at 80 kbit/s; non-DLCP in queue 7, layer 7 in queue 6, other DLCP in queue 1."""
    h = Harness(dlcp_program)
    with h.device.lock:
        t = h.route_to_port2()
        t.priority_rule(CONTROL_QUEUE, 30, is_dlcp=(0, 1))                  # non-DLCP blockers first
        t.priority_rule(HIGH_QUEUE, 20, is_dlcp=(1, 1), layer_class=(7, 7))
        t.priority_rule(DATA_QUEUE, 10, is_dlcp=(1, 1))
        t.thresholds(DATA_QUEUE, LOW, DROP_DEPTH, 100_000)
    yield h
    h.close()


def drops(h: Harness) -> tuple[int, int]:
    """(ingress selective drops, egress re-check drops) of DATA_QUEUE / LOW."""
    c = h.device.pipeline.counters
    i = DATA_QUEUE * 16 + LOW
    return c["DlcpIngress.selective_drops"].cells[i][0], c["DlcpEgress.egress_safety_drops"].cells[i][0]


def test_waiting_behind_a_higher_queue_is_not_depth(harness) -> None:
    """Ten packets of queue 6 are served first (~82 ms); three low-magnitude packets of queue 1
    wait behind them although queue 1 holds at most 2: none may be dropped."""
    highs = [dlcp_packet(layer_class=7, mag_class=HIGH, flags=CRITICAL, seq=i) for i in range(10)]
    lows = [dlcp_packet(layer_class=2, mag_class=LOW, seq=100 + i) for i in range(3)]
    harness.send(1, highs + lows)
    got = [dlcp_seq(f) for f in harness.collect(2, 13, timeout=5.0)]
    assert got == list(range(10)) + [100, 101, 102], f"queue 1 shed while it held <= 2: {got}"
    assert drops(harness) == (0, 0)


def test_a_stalled_switch_is_not_depth(harness) -> None:
    """The switch process stops for 0.5 s (the device lock held, as a busy host would stall
    it) while queue 1 holds two packets: their 0.5 s wait is not a 60-packet queue."""
    blocker = udp_packet(payload=bytes(958))                  # queue 7, 100 ms on the wire
    harness.send(1, [blocker, dlcp_packet(layer_class=2, mag_class=HIGH, seq=1),
                     dlcp_packet(layer_class=2, mag_class=LOW, seq=2)])
    time.sleep(0.03)                                          # all three queued, blocker on the wire
    with harness.device.lock:
        time.sleep(0.5)
    out = harness.collect(2, 3, timeout=5.0)
    assert [dlcp_seq(f) for f in out] == [None, 1, 2]
    after = [dlcp_packet(layer_class=2, mag_class=LOW, seq=10 + i) for i in range(3)]
    harness.send(1, after)                                    # the queue is empty again
    assert [dlcp_seq(f) for f in harness.collect(2, 3, timeout=5.0)] == [10, 11, 12]
    assert drops(harness) == (0, 0)


def test_a_really_deep_queue_sheds_non_critical_never_critical(harness) -> None:
    """Eight 1000-byte blockers in queue 7 hold the link for 800 ms (ample on a loaded machine)
    while 40 packets, low
    magnitude and CRITICAL alternating, join queue 1: each low one is dropped exactly when more
    than 4 packets are queued ahead of it; every CRITICAL one is delivered."""
    blockers = [udp_packet(payload=bytes(958), sport=7000 + i) for i in range(8)]
    burst = [dlcp_packet(layer_class=2, mag_class=LOW, flags=CRITICAL if i % 2 else 0, seq=i) for i in range(40)]
    depth, dropped = 0, set()
    for i in range(40):
        if i % 2 == 0 and depth > DROP_DEPTH:
            dropped.add(i)
        else:
            depth += 1
    harness.send(1, blockers + burst)
    expected = [i for i in range(40) if i not in dropped]
    out = harness.collect(2, 8 + len(expected), timeout=10.0) + harness.collect(2, 1, timeout=0.3)
    assert [dlcp_seq(f) for f in out[:8]] == [None] * 8
    assert [dlcp_seq(f) for f in out[8:]] == expected
    assert all(i % 2 == 1 for i in range(5, 40) if i in expected)           # only CRITICAL after the 5th
    assert drops(harness) == (len(dropped), 0) and len(dropped) == 17
    snap = harness.device.tm.snapshot()["ports"]["2"]["queues"][DATA_QUEUE]
    assert snap["tail_drops"] == 0 and snap["dequeued"] == len(expected)


@pytest.mark.parametrize("deq_qdepth, held", [(3, 3), (0, 0), (100, 60)])
def test_egress_clamps_counts_to_the_port_occupancy(deq_qdepth: int, held: int) -> None:
    """Counts saying 60 (tail drops ingress could not see): the dequeue of one packet leaves at
    most what the TM reports for the whole port; 0 resyncs every queue of the port."""
    t = DlcpTarget("bmv2")
    t.tables.priority_rule(DATA_QUEUE, 10, is_dlcp=(1, 1))
    t.tables.queue_depth(2, DATA_QUEUE, 60)
    t.tables.queue_depth(2, HIGH_QUEUE, 7)
    [qp] = t.queued(dlcp_packet(layer_class=2, mag_class=HIGH, seq=1))
    regs = t.pipeline.registers

    def counted(queue: int) -> int:
        return regs["enq_count_reg"].read(2 * 8 + queue) - regs["deq_count_reg"].read(2 * 8 + queue)

    assert counted(DATA_QUEUE) == 61                         # ingress counted the packet in
    t.path.egress(qp, QueueMetadata(0, deq_qdepth, deq_qdepth, 0, DATA_QUEUE), 0)
    assert counted(DATA_QUEUE) == held
    assert regs["queue_depth_reg"].read(2 * 8 + DATA_QUEUE) == held
    assert counted(HIGH_QUEUE) == (0 if deq_qdepth == 0 else 7)
