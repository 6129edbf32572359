"""Packets droppable by design hold no window slot (ACK format 2): protocol, GrantPacer, real sockets.

A packet the switch drops by design (not CRITICAL, magnitude class below the protected class) is
never acknowledged. Counted in flight it held a slot of the receiver's window until a write-off
(``max(0.1 s, 2 RTO)``), so a layer whose droppable packets outnumber the window stalled. The
receiver's ACK now counts those packets separately, and the sender windows only protected ones.
The socket tests send a layer through ``LossyRelay`` dropping every droppable packet's first
transmission (what a switch above its drop depth does) plus a few protected packets.
"""

from __future__ import annotations

import numpy as np
import pytest
from host_helpers import run_both
from test_host_ratecontrol import Clock

from host_agent import protocol as P
from host_agent.packetizer import packetize
from host_agent.policy import TagPolicy
from host_agent.ratecontrol import CRITICAL_CLASS, GrantPacer
from host_agent.relay import LossyRelay

LINK = 20e6 / 8               # bytes/s: the Mininet studies' 20 Mbit/s
ELEMENTS = 320_000            # 884 packets: ~80 droppable, twice the receiver's 40-packet window


# -- wire format ------------------------------------------------------------------------------
def test_ack_format_2_round_trips_and_stays_readable_as_format_1():
    body = P.pack_ack(1000, 93, 12)
    assert len(body) == P.ACK_BODY_SPLIT.size
    assert P.unpack_ack(body) == (1000, 93, 12)
    assert P.ACK_BODY.unpack_from(body)[0] == 1000          # an older sender reads the count as before
    assert P.unpack_ack(P.pack_ack(1000)) == (1000, None, 0)
    assert P.unpack_ack(P.pack_ack(2**32 + 5)) == (5, None, 0)   # the count wraps, as format 1's
    other = bytearray(body)
    other[8] = 7                                             # a format this code does not know: no split
    assert P.unpack_ack(bytes(other)) == (1000, None, 0)


@pytest.mark.parametrize("body, what", [
    (b"\x00\x00\x01", "needs 4 bytes"),
    (P.ACK_BODY_SPLIT.pack(10, 11, P.ACK_FORMAT_SPLIT, 12), "11 droppable of 10"),
    (P.ACK_BODY_SPLIT.pack(10, 1, P.ACK_FORMAT_SPLIT, 0), "protected class 0"),
    (P.ACK_BODY_SPLIT.pack(10, 1, P.ACK_FORMAT_SPLIT, 16), "protected class 16"),
])
def test_inconsistent_ack_bodies_are_refused(body, what):
    with pytest.raises(ValueError, match=what):
        P.unpack_ack(body)


def test_droppable_by_design_follows_the_header_bits():
    assert P.droppable_by_design(0, (3 << 5) | 11, 12)
    assert not P.droppable_by_design(0, (3 << 5) | 12, 12)
    assert not P.droppable_by_design(P.FLAG_CRITICAL, 0, 12)
    assert not P.droppable_by_design(P.FLAG_CRITICAL | P.FLAG_RETX, 2, 12)   # a promoted retransmission
    assert P.droppable_by_design(P.FLAG_RETX | P.FLAG_ECN_CAPABLE, 2, 12)   # not promoted: still droppable


# -- GrantPacer -------------------------------------------------------------------------------
def test_window_counts_only_protected_packets_once_acks_are_split():
    clk = Clock()
    g = GrantPacer(clock=clk)
    d = ("10.0.0.2", 9)
    g.set_window(d, 4)
    g.on_sent(d, 4, [3, 12, 5, CRITICAL_CLASS])            # before a split ACK: all four count
    assert g.in_flight(d) == 4 and not g.window_open(d, 0.1)
    g.on_ack(d, 1, 0, 12)                                  # the CRITICAL one arrived; droppable = below 12
    assert g.in_flight(d) == 1                             # the class-12 packet; 3 and 5 are not windowed
    assert g.unwindowed_sent() == 2
    g.on_sent(d, 6, [0, 1, 2, 13, 14, 15])
    assert g.in_flight(d) == 4 and not g.window_open(d, 0.1)
    g.on_ack(d, 5, 3, 12)                                  # 3 droppable + 2 of 5 protected in
    assert g.in_flight(d) == 3 and g.window_open(d, 0.1)
    g.write_off(d)                                         # a round's answer: nothing in flight
    assert g.in_flight(d) == 0
    g.on_sent(d, 2, [4, 4])
    assert g.in_flight(d) == 0 and g.window_open(d, 0.1) and g.window_stalls == 0


def test_format_1_acks_window_every_packet_and_a_basis_change_never_goes_negative():
    clk = Clock()
    g = GrantPacer(clock=clk)
    d = ("10.0.0.3", 9)
    g.set_window(d, 3)
    g.on_sent(d, 3, [1, 2, 3])
    g.on_ack(d, 1)                                         # format 1: no split, all three windowed
    assert g.in_flight(d) == 2 and g.unwindowed_sent() == 0
    g.on_sent(d, 1, [4])
    assert not g.window_open(d, 0.1)
    clk.t += 0.2
    assert g.window_open(d, 0.1) and g.window_stalls == 1  # written off: 3 on the all-packet basis
    g.on_ack(d, 2, 2, 12)                                  # the receiver splits from now on
    assert g.in_flight(d) == 0 and g.unwindowed_sent() == 4
    g.on_sent(d, 2, [12, 13])
    assert g.in_flight(d) == 2                             # the old write-off does not swallow new packets


