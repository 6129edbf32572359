"""Differential test: the BMv2 program and the Tofino program (Tofino1 and Tofino2) on p4sim make
the same decisions for the same random tables and packets.

Why it exists: the two programs are written separately (v1model vs TNA) and must behave the same
(developers' guide). Random DLCP and non-DLCP packets (well-formed, malformed, TTL expiry, bad
checksums, IPv4 options, unknown versions, other ports, ARP) go through all three with the same
random priority rules, thresholds, routes, ECMP groups (spraying or not) and queue depths;
per packet the egress port class (the port, or "a member of the group" for ECMP routes, whose
member choice is target-specific), the queue, drop/CE-mark decisions and the rewritten bytes
(Ethernet addresses aside for ECMP routes) must agree, and so must the drop/mark counters.
"""

from __future__ import annotations

import collections
import os
import random
import struct

import pytest

from tests.dataplane.packets import (
    ELEM_SIZE,
    SWITCH_MAC,
    arp_packet,
    dlcp_header,
    host_mac,
    ipv4_checksum,
    with_ipv4_fields,
)
from tests.dataplane.targets import DlcpTarget, ip_int

PACKETS = int(os.environ.get("DLCP_DIFF_PACKETS", "10000"))
GROUP_DST = 9                       # 10.0.9.0/24 routes to ECMP group 1
UNROUTED_DST = 40
EXTRA_DLCP_PORT = 9400
TARGETS = ("bmv2", "tna", "t2na")
ARP = arp_packet()


def random_tables(rng: random.Random, targets: list[DlcpTarget]) -> tuple[int, ...]:
    members = tuple(rng.sample(range(2, 7), rng.randint(1, 4)))
    spray = rng.random() < 0.7
    rules = []
    for prio in range(rng.randint(1, 8), 0, -1):
        fields = {}
        if rng.random() < 0.8:
            fields["is_dlcp"] = (1, 1)
        for name, width in (("msg_type", 4), ("layer_class", 3), ("mag_class", 4), ("flags", 8)):
            if rng.random() < 0.3:
                m = rng.randint(1, (1 << width) - 1)
                fields[name] = (rng.randint(0, (1 << width) - 1) & m, m)
        rules.append((rng.randint(0, 7), prio * 10, fields))
    thresholds = [(q, c, rng.choice((0, 4, 20, 100)), rng.choice((0, 2, 10, 50)))
                  for q in range(8) for c in range(16) if rng.random() < 0.5]
    # ECMP members share each queue's depth: the member a target picks must not change the decision
    shared = [rng.choice((0, 1, 8, 30, 300)) for _q in range(8)]
    depths = [(p, q, shared[q] if p in members else rng.choice((0, 1, 8, 30, 300)))
              for p in range(2, 7) for q in range(8)]
    extra_port = rng.random() < 0.5
    for t in targets:
        t.tables.group(1, list(members), spray)
        t.tables.route_group(ip_int("10.0.9.0"), 24, 1)
        for queue, prio, fields in rules:
            t.tables.priority_rule(queue, prio, **fields)
        for q, c, drop, ecn in thresholds:
            t.tables.thresholds(q, c, drop, ecn)
        for p, q, d in depths:
            t.set_depth(p, q, d)
        if extra_port:
            t.tables.dlcp_port(EXTRA_DLCP_PORT)
    return members


def ipv4_frame(rng: random.Random, dst: int, ttl: int, tos: int, proto: int, l4: bytes) -> bytes:
    """Ethernet/IPv4 from the host on port 1 to the one on ``dst`` (built without scapy: speed)."""
    ip = bytearray(struct.pack("!BBHHHBBH4s4s", 0x45, tos, 20 + len(l4), rng.getrandbits(16), 0, ttl, proto, 0,
                               bytes((10, 0, 1, 1)), bytes((10, 0, dst, 1))))
    ip[10:12] = ipv4_checksum(bytes(ip)).to_bytes(2, "big")
    eth = bytes.fromhex(SWITCH_MAC.replace(":", "") + host_mac(1).replace(":", "")) + b"\x08\x00"
    return eth + bytes(ip) + l4


