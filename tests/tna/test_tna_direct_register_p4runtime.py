"""DirectRegister cells over real P4Runtime (gRPC) on a p4sim switch running a TNA program.

Why it exists (issue 15): P4Runtime has no direct-register message. p4sim lists a TNA program's
``DirectRegister`` in P4Info as bf-p4c does (an extern instance of type 0x8C ``DirectRegister``,
pipe-qualified name, ``barefoot.DirectRegister`` info, in its table's ``direct_resource_ids``) and
serves its cells as ``ExternEntry``s packing a ``p4sim.tna.DirectRegisterEntry`` (table entry +
cell), the way direct counters are served (docs/p4sim.md, "Tofino programs"). The program is the
one of test_tna_table_externs.py: table ``dst``'s action ``counted`` bumps the entry's cell with a
DirectRegisterAction. Budget: about 3 s.
"""

from __future__ import annotations

import grpc
import pytest
from p4.v1 import p4runtime_pb2

from controller.errors import WriteError
from p4sim.tna.p4info_ext import DIRECT_REGISTER_TYPE_ID, BarefootDirectRegister, DirectRegisterEntry
from tests.dataplane.p4rt_rig import Rig
from tests.tna.test_tna_table_externs import compiled, frame  # noqa: F401  (compiled: the program, a fixture)

Update = p4runtime_pb2.Update
A1, A3 = 0xA1, 0xA3


@pytest.fixture
def rig(compiled):  # noqa: F811
    r = Rig(compiled)
    yield r
    r.close()


def ids(p4info) -> tuple[int, int, int]:
    """(table dst's id, action counted's id, the DirectRegister's id) from the served P4Info."""
    table = next(t for t in p4info.tables if t.preamble.name == "pipe.I.dst")
    action = next(a for a in p4info.actions if a.preamble.name == "pipe.I.counted")
    (ext,) = [e for e in p4info.externs if e.extern_type_id == DIRECT_REGISTER_TYPE_ID]
    return table.preamble.id, action.preamble.id, ext.instances[0].preamble.id


def dst_entry(table_id: int, dst: int, action_id: int | None = None, port: int = 3) -> p4runtime_pb2.TableEntry:
    entry = p4runtime_pb2.TableEntry(table_id=table_id)
    fm = entry.match.add(field_id=1)
    fm.exact.value = dst.to_bytes(1, "big")
    if action_id is not None:
        entry.action.action.action_id = action_id
        entry.action.action.params.add(param_id=1, value=port.to_bytes(1, "big"))
    return entry


def cell_update(reg_id: int, table_entry: p4runtime_pb2.TableEntry, value: bytes,
                kind: int = Update.MODIFY) -> p4runtime_pb2.Update:
    cell = DirectRegisterEntry()
    cell.table_entry.CopyFrom(table_entry)
    cell.data.bitstring = value
    update = Update(type=kind)
    update.entity.extern_entry.extern_type_id = DIRECT_REGISTER_TYPE_ID
    update.entity.extern_entry.extern_id = reg_id
    update.entity.extern_entry.entry.Pack(cell)
    return update


def read_cells(rig: Rig, reg_id: int = 0, table_entry: p4runtime_pb2.TableEntry | None = None) -> dict[int, int]:
    """dst -> cell, as read over P4Runtime."""
    entity = p4runtime_pb2.Entity()
    entity.extern_entry.extern_type_id = DIRECT_REGISTER_TYPE_ID
    entity.extern_entry.extern_id = reg_id
    if table_entry is not None:
        entity.extern_entry.entry.Pack(DirectRegisterEntry(table_entry=table_entry))
    cells = {}
    for got in rig.client.read([entity]):
        cell = DirectRegisterEntry()
        assert got.extern_entry.entry.Unpack(cell)
        cells[int.from_bytes(cell.table_entry.match[0].exact.value, "big")] = int.from_bytes(cell.data.bitstring, "big")
    return cells


def send(rig: Rig, dst: int, port: int) -> None:
    assert len(rig.send_and_collect(frame(dst), 5.0, port=port)) == 1


