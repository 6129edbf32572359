"""Write and Read of action profile members and groups (action profiles and action selectors).

Members map an id to an action; groups (selectors only) bundle members with weights. A member
is put in the runtime group once per unit of weight, so the selector's hash picks members in
proportion to their weights; the weights as written are kept for read-back. Deleting a member a
group or an entry still uses, or a group an entry still uses, is FAILED_PRECONDITION.
"""

from __future__ import annotations

from collections.abc import Iterator

import grpc
from p4.v1 import p4runtime_pb2

from p4sim.p4runtime_server import runtime_bridge as rt
from p4sim.p4runtime_server.codec import decode_action_args, encode_action
from p4sim.p4runtime_server.errors import P4RuntimeError, invalid, not_found
from p4sim.p4runtime_server.p4info_index import ObjectInfo
from p4sim.p4runtime_server.session import ONE_SHOT_ID_BASE, PipelineSession

__all__ = ["write_member", "read_members", "write_group", "read_groups"]

Update = p4runtime_pb2.Update


def _profile(session: PipelineSession, pipeline, profile_id: int) -> tuple[ObjectInfo, object]:
    info = session.index.lookup("action_profiles", profile_id)
    profile = pipeline.action_profiles.get(info.name)
    if profile is None:
        raise P4RuntimeError(grpc.StatusCode.INTERNAL, f"action profile '{info.name}' missing")
    return info, profile


def _tables_using(session: PipelineSession, profile_id: int):
    return [t for t in session.index.tables.values() if t.implementation_id == profile_id]


def _entries_using(session: PipelineSession, pipeline, profile_id: int, attr: str, value: int) -> bool:
    for t in _tables_using(session, profile_id):
        for entry in pipeline.tables[t.name]:
            if getattr(entry, attr, None) == value:
                return True
    return False


def write_member(session: PipelineSession, pipeline, update_type: int,
                 msg: p4runtime_pb2.ActionProfileMember) -> None:
    info, profile = _profile(session, pipeline, msg.action_profile_id)
    members = rt.profile_members(profile)
    mid = msg.member_id
    if mid >= ONE_SHOT_ID_BASE:
        raise invalid(f"action profile '{info.name}': member ids from {ONE_SHOT_ID_BASE:#x} up are "
                      f"reserved for one-shot selector programming")
    if update_type == Update.DELETE:
        if mid not in members:
            raise not_found(f"action profile '{info.name}': member {mid} does not exist")
        groups = getattr(profile, "groups", None) or {}
        if any(mid in g for g in groups.values()) or \
                _entries_using(session, pipeline, info.id, "member_id", mid):
            raise P4RuntimeError(grpc.StatusCode.FAILED_PRECONDITION,
                                 f"action profile '{info.name}': member {mid} is still in use")
        del members[mid]
        return
    if update_type == Update.INSERT and mid in members:
        raise P4RuntimeError(grpc.StatusCode.ALREADY_EXISTS,
                             f"action profile '{info.name}': member {mid} already exists")
    if update_type == Update.MODIFY and mid not in members:
        raise not_found(f"action profile '{info.name}': member {mid} does not exist")
    if update_type not in (Update.INSERT, Update.MODIFY):
        raise invalid(f"action profile '{info.name}': bad update type {update_type}")
    action = session.index.action(msg.action.action_id)
    if not any(action.id in t.action_scopes for t in _tables_using(session, info.id)):
        raise invalid(f"action profile '{info.name}': action '{action.name}' is not an action of "
                      f"its tables")
    args = decode_action_args(action, msg.action.params)
    user_members = sum(1 for m in members if m < ONE_SHOT_ID_BASE)
    if update_type == Update.INSERT and info.size and user_members >= info.size:
        raise P4RuntimeError(grpc.StatusCode.RESOURCE_EXHAUSTED,
                             f"action profile '{info.name}' is full ({info.size} members)")
    members[mid] = rt.action_call(action.name, args)


def read_members(session: PipelineSession, pipeline,
                 msg: p4runtime_pb2.ActionProfileMember) -> Iterator[p4runtime_pb2.ActionProfileMember]:
    ids = [msg.action_profile_id] if msg.action_profile_id else list(session.index.action_profiles)
    for pid in ids:
        info, profile = _profile(session, pipeline, pid)
        members = rt.profile_members(profile)
        wanted = [msg.member_id] if msg.member_id else sorted(m for m in members if m < ONE_SHOT_ID_BASE)
        for mid in wanted:
            call = members.get(mid)
            if call is None:
                continue
            out = p4runtime_pb2.ActionProfileMember(action_profile_id=info.id, member_id=mid)
            out.action.CopyFrom(encode_action(session.index, call.name, call.args))
            yield out


