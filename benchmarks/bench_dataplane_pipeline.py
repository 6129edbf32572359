"""Benchmark: packets/s of p4src/bmv2/dlcp.p4 on p4sim's v1model path, as ratios to a
minimal forwarding program measured in the same run.

Why this exists: the DLCP program adds parsing, validation, four routing tables, a ternary
priority map, a register read and counters to every packet; this shows what that costs on
p4sim relative to the cheapest possible v1model program (so machine speed cancels out).
The DLCP table set-up, the packet cases and the timing are shared with bench_tna_pipeline.py
(``install_policy``, ``packet_cases``, ``rate``), so both benchmarks measure the same work.

Run: .venv/bin/python benchmarks/bench_dataplane_pipeline.py [--packets N] [--quick]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmode import add_quick_flag, announce  # noqa: E402

from tests.dataplane.packets import dlcp_packet, tcp_packet, udp_packet  # noqa: E402
from tests.dataplane.tables import DlcpTables  # noqa: E402

BASELINE_P4 = """
#include <core.p4>
#include <v1model.p4>
header ethernet_h { bit<48> dst; bit<48> src; bit<16> type; }
struct headers_t { ethernet_h ethernet; }
struct meta_t { }
parser P(packet_in p, out headers_t h, inout meta_t m, inout standard_metadata_t s) {
    state start { p.extract(h.ethernet); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control I(inout headers_t h, inout meta_t m, inout standard_metadata_t s) {
    apply { s.egress_spec = 2; }
}
control E(inout headers_t h, inout meta_t m, inout standard_metadata_t s) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out p, in headers_t h) { apply { p.emit(h.ethernet); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def install_policy(tables: DlcpTables) -> None:
    """The demo's policy on top of DlcpTarget's routes (10.0.<p>.0/24 -> port p, p = 2..6): ECMP
    group 1 spraying over ports 3..6 for 10.0.9.0/24, a priority rule per layer class, and
    selective-drop thresholds for queue 6."""
    tables.group(1, [3, 4, 5, 6], spray=True)
    tables.route_group(0x0A000900, 24, 1)
    for layer in range(8):
        tables.priority_rule(max(layer - 1, 1), 10, is_dlcp=(1, 1), layer_class=(layer, 7))
    for mag in range(16):
        tables.thresholds(6, mag, 16 + mag, 8 + mag)


def packet_cases(n: int) -> dict[str, list[bytes]]:
    """``n`` frames per case: routed UDP and TCP, DLCP DATA through the priority map and the
    thresholds, DLCP DATA sprayed over the group's members."""
    return {
        "plain UDP, routed": [udp_packet(sport=i % 1000) for i in range(n)],
        "TCP, routed": [tcp_packet(seq=i) for i in range(n)],
        "DLCP DATA, priority map + thresholds": [dlcp_packet(layer_class=7, mag_class=i % 16, seq=i)
                                                 for i in range(n)],
        "DLCP DATA, sprayed over 4 members": [dlcp_packet(dst_port=9, seq=i, offset=i) for i in range(n)],
    }


def rate(send: Callable[[bytes], object], frames: list[bytes]) -> float:
    """Packets per second of ``send`` over ``frames``, in this process's CPU time (the pipeline is
    single-threaded; other processes' load on a shared machine then does not count)."""
    start = time.process_time()
    for data in frames:
        send(data)
    return len(frames) / max(time.process_time() - start, 1e-9)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packets", type=int, default=None, help="packets per case (default 3000)")
    add_quick_flag(parser)
    args = parser.parse_args()
    announce(args.quick)
    from p4sim.backend import compile_file
    from p4sim.v1model.pipeline import V1ModelPath
    from tests.dataplane.targets import DlcpTarget

    with tempfile.TemporaryDirectory() as tmp:
        base_src = Path(tmp) / "baseline.p4"
        base_src.write_text(BASELINE_P4)
        baseline = V1ModelPath(compile_file(str(base_src)).instantiate())
    target = DlcpTarget("bmv2")
    install_policy(target.tables)

    n = args.packets if args.packets is not None else (200 if args.quick else 3000)
    base_frames = [udp_packet(sport=i % 1000) for i in range(n)]

    def send_baseline(data: bytes) -> object:
        return baseline.process(data, 1)

    rate(send_baseline, base_frames[: n // 10])            # warm up
    base = rate(send_baseline, base_frames)
    print(f"baseline (1-header, no tables): {base:,.0f} pkt/s = 1.00")
    for name, frames in packet_cases(n).items():
        rate(target.send, frames[: n // 10])
        r = rate(target.send, frames)
        print(f"{name:40s} {r:,.0f} pkt/s = {r / base:.2f} x baseline")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
