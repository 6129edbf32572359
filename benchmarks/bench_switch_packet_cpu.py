"""CPU per packet of a p4sim switch running p4src/bmv2/dlcp.p4, this code against an exported one.

Why this exists: in the ``tcp-bulk`` scenario the four Python switches use about 55-65 % of the
machine's CPU and their packet threads wait for a CPU 40-54 % of a run (docs/results/cpu-tcp-bulk/).
This measures what one packet costs the packet thread on the path a Mininet run takes, without
sockets: ``SwitchDevice._process`` on batches of 4 frames (a tcp-bulk run's leaf1 averaged 3.3
frames per loop turn) with kernel receive stamps (so the ring and ingress wait histograms are
updated, as for AF_PACKET frames), the DLCP program with the demo's routes, spraying group,
priority map and selective-drop thresholds, and every egress port rate-limited (so every packet
goes through the traffic manager's queues, dequeue and queueing metadata, as at 20 Mbit/s; the
rate here is high enough that nothing waits). Frames: DLCP DATA to five ports over the eight
layer classes, DLCP DATA sprayed over an ECMP group, and TCP (the bulk flows).

Each variant runs in its own child process with its code first on ``sys.path``; variants run
interleaved in alternating order, ``--rounds`` times, and the medians of process CPU time per packet are printed with
their ratio to the reference.

Run:  .venv/bin/python benchmarks/bench_switch_packet_cpu.py [--baseline DIR] [--rounds N] [--quick]
``--baseline DIR``: the reference code, e.g. ``git archive <commit> | tar -x -C DIR``; without it
the current code is measured against itself (the ratio then shows the noise).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from benchmode import add_quick_flag, announce  # noqa: E402

# One variant's measurement, run in a child with the code under test first on sys.path.
CHILD = r"""
import json, sys, time
code, n = sys.argv[1], int(sys.argv[2])
sys.path[:0] = [code, code + "/benchmarks"]
from p4sim.switch.device import SwitchDevice
from p4sim.switch.ports import Port, dscp_class
from tests.dataplane.packets import dlcp_packet, tcp_packet, host_ip
from tests.dataplane.tables import DlcpTables
from tests.dataplane.targets import compiled, ip_int
from benchmarks.bench_dataplane_pipeline import install_policy


class Sink(Port):
    def __init__(self, no):
        self.port_no, self.name, self.sent = no, f"sink{no}", 0
    def fileno(self):
        return -1
    def send(self, data):
        self.sent += 1
    def close(self):
        pass


dev = SwitchDevice(name="bench", priority_queues=8)
dev.load_program(compiled("bmv2"))
t = DlcpTables(dev.pipeline)
for port in range(2, 7):
    t.nexthop(port, port)
    t.route(ip_int(host_ip(port)) & 0xFFFFFF00, 24, port)
install_policy(t)      # the demo's spraying group, priority map and thresholds
sinks = {}
for port in range(1, 7):
    sinks[port] = dev.add_port(Sink(port))
    dev.tm.set_port_rate(port, 10**12)
cases = {
    "DLCP DATA, 8 layer classes, 5 ports": [dlcp_packet(dst_port=2 + i % 5, layer_class=i % 8, mag_class=i % 16, seq=i)
                                           for i in range(400)],
    "DLCP DATA, sprayed over 4 members": [dlcp_packet(dst_port=9, seq=i, offset=i) for i in range(400)],
    "TCP bulk": [tcp_packet(seq=i) for i in range(400)],
}
out = {}
for name, frames in cases.items():
    batches = []
    for i in range(0, len(frames), 4):
        batches.append([(1, f, 0, dscp_class(f)) for f in frames[i:i + 4]])
    def run(rounds):
        for _ in range(rounds):
            for b in batches:
                stamp = time.time_ns() - 20_000
                dev._process([(p, f, stamp, c) for p, f, _s, c in b])
    run(2)   # warm up
    rounds = max(1, n // len(frames))
    c0 = time.process_time()
    run(rounds)
    out[name] = (time.process_time() - c0) / (rounds * len(frames)) * 1e6
sent = sum(s.sent for s in sinks.values())
assert sent > 0, "nothing left the switch"
out["_tx"] = sent
print(json.dumps(out), flush=True)
"""


def run_child(code: str, n: int) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": code}
    res = subprocess.run([sys.executable, "-c", CHILD, code, str(n)], capture_output=True, text=True, env=env,
                         cwd=code, check=False)
    if res.returncode != 0:
        raise SystemExit(f"variant {code} failed:\n{res.stderr[-3000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", help="directory with the reference code (an export of an older commit)")
    ap.add_argument("--rounds", type=int, default=None, help="interleaved rounds per variant (default 5)")
    ap.add_argument("--packets", type=int, default=None, help="packets per case and round (default 8000)")
    add_quick_flag(ap)
    args = ap.parse_args()
    announce(args.quick)
    rounds = args.rounds or (1 if args.quick else 5)
    n = args.packets or (400 if args.quick else 8000)
    variants = {"reference": os.path.abspath(args.baseline) if args.baseline else ROOT, "this code": ROOT}
    results: dict[str, list[dict[str, float]]] = {v: [] for v in variants}
    for i in range(rounds):
        order = list(variants.items()) if i % 2 == 0 else list(variants.items())[::-1]   # rotated
        for name, code in order:
            results[name].append(run_child(code, n))
    cases = [k for k in results["reference"][0] if not k.startswith("_")]
    print(f"reference: {variants['reference']}; {rounds} rounds x {n} packets per case, batches of 4")
    print("us of process CPU per packet: median (lowest) of the rounds; ratio = this code / reference")
    print(f"{'case':<40} {'reference':>16} {'this code':>16} {'ratio':>6} {'ratio of lowest':>16}")
    for case in cases:
        ref = statistics.median(r[case] for r in results["reference"])
        new = statistics.median(r[case] for r in results["this code"])
        ref_lo = min(r[case] for r in results["reference"])
        new_lo = min(r[case] for r in results["this code"])
        print(f"{case:<40} {ref:>8.2f} ({ref_lo:>5.2f}) {new:>8.2f} ({new_lo:>5.2f}) {new / ref:>6.2f} "
              f"{new_lo / ref_lo:>16.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
