"""Differential harness: the ns-3 switch model's decision function against p4sim running dlcp.p4.

Why this exists: the simulator is only worth its numbers if its switch decides what the P4
program decides. Both sides get the same tables (the controller's parsed policy; routes with a
spraying group, a per-flow group and a single next hop), the same per-(port, queue) depths and the
same random packets; for each packet the harness records (queue, forward/ECN mark/selective
drop/other drop, ECMP member) from p4sim's ingress (QueuedPacket.priority, egress port, the
selective_drops/ecn_marks counters) and from dlcpsim::DecideRaw (C++, the code DlcpQueueDisc and
DlcpRouting run).
"""

from __future__ import annotations

import array
import random
import struct
from dataclasses import dataclass

from controller.netconfig import Policy
from tests.dataplane.packets import SWITCH_MAC, dlcp_header, host_ip, host_mac, ipv4_checksum
from tests.dataplane.tables import DlcpTables

# destination port (10.0.<p>.1) -> (member ports, spray flag of its group; None = plain next hop)
GROUPS = {9: ([2, 3, 4, 5], True), 10: ([6, 7, 8], False), 11: ([12], None)}
ACTIONS = {0: "forward", 1: "mark", 2: "drop"}


@dataclass(frozen=True)
class Outcome:
    queue: int | None          # None when dropped
    action: str                # forward | mark | drop | other-drop
    member: int | None         # index in the group's member list, None when dropped


def _ip(addr: str) -> int:
    a, b, c, d = (int(x) for x in addr.split("."))
    return (a << 24) | (b << 16) | (c << 8) | d


def install(pipeline, policy: Policy) -> DlcpTables:
    """What dlcpctl installs from ``policy``, plus the routes of GROUPS."""
    t = DlcpTables(pipeline)
    for rule in policy.priority_map:
        t.priority_rule(rule.queue, rule.priority, **rule.match)
    for (queue, mag), (drop, ecn) in policy.thresholds.items():
        t.thresholds(queue, mag, drop, ecn)
    for port in policy.udp_ports:
        t.dlcp_port(port)
    for gid, (dst, (ports, spray)) in enumerate(GROUPS.items(), start=1):
        for p in ports:
            t.nexthop(p, p)
        prefix = _ip(host_ip(dst)) & 0xFFFFFF00
        if spray is None:
            t.route(prefix, 24, ports[0])
        else:
            t.group(gid, ports, spray)
            t.route_group(prefix, 24, gid)
    return t


def _mac(text: str) -> bytes:
    return bytes.fromhex(text.replace(":", ""))


def frame(src: int, dst: int, proto: int, ecn: int, l4: bytes) -> bytes:
    """Ethernet/IPv4 (valid header checksum) around ``l4``, from the host behind port ``src`` to the
    one behind ``dst`` (tests/dataplane/packets.py addressing; struct, not scapy: 10,000 packets)."""
    ip = bytearray(struct.pack("!BBHHHBBH4s4s", 0x45, ecn, 20 + len(l4), 1, 0, 64, proto, 0,
                               bytes([10, 0, src, 1]), bytes([10, 0, dst, 1])))
    ip[10:12] = ipv4_checksum(bytes(ip)).to_bytes(2, "big")
    return _mac(SWITCH_MAC) + _mac(host_mac(src)) + b"\x08\x00" + bytes(ip) + l4


def udp(sport: int, dport: int, payload: bytes) -> bytes:
    return struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload


