"""The DLCP data-plane API (docs/contracts-dlcp.md) as entry builders, one function per table.

This module is the only place that spells the DLCP table, action, field and counter names; the
desired-state builder, ``dlcpctl`` and the tests use these functions. Names are P4Info fully
qualified names, identical on BMv2 and Tofino.
"""

from __future__ import annotations

from p4.v1 import p4runtime_pb2

from controller.p4info_index import P4InfoIndex

UDP_PORTS = "DlcpIngress.dlcp_udp_ports"   # UDP destination port -> dlcp_port (a table, not a value set)
IPV4_ROUTES = "DlcpIngress.ipv4_routes"
NEXTHOPS = "DlcpIngress.nexthops"
ECMP_GROUPS = "DlcpIngress.ecmp_groups"
ECMP_MEMBERS = "DlcpIngress.ecmp_members"
PRIORITY_MAP = "DlcpIngress.priority_map"
DROP_THRESHOLDS = "DlcpIngress.drop_thresholds"
DEPTH_SETTINGS = "DlcpIngress.depth_settings"   # keyless: its default action is the setting
PORT_DRAIN = "DlcpEgress.port_drain"   # port -> full-size packets/s (BMv2's per-queue depth estimate)

PORT_QUEUE_TX = "DlcpEgress.port_queue_tx"
SELECTIVE_DROPS = "DlcpIngress.selective_drops"
ECN_MARKS = "DlcpIngress.ecn_marks"
MALFORMED = "DlcpIngress.malformed"
EGRESS_SAFETY_DROPS = "DlcpEgress.egress_safety_drops"
ECMP_MEMBER_PACKETS = "DlcpIngress.ecmp_member_packets"
QUEUE_DEPTH_REG = "queue_depth_reg"
PORT_DEPTH_REG = "port_depth_reg"   # last whole-port depth egress saw (display; drops use queue_depth_reg)

# Insert order (a route never points at a nexthop or group that is not there yet); deletes reverse it.
TABLE_ORDER = (UDP_PORTS, NEXTHOPS, ECMP_GROUPS, ECMP_MEMBERS, IPV4_ROUTES, PRIORITY_MAP, DROP_THRESHOLDS, PORT_DRAIN)

NUM_QUEUES = 8
NUM_MAG_CLASSES = 16
ECMP_MAX_MEMBERS = 16   # members per group (sizes.p4); the Tofino member counter's index is group*16+member
MALFORMED_REASONS = ("truncated", "bad_length", "bad_dtype", "bad_ipv4")   # DlcpIngress.malformed index order


def _builder(index: P4InfoIndex, wire: bool):
    """``wire=True``: a ``WireEntry`` (serialized directly; what ``desired`` uses for large
    installs); else a protobuf ``TableEntry``."""
    return index.build_wire_entry if wire else index.build_table_entry


def route(index: P4InfoIndex, prefix: str, *, nexthop: int | None = None,
          group: int | None = None, wire: bool = False) -> p4runtime_pb2.TableEntry:
    if group is not None:
        return _builder(index, wire)(IPV4_ROUTES, {"ipv4_dst": prefix}, "DlcpIngress.route_to_group",
                                       {"group_id": group})
    return _builder(index, wire)(IPV4_ROUTES, {"ipv4_dst": prefix}, "DlcpIngress.route_to_nexthop",
                                   {"nexthop_id": nexthop})


def nexthop(index: P4InfoIndex, nexthop_id: int, port: int, smac: object, dmac: object, *, wire: bool = False) -> p4runtime_pb2.TableEntry:
    return _builder(index, wire)(NEXTHOPS, {"nexthop_id": nexthop_id}, "DlcpIngress.set_nexthop",
                                   {"port": port, "smac": smac, "dmac": dmac})


def ecmp_group(index: P4InfoIndex, group_id: int, num_members: int, spray: bool, *, wire: bool = False) -> p4runtime_pb2.TableEntry:
    return _builder(index, wire)(ECMP_GROUPS, {"group_id": group_id}, "DlcpIngress.set_ecmp_group",
                                   {"num_members": num_members, "spray": int(spray)})


def ecmp_member(index: P4InfoIndex, group_id: int, member_index: int, nexthop_id: int, *, wire: bool = False) -> p4runtime_pb2.TableEntry:
    return _builder(index, wire)(ECMP_MEMBERS, {"group_id": group_id, "member_index": member_index},
                                   "DlcpIngress.route_to_nexthop", {"nexthop_id": nexthop_id})


def priority_rule(index: P4InfoIndex, match: dict[str, object], queue: int, priority: int, *, wire: bool = False) -> p4runtime_pb2.TableEntry:
    """``match`` maps ternary key -> (value, mask) or a plain value (exact)."""
    return _builder(index, wire)(PRIORITY_MAP, match, "DlcpIngress.set_queue", {"queue": queue},
                                   priority=priority)


def threshold(index: P4InfoIndex, queue: int, mag: int, drop: int, ecn: int, *, wire: bool = False) -> p4runtime_pb2.TableEntry:
    return _builder(index, wire)(DROP_THRESHOLDS, {"queue": queue, "mag_class": mag},
                                   "DlcpIngress.set_thresholds", {"drop_depth": drop, "ecn_depth": ecn})


def port_drain(index: P4InfoIndex, port: int, pkts_per_s: int, *, wire: bool = False) -> p4runtime_pb2.TableEntry:
    """How many full-size packets ``port`` transmits per second: BMv2 turns the time a packet
    waited in its queue into that queue's depth with it (docs/dataplane.md "Per-queue depth")."""
    return _builder(index, wire)(PORT_DRAIN, {"egress_port": port}, "DlcpEgress.set_port_drain",
                                 {"pkts_per_s": pkts_per_s})


def udp_port(index: P4InfoIndex, port: int, *, wire: bool = False) -> p4runtime_pb2.TableEntry:
    """UDP destination ``port`` carries DLCP. A table entry, not a parser value set: neither BMv2's
    nor Tofino's P4Runtime server writes value sets (docs/dataplane.md "Which UDP ports are DLCP")."""
    return _builder(index, wire)(UDP_PORTS, {"udp_dst_port": port}, "DlcpIngress.dlcp_port", {})


def depth_max_age(index: P4InfoIndex, max_age_us: int) -> p4runtime_pb2.TableEntry:
    """The default entry of ``depth_settings``: how long a recorded port depth counts."""
    return index.build_table_entry(DEPTH_SETTINGS, {}, "DlcpIngress.set_depth_max_age",
                                   {"max_age_us": max_age_us}, is_default=True)
