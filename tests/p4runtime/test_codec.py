"""The translation layer: P4Runtime bytes <-> ints, canonical checks, match/action decoding,
controller header packing. Pure functions over the fixture P4Info; no server."""

from __future__ import annotations

import grpc
import pytest
from p4.v1 import p4runtime_pb2

from p4sim.p4runtime_server.codec import (
    check_priority,
    decode_action,
    decode_int,
    decode_match,
    encode_int,
    encode_match,
    pack_bits,
    unpack_bits,
)
from p4sim.p4runtime_server.errors import P4RuntimeError
from p4sim.p4runtime_server.p4info_index import P4InfoIndex, check_compatible
from p4sim.p4runtime_server.packet_io import parse_packet_in, serialize_packet_out

T_EXACT, T_LPM, T_TERNARY, T_RANGE, T_OPTIONAL = 33554433, 33554434, 33554435, 33554436, 33554437
A_DROP, A_FORWARD, A_MISS = 16777217, 16777218, 16777219


@pytest.fixture
def index(p4info) -> P4InfoIndex:
    return P4InfoIndex(p4info)


def fm(field_id: int, **kind) -> p4runtime_pb2.FieldMatch:
    m = p4runtime_pb2.FieldMatch(field_id=field_id)
    (name, value), = kind.items()
    getattr(m, name).CopyFrom(value)
    return m


def exact(v: bytes):
    return p4runtime_pb2.FieldMatch.Exact(value=v)


def refused(code: grpc.StatusCode, fn, *args):
    with pytest.raises(P4RuntimeError) as info:
        fn(*args)
    assert info.value.code == code, info.value
    return info.value


def test_canonical_bytestrings():
    assert decode_int(b"\x00", 8, "x") == 0
    assert decode_int(b"\x01\x00", 9, "x") == 256
    assert encode_int(0) == b"\x00"
    assert encode_int(256) == b"\x01\x00"
    assert encode_int(0xFFFFFFFFFFFF) == b"\xff" * 6
    err = refused(grpc.StatusCode.INVALID_ARGUMENT, decode_int, b"\x00\x05", 32, "field f")
    assert "not canonical" in err.message and "field f" in err.message
    assert decode_int(b"\x00\x00\x00\x05", 32, "x") == 5        # legacy: padded to the full width
    refused(grpc.StatusCode.INVALID_ARGUMENT, decode_int, b"\x00\x00\x00\x00\x05", 32, "x")
    refused(grpc.StatusCode.INVALID_ARGUMENT, decode_int, b"", 8, "x")
    err = refused(grpc.StatusCode.INVALID_ARGUMENT, decode_int, b"\x02\x00", 9, "port")
    assert "9 bits" in err.message


def test_every_match_kind_round_trips(index):
    cases = {
        T_EXACT: [fm(1, exact=exact(b"\x0a\x00\x00\x00\x00\x01")), fm(2, exact=exact(b"\x01"))],
        T_LPM: [fm(1, lpm=p4runtime_pb2.FieldMatch.LPM(value=b"\x0a\x00\x00\x00", prefix_len=8))],
        T_TERNARY: [fm(1, ternary=p4runtime_pb2.FieldMatch.Ternary(value=b"\x0a\x00\x00\x00",
                                                                   mask=b"\xff\x00\x00\x00"))],
        T_RANGE: [fm(1, range=p4runtime_pb2.FieldMatch.Range(low=b"\x10", high=b"\x04\x00"))],
        T_OPTIONAL: [fm(1, optional=p4runtime_pb2.FieldMatch.Optional(value=b"\x40")),
                     fm(2, exact=exact(b"\x03"))],
    }
    expected = {
        T_EXACT: (("exact", 0x0A0000000001), ("exact", 1)),
        T_LPM: (("lpm", 0x0A000000, 8),),
        T_TERNARY: (("ternary", 0x0A000000, 0xFF000000), None),
        T_RANGE: (("range", 0x10, 0x400),),
        T_OPTIONAL: (("optional", 0x40), ("exact", 3)),
    }
    for table_id, fields in cases.items():
        info = index.table(table_id)
        match = decode_match(info, fields)
        assert match == expected[table_id]
        assert list(encode_match(info.keys, match)) == fields


