"""What ingress-wait measurement and ``--ingress-priority dscp`` cost a p4sim switch per frame.

Topology: host h1 (namespace) --veth-- [SwitchDevice in a child process] --veth-- host h2, the PTF
tests' TM probe program (port 1 -> port 2, queue = DSCP >> 5, no link rate: cut-through). h1 sends
bursts of 64 frames every 20 ms (3,200 frames/s, well below saturation, so every loop turn takes a
burst from the ring as in a Mininet run); the figure is the packet thread's CPU per received frame
(``SwitchDevice.packet_cpu_s / rx``), the switch's budget when it is CPU-starved. Frame mixes:
``one`` (every frame CS0, as in the TCP modes) and ``mixed`` (each burst 48 CS0 then 16 CS6, which
``dscp`` moves to the front). Variants run interleaved, ``--rounds`` times each; medians and ratios
against the first variant are printed.

Run as root:  .venv/bin/python benchmarks/bench_switch_ingress.py [--baseline DIR] [--quick]
``--baseline DIR``: also run the code exported in DIR (e.g. ``git archive b82ab8d``, before the
measurement existed) as the reference variant.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from benchmode import add_quick_flag, announce  # noqa: E402

from tests.switch.netns import HostSocket, VethTopology, have_netns  # noqa: E402
from tests.switch.programs import TM_PROBE_P4, probe_frame  # noqa: E402

BURST = 64
GAP_S = 0.02

# The switch, run in a child with the code under test first on sys.path. Prints "ready", then the
# JSON result once stdin closes.
CHILD = r"""
import json, sys
code, p4, order, i1, i2 = sys.argv[1:6]
sys.path.insert(0, code)
from p4sim.backend import compile_file
from p4sim.switch.device import SwitchDevice
from p4sim.switch.ports import AfPacketPort
kw = {} if order == "none" else {"ingress_priority": order}
dev = SwitchDevice(name="bench", priority_queues=8, **kw)
dev.load_program(compile_file(p4))
dev.add_port(AfPacketPort(1, i1))
dev.add_port(AfPacketPort(2, i2))
dev.start()
print("ready", flush=True)
sys.stdin.read()
dev.stop()
print(json.dumps({"rx": dev.counters["rx"], "tx": dev.counters["tx"], "cpu_s": dev.packet_cpu_s}), flush=True)
"""


def frames_for(mix: str) -> list[bytes]:
    if mix == "one":
        return [probe_frame(i, prio=0, size=1000) for i in range(BURST)]
    return [probe_frame(i, prio=0, size=1000) for i in range(48)] + \
        [probe_frame(100 + i, prio=6, size=1000) for i in range(16)]


def run_one(topo: VethTopology, code: str, order: str, mix: str, bursts: int) -> dict:
    child = subprocess.Popen([sys.executable, "-c", CHILD, code, TM_PROBE_P4, order, *topo.switch_ifaces],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=code,
                             env={**os.environ, "PYTHONPATH": code})
    try:
        line = child.stdout.readline()
        if "ready" not in line:
            raise RuntimeError(f"switch child did not start: {line!r}")
        frames = frames_for(mix)
        with HostSocket(topo.hosts[0]) as h1:
            t0 = time.monotonic()
            for k in range(bursts):
                for f in frames:
                    h1.send(f)
                delay = t0 + (k + 1) * GAP_S - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
        time.sleep(0.2)
        out, _ = child.communicate("", timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    res = json.loads(out.strip().splitlines()[-1])
    res["us_per_frame"] = res["cpu_s"] / max(1, res["rx"]) * 1e6
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", metavar="DIR", help="code export to run as the reference (ingress order none)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--bursts", type=int, default=150, help="bursts of 64 frames per run (default 150: 3 s)")
    add_quick_flag(ap)
    args = ap.parse_args()
    if args.quick:
        args.rounds, args.bursts = 1, 20
    if not have_netns():
        sys.exit("needs root and iproute2 (network namespaces)")
    announce(args.quick)
    variants = [(args.baseline, "none", "before")] if args.baseline else []
    variants += [(ROOT, "fifo", "fifo"), (ROOT, "dscp", "dscp")]
    results: dict[tuple[str, str], list[float]] = {}
    with VethTopology(2, tag=f"bsi{os.getpid() % 10000}") as topo:
        for _round in range(args.rounds):
            for mix in ("one", "mixed"):
                for code, order, label in variants:
                    r = run_one(topo, code, order, mix, args.bursts)
                    results.setdefault((label, mix), []).append(r["us_per_frame"])
                    print(f"  {label:6} {mix:5} rx {r['rx']:6} CPU {r['cpu_s']:.3f} s "
                          f"{r['us_per_frame']:.2f} us/frame", flush=True)
    ref = variants[0][2]
    print("\n| variant | frames | CPU us/frame (median) | runs | vs " + ref + " |")
    print("|---|---|---|---|---|")
    for mix in ("one", "mixed"):
        base = statistics.median(results[(ref, mix)])
        for _code, _order, label in variants:
            vals = results[(label, mix)]
            med = statistics.median(vals)
            print(f"| {label} | {mix} | {med:.2f} ({min(vals):.2f}-{max(vals):.2f}) | {len(vals)} | {med / base:.3f} |")


if __name__ == "__main__":
    main()
