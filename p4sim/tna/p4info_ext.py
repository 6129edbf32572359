"""The Tofino objects P4Runtime has no message for: DirectRegister in P4Info and on the wire;
Lpf, Wred (and their direct forms), RegisterParam and the port-metadata table in P4Info
(``add_tna_externs``; their messages are in ``p4sim.tna.extern_messages``).

Why it exists: P4Runtime's P4Info has direct counters and meters but no direct registers. bf-p4c
lists a ``DirectRegister`` as an extern instance in ``P4Info.externs`` (extern type id 0x8C,
``barefoot::P4Ids::DIRECT_REGISTER``, type name ``DirectRegister``), named with the pipe prefix
(``pipe.SwitchIngress.test_reg_dir``), its ``info`` a ``barefoot.DirectRegister`` (the cell's
``type_spec`` and ``data_field_name``, the name without the pipe). p4sim's P4Info does the same
and adds the instance's id to its table's ``direct_resource_ids``, so a controller finds it the
way it would in bf-p4c's P4Info.

On the wire a cell is read and written as an ``ExternEntry`` of that type and id whose ``entry``
packs a ``p4sim.tna.DirectRegisterEntry``: the table entry it belongs to (as P4Runtime's
``DirectCounterEntry`` names one) and the cell as ``P4Data``. Both messages are built here at
import time (field numbers of ``barefoot.DirectRegister`` as in bf-p4c's p4info.proto), so the
server and any Python client use the same classes.
"""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from p4.config.v1 import p4info_pb2, p4types_pb2  # noqa: F401  (their descriptors must be in the pool)
from p4.v1 import p4data_pb2, p4runtime_pb2  # noqa: F401

from p4sim.backend import ids

DIRECT_REGISTER_TYPE_ID = 0x8C            # barefoot::P4Ids::DIRECT_REGISTER
DIRECT_REGISTER_TYPE_NAME = "DirectRegister"

_F = descriptor_pb2.FieldDescriptorProto


def _message_classes() -> tuple[Any, Any]:
    pool = descriptor_pool.Default()
    try:
        barefoot = pool.FindMessageTypeByName("barefoot.DirectRegister")
    except KeyError:
        fd = descriptor_pb2.FileDescriptorProto(name="p4sim/tna/barefoot_direct_register.proto", package="barefoot",
                                                syntax="proto3", dependency=["p4/config/v1/p4types.proto"])
        m = fd.message_type.add(name="DirectRegister")
        m.field.add(name="type_spec", number=1, type=_F.TYPE_MESSAGE, label=_F.LABEL_OPTIONAL,
                    type_name=".p4.config.v1.P4DataTypeSpec")
        m.field.add(name="data_field_name", number=2, type=_F.TYPE_STRING, label=_F.LABEL_OPTIONAL)
        pool.Add(fd)
        barefoot = pool.FindMessageTypeByName("barefoot.DirectRegister")
    try:
        entry = pool.FindMessageTypeByName("p4sim.tna.DirectRegisterEntry")
    except KeyError:
        fd = descriptor_pb2.FileDescriptorProto(name="p4sim/tna/direct_register_entry.proto", package="p4sim.tna",
                                                syntax="proto3",
                                                dependency=["p4/v1/p4runtime.proto", "p4/v1/p4data.proto"])
        m = fd.message_type.add(name="DirectRegisterEntry")
        m.field.add(name="table_entry", number=1, type=_F.TYPE_MESSAGE, label=_F.LABEL_OPTIONAL,
                    type_name=".p4.v1.TableEntry")
        m.field.add(name="data", number=2, type=_F.TYPE_MESSAGE, label=_F.LABEL_OPTIONAL, type_name=".p4.v1.P4Data")
        pool.Add(fd)
        entry = pool.FindMessageTypeByName("p4sim.tna.DirectRegisterEntry")
    factory = message_factory.MessageFactory(pool)
    return factory.GetPrototype(barefoot), factory.GetPrototype(entry)


BarefootDirectRegister, DirectRegisterEntry = _message_classes()


