"""A granted sender keeps at most its window in flight, whatever came before the window (real sockets).

The receiver acknowledges every DATA packet it got from a sender (CONTROL/ACK, cumulative over all
tensors, every ACK_EVERY packets; an exact count before the DONE of a tensor of ACK_EVERY packets or
more). The sender's window (GrantPacer) counts what it sent against those ACKs. Two ways the counts
drifted apart until session 12, each letting the sender have more than its window in flight for the
rest of the run:

- a tensor of fewer than ACK_EVERY packets: its DONE wrote off every unacknowledged packet as lost,
  also the ones that had arrived and that the receiver's next ACK counted (up to ACK_EVERY - 1);
- packets sent before the sender's first GRANT (lost, here dropped by the relay): they were never
  counted as sent, while the receiver's ACKs counted them.

The sender sends through a relay (``Bottleneck`` of test_host_grants) whose port drains at a quarter of
the granted rate, so its window, not its grant, bounds it; the relay counts, as each DATA packet of the
sender arrives, the packets it passed up minus the receiver's count in the last ACK it passed back.
That is at most what the sender itself counts in flight when it sent the packet (the ACK reaches the
sender after the relay), so it may never exceed the window. UDP GSO stays on (a batch of two packets is
what the grant's bucket lets go at once): a batch never takes the window beyond itself either.
"""

from __future__ import annotations

import collections
import socket

import numpy as np
import pytest
from test_host_grants import LINK, Bottleneck, _drive
from test_host_ratecontrol import Clock

from host_agent import endpoint, receiver
from host_agent import protocol as P
from host_agent.packetizer import packetize
from host_agent.policy import TagPolicy
from host_agent.ratecontrol import GrantPacer

PORT_RATE = LINK / 4          # the port drains at a quarter of the grant: the window binds
BIG = 300                     # packets of the tensor whose in-flight count is checked (~1.2 s at PORT_RATE)
POLICY = TagPolicy(critical_share=1.0, loss_bound=0.0)   # every packet windowed and needed


class _Replies:
    """The relay's client-side socket, passing every reply on except the first ``drop`` GRANTs."""

    def __init__(self, sock: socket.socket, drop: int) -> None:
        self._sock, self._drop, self.dropped = sock, drop, 0

    def __getattr__(self, name: str):
        return getattr(self._sock, name)

    def sendto(self, data: bytes, addr) -> int:
        body = P.DLCP_HEADER_LEN + P.CONTROL_HEAD.size
        grant = len(data) >= body and data[0] & 0xF == P.MSG_CONTROL and data[P.DLCP_HEADER_LEN] == P.CTRL_GRANT
        if grant and self.dropped < self._drop:
            self.dropped += 1
            return len(data)
        return self._sock.sendto(data, addr)


class InFlight(Bottleneck):
    """The Bottleneck relay, also counting each client's DATA in flight as its packets arrive."""

    def __init__(self, *args, drop_grants: int = 0, **kw) -> None:
        super().__init__(*args, **kw)
        self.data_in: collections.Counter[tuple[str, int]] = collections.Counter()
        self.max_in_flight: collections.Counter[tuple[str, int]] = collections.Counter()
        self.replies = _Replies(self.sock, drop_grants)
        self.sock = self.replies                # before the relay's thread starts

    def _arrive(self, data: bytes, when: float, client: tuple[str, int]) -> None:
        if len(data) >= P.DLCP_HEADER_LEN and data[0] & 0xF == P.MSG_DATA:
            self.data_in[client] += 1
            flight = self.data_in[client] - self.acked.get(client, 0)
            self.max_in_flight[client] = max(self.max_in_flight[client], flight)
        super()._arrive(data, when, client)


def _tensor(tid: int, packets: int, iteration: int) -> tuple[np.ndarray, object]:
    grad = np.arange(362 * packets, dtype=np.float32) + tid
    return grad, packetize(grad, tensor_id=tid, policy=POLICY, job_id=1, worker_id=0, iteration=iteration)


def _send(tx, rx, port, tid: int, packets: int, iteration: int, at_least: float = 0.0) -> None:
    grad, pt = _tensor(tid, packets, iteration)
    out = np.zeros_like(grad)
    r = rx.expect(0, iteration, tid, out)
    h = tx.send(pt, port.address)
    _drive([tx], rx, [h], [r], at_least=at_least)
    assert np.array_equal(out, grad)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("first", [1, 3])
