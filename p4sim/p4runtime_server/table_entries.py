"""Write and Read of table entries, default entries, and their direct counters and meters.

Each write validates the whole update (ids, match, priority, action, references) before touching
the table, so a refused update leaves nothing behind. Reads follow the spec's wildcards: table id 0
is every table, an empty match is every entry, ``is_default_action`` asks for the default entry.
Direct counter data and meter configs come back only when the read request asks for them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from dataclasses import field as dc_field

import grpc
from p4.v1 import p4runtime_pb2

from p4sim.p4runtime_server import runtime_bridge as rt
from p4sim.p4runtime_server import wire_encode as we
from p4sim.p4runtime_server.codec import (
    check_priority,
    decode_action,
    decode_action_parts,
    decode_match,
    decode_match_tuples,
    encode_action,
    encode_match,
    field_tuple,
)
from p4sim.p4runtime_server.errors import P4RuntimeError, from_runtime_error, invalid, not_found
from p4sim.p4runtime_server.p4info_index import TableInfo
from p4sim.p4runtime_server.session import PipelineSession

__all__ = ["EntrySpec", "write_table_entry", "read_table_entries", "select_table_entries",
           "encode_table_entries", "write_direct_counter", "read_direct_counters",
           "write_direct_meter", "read_direct_meters", "meter_tuple"]

Update = p4runtime_pb2.Update


@dataclass(slots=True)
class EntrySpec:
    """A TableEntry to write, as plain values: built from the protobuf message, or straight from
    the wire by ``wire`` (the fast path for big batches)."""

    table_id: int
    fields: list[tuple] = dc_field(default_factory=list)    # (field id, kind, a, b), see codec
    priority: int = 0
    is_default: bool = False
    has_action: bool = False
    action_id: int | None = None                           # a direct action ...
    params: list = dc_field(default_factory=list)           # ... its (param id, value) pairs
    member_id: int | None = None
    group_id: int | None = None
    action_set: p4runtime_pb2.ActionProfileActionSet | None = None
    idle_timeout_ns: int = 0
    counter_data: tuple[int, int] | None = None
    meter_config: p4runtime_pb2.MeterConfig | None = None
    controller_metadata: int = 0                            # opaque to the switch, read back as written
    metadata: bytes = b""

    @classmethod
    def from_proto(cls, msg: p4runtime_pb2.TableEntry) -> EntrySpec:
        spec = cls(msg.table_id, [field_tuple(fm) for fm in msg.match], msg.priority,
                   msg.is_default_action, msg.HasField("action"), idle_timeout_ns=msg.idle_timeout_ns,
                   controller_metadata=msg.controller_metadata, metadata=msg.metadata)
        which = msg.action.WhichOneof("type") if spec.has_action else None
        if which == "action":
            spec.action_id = msg.action.action.action_id
            spec.params = [(p.param_id, p.value) for p in msg.action.action.params]
        elif which == "action_profile_member_id":
            spec.member_id = msg.action.action_profile_member_id
        elif which == "action_profile_group_id":
            spec.group_id = msg.action.action_profile_group_id
        elif which == "action_profile_action_set":
            spec.action_set = msg.action.action_profile_action_set
        if msg.HasField("counter_data"):
            spec.counter_data = (msg.counter_data.packet_count, msg.counter_data.byte_count)
        if msg.HasField("meter_config"):
            spec.meter_config = msg.meter_config
        return spec


def _table(session: PipelineSession, pipeline, table_id: int) -> tuple[TableInfo, object]:
    info = session.index.table(table_id)
    table = pipeline.tables.get(info.name)
    if table is None:
        raise P4RuntimeError(grpc.StatusCode.INTERNAL, f"table '{info.name}' missing from the pipeline")
    return info, table


def meter_tuple(config: p4runtime_pb2.MeterConfig) -> tuple[int, int, int, int]:
    if config.cir < 0 or config.pir < 0 or config.cburst < 0 or config.pburst < 0:
        raise invalid("meter config: rates and bursts must not be negative")
    if config.cir > config.pir:
        raise invalid(f"meter config: cir {config.cir} > pir {config.pir}")
    return (config.cir, config.cburst, config.pir, config.pburst)


def _meter_config_msg(value) -> p4runtime_pb2.MeterConfig | None:
    config = rt.meter_config_tuple(value)
    if config is None:
        return None
    return p4runtime_pb2.MeterConfig(cir=config[0], cburst=config[1], pir=config[2], pburst=config[3])


def _direct_meter_name(session: PipelineSession, info: TableInfo) -> str:
    return session.index.direct_meters[info.direct_meter_id].name


def _decode_table_action(session: PipelineSession, pipeline, info: TableInfo, spec: EntrySpec) -> tuple:
    """(ActionCall | None, member_id | None, group_id | None, one-shot action set | None)."""
    if not spec.has_action:
        raise invalid(f"table '{info.name}': entry has no action")
    if info.implementation_id == 0:
        if spec.action_id is None:
            raise invalid(f"table '{info.name}' is a direct table; it needs a direct action")
        name, args = decode_action_parts(session.index, info, spec.action_id, spec.params)
        return rt.action_call(name, args), None, None, None
    profile_info = session.index.lookup("action_profiles", info.implementation_id)
    profile = pipeline.action_profiles.get(profile_info.name)
    if spec.member_id is not None:
        if spec.member_id not in rt.profile_members(profile):
            raise not_found(f"table '{info.name}': member {spec.member_id} does not exist in "
                            f"'{profile_info.name}'")
        return None, spec.member_id, None, None
    if spec.group_id is not None:
        if not profile_info.with_selector:
            raise invalid(f"table '{info.name}': '{profile_info.name}' has no selector; groups need one")
        if spec.group_id not in rt.profile_groups(profile):
            raise not_found(f"table '{info.name}': group {spec.group_id} does not exist in "
                            f"'{profile_info.name}'")
        return None, None, spec.group_id, None
    if spec.action_set is not None:
        if not profile_info.with_selector:
            raise invalid(f"table '{info.name}': one-shot action sets need an action selector")
        if not spec.action_set.action_profile_actions:
            raise invalid(f"table '{info.name}': empty one-shot action set")
        calls = []
        for item in spec.action_set.action_profile_actions:
            if item.weight <= 0:
                raise invalid(f"table '{info.name}': one-shot action weight {item.weight} must be > 0")
            name, args = decode_action(session.index, info, item.action)
            calls.append((rt.action_call(name, args), item.weight))
        return None, None, None, (profile, calls, spec.action_set)
    if spec.action_id is not None:
        raise invalid(f"table '{info.name}' uses action profile '{profile_info.name}'; "
                      f"give a member, a group or an action set, not an action")
    raise invalid(f"table '{info.name}': empty action")


def _install_one_shot(session: PipelineSession, profile, calls) -> tuple[int, list[int]]:
    members = rt.profile_members(profile)
    groups = rt.profile_groups(profile)
    member_ids, weighted = [], []
    for call, weight in calls:
        mid = session.next_internal_id()
        members[mid] = call
        member_ids.append(mid)
        weighted.extend([mid] * weight)
    gid = session.next_internal_id()
    groups[gid] = weighted
    return gid, member_ids


def _remove_one_shot(session: PipelineSession, pipeline, key: tuple) -> None:
    one_shot = session.one_shots.pop(key, None)
    if one_shot is None:
        return
    gid, member_ids, _ = one_shot
    info = session.index.table_by_name[key[0]]
    profile = pipeline.action_profiles[session.index.action_profiles[info.implementation_id].name]
    _drop_group(profile, gid, member_ids)


def write_table_entry(session: PipelineSession, pipeline, update_type: int,
                      msg: p4runtime_pb2.TableEntry | EntrySpec) -> None:
    spec = msg if isinstance(msg, EntrySpec) else EntrySpec.from_proto(msg)
    info, table = _table(session, pipeline, spec.table_id)
    if spec.idle_timeout_ns:
        raise P4RuntimeError(grpc.StatusCode.UNIMPLEMENTED, f"table '{info.name}': idle timeout "
                             f"is not supported by p4sim")
    if spec.is_default:
        _write_default(session, info, table, update_type, spec)
        return
    if info.is_const:
        raise P4RuntimeError(grpc.StatusCode.PERMISSION_DENIED,
                             f"table '{info.name}' is const; its entries cannot be changed")
    match = decode_match_tuples(info.keys, info.key_pos, spec.fields, info.name)
    priority = spec.priority
    check_priority(info, priority)
    rmatch = rt.to_runtime_match(match)
    key = (info.name, match, priority)
    if update_type == Update.DELETE:
        if table.find(rmatch, priority) is None:
            raise not_found(f"table '{info.name}': no such entry to delete")
        _runtime(table.delete, rt.make_entry(rmatch, None, priority), info)
        _remove_one_shot(session, pipeline, key)
        session.entry_meta.pop(key, None)
        return
    if update_type not in (Update.INSERT, Update.MODIFY):
        raise invalid(f"table '{info.name}': update type {update_type} is not insert/modify/delete")
    # INSERT leaves "exists" and "full" to the runtime (EntryExists, TableFull): one look-up less
    existing = table.find(rmatch, priority) if update_type == Update.MODIFY else None
    if update_type == Update.MODIFY and existing is None:
        raise not_found(f"table '{info.name}': no such entry to modify")
    action, member, group, one_shot = _decode_table_action(session, pipeline, info, spec)
    counters = _direct_counter_data(info, spec)
    meter = _direct_meter_data(info, spec)
    member_ids: list[int] = []
    if one_shot is not None:   # everything is validated: create the hidden group, undo on failure
        group, member_ids = _install_one_shot(session, one_shot[0], one_shot[1])
    entry = rt.make_entry(rmatch, action, priority, member, group)
    if meter is not None and update_type == Update.INSERT:
        rt.set_direct_meter(pipeline, _direct_meter_name(session, info), entry, meter)
    if counters is not None:
        entry.packets, entry.bytes = counters
    try:
        _runtime(table.insert if update_type == Update.INSERT else table.modify, entry, info)
    except P4RuntimeError:
        if one_shot is not None:
            _drop_group(one_shot[0], group, member_ids)
        raise
    if update_type == Update.MODIFY:
        if counters is not None:
            existing.packets, existing.bytes = counters
        if meter is not None:
            rt.set_direct_meter(pipeline, _direct_meter_name(session, info), existing, meter)
        _remove_one_shot(session, pipeline, key)
    if one_shot is not None:
        session.one_shots[key] = (group, member_ids, one_shot[2])
    if spec.controller_metadata or spec.metadata:
        session.entry_meta[key] = (spec.controller_metadata, spec.metadata)
    else:
        session.entry_meta.pop(key, None)


def _runtime(fn, entry, info: TableInfo) -> None:
    """Call a runtime Table method; its TableError becomes the spec's status code."""
    try:
        fn(entry)
    except Exception as err:   # TableError, or a runtime bug: report it, never crash the server
        raise from_runtime_error(err, f"table '{info.name}'") from err


