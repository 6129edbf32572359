"""Lpf, DirectLpf, Wred and DirectWred configured over real P4Runtime (gRPC) on a p4sim switch,
and the packets they then shape.

Why it exists (issue 15): P4Runtime has no message for Tofino's filters; p4sim serves them as
``ExternEntry``s packing ``p4sim.tna.LpfEntry``/``WredEntry`` (docs/p4sim.md, "Tofino programs").
The program is test_tna_lpf_wred.py's. Specs are chosen so the answer does not depend on the
switch's clock: a SAMPLE LPF with τ = 0 follows its input, so scale-down 3 gives ``x >> 3``; a
WRED with τ = 0 and max probability 1 drops above ``min``. Budget: about 4 s.
"""

from __future__ import annotations

import grpc
import pytest
from p4.v1 import p4runtime_pb2

from controller.errors import WriteError
from p4sim.tna import extern_messages as xm
from tests.dataplane.p4rt_rig import Rig
from tests.tna.test_tna_lpf_wred import frame, program  # noqa: F401  (program: the compiled program, a fixture)

Update = p4runtime_pb2.Update
SRC_A, DST_A = 0xA, 0xDA


@pytest.fixture
def rig(program):  # noqa: F811
    r = Rig(program)
    yield r
    r.close()


def ids(rig: Rig) -> dict[str, int]:
    p4info, _ = rig.client.get_pipeline()
    out = {i.preamble.name: i.preamble.id for e in p4info.externs for i in e.instances}
    out.update({t.preamble.name: t.preamble.id for t in p4info.tables})
    out.update({a.preamble.name: a.preamble.id for a in p4info.actions})
    return out


def table_entry(ids_: dict[str, int], table: str, key: int, action: str | None = None) -> p4runtime_pb2.TableEntry:
    entry = p4runtime_pb2.TableEntry(table_id=ids_[f"pipe.I.{table}"])
    entry.match.add(field_id=1).exact.value = key.to_bytes(1, "big")
    if action is not None:
        entry.action.action.action_id = ids_[f"pipe.I.{action}"]
    return entry


def update(type_id: int, extern_id: int, message, kind: int = Update.MODIFY) -> p4runtime_pb2.Update:
    u = Update(type=kind)
    u.entity.extern_entry.extern_type_id = type_id
    u.entity.extern_entry.extern_id = extern_id
    u.entity.extern_entry.entry.Pack(message)
    return u


def lpf_cell(index: int, **spec) -> xm.LpfEntry:
    cell = xm.LpfEntry(spec=xm.LpfSpecMsg(**spec)) if spec else xm.LpfEntry()
    cell.index.index = index
    return cell


def read(rig: Rig, type_id: int, extern_id: int = 0, message=None) -> list[p4runtime_pb2.ExternEntry]:
    entity = p4runtime_pb2.Entity()
    entity.extern_entry.extern_type_id = type_id
    entity.extern_entry.extern_id = extern_id
    if message is not None:
        entity.extern_entry.entry.Pack(message)
    return [e.extern_entry for e in rig.client.read([entity])]


def answers(rig: Rig, idx: int, x: int, src: int = 0x1, dst: int = 0x2) -> dict[str, int]:
    (out,) = rig.send_and_collect(frame(idx, x, src, dst), 5.0, port=2)
    return {"lpf": out[16], "dlpf": out[17], "dwred": out[18]}


def test_specs_written_over_p4runtime_shape_the_packets(rig) -> None:
    """Lpf cell 1 SAMPLE τ 0 scale 3 answers 200 >> 3 = 25 (cell 0, unconfigured, 200); a
    DirectLpf entry with scale 2 answers 200 >> 2 = 50; a DirectWred entry (min 10, max 20,
    probability 1, τ 0) answers its drop value 1 for 30 and 0 for 5. Each reads back."""
    n = ids(rig)
    lpf_id, dlpf_id, dwred_id = n["pipe.I.lpf"], n["pipe.I.dlpf"], n["pipe.I.dwred"]
    rig.client.write([update(xm.LPF_TYPE_ID, lpf_id, lpf_cell(1, output_scale_down_factor=3))])
    assert answers(rig, 1, 200)["lpf"] == 25 and answers(rig, 0, 200)["lpf"] == 200
    (got,) = read(rig, xm.LPF_TYPE_ID, lpf_id, lpf_cell(1))
    cell = xm.LpfEntry()
    assert got.entry.Unpack(cell) and cell.spec.output_scale_down_factor == 3 and cell.index.index == 1

    rig.write(Update.INSERT, [table_entry(n, "per_src", SRC_A, "smooth"), table_entry(n, "per_dst", DST_A, "judge")])
    spec = xm.LpfSpecMsg(type=xm.LPF_TYPE_SAMPLE, output_scale_down_factor=2)
    rig.client.write([update(xm.DIRECT_LPF_TYPE_ID, dlpf_id, xm.LpfEntry(table_entry=table_entry(n, "per_src", SRC_A),
                                                                      spec=spec))])
    assert answers(rig, 0, 200, src=SRC_A)["dlpf"] == 50
    wred = xm.WredSpecMsg(time_constant_ns=0, min_thresh_cells=10, max_thresh_cells=20, max_probability=1.0)
    rig.client.write([update(xm.DIRECT_WRED_TYPE_ID, dwred_id, xm.WredEntry(
        table_entry=table_entry(n, "per_dst", DST_A), spec=wred))])
    assert [answers(rig, 0, x, dst=DST_A)["dwred"] for x in (30, 5)] == [1, 0]
    (got,) = read(rig, xm.DIRECT_WRED_TYPE_ID, dwred_id)
    cell = xm.WredEntry()
    assert got.entry.Unpack(cell) and cell.spec == wred
    assert int.from_bytes(cell.table_entry.match[0].exact.value, "big") == DST_A
    # a read of extern type 0 covers every served type: 4 + 4 cells, one entry each, one port table
    kinds = [e.extern_type_id for e in read(rig, 0)]
    assert sorted(set(kinds)) == [xm.WRED_TYPE_ID, xm.DIRECT_WRED_TYPE_ID, xm.LPF_TYPE_ID, xm.DIRECT_LPF_TYPE_ID]
    assert (kinds.count(xm.LPF_TYPE_ID), kinds.count(xm.WRED_TYPE_ID), kinds.count(xm.DIRECT_LPF_TYPE_ID)) == (4, 4, 1)


