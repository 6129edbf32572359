"""Packet-out, packet-in and digest messages <-> the bytes and tuples the switch deals in.

A packet-out's metadata becomes the ``@controller_header("packet_out")`` header prepended to the
payload (fields in P4Info order, big-endian, bit-packed); the switch feeds that in on the CPU
port. A frame the program sends to the CPU port starts with the ``packet_in`` header, which is
split off into PacketIn metadata. Digest tuples become P4Data (a struct of bitstrings).
"""

from __future__ import annotations

from collections.abc import Sequence

from p4.v1 import p4data_pb2, p4runtime_pb2

from p4sim.p4runtime_server.codec import decode_int, encode_int, pack_bits, unpack_bits
from p4sim.p4runtime_server.errors import invalid
from p4sim.p4runtime_server.p4info_index import ObjectInfo, PacketMetadataInfo

__all__ = ["serialize_packet_out", "parse_packet_in", "digest_data"]


def serialize_packet_out(fields: list[PacketMetadataInfo] | None,
                         packet: p4runtime_pb2.PacketOut) -> bytes:
    """Header bytes + payload for a PacketOut; INVALID_ARGUMENT on unknown/missing/too-wide metadata."""
    if fields is None:
        if packet.metadata:
            raise invalid("packet-out carries metadata but the program has no packet_out header")
        return bytes(packet.payload)
    by_id = {f.id: f for f in fields}
    values: dict[int, int] = {}
    for md in packet.metadata:
        info = by_id.get(md.metadata_id)
        if info is None:
            raise invalid(f"packet-out: unknown metadata id {md.metadata_id}")
        if md.metadata_id in values:
            raise invalid(f"packet-out: metadata '{info.name}' given twice")
        values[md.metadata_id] = decode_int(md.value, info.bitwidth, f"packet-out metadata '{info.name}'")
    missing = [f.name for f in fields if f.id not in values]
    if missing:
        raise invalid(f"packet-out: metadata {', '.join(missing)} missing")
    header = pack_bits([(values[f.id], f.bitwidth) for f in fields])
    return header + bytes(packet.payload)


def parse_packet_in(fields: list[PacketMetadataInfo] | None, data: bytes) -> p4runtime_pb2.PacketIn:
    """PacketIn of a frame egressing on the CPU port (whole frame as payload without a header)."""
    out = p4runtime_pb2.PacketIn()
    if not fields:
        out.payload = data
        return out
    widths = [f.bitwidth for f in fields]
    nbytes = (sum(widths) + 7) // 8
    if len(data) < nbytes:
        out.payload = data
        return out
    for f, value in zip(fields, unpack_bits(data, widths), strict=True):
        out.metadata.add(metadata_id=f.id, value=encode_int(value))
    out.payload = data[nbytes:]
    return out


def digest_data(info: ObjectInfo, values: Sequence[int]) -> p4data_pb2.P4Data:
    """P4Data of one digest message: a struct of bitstrings (or one bitstring)."""
    if not info.is_struct and len(values) == 1:
        return p4data_pb2.P4Data(bitstring=encode_int(values[0]))
    data = p4data_pb2.P4Data()
    for v in values:
        data.struct.members.add(bitstring=encode_int(v))
    return data
