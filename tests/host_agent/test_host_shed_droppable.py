"""Shedding droppable packets while a receiver holds senders (GRANT_FLAG_SHED), with real sockets.

A receiver that grants and has more than ``shed_senders`` senders flags its GRANTs (format 2); a sender
whose last GRANT from that receiver carried the flag leaves out of its first transmission the packets the
receiver can do without by design (not CRITICAL, magnitude class below the protected class, not LAST, at
most the loss budget), and the receiver zero-fills them within the loss bound. The DATA that reached the
receiver is read off a real relay (``LossyRelay``'s raw rule, every header decoded with the agent's own
parser); the GRANTs off raw UDP sockets that open tensors like a sender. ns-3's ``shedDroppable``.
"""

from __future__ import annotations

import math
import select
import socket
import time

import numpy as np
import pytest
from host_helpers import agent_switch, run_both

from host_agent import protocol as P
from host_agent.endpoint import EndpointConfig
from host_agent.errors import UserError
from host_agent.outgoing import OutgoingTensor
from host_agent.packetizer import packetize
from host_agent.policy import TagPolicy
from host_agent.receiver import SHED_SENDERS
from host_agent.relay import FORWARD, LossyRelay

LINK = 50e6                  # bytes/s the receiver grants (fast: the tests are not about pacing)
PACKETS = 300                # per tensor
POLICY = TagPolicy()         # the default: p = 0.1, 5 % critical, protected class 12


def tensor(seed: int, tid: int, iteration: int = 0, worker: int = 1, **kw):
    g = np.random.default_rng(seed).standard_normal(362 * PACKETS).astype(np.float32)
    return g, packetize(g, tensor_id=tid, policy=POLICY, job_id=1, worker_id=worker, iteration=iteration, **kw)


def expected_shed(pt) -> np.ndarray:
    """Indices the sender may leave out: droppable by design, not LAST, at most the loss budget."""
    rec = pt.records
    mask = np.asarray(P.droppable_by_design(rec["flags"], rec["b1"], POLICY.protected_mag_class), bool)
    mask &= (rec["flags"] & P.FLAG_LAST) == 0
    n_nc = pt.n_packets - int(pt.critical.sum())
    assert mask.sum() <= n_nc - math.ceil((1 - pt.loss_bound) * n_nc - 1e-9)   # the policy's own budget
    return np.flatnonzero(mask)


