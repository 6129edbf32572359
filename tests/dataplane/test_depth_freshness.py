"""Regression: a queue that was deep must not black-hole its traffic once the port drained.

Why this exists: a Mininet run (star topology, p4sim switch, real host agents) counted
17,725 selective drops for queue 2 / magnitude 0 on an idle port.  Ingress used to read
``queue_depth_reg[port*8+queue]``, refreshed only when a packet of that (port, queue) was
dequeued: once it was recorded above the threshold, every later droppable packet of that
queue was dropped at ingress, none was dequeued again, and the stale value never decayed.
A max age on timed records fixed that, until the records themselves were replaced: dlcp.p4
now counts each queue's packets in and out (docs/dataplane.md "Per-queue depth"), so a
drained queue reads 0 because its counts are equal, and counts that disagree with the TM
(packets it tail-dropped after ingress counted them) are resynced when the port empties.
These tests keep both properties.

Both tests run on a real p4sim switch (SwitchDevice, traffic manager, rate-limited virtual
port), as tests/dataplane/test_congestion.py does.
"""

from __future__ import annotations

import time

import pytest

from tests.dataplane.packets import dlcp_packet, udp_packet
from tests.dataplane.test_congestion import Harness, dlcp_seq

QUEUE, LOW = 2, 0                 # the queue / magnitude class of the Mininet black hole
DROP_DEPTH = 4
CRITICAL = 0x80


@pytest.fixture
def harness(dlcp_program):
    h = Harness(dlcp_program)
    with h.device.lock:
        t = h.route_to_port2()
        t.priority_rule(QUEUE, 10, is_dlcp=(1, 1))          # every DLCP packet -> QUEUE
        t.thresholds(QUEUE, LOW, DROP_DEPTH, 100_000)
        # depth_settings keeps its compiled-in default (Harness sets a slow-link one: undo)
        h.device.pipeline.tables["DlcpIngress.depth_settings"].reset_default()
    yield h
    h.close()


def drops(h: Harness) -> tuple[int, int]:
    c = h.device.pipeline.counters
    return (c["DlcpIngress.selective_drops"].cells[QUEUE * 16 + LOW][0],
            c["DlcpEgress.egress_safety_drops"].cells[QUEUE * 16 + LOW][0])


def test_queue_that_was_deep_is_delivered_after_the_port_drains(harness) -> None:
    """The queue held 3 packets behind a blocker and 10 fillers; once all left, droppable DATA
    of that queue is delivered (the old per-queue record stayed deep here)."""
    fillers = [udp_packet(payload=bytes(20)) for _ in range(10)]       # queue 0, behind QUEUE
    deep = [dlcp_packet(mag_class=LOW, flags=CRITICAL, seq=i) for i in range(3)]
    harness.send(1, [udp_packet(payload=bytes(958))] + deep + fillers)
    out = harness.collect(2, 1 + len(deep) + len(fillers), timeout=10.0)
    assert len(out) == 1 + len(deep) + len(fillers)
    assert [dlcp_seq(f) for f in out[1:4]] == [0, 1, 2]
    regs = harness.device.pipeline.registers
    cell = 2 * 8 + QUEUE
    assert regs["enq_count_reg"].read(cell) == regs["deq_count_reg"].read(cell) == 3
    time.sleep(0.05)

    delivered = []
    for seq in range(100, 105):                   # droppable DATA of the queue that was deep
        harness.send(1, [dlcp_packet(mag_class=LOW, seq=seq)])
        got = harness.collect(2, 1, timeout=2.0)
        delivered += [dlcp_seq(f) for f in got]
    assert delivered == list(range(100, 105)), f"black hole: delivered {delivered}"
    assert drops(harness) == (0, 0)


def test_counts_the_tm_does_not_hold_are_resynced_when_the_port_empties(harness) -> None:
    """Counts saying 60 packets (as after tail drops the counts did not see) drop at ingress;
    any packet leaving port 2 finds the port empty and resyncs every queue of it to 0."""
    with harness.device.lock:
        harness.tables.queue_depth(2, QUEUE, 60)
        harness.send(1, [dlcp_packet(mag_class=LOW, seq=1)])          # switch runs it after unlock
    assert harness.collect(2, 1, timeout=0.3) == []                # dropped at ingress
    assert drops(harness) == (1, 0)
    regs = harness.device.pipeline.registers
    assert regs["enq_count_reg"].read(2 * 8 + QUEUE) - regs["deq_count_reg"].read(2 * 8 + QUEUE) == 60

    time.sleep(0.2)                               # no age rule: the counts stay what they are
    harness.send(1, [dlcp_packet(mag_class=LOW, seq=2)])
    assert harness.collect(2, 1, timeout=0.3) == []
    assert drops(harness) == (2, 0)

    harness.send(1, [udp_packet(payload=bytes(20))])                # queue 0: leaves port 2 empty
    assert len(harness.collect(2, 1, timeout=2.0)) == 1
    assert regs["enq_count_reg"].read(2 * 8 + QUEUE) == regs["deq_count_reg"].read(2 * 8 + QUEUE)
    harness.send(1, [dlcp_packet(mag_class=LOW, seq=3)])
    assert [dlcp_seq(f) for f in harness.collect(2, 1, timeout=2.0)] == [3]
    assert drops(harness) == (2, 0)
