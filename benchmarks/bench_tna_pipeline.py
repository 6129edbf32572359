"""Benchmark: packets/s of p4src/tofino/dlcp.p4 on p4sim's TNA model (Tofino1, Tofino2) as ratios
to p4src/bmv2/dlcp.p4 on the v1model path, the same tables and packets, measured in the same run.

Why this exists: issue 15's goal is a TNA program's pipeline rate within 1.5x of the same logic's
v1model rate (a ratio >= 0.67 here); the two DLCP programs are that "same logic"
(tests/tna/test_differential_programs.py holds them to the same decisions). A TNA packet crosses
two parsers and two deparsers (the bridged header, intrinsic metadata as bytes) where v1model has
one of each. Tables, packets and timing come from bench_dataplane_pipeline.py.

Rates on a shared 2-core machine move with the other processes' load (0.65-0.96 for one case
across runs); each case therefore also prints the Python bytecodes one packet executes through
ingress, TM hand-off and egress (counted with ``sys.settrace``'s opcode events, identical in every
run), and their ratio: the interpreter work of each path, whatever the load. Work done inside C
(object creation, bytes copies, struct packing) is not in that count; the rate has it.

Last, the four cases mixed through a real ``SwitchDevice`` per program (its batch loop: lock,
ingress, the TM's queues on a paced link, egress, output dispatch to counting sink ports): the
packet thread's work per packet less the socket I/O, in us/packet and as a rate ratio.

Run: .venv/bin/python benchmarks/bench_tna_pipeline.py [--packets N] [--quick]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_dataplane_pipeline import install_policy, packet_cases, rate  # noqa: E402
from benchmode import add_quick_flag, announce  # noqa: E402

from p4sim.switch.ports import dscp_class  # noqa: E402
from tests.dataplane.targets import DlcpTarget  # noqa: E402


def setup(name: str) -> DlcpTarget:
    """Target ``name`` (bmv2, tna, t2na) with DlcpTarget's routes and the shared policy."""
    target = DlcpTarget(name)
    install_policy(target.tables)
    return target


def bytecodes_per_packet(send, frames: list[bytes]) -> float:
    """Python bytecodes executed per packet by ``send`` (deterministic; C work not counted)."""
    executed = 0

    def trace(frame, event, _arg):
        nonlocal executed
        if event == "call":
            frame.f_trace_opcodes = True
        elif event == "opcode":
            executed += 1
        return trace

    sys.settrace(trace)
    try:
        for data in frames:
            send(data)
    finally:
        sys.settrace(None)
    return executed / max(len(frames), 1)


def device_for(name: str, sink_port: type) -> Any:
    """A real ``SwitchDevice`` running ``name``'s DLCP program with the shared routes and policy,
    ports 2..6 counting sinks (no syscalls in the figure)."""
    from p4sim.switch.device import SwitchDevice
    from tests.dataplane.packets import host_ip
    from tests.dataplane.tables import DlcpTables
    from tests.dataplane.targets import compiled, ip_int

    dev = SwitchDevice(name=f"bench-{name}", priority_queues=8)
    dev.load_program(compiled(name))
    tables = DlcpTables(dev.pipeline)
    for port in range(2, 7):
        tables.nexthop(port, port)
        tables.route(ip_int(host_ip(port)) & 0xFFFFFF00, 24, port)
        dev.ports[port] = sink_port(port)
    install_policy(tables)
    return dev


def device_rate(dev: Any, frames: list[bytes], batch: int = 32) -> float:
    """Packets/s (process CPU) of the switch's batch loop (lock, ingress, TM queues on a paced link,
    egress, output dispatch) over ``frames`` arriving on port 1."""
    import time
    dev.tm.set_port_rate(None, 10**12)       # paced: every packet through the queues, as in Mininet
    start = time.process_time()
    for i in range(0, len(frames), batch):
        dev._process([(1, f, 0, dscp_class(f)) for f in frames[i:i + batch]])   # (port, frame, stamp, class)
    elapsed = time.process_time() - start
    dev.tm.set_port_rate(None, 0)
    return len(frames) / max(elapsed, 1e-9)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packets", type=int, default=None, help="packets per case (default 2000)")
    parser.add_argument("--trials", type=int, default=None, help="interleaved trials per case, best kept (default 7)")
    add_quick_flag(parser)
    args = parser.parse_args()
    announce(args.quick)
    n = args.packets if args.packets is not None else (100 if args.quick else 2000)
    trials = args.trials if args.trials is not None else (1 if args.quick else 7)
    targets = {name: setup(name) for name in ("bmv2", "tna", "t2na")}
    worst = float("inf")
    for case, frames in packet_cases(n).items():
        rates = dict.fromkeys(targets, 0.0)
        for t in targets.values():
            rate(t.send, frames[: max(n // 10, 1)])        # warm up
        for _ in range(trials):          # interleaved, best of: load from other processes cancels
            for name, t in targets.items():
                rates[name] = max(rates[name], rate(t.send, frames))
        base = rates["bmv2"]
        worst = min([worst] + [v / base for k, v in rates.items() if k != "bmv2"])
        print(f"{case:40s} v1model {base:,.0f} pkt/s = 1.00; "
              + "; ".join(f"{k} {v:,.0f} pkt/s = {v / base:.2f}" for k, v in rates.items() if k != "bmv2"))
        ops = {name: bytecodes_per_packet(t.send, frames[: max(n // 20, 1)]) for name, t in targets.items()}
        print(f"{'':40s} bytecodes/packet: v1model {ops['bmv2']:,.0f}; "
              + "; ".join(f"{k} {v:,.0f} = {v / ops['bmv2']:.2f}x" for k, v in ops.items() if k != "bmv2"))
    print(f"lowest TNA/v1model ratio: {worst:.2f} (goal >= 0.67, i.e. within 1.5x)")
    # the same four cases mixed, through a real SwitchDevice (what a p4sim switch's packet thread
    # does per packet, less the socket I/O)
    from bench_switch_overhead import SinkPort
    mixed = [f for frames in packet_cases(n).values() for f in frames]
    devices = {name: device_for(name, SinkPort) for name in ("bmv2", "tna")}
    dev_rates = dict.fromkeys(devices, 0.0)
    for dev in devices.values():
        device_rate(dev, mixed[: max(len(mixed) // 10, 1)])
    for _ in range(trials):
        for name, dev in devices.items():
            dev_rates[name] = max(dev_rates[name], device_rate(dev, mixed))
    print(f"{'SwitchDevice, the four cases mixed':40s} v1model {1e6 / dev_rates['bmv2']:.1f} us/packet = 1.00; "
          f"tna {1e6 / dev_rates['tna']:.1f} us/packet: rate {dev_rates['tna'] / dev_rates['bmv2']:.2f}")
    for dev in devices.values():
        dev.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
