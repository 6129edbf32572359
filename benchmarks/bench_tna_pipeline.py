"""Benchmark: packets/s of p4src/tofino/dlcp.p4 on p4sim's TNA model (Tofino1, Tofino2) as ratios
to p4src/bmv2/dlcp.p4 on the v1model path, the same tables and packets, measured in the same run.

Why this exists: issue 15's goal is a TNA program's pipeline rate within 1.5x of the same logic's
v1model rate; the two DLCP programs are that "same logic" (tests/tna/test_differential_programs.py
holds them to the same decisions). A TNA packet crosses two parsers and two deparsers (the
bridged header, intrinsic metadata as bytes) where v1model has one of each.

Run: .venv/bin/python benchmarks/bench_tna_pipeline.py [--packets N] [--quick]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmode import add_quick_flag, announce  # noqa: E402

from tests.dataplane.packets import dlcp_packet, tcp_packet, udp_packet  # noqa: E402
from tests.dataplane.targets import DlcpTarget  # noqa: E402


def rate(target: DlcpTarget, frames: list[bytes], trials: int) -> float:
    """Best of ``trials`` packets/s through ingress, TM hand-over and egress."""
    best = 0.0
    for _ in range(trials):
        start = time.perf_counter()
        for data in frames:
            target.send(data)
        best = max(best, len(frames) / (time.perf_counter() - start))
    return best


def setup(name: str) -> DlcpTarget:
    t = DlcpTarget(name)
    t.tables.group(1, [3, 4, 5, 6], spray=True)
    t.tables.route_group(0x0A000900, 24, 1)
    for layer in range(8):
        t.tables.priority_rule(max(layer - 1, 1), 10, is_dlcp=(1, 1), layer_class=(layer, 7))
    for mag in range(16):
        t.tables.thresholds(6, mag, 16 + mag, 8 + mag)
    return t


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packets", type=int, default=None, help="packets per case (default 2000)")
    add_quick_flag(parser)
    args = parser.parse_args()
    announce(args.quick)
    n = args.packets if args.packets is not None else (100 if args.quick else 2000)
    trials = 1 if args.quick else 5
    cases = {
        "plain UDP, routed": [udp_packet(sport=i % 1000) for i in range(n)],
        "TCP, routed": [tcp_packet(seq=i) for i in range(n)],
        "DLCP DATA, priority map + thresholds": [dlcp_packet(layer_class=7, mag_class=i % 16, seq=i)
                                                 for i in range(n)],
        "DLCP DATA, sprayed over 4 members": [dlcp_packet(dst_port=9, seq=i, offset=i) for i in range(n)],
    }
    targets = {name: setup(name) for name in ("bmv2", "tna", "t2na")}
    for case, frames in cases.items():
        rates = dict.fromkeys(targets, 0.0)
        for t in targets.values():
            rate(t, frames[: max(n // 10, 1)], 1)        # warm up
        for _ in range(trials):          # interleaved, best of: load from other processes cancels
            for name, t in targets.items():
                rates[name] = max(rates[name], rate(t, frames, 1))
        base = rates["bmv2"]
        print(f"{case:40s} v1model {base:,.0f} pkt/s = 1.00; "
              + "; ".join(f"{k} {v:,.0f} pkt/s = {v / base:.2f}" for k, v in rates.items() if k != "bmv2"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
