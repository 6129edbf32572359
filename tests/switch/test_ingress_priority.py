"""Ingress order and ingress waits of a p4sim switch on real veths (issue 10, H10c session 9).

Why: a CPU-starved Python switch leaves frames in its ports' kernel rings; with ``fifo`` ingress a
high-priority frame waits there behind low-priority ones before the P4 ingress even picks its
queue, which a line-rate hardware parser never does. ``--ingress-priority dscp`` runs ingress on a
turn's frames highest DSCP class selector first, stable within a class. Checked with real frames
(scapy) through real AF_PACKET ports: a backlog of CS0 then CS6 frames in one ring leaves CS6
first with ``dscp`` and in ring order with ``fifo``; one class keeps its order exactly; the ring
waits (kernel stamp -> read) are reported per port and class, at least as long as we held the
backlog. The switch is held by not starting its packet thread until the backlog is in the ring.
"""

from __future__ import annotations

import logging
import os
import time

import pytest

from p4sim.switch.device import SwitchDevice
from p4sim.switch.ports import AfPacketPort, WaitHistogram, dscp_class
from tests.switch.netns import HostSocket, VethTopology, have_netns
from tests.switch.programs import TM_PROBE_P4, compiled, needs_compiler, probe_frame, read_probe

pytestmark = [pytest.mark.skipif(not have_netns(), reason="needs root and iproute2 for network namespaces"),
              needs_compiler]

HELD_S = 0.05      # the backlog sits in the ring at least this long before the loop starts


def run_backlog(order: str, frames: list[bytes]) -> tuple[list[int], SwitchDevice]:
    """Send ``frames`` into port 1's ring with the loop stopped, start it, return the probe
    sequence numbers in the order they left port 2, and the (stopped) device."""
    with VethTopology(2, tag=f"p4i{os.getpid() % 10000}") as topo:
        dev = SwitchDevice(name=f"s-{order}", priority_queues=8, ingress_priority=order)
        dev.load_program(compiled(TM_PROBE_P4))      # port 1 -> port 2, queue = DSCP >> 5
        for no, iface in enumerate(topo.switch_ifaces, start=1):
            dev.add_port(AfPacketPort(no, iface))
        try:
            with HostSocket(topo.hosts[0]) as h1, HostSocket(topo.hosts[1]) as h2:
                for f in frames:
                    h1.send(f)
                time.sleep(HELD_S)
                dev.start()
                out: list[int] = []
                end = time.monotonic() + 5
                while len(out) < len(frames) and (left := end - time.monotonic()) > 0:
                    f = h2.recv(left)
                    if f is not None and (probe := read_probe(f)) is not None:
                        out.append(probe["seq"])
        finally:
            dev.stop()
    return out, dev


def test_dscp_order_sends_the_cs6_backlog_before_the_cs0_backlog_ahead_of_it() -> None:
    frames = [probe_frame(i, prio=0) for i in range(20)] + [probe_frame(100 + i, prio=6) for i in range(20)]
    got, dev = run_backlog("dscp", frames)
    assert got == list(range(100, 120)) + list(range(20)), got
    waits = dev.stats()["rx_waits"]
    assert waits["1/cs0"]["ring"]["n"] == 20 and waits["1/cs6"]["ring"]["n"] == 20, waits
    for key in ("1/cs0", "1/cs6"):     # they sat in the ring while the loop was stopped
        assert waits[key]["ring"]["max_ms"] >= HELD_S * 1000 * 0.99, waits
        assert waits[key]["ingress"]["n"] == 20
        assert waits[key]["ingress"]["max_ms"] >= waits[key]["ring"]["max_ms"] * 0.99


def test_fifo_order_keeps_the_ring_order_across_classes() -> None:
    frames = [probe_frame(i, prio=0) for i in range(20)] + [probe_frame(100 + i, prio=6) for i in range(20)]
    got, _dev = run_backlog("fifo", frames)
    assert got == list(range(20)) + list(range(100, 120)), got


def test_dscp_order_changes_nothing_for_one_class() -> None:
    """All TCP modes' traffic is one class (CS0): its order, every flow's, must be the ring's."""
    frames = [probe_frame(i, prio=0, size=100 + (i % 7) * 50) for i in range(60)]
    got, dev = run_backlog("dscp", frames)
    assert got == list(range(60)), got
    assert set(dev.stats()["rx_waits"]) == {"1/cs0"}


def test_final_line_reports_ingress_order_and_waits(caplog) -> None:
    frames = [probe_frame(i, prio=3) for i in range(5)]
    with caplog.at_level(logging.INFO, logger="p4sim.switch"):
        run_backlog("dscp", frames)
    line = next(r.getMessage() for r in caplog.records if "final:" in r.getMessage())
    assert "ingress order dscp" in line, line
    assert "'1/cs3': 'n 5 ring " in line, line
    assert "tm waits ms" in line, line


def test_dscp_class_and_histogram() -> None:
    assert dscp_class(probe_frame(0, prio=6)) == 6
    assert dscp_class(probe_frame(0, prio=0)) == 0
    assert dscp_class(b"\x00" * 12 + b"\x08\x06" + b"\x00" * 28) == 0       # ARP
    h = WaitHistogram()
    for us in range(1, 1001):                 # 1 us .. 1 ms
        h.add(us * 1000)
    s = h.summary()
    assert s["n"] == 1000 and s["max_ms"] == 1.0
    assert 0.49 <= s["mean_ms"] <= 0.51
    assert 0.99 * 0.75 <= s["p99_ms"] <= 1.0   # a bucket is a quarter octave wide; never above the max
    for idx in range(8, 100):                 # buckets tile the axis: each starts where the last ended
        e, m = idx // 4 + 2, idx % 4 + 4
        assert m << (e - 3) == WaitHistogram.upper_us(idx - 1)