def test_p4info_lists_the_direct_register_as_bf_p4c_does(rig) -> None:
    p4info, _ = rig.client.get_pipeline()
    table_id, _, reg_id = ids(p4info)
    (ext,) = [e for e in p4info.externs if e.extern_type_id == DIRECT_REGISTER_TYPE_ID]
    assert ext.extern_type_name == "DirectRegister" and reg_id >> 24 == 0x8C
    assert ext.instances[0].preamble.name == "pipe.I.dst_hits"
    info = BarefootDirectRegister()
    assert ext.instances[0].info.Unpack(info)
    assert info.data_field_name == "I.dst_hits" and info.type_spec.bitstring.bit.bitwidth == 32
    table = next(t for t in p4info.tables if t.preamble.id == table_id)
    assert reg_id in table.direct_resource_ids


def test_cells_are_read_and_written_per_entry(rig) -> None:
    p4info, _ = rig.client.get_pipeline()
    table_id, action_id, reg_id = ids(p4info)
    rig.write(Update.INSERT, [dst_entry(table_id, A1, action_id, 3), dst_entry(table_id, A3, action_id, 5)])
    assert read_cells(rig) == {A1: 0, A3: 0}
    for dst, port in ((A1, 3), (A1, 3), (A3, 5), (A1, 3)):
        send(rig, dst, port)
    assert read_cells(rig) == {A1: 3, A3: 1}
    assert read_cells(rig, reg_id, dst_entry(table_id, A3)) == {A3: 1}         # one entry by its match
    rig.client.write([cell_update(reg_id, dst_entry(table_id, A1), (100).to_bytes(1, "big"))])
    send(rig, A1, 3)
    assert read_cells(rig, reg_id) == {A1: 101, A3: 1}         # the data plane continues from the write
    # a deleted and re-added entry starts from 0 again
    rig.write(Update.DELETE, [dst_entry(table_id, A3)])
    rig.write(Update.INSERT, [dst_entry(table_id, A3, action_id, 5)])
    assert read_cells(rig) == {A1: 101, A3: 0}


def test_bad_writes_are_refused_with_the_reason_and_change_nothing(rig) -> None:
    p4info, _ = rig.client.get_pipeline()
    table_id, action_id, reg_id = ids(p4info)
    rig.write(Update.INSERT, [dst_entry(table_id, A1, action_id, 3)])
    cases = [
        (cell_update(reg_id, dst_entry(table_id, A1), b"\x05", Update.INSERT), "can only be modified"),
        (cell_update(reg_id, dst_entry(table_id, 0xA9), b"\x05"), "has no such entry"),
        (cell_update(reg_id, dst_entry(table_id, A1), (1 << 32).to_bytes(5, "big")), "does not fit in 32 bits"),
        (cell_update(reg_id + 1, dst_entry(table_id, A1), b"\x05"), f"unknown DirectRegister id {reg_id + 1}"),
    ]
    for update, reason in cases:
        with pytest.raises(WriteError, match=reason):
            rig.client.write([update])
    assert read_cells(rig) == {A1: 0}
    # an atomic batch whose second update fails leaves the cell as it was
    request = p4runtime_pb2.WriteRequest(device_id=rig.client.device_id, atomicity=p4runtime_pb2.WriteRequest.ROLLBACK_ON_ERROR)
    request.election_id.low = rig.client.election_id
    request.updates.extend([cell_update(reg_id, dst_entry(table_id, A1), b"\x07"),
                            cell_update(reg_id, dst_entry(table_id, 0xA9), b"\x07")])
    with pytest.raises(grpc.RpcError):
        rig.client._require_stub().Write(request)
    assert read_cells(rig) == {A1: 0}


def test_an_undecodable_entry_is_invalid_argument(rig) -> None:
    p4info, _ = rig.client.get_pipeline()
    _, _, reg_id = ids(p4info)
    update = Update(type=Update.MODIFY)
    update.entity.extern_entry.extern_type_id = DIRECT_REGISTER_TYPE_ID
    update.entity.extern_entry.extern_id = reg_id
    update.entity.extern_entry.entry.type_url = "type.googleapis.com/" + DirectRegisterEntry.DESCRIPTOR.full_name
    update.entity.extern_entry.entry.value = b"\x0a\xff"           # a length past the end
    with pytest.raises(WriteError, match="does not decode"):
        rig.client.write([update])


def test_other_extern_types_are_unimplemented(rig) -> None:
    entity = p4runtime_pb2.Entity()
    entity.extern_entry.extern_type_id = 0x8B           # a Tofino Register: served as RegisterEntry
    with pytest.raises(Exception, match="UNIMPLEMENTED"):
        list(rig.client.read([entity]))