class DataLog:
    """Raw rule of a relay: decode every upstream DATA header, forward everything."""

    def __init__(self) -> None:
        self.first: dict[int, list[int]] = {}    # tensor id -> packet indices of first transmissions
        self.retx = 0

    def __call__(self, data: bytes) -> int:
        h = P.DlcpHeader.unpack(data)
        if h.msg_type == P.MSG_DATA:
            if h.flags & P.FLAG_RETX:
                self.retx += 1
            else:
                self.first.setdefault(h.tensor_id, []).append(h.offset // 362)
        return FORWARD


def run_through_relay(endpoints, *, rx_kw: dict, tx_kw: dict, tensors: list[tuple[np.ndarray, object]]):
    rx = endpoints(job_id=1, link_rate=LINK, **rx_kw)
    tx = endpoints(job_id=1, worker_id=1, **tx_kw)
    log = DataLog()
    outs, sends, recvs = [], [], []
    with LossyRelay(rx.address, raw_rule=log) as relay:
        for g, pt in tensors:
            out = np.full_like(g, np.nan)
            outs.append(out)
            recvs.append(rx.expect(1, pt.iteration, pt.tensor_id, out))
            sends.append(tx.send(pt, relay.address))
        run_both(tx, sends, rx, recvs, timeout=25.0)
    return tx, rx, log, outs, sends, recvs


def test_held_receiver_sheds_exactly_the_droppable_packets(endpoints):
    """shed_senders=0: the receiver holds its one sender, so every GRANT is flagged and the gradient's
    first transmission leaves out exactly its droppable packets; the parameter tensor (not CRITICAL in a
    PS's pulls, its droppable packets kept stale by a receiver) loses nothing; the transfer completes with them zero-filled, no retransmission."""
    g, pt = tensor(1, tid=3)
    p, pp = tensor(2, tid=4, pull=True, kind=P.KIND_PARAMETER)
    shed = expected_shed(pt)
    assert shed.size >= 10 and expected_shed(pp).size >= 10   # pulls are droppable by design here, yet never shed
    tx, rx, log, outs, sends, recvs = run_through_relay(
        endpoints, rx_kw={"shed_senders": 0}, tx_kw={}, tensors=[(g, pt), (p, pp)])
    arrived = np.zeros(pt.n_packets, bool)
    arrived[log.first[3]] = True
    assert np.array_equal(np.flatnonzero(~arrived), shed)          # left out: exactly those
    rec = pt.records[~arrived]
    assert not (rec["flags"] & (P.FLAG_CRITICAL | P.FLAG_LAST)).any()
    assert ((rec["b1"] & P.MAG_CLASS_MAX) < POLICY.protected_mag_class).all()
    assert sorted(log.first[4]) == list(range(pp.n_packets))       # parameters: every packet
    s, r = sends[0].stats, recvs[0].stats
    assert s.shed == shed.size and tx.shed_packets == shed.size and tx.counters()["shed_packets"] == shed.size
    assert s.retransmitted == 0 and log.retx == 0
    n_nc = pt.n_packets - int(pt.critical.sum())
    assert r.zero_filled_packets == shed.size <= math.floor(pt.loss_bound * n_nc)   # within the bound
    want = g.reshape(-1, 362).copy()
    want[shed] = 0.0
    assert np.array_equal(outs[0], want.reshape(-1))
    assert np.array_equal(outs[1], p)
    assert rx.rx.shed_grants_sent >= 1 and rx.counters()["shed_grants_sent"] >= 1


def test_no_shedding_while_the_receiver_holds_no_sender(endpoints):
    """Default shed_senders (5) and one sender: no GRANT flagged, every packet sent, none zero-filled."""
    g, pt = tensor(3, tid=5)
    tx, rx, log, outs, sends, _ = run_through_relay(endpoints, rx_kw={}, tx_kw={}, tensors=[(g, pt)])
    assert sorted(log.first[5]) == list(range(pt.n_packets))
    assert sends[0].stats.shed == 0 and sends[0].stats.zero_filled_packets == 0
    assert rx.rx.grants_sent >= 1 and rx.rx.shed_grants_sent == 0
    assert np.array_equal(outs[0], g)


@pytest.mark.parametrize("side", ["sender", "both"])
def test_knob_off_sheds_nothing(endpoints, side):
    """shed_droppable=False at the sender (it ignores flagged GRANTs) or at both (the receiver sends
    format-1 GRANTs): every packet of the first transmission leaves, even to a receiver holding senders."""
    g, pt = tensor(4, tid=6)
    rx_kw = {"shed_senders": 0, "shed_droppable": side == "sender"}
    tx, rx, log, outs, sends, _ = run_through_relay(endpoints, rx_kw=rx_kw, tx_kw={"shed_droppable": False},
                                                    tensors=[(g, pt)])
    assert sorted(log.first[6]) == list(range(pt.n_packets))
    assert sends[0].stats.shed == 0 and tx.shed_packets == 0
    assert (rx.rx.shed_grants_sent >= 1) == (side == "sender")
    assert np.array_equal(outs[0], g)


def _grants(sock: socket.socket) -> list[tuple[int, int, int, int, int]]:
    """(body length, rate, senders, window, flags) of every GRANT waiting at ``sock`` (not blocking)."""
    got = []
    while select.select([sock], [], [], 0)[0]:
        data = sock.recv(65536)
        body = data[P.DLCP_HEADER_LEN:]
        if data[0] & 0xF == P.MSG_CONTROL and P.CONTROL_HEAD.unpack_from(body)[0] == P.CTRL_GRANT:
            rest = body[P.CONTROL_HEAD.size:]
            got.append((len(rest), *P.unpack_grant(rest)))
    return got


@pytest.mark.parametrize("shed_on", [True, False])
def test_receiver_flags_grants_past_shed_senders(endpoints, shed_on):
    """Raw sockets open a tensor each at a receiver with the default limit and keep it active with a DATA
    packet per round: every GRANT is flagged exactly when it counts more than SHED_SENDERS senders; with
    SHED_SENDERS + 1 active every sender's GRANT is flagged (format 2). Knob off: format-1 GRANTs (12
    bytes), never a flag. (Senders idle for GRANT_IDLE drop out of the count, so the test only asserts
    once all of them count: no wall-clock bound.)"""
    rx = endpoints(job_id=1, link_rate=LINK, shed_droppable=shed_on)
    socks, tensors, last = [], [], {}
    sent = 0

    def round_(n: int) -> None:
        nonlocal sent
        for s, pt in zip(socks[:n], tensors[:n], strict=True):
            s.sendto(bytes(pt.packet(sent)), rx.address)   # one more DATA packet: still active
        sent += 1
        for _ in range(5):
            rx.poll(0.001)
        for i, s in enumerate(socks[:n]):
            for length, _rate, senders, _window, flags in _grants(s):
                assert length == (P.GRANT_BODY_FLAGS.size if shed_on else P.GRANT_BODY.size)
                assert bool(flags & P.GRANT_FLAG_SHED) == (shed_on and senders > SHED_SENDERS), (senders, flags)
                last[i] = (senders, flags)

    try:
        for w in range(SHED_SENDERS + 1):
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.bind(("127.0.0.1", 0))
            _g, pt = tensor(10 + w, tid=1, worker=w + 1)
            tx = OutgoingTensor(pt, rx.address, time.monotonic(), 0.02)   # seals pt with its token
            socks.append(s)
            tensors.append(pt)
            s.sendto(tx.open_message(), rx.address)
            round_(w + 1)
        n = len(socks)
        for _ in range(100):           # until every sender's latest GRANT counts all of them
            if all(last.get(i, (0, 0))[0] == n for i in range(n)):
                break
            round_(n)
        assert [last[i] for i in range(n)] == [(n, P.GRANT_FLAG_SHED if shed_on else 0)] * n
        assert (rx.rx.shed_grants_sent >= n) == shed_on
    finally:
        for s in socks:
            s.close()


def test_grant_body_formats():
    """Format 1 reads as unflagged; format 2 round-trips; short or undefined-flag bodies are errors."""
    assert P.unpack_grant(P.pack_grant(1000, 3, 8)) == (1000, 3, 8, 0)
    assert P.unpack_grant(P.pack_grant(1000, 7, 8, P.GRANT_FLAG_SHED)) == (1000, 7, 8, P.GRANT_FLAG_SHED)
    assert P.GRANT_BODY.unpack_from(P.pack_grant(1000, 7, 8, P.GRANT_FLAG_SHED)) == (1000, 7, 8)   # old readers
    with pytest.raises(ValueError, match="needs 12 bytes"):
        P.unpack_grant(b"\0" * 11)
    with pytest.raises(ValueError, match="format 2 needs 16"):
        P.unpack_grant(P.pack_grant(1, 1, 1, 0)[:14])
    with pytest.raises(ValueError, match="undefined bits"):
        P.unpack_grant(P.GRANT_BODY_FLAGS.pack(1, 1, 1, P.GRANT_FORMAT_FLAGS, 0x80))


def test_malformed_grant_is_counted_not_obeyed(endpoints):
    """A GRANT with an undefined flag bit is dropped as bad_control: no grant, no shedding."""
    ep = endpoints(job_id=1)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        hdr = P.DlcpHeader(msg_type=P.MSG_CONTROL, flags=P.FLAG_CRITICAL, job_id=1).pack()
        body = P.CONTROL_HEAD.pack(P.CTRL_GRANT) + P.GRANT_BODY_FLAGS.pack(1000, 9, 8, P.GRANT_FORMAT_FLAGS, 0x81)
        s.sendto(hdr + body, ep.address)
        for _ in range(50):
            ep.poll(0.002)
            if ep.drops["bad_control"]:
                break
        assert ep.drops["bad_control"] == 1 and ep.grants.grants_received == 0 and not ep._shed_by
    finally:
        s.close()


@pytest.mark.parametrize("argv,env,want", [
    ([], None, True),
    (["--no-shed-droppable"], None, False),
    ([], "0", False),
    (["--shed-droppable"], "0", True),          # the flag wins over the environment
])
def test_agent_switch(monkeypatch, argv, env, want):
    """dlcp-agent's --shed-droppable/--no-shed-droppable, else DLCP_SHED_DROPPABLE, else on."""
    assert agent_switch(monkeypatch, "DLCP_SHED_DROPPABLE", env, argv, "shed_droppable") is want


def test_bad_environment_value_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("DLCP_SHED_DROPPABLE", "yes")
    with pytest.raises(UserError, match="DLCP_SHED_DROPPABLE='yes': 0 or 1"):
        EndpointConfig()