def test_only_protected_progress_restarts_the_write_off_timer():
    clk = Clock()
    g = GrantPacer(clock=clk)
    d = ("10.0.0.4", 9)
    g.set_window(d, 2)
    g.on_sent(d, 2, [12, 12])                              # window full
    clk.t += 0.08
    g.on_ack(d, 1, 0, 12)                                  # one protected packet in: progress
    g.on_sent(d, 1, [13])                                  # full again
    clk.t += 0.05
    assert not g.window_open(d, 0.1)                       # 0.05 s since progress: not written off yet
    g.on_sent(d, 2, [3, 4])                                # droppable: sent outside the window
    g.on_ack(d, 3, 2, 12)                                  # only they arrived: no progress
    clk.t += 0.06
    assert g.window_open(d, 0.1) and g.window_stalls == 1


# -- real sockets -----------------------------------------------------------------------------
def _layer(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(ELEMENTS) * rng.lognormal(0, 1, ELEMENTS)).astype(np.float32)


def _send_through_switch(endpoints, ack_split: bool, protected_drops: int = 0, seed: int = 0):
    """One layer through a relay dropping every droppable packet's first transmission and the first
    transmission of ``protected_drops`` protected (CRITICAL or class >= 12) packets."""
    policy = TagPolicy()
    rx = endpoints(job_id=4, worker_id=1, link_rate=LINK, ack_split=ack_split)
    tx = endpoints(job_id=4, worker_id=0, link_rate=LINK)
    grad = _layer(seed)
    pt = packetize(grad, tensor_id=2, policy=policy, job_id=4, worker_id=0, iteration=0)
    classes = pt.records["b1"] & P.MAG_CLASS_MAX
    droppable = ~pt.critical & (classes < policy.protected_mag_class)
    victims = set(np.flatnonzero(~droppable)[5:5 + 40 * protected_drops:40].tolist())
    n_nc = int((~pt.critical).sum())
    assert droppable.sum() == policy.droppable_count(n_nc) > 2 * 40   # more than the window holds, twice

    def rule(h: P.DlcpHeader) -> bool:
        if h.msg_type != P.MSG_DATA or h.flags & P.FLAG_RETX:
            return False
        return P.droppable_by_design(h.flags, h.mag_class, policy.protected_mag_class) \
            or h.offset // pt.elems_per_packet in victims

    out = np.full_like(grad, np.nan)
    with LossyRelay(rx.address, rule=rule) as relay:
        r = rx.expect(0, 0, 2, out)
        h = tx.send(pt, relay.address)
        run_both(tx, [h], rx, [r], timeout=30)
        dropped = sum(relay.dropped.values())
    return tx, h, r, grad, out, droppable, victims, dropped


@pytest.mark.timeout(90)
def test_dropped_droppable_packets_never_stall_the_window(endpoints):
    tx, h, r, grad, out, droppable, _v, dropped = _send_through_switch(endpoints, ack_split=True)
    assert dropped == droppable.sum()
    assert tx.grants.window_stalls == 0, tx.counters()["send_blocked_s"]
    assert h.stats.retransmitted == 0                      # the loss budget absorbed every drop
    assert r.stats.zero_filled_packets == droppable.sum()  # at the bound, not beyond it
    assert tx.grants.unwindowed_sent() == droppable.sum()
    epp = P.max_elements_per_packet(1500, P.DTYPE_FLOAT32)
    kept = np.repeat(~droppable, epp)[:grad.size]
    assert np.array_equal(out[kept], grad[kept]) and not out[~kept].any()


@pytest.mark.timeout(90)
def test_format_1_receiver_still_works_and_shows_the_stall(endpoints):
    """Against a receiver that does not split its ACKs every packet is windowed (what the code did
    before): the transfer completes, but the unacknowledged drops fill the window and stall it."""
    tx, h, r, _g, _o, droppable, _v, _d = _send_through_switch(endpoints, ack_split=False)
    assert r.stats.zero_filled_packets == droppable.sum() and h.stats.retransmitted == 0
    assert tx.grants.unwindowed_sent() == 0
    assert tx.grants.window_stalls >= 1


@pytest.mark.timeout(90)
def test_protected_packets_are_still_retransmitted(endpoints):
    tx, h, r, grad, out, droppable, victims, dropped = _send_through_switch(endpoints, ack_split=True,
                                                                            protected_drops=5)
    assert len(victims) == 5 and dropped == droppable.sum() + 5
    assert h.stats.retransmitted >= 5
    epp = P.max_elements_per_packet(1500, P.DTYPE_FLOAT32)
    for i in victims:                                      # every protected packet arrived in the end
        assert np.array_equal(out[i * epp:(i + 1) * epp], grad[i * epp:(i + 1) * epp])
    assert r.stats.zero_filled_packets == droppable.sum()
    assert tx.grants.window_stalls == 0
