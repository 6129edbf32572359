"""The same traffic through the BMv2 and the Tofino DLCP program on a real p4sim switch: the same
counters.

Why it exists (issue 15): in Mininet (``dlcp-exp --arch tna``) the two programs' counters were
compared run against run, where background traffic and timing differ from run to run. Here one
schedule of packets (three streams interleaved by their rates, sent as one burst so that no
sender timing enters) -- background UDP in queue 0 beyond the link's capacity, DLCP layer-7
packets in strict-priority queue 6, low-magnitude ECN-capable DLCP DATA in queue 1 -- crosses a
real p4sim switch (SwitchDevice, traffic manager, 80 kbit/s port) running each program in turn,
so a difference in the counters is a difference of the programs (or of the TNA model), not of the
traffic. On the model before 4d7a4ae (the port's depth for Tofino's enq_qdepth) the Tofino
program delivered 1 of queue 1's 30 packets (29 selective drops, no ECN mark) where the BMv2
program delivered 7 (23 drops, 3 marks); now both give exactly the same counts.
Budget: about 8 s (the burst drains through the 80 kbit/s port in about 2 s per program).
"""

from __future__ import annotations

import time

import pytest

from tests.dataplane.packets import dlcp_packet, udp_packet
from tests.dataplane.targets import compiled
from tests.dataplane.test_congestion import Harness, dlcp_seq

SECONDS = 1.2
STREAMS = [   # (name, packets per second, frame factory by sequence number)
    ("background", 140, lambda i: udp_packet(payload=bytes(58), sport=4000 + i % 7)),
    ("layer7", 20, lambda i: dlcp_packet(layer_class=7, mag_class=15, seq=10_000 + i)),
    ("data", 25, lambda i: dlcp_packet(layer_class=2, mag_class=0, flags=0x08, ecn=2, seq=20_000 + i)),
]
ECN_CAPABLE_QUEUE, LOW, DROP_DEPTH, ECN_DEPTH = 1, 0, 6, 3


def schedule() -> list[tuple[float, bytes]]:
    """Every packet with its send time, merged and sorted."""
    out = []
    for _, rate, make in STREAMS:
        out += [(i / rate, make(i)) for i in range(int(SECONDS * rate))]
    return sorted(out, key=lambda x: x[0])


def run(program) -> dict[str, int]:
    h = Harness(program)
    try:
        with h.device.lock:
            t = h.route_to_port2()
            t.priority_rule(6, 20, is_dlcp=(1, 1), layer_class=(7, 7))
            t.priority_rule(ECN_CAPABLE_QUEUE, 10, is_dlcp=(1, 1))
            t.thresholds(ECN_CAPABLE_QUEUE, LOW, DROP_DEPTH, ECN_DEPTH)
        for _, frame in schedule():     # as one burst, in schedule order: no pacing jitter
            h.peers[1].send(frame)
        got = {"background": 0, "layer7": 0, "data": 0}
        end = time.monotonic() + 3.0
        while time.monotonic() < end:
            f = h.peers[2].recv(0.3)
            if f is None:
                if not h.device.tm.size:
                    break
                continue
            seq = dlcp_seq(f)
            got["background" if seq is None else "layer7" if seq < 20_000 else "data"] += 1
        queues = h.device.tm.snapshot()["ports"]["2"]["queues"]
        c = h.device.pipeline.counters
        out = {f"delivered_{k}": v for k, v in got.items()}
        for q in (0, 1, 6):
            out[f"tail_drops_q{q}"] = queues[q]["tail_drops"]
            out[f"port_queue_tx_q{q}"] = c["DlcpEgress.port_queue_tx"].cells[2 * 8 + q][0]
        i = ECN_CAPABLE_QUEUE * 16 + LOW
        out["selective_drops"] = sum(cell[0] for name in ("DlcpIngress.selective_drops", "DlcpEgress.egress_safety_drops")
                                     if name in c for cell in c[name].cells)
        out["ecn_marks_q1"] = c["DlcpIngress.ecn_marks"].cells[i][0]
        return out
    finally:
        h.close()


@pytest.fixture(scope="module")
def counters() -> dict[str, dict[str, int]]:
    return {name: run(compiled(name)) for name in ("bmv2", "tna")}


def test_both_programs_count_the_same_traffic_alike(counters) -> None:
    bmv2, tna = counters["bmv2"], counters["tna"]
    assert bmv2["tail_drops_q0"] > 20, f"precondition: queue 0 overflows ({bmv2})"
    for key in bmv2:
        a, b = bmv2[key], tna[key]
        assert abs(a - b) <= max(2, 0.1 * max(a, b)), f"{key}: BMv2 {a}, Tofino {b} ({bmv2} / {tna})"


def test_strict_priority_queues_lose_only_what_the_policy_drops(counters) -> None:
    """Queue 6 (no thresholds) and queue 1 are served before queue 0's backlog: queue 6 delivers
    everything; queue 1 loses only its selective drops (the burst deepens it past 6), never a
    tail drop."""
    sent = {name: int(SECONDS * rate) for name, rate, _ in STREAMS}
    for name, c in counters.items():
        assert c["delivered_layer7"] == sent["layer7"], (name, c)
        assert c["delivered_data"] + c["selective_drops"] == sent["data"], (name, c)
        assert c["tail_drops_q1"] == c["tail_drops_q6"] == 0, (name, c)
