"""The controller's own TableEntry encoder/decoder (controller/wire.py) against protobuf's.

Randomized entries of every match kind: ``encode_entry`` must give protobuf's serialization byte
for byte, and ``decode_read_response`` must give, field for field, the keys that protobuf's parsing
gives (``entry_key``/``action_key`` of the parsed message), including entries it does not model
(counter data, action profile members), which it hands to protobuf.
"""

from __future__ import annotations

import random

from p4.v1 import p4runtime_pb2

from controller import wire

KINDS = ("exact", "lpm", "ternary", "range", "optional")


def _value(rng: random.Random) -> bytes:
    number = rng.choice([0, 1, 255, 256, rng.getrandbits(rng.choice([7, 16, 32, 48, 64, 130]))])
    return number.to_bytes(max(1, (number.bit_length() + 7) // 8), "big")


def _random_parts(rng: random.Random) -> tuple:
    match = []
    for fid in rng.sample(range(1, 300), rng.randint(0, 4)):
        kind = rng.choice(KINDS)
        if kind == "lpm":
            match.append((fid, kind, _value(rng), rng.choice([1, 8, 24, 32, 127, 200])))
        elif kind in ("ternary", "range"):
            match.append((fid, kind, _value(rng), _value(rng)))
        else:
            match.append((fid, kind, _value(rng)))
    action_id = rng.choice([None, rng.getrandbits(32) or 1, 16777217])
    params = [(pid, _value(rng)) for pid in range(1, rng.randint(1, 5))] if action_id else []
    priority = rng.choice([0, 1, 1000, 2**31 - 1])
    return (rng.choice([1, 33554432, rng.getrandbits(32) or 7]), match, priority,
            rng.random() < 0.1, action_id, params)


def _proto(table_id, match, priority, is_default, action_id, params) -> p4runtime_pb2.TableEntry:
    entry = p4runtime_pb2.TableEntry(table_id=table_id, priority=priority, is_default_action=is_default)
    for fid, kind, *values in match:
        fm = entry.match.add(field_id=fid)
        if kind == "lpm":
            fm.lpm.value, fm.lpm.prefix_len = values
        elif kind == "ternary":
            fm.ternary.value, fm.ternary.mask = values
        elif kind == "range":
            fm.range.low, fm.range.high = values
        else:
            getattr(fm, kind).value = values[0]
    if action_id is not None:
        entry.action.action.action_id = action_id
        for pid, value in params:
            entry.action.action.params.add(param_id=pid, value=value)
    return entry


def test_encoder_is_byte_identical_to_protobuf():
    rng = random.Random(5)
    for _ in range(2000):
        parts = _random_parts(rng)
        ours = wire.encode_entry(*parts)
        theirs = _proto(*parts)
        assert ours.wire == theirs.SerializeToString(), parts
        assert ours.key == wire.entry_key(theirs)
        assert ours.akey == wire.action_key(theirs)
        assert ours.proto == theirs and ours.table_id == theirs.table_id


def _padded(entry: p4runtime_pb2.TableEntry, rng: random.Random) -> p4runtime_pb2.TableEntry:
    """What a switch may send back: width-padded values, fields in another order."""
    out = p4runtime_pb2.TableEntry()
    out.CopyFrom(entry)
    for p in out.action.action.params:
        p.value = b"\0" * rng.randint(0, 3) + p.value
    for fm in out.match:
        if fm.HasField("exact"):
            fm.exact.value = b"\0" * rng.randint(0, 3) + fm.exact.value
    out.match.reverse()
    return out


def test_read_response_decoder_agrees_with_protobuf_parsing():
    rng = random.Random(7)
    resp = p4runtime_pb2.ReadResponse()
    for i in range(1500):
        entry = _padded(_proto(*_random_parts(rng)), rng)
        if i % 50 == 3:   # fields the fast reader leaves to protobuf
            entry.counter_data.packet_count = i
        if i % 70 == 5:
            entry.action.ClearField("action")
            entry.action.action_profile_member_id = i
        if i % 90 == 7:
            entry.priority = -5
        resp.entities.add().table_entry.CopyFrom(entry)
    resp.entities.add().counter_entry.counter_id = 9          # not a table entry: skipped
    data = resp.SerializeToString()
    parsed = p4runtime_pb2.ReadResponse.FromString(data)
    ours = wire.decode_read_response(data)
    theirs = [e.table_entry for e in parsed.entities if e.HasField("table_entry")]
    assert len(ours) == len(theirs) == 1500
    for mine, proto in zip(ours, theirs, strict=True):
        assert mine.key == wire.entry_key(proto)
        assert mine.akey == wire.action_key(proto)
        assert (mine.table_id, mine.priority, mine.is_default_action) == \
            (proto.table_id, proto.priority, proto.is_default_action)
        assert mine.proto == proto
