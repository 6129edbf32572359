"""A receiver grants its whole link among its active senders (real endpoint, raw UDP sockets on loopback).

Six senders open a tensor each towards one receiver. The GRANTs they get (CONTROL/GRANT: bytes/s,
senders, window) divide the receiver's link among them: together exactly the link, so in an incast
the queue in front of the receiver reaches the switch's selective-drop depths and the packets the
receiver can do without are dropped there rather than sent through the bottleneck (with headroom the
queue stayed below them and every packet crossed the bottleneck). The windows: each sender the receiver's
share of its 40-packet window, at least WINDOW_MIN = 8 (two ACKs' worth); six together stay within the
64-packet queue of the studies' switches.
"""

import socket

import numpy as np
import pytest

from host_agent import protocol as P
from host_agent import receiver
from host_agent.endpoint import Endpoint, EndpointConfig
from host_agent.outgoing import OutgoingTensor
from host_agent.packetizer import packetize
from host_agent.policy import TagPolicy

LINK = 2.5e6          # bytes/s of the receiver's link (20 Mbit/s, as the Mininet studies)
SENDERS = 6
QUEUE = 64            # packets: the switch queue in front of the receiver in the Mininet studies


def _last_grants(socks: list[socket.socket], rx: Endpoint) -> dict[int, tuple[int, int, int]]:
    """The last GRANT (rate, senders, window) each sender got while the receiver turned its loop."""
    for _ in range(10):
        rx.poll(0.005)
    last = {}
    for i, sock in enumerate(socks):
        sock.setblocking(False)
        while True:
            try:
                data = sock.recv(2048)
            except BlockingIOError:
                break
            body = data[P.DLCP_HEADER_LEN:]
            if data[0] & 0xF == P.MSG_CONTROL and body[0] == P.CTRL_GRANT:
                last[i] = P.GRANT_BODY.unpack_from(body, P.CONTROL_HEAD.size)
    return last


def test_six_openers_share_the_whole_link_and_the_queue_window():
    rx = Endpoint(EndpointConfig(job_id=4, bind=("127.0.0.1", 0), link_rate=LINK))
    socks = []
    try:
        for w in range(SENDERS):
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
            pt = packetize(np.arange(3000, dtype=np.float32), tensor_id=1, policy=TagPolicy(), job_id=4,
                           worker_id=w)
            s.sendto(OutgoingTensor(pt, rx.address, 0.0, 0.02).open_message(), rx.address)
        grants = _last_grants(socks, rx)
        assert sorted(grants) == list(range(SENDERS))
        assert all(n == SENDERS for _r, n, _w in grants.values())
        # the whole link, in equal shares (integer bytes/s: at most one byte lost per sender)
        assert sum(r for r, _n, _w in grants.values()) == pytest.approx(LINK, abs=SENDERS)
        assert len({r for r, _n, _w in grants.values()}) == 1
        # the windows: the receiver's share of its window (40 // 6 = 6), at least WINDOW_MIN (8), together
        # within the queue in front of it
        assert all(w == max(receiver.WINDOW_MIN, receiver.WINDOW_PACKETS // SENDERS) for _r, _n, w in grants.values())
        assert sum(w for _r, _n, w in grants.values()) <= QUEUE
    finally:
        for s in socks:
            s.close()
        rx.sock.close()