def test_a_small_tensor_before_leaves_the_window_exact(endpoints, monkeypatch, first):
    """A first tensor of 1 or 3 packets (below ACK_EVERY: its DONE comes without an exact ACK before
    it), then 300 packets: at most the window in flight (before: 41 after one packet, 43 after three)."""
    monkeypatch.setattr(endpoint, "WRITE_OFF_MIN", 30.0)    # no write-off for want of ACKs on a loaded machine
    assert first < receiver.ACK_EVERY
    rx = endpoints(job_id=1, link_rate=LINK)
    tx = endpoints(job_id=1, worker_id=0, link_rate=LINK)
    with InFlight(rx.address, PORT_RATE, 4096) as port:
        _send(tx, rx, port, 1, first, 0)
        _send(tx, rx, port, 2, BIG, 1)
        me, window = tx.address, tx.grants.windows[port.address]
    assert window == max(receiver.WINDOW_MIN, receiver.WINDOW_PACKETS)
    assert port.data_in[me] == first + BIG and port.tail_drops == 0
    assert port.max_in_flight[me] >= window // 2          # the window did bind
    assert port.max_in_flight[me] <= window, f"{port.max_in_flight[me]} in flight, window {window}"


@pytest.mark.timeout(120)
def test_packets_before_the_first_grant_count_in_the_window(endpoints, monkeypatch):
    """The receiver's first GRANT is lost: the first tensor (20 packets) goes out unwindowed at the
    sender's own link rate and is acknowledged. The next tensor's OPEN, after GRANT_REFRESH, brings
    the grant again (its first packets leave before it lands): from then on at most the window is in
    flight (before: the 20-odd packets ACKed but never counted as sent were sent beyond it)."""
    monkeypatch.setattr(endpoint, "WRITE_OFF_MIN", 30.0)
    rx = endpoints(job_id=1, link_rate=LINK)
    tx = endpoints(job_id=1, worker_id=0, link_rate=LINK)
    with InFlight(rx.address, PORT_RATE, 4096, drop_grants=1) as port:
        _send(tx, rx, port, 1, 20, 0, at_least=receiver.GRANT_REFRESH + 0.1)
        assert port.replies.dropped == 1 and port.address not in tx.grants.windows
        _send(tx, rx, port, 2, BIG, 1)
        me, window = tx.address, tx.grants.windows[port.address]
    assert window == max(receiver.WINDOW_MIN, receiver.WINDOW_PACKETS)
    assert port.data_in[me] == 20 + BIG and port.tail_drops == 0
    assert port.max_in_flight[me] >= window // 2
    assert port.max_in_flight[me] <= window, f"{port.max_in_flight[me]} in flight, window {window}"


DEST = ("10.0.0.1", 9000)


def test_the_count_starts_before_the_window_and_acks_never_exceed_it():
    """The GrantPacer's arithmetic: packets sent before the window is known are counted, so the ACKs
    that count them leave the in-flight count exact once the window comes; an ACK above what was sent
    counts as everything sent."""
    g = GrantPacer(1e6, clock=Clock())
    g.on_sent(DEST, 6, [7] * 6)                  # no window yet (the GRANT is on its way or lost)
    g.on_ack(DEST, 4)
    g.set_window(DEST, 8)
    assert g.in_flight(DEST) == 2
    g.on_sent(DEST, 6, [7] * 6)
    assert g.in_flight(DEST) == 8 and not g.window_open(DEST, 1.0)
    g.on_ack(DEST, 99)                           # more than we sent (a duplicate on the way)
    assert g.in_flight(DEST) == 0
    g.on_sent(DEST, 3, [7] * 3)
    assert g.in_flight(DEST) == 3


def test_a_done_writes_off_only_what_it_says_was_lost():
    """A DONE without an exact ACK before it (a tensor of fewer than ACK_EVERY packets): the packets
    that arrived stay in flight until the receiver's next ACK counts them; the ones it says were lost
    stop counting at once. Without ``lost`` every unacknowledged packet is written off."""
    g = GrantPacer(1e6, clock=Clock())
    g.set_window(DEST, 8)
    g.on_sent(DEST, 3, [7] * 3)
    g.write_off(DEST, lost=0)
    assert g.in_flight(DEST) == 3
    g.on_sent(DEST, 1, [7])
    g.on_ack(DEST, 4)                            # the receiver's next ACK counts the three too
    assert g.in_flight(DEST) == 0
    g.on_sent(DEST, 8, [7] * 8)
    assert g.in_flight(DEST) == 8 and not g.window_open(DEST, 1.0)
    g.on_sent(DEST, 2, [7] * 2)                  # (past the window: only to check the arithmetic)
    g.write_off(DEST, lost=1)                    # 10 unacknowledged, one of them lost
    assert g.in_flight(DEST) == 9
    g.on_ack(DEST, 13)
    assert g.in_flight(DEST) == 0
    g.on_sent(DEST, 5, [7] * 5)
    assert g.in_flight(DEST) == 5
    g.write_off(DEST)                            # an exact ACK came first: the rest is lost
    assert g.in_flight(DEST) == 0
