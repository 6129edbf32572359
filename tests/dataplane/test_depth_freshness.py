"""Regression: a queue recorded deep must not black-hole its traffic once the port drained.

Why this exists: a Mininet run (star topology, p4sim switch, real host agents) counted
17,725 selective drops for queue 2 / magnitude 0 on an idle port.  Ingress used to read
``queue_depth_reg[port*8+queue]``, refreshed only when a packet of that (port, queue) was
dequeued: once it was recorded above the threshold, every later droppable packet of that
queue was dropped at ingress, none was dequeued again, and the stale value never decayed.
dlcp.p4 stamps every record with the time of the update, and ingress reads a record older
than DlcpIngress.depth_settings' max age as 0 (docs/dataplane.md "Queue-depth freshness").
The record is again per (port, queue) -- now the estimate from the time the queue's packets
waited (docs/dataplane.md "Per-queue depth") -- so the max age is what prevents the black hole.

Both tests run on a real p4sim switch (SwitchDevice, traffic manager, rate-limited virtual
port), as tests/dataplane/test_congestion.py does.
"""

from __future__ import annotations

import time

import pytest

from tests.dataplane.packets import dlcp_packet, host_ip, udp_packet
from tests.dataplane.test_congestion import Harness, dlcp_seq, ip_int

QUEUE, LOW = 2, 0                 # the queue / magnitude class of the Mininet black hole
DROP_DEPTH = 4
CRITICAL = 0x80


@pytest.fixture
def harness(dlcp_program):
    h = Harness(dlcp_program)
    with h.device.lock:
        t = h.tables
        t.nexthop(2, 2)
        t.route(ip_int(host_ip(2)) & 0xFFFFFF00, 24, 2)
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


def test_queue_recorded_deep_is_delivered_after_the_port_drains(harness) -> None:
    """Fails without the max age: the queue's last dequeue recorded it deep, and nothing of
    that queue was dequeued after it."""
    fillers = [udp_packet(payload=bytes(20)) for _ in range(10)]       # queue 0, behind QUEUE
    deep = [dlcp_packet(mag_class=LOW, flags=CRITICAL, seq=i) for i in range(3)]
    # the blocker holds the 80 kbit/s link for 100 ms; the three critical QUEUE packets are
    # served first (strict priority) while the ten fillers still wait: recorded deep
    harness.send(1, [udp_packet(payload=bytes(958))] + deep + fillers)
    out = harness.collect(2, 1 + len(deep) + len(fillers), timeout=10.0)
    assert len(out) == 1 + len(deep) + len(fillers)
    assert [dlcp_seq(f) for f in out[1:4]] == [0, 1, 2]
    regs = harness.device.pipeline.registers
    assert regs["queue_depth_reg"].read(2 * 8 + QUEUE) > DROP_DEPTH, "precondition: queue recorded deep"
    time.sleep(0.05)                              # port idle for 50 ms >> the 2 ms default max age

    delivered = []
    for seq in range(100, 105):                   # droppable DATA of the queue recorded deep
        harness.send(1, [dlcp_packet(mag_class=LOW, seq=seq)])
        got = harness.collect(2, 1, timeout=2.0)
        delivered += [dlcp_seq(f) for f in got]
    assert delivered == list(range(100, 105)), f"black hole: delivered {delivered}"
    assert drops(harness) == (0, 0)


def test_recorded_depth_older_than_max_age_reads_as_zero(harness) -> None:
    """A fresh deep record drops at ingress; the same record past the table's max age does not."""
    max_age_us = 500_000
    with harness.device.lock:
        harness.tables.depth_max_age(max_age_us)
        harness.tables.queue_depth(2, QUEUE, 60, harness.device.now_us())
        harness.send(1, [dlcp_packet(mag_class=LOW, seq=1)])          # switch runs it after unlock
    assert harness.collect(2, 1, timeout=0.3) == []                # dropped at ingress
    assert drops(harness) == (1, 0)

    time.sleep(2 * max_age_us / 1e6)              # no dequeue on port 2 since: the record ages out
    assert harness.device.pipeline.registers["queue_depth_reg"].read(2 * 8 + QUEUE) == 60
    harness.send(1, [dlcp_packet(mag_class=LOW, seq=2)])
    got = harness.collect(2, 1, timeout=2.0)
    assert [dlcp_seq(f) for f in got] == [2]
    assert drops(harness) == (1, 0)
