"""End-to-end forwarding benchmark for ``p4sim switch`` between two veths in network namespaces.

Topology: host h1 (namespace) --veth-- [switch in the root namespace] --veth-- host h2.
A raw-socket generator in h1 sends IPv4/UDP frames to the L3 router of the PTF suite
(tests/ptf/l3/l3_router.p4, the tutorials' basic.p4 equivalent); forwarded frames are counted from
the switch-side veth's kernel counters, so the receiver never limits the figures.

For 64- and 1000-byte frames it reports: throughput at saturation, the highest offered rate with
zero loss (binary search over paced 1.5 s trials), and latency p50/p99 at light load (1000 pps).
The baseline, measured in the same run with the same generator, is a plain Python relay (one
recv + one send syscall per frame, no pipeline); figures are printed as ratios against it.

Run as root:  .venv/bin/python benchmarks/bench_switch_forwarding.py [--sizes 64,1000] [--quick]
(--quick: 64-byte frames only, 0.2 s trials, one search step: a smoke run of a few seconds.)
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from benchmode import add_quick_flag, announce  # noqa: E402

from tests.switch.netns import VethTopology, have_netns, sh  # noqa: E402

PROGRAM = os.path.join(ROOT, "tests", "ptf", "l3", "l3_router.p4")
PY = sys.executable

# Generator, run inside h1's namespace: paced or flat-out sends of one frame; prints JSON.
GEN = r"""
import json, socket, struct, sys, time
frame = bytes.fromhex(sys.argv[1]); rate = float(sys.argv[2]); duration = float(sys.argv[3]); stamp = sys.argv[4] == "1"
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0); s.bind(("eth0", 0))
s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
send = s.send; sent = 0; t0 = time.monotonic(); end = t0 + duration; now = t0
mono = time.monotonic_ns; off = len(frame) - 8; buf = bytearray(frame)
while now < end:
    if rate > 0:
        target = int((now - t0) * rate) + 1
        if sent >= target:
            time.sleep(min(0.0005, target / rate - (now - t0))); now = time.monotonic(); continue
        burst = target - sent
    else:
        burst = 256
    for _ in range(burst):
        if stamp:
            struct.pack_into("!Q", buf, off, mono()); send(buf)
        else:
            send(frame)
    sent += burst
    now = time.monotonic()
print(json.dumps({"sent": sent, "elapsed": now - t0}))
"""

# Latency receiver in h2: reads stamped frames for `duration` seconds, prints one-way delays (us).
RECV = r"""
import json, socket, struct, sys, time, select
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0); s.bind(("eth0", 0x0003))
duration = float(sys.argv[1]); end = time.monotonic() + duration; lat = []
print("ready", flush=True)
while time.monotonic() < end:
    r, _, _ = select.select([s], [], [], 0.1)
    if not r: continue
    data, addr = s.recvfrom(65536)
    t = time.monotonic_ns()
    if addr[2] == 4 or len(data) < 60 or data[12:14] != b"\x08\x00" or data[23] != 17: continue
    lat.append((t - struct.unpack_from("!Q", data, len(data) - 8)[0]) / 1000)
print(json.dumps(lat))
"""

# Baseline: Python relay between the two switch-side veths, one syscall per frame each way.
RELAY = r"""
import socket, sys, signal
a = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0); a.bind((sys.argv[1], 0x0003))
b = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0); b.bind((sys.argv[2], 0))
a.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
print("ready", flush=True)
recv = a.recvfrom; send = b.send
while True:
    data, addr = recv(65536)
    if addr[2] != 4:
        send(data)
