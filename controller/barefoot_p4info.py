"""bf-p4c's P4Info extension messages (package ``barefoot``), so the controller reads a Tofino
program's P4Info as bf-p4c writes it.

Why it exists: bf-p4c lists Tofino externs P4Runtime has no object for (DirectRegister, Lpf, Wred,
RegisterParam, the port-metadata table, ...) in ``P4Info.externs`` with an ``info`` of type
``barefoot.<Kind>``. In a text P4Info that ``Any`` is written expanded
(``[type.googleapis.com/barefoot.PortMetadata] { ... }``), and protobuf's text parser refuses it
unless the message type is in its descriptor pool. The controller never interprets these messages;
it only has to read them and hand them back unchanged in SetForwardingPipelineConfig. Field
numbers follow bf-p4c's public ``barefoot/p4info.proto``. A type another module already
registered (e.g. p4sim's Tofino model in the same process) is reused, never defined twice.
"""

from __future__ import annotations

from google.protobuf import descriptor_pb2, descriptor_pool
from p4.config.v1 import p4types_pb2  # noqa: F401  (P4DataTypeSpec must be in the pool)

_F = descriptor_pb2.FieldDescriptorProto
_MSG, _U32, _I64, _STR = _F.TYPE_MESSAGE, _F.TYPE_UINT32, _F.TYPE_INT64, _F.TYPE_STRING
_TYPE_SPEC = ".p4.config.v1.P4DataTypeSpec"

# message -> [(field, number, type, message type)]; a message that refers to another comes after it
BAREFOOT_MESSAGES: dict[str, list[tuple[str, int, int, str]]] = {
    "DirectRegister": [("type_spec", 1, _MSG, _TYPE_SPEC), ("data_field_name", 2, _STR, "")],
    "Lpf": [("size", 1, _I64, "")],
    "DirectLpf": [("direct_table_id", 1, _U32, "")],
    "WredSpec": [("drop_value", 1, _U32, ""), ("no_drop_value", 2, _U32, "")],
    "Wred": [("spec", 1, _MSG, ".barefoot.WredSpec"), ("size", 2, _I64, "")],
    "DirectWred": [("spec", 1, _MSG, ".barefoot.WredSpec"), ("direct_table_id", 2, _U32, "")],
    "RegisterParam": [("type_spec", 1, _MSG, _TYPE_SPEC), ("table_id", 2, _U32, ""),
                      ("initial_value", 3, _I64, ""), ("data_field_name", 4, _STR, "")],
    "PortMetadata": [("key_name", 1, _STR, ""), ("type_spec", 2, _MSG, _TYPE_SPEC)],
}


def register_barefoot_messages(pool: descriptor_pool.DescriptorPool | None = None) -> None:
    """Add every ``barefoot.*`` P4Info message not yet in ``pool`` (default: protobuf's default
    pool, the one ``text_format`` uses), one file per message so a type defined elsewhere is
    depended on, not redefined."""
    pool = pool or descriptor_pool.Default()
    for name, fields in BAREFOOT_MESSAGES.items():
        if _file_of(pool, f"barefoot.{name}") is not None:
            continue
        deps = {"p4/config/v1/p4types.proto"}
        fd = descriptor_pb2.FileDescriptorProto(name=f"controller/barefoot/{name}.proto", package="barefoot",
                                                syntax="proto3")
        message = fd.message_type.add(name=name)
        for field, number, kind, type_name in fields:
            f = message.field.add(name=field, number=number, type=kind, label=_F.LABEL_OPTIONAL)
            if type_name:
                f.type_name = type_name
                if type_name.startswith(".barefoot."):
                    deps.add(_file_of(pool, type_name[1:]))
        fd.dependency.extend(sorted(deps))
        pool.Add(fd)


def _file_of(pool: descriptor_pool.DescriptorPool, full_name: str) -> str | None:
    try:
        return pool.FindMessageTypeByName(full_name).file.name
    except KeyError:
        return None


__all__ = ["BAREFOOT_MESSAGES", "register_barefoot_messages"]
