"""The line a p4sim switch logs when it stops: what it received, sent and lost where, and its CPU.

Why it exists (issue 15): Mininet runs of the two DLCP programs differed in timing-driven counters;
the switches' own losses (TM tail drops per port and queue, ports' receive/send drops) and how busy
their packet threads were (CPU used, time waiting for a CPU, Python GC) are what tells a slow or
starved switch from a program's decision, and a run leaves only the switches' logs behind. A real
SwitchDevice with a 1-packet queue on a slow port: the line must carry the exact tail drops.
Budget: under 2 s.
"""

from __future__ import annotations

import logging
import re
import time

from p4sim.switch.device import SwitchDevice


def test_final_line_reports_tail_drops_per_queue_and_cpu(caplog) -> None:
    dev = SwitchDevice(name="summary", queue_depth=1)
    a = dev.add_virtual_port(1)
    dev.add_virtual_port(2)
    dev.tm.set_port_rate(2, 8_000)              # 1 kB/s: the first frame holds the link for ~0.1 s
    dev.start()
    try:
        with dev.lock:
            for _ in range(5):                  # straight into the TM: no program needed
                dev.tm.enqueue(2, 0, _Queued(100), time.monotonic_ns())
        a.send(b"\x00" * 60)                    # one frame received (no pipeline: dropped, counted)
        deadline = time.monotonic() + 2
        while dev.counters["rx"] < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        with caplog.at_level(logging.INFO, logger="p4sim.switch"):
            dev.stop()
    lines = [r.getMessage() for r in caplog.records if "final:" in r.getMessage()]
    assert len(lines) == 1, caplog.text
    line = lines[0]
    assert re.search(r"rx 1 tx \d+ ", line), line
    assert "tail drops {'2/q0': 4}" in line, line       # depth 1: 4 of the 5 did not fit
    assert dev.tm.ports[2].queues[0].tail_drops == 4
    m = re.search(r"packet thread CPU ([\d.]+) s waited for a CPU ([\d.?]+) s", line)
    assert m and float(m.group(1)) >= 0, line
    assert re.search(r"Python GC gen0 \d+ \([\d.]+ s CPU\), gen1 \d+ .* gen2 \d+ ", line), line


class _Queued:
    """What the TM queues (it reads only ``length``)."""

    def __init__(self, length: int) -> None:
        self.length = length


def test_final_line_reports_link_time_lost_while_the_loop_could_not_run(caplog) -> None:
    """A switch that cannot run (here: a control thread holds its lock, as a CPU it does not get
    would) loses the link time of its queued packets beyond the TM's catch-up bound; counted."""
    from tests.switch.programs import TM_PROBE_P4, compiled, missing_parts, probe_frame

    if missing_parts():
        import pytest
        pytest.skip(str(missing_parts()))
    dev = SwitchDevice(name="lost", priority_queues=8)
    dev.load_program(compiled(TM_PROBE_P4))          # port 1 -> port 2
    a = dev.add_virtual_port(1)
    dev.add_virtual_port(2)
    dev.tm.set_port_rate(2, 800_000)                 # 1000-byte frames hold the link 10 ms each
    dev.start()
    try:
        # Stop the loop while port 2 has packets queued: look at the queue and hold the lock in one
        # critical section, so what was seen stays queued. A burst of 10 drains in ~90 ms; a thread
        # that slept through that (a loaded machine) sees an empty TM and sends the next burst.
        deadline = time.monotonic() + 5
        sent = held = 0
        while not held and time.monotonic() < deadline:
            with dev.control():
                if dev.tm.size:
                    time.sleep(0.2)                  # the loop cannot dequeue for 0.2 s
                    held = 1
                elif dev.counters["rx"] == sent:     # every burst read and drained: send one more
                    for i in range(10):
                        a.send(probe_frame(sent + i, size=1000))
                    sent += 10
            time.sleep(0.001)
        assert held, f"no packet seen queued on port 2 in 5 s ({sent} frames sent)"
        deadline = time.monotonic() + 5
        while dev.tm.size and time.monotonic() < deadline:
            time.sleep(0.01)
        lost = dev.stats()["link_lost_ms"]
    finally:
        with caplog.at_level(logging.INFO, logger="p4sim.switch"):
            dev.stop()
    # at release the link had been free since at most one frame (10 ms) into the hold
    assert lost.get("2", 0) >= 100, lost
    assert set(lost) <= {"2"}, lost
    line = next(r.getMessage() for r in caplog.records if "final:" in r.getMessage())
    assert re.search(r"link time lost ms \{2: \d+\.\d\}", line), line
