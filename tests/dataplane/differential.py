"""A random STF test of p4src/bmv2/dlcp.p4 for differential runs on p4sim and BMv2.

Why this exists: the hand-written STF files check what the spec says case by case; this
module draws a random policy, random routes (including multi-member ECMP groups, spraying or
not, and a controller-installed extra DLCP port) and a random mix of DLCP and non-DLCP
packets (well-formed, malformed, IPv4 options, bad IPv4, bad checksums, TTL expiry, ARP,
other ports, unknown versions), so that p4sim and real BMv2 can be run on the SAME STF file
and their outputs and counters compared.

Determinism on a real, multi-threaded switch: every decision must not depend on timing.
Selective drops use the per-(port, queue) packet counts (``enq_count_reg``), written with
``register_write`` for a "hot" port that nothing ever leaves: the only packets sent to it are
well-formed, non-critical DLCP DATA whose tags the random policy maps to a hot queue, and every
magnitude class of a hot queue drops below the written depth, so every one of them is dropped
at ingress, never counted in, and no egress ever clamps or resyncs the counts (which it does,
timing-dependently on BMv2, when a packet leaves a port).  Elsewhere a queue's count is the
packets really queued, 0 or nearly so in an STF run, below every other threshold (>= 1000).
ECN marking (which lets packets through) is left to the STF files.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from tests.dataplane.packets import (
    ELEM_SIZE,
    SWITCH_MAC,
    arp_packet,
    dlcp_header,
    host_mac,
    tcp_packet,
    udp_packet,
    with_ipv4_fields,
)

PORTS = (1, 2, 3, 4)
GROUP_PREFIX_PORT = 9            # 10.0.9.0/24 and 10.0.8.0/24: ECMP groups, not a host port
HOT_PORT = 5                     # only hot-queue DLCP DATA goes there, all dropped (see module doc)
HOT_DEPTH = 40
EXTRA_DLCP_PORT = 9400           # installed in DlcpIngress.dlcp_udp_ports
MAX_AGE_US = 0xFFFFFFFF
IPV4_OPTIONS = bytes.fromhex("9404000001010100")


@dataclass
class Scenario:
    """The STF text plus what the test needs to read back."""

    lines: list[str] = field(default_factory=list)
    packets: int = 0
    hot_queues: tuple[int, ...] = ()
    data_rules: list[tuple[int, int, int, int, int]] = field(default_factory=list)   # layer v/m, mag v/m, queue
    member_handles: list[str] = field(default_factory=list)

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def _mac(port: int) -> str:
    return "0x" + host_mac(port).replace(":", "")


def _tables(rng: random.Random, sc: Scenario) -> None:
    out = sc.lines
    out.append("priority_queues 8")
    for port in (*PORTS, HOT_PORT):
        out.append(f"add DlcpIngress.ipv4_routes ipv4_dst:0x0a00{port:02x}00/24 "
                   f"DlcpIngress.route_to_nexthop(nexthop_id:{port})")
        out.append(f"add DlcpIngress.nexthops nexthop_id:{port} DlcpIngress.set_nexthop(port:{port}, "
                   f"smac:0x{SWITCH_MAC.replace(':', '')}, dmac:{_mac(port)})")
        out.append(f"add DlcpEgress.port_drain egress_port:{port} DlcpEgress.set_port_drain(pkts_per_s:1)")
    # two ECMP groups over random member sets: 10.0.9.0/24 sprays DLCP DATA, 10.0.8.0/24 does not
    for gid, prefix, spray in ((1, 9, 1), (2, 8, 0)):
        members = rng.sample(PORTS[:3], rng.choice([2, 3]))
        out.append(f"add DlcpIngress.ipv4_routes ipv4_dst:0x0a00{prefix:02x}00/24 "
                   f"DlcpIngress.route_to_group(group_id:{gid})")
        out.append(f"add DlcpIngress.ecmp_groups group_id:{gid} "
                   f"DlcpIngress.set_ecmp_group(num_members:{len(members)}, spray:{spray})")
        for i, port in enumerate(members):
            handle = f"M{gid}_{i}"
            sc.member_handles.append(handle)
            out.append(f"add DlcpIngress.ecmp_members group_id:{gid} member_index:{i} "
                       f"DlcpIngress.route_to_nexthop(nexthop_id:{port}) = {handle}")
    out.append(f"add DlcpIngress.dlcp_udp_ports udp_dst_port:{EXTRA_DLCP_PORT} DlcpIngress.dlcp_port()")
    out.append(f"setdefault DlcpIngress.depth_settings DlcpIngress.set_depth_max_age(max_age_us:{MAX_AGE_US})")
    # policy: control and critical first (queue 7), then random DATA rules on queues 1..6
    prio = 100
    for msg in (1, 2, 3, 4):
        out.append(f"add DlcpIngress.priority_map {prio} is_dlcp:1&&&0x1 msg_type:{msg}&&&0xF "
                   f"DlcpIngress.set_queue(queue:7)")
    out.append(f"add DlcpIngress.priority_map {prio} is_dlcp:1&&&0x1 flags:0x80&&&0x80 "
               f"DlcpIngress.set_queue(queue:7)")
    for _ in range(rng.randrange(4, 10)):
        prio -= 1
        layer_mask = rng.choice([0x0, 0x4, 0x6, 0x7])
        mag_mask = rng.choice([0x0, 0x8, 0xC, 0xF])
        layer, mag, queue = rng.randrange(8) & layer_mask, rng.randrange(16) & mag_mask, rng.randrange(1, 7)
        sc.data_rules.append((layer, layer_mask, mag, mag_mask, queue))
        out.append(f"add DlcpIngress.priority_map {prio} is_dlcp:1&&&0x1 msg_type:0&&&0xF "
                   f"layer_class:{layer}&&&{layer_mask:#x} "
                   f"mag_class:{mag}&&&{mag_mask:#x} flags:0&&&0x80 "
                   f"DlcpIngress.set_queue(queue:{queue})")
    out.append("add DlcpIngress.priority_map 1 is_dlcp:1&&&0x1 msg_type:0&&&0xF flags:0&&&0x80 "
               "DlcpIngress.set_queue(queue:1)")
    sc.data_rules.append((0, 0, 0, 0, 1))
    # thresholds: random everywhere; the hot port's counts make its queues drop every class
    sc.hot_queues = tuple(sorted(rng.sample(range(1, 7), 2)))
    for queue in range(1, 8):
        for mag in range(16):
            if queue in sc.hot_queues:
                drop = rng.randrange(20, HOT_DEPTH)    # >= 20: real queues elsewhere never reach it
            elif rng.random() < 0.5:
                continue
            else:     # never reached: no queue of an STF run holds 1000 packets
                drop = rng.randrange(1000, 0x7FFFF)
            out.append(f"add DlcpIngress.drop_thresholds queue:{queue} mag_class:{mag} "
                       f"DlcpIngress.set_thresholds(drop_depth:{drop}, ecn_depth:{rng.randrange(0, 0x7FFFF)})")
    for queue in sc.hot_queues:
        out.append(f"register_write enq_count_reg {HOT_PORT * 8 + queue} {HOT_DEPTH}")


def _hot_tags(rng: random.Random, sc: Scenario) -> tuple[int, int] | None:
    """(layer_class, mag_class) the policy maps to a hot queue (first matching rule), if any."""
    for _ in range(200):
        layer, mag = rng.randrange(8), rng.randrange(16)
        queue = next(q for lv, lm, mv, mm, q in sc.data_rules if layer & lm == lv and mag & mm == mv)
        if queue in sc.hot_queues:
            return layer, mag
    return None


def _hot_packet(rng: random.Random, sc: Scenario) -> tuple[int, bytes] | None:
    """Well-formed, non-critical DLCP DATA to the hot port, in a hot queue: dropped at ingress."""
    tags = _hot_tags(rng, sc)
    if tags is None:
        return None
    count = rng.randrange(1, 8)
    header = dlcp_header(version=1, msg_type=0, layer_class=tags[0], mag_class=tags[1],
                         flags=rng.choice([0, 0x08]), dtype=0, count=count,
                         offset=rng.getrandbits(32), seq=rng.getrandbits(32), iteration=rng.getrandbits(32))
    payload = header + bytes(rng.getrandbits(8) for _ in range(count * ELEM_SIZE[0]))
    return rng.choice(PORTS), udp_packet(dst_port=HOT_PORT, sport=rng.randrange(1024, 65536),
                                         dport=rng.choice([9290, EXTRA_DLCP_PORT]), payload=payload)


def _dlcp(rng: random.Random, dst: int, sport: int) -> bytes:
    msg_type = rng.choice([0, 0, 0, 0, 1, 2, 3, 4, rng.randrange(16)])
    dtype = rng.choice([0, 1, 2, 3, 0, rng.randrange(16)])
    count = rng.randrange(0, 24)
    header = dlcp_header(version=rng.choice([1] * 8 + [2, 0]), msg_type=msg_type,
                         layer_class=rng.randrange(8), mag_class=rng.randrange(16),
                         flags=rng.choice([0, 0, 0x08, 0x80, 0x88, 0x40, rng.getrandbits(8)]),
                         dtype=dtype, count=count, offset=rng.getrandbits(32), seq=rng.getrandbits(32),
                         iteration=rng.getrandbits(32))
    body = count * ELEM_SIZE.get(dtype, 1)
    if rng.random() < 0.15:
        body = max(0, body + rng.choice([-2, -1, 1, 3]))
    payload = header + bytes(rng.getrandbits(8) for _ in range(body))
    if rng.random() < 0.05:
        payload = payload[:rng.randrange(0, 24)]           # truncated
    dport = rng.choice([9290] * 6 + [EXTRA_DLCP_PORT] * 2 + [9291])
    return udp_packet(dst_port=dst, sport=sport, dport=dport, payload=payload,
                      dscp=rng.randrange(64), ecn=rng.randrange(4), ttl=rng.choice([64, 64, 64, 2, 1]))


def _packet(rng: random.Random) -> tuple[int, bytes]:
    src = rng.choice(PORTS)
    dst = rng.choice([p for p in PORTS if p != src] + [GROUP_PREFIX_PORT, GROUP_PREFIX_PORT - 1, 7])
    sport = rng.randrange(1024, 65536)
    kind = rng.random()
    if kind < 0.6:
        pkt = _dlcp(rng, dst, sport)
    elif kind < 0.75:
        pkt = udp_packet(dst_port=dst, sport=sport, dport=rng.randrange(1, 65536),
                         payload=bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 40))),
                         dscp=rng.randrange(64), ecn=rng.randrange(4), ttl=rng.choice([64, 1]))
    elif kind < 0.9:
        pkt = tcp_packet(dst_port=dst, sport=sport, dport=rng.randrange(1, 65536), seq=rng.getrandbits(32),
                         dscp=rng.randrange(64))
    elif kind < 0.93:
        pkt = arp_packet(src)
    else:
        pkt = _dlcp(rng, dst, sport)
    if pkt[12:14] == b"\x08\x00":
        damage = rng.random()
        if damage < 0.08:
            pkt = with_ipv4_fields(pkt, options=IPV4_OPTIONS[: rng.choice([4, 8])])
        elif damage < 0.11:
            pkt = with_ipv4_fields(pkt, version=rng.choice([0, 6, 15]))
        elif damage < 0.14:
            pkt = with_ipv4_fields(pkt, ihl=rng.randrange(0, 5))
        elif damage < 0.16:
            pkt = pkt[:24] + bytes([pkt[24] ^ 0x10]) + pkt[25:]           # bad header checksum
        elif damage < 0.18:
            pkt = pkt[: rng.randrange(14, len(pkt))]                       # cut anywhere
    return src, pkt


def scenario(seed: int, packets: int) -> Scenario:
    """Tables, then ``packets`` random packets; counters are appended by the test (from p4sim)."""
    rng = random.Random(seed)
    sc = Scenario()
    sc.lines.append(f"# differential test of p4src/bmv2/dlcp.p4, seed {seed} (tests/dataplane/differential.py)")
    _tables(rng, sc)
    for _ in range(packets):
        hot = _hot_packet(rng, sc) if rng.random() < 0.08 else None
        port, data = hot or _packet(rng)
        sc.lines.append(f"packet {port} {data.hex().upper()}")
    sc.packets = packets
    for port in PORTS:
        sc.lines.append(f"expect {port}")        # any number: the test compares outputs itself
    return sc
