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
from scapy.packet import raw

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
    r = rx.expect(3, 4, 2, out)
    desc = pt.descriptor().pack()
    open_msg = dlcp(msg_type=P.MSG_CONTROL, flags="CRITICAL", job_id=7, worker_id=3, iteration=4,
                    tensor_id=2) + P.CONTROL_HEAD.pack(P.CTRL_OPEN) + desc
    payload = np.ones(EPP, np.float32).tobytes()
    good = {"job_id": 7, "worker_id": 3, "iteration": 4, "tensor_id": 2}
    hostile = [
        ("truncated", b"\x10\x00\x00"),
        ("truncated", os.urandom(23)),
        ("bad_version", raw(P.DLCP(version=2, **good, count=EPP)) + payload),
        ("wrong_job", dlcp(**{**good, "job_id": 8}, count=EPP) + payload),
        ("wrong_iteration", dlcp(**{**good, "iteration": 3}, count=EPP) + payload),
        ("unknown_tensor", dlcp(**{**good, "tensor_id": 77}, count=EPP) + payload),
        ("unknown_tensor", dlcp(**{**good, "worker_id": 9}, count=EPP) + payload),
        ("bad_offset", dlcp(**good, count=EPP, offset=EPP * 5) + payload),            # beyond the tensor
        ("bad_offset", dlcp(**good, count=EPP, offset=0xFFFFFFFF) + payload),
        ("bad_offset", dlcp(**good, count=EPP, offset=100) + payload),                # inside a packet
        ("bad_count", dlcp(**good, count=EPP, offset=EPP * 4) + payload),              # last holds 10
        ("bad_length", dlcp(**good, count=EPP, offset=0) + payload[:-4]),
        ("bad_length", dlcp(**good, count=60000, offset=0) + payload),
        ("bad_dtype", dlcp(**good, dtype=1, count=EPP, offset=0) + payload),
        ("bad_dtype", dlcp(**good, dtype=9, count=EPP, offset=0) + payload),
        ("bad_msg_type", dlcp(**good, msg_type=9)),
        ("bad_descriptor", dlcp(**good, msg_type=P.MSG_PROBE) + b"\x00" * 5),
        ("bad_descriptor", dlcp(**good, msg_type=P.MSG_CONTROL) + P.CONTROL_HEAD.pack(P.CTRL_OPEN)
         + P.TensorDescriptor(10**9, 1, 10**9 + 1, 0, 0).pack()),
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
        P.CONTROL_HEAD.pack(P.CTRL_OPEN) + P.TensorDescriptor(10, 10, 1, 0, 0).pack()
    rx.expect(3, 4, 5, np.zeros(11, np.float32))
    s.sendto(mismatch, rx.address)
    for _ in range(5):
        rx.poll(0.005)
    assert rx.drops["descriptor_mismatch"] == 1
    s.close()
    # the genuine sender still gets its tensor through, bit-exact; duplicates are counted
    h = tx.send(pt, rx.address)
    run_both(tx, [h], rx, [r])
    assert np.array_equal(out, g)
    assert np.all(backing[:EPP] == 123.0) and np.all(backing[EPP + n:] == 123.0)
    assert r.stats.duplicates == 2 and h.stats.duplicates == 2


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
