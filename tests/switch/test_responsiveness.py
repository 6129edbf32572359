"""Control paths stay responsive while the packet thread is busy (issue 11).

A program whose parser loops without advancing makes every packet cost p4sim's whole per-packet
parser budget before it is dropped (counted ``parser_loop``). Under a flood of such packets,
``p4sim ctl`` requests must be answered within a bounded time (the packet thread lets go of the
device between packets, not only between batches of 64) and the switch must stop promptly.
"""

from __future__ import annotations

import os
import threading
import time

from p4sim.switch.ctl import CtlClient
from p4sim.switch.ctl_server import CtlServer
from p4sim.switch.device import SwitchDevice
from tests.switch.programs import compiled, needs_program

SPIN_P4 = os.path.join(os.path.dirname(os.path.abspath(__file__)), "p4", "parser_spin.p4")


@needs_program(SPIN_P4)
def test_ctl_answers_while_the_parser_spins():
    dev = SwitchDevice(name="s-spin")
    dev.load_program(compiled(SPIN_P4))
    sender = dev.add_virtual_port(1)
    dev.add_virtual_port(2)
    dev.start()
    ctl = CtlServer(dev, "127.0.0.1:0")
    ctl.start()
    flooding = threading.Event()
    flooding.set()

    def flood() -> None:
        while flooding.is_set():
            try:
                sender.send(b"\x00" * 60)
            except OSError:
                time.sleep(0.001)
    thread = threading.Thread(target=flood, daemon=True)
    thread.start()
    try:
        while dev.counters["rx"] < 200:          # the packet thread is saturated
            time.sleep(0.01)
        latencies = []
        with CtlClient(ctl.address) as client:
            for _ in range(20):
                start = time.monotonic()
                client.show_queues()
                client.stats()
                latencies.append(time.monotonic() - start)
                time.sleep(0.02)
        assert dev.path.drops["parser_loop"] > 0
        # The defect was a wedge: ctl and Read timed out and SIGTERM was ignored. What is asserted is
        # that requests are answered within a bounded time. The latency itself is not asserted: in
        # this one-process test it is set by GIL hand-offs between the flooding, packet and ctl
        # threads (median 1 ms measured when the yield between packets went in, 50-150 ms at the
        # lead's last run on an idle machine, 105 ms in a loaded CI run).
        median = sorted(latencies)[len(latencies) // 2]
        assert median < 0.5, f"ctl median {median:.3f} s while packets were processed: {latencies}"
        assert max(latencies) < 2.0
    finally:
        flooding.clear()
        thread.join()
        ctl.stop()
        start = time.monotonic()
        dev.stop()
        stopped = time.monotonic() - start
    assert stopped < 3.0, f"stop took {stopped:.1f} s"
