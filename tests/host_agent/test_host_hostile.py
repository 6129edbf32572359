"""Hostile input: malformed, foreign, stale, duplicate and out-of-bounds packets built with scapy.

Each is sent from a raw UDP socket to a real receiving endpoint; every one must be dropped and
counted under its reason, nothing may be written outside the tensor, and the genuine tensor that
follows must still arrive bit-exactly.
"""

from __future__ import annotations

import os
import socket

import numpy as np
from host_helpers import run_both
from scapy.layers.inet import IP, UDP
from scapy.packet import Raw, raw

from host_agent import protocol as P
from host_agent.packetizer import packetize
from host_agent.policy import TagPolicy

EPP = 362


def dlcp(**kw) -> bytes:
    return raw(P.DLCP(**kw))


def test_hostile_packets_dropped_counted_and_harmless(endpoints):
    rx = endpoints(job_id=7)
    tx = endpoints(job_id=7, worker_id=3)
    n = EPP * 4 + 10                                       # 5 packets, the last holding 10 elements
    g = np.random.default_rng(3).standard_normal(n).astype(np.float32)
    pt = packetize(g, tensor_id=2, policy=TagPolicy(loss_bound=0.0), job_id=7, worker_id=3, iteration=4)
    # a canary on both sides of the destination: a write out of bounds would change it
    backing = np.full(n + 2 * EPP, 123.0, np.float32)
    out = backing[EPP:EPP + n]
    rx.expect(3, 4, 2, out)
    token = 0x5EED1234
    pt.seal(token)
    desc = pt.descriptor().pack() + P.TOKEN.pack(token)
    open_msg = dlcp(msg_type=P.MSG_CONTROL, flags="CRITICAL", job_id=7, worker_id=3, iteration=4,
                    tensor_id=2) + P.CONTROL_HEAD.pack(P.CTRL_OPEN) + desc
    payload = np.ones(EPP, np.float32).tobytes()
    good = {"job_id": 7, "worker_id": 3, "iteration": 4, "tensor_id": 2, "seq": token}   # packet 0
    hostile = [
        ("truncated", b"\x10\x00\x00"),
        ("truncated", os.urandom(23)),
        ("bad_version", raw(P.DLCP(version=2, **good, count=EPP)) + payload),
        ("wrong_job", dlcp(**{**good, "job_id": 8}, count=EPP) + payload),
        ("wrong_iteration", dlcp(**{**good, "iteration": 3}, count=EPP) + payload),
        ("unknown_tensor", dlcp(**{**good, "tensor_id": 77}, count=EPP) + payload),
        ("unknown_tensor", dlcp(**{**good, "worker_id": 9}, count=EPP) + payload),
        ("bad_offset", dlcp(**{**good, "seq": token ^ 5}, count=EPP, offset=EPP * 5) + payload),  # beyond
        ("bad_offset", dlcp(**{**good, "seq": token ^ (0xFFFFFFFF // EPP)}, count=EPP, offset=0xFFFFFFFF)
         + payload),
        ("bad_offset", dlcp(**good, count=EPP, offset=100) + payload),                # inside a packet
        ("bad_count", dlcp(**{**good, "seq": token ^ 4}, count=EPP, offset=EPP * 4) + payload),  # last: 10
        ("bad_token", dlcp(**{**good, "seq": 0}, count=EPP, offset=0) + payload),
        ("bad_token", dlcp(**{**good, "seq": token ^ 0x100}, flags="RETX", count=EPP, offset=0) + payload),
        ("bad_length", dlcp(**good, count=EPP, offset=0) + payload[:-4]),
        ("bad_length", dlcp(**good, count=60000, offset=0) + payload),
        ("bad_dtype", dlcp(**good, dtype=1, count=EPP, offset=0) + payload),
        ("bad_dtype", dlcp(**good, dtype=9, count=EPP, offset=0) + payload),
        ("bad_msg_type", dlcp(**good, msg_type=9)),
        ("bad_descriptor", dlcp(**good, msg_type=P.MSG_PROBE) + b"\x00" * 5),
        ("bad_descriptor", dlcp(**good, msg_type=P.MSG_CONTROL) + P.CONTROL_HEAD.pack(P.CTRL_OPEN)
         + P.TensorDescriptor(10**9, 1, 10**9 + 1, 0, 0).pack() + P.TOKEN.pack(1)),
        ("bad_descriptor", dlcp(**good, msg_type=P.MSG_CONTROL) + P.CONTROL_HEAD.pack(P.CTRL_OPEN)
         + pt.descriptor().pack()),                                                   # no token
        ("bad_token", dlcp(**good, msg_type=P.MSG_PROBE) + pt.descriptor().pack() + P.TOKEN.pack(7)),
        ("bad_control", dlcp(**good, msg_type=P.MSG_CONTROL) + b"\x63\x00\x00\x00"),
        ("stale_control", dlcp(**good, msg_type=P.MSG_DONE) + b"\x00" * 20),
        ("stale_control", dlcp(**good, msg_type=P.MSG_BITMAP) + b"\x00" * 40),
    ]
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    s.sendto(open_msg, rx.address)                       # a valid OPEN first, so data checks run
    # a duplicate: one genuine packet sent twice before the real sender starts
    s.sendto(bytes(pt.packet(1)), rx.address)
    s.sendto(bytes(pt.packet(1)), rx.address)
    expected: dict[str, int] = {"duplicate": 1}
    for reason, data in hostile:
        s.sendto(data, rx.address)
        expected[reason] = expected.get(reason, 0) + 1
    for _ in range(20):
        rx.poll(0.005)
    assert dict(rx.drops) == expected
    assert np.all(backing[:EPP] == 123.0) and np.all(backing[EPP + n:] == 123.0)
    assert np.all(out[EPP:2 * EPP] == g[EPP:2 * EPP])      # the one genuine packet landed
    assert np.all(out[:EPP] == 123.0)                        # nothing else was written
    # a tensor descriptor that disagrees with the expectation's array is refused, not applied
    mismatch = dlcp(msg_type=P.MSG_CONTROL, job_id=7, worker_id=3, iteration=4, tensor_id=5) + \
        P.CONTROL_HEAD.pack(P.CTRL_OPEN) + P.TensorDescriptor(10, 10, 1, 0, 0).pack() + P.TOKEN.pack(1)
    rx.expect(3, 4, 5, np.zeros(11, np.float32))
    s.sendto(mismatch, rx.address)
    for _ in range(5):
        rx.poll(0.005)
    assert rx.drops["descriptor_mismatch"] == 1
    s.close()
    # the genuine sender still gets the next iteration through, bit-exact
    out2 = backing[EPP:EPP + n]
    out2[:] = 0
    r2 = rx.expect(3, 5, 2, out2)
    pt2 = packetize(g, tensor_id=2, policy=TagPolicy(loss_bound=0.0), job_id=7, worker_id=3, iteration=5)
    h = tx.send(pt2, rx.address)
    run_both(tx, [h], rx, [r2])
    assert np.array_equal(out2, g)
    assert np.all(backing[:EPP] == 123.0) and np.all(backing[EPP + n:] == 123.0)


def test_garbage_flood_never_crashes(endpoints):
    rx = endpoints(job_id=0, stage_unexpected=True, max_staged_elements=1 << 16)
    rng = np.random.default_rng(5)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sent = 0
    for size in rng.integers(0, 1500, 400):
        data = bytearray(rng.integers(0, 256, int(size), dtype=np.uint8).tobytes())
        if size >= 24 and rng.random() < 0.7:
            data[0] = 0x10 | (data[0] & 0x0F)     # mostly version 1 so deeper checks run
            data[4:6] = b"\x00\x00"               # job 0
        s.sendto(bytes(data), rx.address)
        sent += 1
    for _ in range(50):
        rx.poll(0.002)
    s.close()
    assert sum(rx.drops.values()) + rx.packets_received == sent
    assert rx.staged_elements <= 1 << 16


# --- issue 11: forged OPENs must not hold staging; DATA only from the opener, with its token ------

def _raw_udp(src: tuple[str, int], dst: tuple[str, int], payload: bytes) -> None:
    """Send one UDP datagram with a forged source address (raw socket, IP header built by scapy)."""
    pkt = IP(src=src[0], dst=dst[0]) / UDP(sport=src[1], dport=dst[1]) / Raw(payload)
    with socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW) as s:
        s.sendto(raw(pkt), (dst[0], 0))


def _forged_open(worker: int, tensor: int, n: int, token: int = 1, iteration: int = 1) -> bytes:
    desc = P.TensorDescriptor(n, EPP, -(-n // EPP), 0, 0)
    return (dlcp(msg_type=P.MSG_CONTROL, flags="CRITICAL", job_id=1, worker_id=worker, iteration=iteration,
                 tensor_id=tensor) + P.CONTROL_HEAD.pack(P.CTRL_OPEN) + desc.pack() + P.TOKEN.pack(token))


def _poll(ep, rounds: int = 20) -> None:
    for _ in range(rounds):
        ep.poll(0.005)


def test_forged_opens_from_many_sources_expire(endpoints):
    """40 OPENs from 40 spoofed sources fill staging; they expire and a genuine OPEN gets in."""
    limit = 1 << 20
    rx = endpoints(job_id=1, max_staged_elements=limit)
    rx.cfg.idle_timeout = 0.3
    for i in range(40):
        _raw_udp((f"127.0.3.{i + 1}", 4000 + i), rx.address, _forged_open(100 + i, 1, limit // 40))
    _poll(rx)
    assert rx.staged_elements > limit - limit // 40        # full: the next OPEN is refused now
    tx = endpoints(job_id=1, worker_id=2)
    g = np.random.default_rng(1).standard_normal(limit // 4).astype(np.float32)
    seen = []
    rx.on_unexpected = lambda h: seen.append(h.assembly.out.copy())
    h = tx.send(packetize(g, tensor_id=9, policy=TagPolicy(), job_id=1, worker_id=2, iteration=1),
                rx.address)
    run_both(tx, [h], rx, [], timeout=10.0)               # the sender's repeated OPEN gets in
    assert len(seen) == 1 and np.array_equal(seen[0], g)
    assert rx.drops["expired"] >= 40 and rx.drops["unexpected_tensor"] >= 1


def test_forged_opens_from_one_source_bounded_per_peer(endpoints):
    """One source cannot take more than its share of staging: others are served at once."""
    limit = 1 << 20
    rx = endpoints(job_id=1, max_staged_elements=limit)
    for i in range(40):
        _raw_udp(("127.0.4.1", 4000), rx.address, _forged_open(100 + i, 1, limit // 40))
    _poll(rx)
    assert rx.staged_elements <= limit // 2
    assert rx.drops["peer_staging_full"] >= 19
    tx = endpoints(job_id=1, worker_id=2, give_up_after=1.0)
    g = np.ones(limit // 4, np.float32)
    done = []
    rx.on_unexpected = done.append
    h = tx.send(packetize(g, tensor_id=9, policy=TagPolicy(), job_id=1, worker_id=2, iteration=1),
                rx.address)
    run_both(tx, [h], rx, [], timeout=5.0)
    assert len(done) == 1 and rx.drops["expired"] == 0


def _genuine_transfer_opened(endpoints, packets: int, seed: int):
    """rx expects (worker 3, iteration 7, tensor 4); tx's OPEN has arrived, its DATA not yet.

    Returns rx, tx, the tensor, rx's destination array, both handles and an attacker's forgery
    of the same tensor (right ids, old-protocol seq = packet index, wrong values).
    """
    rx = endpoints(job_id=1)
    tx = endpoints(job_id=1, worker_id=3)
    g = np.random.default_rng(seed).standard_normal(EPP * packets).astype(np.float32)
    out = np.zeros_like(g)
    r = rx.expect(3, 7, 4, out)
    pt = packetize(g, tensor_id=4, policy=TagPolicy(loss_bound=0.0), job_id=1, worker_id=3, iteration=7)
    h = tx.send(pt, rx.address)                              # OPEN leaves now (first contact)
    _poll(rx, 5)
    assert rx.assemblies[(3, 4)].iteration == 7
    forged = packetize(np.full_like(g, 666.0), tensor_id=4, policy=TagPolicy(), job_id=1, worker_id=3,
                       iteration=7)
    return rx, tx, g, out, r, h, forged


def test_data_from_another_source_is_refused(endpoints):
    """Well-formed DATA with the right ids and seq from another UDP socket never reaches the tensor."""
    rx, tx, g, out, r, h, forged = _genuine_transfer_opened(endpoints, 300, 2)
    attacker = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    attacker.bind(("127.0.0.1", 0))
    attacker.setblocking(False)
    for i in range(forged.n_packets):
        attacker.sendto(bytes(forged.packet(i)), rx.address)
    # a PROBE from the attacker must not redirect the tensor's answers either
    attacker.sendto(dlcp(msg_type=P.MSG_PROBE, job_id=1, worker_id=3, iteration=7, tensor_id=4)
                    + forged.descriptor().pack() + P.TOKEN.pack(0), rx.address)
    _poll(rx, 40)
    run_both(tx, [h], rx, [r])
    assert np.array_equal(out, g)
    assert rx.drops["wrong_peer"] == forged.n_packets + 1
    try:
        got = attacker.recv(2048)
    except BlockingIOError:
        got = b""
    attacker.close()
    assert got == b""


def test_spoofed_source_address_needs_the_token(endpoints):
    """DATA forged with the opener's own IP and port (raw socket) is refused without the token."""
    rx, tx, g, out, r, h, forged = _genuine_transfer_opened(endpoints, 50, 4)
    for i in range(forged.n_packets):
        _raw_udp(tx.address, rx.address, bytes(forged.packet(i)))
    _poll(rx, 40)
    run_both(tx, [h], rx, [r])
    assert np.array_equal(out, g)
    assert rx.drops["bad_token"] == forged.n_packets