def test_match_errors(index):
    lpm, tern, rng, ex = (index.table(T_LPM), index.table(T_TERNARY), index.table(T_RANGE),
                          index.table(T_EXACT))
    bad = grpc.StatusCode.INVALID_ARGUMENT
    err = refused(bad, decode_match, lpm, [fm(1, lpm=p4runtime_pb2.FieldMatch.LPM(
        value=b"\x0a\x00\x00\x01", prefix_len=8))])
    assert "beyond /8" in err.message
    refused(bad, decode_match, lpm, [fm(1, lpm=p4runtime_pb2.FieldMatch.LPM(value=b"\x00", prefix_len=0))])
    refused(bad, decode_match, lpm, [fm(1, lpm=p4runtime_pb2.FieldMatch.LPM(value=b"\x00", prefix_len=33))])
    err = refused(bad, decode_match, tern, [fm(1, ternary=p4runtime_pb2.FieldMatch.Ternary(
        value=b"\x0a\x00\x00\x01", mask=b"\xff\x00\x00\x00"))])
    assert "outside mask" in err.message
    refused(bad, decode_match, tern, [fm(1, ternary=p4runtime_pb2.FieldMatch.Ternary(
        value=b"\x00", mask=b"\x00"))])
    refused(bad, decode_match, rng, [fm(1, range=p4runtime_pb2.FieldMatch.Range(low=b"\x05", high=b"\x04"))])
    refused(bad, decode_match, rng, [fm(1, range=p4runtime_pb2.FieldMatch.Range(low=b"\x00",
                                                                                high=b"\xff\xff"))])
    err = refused(bad, decode_match, ex, [fm(1, exact=exact(b"\x01"))])
    assert "meta.port" in err.message and "missing" in err.message
    refused(bad, decode_match, ex, [fm(1, exact=exact(b"\x01")), fm(1, exact=exact(b"\x02")),
                                    fm(2, exact=exact(b"\x01"))])
    err = refused(bad, decode_match, ex, [fm(9, exact=exact(b"\x01"))])
    assert "unknown match field id 9" in err.message
    err = refused(bad, decode_match, lpm, [fm(1, exact=exact(b"\x01"))])
    assert "exact match given, the field is lpm" in err.message


def test_priority_rules(index):
    check_priority(index.table(T_TERNARY), 10)
    check_priority(index.table(T_EXACT), 0)
    check_priority(index.table(T_LPM), 0)
    refused(grpc.StatusCode.INVALID_ARGUMENT, check_priority, index.table(T_TERNARY), 0)
    refused(grpc.StatusCode.INVALID_ARGUMENT, check_priority, index.table(T_RANGE), 0)
    refused(grpc.StatusCode.INVALID_ARGUMENT, check_priority, index.table(T_OPTIONAL), 0)
    refused(grpc.StatusCode.INVALID_ARGUMENT, check_priority, index.table(T_EXACT), 5)


def test_action_decoding(index):
    table = index.table(T_EXACT)
    fwd = p4runtime_pb2.Action(action_id=A_FORWARD)
    fwd.params.add(param_id=1, value=b"\x01\x02")
    fwd.params.add(param_id=2, value=b"\xaa\xbb\xcc\xdd\xee\xff")
    assert decode_action(index, table, fwd) == ("MyIngress.forward", (0x102, 0xAABBCCDDEEFF))
    bad = grpc.StatusCode.INVALID_ARGUMENT
    refused(bad, decode_action, index, table, p4runtime_pb2.Action(action_id=12345))
    refused(bad, decode_action, index, table, p4runtime_pb2.Action(action_id=A_MISS))   # default only
    assert decode_action(index, table, p4runtime_pb2.Action(action_id=A_MISS), True)[0] == "MyIngress.miss"
    missing = p4runtime_pb2.Action(action_id=A_FORWARD)
    missing.params.add(param_id=1, value=b"\x01")
    assert "'mac' is missing" in refused(bad, decode_action, index, table, missing).message
    wide = p4runtime_pb2.Action(action_id=A_FORWARD)
    wide.params.add(param_id=1, value=b"\x02\x00")
    wide.params.add(param_id=2, value=b"\x01")
    assert "9 bits" in refused(bad, decode_action, index, table, wide).message


def test_bit_packing():
    assert pack_bits([(5, 9), (0, 7)]) == b"\x02\x80"
    assert unpack_bits(b"\x02\x80rest", [9, 7]) == [5, 0]
    assert pack_bits([(1, 1), (0x7F, 7), (0xABC, 12)]) == b"\xff\xab\xc0"
    assert unpack_bits(b"\xff\xab\xc0", [1, 7, 12]) == [1, 0x7F, 0xABC]


def test_packet_out_and_in_headers(index):
    out = p4runtime_pb2.PacketOut(payload=b"frame")
    out.metadata.add(metadata_id=1, value=b"\x01\x01")   # port 257
    out.metadata.add(metadata_id=2, value=b"\x00")
    data = serialize_packet_out(index.packet_out, out)
    assert data == (257 << 7).to_bytes(2, "big") + b"frame"
    missing = p4runtime_pb2.PacketOut(payload=b"x")
    missing.metadata.add(metadata_id=1, value=b"\x01")
    refused(grpc.StatusCode.INVALID_ARGUMENT, serialize_packet_out, index.packet_out, missing)
    pin = parse_packet_in(index.packet_in, (3 << 7).to_bytes(2, "big") + b"payload")
    assert pin.payload == b"payload"
    assert [(m.metadata_id, m.value) for m in pin.metadata] == [(1, b"\x03"), (2, b"\x00")]


def test_p4info_compatibility(p4info):
    from p4.config.v1 import p4info_pb2
    check_compatible(p4info, p4info)
    other = p4info_pb2.P4Info()
    other.CopyFrom(p4info)
    other.tables[0].match_fields[0].bitwidth = 32
    err = refused(grpc.StatusCode.INVALID_ARGUMENT, check_compatible, other, p4info)
    assert "MyIngress.t_exact" in err.message
    other.CopyFrom(p4info)
    del other.actions[2]
    refused(grpc.StatusCode.INVALID_ARGUMENT, check_compatible, other, p4info)
