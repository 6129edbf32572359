"""Protobuf messages for the Tofino externs P4Runtime has no message for: Lpf, Wred,
RegisterParam and the port-metadata table.

Why it exists: bf-p4c lists these objects in ``P4Info.externs`` with an ``info`` message of its
``barefoot`` package (``barefoot.Lpf{size}``, ``barefoot.DirectLpf{direct_table_id}``,
``barefoot.Wred{spec{drop_value, no_drop_value}, size}``, ``barefoot.DirectWred``,
``barefoot.RegisterParam{type_spec, table_id, initial_value, data_field_name}``,
``barefoot.PortMetadata{key_name, type_spec}``; field numbers as in bf-p4c's
``control-plane/proto/barefoot/p4info.proto``); Intel configures them through BfRuntime, whose
fields (``$LPF_SPEC_*``, ``$WRED_SPEC_*``, a RegisterParam's value, ``$PORT_METADATA`` keyed by
``ig_intr_md.ingress_port``) P4Runtime cannot carry. p4sim carries them in an ``ExternEntry``
whose ``entry`` packs one of its own messages (package ``p4sim.tna``), the pattern of P4Runtime's
``DirectMeterEntry``:

* ``LpfEntry{index | table_entry, spec: LpfSpec{type, gain_time_constant_ns,
  decay_time_constant_ns, output_scale_down_factor}}`` (``type`` SAMPLE = 0, RATE = 1);
* ``WredEntry{index | table_entry, spec: WredSpec{time_constant_ns, min_thresh_cells,
  max_thresh_cells, max_probability}}``;
* ``RegisterParamEntry{data}`` (a bitstring of at most the parameter's width);
* ``PortMetadataEntry{ingress_port, data}`` (``data`` a bitstring of the port metadata header).

The descriptors are built here at import time (or taken from the pool if a real ``barefoot``
p4info proto is loaded), so the server and Python clients share the classes.
"""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from p4.config.v1 import p4types_pb2  # noqa: F401  (its descriptors must be in the pool)
from p4.v1 import p4data_pb2, p4runtime_pb2  # noqa: F401

LPF_TYPE_ID = 0x89                 # barefoot::P4Ids::LPF
DIRECT_LPF_TYPE_ID = 0x8A          # barefoot::P4Ids::DIRECT_LPF
WRED_TYPE_ID = 0x87                # barefoot::P4Ids::WRED
DIRECT_WRED_TYPE_ID = 0x88         # barefoot::P4Ids::DIRECT_WRED
REGISTER_PARAM_TYPE_ID = 0x8D      # barefoot::P4Ids::REGISTER_PARAM
PORT_METADATA_TYPE_ID = 0x90       # barefoot::P4Ids::PORT_METADATA

_F = descriptor_pb2.FieldDescriptorProto
_MSG, _U32, _I64, _STR, _DBL, _ENUM = (_F.TYPE_MESSAGE, _F.TYPE_UINT32, _F.TYPE_INT64, _F.TYPE_STRING,
                                       _F.TYPE_DOUBLE, _F.TYPE_ENUM)

# (message, [(field, number, type, type_name)]) per package
_BAREFOOT = [
    ("Lpf", [("size", 1, _I64, "")]),
    ("DirectLpf", [("direct_table_id", 1, _U32, "")]),
    ("WredSpec", [("drop_value", 1, _U32, ""), ("no_drop_value", 2, _U32, "")]),
    ("Wred", [("spec", 1, _MSG, ".barefoot.WredSpec"), ("size", 2, _I64, "")]),
    ("DirectWred", [("spec", 1, _MSG, ".barefoot.WredSpec"), ("direct_table_id", 2, _U32, "")]),
    ("RegisterParam", [("type_spec", 1, _MSG, ".p4.config.v1.P4DataTypeSpec"), ("table_id", 2, _U32, ""),
                       ("initial_value", 3, _I64, ""), ("data_field_name", 4, _STR, "")]),
    ("PortMetadata", [("key_name", 1, _STR, ""), ("type_spec", 2, _MSG, ".p4.config.v1.P4DataTypeSpec")]),
]
_P4SIM = [
    ("LpfSpec", [("type", 1, _ENUM, ".p4sim.tna.LpfType"), ("gain_time_constant_ns", 2, _DBL, ""),
                 ("decay_time_constant_ns", 3, _DBL, ""), ("output_scale_down_factor", 4, _U32, "")]),
    ("LpfEntry", [("index", 1, _MSG, ".p4.v1.Index"), ("table_entry", 2, _MSG, ".p4.v1.TableEntry"),
                  ("spec", 3, _MSG, ".p4sim.tna.LpfSpec")]),
    ("WredSpec", [("time_constant_ns", 1, _DBL, ""), ("min_thresh_cells", 2, _U32, ""),
                  ("max_thresh_cells", 3, _U32, ""), ("max_probability", 4, _DBL, "")]),
    ("WredEntry", [("index", 1, _MSG, ".p4.v1.Index"), ("table_entry", 2, _MSG, ".p4.v1.TableEntry"),
                   ("spec", 3, _MSG, ".p4sim.tna.WredSpec")]),
    ("RegisterParamEntry", [("data", 1, _MSG, ".p4.v1.P4Data")]),
    ("PortMetadataEntry", [("ingress_port", 1, _U32, ""), ("data", 2, _MSG, ".p4.v1.P4Data")]),
]


