"""The Tofino program on a real p4sim switch: a queue-0 backlog must not shed or mark queue 6.

Why this exists (issue 15): Tofino's traffic manager reports in ``enq_qdepth``/``deq_qdepth`` the
depth of the packet's OWN queue; BMv2 (and p4sim's v1model path) report the whole port's.  The
TNA model used to hand the Tofino program the port's depth, so in ``dlcp-exp --arch tna`` a
backlog of background traffic in queue 0 made the Tofino program's egress rule (Tofino1's only
check, Tofino2's safety net) drop and ECN-mark DLCP packets of strict-priority queue 6 that had
waited behind nothing: the Mininet comparison saw selective drops and ECN marks on the Tofino
program only (docs/p4sim.md, "dlcp-exp --arch tna against the BMv2 program").  The first test
fails on that model (every low-magnitude queue-6 packet dropped in egress); the second shows a
real backlog in queue 6 itself still sheds the low magnitudes, in egress, never a critical one,
and the emulated link is busy only for the bytes that really left: not for the bridged header the
packets carry through the TM (9 bytes each in the DLCP program), nor for packets egress dropped
(both used to be charged: about 0.6-9 % of a 20 Mbit/s link, depending on packet size).

Both run the Tofino program (tna and t2na) on a real p4sim switch (SwitchDevice, traffic manager,
80 kbit/s virtual port) through the harness of tests/dataplane/test_congestion.py, the same as
tests/dataplane/test_queue_isolation.py does for the BMv2 program.  Budget: about 6 s.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from scapy.layers.inet import IP
from scapy.layers.l2 import Ether

from tests.dataplane.packets import dlcp_packet, udp_packet
from tests.dataplane.test_congestion import Harness, dlcp_seq
from tests.dataplane.test_queue_isolation import next_dlcp

ROOT = Path(__file__).resolve().parents[2]
TOFINO = str(ROOT / "p4src" / "tofino" / "dlcp.p4")
INCLUDE = [str(ROOT / "p4src" / "include")]
QUEUE, LOW, HIGH = 6, 0, 15
DROP_DEPTH, ECN_DEPTH = 4, 2
ECN_CAPABLE, CRITICAL = 0x08, 0x80
FILLERS = 60                      # ordinary 100-byte packets: 10 ms each at 80 kbit/s


@pytest.fixture(scope="module", params=["tna", "t2na"])
def program(request):
    from p4sim.tna.program import compile_tna

    return compile_tna(TOFINO, INCLUDE, request.param)


@pytest.fixture
def harness(program):
    """Port 2 at 80 kbit/s; every DLCP packet in queue 6 (thresholds for LOW), the rest in queue 0."""
    h = Harness(program)
    with h.device.lock:
        h.route_to_port2().priority_rule(QUEUE, 10, is_dlcp=(1, 1))
        h.tables.thresholds(QUEUE, LOW, DROP_DEPTH, ECN_DEPTH)
    yield h
    h.close()


def shed(h: Harness) -> int:
    """Queue 6 / LOW packets dropped by the egress rule (Tofino1 counts them as selective drops,
    Tofino2 as egress safety drops)."""
    c = h.device.pipeline.counters
    i = QUEUE * 16 + LOW
    return c["DlcpIngress.selective_drops"].cells[i][0] + c["DlcpEgress.egress_safety_drops"].cells[i][0]


def test_queue0_backlog_neither_drops_nor_marks_queue6(harness) -> None:
    """Fails on the port-depth model: the port holds ~50 queue-0 packets (> 4), so every
    droppable queue-6 packet was dropped in egress."""
    harness.send(1, [udp_packet(payload=bytes(58), sport=5000 + i) for i in range(FILLERS)])
    time.sleep(0.03)                                  # a few fillers dequeued: the port is deep
    delivered, ecn = [], []
    for seq in range(5):                              # one at a time: each waits <= one filler
        harness.send(1, [dlcp_packet(layer_class=7, mag_class=LOW, flags=ECN_CAPABLE, ecn=2, seq=seq)])
        got = next_dlcp(harness, timeout=0.1)
        if got is not None:
            delivered.append(dlcp_seq(got))
            ecn.append(Ether(got)[IP].tos & 3)
    port = harness.device.tm.snapshot()["ports"]["2"]
    assert port["queues"][0]["depth"] > DROP_DEPTH, f"precondition: queue 0 is backlogged ({port})"
    assert delivered == list(range(5)), f"queue 6 shed behind queue 0: delivered {delivered}"
    assert ecn == [2] * 5, "queue 6 ECN-marked behind queue 0"
    assert shed(harness) == 0


def test_backlog_in_queue6_still_drops_low_magnitudes(harness) -> None:
    """12 high-magnitude packets ahead in queue 6 (~100 ms at 80 kbit/s): 4 low ones behind them
    join a queue deeper than 4 and are dropped in egress; a critical one behind them is not."""
    highs = [dlcp_packet(layer_class=7, mag_class=HIGH, seq=i) for i in range(12)]
    lows = [dlcp_packet(layer_class=7, mag_class=LOW, seq=100 + i) for i in range(4)]
    critical = dlcp_packet(layer_class=7, mag_class=LOW, flags=CRITICAL, seq=200)
    harness.send(1, highs + lows + [critical])
    frames = harness.collect(2, 13, timeout=3.0) + harness.collect(2, 1, timeout=0.3)
    got = [dlcp_seq(f) for f in frames]
    assert got == list(range(12)) + [200], f"delivered {got}"
    assert shed(harness) == 4
    # the link was busy for the bytes that left, not for the bridged header the TM carried nor
    # for the 4 packets egress dropped
    assert harness.device.tm.snapshot()["ports"]["2"]["sent_bytes"] == sum(len(f) for f in frames)