def _drop_group(profile, group: int, member_ids: list[int]) -> None:
    rt.profile_groups(profile).pop(group, None)
    members = rt.profile_members(profile)
    for mid in member_ids:
        members.pop(mid, None)


def _direct_counter_data(info: TableInfo, spec: EntrySpec) -> tuple[int, int] | None:
    if spec.counter_data is None:
        return None
    if not info.direct_counter_id:
        raise invalid(f"table '{info.name}' has no direct counter; counter_data given")
    return spec.counter_data


def _direct_meter_data(info: TableInfo, spec: EntrySpec):
    if spec.meter_config is None:
        return None
    if not info.direct_meter_id:
        raise invalid(f"table '{info.name}' has no direct meter; meter_config given")
    return meter_tuple(spec.meter_config)


def _write_default(session: PipelineSession, info: TableInfo, table, update_type: int,
                   spec: EntrySpec) -> None:
    if update_type != Update.MODIFY:
        raise invalid(f"table '{info.name}': the default entry can only be modified "
                      f"(update type {Update.Type.Name(update_type)})")
    if spec.fields or spec.priority:
        raise invalid(f"table '{info.name}': a default entry has no match and no priority")
    if info.const_default_action_id:
        raise P4RuntimeError(grpc.StatusCode.PERMISSION_DENIED,
                             f"table '{info.name}': the default action is const")
    if not spec.has_action:
        table.reset_default()
        return
    if spec.action_id is None:
        raise invalid(f"table '{info.name}': a default entry takes a direct action")
    name, args = decode_action_parts(session.index, info, spec.action_id, spec.params, as_default=True)
    try:
        table.set_default(rt.action_call(name, args))
    except Exception as err:
        raise from_runtime_error(err, f"table '{info.name}' default entry") from err


