"""Write/Read semantics of every entity against real runtime objects (no gRPC): what is written
reads back identically, each refusal carries the spec's code and leaves nothing applied."""

from __future__ import annotations

import grpc
import pytest
from p4.v1 import p4data_pb2, p4runtime_pb2

from p4sim.p4runtime_server.entities import apply_batch, apply_update, read_entities
from p4sim.p4runtime_server.errors import P4RuntimeError

T_EXACT, T_LPM, T_TERNARY, T_RANGE, T_OPTIONAL = 33554433, 33554434, 33554435, 33554436, 33554437
T_PROFILE, T_ECMP, T_CONST_DEFAULT = 33554438, 33554439, 33554440
A_DROP, A_FORWARD, A_MISS = 16777217, 16777218, 16777219
PROFILE, SELECTOR = 285212673, 285212674
COUNTER, DIRECT_COUNTER, METER, DIRECT_METER = 302011393, 318767105, 335544321, 352321537
REGISTER, DIGEST, VALUE_SET = 369098753, 385875969, 50331649
U = p4runtime_pb2.Update


def forward(port: int = 1, mac: int = 0xAA) -> p4runtime_pb2.Action:
    a = p4runtime_pb2.Action(action_id=A_FORWARD)
    a.params.add(param_id=1, value=port.to_bytes(max(1, (port.bit_length() + 7) // 8), "big"))
    a.params.add(param_id=2, value=mac.to_bytes(max(1, (mac.bit_length() + 7) // 8), "big"))
    return a


def entry(table_id: int, fields: list[p4runtime_pb2.FieldMatch], action=None, priority: int = 0,
          **kw) -> p4runtime_pb2.TableEntry:
    e = p4runtime_pb2.TableEntry(table_id=table_id, priority=priority, **kw)
    e.match.extend(fields)
    if action is not None:
        e.action.action.CopyFrom(action)
    return e


def ex(field_id: int, value: bytes) -> p4runtime_pb2.FieldMatch:
    return p4runtime_pb2.FieldMatch(field_id=field_id, exact=p4runtime_pb2.FieldMatch.Exact(value=value))


def tern(field_id: int, value: bytes, mask: bytes) -> p4runtime_pb2.FieldMatch:
    return p4runtime_pb2.FieldMatch(field_id=field_id,
                                    ternary=p4runtime_pb2.FieldMatch.Ternary(value=value, mask=mask))


def update(kind: int, **entity) -> p4runtime_pb2.Update:
    return p4runtime_pb2.Update(type=kind, entity=p4runtime_pb2.Entity(**entity))


def write(session, pipeline, *updates) -> list:
    return apply_batch(session, pipeline, list(updates))


def read(session, pipeline, **entity) -> list:
    out = []
    for response in read_entities(session, pipeline, [p4runtime_pb2.Entity(**entity)]):
        out.extend(p4runtime_pb2.ReadResponse.FromString(response).entities)
    return out


def code_of(session, pipeline, upd) -> grpc.StatusCode:
    with pytest.raises(P4RuntimeError) as info:
        apply_update(session, pipeline, upd)
    return info.value.code


EXACT_ENTRY = entry(T_EXACT, [ex(1, b"\x0a\x00\x00\x00\x00\x01"), ex(2, b"\x01")], forward())
LPM_ENTRY = entry(T_LPM, [p4runtime_pb2.FieldMatch(field_id=1, lpm=p4runtime_pb2.FieldMatch.LPM(
    value=b"\x0a\x01\x00\x00", prefix_len=16))], forward(2))
TERNARY_ENTRY = entry(T_TERNARY, [tern(1, b"\x0a\x00\x00\x00", b"\xff\x00\x00\x00")], forward(3), 10)
RANGE_ENTRY = entry(T_RANGE, [p4runtime_pb2.FieldMatch(field_id=1, range=p4runtime_pb2.FieldMatch.Range(
    low=b"\x10", high=b"\x20"))], forward(4), 5)
OPTIONAL_ENTRY = entry(T_OPTIONAL, [ex(2, b"\x07")], p4runtime_pb2.Action(action_id=A_DROP), 3)


def test_insert_every_match_kind_and_read_back(session, pipeline):
    entries = [EXACT_ENTRY, LPM_ENTRY, TERNARY_ENTRY, RANGE_ENTRY, OPTIONAL_ENTRY]
    assert write(session, pipeline, *[update(U.INSERT, table_entry=e) for e in entries]) == []
    got = read(session, pipeline, table_entry=p4runtime_pb2.TableEntry())
    assert sorted(g.table_entry.SerializeToString() for g in got) == \
        sorted(e.SerializeToString() for e in entries)
    # one table; one entry by its match
    assert [g.table_entry for g in read(session, pipeline, table_entry=p4runtime_pb2.TableEntry(
        table_id=T_LPM))] == [LPM_ENTRY]
    key_only = entry(T_TERNARY, list(TERNARY_ENTRY.match), priority=10)
    assert [g.table_entry for g in read(session, pipeline, table_entry=key_only)] == [TERNARY_ENTRY]
    # the packet path sees them
    assert pipeline.tables["MyIngress.t_lpm"].lookup((0x0A01FFFF,)).action.args == (2, 0xAA)
    assert pipeline.tables["MyIngress.t_range"].lookup((0x15,)).priority == 5


def test_modify_delete_and_their_errors(session, pipeline):
    assert code_of(session, pipeline, update(U.MODIFY, table_entry=EXACT_ENTRY)) == grpc.StatusCode.NOT_FOUND
    assert code_of(session, pipeline, update(U.DELETE, table_entry=EXACT_ENTRY)) == grpc.StatusCode.NOT_FOUND
    apply_update(session, pipeline, update(U.INSERT, table_entry=EXACT_ENTRY))
    assert code_of(session, pipeline, update(U.INSERT, table_entry=EXACT_ENTRY)) == \
        grpc.StatusCode.ALREADY_EXISTS
    changed = entry(T_EXACT, list(EXACT_ENTRY.match), forward(9, 0xBB))
    apply_update(session, pipeline, update(U.MODIFY, table_entry=changed))
    assert [g.table_entry for g in read(session, pipeline, table_entry=p4runtime_pb2.TableEntry(
        table_id=T_EXACT))] == [changed]
    apply_update(session, pipeline, update(U.DELETE, table_entry=entry(T_EXACT, list(EXACT_ENTRY.match))))
    assert read(session, pipeline, table_entry=p4runtime_pb2.TableEntry(table_id=T_EXACT)) == []


def test_refusals_have_spec_codes_and_apply_nothing(session, pipeline):
    bad = grpc.StatusCode.INVALID_ARGUMENT
    no_priority = entry(T_TERNARY, list(TERNARY_ENTRY.match), forward())
    assert code_of(session, pipeline, update(U.INSERT, table_entry=no_priority)) == bad
    stray_priority = entry(T_EXACT, list(EXACT_ENTRY.match), forward(), 4)
    assert code_of(session, pipeline, update(U.INSERT, table_entry=stray_priority)) == bad
    padded = entry(T_EXACT, [ex(1, b"\x00\x0a"), ex(2, b"\x01")], forward())
    assert code_of(session, pipeline, update(U.INSERT, table_entry=padded)) == bad
    assert code_of(session, pipeline, update(U.INSERT, table_entry=entry(99, [], forward()))) == bad
    wrong_action = entry(T_PROFILE, [ex(1, b"\x01")], forward())
    assert code_of(session, pipeline, update(U.INSERT, table_entry=wrong_action)) == bad
    idle = entry(T_EXACT, list(EXACT_ENTRY.match), forward(), idle_timeout_ns=10)
    assert code_of(session, pipeline, update(U.INSERT, table_entry=idle)) == grpc.StatusCode.UNIMPLEMENTED
    assert code_of(session, pipeline, p4runtime_pb2.Update(type=U.INSERT)) == bad
    assert all(len(t) == 0 for t in pipeline.tables.values())


def test_table_full_is_resource_exhausted(session, pipeline):
    results = write(session, pipeline, *[
        update(U.INSERT, table_entry=entry(T_EXACT, [ex(1, bytes([i + 1])), ex(2, b"\x01")], forward()))
        for i in range(5)])
    assert [r.code if r else None for r in results] == [None] * 4 + [grpc.StatusCode.RESOURCE_EXHAUSTED]
    assert len(pipeline.tables["MyIngress.t_exact"]) == 4


def test_batch_continues_after_error(session, pipeline):
    results = write(session, pipeline, update(U.INSERT, table_entry=EXACT_ENTRY),
                    update(U.INSERT, table_entry=EXACT_ENTRY), update(U.INSERT, table_entry=LPM_ENTRY))
    assert [r.code if r else None for r in results] == [None, grpc.StatusCode.ALREADY_EXISTS, None]
    assert len(pipeline.tables["MyIngress.t_lpm"]) == 1


def test_default_entry(session, pipeline):
    default = p4runtime_pb2.TableEntry(table_id=T_EXACT, is_default_action=True)
    default.action.action.CopyFrom(p4runtime_pb2.Action(action_id=A_MISS))
    apply_update(session, pipeline, update(U.MODIFY, table_entry=default))
    assert pipeline.tables["MyIngress.t_exact"].default_action.name == "MyIngress.miss"
    got = read(session, pipeline, table_entry=p4runtime_pb2.TableEntry(table_id=T_EXACT, is_default_action=True))
    assert [g.table_entry for g in got] == [default]
    assert code_of(session, pipeline, update(U.INSERT, table_entry=default)) == grpc.StatusCode.INVALID_ARGUMENT
    const = p4runtime_pb2.TableEntry(table_id=T_CONST_DEFAULT, is_default_action=True)
    const.action.action.CopyFrom(p4runtime_pb2.Action(action_id=A_DROP))
    assert code_of(session, pipeline, update(U.MODIFY, table_entry=const)) == grpc.StatusCode.PERMISSION_DENIED
    # modify without action resets to the program's default
    apply_update(session, pipeline, update(U.MODIFY, table_entry=p4runtime_pb2.TableEntry(
        table_id=T_EXACT, is_default_action=True)))
    assert pipeline.tables["MyIngress.t_exact"].default_action is None


def test_action_profile_members_and_groups(session, pipeline):
    member = p4runtime_pb2.ActionProfileMember(action_profile_id=SELECTOR, member_id=1, action=forward(1))
    member2 = p4runtime_pb2.ActionProfileMember(action_profile_id=SELECTOR, member_id=2, action=forward(2))
    group = p4runtime_pb2.ActionProfileGroup(action_profile_id=SELECTOR, group_id=10)
    group.members.add(member_id=1, weight=1)
    group.members.add(member_id=2, weight=3)
    assert write(session, pipeline, update(U.INSERT, action_profile_member=member),
                 update(U.INSERT, action_profile_member=member2),
                 update(U.INSERT, action_profile_group=group)) == []
    assert [e.action_profile_group for e in read(session, pipeline, action_profile_group=
                                                 p4runtime_pb2.ActionProfileGroup())] == [group]
    assert len(read(session, pipeline, action_profile_member=p4runtime_pb2.ActionProfileMember())) == 2
    selector = pipeline.action_profiles["MyIngress.selector"]
    assert sorted(selector.select(10, h).args[0] for h in range(4)) == [1, 2, 2, 2]
    te = entry(T_ECMP, [ex(1, b"\x0a\x00\x00\x01")])
    te.action.action_profile_group_id = 10
    apply_update(session, pipeline, update(U.INSERT, table_entry=te))
    assert code_of(session, pipeline, update(U.DELETE, action_profile_group=group)) == \
        grpc.StatusCode.FAILED_PRECONDITION
    assert code_of(session, pipeline, update(U.DELETE, action_profile_member=member)) == \
        grpc.StatusCode.FAILED_PRECONDITION
    missing = entry(T_ECMP, [ex(1, b"\x0a\x00\x00\x02")])
    missing.action.action_profile_group_id = 77
    assert code_of(session, pipeline, update(U.INSERT, table_entry=missing)) == grpc.StatusCode.NOT_FOUND
    assert code_of(session, pipeline, update(U.INSERT, action_profile_member=member)) == \
        grpc.StatusCode.ALREADY_EXISTS


def test_one_shot_selector_programming(session, pipeline):
    te = entry(T_ECMP, [ex(1, b"\x0a\x00\x00\x01")])
    for port in (1, 2):
        te.action.action_profile_action_set.action_profile_actions.add(action=forward(port), weight=1)
    apply_update(session, pipeline, update(U.INSERT, table_entry=te))
    assert [g.table_entry for g in read(session, pipeline, table_entry=p4runtime_pb2.TableEntry(
        table_id=T_ECMP))] == [te]
    stored = pipeline.tables["MyIngress.t_ecmp"].lookup((0x0A000001,))
    selector = pipeline.action_profiles["MyIngress.selector"]
    assert {selector.select(stored.group_id, h).args[0] for h in range(2)} == {1, 2}
    # hidden members are not listed, and go away with the entry
    assert read(session, pipeline, action_profile_member=p4runtime_pb2.ActionProfileMember()) == []
    apply_update(session, pipeline, update(U.DELETE, table_entry=entry(T_ECMP, list(te.match))))
    assert selector.members == {} and selector.groups == {}


def test_counters_meters_registers(session, pipeline):
    c = p4runtime_pb2.CounterEntry(counter_id=COUNTER, data=p4runtime_pb2.CounterData(packet_count=3,
                                                                                     byte_count=300))
    c.index.index = 2
    m = p4runtime_pb2.MeterEntry(meter_id=METER, config=p4runtime_pb2.MeterConfig(
        cir=1000, cburst=100, pir=2000, pburst=200))
    m.index.index = 1
    r = p4runtime_pb2.RegisterEntry(register_id=REGISTER, data=p4data_pb2.P4Data(bitstring=b"\x12\x34"))
    r.index.index = 5
    assert write(session, pipeline, update(U.MODIFY, counter_entry=c), update(U.MODIFY, meter_entry=m),
                 update(U.MODIFY, register_entry=r)) == []
    assert pipeline.counters["MyIngress.port_counter"].cells[2] == [3, 300]
    assert pipeline.registers["MyIngress.reg"].read(5) == 0x1234
    one = p4runtime_pb2.CounterEntry(counter_id=COUNTER)
    one.index.index = 2
    assert [e.counter_entry for e in read(session, pipeline, counter_entry=one)] == [c]
    assert len(read(session, pipeline, counter_entry=p4runtime_pb2.CounterEntry())) == 8   # all cells
    one_m = p4runtime_pb2.MeterEntry(meter_id=METER)
    one_m.index.index = 1
    assert [e.meter_entry for e in read(session, pipeline, meter_entry=one_m)] == [m]
    one_r = p4runtime_pb2.RegisterEntry(register_id=REGISTER)
    one_r.index.index = 5
    assert [e.register_entry for e in read(session, pipeline, register_entry=one_r)] == [r]
    c.index.index = 8
    assert code_of(session, pipeline, update(U.MODIFY, counter_entry=c)) == grpc.StatusCode.INVALID_ARGUMENT
    assert code_of(session, pipeline, update(U.INSERT, register_entry=r)) == grpc.StatusCode.INVALID_ARGUMENT
    r.data.bitstring = b"\x01\x00\x00\x00\x00"
    assert code_of(session, pipeline, update(U.MODIFY, register_entry=r)) == grpc.StatusCode.INVALID_ARGUMENT


def test_direct_counter_and_meter(session, pipeline):
    apply_update(session, pipeline, update(U.INSERT, table_entry=TERNARY_ENTRY))
    dc = p4runtime_pb2.DirectCounterEntry(table_entry=entry(T_TERNARY, list(TERNARY_ENTRY.match), priority=10),
                                          data=p4runtime_pb2.CounterData(packet_count=7, byte_count=700))
    dm = p4runtime_pb2.DirectMeterEntry(table_entry=entry(T_TERNARY, list(TERNARY_ENTRY.match), priority=10),
                                        config=p4runtime_pb2.MeterConfig(cir=10, cburst=1, pir=20, pburst=2))
    assert write(session, pipeline, update(U.MODIFY, direct_counter_entry=dc),
                 update(U.MODIFY, direct_meter_entry=dm)) == []
    assert [e.direct_counter_entry for e in read(session, pipeline, direct_counter_entry=
                                                 p4runtime_pb2.DirectCounterEntry())] == [dc]
    assert [e.direct_meter_entry for e in read(session, pipeline, direct_meter_entry=
                                               p4runtime_pb2.DirectMeterEntry())] == [dm]
    with_counters = entry(T_TERNARY, [], counter_data=p4runtime_pb2.CounterData())
    got = read(session, pipeline, table_entry=with_counters)
    assert got[0].table_entry.counter_data.packet_count == 7
    assert not read(session, pipeline, table_entry=p4runtime_pb2.TableEntry(
        table_id=T_TERNARY))[0].table_entry.HasField("counter_data")
    assert code_of(session, pipeline, update(U.INSERT, direct_counter_entry=dc)) == \
        grpc.StatusCode.INVALID_ARGUMENT


def test_packet_replication_engine(session, pipeline):
    mc = p4runtime_pb2.MulticastGroupEntry(multicast_group_id=5)
    mc.replicas.add(instance=1, port=b"\x01")
    mc.replicas.add(instance=1, port=b"\x02")
    clone = p4runtime_pb2.CloneSessionEntry(session_id=100, class_of_service=2, packet_length_bytes=64)
    clone.replicas.add(instance=0, port=b"\x03")
    pre = p4runtime_pb2.PacketReplicationEngineEntry
    assert write(session, pipeline, update(U.INSERT, packet_replication_engine_entry=pre(multicast_group_entry=mc)),
                 update(U.INSERT, packet_replication_engine_entry=pre(clone_session_entry=clone))) == []
    assert pipeline.pre.replicate(5) == [(1, 1), (1, 2)]
    assert pipeline.pre.clone_targets(100) == [(0, 3)]
    got = read(session, pipeline, packet_replication_engine_entry=pre(
        multicast_group_entry=p4runtime_pb2.MulticastGroupEntry()))
    assert [g.packet_replication_engine_entry.multicast_group_entry for g in got] == [mc]
    assert code_of(session, pipeline, update(U.INSERT, packet_replication_engine_entry=pre(
        multicast_group_entry=mc))) == grpc.StatusCode.ALREADY_EXISTS
    apply_update(session, pipeline, update(U.DELETE, packet_replication_engine_entry=pre(
        multicast_group_entry=p4runtime_pb2.MulticastGroupEntry(multicast_group_id=5))))
    assert pipeline.pre.replicate(5) == []
    assert code_of(session, pipeline, update(U.DELETE, packet_replication_engine_entry=pre(
        multicast_group_entry=p4runtime_pb2.MulticastGroupEntry(multicast_group_id=5)))) == \
        grpc.StatusCode.NOT_FOUND


def test_value_set_and_digest_config(session, pipeline):
    if not pipeline.value_sets:
        pytest.skip("p4sim.backend.rt.ValueSet not built yet")
    vs = p4runtime_pb2.ValueSetEntry(value_set_id=VALUE_SET)
    vs.members.add().match.add(field_id=1, exact=p4runtime_pb2.FieldMatch.Exact(value=b"\x88\xb5"))
    apply_update(session, pipeline, update(U.MODIFY, value_set_entry=vs))
    assert pipeline.value_sets["MyParser.pvs"].matches((0x88B5,))
    assert [e.value_set_entry for e in read(session, pipeline, value_set_entry=
                                            p4runtime_pb2.ValueSetEntry(value_set_id=VALUE_SET))] == [vs]
    too_many = p4runtime_pb2.ValueSetEntry(value_set_id=VALUE_SET)
    for i in range(5):
        too_many.members.add().match.add(field_id=1, exact=p4runtime_pb2.FieldMatch.Exact(value=bytes([i + 1])))
    assert code_of(session, pipeline, update(U.MODIFY, value_set_entry=too_many)) == \
        grpc.StatusCode.RESOURCE_EXHAUSTED
    digest = p4runtime_pb2.DigestEntry(digest_id=DIGEST, config=p4runtime_pb2.DigestEntry.Config(
        max_timeout_ns=0, max_list_size=1, ack_timeout_ns=1000))
    apply_update(session, pipeline, update(U.INSERT, digest_entry=digest))
    assert [e.digest_entry for e in read(session, pipeline, digest_entry=p4runtime_pb2.DigestEntry())] == [digest]
    assert code_of(session, pipeline, update(U.INSERT, digest_entry=digest)) == grpc.StatusCode.ALREADY_EXISTS


def test_read_rejects_unknown_ids(session, pipeline):
    with pytest.raises(P4RuntimeError) as info:
        read(session, pipeline, table_entry=p4runtime_pb2.TableEntry(table_id=1234))
    assert info.value.code == grpc.StatusCode.INVALID_ARGUMENT
    with pytest.raises(P4RuntimeError):
        read(session, pipeline, counter_entry=p4runtime_pb2.CounterEntry(counter_id=1234))


def test_read_bytes_equal_protobuf_messages(session, pipeline):
    """Reads encode table entries straight to bytes; they must be what protobuf would build."""
    from p4sim.p4runtime_server.table_entries import read_table_entries
    member = p4runtime_pb2.ActionProfileMember(action_profile_id=SELECTOR, member_id=1, action=forward(1))
    group = p4runtime_pb2.ActionProfileGroup(action_profile_id=SELECTOR, group_id=10)
    group.members.add(member_id=1, weight=1)
    by_member = entry(T_ECMP, [ex(1, b"\x0a\x00\x00\x01")])
    by_member.action.action_profile_group_id = 10
    one_shot = entry(T_ECMP, [ex(1, b"\x0a\x00\x00\x02")])
    one_shot.action.action_profile_action_set.action_profile_actions.add(action=forward(7), weight=2)
    metered = entry(T_TERNARY, [tern(2, b"\x06", b"\xff")], forward(5), 3,
                    counter_data=p4runtime_pb2.CounterData(packet_count=4, byte_count=400),
                    meter_config=p4runtime_pb2.MeterConfig(cir=100, cburst=10, pir=200, pburst=20),
                    controller_metadata=77, metadata=b"\x00opaque")
    assert write(session, pipeline, *[update(U.INSERT, table_entry=e) for e in
                                      (EXACT_ENTRY, LPM_ENTRY, TERNARY_ENTRY, RANGE_ENTRY, OPTIONAL_ENTRY)],
                 update(U.INSERT, action_profile_member=member), update(U.INSERT, action_profile_group=group),
                 update(U.INSERT, table_entry=by_member), update(U.INSERT, table_entry=one_shot),
                 update(U.INSERT, table_entry=metered)) == []
    requests = [p4runtime_pb2.TableEntry(),
                p4runtime_pb2.TableEntry(table_id=T_TERNARY, counter_data=p4runtime_pb2.CounterData(),
                                         meter_config=p4runtime_pb2.MeterConfig()),
                p4runtime_pb2.TableEntry(table_id=T_EXACT, is_default_action=True)]
    for request in requests:
        fast = [e.table_entry for e in read(session, pipeline, table_entry=request)]
        slow = list(read_table_entries(session, pipeline, request))
        assert fast == slow and len(fast) > 0
        assert [e.SerializeToString() for e in fast] == [e.SerializeToString() for e in slow]
    assert metered in [e.table_entry for e in read(session, pipeline, table_entry=requests[1])]


def snapshot(session, pipeline) -> list[bytes]:
    """Everything a client can read, as bytes (order-insensitive)."""
    pre = p4runtime_pb2.PacketReplicationEngineEntry
    out = []
    for entity in (dict(table_entry=entry(0, [], counter_data=p4runtime_pb2.CounterData(),
                                          meter_config=p4runtime_pb2.MeterConfig())),
                   dict(table_entry=p4runtime_pb2.TableEntry(table_id=T_EXACT, is_default_action=True)),
                   dict(action_profile_member=p4runtime_pb2.ActionProfileMember()),
                   dict(action_profile_group=p4runtime_pb2.ActionProfileGroup()),
                   dict(counter_entry=p4runtime_pb2.CounterEntry()),
                   dict(meter_entry=p4runtime_pb2.MeterEntry()),
                   dict(register_entry=p4runtime_pb2.RegisterEntry()),
                   dict(packet_replication_engine_entry=pre(multicast_group_entry=p4runtime_pb2.MulticastGroupEntry())),
                   dict(packet_replication_engine_entry=pre(clone_session_entry=p4runtime_pb2.CloneSessionEntry())),
                   dict(digest_entry=p4runtime_pb2.DigestEntry())):
        out.extend(sorted(e.SerializeToString() for e in read(session, pipeline, **entity)))
    return out


def test_atomic_batch_rolls_everything_back(session, pipeline):
    from p4sim.p4runtime_server.atomic import apply_atomic_batch
    metered = entry(T_TERNARY, list(TERNARY_ENTRY.match), forward(3), 10,
                    counter_data=p4runtime_pb2.CounterData(packet_count=5, byte_count=50),
                    meter_config=p4runtime_pb2.MeterConfig(cir=10, cburst=1, pir=20, pburst=2))
    member = p4runtime_pb2.ActionProfileMember(action_profile_id=SELECTOR, member_id=1, action=forward(1))
    mc = p4runtime_pb2.PacketReplicationEngineEntry()
    mc.multicast_group_entry.multicast_group_id = 9
    mc.multicast_group_entry.replicas.add(instance=0, port=b"\x01")
    reg = p4runtime_pb2.RegisterEntry(register_id=REGISTER, data=p4data_pb2.P4Data(bitstring=b"\x07"))
    reg.index.index = 3
    default = p4runtime_pb2.TableEntry(table_id=T_EXACT, is_default_action=True)
    default.action.action.action_id = A_DROP
    assert write(session, pipeline, update(U.INSERT, table_entry=EXACT_ENTRY),
                 update(U.INSERT, table_entry=metered), update(U.INSERT, table_entry=RANGE_ENTRY),
                 update(U.INSERT, action_profile_member=member),
                 update(U.INSERT, packet_replication_engine_entry=mc),
                 update(U.MODIFY, register_entry=reg), update(U.MODIFY, table_entry=default)) == []
    before = snapshot(session, pipeline)
    counter = p4runtime_pb2.CounterEntry(counter_id=COUNTER, data=p4runtime_pb2.CounterData(packet_count=9))
    counter.index.index = 1
    reg2 = p4runtime_pb2.RegisterEntry(register_id=REGISTER, data=p4data_pb2.P4Data(bitstring=b"\x09"))
    mc2 = p4runtime_pb2.PacketReplicationEngineEntry()
    mc2.multicast_group_entry.multicast_group_id = 9
    member2 = p4runtime_pb2.ActionProfileMember(action_profile_id=SELECTOR, member_id=1, action=forward(2))
    new_default = p4runtime_pb2.TableEntry(table_id=T_EXACT, is_default_action=True)
    new_default.action.action.action_id = A_MISS
    batch = [update(U.INSERT, table_entry=LPM_ENTRY),
             update(U.MODIFY, table_entry=entry(T_TERNARY, list(TERNARY_ENTRY.match), forward(7), 10)),
             update(U.DELETE, table_entry=entry(T_RANGE, list(RANGE_ENTRY.match), priority=5)),
             update(U.DELETE, table_entry=entry(T_EXACT, list(EXACT_ENTRY.match))),
             update(U.MODIFY, counter_entry=counter), update(U.MODIFY, register_entry=reg2),
             update(U.MODIFY, action_profile_member=member2),
             update(U.DELETE, packet_replication_engine_entry=mc2),
             update(U.MODIFY, table_entry=new_default),
             update(U.INSERT, table_entry=OPTIONAL_ENTRY),
             update(U.INSERT, table_entry=OPTIONAL_ENTRY)]          # fails: already exists
    results = apply_atomic_batch(session, pipeline, batch)
    assert [r.code for r in results] == [grpc.StatusCode.ABORTED] * 10 + [grpc.StatusCode.ALREADY_EXISTS]
    assert snapshot(session, pipeline) == before
    assert pipeline.tables["MyIngress.t_range"].lookup((0x15,)) is not None   # the packet path agrees
    assert apply_atomic_batch(session, pipeline, batch[:-1]) == []
    assert snapshot(session, pipeline) != before


def test_controller_metadata_is_kept_and_read_back(session, pipeline):
    tagged = entry(T_LPM, list(LPM_ENTRY.match), forward(2), controller_metadata=2**40, metadata=b"cookie")
    apply_update(session, pipeline, update(U.INSERT, table_entry=tagged))
    assert [e.table_entry for e in read(session, pipeline, table_entry=p4runtime_pb2.TableEntry(
        table_id=T_LPM))] == [tagged]
    apply_update(session, pipeline, update(U.MODIFY, table_entry=LPM_ENTRY))     # carries none: cleared
    assert [e.table_entry for e in read(session, pipeline, table_entry=p4runtime_pb2.TableEntry(
        table_id=T_LPM))] == [LPM_ENTRY]
