"""What is really on the wire: capture a transfer on lo (AF_PACKET) and dissect it with scapy.

Checks the tags the switch acts on, taken from the captured frames rather than from our own
structures: ECT(0) + ECN_CAPABLE, classes, CRITICAL share, LAST, UDP length rule, control messages.
"""

from __future__ import annotations

import os
import socket

import numpy as np
import pytest
from host_helpers import run_both
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from host_agent import protocol as P
from host_agent.packetizer import packetize
from host_agent.policy import TagPolicy

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="AF_PACKET capture needs root")
ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4


def test_captured_packets_carry_the_tags(endpoints):
    cap = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    cap.bind(("lo", 0))
    cap.setsockopt(socket.SOL_SOCKET, 33, 64 << 20)   # SO_RCVBUFFORCE: frames wait in the kernel
    frames: list[bytes] = []
    tx = endpoints(job_id=6, worker_id=4, offload="off")
    rx = endpoints(job_id=6, offload="off")
    g = np.random.default_rng(2).standard_normal(362 * 40 + 17).astype(np.float32)
    pol = TagPolicy(critical_share=0.1)
    pt = packetize(g, tensor_id=8, policy=pol, position=1, num_layers=16, job_id=6, worker_id=4, iteration=3)
    out = np.zeros_like(g)
    try:
        r = rx.expect(4, 3, 8, out)
        s = tx.send(pt, rx.address)
        run_both(tx, [s], rx, [r])
        cap.setblocking(False)
        while True:                      # everything captured is queued; read it all now
            try:
                data, addr = cap.recvfrom(70000)
            except BlockingIOError:
                break
            if addr[2] != PACKET_OUTGOING:
                frames.append(data)
    finally:
        cap.close()
    assert np.array_equal(out, g)
    port_rx, port_tx = rx.address[1], tx.address[1]
    data, control_types = [], []
    for f in frames:
        pkt = Ether(f)
        if UDP not in pkt or {pkt[UDP].sport, pkt[UDP].dport} != {port_rx, port_tx}:
            continue
        d = P.DLCP(bytes(pkt[UDP].payload))
        if d.msg_type == P.MSG_DATA and pkt[UDP].dport == port_rx:
            data.append((pkt, d))
        else:
            control_types.append(d.msg_type)
    assert len(data) == pt.n_packets == 41
    for pkt, d in data:
        assert pkt[IP].tos & 3 == P.ECN_ECT0 and d.flags.ECN_CAPABLE
        assert (d.version, d.job_id, d.worker_id, d.iteration, d.tensor_id) == (1, 6, 4, 3, 8)
        assert d.layer_class == 7                       # position 1 of 16: front group
        assert pkt[UDP].len == P.data_udp_length(d.count, d.dtype)
        i = d.offset // 362
        droppable = pol.droppable_mask(pt.magnitude, pt.critical)
        assert d.mag_class == int(pol.magnitude_classes(pt.magnitude, droppable)[i])
        assert (d.mag_class < pol.protected_mag_class) == bool(droppable[i])
        assert bool(d.flags.CRITICAL) == bool(pt.critical[i])
        assert bool(d.flags.LAST) == (i == 40)
    assert sum(bool(d.flags.CRITICAL) for _, d in data) == 5   # ceil(10 % of 41)
    assert data[-1][1].count == 17
    assert P.MSG_CONTROL in control_types and P.MSG_PROBE in control_types and P.MSG_DONE in control_types