def write_group(session: PipelineSession, pipeline, update_type: int,
                msg: p4runtime_pb2.ActionProfileGroup) -> None:
    info, profile = _profile(session, pipeline, msg.action_profile_id)
    if not info.with_selector:
        raise invalid(f"action profile '{info.name}' has no selector; it has no groups")
    groups = rt.profile_groups(profile)
    gid = msg.group_id
    if gid >= ONE_SHOT_ID_BASE:
        raise invalid(f"action profile '{info.name}': group ids from {ONE_SHOT_ID_BASE:#x} up are "
                      f"reserved for one-shot selector programming")
    key = (info.name, gid)
    if update_type == Update.DELETE:
        if gid not in groups:
            raise not_found(f"action profile '{info.name}': group {gid} does not exist")
        if _entries_using(session, pipeline, info.id, "group_id", gid):
            raise P4RuntimeError(grpc.StatusCode.FAILED_PRECONDITION,
                                 f"action profile '{info.name}': group {gid} is still in use")
        del groups[gid]
        session.group_weights.pop(key, None)
        return
    if update_type == Update.INSERT and gid in groups:
        raise P4RuntimeError(grpc.StatusCode.ALREADY_EXISTS,
                             f"action profile '{info.name}': group {gid} already exists")
    if update_type == Update.MODIFY and gid not in groups:
        raise not_found(f"action profile '{info.name}': group {gid} does not exist")
    if update_type not in (Update.INSERT, Update.MODIFY):
        raise invalid(f"action profile '{info.name}': bad update type {update_type}")
    members = rt.profile_members(profile)
    weights: dict[int, tuple[int, bytes]] = {}
    for m in msg.members:
        if m.member_id not in members or m.member_id >= ONE_SHOT_ID_BASE:
            raise not_found(f"action profile '{info.name}': group {gid} names member {m.member_id}, "
                            f"which does not exist")
        if m.member_id in weights:
            raise invalid(f"action profile '{info.name}': member {m.member_id} is twice in group {gid}")
        if m.weight <= 0:
            raise invalid(f"action profile '{info.name}': member {m.member_id} weight {m.weight} must be > 0")
        weights[m.member_id] = (m.weight, m.watch_port if m.WhichOneof("watch_kind") == "watch_port" else b"")
    max_size = info.max_group_size
    if msg.max_size and max_size and msg.max_size > max_size:
        raise P4RuntimeError(grpc.StatusCode.RESOURCE_EXHAUSTED,
                             f"action profile '{info.name}': max_size {msg.max_size} exceeds the "
                             f"selector's max group size {max_size}")
    limit = msg.max_size or max_size
    total_weight = sum(w for w, _ in weights.values())
    if limit and total_weight > limit:
        raise P4RuntimeError(grpc.StatusCode.RESOURCE_EXHAUSTED,
                             f"action profile '{info.name}': group {gid} holds {total_weight} > {limit}")
    groups[gid] = [mid for mid, (w, _) in weights.items() for _ in range(w)]
    session.group_weights[key] = weights
    if msg.max_size:
        session.group_weights[key][-1] = (msg.max_size, b"")   # remembered for read-back


def read_groups(session: PipelineSession, pipeline,
                msg: p4runtime_pb2.ActionProfileGroup) -> Iterator[p4runtime_pb2.ActionProfileGroup]:
    ids = [msg.action_profile_id] if msg.action_profile_id else \
        [p.id for p in session.index.action_profiles.values() if p.with_selector]
    for pid in ids:
        info, profile = _profile(session, pipeline, pid)
        if not info.with_selector:
            raise invalid(f"action profile '{info.name}' has no selector; it has no groups")
        groups = rt.profile_groups(profile)
        wanted = [msg.group_id] if msg.group_id else sorted(g for g in groups if g < ONE_SHOT_ID_BASE)
        for gid in wanted:
            if gid not in groups:
                continue
            out = p4runtime_pb2.ActionProfileGroup(action_profile_id=info.id, group_id=gid)
            weights = session.group_weights.get((info.name, gid))
            if weights is None:
                weights = {}
                for mid in groups[gid]:
                    w = weights.get(mid, (0, 0))[0]
                    weights[mid] = (w + 1, b"")
            for mid, (weight, watch) in weights.items():
                if mid == -1:
                    out.max_size = weight
                    continue
                member = out.members.add(member_id=mid, weight=weight)
                if watch:
                    member.watch_port = watch
            yield out
