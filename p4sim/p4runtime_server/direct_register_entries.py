"""Write and Read of Tofino DirectRegister cells: ``ExternEntry`` of bf-p4c's DirectRegister type.

Why it exists: P4Runtime has no direct-register message; a TNA program's ``DirectRegister`` is an
extern instance in P4Info (type id 0x8C, as bf-p4c lists it; ``p4sim.tna.p4info_ext``) with one cell
per entry of its table. A controller reads and resets those cells the way it does direct counters:

* Write (MODIFY only, the cell exists with its entry): ``ExternEntry{extern_type_id: 0x8C,
  extern_id: <instance>, entry: Any(p4sim.tna.DirectRegisterEntry{table_entry, data})}``; the
  table entry (table id, match, priority) must exist (NOT_FOUND) in the register's own table;
  ``data`` is a bitstring of at most the cell's width.
* Read: ``extern_id`` 0 is every DirectRegister; ``entry`` unset (or a ``table_entry`` without a
  match) every entry of the table; a match names one entry. Each answer is one ExternEntry per
  table entry, the cell in ``data`` (0 until written, as in the data plane).

The other Tofino extern types are served by ``tna_extern_entries``, which dispatches by type.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import grpc
from google.protobuf.message import DecodeError
from p4.v1 import p4runtime_pb2

from p4sim.p4runtime_server.codec import decode_int, encode_int
from p4sim.p4runtime_server.errors import P4RuntimeError, invalid
from p4sim.p4runtime_server.session import PipelineSession
from p4sim.p4runtime_server.table_entries import _existing_entry, _fill_entry, select_table_entries
from p4sim.tna.p4info_ext import DIRECT_REGISTER_TYPE_ID, BarefootDirectRegister, DirectRegisterEntry

__all__ = ["write_extern_entry", "read_extern_entries", "cell_key", "unpack_entry"]

Update = p4runtime_pb2.Update


@dataclass(frozen=True)
class _DirectRegisterInfo:
    id: int
    name: str
    bitwidth: int
    table_id: int


def _direct_registers(session: PipelineSession) -> dict[int, _DirectRegisterInfo]:
    found: dict[int, _DirectRegisterInfo] = {}
    for ext in session.p4info.externs:
        if ext.extern_type_id != DIRECT_REGISTER_TYPE_ID:
            continue
        for inst in ext.instances:
            spec = BarefootDirectRegister()
            inst.info.Unpack(spec)
            pid = inst.preamble.id
            table_id = next((t.id for t in session.index.tables.values() if pid in _resources(session, t.id)), 0)
            found[pid] = _DirectRegisterInfo(pid, inst.preamble.name, spec.type_spec.bitstring.bit.bitwidth, table_id)
    return found


def _resources(session: PipelineSession, table_id: int) -> list[int]:
    return next((list(t.direct_resource_ids) for t in session.p4info.tables if t.preamble.id == table_id), [])


def _check_type(msg: p4runtime_pb2.ExternEntry) -> None:
    if msg.extern_type_id != DIRECT_REGISTER_TYPE_ID:
        raise P4RuntimeError(grpc.StatusCode.UNIMPLEMENTED,
                             f"extern type {msg.extern_type_id:#x}: only DirectRegister ({DIRECT_REGISTER_TYPE_ID:#x}) "
                             f"entries are supported")


def _instance(session: PipelineSession, pipeline, extern_id: int) -> tuple[_DirectRegisterInfo, object]:
    info = _direct_registers(session).get(extern_id)
    if info is None:
        raise invalid(f"unknown DirectRegister id {extern_id}")
    cells = getattr(pipeline, "direct_registers", {}).get(info.name)
    if cells is None or not info.table_id:
        raise P4RuntimeError(grpc.StatusCode.INTERNAL, f"DirectRegister '{info.name}' missing from the pipeline")
    return info, cells


def unpack_entry(msg: p4runtime_pb2.ExternEntry, cls, what: str):
    """``msg.entry`` unpacked as ``cls`` (an empty ``cls`` when unset); INVALID_ARGUMENT when it
    is another type or does not decode."""
    entry = cls()
    try:
        unpacked = not msg.HasField("entry") or msg.entry.Unpack(entry)
    except DecodeError:
        raise invalid(f"{what}: entry does not decode as {cls.DESCRIPTOR.full_name}") from None
    if not unpacked:
        raise invalid(f"{what}: entry is {msg.entry.type_url or 'empty'}, expected "
                      f"type.googleapis.com/{cls.DESCRIPTOR.full_name}")
    return entry


def _entry_msg(msg: p4runtime_pb2.ExternEntry, what: str):
    return unpack_entry(msg, DirectRegisterEntry, what)


def write_extern_entry(session: PipelineSession, pipeline, update_type: int,
                       msg: p4runtime_pb2.ExternEntry) -> None:
    _check_type(msg)
    info, cells = _instance(session, pipeline, msg.extern_id)
    what = f"DirectRegister '{info.name}'"
    if update_type != Update.MODIFY:
        raise invalid(f"{what}: direct register entries can only be modified")
    entry = _entry_msg(msg, what)
    if not msg.HasField("entry"):
        raise invalid(f"{what}: a write needs an entry (DirectRegisterEntry)")
    if entry.table_entry.table_id != info.table_id:
        raise invalid(f"{what}: belongs to table id {info.table_id}, not {entry.table_entry.table_id}")
    if entry.data.WhichOneof("data") != "bitstring":
        raise invalid(f"{what}: data must be a bitstring")
    value = decode_int(entry.data.bitstring, info.bitwidth, what)
    _, runtime_entry = _existing_entry(session, pipeline, entry.table_entry, what)
    cells.write(runtime_entry, value)


def read_extern_entries(session: PipelineSession, pipeline,
                        msg: p4runtime_pb2.ExternEntry) -> Iterator[p4runtime_pb2.ExternEntry]:
    _check_type(msg)
    wanted = [msg.extern_id] if msg.extern_id else sorted(_direct_registers(session))
    request = _entry_msg(msg, "DirectRegister read").table_entry
    for extern_id in wanted:
        info, cells = _instance(session, pipeline, extern_id)
        if request.table_id and request.table_id != info.table_id:
            raise invalid(f"DirectRegister '{info.name}': belongs to table id {info.table_id}, "
                          f"not {request.table_id}")
        sub = p4runtime_pb2.TableEntry()
        sub.CopyFrom(request)
        sub.table_id = info.table_id
        for item in select_table_entries(session, pipeline, sub):
            if item[1] is None:
                continue
            out = DirectRegisterEntry()
            _fill_entry(out.table_entry, session, item[0], item[1], sub)
            out.table_entry.ClearField("action")
            out.data.bitstring = encode_int(cells.read(item[1]))
            answer = p4runtime_pb2.ExternEntry(extern_type_id=DIRECT_REGISTER_TYPE_ID, extern_id=info.id)
            answer.entry.Pack(out)
            yield answer


def cell_key(msg: p4runtime_pb2.ExternEntry) -> p4runtime_pb2.ExternEntry:
    """The read request for the cells a write names (its table entry without the data): what an
    atomic batch reads before the write to undo it."""
    _check_type(msg)
    entry = _entry_msg(msg, "DirectRegister write")
    key = DirectRegisterEntry()
    te = entry.table_entry
    key.table_entry.table_id, key.table_entry.priority = te.table_id, te.priority
    key.table_entry.match.extend(te.match)
    out = p4runtime_pb2.ExternEntry(extern_type_id=msg.extern_type_id, extern_id=msg.extern_id)
    out.entry.Pack(key)
    return out
