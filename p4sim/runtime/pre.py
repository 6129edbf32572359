"""The packet replication engine: multicast groups and clone (mirror) sessions.

Contract 2 of docs/architecture.md, modelled on BMv2's ``simple_pre``: a multicast group is a
list of L1 nodes, each node a replication id (rid) and a set of ports; ``replicate(group)``
yields ``(rid, port)`` in node-association order, ports ascending within a node, as BMv2
walks them. The STF/CLI commands (``mc_mgrp_create``, ``mc_node_create``,
``mc_node_associate``) map one to one; P4Runtime sets a whole group at once with
``set_group``. Clone sessions send a copy to a port or to a multicast group, optionally
truncated, as ``mirroring_add`` / ``mirroring_add_mc`` configure them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from p4sim.errors import UserError


class PreError(UserError):
    """A replication-engine command that cannot be applied (unknown group, node, session)."""


@dataclass
class L1Node:
    rid: int
    ports: list[int]
    group: int | None = None


@dataclass
class CloneSession:
    session_id: int
    port: int | None = None            # egress port of the copy, or
    mcast_group: int | None = None     # a multicast group to replicate the copy to
    truncate_length: int = 0           # 0 = no truncation (bytes kept otherwise)
    class_of_service: int = 0
    replicas: list[tuple[int, int]] | None = None   # or an explicit (rid, port) list (P4Runtime)


@dataclass
class PacketReplicationEngine:
    groups: dict[int, list[int]] = field(default_factory=dict)      # group -> node handles
    nodes: dict[int, L1Node] = field(default_factory=dict)          # handle -> node
    sessions: dict[int, CloneSession] = field(default_factory=dict)
    _next_handle: int = 0

    # -- multicast (BMv2 CLI granularity) ---------------------------------------------------

    def mc_mgrp_create(self, group: int) -> None:
        if group in self.groups:
            raise PreError(f"multicast group {group} already exists")
        self.groups[group] = []

    def mc_mgrp_destroy(self, group: int) -> None:
        for h in self._group(group):
            self.nodes[h].group = None
        del self.groups[group]

    def mc_node_create(self, rid: int, ports: list[int]) -> int:
        handle = self._next_handle
        self._next_handle += 1
        self.nodes[handle] = L1Node(rid, sorted(set(ports)))
        return handle

    def mc_node_update(self, handle: int, ports: list[int]) -> None:
        self._node(handle).ports = sorted(set(ports))

    def mc_node_destroy(self, handle: int) -> None:
        node = self._node(handle)
        if node.group is not None:
            self.groups[node.group].remove(handle)
        del self.nodes[handle]

    def mc_node_associate(self, group: int, handle: int) -> None:
        handles = self._group(group)
        node = self._node(handle)
        if node.group is not None:
            raise PreError(f"multicast node {handle} is already associated with group {node.group}")
        node.group = group
        handles.append(handle)

    def mc_node_dissociate(self, group: int, handle: int) -> None:
        handles = self._group(group)
        if handle not in handles:
            raise PreError(f"multicast node {handle} is not associated with group {group}")
        handles.remove(handle)
        self._node(handle).group = None

    # -- multicast (P4Runtime granularity) ---------------------------------------------------

    def set_group(self, group: int, replicas: list[tuple[int, int]]) -> None:
        """Replace group ``group`` by ``replicas`` [(rid, port)], created if missing."""
        if group in self.groups:
            self.delete_group(group)
        self.groups[group] = []
        by_rid: dict[int, list[int]] = {}
        for rid, port in replicas:
            by_rid.setdefault(rid, []).append(port)
        for rid, ports in by_rid.items():
            self.mc_node_associate(group, self.mc_node_create(rid, ports))

    def delete_group(self, group: int) -> None:
        for h in list(self._group(group)):
            del self.nodes[h]
        del self.groups[group]

    def group_replicas(self, group: int) -> list[tuple[int, int]]:
        return self.replicate(group)

    def replicate(self, group: int) -> list[tuple[int, int]]:
        """(rid, port) copies for ``group``; an unknown group yields no copies (as BMv2)."""
        out: list[tuple[int, int]] = []
        for h in self.groups.get(group, ()):
            node = self.nodes[h]
            out.extend((node.rid, p) for p in node.ports)
        return out

    # -- clone sessions -----------------------------------------------------------------------

    def mirroring_add(self, session_id: int, port: int) -> None:
        self.sessions[session_id] = CloneSession(session_id, port=port)

    def mirroring_add_mc(self, session_id: int, group: int) -> None:
        self.sessions[session_id] = CloneSession(session_id, mcast_group=group)

    def set_clone_session(self, session_id: int, port: int | None = None,
                          replicas: list[tuple[int, int]] | None = None, truncate: int = 0,
                          class_of_service: int = 0) -> None:
        """P4Runtime form: a clone session to one port or to an explicit set of replicas."""
        self.sessions[session_id] = CloneSession(session_id, port=port, truncate_length=truncate,
                                                 class_of_service=class_of_service,
                                                 replicas=list(replicas) if replicas is not None else None)

    def delete_clone_session(self, session_id: int) -> None:
        self.mirroring_delete(session_id)

    def set_session(self, session: CloneSession) -> None:
        self.sessions[session.session_id] = session

    def mirroring_delete(self, session_id: int) -> None:
        if self.sessions.pop(session_id, None) is None:
            raise PreError(f"clone session {session_id} does not exist")

    def session(self, session_id: int) -> CloneSession | None:
        return self.sessions.get(session_id)

    def clone_targets(self, session_id: int) -> list[tuple[int, int]]:
        """(rid, port) destinations of a clone; an unconfigured session clones nothing."""
        s = self.sessions.get(session_id)
        if s is None:
            return []
        if s.replicas is not None:
            return list(s.replicas)
        if s.mcast_group is not None:
            return self.replicate(s.mcast_group)
        return [] if s.port is None else [(0, s.port)]

    # -- helpers ------------------------------------------------------------------------------

    def _group(self, group: int) -> list[int]:
        try:
            return self.groups[group]
        except KeyError:
            raise PreError(f"multicast group {group} does not exist") from None

    def _node(self, handle: int) -> L1Node:
        try:
            return self.nodes[handle]
        except KeyError:
            raise PreError(f"multicast node handle {handle} does not exist") from None

    def reset(self) -> None:
        self.groups.clear()
        self.nodes.clear()
        self.sessions.clear()
        self._next_handle = 0