def add_direct_registers(p4info: p4info_pb2.P4Info, registers: list[tuple[str, int]],
                         owners: dict[str, str]) -> None:
    """Add each (name, cell bit width) DirectRegister to ``p4info`` as bf-p4c does; its owning
    table (``owners``, by name) lists it in ``direct_resource_ids``."""
    if not registers:
        return
    taken = {x.preamble.id for x in p4info.tables} | {a.preamble.id for a in p4info.actions}
    ext = p4info.externs.add(extern_type_id=DIRECT_REGISTER_TYPE_ID, extern_type_name=DIRECT_REGISTER_TYPE_NAME)
    tables = {t.preamble.name: t for t in p4info.tables}
    for name, width in sorted(registers):
        value = ids.jenkins_one_at_a_time(name)
        while (pid := DIRECT_REGISTER_TYPE_ID << 24 | (value & 0xFFFFFF)) in taken:
            value += 1
        taken.add(pid)
        inst = ext.instances.add()
        inst.preamble.id = pid
        inst.preamble.name = name
        inst.preamble.alias = name.rsplit(".", 1)[-1]
        info = BarefootDirectRegister(data_field_name=name.split(".", 1)[1] if "." in name else name)
        info.type_spec.bitstring.bit.bitwidth = width
        inst.info.Pack(info)
        table = tables.get(owners.get(name, ""))
        if table is not None:
            table.direct_resource_ids.append(pid)


def _new_id(type_id: int, name: str, taken: set[int]) -> int:
    value = ids.jenkins_one_at_a_time(name)
    while (pid := type_id << 24 | (value & 0xFFFFFF)) in taken:
        value += 1
    taken.add(pid)
    return pid


def add_tna_externs(p4info: p4info_pb2.P4Info, program: Any, module: Any) -> None:
    """Add the module's Lpf, DirectLpf, Wred, DirectWred, RegisterParam and port-metadata
    objects to ``p4info`` as bf-p4c lists them (``p4sim.tna.extern_messages`` names the type ids
    and ``info`` messages); a direct filter's id joins its table's ``direct_resource_ids``."""
    from p4sim.backend.p4info import _type_spec
    from p4sim.tna import extern_messages as xm

    kinds = {"wred": (xm.WRED_TYPE_ID, "Wred"), "direct_wred": (xm.DIRECT_WRED_TYPE_ID, "DirectWred"),
             "lpf": (xm.LPF_TYPE_ID, "Lpf"), "direct_lpf": (xm.DIRECT_LPF_TYPE_ID, "DirectLpf"),
             "register_param": (xm.REGISTER_PARAM_TYPE_ID, "RegisterParam"),
             "port_metadata": (xm.PORT_METADATA_TYPE_ID, "PortMetadata")}
    objects = sorted((kind, fq, params) for _, kind, fq, params in module.tna_objects if kind in kinds)
    if not objects:
        return
    taken = {x.preamble.id for x in p4info.tables} | {a.preamble.id for a in p4info.actions}
    taken |= {i.preamble.id for e in p4info.externs for i in e.instances}
    tables = {t.preamble.name: t for t in p4info.tables}
    registers = {r.preamble.name: r.preamble.id for r in p4info.registers}
    owners = getattr(module, "direct_filter_tables", {})
    groups: dict[int, Any] = {}
    for kind, fq, params in objects:
        type_id, type_name = kinds[kind]
        ext = groups.get(type_id)
        if ext is None:
            ext = groups[type_id] = p4info.externs.add(extern_type_id=type_id, extern_type_name=type_name)
        inst = ext.instances.add()
        inst.preamble.id = _new_id(type_id, fq, taken)
        inst.preamble.name = fq
        inst.preamble.alias = fq.rsplit(".", 1)[-1]
        table = tables.get(owners.get(fq, ""))
        if kind in ("lpf", "direct_lpf"):
            info = xm.BarefootLpf(size=params["size"]) if kind == "lpf" else xm.BarefootDirectLpf()
        elif kind in ("wred", "direct_wred"):
            info = xm.BarefootWred(size=params["size"]) if kind == "wred" else xm.BarefootDirectWred()
            info.spec.drop_value, info.spec.no_drop_value = params["drop_value"], params["no_drop_value"]
        elif kind == "register_param":
            info = xm.BarefootRegisterParam(initial_value=params["initial"],
                                            data_field_name=fq.split(".", 1)[1] if "." in fq else fq)
            info.type_spec.bitstring.bit.bitwidth = params["width"]
            if params.get("register") in registers:
                info.table_id = registers[params["register"]]
            elif params.get("direct_table") in tables:
                info.table_id = tables[params["direct_table"]].preamble.id
        else:
            info = xm.BarefootPortMetadata(key_name=params["key_name"])
            if params["header"] is not None:
                _type_spec(p4info, info.type_spec, params["header"])
        if kind.startswith("direct_") and table is not None:
            info.direct_table_id = table.preamble.id
            table.direct_resource_ids.append(inst.preamble.id)
        inst.info.Pack(info)


__all__ = ["DIRECT_REGISTER_TYPE_ID", "DIRECT_REGISTER_TYPE_NAME", "BarefootDirectRegister", "DirectRegisterEntry",
           "add_direct_registers", "add_tna_externs"]