# ---- read ------------------------------------------------------------------------------------

def _fill_entry(out: p4runtime_pb2.TableEntry, session: PipelineSession, info: TableInfo, entry,
                request) -> None:
    index = session.index
    match = rt.from_runtime_match(entry.match, info.kinds)
    out.table_id = info.id
    encode_match(info.keys, match, out.match)
    if info.needs_priority:
        out.priority = entry.priority
    one_shot = session.one_shots.get((info.name, match, entry.priority)) if session.one_shots else None
    if one_shot is not None:
        out.action.action_profile_action_set.CopyFrom(one_shot[2])
    elif entry.action is not None:
        encode_action(index, entry.action.name, entry.action.args, out.action.action)
    elif entry.group_id is not None:
        out.action.action_profile_group_id = entry.group_id
    elif entry.member_id is not None:
        out.action.action_profile_member_id = entry.member_id
    if entry.is_const:
        out.is_const = True
    meta = session.entry_meta.get((info.name, match, entry.priority)) if session.entry_meta else None
    if meta is not None:
        out.controller_metadata, out.metadata = meta
    if info.direct_counter_id and request.HasField("counter_data"):
        out.counter_data.packet_count = entry.packets
        out.counter_data.byte_count = entry.bytes
    if info.direct_meter_id and request.HasField("meter_config"):
        config = _meter_config_msg(entry.meter_config)
        if config is not None:
            out.meter_config.CopyFrom(config)


