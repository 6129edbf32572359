"""Write and Read of PacketReplicationEngineEntry (multicast groups, clone sessions), value set
members and digest configs — the entities that are whole objects replaced by each write.

Replicas are (instance, port); a port comes as the 1.4 ``port`` byte string or the deprecated
``egress_port`` number. What was written is kept in wire form for read-back, so reads give
exactly what the client wrote.
"""

from __future__ import annotations

from collections.abc import Iterator

import grpc
from p4.v1 import p4runtime_pb2

from p4sim.errors import UserError
from p4sim.p4runtime_server import runtime_bridge as rt
from p4sim.p4runtime_server.codec import decode_int, decode_value_set_member
from p4sim.p4runtime_server.errors import P4RuntimeError, invalid, not_found
from p4sim.p4runtime_server.session import PipelineSession

__all__ = ["write_pre", "read_pre", "write_value_set", "read_value_sets", "write_digest", "read_digests"]

Update = p4runtime_pb2.Update
PORT_BITS = 9   # v1model egress_spec width


def _replicas(replicas, what: str) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for r in replicas:
        if r.WhichOneof("port_kind") == "port":
            port = decode_int(r.port, 32, f"{what} replica port")
        else:
            port = r.egress_port
        if port >> PORT_BITS:
            raise invalid(f"{what}: replica port {port} does not fit in {PORT_BITS} bits")
        item = (r.instance, port)
        if item in out:
            raise invalid(f"{what}: replica (port {port}, instance {r.instance}) given twice")
        out.append(item)
    return out


def _check_update(update_type: int, exists: bool, what: str) -> None:
    if update_type == Update.INSERT and exists:
        raise P4RuntimeError(grpc.StatusCode.ALREADY_EXISTS, f"{what} already exists")
    if update_type in (Update.MODIFY, Update.DELETE) and not exists:
        raise not_found(f"{what} does not exist")
    if update_type not in (Update.INSERT, Update.MODIFY, Update.DELETE):
        raise invalid(f"{what}: bad update type {update_type}")


def write_pre(session: PipelineSession, pipeline, update_type: int,
              msg: p4runtime_pb2.PacketReplicationEngineEntry) -> None:
    kind = msg.WhichOneof("type")
    if kind == "multicast_group_entry":
        entry = msg.multicast_group_entry
        gid = entry.multicast_group_id
        what = f"multicast group {gid}"
        if gid == 0:
            raise invalid("multicast group id 0 is not valid")
        _check_update(update_type, gid in session.multicast, what)
        if update_type == Update.DELETE:
            rt.pre_delete_multicast(pipeline.pre, gid)
            del session.multicast[gid]
            return
        replicas = _replicas(entry.replicas, what)
        rt.pre_set_multicast(pipeline.pre, gid, replicas)
        session.multicast[gid] = p4runtime_pb2.MulticastGroupEntry()
        session.multicast[gid].CopyFrom(entry)
    elif kind == "clone_session_entry":
        entry = msg.clone_session_entry
        sid = entry.session_id
        what = f"clone session {sid}"
        if sid == 0:
            raise invalid("clone session id 0 is not valid")
        _check_update(update_type, sid in session.clones, what)
        if update_type == Update.DELETE:
            rt.pre_delete_clone(pipeline.pre, sid)
            del session.clones[sid]
            return
        replicas = _replicas(entry.replicas, what)
        if not replicas:
            raise invalid(f"{what}: a clone session needs at least one replica")
        if entry.class_of_service >> 3:
            raise invalid(f"{what}: class of service {entry.class_of_service} does not fit in 3 bits")
        if entry.packet_length_bytes < 0:
            raise invalid(f"{what}: negative packet length")
        rt.pre_set_clone(pipeline.pre, sid, replicas, entry.class_of_service, entry.packet_length_bytes)
        session.clones[sid] = p4runtime_pb2.CloneSessionEntry()
        session.clones[sid].CopyFrom(entry)
    else:
        raise invalid("packet replication engine entry has neither a multicast group nor a clone session")


