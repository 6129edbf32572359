"""The ``p4_device_config`` bytes a client sends: p4sim's JSON as is, or wrapped as BMv2's server takes it.

simple_switch_grpc (PI) expects ``p4_device_config`` to be a serialized ``p4.tmp.P4DeviceConfig``
(PI's p4config.proto: ``bool reassign = 1; Extras extras = 2; bytes device_data = 3``) whose
``device_data`` is the target's own config, and p4lang/tutorials' ``p4runtime_lib`` sends exactly
that. p4sim's own clients send its JSON device config directly. Both are accepted: a JSON document
starts with ``{`` (after whitespace), which no serialized P4DeviceConfig does (its first byte is a
field tag: 0x08, 0x12 or 0x1a), so the two never get confused.

The wrapper is decoded here with a small descriptor built at import time (the ``p4.tmp`` protos are
not part of the p4runtime package), so the real protobuf parser does the work.
"""

from __future__ import annotations

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import DecodeError

from p4sim.p4runtime_server.errors import invalid

__all__ = ["unwrap_device_config"]

_JSON_START = b"{"
_WHITESPACE = b" \t\r\n"


def _p4_device_config_class():
    f = descriptor_pb2.FileDescriptorProto(name="p4sim/pi_p4config.proto", package="p4sim.pi", syntax="proto3")
    msg = f.message_type.add(name="P4DeviceConfig")
    extras = msg.nested_type.add(name="Extras")
    kv = extras.nested_type.add(name="KvEntry")
    kv.options.map_entry = True
    T, L = descriptor_pb2.FieldDescriptorProto, descriptor_pb2.FieldDescriptorProto
    kv.field.add(name="key", number=1, type=T.TYPE_STRING, label=L.LABEL_OPTIONAL)
    kv.field.add(name="value", number=2, type=T.TYPE_STRING, label=L.LABEL_OPTIONAL)
    extras.field.add(name="kv", number=1, type=T.TYPE_MESSAGE, label=L.LABEL_REPEATED,
                     type_name=".p4sim.pi.P4DeviceConfig.Extras.KvEntry")
    msg.field.add(name="reassign", number=1, type=T.TYPE_BOOL, label=L.LABEL_OPTIONAL)
    msg.field.add(name="extras", number=2, type=T.TYPE_MESSAGE, label=L.LABEL_OPTIONAL,
                  type_name=".p4sim.pi.P4DeviceConfig.Extras")
    msg.field.add(name="device_data", number=3, type=T.TYPE_BYTES, label=L.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(f)
    descriptor = pool.FindMessageTypeByName("p4sim.pi.P4DeviceConfig")
    get_class = getattr(message_factory, "GetMessageClass", None)    # protobuf >= 4.21
    if get_class is not None:
        return get_class(descriptor)
    return message_factory.MessageFactory(pool).GetPrototype(descriptor)


P4DeviceConfig = _p4_device_config_class()


def unwrap_device_config(data: bytes) -> bytes:
    """The target config inside ``data``: ``data`` itself when it is JSON, else the ``device_data``
    of a serialized PI ``P4DeviceConfig``. Raises P4RuntimeError (INVALID_ARGUMENT) otherwise."""
    if data.lstrip(_WHITESPACE).startswith(_JSON_START):
        return data
    try:
        wrapper = P4DeviceConfig.FromString(data)
    except (DecodeError, RecursionError) as err:
        raise invalid("SetForwardingPipelineConfig: p4_device_config is neither p4sim's JSON device config "
                      f"nor a serialized p4.tmp.P4DeviceConfig ({err})") from None
    if not wrapper.device_data:
        raise invalid("SetForwardingPipelineConfig: p4_device_config is a p4.tmp.P4DeviceConfig without "
                      "device_data (put the output of `p4sim compile` there)")
    return wrapper.device_data