def _entry_bytes(session: PipelineSession, info: TableInfo, entry, request) -> bytes:
    """TableEntry bytes of a runtime entry: what ``_fill_entry`` builds, without message objects."""
    match = rt.from_runtime_match(entry.match, info.kinds)
    parts = [b"\x08", we.varint(info.id)]
    for key, f in zip(info.keys, match, strict=True):
        if f is None or (f[0] in ("lpm", "ternary") and f[2] == 0) or \
                (f[0] == "range" and f[1] == 0 and f[2] == (1 << key.bitwidth) - 1):
            continue
        parts.append(we.ld(b"\x12", we.field_match(key.id, f)))
    one_shot = session.one_shots.get((info.name, match, entry.priority)) if session.one_shots else None
    if one_shot is not None:
        parts.append(we.ld(b"\x1a", we.ld(b"\x22", one_shot[2].SerializeToString())))
    elif entry.action is not None:
        action = session.index.action_by_name.get(entry.action.name)
        if action is None:
            raise invalid(f"action '{entry.action.name}' is not in the P4Info")
        parts.append(we.ld(b"\x1a", we.ld(b"\x0a", we.action_bytes(
            action.id, [p.id for p in action.params], entry.action.args))))
    elif entry.group_id is not None:
        parts.append(we.ld(b"\x1a", b"\x18" + we.varint(entry.group_id)))
    elif entry.member_id is not None:
        parts.append(we.ld(b"\x1a", b"\x10" + we.varint(entry.member_id)))
    if info.needs_priority and entry.priority:
        parts.append(b"\x20" + we.varint(entry.priority))
    meta = session.entry_meta.get((info.name, match, entry.priority)) if session.entry_meta else None
    if meta is not None and meta[0]:
        parts.append(b"\x28" + we.varint(meta[0]))
    if info.direct_meter_id and request.HasField("meter_config"):
        config = _meter_config_msg(entry.meter_config)
        if config is not None:
            parts.append(we.ld(b"\x32", config.SerializeToString()))
    if info.direct_counter_id and request.HasField("counter_data"):
        data = (b"\x08" + we.varint(entry.bytes) if entry.bytes else b"") + \
            (b"\x10" + we.varint(entry.packets) if entry.packets else b"")
        parts.append(we.ld(b"\x3a", data))
    if meta is not None and meta[1]:
        parts.append(we.ld(b"\x5a", meta[1]))
    if entry.is_const:
        parts.append(b"\x68\x01")
    return b"".join(parts)


def _tables_for(session: PipelineSession, table_id: int) -> list[TableInfo]:
    if table_id == 0:
        return list(session.index.tables.values())
    return [session.index.table(table_id)]


def select_table_entries(session: PipelineSession, pipeline, request: p4runtime_pb2.TableEntry) -> list:
    """What a read selects, as (info, runtime entry) and (info, None, default action) items.
    Cheap; the caller holds the device lock for it, and encodes the items without the lock."""
    items: list[tuple] = []
    for info in _tables_for(session, request.table_id):
        table = pipeline.tables[info.name]
        if request.is_default_action:
            if request.table_id == 0:
                raise invalid("reading default entries needs a table id")
            items.append((info, None, table.default_action))
            continue
        if request.table_id and request.match:
            match = decode_match(info, request.match)
            found = table.find(rt.to_runtime_match(match), request.priority)
            entries = [found] if found is not None else []
        else:
            entries = list(table)
        items.extend((info, e) for e in entries if not request.priority or e.priority == request.priority)
    return items


def _default_msg(session: PipelineSession, info: TableInfo, default) -> p4runtime_pb2.TableEntry:
    out = p4runtime_pb2.TableEntry(table_id=info.id, is_default_action=True)
    if default is not None:
        encode_action(session.index, default.name, default.args, out.action.action)
    return out


