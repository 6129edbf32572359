"""Counter snapshots for ``dlcpctl stats``: per port/queue tx, selective drops and ECN marks per
class, malformed packets, egress safety drops and the spray distribution over ECMP members.

``snapshot`` reads every DLCP counter of one switch with wildcard reads (one Read per counter);
``rates`` turns two snapshots into per-second rates.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from p4.v1 import p4runtime_pb2

from controller import dlcp_tables as api
from controller.encoding import decode
from controller.errors import SwitchError
from controller.p4info_index import P4InfoIndex
from controller.p4rt_client import P4RuntimeClient


@dataclass
class Snapshot:
    switch: str
    time: float
    port_queue_tx: dict[tuple[int, int], tuple[int, int]] = field(default_factory=dict)
    selective_drops: dict[tuple[int, int], tuple[int, int]] = field(default_factory=dict)
    ecn_marks: dict[tuple[int, int], tuple[int, int]] = field(default_factory=dict)
    egress_safety_drops: dict[tuple[int, int], tuple[int, int]] = field(default_factory=dict)
    malformed: dict[str, int] = field(default_factory=dict)
    spray: dict[tuple[int, int], tuple[int, int]] = field(default_factory=dict)   # (group, member) -> pk, B
    depth: dict[tuple[int, int], int] = field(default_factory=dict)   # (port, queue) -> last depth (p4sim)
    port_depth: dict[int, int] = field(default_factory=dict)          # port -> last depth (p4sim)

    def as_json(self) -> dict:
        def table(d: dict, a: str, b: str) -> list[dict]:
            return [{a: k[0], b: k[1], "packets": v[0], "bytes": v[1]} for k, v in sorted(d.items())]
        return {"switch": self.switch, "time": self.time,
                "port_queue_tx": table(self.port_queue_tx, "port", "queue"),
                "selective_drops": table(self.selective_drops, "queue", "mag"),
                "ecn_marks": table(self.ecn_marks, "queue", "mag"),
                "egress_safety_drops": table(self.egress_safety_drops, "queue", "mag"),
                "malformed": self.malformed,
                "spray": table(self.spray, "group", "member"),
                "queue_depth": [{"port": k[0], "queue": k[1], "depth": v} for k, v in sorted(self.depth.items())],
                "port_depth": [{"port": k, "depth": v} for k, v in sorted(self.port_depth.items())]}


def _cells(client: P4RuntimeClient, index: P4InfoIndex, name: str) -> dict[int, tuple[int, int]]:
    if not index.has("counter", name):
        return {}
    out = {}
    for entry in client.read_counter(index.counter(name).preamble.id):
        if entry.data.packet_count or entry.data.byte_count:
            out[entry.index.index] = (entry.data.packet_count, entry.data.byte_count)
    return out


def _register_cells(client: P4RuntimeClient, index: P4InfoIndex, name: str) -> dict[int, int]:
    """Non-zero cells of a bit<N> register; empty where registers cannot be read (BMv2's
    P4Runtime server cannot) or the program has no such register."""
    if not index.has("register", name):
        return {}
    entity = p4runtime_pb2.Entity()
    entity.register_entry.register_id = index.register(name).preamble.id
    out = {}
    try:
        for found in client.read([entity]):
            reg = found.register_entry
            value = decode(reg.data.bitstring) if reg.data.HasField("bitstring") else 0
            if value:
                out[reg.index.index] = value
    except SwitchError:
        return {}
    return out


def snapshot(client: P4RuntimeClient, index: P4InfoIndex) -> Snapshot:
    snap = Snapshot(client.name, time.monotonic())
    snap.port_queue_tx = {divmod(i, 8): v for i, v in _cells(client, index, api.PORT_QUEUE_TX).items()}
    snap.selective_drops = {divmod(i, 16): v for i, v in _cells(client, index, api.SELECTIVE_DROPS).items()}
    snap.ecn_marks = {divmod(i, 16): v for i, v in _cells(client, index, api.ECN_MARKS).items()}
    snap.egress_safety_drops = {divmod(i, 16): v
                                for i, v in _cells(client, index, api.EGRESS_SAFETY_DROPS).items()}
    snap.depth = {divmod(i, 8): v for i, v in _register_cells(client, index, api.QUEUE_DEPTH_REG).items()}
    snap.port_depth = _register_cells(client, index, api.PORT_DEPTH_REG)
    malformed = _cells(client, index, api.MALFORMED)
    snap.malformed = {reason: malformed.get(i, (0, 0))[0] for i, reason in enumerate(api.MALFORMED_REASONS)}
    snap.spray = _spray(client, index)
    return snap


def _spray(client: P4RuntimeClient, index: P4InfoIndex) -> dict[tuple[int, int], tuple[int, int]]:
    """Packets and bytes per (group, member). The BMv2 program counts them in a direct counter of
    the members table; the Tofino program in an indexed counter at group * 16 + member (TNA has
    no direct counter on a selector-less table read by index; see p4src/tofino/control/routing.p4)."""
    if index.has("counter", api.ECMP_MEMBER_PACKETS):
        return {divmod(i, api.ECMP_MAX_MEMBERS): v
                for i, v in _cells(client, index, api.ECMP_MEMBER_PACKETS).items()}
    spray: dict[tuple[int, int], tuple[int, int]] = {}
    if index.has("table", api.ECMP_MEMBERS):
        table = index.table(api.ECMP_MEMBERS)
        fields = {m.name: m.id for m in table.match_fields}
        entity = p4runtime_pb2.Entity()
        entity.direct_counter_entry.table_entry.table_id = table.preamble.id
        for found in client.read([entity]):
            dc = found.direct_counter_entry
            match = {fm.field_id: decode(fm.exact.value) for fm in dc.table_entry.match}
            key = (match.get(fields.get("group_id"), 0), match.get(fields.get("member_index"), 0))
            spray[key] = (dc.data.packet_count, dc.data.byte_count)
    return spray


def rates(before: Snapshot, after: Snapshot) -> dict[tuple[int, int], float]:
    """Packets per second per (port, queue) between two snapshots."""
    dt = max(after.time - before.time, 1e-9)
    return {k: (v[0] - before.port_queue_tx.get(k, (0, 0))[0]) / dt for k, v in after.port_queue_tx.items()}
