"""What the switch adds per packet on top of the P4 pipeline, measured in-process (no sockets).

Baseline: the bare packet path, ``V1ModelPath.ingress`` then ``egress`` for every packet (what
the STF runner does). Measured: the same frames through ``SwitchDevice``'s batch processing —
lock, traffic manager (cut-through and queued), queueing metadata, output dispatch — with a sink
port. Both use the L3 router of the PTF suite and 64-byte frames.

Run:  .venv/bin/python benchmarks/bench_switch_overhead.py [--quick]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from benchmode import add_quick_flag, announce  # noqa: E402

from p4sim.switch.ports import Port, dscp_class  # noqa: E402

PROGRAM = os.path.join(ROOT, "tests", "ptf", "l3", "l3_router.p4")


class SinkPort(Port):
    """A port that only counts (so no syscall enters the figures)."""

    def __init__(self, port_no: int) -> None:
        self.port_no, self.name, self.sent = port_no, f"sink{port_no}", 0

    def fileno(self) -> int:
        return -1

    def send(self, data: bytes) -> None:
        self.sent += 1

    def close(self) -> None:
        pass


def best_of(fn, repeat: int = 5) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_quick_flag(ap)
    args = ap.parse_args()
    announce(args.quick)
    from benchmarks.bench_switch_forwarding import frame
    from p4sim.switch.device import SwitchDevice
    from p4sim.v1model.pipeline import QueueMetadata
    from tests.switch.programs import compiled

    program = compiled(PROGRAM)
    data = frame(64)
    batches, batch = (5 if args.quick else 100), 64
    repeat = 1 if args.quick else 5
    n = batches * batch

    dev = SwitchDevice(name="bench", priority_queues=8)
    dev.load_program(program)
    sink = dev.ports[2] = SinkPort(2)
    path = dev.path
    qm = QueueMetadata(0, 0, 0, 0, 0)

    def bare() -> None:
        for _ in range(n):
            for qp in path.ingress(data, 1, 0):
                path.egress(qp, qm, 0)

    rx = [(1, data, 0, dscp_class(data))] * batch     # (port, frame, kernel stamp 0 = unknown, DSCP class)

    def switch() -> None:
        for _ in range(batches):
            dev._process(rx)

    def switch_queued() -> None:      # a paced link forces every packet through the queues
        dev.tm.set_port_rate(2, 10**12)
        for _ in range(batches):
            dev._process(rx)
        dev.tm.set_port_rate(2, 0)

    t_bare = best_of(bare, repeat) / n * 1e6
    t_sw = best_of(switch, repeat) / n * 1e6
    t_q = best_of(switch_queued, repeat) / n * 1e6
    assert sink.sent >= n * repeat, sink.sent
    print(f"{'case':<38} {'us/packet':>10} {'ratio':>7}")
    print(f"{'bare V1ModelPath ingress+egress':<38} {t_bare:>10.2f} {1:>7.2f}")
    print(f"{'SwitchDevice, cut-through':<38} {t_sw:>10.2f} {t_sw / t_bare:>7.2f}")
    print(f"{'SwitchDevice, through the queues':<38} {t_q:>10.2f} {t_q / t_bare:>7.2f}")
    dev.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