def encode_table_entries(session: PipelineSession, items: list, request, sink) -> None:
    """Encode selected items straight into ``sink`` (a ``wire_encode.ReadChunks``)."""
    for item in items:
        if item[1] is None:
            sink.add_table_entry(_default_msg(session, item[0], item[2]).SerializeToString())
        else:
            sink.add_table_entry(_entry_bytes(session, item[0], item[1], request))


def read_table_entries(session: PipelineSession, pipeline,
                       request: p4runtime_pb2.TableEntry) -> Iterator[p4runtime_pb2.TableEntry]:
    """Entries the request selects, as messages (the direct counter/meter reads build on this)."""
    for item in select_table_entries(session, pipeline, request):
        if item[1] is None:
            yield _default_msg(session, item[0], item[2])
            continue
        out = p4runtime_pb2.TableEntry()
        _fill_entry(out, session, item[0], item[1], request)
        yield out


# ---- direct counters and meters ---------------------------------------------------------------

def _existing_entry(session, pipeline, msg: p4runtime_pb2.TableEntry, what: str):
    info, table = _table(session, pipeline, msg.table_id)
    match = decode_match(info, msg.match)
    check_priority(info, msg.priority)
    entry = table.find(rt.to_runtime_match(match), msg.priority)
    if entry is None:
        raise not_found(f"{what}: table '{info.name}' has no such entry")
    return info, entry


def write_direct_counter(session: PipelineSession, pipeline, update_type: int,
                         msg: p4runtime_pb2.DirectCounterEntry) -> None:
    if update_type != Update.MODIFY:
        raise invalid("direct counter entries can only be modified")
    info, entry = _existing_entry(session, pipeline, msg.table_entry, "direct counter")
    if not info.direct_counter_id:
        raise invalid(f"table '{info.name}' has no direct counter")
    entry.packets, entry.bytes = msg.data.packet_count, msg.data.byte_count


def _entries_with_direct_resource(session: PipelineSession, pipeline, table_entry: p4runtime_pb2.TableEntry,
                                  data_field: str, attached: str, what: str) -> Iterator[p4runtime_pb2.TableEntry]:
    """Table entries (``data_field`` filled in) of every table the read names that has a direct
    ``what``; a named table without one is INVALID_ARGUMENT, a wildcard read skips it."""
    request = p4runtime_pb2.TableEntry()
    request.CopyFrom(table_entry)
    getattr(request, data_field).SetInParent()
    for info in _tables_for(session, request.table_id):
        if not getattr(info, attached):
            if request.table_id:
                raise invalid(f"table '{info.name}' has no direct {what}")
            continue
        sub = p4runtime_pb2.TableEntry()
        sub.CopyFrom(request)
        sub.table_id = info.id
        for entry in read_table_entries(session, pipeline, sub):
            entry.ClearField("action")
            yield entry


def read_direct_counters(session: PipelineSession, pipeline,
                         msg: p4runtime_pb2.DirectCounterEntry) -> Iterator[p4runtime_pb2.DirectCounterEntry]:
    for entry in _entries_with_direct_resource(session, pipeline, msg.table_entry, "counter_data",
                                               "direct_counter_id", "counter"):
        out = p4runtime_pb2.DirectCounterEntry(data=entry.counter_data)
        entry.ClearField("counter_data")
        out.table_entry.CopyFrom(entry)
        yield out


def write_direct_meter(session: PipelineSession, pipeline, update_type: int,
                       msg: p4runtime_pb2.DirectMeterEntry) -> None:
    if update_type != Update.MODIFY:
        raise invalid("direct meter entries can only be modified")
    info, entry = _existing_entry(session, pipeline, msg.table_entry, "direct meter")
    if not info.direct_meter_id:
        raise invalid(f"table '{info.name}' has no direct meter")
    config = meter_tuple(msg.config) if msg.HasField("config") else None
    rt.set_direct_meter(pipeline, _direct_meter_name(session, info), entry, config)


def read_direct_meters(session: PipelineSession, pipeline,
                       msg: p4runtime_pb2.DirectMeterEntry) -> Iterator[p4runtime_pb2.DirectMeterEntry]:
    for entry in _entries_with_direct_resource(session, pipeline, msg.table_entry, "meter_config",
                                               "direct_meter_id", "meter"):
        out = p4runtime_pb2.DirectMeterEntry()
        if entry.HasField("meter_config"):
            out.config.CopyFrom(entry.meter_config)
        entry.ClearField("meter_config")
        out.table_entry.CopyFrom(entry)
        yield out