"""


def frame(size: int) -> bytes:
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether
    from scapy.packet import Raw

    pkt = Ether(dst="02:00:00:00:00:fe", src="02:77:00:00:00:01") / IP(src="10.0.1.1", dst="10.0.2.7", ttl=64) / \
        UDP(sport=1234, dport=5678)
    return bytes(pkt / Raw(bytes(max(8, size - len(pkt)))))


def counter(iface: str, name: str) -> int:
    with open(f"/sys/class/net/{iface}/statistics/{name}") as f:
        return int(f.read())


class Forwarder:
    """Starts the switch (or the baseline relay) between the two switch-side veths."""

    def __init__(self, kind: str, topo: VethTopology) -> None:
        s1, s2 = topo.switch_ifaces
        if kind == "relay":
            cmd = [PY, "-c", RELAY, s1, s2]
        else:
            cmd = [PY, "-m", "p4sim.cli", "switch", "--no-grpc", "--ctl-addr", "127.0.0.1:0", "--name", "bench",
                   "--queue-depth", "1024", "-i", f"1@{s1}", "-i", f"2@{s2}", PROGRAM]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
        line = self.proc.stdout.readline()
        if "ready" not in line:
            self.proc.kill()
            raise SystemExit(f"{kind} did not start: {line!r} {self.proc.stderr.read()}")
        # pin: forwarder on CPU 0, generator on CPU 1 (2-core machine)
        subprocess.run(["taskset", "-a", "-p", "-c", "0", str(self.proc.pid)], capture_output=True)

    def close(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def trial(topo: VethTopology, data: bytes, rate: float, duration: float) -> dict:
    s1, s2 = topo.switch_ifaces
    before = counter(s2, "tx_packets")
    gen = subprocess.run(["ip", "netns", "exec", topo.hosts[0], "taskset", "-c", "1", PY, "-c", GEN,
                          data.hex(), str(rate), str(duration), "0"], capture_output=True, text=True, check=True)
    time.sleep(0.3)                                   # let queues drain
    out = json.loads(gen.stdout)
    fwd = counter(s2, "tx_packets") - before
    return {"sent": out["sent"], "forwarded": fwd, "offered_pps": out["sent"] / out["elapsed"],
            "forwarded_pps": fwd / out["elapsed"], "loss": 1 - fwd / max(1, out["sent"])}


def latency(topo: VethTopology, data: bytes, rate: float = 1000, duration: float = 2.0) -> tuple[float, float]:
    recv = subprocess.Popen(["ip", "netns", "exec", topo.hosts[1], PY, "-c", RECV, str(duration + 1.0)],
                            stdout=subprocess.PIPE, text=True)
    assert recv.stdout.readline().strip() == "ready"
    subprocess.run(["ip", "netns", "exec", topo.hosts[0], PY, "-c", GEN, data.hex(), str(rate), str(duration), "1"],
                   capture_output=True, check=True)
    lat = sorted(json.loads(recv.communicate(timeout=30)[0]))
    if not lat:
        return float("nan"), float("nan")
    return lat[len(lat) // 2], lat[min(len(lat) - 1, int(len(lat) * 0.99))]


def zero_loss_rate(topo: VethTopology, data: bytes, ceiling: float, duration: float, steps: int) -> float:
    lo, hi = 0.0, ceiling * 1.2
    for _ in range(steps):
        mid = (lo + hi) / 2
        if trial(topo, data, mid, duration)["loss"] <= 0:
            lo = mid
        else:
            hi = mid
    return lo


def measure(kind: str, topo: VethTopology, sizes: list[int], quick: bool) -> dict:
    fwd = Forwarder(kind, topo)
    results = {}
    try:
        for size in sizes:
            data = frame(size)
            trial(topo, data, 1000, 0.1 if quick else 0.3)             # warm-up
            sat = trial(topo, data, 0, 0.2 if quick else 2.0)
            zl = zero_loss_rate(topo, data, sat["forwarded_pps"], 0.2 if quick else 1.5, 1 if quick else 6)
            p50, p99 = latency(topo, data, duration=0.3 if quick else 2.0)
            results[size] = {"saturation_pps": sat["forwarded_pps"], "offered_pps": sat["offered_pps"],
                             "zero_loss_pps": zl, "lat_p50_us": p50, "lat_p99_us": p99}
    finally:
        fwd.close()
    return results


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default=None, help="frame sizes in bytes (default 64,1000; quick: 64)")
    add_quick_flag(ap)
    args = ap.parse_args()
    announce(args.quick)
    if not have_netns():
        print("bench_switch_forwarding: skipped (needs root and iproute2)")
        return 0
    sizes = [int(s) for s in (args.sizes or ("64" if args.quick else "64,1000")).split(",")]
    with VethTopology(2, tag=f"p4b{os.getpid() % 10000}") as topo:
        for iface in topo.switch_ifaces:
            sh("ip", "link", "set", iface, "txqueuelen", "10000")
        base = measure("relay", topo, sizes, args.quick)
        sw = measure("p4sim", topo, sizes, args.quick)
    print(f"{'frame':>6} {'metric':<16} {'baseline relay':>15} {'p4sim switch':>13} {'ratio':>7}")
    for size in sizes:
        for key in ("saturation_pps", "zero_loss_pps", "lat_p50_us", "lat_p99_us"):
            b, s = base[size][key], sw[size][key]
            print(f"{size:>6} {key:<16} {b:>15,.1f} {s:>13,.1f} {s / b if b else float('nan'):>7.2f}")
    print(json.dumps({"baseline_relay": base, "p4sim_switch": sw}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
