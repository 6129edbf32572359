"""Atomic Write batches (ROLLBACK_ON_ERROR, DATAPLANE_ATOMIC) by undo: before each update the
server reads the state it will change and derives the inverse update; if an update fails, the
inverses of those already applied run in reverse order.

The whole batch runs under the device lock, so packets never see a half-applied batch: for
p4sim, DATAPLANE_ATOMIC and ROLLBACK_ON_ERROR are the same guarantee. Inverses are ordinary
P4Runtime updates (INSERT <-> DELETE, MODIFY back to the old contents), built with the same
readers Read uses, so they restore exactly what a client would have read.
"""

from __future__ import annotations

import logging

import grpc
from p4.v1 import p4runtime_pb2

from p4sim.p4runtime_server import entities, tna_extern_entries
from p4sim.p4runtime_server.codec import decode_match
from p4sim.p4runtime_server.errors import P4RuntimeError
from p4sim.p4runtime_server.session import PipelineSession

__all__ = ["apply_atomic_batch"]

log = logging.getLogger("p4sim.p4runtime")
Update = p4runtime_pb2.Update


def _table_key(session: PipelineSession, msg: p4runtime_pb2.TableEntry, with_data: bool):
    key = p4runtime_pb2.TableEntry(table_id=msg.table_id, priority=msg.priority,
                                   is_default_action=msg.is_default_action)
    key.match.extend(msg.match)
    info = session.index.tables.get(msg.table_id)
    if with_data and info is not None and not msg.is_default_action:
        if info.direct_counter_id:
            key.counter_data.SetInParent()
        if info.direct_meter_id:
            key.meter_config.SetInParent()
    return key, info


def _same_key(session: PipelineSession, a: p4runtime_pb2.TableEntry, b: p4runtime_pb2.TableEntry) -> bool:
    info = session.index.tables.get(a.table_id)
    if info is None or a.table_id != b.table_id or a.priority != b.priority:
        return False
    return decode_match(info, a.match) == decode_match(info, b.match)


def _key_and_request(session: PipelineSession, kind: str, msg):
    """(entity that names the object, read request that fetches its current state)."""
    pb = p4runtime_pb2
    if kind == "table_entry":
        key, _ = _table_key(session, msg, False)
        request, _ = _table_key(session, msg, True)
        return key, request
    if kind in ("direct_counter_entry", "direct_meter_entry"):
        key, _ = _table_key(session, msg.table_entry, False)
        request = type(msg)(table_entry=key)
        return request, request
    if kind == "action_profile_member":
        key = pb.ActionProfileMember(action_profile_id=msg.action_profile_id, member_id=msg.member_id)
    elif kind == "action_profile_group":
        key = pb.ActionProfileGroup(action_profile_id=msg.action_profile_id, group_id=msg.group_id)
    elif kind in ("counter_entry", "meter_entry", "register_entry"):
        id_field = {"counter_entry": "counter_id", "meter_entry": "meter_id",
                    "register_entry": "register_id"}[kind]
        key = type(msg)(**{id_field: getattr(msg, id_field)})
        if msg.HasField("index"):
            key.index.index = msg.index.index
    elif kind == "packet_replication_engine_entry":
        key = pb.PacketReplicationEngineEntry()
        if msg.HasField("multicast_group_entry"):
            key.multicast_group_entry.multicast_group_id = msg.multicast_group_entry.multicast_group_id
        else:
            key.clone_session_entry.session_id = msg.clone_session_entry.session_id
    elif kind == "value_set_entry":
        key = pb.ValueSetEntry(value_set_id=msg.value_set_id)
    elif kind == "extern_entry":
        key = tna_extern_entries.cell_key(msg)
    else:   # digest_entry
        key = pb.DigestEntry(digest_id=msg.digest_id)
    return key, key


def _inverse(session: PipelineSession, pipeline, update: p4runtime_pb2.Update) -> list[p4runtime_pb2.Update]:
    """Updates that undo ``update`` (computed before it is applied)."""
    kind = update.entity.WhichOneof("entity")
    if kind is None:
        return []
    msg = getattr(update.entity, kind)
    key, request = _key_and_request(session, kind, msg)
    if update.type == Update.INSERT:
        return [Update(type=Update.DELETE, entity=p4runtime_pb2.Entity(**{kind: key}))]
    old = list(entities._READERS[kind](session, pipeline, request))
    if kind == "table_entry" and not msg.is_default_action:
        old = [o for o in old if _same_key(session, o, msg)]
    elif kind in ("direct_counter_entry", "direct_meter_entry"):
        old = [o for o in old if _same_key(session, o.table_entry, msg.table_entry)]
    elif kind in ("action_profile_member", "action_profile_group") and not getattr(
            msg, "member_id" if kind == "action_profile_member" else "group_id"):
        old = []   # id 0 would read as a wildcard; such an update is refused anyway
    back = Update.INSERT if update.type == Update.DELETE else Update.MODIFY
    return [Update(type=back, entity=p4runtime_pb2.Entity(**{kind: o})) for o in old]


def apply_atomic_batch(session: PipelineSession, pipeline, updates) -> list[P4RuntimeError | None]:
    """All updates or none. Caller holds the device lock. Returns [] on success, else one
    outcome per update: the failing update's error and ABORTED for the rest."""
    undo: list[list[p4runtime_pb2.Update]] = []
    failed_at, failure = None, None
    for i, update in enumerate(updates):
        try:
            inverse = _inverse(session, pipeline, update)
        except P4RuntimeError:
            inverse = []          # the update names something invalid: it will be refused below
        try:
            entities.apply_update(session, pipeline, update)
        except P4RuntimeError as err:
            failed_at, failure = i, err.with_traceback(None)
            break
        except Exception as err:   # a bug must not leave a half-applied batch behind
            log.exception("atomic write: update %d failed unexpectedly", i)
            failed_at, failure = i, P4RuntimeError(grpc.StatusCode.INTERNAL, f"internal error: {err}")
            break
        undo.append(inverse)
    if failure is None:
        return []
    for inverse in reversed(undo):
        for up in inverse:
            try:
                entities.apply_update(session, pipeline, up)
            except Exception:   # noqa: BLE001 - report, keep undoing the rest
                log.exception("atomic write: rollback step failed")
                failure = P4RuntimeError(grpc.StatusCode.INTERNAL,
                                         f"{failure.message}; rollback failed, state may be partial")
    aborted = P4RuntimeError(grpc.StatusCode.ABORTED, f"rolled back: update {failed_at} failed")
    return [failure if i == failed_at else aborted for i in range(len(updates))]
