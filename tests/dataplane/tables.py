"""Program a p4sim Pipeline running dlcp.p4 through the runtime-table API (Contract 1).

Why this exists: the pipeline-level tests (priority, critical, spraying) install the same
kind of state the controller would, directly on p4sim's tables, without P4Runtime.
"""

from __future__ import annotations

from tests.dataplane.packets import SWITCH_MAC, host_mac


def mac_int(mac: str) -> int:
    return int(mac.replace(":", ""), 16)


class DlcpTables:
    """Helpers named after the contract's tables and actions."""

    def __init__(self, pipeline) -> None:
        from p4sim.runtime import tables as rt

        self.rt = rt
        self.pipeline = pipeline

    def _insert(self, table: str, match: tuple, action: str, args: tuple[int, ...], priority: int = 0) -> None:
        rt = self.rt
        self.pipeline.tables[table].insert(
            rt.TableEntry(match=match, action=rt.ActionCall(action, args), priority=priority))

    def route(self, prefix: int, plen: int, nexthop_id: int) -> None:
        self._insert("DlcpIngress.ipv4_routes", (self.rt.Lpm(prefix, plen),),
                     "DlcpIngress.route_to_nexthop", (nexthop_id,))

    def route_group(self, prefix: int, plen: int, group_id: int) -> None:
        self._insert("DlcpIngress.ipv4_routes", (self.rt.Lpm(prefix, plen),),
                     "DlcpIngress.route_to_group", (group_id,))

    def nexthop(self, nexthop_id: int, port: int) -> None:
        self._insert("DlcpIngress.nexthops", (self.rt.Exact(nexthop_id),), "DlcpIngress.set_nexthop",
                     (port, mac_int(SWITCH_MAC), mac_int(host_mac(port))))

    def group(self, group_id: int, members: list[int], spray: bool) -> None:
        """Group ``group_id`` over next hops ``members`` (member index = list position)."""
        rt = self.rt
        groups = self.pipeline.tables["DlcpIngress.ecmp_groups"]
        entry = rt.TableEntry(match=(rt.Exact(group_id),),
                              action=rt.ActionCall("DlcpIngress.set_ecmp_group", (len(members), int(spray))))
        if groups.find(entry.match, 0) is None:
            groups.insert(entry)
        else:
            groups.modify(entry)
        table = self.pipeline.tables["DlcpIngress.ecmp_members"]
        for old in [e for e in table if e.match[0] == rt.Exact(group_id)]:
            table.delete(old)
        for index, nexthop_id in enumerate(members):
            self._insert("DlcpIngress.ecmp_members", (rt.Exact(group_id), rt.Exact(index)),
                         "DlcpIngress.route_to_nexthop", (nexthop_id,))

    def priority_rule(self, queue: int, priority: int, **fields: tuple[int, int]) -> None:
        """set_queue(queue) for ternary ``fields`` (name=(value, mask)); others wildcard."""
        order = [k.name for k in self.pipeline.tables["DlcpIngress.priority_map"].keys]
        match = tuple(self.rt.Ternary(*fields[name]) if name in fields else None for name in order)
        self._insert("DlcpIngress.priority_map", match, "DlcpIngress.set_queue", (queue,), priority)

    def dlcp_port(self, udp_port: int) -> None:
        """DlcpIngress.dlcp_udp_ports: UDP destination ``udp_port`` carries DLCP."""
        self._insert("DlcpIngress.dlcp_udp_ports", (self.rt.Exact(udp_port),), "DlcpIngress.dlcp_port", ())

    def thresholds(self, queue: int, mag_class: int, drop_depth: int, ecn_depth: int) -> None:
        self._insert("DlcpIngress.drop_thresholds", (self.rt.Exact(queue), self.rt.Exact(mag_class)),
                     "DlcpIngress.set_thresholds", (drop_depth, ecn_depth))

    def depth_max_age(self, max_age_us: int) -> None:
        """Default action of the keyless DlcpIngress.depth_settings: recorded depths older than this are 0."""
        self.pipeline.tables["DlcpIngress.depth_settings"].set_default(
            self.rt.ActionCall("DlcpIngress.set_depth_max_age", (max_age_us,)))

    def queue_depth(self, port: int, queue: int, depth: int, at_us: int = 0) -> None:
        """Queue ``queue`` of ``port`` holds ``depth`` packets: the per-(port, queue) counts
        ingress reads (``enq_count_reg - deq_count_reg``, docs/dataplane.md "Per-queue depth").
        ``at_us`` is kept for callers of the timed record this replaced; counts do not age."""
        cell = port * 8 + queue
        self.pipeline.registers["enq_count_reg"].write(cell, depth)
        self.pipeline.registers["deq_count_reg"].write(cell, 0)

    def port_drain(self, port: int, pkts_per_s: int) -> None:
        """DlcpEgress.port_drain: ``port`` transmits ``pkts_per_s`` full-size packets a second."""
        self._insert("DlcpEgress.port_drain", (self.rt.Exact(port),),
                     "DlcpEgress.set_port_drain", (pkts_per_s,))
