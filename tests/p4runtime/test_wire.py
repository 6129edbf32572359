"""The fast WriteRequest decoder must read exactly what protobuf reads: same header, same table
entries, and protobuf's own verdict (DecodeError or a message) on damaged input."""

from __future__ import annotations

import random

import pytest
from google.protobuf.message import DecodeError
from p4.v1 import p4runtime_pb2

from p4sim.p4runtime_server.table_entries import EntrySpec
from p4sim.p4runtime_server.wire import TableUpdate, parse_write_request
from tests.p4runtime.test_entities import (
    EXACT_ENTRY,
    LPM_ENTRY,
    OPTIONAL_ENTRY,
    RANGE_ENTRY,
    T_ECMP,
    T_EXACT,
    TERNARY_ENTRY,
    entry,
    ex,
    forward,
    update,
)

U = p4runtime_pb2.Update


def normalized(batch) -> tuple:
    updates = []
    for u in batch.updates:
        if isinstance(u, TableUpdate):
            updates.append((u.type, u.spec))
        elif u.entity.WhichOneof("entity") == "table_entry":
            updates.append((u.type, EntrySpec.from_proto(u.entity.table_entry)))
        else:
            updates.append((u.type, u.SerializeToString()))
    return (batch.device_id, batch.role_id, batch.role, batch.election_id, batch.atomicity, updates)


def full(data: bytes) -> tuple:
    req = p4runtime_pb2.WriteRequest.FromString(data)
    eid = (req.election_id.high << 64) | req.election_id.low if req.HasField("election_id") else None
    updates = []
    for u in req.updates:
        if u.entity.WhichOneof("entity") == "table_entry":
            updates.append((u.type, EntrySpec.from_proto(u.entity.table_entry)))
        else:
            updates.append((u.type, u.SerializeToString()))
    return (req.device_id, req.role_id, req.role, eid, req.atomicity, updates)


def sample_request() -> p4runtime_pb2.WriteRequest:
    req = p4runtime_pb2.WriteRequest(device_id=7, role="ctl", atomicity=0)
    req.election_id.high, req.election_id.low = 1, 2
    member = entry(T_ECMP, [ex(1, b"\x0a\x00\x00\x01")])
    member.action.action_profile_member_id = 3
    one_shot = entry(T_ECMP, [ex(1, b"\x0a\x00\x00\x02")])
    one_shot.action.action_profile_action_set.action_profile_actions.add(action=forward(1), weight=2)
    default = p4runtime_pb2.TableEntry(table_id=T_EXACT, is_default_action=True)
    default.action.action.action_id = 16777219
    counted = entry(TERNARY_ENTRY.table_id, list(TERNARY_ENTRY.match), forward(), 10,
                    counter_data=p4runtime_pb2.CounterData(packet_count=1))
    for e in (EXACT_ENTRY, LPM_ENTRY, TERNARY_ENTRY, RANGE_ENTRY, OPTIONAL_ENTRY, member, one_shot, default,
              counted, entry(T_EXACT, list(EXACT_ENTRY.match), priority=-5),
              entry(T_EXACT, list(EXACT_ENTRY.match), forward(), controller_metadata=9, metadata=b"m")):
        req.updates.append(update(U.INSERT, table_entry=e))
    c = p4runtime_pb2.CounterEntry(counter_id=1)
    req.updates.append(update(U.MODIFY, counter_entry=c))
    return req


def test_fast_path_reads_what_protobuf_reads():
    data = sample_request().SerializeToString()
    batch = parse_write_request(data)
    assert normalized(batch) == full(data)
    kinds = [type(u).__name__ for u in batch.updates]
    assert kinds[:5] == ["TableUpdate"] * 5          # plain entries take the fast path
    assert kinds[6] == "Update" and kinds[-1] == "Update"   # one-shot set and counters fall back


def test_damaged_requests_get_protobufs_verdict():
    data = sample_request().SerializeToString()
    rng = random.Random(1234)
    verdicts = {"same": 0, "error": 0}
    for _ in range(800):
        mutated = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            choice = rng.random()
            pos = rng.randrange(len(mutated))
            if choice < 0.6:
                mutated[pos] = rng.randrange(256)
            elif choice < 0.8:
                del mutated[pos:pos + rng.randint(1, 8)]
            else:
                mutated[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 4)))
        blob = bytes(mutated)
        try:
            expected = full(blob)
        except (DecodeError, UnicodeDecodeError):
            with pytest.raises((DecodeError, UnicodeDecodeError)):
                parse_write_request(blob)
            verdicts["error"] += 1
            continue
        assert normalized(parse_write_request(blob)) == expected
        verdicts["same"] += 1
    assert verdicts["same"] >= 10 and verdicts["error"] >= 10
