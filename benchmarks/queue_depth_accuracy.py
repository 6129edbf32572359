"""How often does the selective-drop rule drop a packet whose queue was NOT deep? Timed estimate
(the program before issue 10 H3) against counted depth (today's), on the same traffic.

Why this exists: issue 10 hypothesis 3 found in Mininet that 99 % of selective drops happened
while the dropped packet's queue really held <= 16 packets, because the old program turned the
time a packet waited (which includes higher queues' service and stalls of the Python switch)
into a depth.  This replays an incast on one 20 Mbit/s egress port through the real dlcp.p4 of
both versions (p4sim pipeline + p4sim's traffic manager, virtual time, so the stalls are
exactly the same for both) and records, for every selective drop, how many packets its queue
really held when the packet arrived.

    .venv/bin/python benchmarks/queue_depth_accuracy.py [--seeds 2] [--old-rev 0a3ba34]

The old program is read from git (``--old-rev``, the last commit with the timed estimate).
Traffic: 6 senders x 60 DATA packets of ~1 kB per iteration (layer classes 0..7 -> queues 1..6,
magnitude classes 0..15 at random, the default policy's thresholds at 20 Mbit/s), background
UDP in queue 0 at 4 Mbit/s, 10 iterations 0.3 s apart; the switch stalls at random (Poisson,
20 stalls/s, exponential length, mean 3 ms: the order of the p99 waits measured on the loaded
2-core machine), during which nothing is ingressed or dequeued.
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from p4sim.backend import compile_file  # noqa: E402
from p4sim.switch.tm import TrafficManager  # noqa: E402
from p4sim.v1model.pipeline import QueueMetadata, Transmit, V1ModelPath  # noqa: E402
from tests.dataplane.packets import dlcp_packet, host_ip, udp_packet  # noqa: E402
from tests.dataplane.tables import DlcpTables  # noqa: E402

LINK_BPS = 20_000_000
PORT = 2
TICK_NS = 100_000
LAYER_QUEUE = {7: 6, 6: 5, 5: 4, 4: 3, 3: 2, 2: 1, 1: 1, 0: 1}
BANDS = [((0, 1, 2, 3), 16, 8), ((4, 5, 6, 7), 32, 16), ((8, 9, 10, 11), 48, 24), ((12, 13, 14, 15), 524287, 32)]
DROP_AT = {m: drop for mags, drop, _ in BANDS for m in mags}


def old_program(rev: str, into: Path):
    """dlcp.p4 as of ``rev`` (p4src extracted from git), compiled by p4sim."""
    tar = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "p4src"], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=tar, check=True)
    return compile_file(str(into / "p4src/bmv2/dlcp.p4"), [str(into / "p4src/include")])


def configure(pipeline) -> None:
    t = DlcpTables(pipeline)
    t.nexthop(PORT, PORT)
    a, b, c, _ = (int(x) for x in host_ip(PORT).split("."))
    t.route((a << 24) | (b << 16) | (c << 8), 24, PORT)
    for layer, queue in LAYER_QUEUE.items():
        t.priority_rule(queue, 10 + layer, is_dlcp=(1, 1), layer_class=(layer, 7))
    for queue in range(1, 7):
        for mags, drop, ecn in BANDS:
            for m in mags:
                t.thresholds(queue, m, drop, ecn)
    if "DlcpEgress.port_drain" in pipeline.tables:
        t.port_drain(PORT, LINK_BPS // 12_000)


def traffic(seed: int) -> list[tuple[int, bytes, int]]:
    """(arrival ns, frame, mag class or -1 for background), sorted by time."""
    rng = random.Random(seed)
    out = []
    for it in range(10):
        start = it * 300_000_000
        for sender in range(6):
            layer = rng.randrange(8)
            t = start + rng.randrange(0, 2_000_000)
            for i in range(60):
                mag = rng.randrange(16)
                frame = dlcp_packet(src_port=10 + sender, dst_port=PORT, layer_class=layer, mag_class=mag,
                                    seq=it * 10_000 + sender * 100 + i, count=240, payload=bytes(960))
                out.append((t, frame, mag))
                t += len(frame) * 8 * 1_000_000_000 // LINK_BPS      # each sender at its own 20 Mbit/s
        for k in range(int(0.3 * 4_000_000 / (1000 * 8))):           # 4 Mbit/s of 1000-byte UDP
            out.append((start + k * 2_000_000, udp_packet(dst_port=PORT, payload=bytes(958)), -1))
    out.sort(key=lambda x: x[0])
    return out


def stalls(seed: int, end_ns: int) -> list[tuple[int, int]]:
    rng = random.Random(seed * 7919 + 1)
    out, t = [], 0
    while t < end_ns:
        t += int(rng.expovariate(20) * 1e9)
        length = int(rng.expovariate(1 / 3e6))
        out.append((t, t + length))
        t += length
    return out


class Tracked:
    """A queued packet with the true occupancy of its queue when it arrived (TM needs ``length``)."""

    __slots__ = ("qp", "occupancy", "mag", "length")

    def __init__(self, qp, occupancy: int, mag: int) -> None:
        self.qp, self.occupancy, self.mag, self.length = qp, occupancy, mag, qp.length


def run(program, seed: int) -> dict:
    pipeline = program.instantiate()
    configure(pipeline)
    path = V1ModelPath(pipeline)
    tm = TrafficManager(8, 64)
    tm.set_port_rate(PORT, LINK_BPS)
    arrivals = traffic(seed)
    stall_list = stalls(seed, arrivals[-1][0] + 50_000_000)
    drops: list[tuple[int, int]] = []            # (true occupancy at arrival, threshold)
    tail = delivered = 0
    i = si = 0
    now = 0
    end = arrivals[-1][0] + 200_000_000
    while now < end:
        now += TICK_NS
        while si < len(stall_list) and stall_list[si][1] <= now:
            si += 1
        if si < len(stall_list) and stall_list[si][0] <= now:
            continue                             # stalled: nothing ingressed, nothing dequeued
        while i < len(arrivals) and arrivals[i][0] <= now:
            _, frame, mag = arrivals[i]
            i += 1
            queued = path.ingress(frame, 1, now // 1000)
            if not queued:
                if mag >= 0:
                    q = LAYER_QUEUE[layer_of(frame)]
                    drops.append((len(tm.ports[PORT].queues[q].items) if PORT in tm.ports else 0, DROP_AT[mag]))
                continue
            for qp in queued:
                occupancy = len(tm._port(PORT).queues[qp.priority].items)
                if not tm.enqueue(qp.egress_port, qp.priority, Tracked(qp, occupancy, mag), now):
                    tail += 1
        for d in tm.dequeue_ready(now):
            qmeta = QueueMetadata(d.enq_timestamp, d.enq_qdepth, d.deq_qdepth, d.deq_timedelta, d.qid)
            outs = path.egress(d.packet.qp, qmeta, now // 1000)
            if any(isinstance(o, Transmit) for o in outs):
                delivered += 1
            else:
                drops.append((d.packet.occupancy, DROP_AT[d.packet.mag]))
    false = sum(1 for occ, thr in drops if occ <= thr)
    return {"drops": len(drops), "false": false, "median_occ": statistics.median([o for o, _ in drops]) if drops else 0,
            "tail": tail, "delivered": delivered}


def layer_of(frame: bytes) -> int:
    """layer_class of a DLCP frame built by dlcp_packet (Ethernet 14 + IPv4 20 + UDP 8, tags byte 1)."""
    return frame[14 + 20 + 8 + 1] >> 5


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--old-rev", default="0a3ba34")
    a = ap.parse_args()
    new = compile_file(str(ROOT / "p4src/bmv2/dlcp.p4"), [str(ROOT / "p4src/include")])
    with tempfile.TemporaryDirectory() as tmp:
        old = old_program(a.old_rev, Path(tmp))
    for seed in range(1, a.seeds + 1):
        for name, prog in (("timed estimate (old)", old), ("counted depth (new)", new)):
            r = run(prog, seed)
            share = 100.0 * r["false"] / r["drops"] if r["drops"] else 0.0
            print(f"seed {seed} {name:22s} selective drops {r['drops']:5d}, with the queue at or below the "
                  f"threshold {r['false']:5d} ({share:5.1f} %), median true depth at a drop {r['median_occ']:4.1f}, "
                  f"tail drops {r['tail']:4d}, delivered {r['delivered']}")


if __name__ == "__main__":
    main()
