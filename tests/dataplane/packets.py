"""Packet builders for the data-plane tests, written from docs/protocol.md.

Why this exists: the STF generator (make_stf.py) and the pipeline tests both
need DLCP packets and the packets the switch should send back.  The DLCP header
is packed here with struct, directly from the field table of the protocol doc,
NOT through host_agent/protocol.py, so these tests check the P4 program against
the spec rather than against another implementation of it.
"""

from __future__ import annotations

import struct

from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import ARP, Ether
from scapy.packet import Raw

DLCP_PORT = 9290
SWITCH_MAC = "02:dc:00:00:00:01"
ELEM_SIZE = {0: 4, 1: 2, 2: 2, 3: 1}


def host_mac(port: int) -> str:
    """MAC of the neighbour on switch port ``port``."""
    return f"00:00:00:00:{port:02x}:01"


def host_ip(port: int) -> str:
    """Address of the host behind port ``port`` (route 10.0.<port>.0/24)."""
    return f"10.0.{port}.1"


def dlcp_header(*, version: int = 1, msg_type: int = 0, layer_class: int = 0, mag_class: int = 0,
                flags: int = 0, dtype: int = 0, job_id: int = 7, worker_id: int = 1,
                iteration: int = 42, tensor_id: int = 3, count: int = 4, offset: int = 0,
                seq: int = 0) -> bytes:
    """The 24-byte DLCP header, network byte order (docs/protocol.md)."""
    return struct.pack(
        "!BBBBHHIHHII",
        (version << 4) | msg_type,
        (layer_class << 5) | mag_class,
        flags,
        dtype << 4,
        job_id, worker_id, iteration, tensor_id, count, offset, seq,
    )


def dlcp_packet(*, src_port: int = 1, dst_port: int = 2, udp_dport: int = DLCP_PORT, ttl: int = 64,
                dscp: int = 0, ecn: int = 0, payload: bytes | None = None, **fields: int) -> bytes:
    """Ethernet/IPv4/UDP/DLCP from the host on ``src_port`` to the one on ``dst_port``.

    Without ``payload`` a DATA-shaped payload of count * elem_size bytes follows."""
    hdr = dlcp_header(**fields)
    if payload is None:
        count = fields.get("count", 4)
        payload = bytes(range(256))[: count * ELEM_SIZE.get(fields.get("dtype", 0), 1)]
    pkt = (Ether(dst=SWITCH_MAC, src=host_mac(src_port))
           / IP(src=host_ip(src_port), dst=host_ip(dst_port), ttl=ttl, tos=(dscp << 2) | ecn, id=1)
           / UDP(sport=40000 + src_port, dport=udp_dport) / Raw(hdr + payload))
    return bytes(pkt)


def udp_packet(*, src_port: int = 1, dst_port: int = 2, ttl: int = 64, dscp: int = 0, ecn: int = 0,
               sport: int = 5000, dport: int = 6000, payload: bytes = b"plain-udp-payload") -> bytes:
    """An ordinary UDP packet."""
    return bytes(Ether(dst=SWITCH_MAC, src=host_mac(src_port))
                 / IP(src=host_ip(src_port), dst=host_ip(dst_port), ttl=ttl, tos=(dscp << 2) | ecn, id=1)
                 / UDP(sport=sport, dport=dport) / Raw(payload))


def tcp_packet(*, src_port: int = 1, dst_port: int = 2, ttl: int = 64, dscp: int = 0,
               sport: int = 33000, dport: int = 80, seq: int = 1000) -> bytes:
    """An ordinary TCP segment."""
    return bytes(Ether(dst=SWITCH_MAC, src=host_mac(src_port))
                 / IP(src=host_ip(src_port), dst=host_ip(dst_port), ttl=ttl, tos=dscp << 2, id=1)
                 / TCP(sport=sport, dport=dport, seq=seq, flags="PA") / Raw(b"tcp-data"))


def arp_packet(src_port: int = 1) -> bytes:
    """An ARP request (non-IPv4)."""
    return bytes(Ether(dst="ff:ff:ff:ff:ff:ff", src=host_mac(src_port))
                 / ARP(psrc=host_ip(src_port), pdst="10.0.0.254"))


def routed(data: bytes, out_port: int, *, dscp: int | None = None, ecn: int | None = None) -> bytes:
    """What the switch must send for ``data`` routed out of ``out_port`` (the spec's rewrite).

    MACs become (switch, neighbour), TTL drops by one, DSCP/ECN are replaced when given, the
    IPv4 header checksum is recomputed; L4 bytes (and their checksums) are untouched."""
    pkt = Ether(data)
    pkt[Ether].src = SWITCH_MAC
    pkt[Ether].dst = host_mac(out_port)
    ip = pkt[IP]
    ip.ttl -= 1
    tos_dscp = ip.tos >> 2 if dscp is None else dscp
    tos_ecn = ip.tos & 3 if ecn is None else ecn
    ip.tos = (tos_dscp << 2) | tos_ecn
    l4 = bytes(ip.payload)
    ip.remove_payload()
    del ip.chksum
    ip_bytes = bytes(IP(bytes(ip)))[: ip.ihl * 4]
    return bytes(pkt[Ether])[:14] + ip_bytes + l4


def ipv4_checksum(header: bytes) -> int:
    """RFC 791: one's complement of the one's complement sum of the header's 16-bit words."""
    total = sum(int.from_bytes(header[i:i + 2], "big") for i in range(0, len(header), 2))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def with_ipv4_fields(data: bytes, *, options: bytes = b"", version: int = 4, ihl: int | None = None,
                     checksum_over: int | None = None) -> bytes:
    """``data`` (Ethernet/IPv4 with a 20-byte header) with IPv4 ``options`` inserted (a multiple
    of 4 bytes), the version and IHL set (IHL defaults to the true header length) and the header
    checksum computed over the first ``checksum_over`` bytes (default: the whole header)."""
    assert len(options) % 4 == 0
    eth, ip, rest = data[:14], bytearray(data[14:34] + options), data[34:]
    ip[0] = (version << 4) | (len(ip) // 4 if ihl is None else ihl)
    ip[2:4] = (len(ip) + len(rest)).to_bytes(2, "big")
    ip[10:12] = b"\0\0"
    ip[10:12] = ipv4_checksum(bytes(ip[: checksum_over or len(ip)])).to_bytes(2, "big")
    return eth + bytes(ip) + rest

