"""Write and Read of the Tofino externs P4Runtime has no message for, as ``ExternEntry``s: the
dispatcher by extern type, and Lpf, DirectLpf, Wred, DirectWred, RegisterParam and the
port-metadata table (DirectRegister: ``direct_register_entries``).

Why it exists: a TNA program's filters, parameters and port metadata are configured by the
control plane (Intel's driver: BfRuntime). bf-p4c lists them in ``P4Info.externs`` (type ids
0x87-0x8A, 0x8D, 0x90; ``p4sim.tna.p4info_ext``); p4sim serves them as ``ExternEntry{extern_type_id,
extern_id, entry}`` whose ``entry`` packs a ``p4sim.tna`` message (``p4sim.tna.extern_messages``):

* Lpf / Wred (indexed): MODIFY only (the cells always exist), ``LpfEntry{index, spec}`` /
  ``WredEntry{index, spec}``; no ``spec`` resets the cell to the driver's default (LPF: SAMPLE,
  time constants 0, scale 0, i.e. the input passes through; WRED: thresholds 0xff000000, never
  drops). A write restarts the cell's filter. Read: id 0 every instance, no index every cell.
* DirectLpf / DirectWred: MODIFY only, ``table_entry`` names an existing entry of the owning table
  (NOT_FOUND otherwise); read like DirectRegister: no match is every entry of the table.
* RegisterParam: MODIFY only, ``RegisterParamEntry{data}`` (a bitstring of at most its width);
  the data plane's ``read()`` gives it from the next packet on.
* PortMetadata (``pipe.<IngressParser>.$PORT_METADATA``): a table keyed by ingress port:
  INSERT (ALREADY_EXISTS if present), MODIFY and DELETE (NOT_FOUND if absent),
  ``PortMetadataEntry{ingress_port, data}``, ``data`` a bitstring of at most the port metadata
  header's width; a port without an entry gives the parser zeros. Read: no entry is every port.

Extern types p4sim does not serve are UNIMPLEMENTED; a read of type 0 covers every served type.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import grpc
from p4.v1 import p4runtime_pb2

from p4sim.errors import UserError
from p4sim.p4runtime_server import direct_register_entries as dr
from p4sim.p4runtime_server.codec import decode_int, encode_int
from p4sim.p4runtime_server.errors import P4RuntimeError, invalid, not_found
from p4sim.p4runtime_server.session import PipelineSession
from p4sim.p4runtime_server.table_entries import _existing_entry, _fill_entry, select_table_entries
from p4sim.tna import extern_messages as xm
from p4sim.tna.lpf_wred import LPF_RATE, LPF_SAMPLE, LpfSpec, WredSpec
from p4sim.tna.p4info_ext import DIRECT_REGISTER_TYPE_ID

__all__ = ["write_extern_entry", "read_extern_entries", "cell_key"]

Update = p4runtime_pb2.Update
ExternEntry = p4runtime_pb2.ExternEntry


@dataclass(frozen=True)
class _Kind:
    name: str                 # the P4Info extern type name
    entry: Any                # the p4sim.tna message packed in ExternEntry.entry
    info: Any                 # the barefoot message in P4Info
    write: Callable
    read: Callable
    key: Callable             # the entry naming what a write changes (for atomic undo)


@dataclass(frozen=True)
class _Instance:
    id: int
    name: str
    info: Any


def _instances(session: PipelineSession, type_id: int, kind: _Kind) -> dict[int, _Instance]:
    found = {}
    for ext in session.p4info.externs:
        if ext.extern_type_id == type_id:
            for inst in ext.instances:
                info = kind.info()
                inst.info.Unpack(info)
                found[inst.preamble.id] = _Instance(inst.preamble.id, inst.preamble.name, info)
    return found


def _runtime(pipeline, inst: _Instance) -> Any:
    obj = getattr(pipeline, "tna_externs", {}).get(inst.name)
    if obj is None:
        raise P4RuntimeError(grpc.StatusCode.INTERNAL, f"'{inst.name}' missing from the pipeline")
    return obj


def _unpack(msg: ExternEntry, kind: _Kind, what: str) -> Any:
    return dr.unpack_entry(msg, kind.entry, what)


def _modify_only(update_type: int, what: str) -> None:
    if update_type != Update.MODIFY:
        raise invalid(f"{what}: entries can only be modified")


def _answer(type_id: int, inst: _Instance, entry: Any) -> ExternEntry:
    out = ExternEntry(extern_type_id=type_id, extern_id=inst.id)
    out.entry.Pack(entry)
    return out


# ---- specs ---------------------------------------------------------------------------------------

def _lpf_spec(entry: Any, what: str) -> LpfSpec:
    if not entry.HasField("spec"):
        return LpfSpec()
    s = entry.spec
    spec = LpfSpec(LPF_RATE if s.type == xm.LPF_TYPE_RATE else LPF_SAMPLE, s.gain_time_constant_ns,
                   s.decay_time_constant_ns, s.output_scale_down_factor)
    if s.type not in (xm.LPF_TYPE_RATE, xm.LPF_TYPE_SAMPLE):
        raise invalid(f"{what}: LPF type {s.type}, expected SAMPLE (0) or RATE (1)")
    return _checked(spec, what)


def _wred_spec(entry: Any, what: str) -> WredSpec:
    if not entry.HasField("spec"):
        return WredSpec()
    s = entry.spec
    return _checked(WredSpec(s.time_constant_ns, s.min_thresh_cells, s.max_thresh_cells, s.max_probability), what)


def _checked(spec: Any, what: str) -> Any:
    try:
        return spec.check(what)
    except UserError as err:
        raise invalid(str(err)) from None


def _fill_spec(out: Any, spec: Any) -> None:
    if isinstance(spec, LpfSpec):
        out.spec.type = xm.LPF_TYPE_RATE if spec.type == LPF_RATE else xm.LPF_TYPE_SAMPLE
        out.spec.gain_time_constant_ns = spec.gain_time_constant_ns
        out.spec.decay_time_constant_ns = spec.decay_time_constant_ns
        out.spec.output_scale_down_factor = spec.output_scale_down_factor
    else:
        out.spec.time_constant_ns = spec.time_constant_ns
        out.spec.min_thresh_cells, out.spec.max_thresh_cells = spec.min_thresh, spec.max_thresh
        out.spec.max_probability = spec.max_probability


# ---- indexed filters: Lpf, Wred -------------------------------------------------------------------

def _indexed_write(kind: _Kind, to_spec: Callable) -> Callable:
    def write(session, pipeline, inst: _Instance, update_type: int, msg: ExternEntry) -> None:
        what = f"{kind.name} '{inst.name}'"
        _modify_only(update_type, what)
        entry = _unpack(msg, kind, what)
        if not entry.HasField("index"):
            raise invalid(f"{what}: a write needs an index")
        i = entry.index.index
        if not 0 <= i < inst.info.size:
            raise invalid(f"{what}: index {i} out of range 0..{inst.info.size - 1}")
        _runtime(pipeline, inst).configure(i, to_spec(entry, f"{what}[{i}]"))
    return write


def _indexed_read(kind: _Kind) -> Callable:
    def read(session, pipeline, inst: _Instance, type_id: int, request: Any) -> Iterator[ExternEntry]:
        obj = _runtime(pipeline, inst)
        if request.HasField("index"):
            i = request.index.index
            if not 0 <= i < inst.info.size:
                raise invalid(f"{kind.name} '{inst.name}': index {i} out of range 0..{inst.info.size - 1}")
            cells = range(i, i + 1)
        else:
            cells = range(inst.info.size)
        for i in cells:
            out = kind.entry()
            out.index.index = i
            _fill_spec(out, obj.specs[i])
            yield _answer(type_id, inst, out)
    return read


def _indexed_key(kind: _Kind) -> Callable:
    def key(entry: Any) -> Any:
        out = kind.entry()
        if entry.HasField("index"):
            out.index.index = entry.index.index
        return out
    return key


# ---- direct filters: DirectLpf, DirectWred -------------------------------------------------------

def _direct_write(kind: _Kind, to_spec: Callable) -> Callable:
    def write(session, pipeline, inst: _Instance, update_type: int, msg: ExternEntry) -> None:
        what = f"{kind.name} '{inst.name}'"
        _modify_only(update_type, what)
        entry = _unpack(msg, kind, what)
        if not entry.HasField("table_entry"):
            raise invalid(f"{what}: a write needs the table entry it belongs to")
        if entry.table_entry.table_id != inst.info.direct_table_id:
            raise invalid(f"{what}: belongs to table id {inst.info.direct_table_id}, "
                          f"not {entry.table_entry.table_id}")
        spec = to_spec(entry, what)
        _, runtime_entry = _existing_entry(session, pipeline, entry.table_entry, what)
        _runtime(pipeline, inst).configure(runtime_entry, spec)
    return write


def _direct_read(kind: _Kind) -> Callable:
    def read(session, pipeline, inst: _Instance, type_id: int, request: Any) -> Iterator[ExternEntry]:
        obj = _runtime(pipeline, inst)
        table_id = inst.info.direct_table_id
        if request.table_entry.table_id and request.table_entry.table_id != table_id:
            raise invalid(f"{kind.name} '{inst.name}': belongs to table id {table_id}, "
                          f"not {request.table_entry.table_id}")
        sub = p4runtime_pb2.TableEntry()
        sub.CopyFrom(request.table_entry)
        sub.table_id = table_id
        for item in select_table_entries(session, pipeline, sub):
            if item[1] is None:
                continue
            out = kind.entry()
            _fill_entry(out.table_entry, session, item[0], item[1], sub)
            out.table_entry.ClearField("action")
            _fill_spec(out, obj.spec(item[1]))
            yield _answer(type_id, inst, out)
    return read


def _direct_key(kind: _Kind) -> Callable:
    def key(entry: Any) -> Any:
        out = kind.entry()
        te = entry.table_entry
        out.table_entry.table_id, out.table_entry.priority = te.table_id, te.priority
        out.table_entry.match.extend(te.match)
        return out
    return key


# ---- RegisterParam ---------------------------------------------------------------------------------

def _param_write(session, pipeline, inst: _Instance, update_type: int, msg: ExternEntry) -> None:
    what = f"RegisterParam '{inst.name}'"
    _modify_only(update_type, what)
    entry = _unpack(msg, _KINDS[xm.REGISTER_PARAM_TYPE_ID], what)
    if entry.data.WhichOneof("data") != "bitstring":
        raise invalid(f"{what}: data must be a bitstring")
    param = _runtime(pipeline, inst)
    param.write(decode_int(entry.data.bitstring, param.bitwidth, what))


def _param_read(session, pipeline, inst: _Instance, type_id: int, request: Any) -> Iterator[ExternEntry]:
    out = xm.RegisterParamEntry()
    out.data.bitstring = encode_int(_runtime(pipeline, inst).value)
    yield _answer(type_id, inst, out)


# ---- the port-metadata table ----------------------------------------------------------------------

def _port_write(session, pipeline, inst: _Instance, update_type: int, msg: ExternEntry) -> None:
    what = f"port metadata '{inst.name}'"
    table = _runtime(pipeline, inst)
    if not msg.HasField("entry"):
        raise invalid(f"{what}: a write needs a PortMetadataEntry")
    entry = _unpack(msg, _KINDS[xm.PORT_METADATA_TYPE_ID], what)
    port = entry.ingress_port
    if port >= 1 << 9:
        raise invalid(f"{what}: ingress port {port} outside 0..511")
    present = table.get(port) is not None
    if update_type == Update.DELETE:
        if not present:
            raise not_found(f"{what}: no entry for ingress port {port}")
        table.delete(port)
        return
    if update_type == Update.INSERT and present:
        raise P4RuntimeError(grpc.StatusCode.ALREADY_EXISTS, f"{what}: ingress port {port} already has an entry")
    if update_type == Update.MODIFY and not present:
        raise not_found(f"{what}: no entry for ingress port {port}")
    if update_type not in (Update.INSERT, Update.MODIFY):
        raise invalid(f"{what}: update type {update_type}")
    if entry.data.WhichOneof("data") != "bitstring":
        raise invalid(f"{what}: data must be a bitstring (the port metadata, {table.data_width} bits)")
    table.set(port, decode_int(entry.data.bitstring, table.data_width, f"{what}, port {port}"))


def _port_read(session, pipeline, inst: _Instance, type_id: int, request: Any) -> Iterator[ExternEntry]:
    table = _runtime(pipeline, inst)
    ports = table.ports() if request is None else [request.ingress_port]
    for port in ports:
        value = table.get(port)
        if value is None:
            continue
        out = xm.PortMetadataEntry(ingress_port=port)
        out.data.bitstring = encode_int(value)
        yield _answer(type_id, inst, out)


def _port_key(entry: Any) -> Any:
    return xm.PortMetadataEntry(ingress_port=entry.ingress_port)


# ---- dispatch ----------------------------------------------------------------------------------------

def _kinds() -> dict[int, _Kind]:
    kinds: dict[int, _Kind] = {}
    for type_id, name, entry, info, to_spec, direct in (
            (xm.LPF_TYPE_ID, "Lpf", xm.LpfEntry, xm.BarefootLpf, _lpf_spec, False),
            (xm.DIRECT_LPF_TYPE_ID, "DirectLpf", xm.LpfEntry, xm.BarefootDirectLpf, _lpf_spec, True),
            (xm.WRED_TYPE_ID, "Wred", xm.WredEntry, xm.BarefootWred, _wred_spec, False),
            (xm.DIRECT_WRED_TYPE_ID, "DirectWred", xm.WredEntry, xm.BarefootDirectWred, _wred_spec, True)):
        proto = _Kind(name, entry, info, None, None, None)
        make = (_direct_write, _direct_read, _direct_key) if direct else (_indexed_write, _indexed_read, _indexed_key)
        kinds[type_id] = _Kind(name, entry, info, make[0](proto, to_spec), make[1](proto), make[2](proto))
    kinds[xm.REGISTER_PARAM_TYPE_ID] = _Kind("RegisterParam", xm.RegisterParamEntry, xm.BarefootRegisterParam,
                                             _param_write, _param_read, lambda entry: xm.RegisterParamEntry())
    kinds[xm.PORT_METADATA_TYPE_ID] = _Kind("PortMetadata", xm.PortMetadataEntry, xm.BarefootPortMetadata,
                                            _port_write, _port_read, _port_key)
    return kinds


_KINDS = _kinds()


def _kind(type_id: int) -> _Kind:
    kind = _KINDS.get(type_id)
    if kind is None:
        served = ", ".join(f"{t:#x}" for t in sorted([DIRECT_REGISTER_TYPE_ID, *_KINDS]))
        raise P4RuntimeError(grpc.StatusCode.UNIMPLEMENTED,
                             f"extern type {type_id:#x}: p4sim serves extern entries of types {served}")
    return kind


def _instance(session: PipelineSession, type_id: int, kind: _Kind, extern_id: int) -> _Instance:
    inst = _instances(session, type_id, kind).get(extern_id)
    if inst is None:
        raise invalid(f"unknown {kind.name} id {extern_id}")
    return inst


def write_extern_entry(session: PipelineSession, pipeline, update_type: int, msg: ExternEntry) -> None:
    if msg.extern_type_id == DIRECT_REGISTER_TYPE_ID:
        dr.write_extern_entry(session, pipeline, update_type, msg)
        return
    kind = _kind(msg.extern_type_id)
    inst = _instance(session, msg.extern_type_id, kind, msg.extern_id)
    kind.write(session, pipeline, inst, update_type, msg)


def read_extern_entries(session: PipelineSession, pipeline, msg: ExternEntry) -> Iterator[ExternEntry]:
    if msg.extern_type_id == 0:             # every served type
        for type_id in (DIRECT_REGISTER_TYPE_ID, *sorted(_KINDS)):
            yield from read_extern_entries(session, pipeline, ExternEntry(extern_type_id=type_id))
        return
    if msg.extern_type_id == DIRECT_REGISTER_TYPE_ID:
        yield from dr.read_extern_entries(session, pipeline, msg)
        return
    kind = _kind(msg.extern_type_id)
    if msg.extern_id:
        wanted = [_instance(session, msg.extern_type_id, kind, msg.extern_id)]
    else:
        wanted = list(_instances(session, msg.extern_type_id, kind).values())
    for inst in wanted:
        # no entry: everything the instance holds (the port-metadata table: every port)
        request = _unpack(msg, kind, f"{kind.name} '{inst.name}' read") if msg.HasField("entry") else None
        if request is None and kind.entry is not xm.PortMetadataEntry:
            request = kind.entry()
        yield from kind.read(session, pipeline, inst, msg.extern_type_id, request)


def cell_key(msg: ExternEntry) -> ExternEntry:
    """The read request for what a write names (without the data): what an atomic batch reads
    before the write to undo it."""
    if msg.extern_type_id == DIRECT_REGISTER_TYPE_ID:
        return dr.cell_key(msg)
    kind = _kind(msg.extern_type_id)
    entry = _unpack(msg, kind, f"{kind.name} write")
    out = ExternEntry(extern_type_id=msg.extern_type_id, extern_id=msg.extern_id)
    out.entry.Pack(kind.key(entry))
    return out