def read_pre(session: PipelineSession, pipeline, msg: p4runtime_pb2.PacketReplicationEngineEntry
             ) -> Iterator[p4runtime_pb2.PacketReplicationEngineEntry]:
    kind = msg.WhichOneof("type")
    if kind == "multicast_group_entry":
        gid = msg.multicast_group_entry.multicast_group_id
        for g in ([gid] if gid else sorted(session.multicast)):
            if g in session.multicast:
                yield p4runtime_pb2.PacketReplicationEngineEntry(multicast_group_entry=session.multicast[g])
    elif kind == "clone_session_entry":
        sid = msg.clone_session_entry.session_id
        for s in ([sid] if sid else sorted(session.clones)):
            if s in session.clones:
                yield p4runtime_pb2.PacketReplicationEngineEntry(clone_session_entry=session.clones[s])
    else:
        raise invalid("packet replication engine read needs a multicast group or clone session entry")


def write_value_set(session: PipelineSession, pipeline, update_type: int,
                    msg: p4runtime_pb2.ValueSetEntry) -> None:
    info = session.index.lookup("value_sets", msg.value_set_id)
    if update_type != Update.MODIFY:
        raise invalid(f"value set '{info.name}': value sets can only be modified")
    if info.size and len(msg.members) > info.size:
        raise P4RuntimeError(grpc.StatusCode.RESOURCE_EXHAUSTED,
                             f"value set '{info.name}': {len(msg.members)} members > size {info.size}")
    matches = [decode_value_set_member(info.match, m.match, info.name) for m in msg.members]
    vs = pipeline.value_sets.get(info.name)
    if vs is None:
        raise P4RuntimeError(grpc.StatusCode.INTERNAL, f"value set '{info.name}' missing from the pipeline")
    try:
        rt.value_set_replace(vs, matches, [k.bitwidth for k in info.match])
    except P4RuntimeError:
        raise
    except UserError as err:
        raise invalid(f"value set '{info.name}': {err}") from err
    session.value_sets[info.id] = [p4runtime_pb2.ValueSetMember(match=m.match) for m in msg.members]


def read_value_sets(session: PipelineSession, pipeline,
                    msg: p4runtime_pb2.ValueSetEntry) -> Iterator[p4runtime_pb2.ValueSetEntry]:
    ids = [msg.value_set_id] if msg.value_set_id else list(session.index.value_sets)
    for vid in ids:
        info = session.index.lookup("value_sets", vid)
        yield p4runtime_pb2.ValueSetEntry(value_set_id=info.id, members=session.value_sets.get(info.id, []))


def write_digest(session: PipelineSession, pipeline, update_type: int,
                 msg: p4runtime_pb2.DigestEntry) -> None:
    info = session.index.lookup("digests", msg.digest_id)
    what = f"digest '{info.name}' config"
    _check_update(update_type, info.id in session.digest_configs, what)
    if update_type == Update.DELETE:
        del session.digest_configs[info.id]
        return
    config = msg.config
    if config.max_timeout_ns < 0 or config.ack_timeout_ns < 0 or config.max_list_size < 0:
        raise invalid(f"{what}: negative timeout or list size")
    session.digest_configs[info.id] = p4runtime_pb2.DigestEntry.Config()
    session.digest_configs[info.id].CopyFrom(config)


def read_digests(session: PipelineSession, pipeline,
                 msg: p4runtime_pb2.DigestEntry) -> Iterator[p4runtime_pb2.DigestEntry]:
    ids = [msg.digest_id] if msg.digest_id else sorted(session.digest_configs)
    for did in ids:
        info = session.index.lookup("digests", did)
        config = session.digest_configs.get(info.id)
        if config is not None:
            yield p4runtime_pb2.DigestEntry(digest_id=info.id, config=config)