def random_packet(rng: random.Random) -> bytes:
    dst = rng.choice((2, 3, 4, 5, 6, GROUP_DST, GROUP_DST, UNROUTED_DST))
    ttl = rng.choice((1, 2, 64, 64, 64))
    tos = rng.randint(0, 255)
    kind = rng.random()
    if kind < 0.65:
        dtype = rng.choice((0, 1, 2, 3, 0, 0, 5))
        count = rng.randint(0, 40)
        hdr = dlcp_header(msg_type=rng.choice((0, 0, 0, 1, 2, 3, 4, 9)), layer_class=rng.randint(0, 7),
                          mag_class=rng.randint(0, 15), flags=rng.randint(0, 255), dtype=dtype, count=count,
                          seq=rng.getrandbits(32), offset=rng.getrandbits(32),
                          version=1 if rng.random() < 0.95 else 2)
        size = count * ELEM_SIZE.get(dtype, 1)
        if rng.random() < 0.1:
            size = rng.randint(0, 20)                    # a length that does not match count
        body = hdr + bytes(size)
        if rng.random() < 0.03:
            body = body[: rng.randint(0, 23)]            # shorter than a DLCP header
        dport = rng.choice((9290, 9290, 9290, EXTRA_DLCP_PORT))
        l4 = struct.pack("!HHHH", 40001, dport, 8 + len(body), 0) + body
        data = ipv4_frame(rng, dst, ttl, tos, 17, l4)
    elif kind < 0.8:
        body = bytes(rng.randint(0, 30))
        l4 = struct.pack("!HHHH", rng.randint(1, 65535), rng.choice((9290, 6000, 53)), 8 + len(body), 0) + body
        data = ipv4_frame(rng, dst, ttl, tos, 17, l4)
    elif kind < 0.9:
        l4 = struct.pack("!HHIIHHHH", rng.randint(1024, 65535), 80, rng.getrandbits(32), 0, 0x5018, 512, 0, 0)
        data = ipv4_frame(rng, dst, ttl, tos, 6, l4 + b"tcp-data")
    elif kind < 0.93:
        return ARP
    elif kind < 0.97:
        data = with_ipv4_fields(ipv4_frame(rng, dst, ttl, tos, 17, struct.pack("!HHHH", 1, 2, 8, 0)),
                                options=bytes.fromhex("9404000001010100"))
    else:
        data = with_ipv4_fields(ipv4_frame(rng, dst, ttl, tos, 17, struct.pack("!HHHH", 1, 2, 8, 0)),
                                version=rng.choice((4, 6)), ihl=rng.choice((4, 5, 3)))
    r = rng.random()
    if r < 0.03:                                    # corrupt the IPv4 checksum
        b = bytearray(data)
        b[24] ^= 0x5A
        data = bytes(b)
    elif r < 0.08:                                  # truncated anywhere
        data = data[: rng.randint(14, len(data))]
    return data


def outcome(target: DlcpTarget, data: bytes, members: tuple[int, ...], to_group: bool) -> list[tuple]:
    out = []
    for port, queue, sent in target.send(data):
        if to_group:
            assert port in members, (target.name, port, members)
            out.append(("group", queue, sent[12:]))           # member choice is the target's
        else:
            out.append((port, queue, sent))
    return out


COUNTERS = ("DlcpIngress.selective_drops", "DlcpIngress.ecn_marks", "DlcpIngress.malformed")


@pytest.mark.parametrize("seed", [1])
def test_both_programs_decide_alike_on_random_traffic(seed: int) -> None:
    rng = random.Random(seed)
    targets = []
    members = ()
    disagreements: list[str] = []
    seen: collections.Counter[str] = collections.Counter()
    sent = 0
    per_setup = 500
    for start in range(0, PACKETS, per_setup):
        targets = [DlcpTarget(name) for name in TARGETS]
        members = random_tables(rng, targets)
        for i in range(start, min(start + per_setup, PACKETS)):
            data = random_packet(rng)
            to_group = data[12:14] == b"\x08\x00" and data[30:33] == bytes((10, 0, GROUP_DST))
            results = [outcome(t, data, members, to_group) for t in targets]
            sent += 1
            seen["forwarded" if results[0] else "dropped"] += 1
            if data[12:14] == b"\x08\x00" and len(data) > 15 and data[15] & 3 != 3 and any(
                    r[2][3 if r[0] == "group" else 15] & 3 == 3 for r in results[0] if len(r[2]) > 15):
                seen["marked"] += 1
            for name, res in zip(TARGETS[1:], results[1:], strict=True):
                if res != results[0] and len(disagreements) < 5:
                    disagreements.append(f"packet {i} ({data.hex()}): bmv2 {results[0]!r} vs {name} {res!r}")
        for cname in COUNTERS:
            cells = [[c[0] for c in t.pipeline.counters[cname].cells] for t in targets]
            seen[cname] += sum(cells[0])
            for name, c in zip(TARGETS[1:], cells[1:], strict=True):
                if c != cells[0] and len(disagreements) < 5:
                    disagreements.append(f"counter {cname} after packet {start}: bmv2 vs {name} differ")
    assert sent == PACKETS
    # the mix exercises every decision (else agreement would prove little)
    for what in ("forwarded", "dropped", "marked", *COUNTERS):
        assert seen[what] > PACKETS // 200, seen
    assert not disagreements, "\n".join(disagreements)