def _build(pool: Any, file_name: str, package: str, messages: list, deps: list[str],
           enums: dict[str, list[tuple[str, int]]] | None = None) -> None:
    if all(_known(pool, f"{package}.{name}") for name, _ in messages):
        return
    fd = descriptor_pb2.FileDescriptorProto(name=file_name, package=package, syntax="proto3", dependency=deps)
    for enum_name, values in (enums or {}).items():
        e = fd.enum_type.add(name=enum_name)
        for vname, number in values:
            e.value.add(name=vname, number=number)
    for name, fields in messages:
        m = fd.message_type.add(name=name)
        for fname, number, ftype, type_name in fields:
            f = m.field.add(name=fname, number=number, type=ftype, label=_F.LABEL_OPTIONAL)
            if type_name:
                f.type_name = type_name
    pool.Add(fd)


def _known(pool: Any, full_name: str) -> bool:
    try:
        pool.FindMessageTypeByName(full_name)
        return True
    except KeyError:
        return False


def _classes() -> dict[str, Any]:
    pool = descriptor_pool.Default()
    _build(pool, "p4sim/tna/barefoot_externs.proto", "barefoot", _BAREFOOT, ["p4/config/v1/p4types.proto"])
    _build(pool, "p4sim/tna/extern_entries.proto", "p4sim.tna", _P4SIM,
           ["p4/v1/p4runtime.proto", "p4/v1/p4data.proto"], {"LpfType": [("SAMPLE", 0), ("RATE", 1)]})
    factory = message_factory.MessageFactory(pool)
    out = {}
    for package, messages in (("barefoot", _BAREFOOT), ("p4sim.tna", _P4SIM)):
        prefix = "Barefoot" if package == "barefoot" else ""
        for name, _ in messages:
            out[prefix + name] = factory.GetPrototype(pool.FindMessageTypeByName(f"{package}.{name}"))
    return out


_C = _classes()
BarefootLpf, BarefootDirectLpf = _C["BarefootLpf"], _C["BarefootDirectLpf"]
BarefootWredSpec, BarefootWred, BarefootDirectWred = _C["BarefootWredSpec"], _C["BarefootWred"], _C["BarefootDirectWred"]
BarefootRegisterParam, BarefootPortMetadata = _C["BarefootRegisterParam"], _C["BarefootPortMetadata"]
LpfSpecMsg, LpfEntry = _C["LpfSpec"], _C["LpfEntry"]
WredSpecMsg, WredEntry = _C["WredSpec"], _C["WredEntry"]
RegisterParamEntry, PortMetadataEntry = _C["RegisterParamEntry"], _C["PortMetadataEntry"]
LPF_TYPE_SAMPLE, LPF_TYPE_RATE = 0, 1

__all__ = ["BarefootDirectLpf", "BarefootDirectWred", "BarefootLpf", "BarefootPortMetadata", "BarefootRegisterParam",
           "BarefootWred", "BarefootWredSpec", "DIRECT_LPF_TYPE_ID", "DIRECT_WRED_TYPE_ID", "LPF_TYPE_ID",
           "LPF_TYPE_RATE", "LPF_TYPE_SAMPLE", "LpfEntry", "LpfSpecMsg", "PORT_METADATA_TYPE_ID", "PortMetadataEntry",
           "REGISTER_PARAM_TYPE_ID", "RegisterParamEntry", "WRED_TYPE_ID", "WredEntry", "WredSpecMsg"]
