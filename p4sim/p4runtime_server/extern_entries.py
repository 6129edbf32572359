"""Write and Read of indexed externs: counters, meters and registers.

All three are arrays of cells addressed by index. Writes are MODIFY only (the cells always exist);
an index outside the array is INVALID_ARGUMENT. Wildcards on read: id 0 is every instance, an
unset index is every cell. Registers are writable and readable here (BMv2 refuses register
writes over P4Runtime; p4sim allows them, which the DLCP controller uses to reset state).
"""

from __future__ import annotations

from collections.abc import Iterator

import grpc
from p4.v1 import p4data_pb2, p4runtime_pb2

from p4sim.p4runtime_server import runtime_bridge as rt
from p4sim.p4runtime_server.codec import decode_int, encode_int
from p4sim.p4runtime_server.errors import P4RuntimeError, invalid
from p4sim.p4runtime_server.p4info_index import ObjectInfo
from p4sim.p4runtime_server.session import PipelineSession
from p4sim.p4runtime_server.table_entries import meter_tuple

__all__ = ["write_counter", "read_counters", "write_meter", "read_meters", "write_register",
           "read_registers"]

Update = p4runtime_pb2.Update


def _instance(collection: dict, info: ObjectInfo):
    obj = collection.get(info.name)
    if obj is None:
        raise P4RuntimeError(grpc.StatusCode.INTERNAL, f"'{info.name}' missing from the pipeline")
    return obj


def _index(info: ObjectInfo, msg, kind: str) -> int:
    if not msg.HasField("index"):
        raise invalid(f"{kind} '{info.name}': a write needs an index")
    i = msg.index.index
    if not 0 <= i < info.size:
        raise invalid(f"{kind} '{info.name}': index {i} out of range 0..{info.size - 1}")
    return i


def _instances(session: PipelineSession, kind: str, object_id: int) -> list[ObjectInfo]:
    table = getattr(session.index, kind)
    if object_id == 0:
        return list(table.values())
    return [session.index.lookup(kind, object_id)]


def _indices(info: ObjectInfo, msg, kind: str) -> range:
    if msg.HasField("index"):
        i = msg.index.index
        if not 0 <= i < info.size:
            raise invalid(f"{kind} '{info.name}': index {i} out of range 0..{info.size - 1}")
        return range(i, i + 1)
    return range(info.size)


# ---- counters ----------------------------------------------------------------------------------

def write_counter(session: PipelineSession, pipeline, update_type: int,
                  msg: p4runtime_pb2.CounterEntry) -> None:
    info = session.index.lookup("counters", msg.counter_id)
    if update_type != Update.MODIFY:
        raise invalid(f"counter '{info.name}': counter entries can only be modified")
    i = _index(info, msg, "counter")
    counter = _instance(pipeline.counters, info)
    counter.cells[i] = [msg.data.packet_count, msg.data.byte_count]


def read_counters(session: PipelineSession, pipeline,
                  msg: p4runtime_pb2.CounterEntry) -> Iterator[p4runtime_pb2.CounterEntry]:
    for info in _instances(session, "counters", msg.counter_id):
        counter = _instance(pipeline.counters, info)
        for i in _indices(info, msg, "counter"):
            packets, nbytes = counter.cells[i]
            out = p4runtime_pb2.CounterEntry(counter_id=info.id)
            out.index.index = i
            out.data.packet_count = packets
            out.data.byte_count = nbytes
            yield out


# ---- meters ------------------------------------------------------------------------------------

def write_meter(session: PipelineSession, pipeline, update_type: int,
                msg: p4runtime_pb2.MeterEntry) -> None:
    info = session.index.lookup("meters", msg.meter_id)
    if update_type != Update.MODIFY:
        raise invalid(f"meter '{info.name}': meter entries can only be modified")
    i = _index(info, msg, "meter")
    meter = _instance(pipeline.meters, info)
    if msg.HasField("config"):
        config = meter_tuple(msg.config)
        meter.set_config(i, *rt.runtime_meter_args(config))
        session.meter_configs[(info.name, i)] = p4runtime_pb2.MeterConfig(
            cir=config[0], cburst=config[1], pir=config[2], pburst=config[3])
    else:   # unset config: back to the default (every packet GREEN)
        meter.reset_config(i)
        session.meter_configs.pop((info.name, i), None)


def read_meters(session: PipelineSession, pipeline,
                msg: p4runtime_pb2.MeterEntry) -> Iterator[p4runtime_pb2.MeterEntry]:
    for info in _instances(session, "meters", msg.meter_id):
        _instance(pipeline.meters, info)
        for i in _indices(info, msg, "meter"):
            out = p4runtime_pb2.MeterEntry(meter_id=info.id)
            out.index.index = i
            config = session.meter_configs.get((info.name, i))
            if config is not None:
                out.config.CopyFrom(config)
            yield out


# ---- registers ---------------------------------------------------------------------------------

def write_register(session: PipelineSession, pipeline, update_type: int,
                   msg: p4runtime_pb2.RegisterEntry) -> None:
    info = session.index.lookup("registers", msg.register_id)
    if update_type != Update.MODIFY:
        raise invalid(f"register '{info.name}': register entries can only be modified")
    register = _instance(pipeline.registers, info)
    if msg.data.WhichOneof("data") != "bitstring":
        raise invalid(f"register '{info.name}': data must be a bitstring")
    value = decode_int(msg.data.bitstring, info.bitwidth, f"register '{info.name}'")
    if msg.HasField("index"):
        register.write(_index(info, msg, "register"), value)
    else:   # unset index: every cell
        for i in range(info.size):
            register.write(i, value)


def read_registers(session: PipelineSession, pipeline,
                   msg: p4runtime_pb2.RegisterEntry) -> Iterator[p4runtime_pb2.RegisterEntry]:
    for info in _instances(session, "registers", msg.register_id):
        register = _instance(pipeline.registers, info)
        for i in _indices(info, msg, "register"):
            out = p4runtime_pb2.RegisterEntry(register_id=info.id,
                                              data=p4data_pb2.P4Data(bitstring=encode_int(register.read(i))))
            out.index.index = i
            yield out