def test_bad_writes_are_refused_with_the_reason_and_change_nothing(rig) -> None:
    n = ids(rig)
    lpf_id, dlpf_id, wred_id = n["pipe.I.lpf"], n["pipe.I.dlpf"], n["pipe.E.wred"]
    rig.write(Update.INSERT, [table_entry(n, "per_src", SRC_A, "smooth")])
    bad_wred = xm.WredEntry(spec=xm.WredSpecMsg(min_thresh_cells=30, max_thresh_cells=20))
    bad_wred.index.index = 0
    cases = [
        (update(xm.LPF_TYPE_ID, lpf_id, lpf_cell(1), Update.INSERT), "entries can only be modified"),
        (update(xm.LPF_TYPE_ID, lpf_id, lpf_cell(4)), r"index 4 out of range 0\.\.3"),
        (update(xm.LPF_TYPE_ID, lpf_id, xm.LpfEntry()), "a write needs an index"),
        (update(xm.LPF_TYPE_ID, lpf_id, lpf_cell(1, output_scale_down_factor=40)), "output_scale_down_factor 40"),
        (update(xm.LPF_TYPE_ID, lpf_id, lpf_cell(1, gain_time_constant_ns=-5.0)), "gain_time_constant_ns -5.0"),
        (update(xm.WRED_TYPE_ID, wred_id, bad_wred), "thresholds min 30, max 20"),
        (update(xm.LPF_TYPE_ID, lpf_id + 1, lpf_cell(1)), f"unknown Lpf id {lpf_id + 1}"),
        (update(xm.DIRECT_LPF_TYPE_ID, dlpf_id, xm.LpfEntry(table_entry=table_entry(n, "per_src", 0x77))),
         "has no such entry"),
        (update(xm.DIRECT_LPF_TYPE_ID, dlpf_id, xm.LpfEntry(table_entry=table_entry(n, "per_dst", SRC_A))),
         "belongs to table id"),
        (update(xm.LPF_TYPE_ID, lpf_id, xm.WredEntry()), "expected type.googleapis.com/p4sim.tna.LpfEntry"),
    ]
    for u, reason in cases:
        with pytest.raises(WriteError, match=reason):
            rig.client.write([u])
    assert all(_spec(e) == xm.LpfSpecMsg() for e in read(rig, xm.LPF_TYPE_ID, lpf_id))
    # an atomic batch whose second update fails leaves the first cell as it was
    request = p4runtime_pb2.WriteRequest(device_id=rig.client.device_id,
                                         atomicity=p4runtime_pb2.WriteRequest.ROLLBACK_ON_ERROR)
    request.election_id.low = rig.client.election_id
    request.updates.extend([update(xm.LPF_TYPE_ID, lpf_id, lpf_cell(2, output_scale_down_factor=5)),
                            update(xm.LPF_TYPE_ID, lpf_id, lpf_cell(9))])
    with pytest.raises(grpc.RpcError):
        rig.client._require_stub().Write(request)
    assert all(_spec(e) == xm.LpfSpecMsg() for e in read(rig, xm.LPF_TYPE_ID, lpf_id))
    with pytest.raises(Exception, match="UNIMPLEMENTED"):
        read(rig, 0x8B)                     # a Tofino Register: served as RegisterEntry


def _spec(entry: p4runtime_pb2.ExternEntry):
    cell = xm.LpfEntry()
    assert entry.entry.Unpack(cell)
    return cell.spec