def random_packet(rng: random.Random, policy: Policy) -> tuple[bytes, int]:
    """(frame, destination port key of GROUPS): well-formed DLCP of every message type, tag and
    flag on every DLCP port, plain UDP (half DLCP-shaped, on other ports), TCP; random 5-tuples and
    ECN codepoints."""
    dst = rng.choice(list(GROUPS))
    src = rng.randrange(20, 250)
    ecn = rng.randrange(4)
    kind = rng.random()
    sport = rng.randrange(1, 65536)
    dlcp_ports = (9290, *policy.udp_ports)
    if kind < 0.7:
        msg = 0 if rng.random() < 0.7 else rng.randrange(1, 5)
        count = rng.randrange(1, 64) if msg == 0 else 0
        hdr = dlcp_header(msg_type=msg, layer_class=rng.randrange(8), mag_class=rng.randrange(16),
                          flags=rng.randrange(256), seq=rng.getrandbits(32), offset=rng.getrandbits(32),
                          tensor_id=rng.randrange(1 << 16), count=count)
        payload = bytes(count * 4) if msg == 0 else b"ctl"      # DATA: udp.length = 8 + 24 + count * 4
        return frame(src, dst, 17, ecn, udp(sport, rng.choice(dlcp_ports), hdr + payload)), dst
    if kind < 0.85:
        dport = rng.randrange(1, 65536)
        while dport in dlcp_ports:     # malformed DLCP is validate.p4's business, not the model's
            dport = rng.randrange(1, 65536)
        payload = dlcp_header(seq=rng.getrandbits(32)) + bytes(16) if rng.random() < 0.5 else b"x" * 20
        return frame(src, dst, 17, ecn, udp(sport, dport, payload)), dst
    tcp = struct.pack("!HHIIBBHHH", sport, rng.randrange(1, 65536), rng.getrandbits(32), 0, 0x50, 0x18,
                      65535, 0, 0) + b"tcp-data"
    return frame(src, dst, 6, ecn, tcp), dst


def random_depths(rng: random.Random, policy: Policy) -> list[int]:
    """Depth of each of the 8 queues: around the policy's thresholds (both sides of each), or far."""
    edges = sorted({v for pair in policy.thresholds.values() for v in pair if v < 4096}) or [0]
    out = []
    for _ in range(8):
        r = rng.random()
        if r < 0.6:
            out.append(max(0, rng.choice(edges) + rng.randrange(-1, 2)))
        elif r < 0.9:
            out.append(rng.randrange(0, 100))
        else:
            out.append(rng.randrange(0, 1 << 19))
    return out


def _counter_total(pipeline, name: str) -> int:
    return sum(cell[0] for cell in pipeline.counters[name].cells)


def p4sim_outcome(path, pipeline, tables: DlcpTables, frame: bytes, dst: int, depths: list[int]) -> Outcome:
    ports = GROUPS[dst][0]
    for p in ports:
        for q in range(8):
            tables.queue_depth(p, q, depths[q], 0)          # fresh: ingress runs at t = 0
    drops = _counter_total(pipeline, "DlcpIngress.selective_drops")
    marks = _counter_total(pipeline, "DlcpIngress.ecn_marks")
    out = path.ingress(frame, 1, 0)
    if not out:
        selective = _counter_total(pipeline, "DlcpIngress.selective_drops") > drops
        return Outcome(None, "drop" if selective else "other-drop", None)
    (q,) = out
    marked = _counter_total(pipeline, "DlcpIngress.ecn_marks") > marks
    return Outcome(q.priority, "mark" if marked else "forward", ports.index(q.egress_port))


def model_outcome(sim, cpol, frame: bytes, dst: int, depths: list[int]) -> tuple[Outcome, bool, int]:
    """(outcome, sprayed, the queue it chose even when it dropped) from dlcpsim::DecideRaw on the frame's IPv4 fields and L4 bytes."""
    ports, spray = GROUPS[dst]
    ihl = (frame[14] & 0x0F) * 4
    l4 = frame[14 + ihl:]
    d = sim.DecideRaw(cpol, array.array("B", l4), len(l4), frame[23], int.from_bytes(frame[26:30], "big"),
                      int.from_bytes(frame[30:34], "big"), frame[15] & 3, array.array("L", depths),
                      bool(spray), len(ports))
    action = ACTIONS[int(d.action)]
    if action == "drop":
        return Outcome(None, "drop", None), bool(d.sprayed), int(d.queue)
    return Outcome(int(d.queue), action, int(d.member)), bool(d.sprayed), int(d.queue)
