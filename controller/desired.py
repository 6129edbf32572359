"""Network description -> the exact entries each switch should hold (built by name, checked).

Routing: every host gets a /32 on every switch. On the host's own switch it points at a nexthop
for the host's port; elsewhere it follows all shortest paths in the switch graph: one next port is
a plain nexthop, several are an ECMP group (spraying per the policy unless a route says otherwise).
Explicit ``routes`` in the YAML replace derived ones with the same prefix. Ids are stable:
nexthop id = egress port; group ids number the distinct (ports, spray) sets in sorted order.
"""

from __future__ import annotations

import logging
from collections import deque
from dataclasses import dataclass, field

from p4.v1 import p4runtime_pb2

from controller import dlcp_tables as api
from controller.errors import ConfigError
from controller.netconfig import NetConfig
from controller.p4info_index import P4InfoIndex

log = logging.getLogger("controller.desired")


@dataclass
class SwitchDesired:
    """What one switch should hold: table entries (insert order), default entries, and parser value
    sets (none for the DLCP programs; kept for programs that have them)."""

    switch: str
    entries: list[p4runtime_pb2.TableEntry] = field(default_factory=list)
    defaults: list[p4runtime_pb2.TableEntry] = field(default_factory=list)   # default-action entries
    value_sets: list[p4runtime_pb2.ValueSetEntry] = field(default_factory=list)


def _distances(net: NetConfig, target: str) -> dict[str, int]:
    adj: dict[str, set[str]] = {s: set() for s in net.switches}
    for a, _, b, _ in net.links:
        adj[a].add(b)
        adj[b].add(a)
    dist = {target: 0}
    todo = deque([target])
    while todo:
        s = todo.popleft()
        for n in adj[s]:
            if n not in dist:
                dist[n] = dist[s] + 1
                todo.append(n)
    return dist


def _next_ports(net: NetConfig, switch: str, target: str, dist: dict[str, int]) -> tuple[int, ...]:
    ports = []
    for a, pa, b, pb in net.links:
        for here, port, there in ((a, pa, b), (b, pb, a)):
            if here == switch and there in dist and dist.get(switch) is not None \
                    and dist[there] == dist[switch] - 1:
                ports.append(port)
    return tuple(sorted(set(ports)))


def route_plan(net: NetConfig, switch: str) -> dict[str, tuple[tuple[int, ...], bool | None]]:
    """``{prefix: (ports, spray)}`` for one switch (derived routes, then explicit overrides)."""
    plan: dict[str, tuple[tuple[int, ...], bool | None]] = {}
    if net.derive_routes:
        for host in net.hosts.values():
            if host.switch == switch:
                plan[f"{host.ip}/32"] = ((host.port,), None)
                continue
            dist = _distances(net, host.switch)
            if switch not in dist:
                log.warning("switch %s: host %s unreachable, no route", switch, host.name)
                continue
            plan[f"{host.ip}/32"] = (_next_ports(net, switch, host.switch, dist), None)
    for r in net.routes:
        if r.switch == switch:
            plan[r.prefix] = (r.ports, r.spray)
    return plan


def _dmac(net: NetConfig, switch: str, port: int) -> int:
    peer = net.peer(switch, port)
    if peer is None:
        raise ConfigError(str(net.path), None, f"switches.{switch}",
                          f"route leaves through port {port}, which is connected to nothing")
    kind, name, _ = peer
    return net.hosts[name].mac if kind == "host" else net.switches[name].mac


def build_switch(net: NetConfig, index: P4InfoIndex, switch: str) -> SwitchDesired:
    """Every entry switch ``switch`` should hold, in insert (dependency) order."""
    conf = net.switch(switch)
    plan = route_plan(net, switch)
    out = SwitchDesired(switch)
    for udp_port in sorted(set(net.policy.udp_ports)):
        out.entries.append(api.udp_port(index, udp_port, wire=True))
    ports = sorted({p for ports, _ in plan.values() for p in ports})
    for port in ports:
        out.entries.append(api.nexthop(index, port, port, conf.mac, _dmac(net, switch, port), wire=True))
    groups: dict[tuple[tuple[int, ...], bool], int] = {}
    for key in sorted({(p, net.policy.spray if s is None else s) for p, s in plan.values() if len(p) > 1}):
        groups[key] = len(groups) + 1
    for (members, spray), gid in groups.items():
        out.entries.append(api.ecmp_group(index, gid, len(members), spray, wire=True))
    for (members, _), gid in groups.items():
        for i, port in enumerate(members):
            out.entries.append(api.ecmp_member(index, gid, i, port, wire=True))
    for prefix, (members, spray) in sorted(plan.items()):
        if len(members) == 1:
            out.entries.append(api.route(index, prefix, nexthop=members[0], wire=True))
        else:
            gid = groups[(members, net.policy.spray if spray is None else spray)]
            out.entries.append(api.route(index, prefix, group=gid, wire=True))
    pol = net.policy
    for rule in pol.priority_map:
        out.entries.append(api.priority_rule(index, dict(rule.match), rule.queue, rule.priority, wire=True))
    drains = port_drains(net, switch, ports)
    thresholds, drains = thresholds_in_packets(net, switch, drains)
    for (queue, mag), (drop, ecn) in sorted(thresholds.items()):
        out.entries.append(api.threshold(index, queue, mag, drop, ecn, wire=True))
    if index.has("table", api.PORT_DRAIN):
        for port, rate in sorted(drains.items()):
            if rate:    # unknown rate: the program's compiled-in default (20 Mbit/s) applies
                out.entries.append(api.port_drain(index, port, rate, wire=True))
    if pol.depth_max_age_us is not None and index.has("table", api.DEPTH_SETTINGS):
        out.defaults.append(api.depth_max_age(index, pol.depth_max_age_us))
    return out


DEPTH_MAX = (1 << 19) - 1       # bit<19> drop_depth/ecn_depth: "never"
# Rate assumed for a port of unknown rate when the thresholds are the shipped default's delays:
# 20 Mbit/s of full-size packets, the program's DLCP_PORT_DRAIN_PPS_DEFAULT and the Mininet link.
SHIPPED_DEFAULT_PPS = 1667


def port_drains(net: NetConfig, switch: str, route_ports: list[int]) -> dict[int, int | None]:
    """Every port of ``switch`` the YAML knows (hosts, links, ``ports`` settings, routes) -> the
    full-size packets per second it transmits (its ``rate_mbps``/``rate_pps``, else the network's
    ``queues`` ones), None where no rate is known."""
    conf = net.switch(switch)
    ports = set(route_ports) | set(conf.ports)
    ports |= {h.port for h in net.hosts.values() if h.switch == switch}
    for a, pa, b, pb in net.links:
        ports |= {pa} if a == switch else set()
        ports |= {pb} if b == switch else set()
    return {p: (conf.ports[p].merged(net.queues) if p in conf.ports else net.queues).drain_pps()
            for p in sorted(ports)}


def thresholds_in_packets(net: NetConfig, switch: str, drains: dict[int, int | None]
                          ) -> tuple[dict[tuple[int, int], tuple[int, int]], dict[int, int | None]]:
    """The policy's thresholds as drop_thresholds values, and the port_drain rate of each port.

    The data plane compares a queue's counted depth in packets (docs/dataplane.md "Per-queue
    depth"). Thresholds in packets stay as written. Thresholds given as queueing delay (µs)
    need the ports' rates: drop_thresholds serves every port of the switch, so a delay T
    becomes the full-size packets the switch's fastest port R sends in T, T * R / 10^6 (to the
    nearest packet: R itself is rounded to whole packets per second):
    a queue holding more than that has more than T of queueing at R (on a slower port, the
    same count is proportionally more delay). port_drain holds R on every port (the table is
    informational now). A port of unknown rate is a one-line error for the user's delay
    thresholds; the shipped default policy's delays assume 20 Mbit/s there (SHIPPED_DEFAULT_PPS),
    so a network YAML without rates keeps working as before."""
    pol = net.policy
    if pol.threshold_unit != "us":
        return dict(pol.thresholds), drains
    unknown = [p for p, rate in drains.items() if not rate]
    if unknown and pol.thresholds_shipped:      # install no port_drain entry the YAML does not give
        rates = {p: rate or SHIPPED_DEFAULT_PPS for p, rate in drains.items()}
        fastest = max(rates.values(), default=SHIPPED_DEFAULT_PPS)
        return {key: (_delay_to_packets(drop, fastest), _delay_to_packets(ecn, fastest))
                for key, (drop, ecn) in pol.thresholds.items()}, drains
    if unknown:
        where = f"switches.{switch}.ports.{unknown[0]}.rate_mbps"
        raise ConfigError(str(net.path), net.line("switches", switch), where,
                          f"the policy's thresholds are queueing delays (drop_delay_us) but the rate of "
                          f"{switch} port {unknown[0]} is unknown: set it, or queues.rate_mbps for every port")
    if not drains:
        return {}, drains
    fastest = max(r for r in drains.values() if r)
    converted = {key: (_delay_to_packets(drop, fastest), _delay_to_packets(ecn, fastest))
                 for key, (drop, ecn) in pol.thresholds.items()}
    return converted, {p: fastest for p in drains}


def _delay_to_packets(delay_us: int, pkts_per_s: int) -> int:
    """Full-size packets a port of ``pkts_per_s`` sends in ``delay_us`` (a queue deeper than
    that holds more than the delay), saturating at the bit<19> "never"."""
    return min(DEPTH_MAX, (delay_us * pkts_per_s + 500_000) // 1_000_000)     # nearest: pps is rounded


def build_all(net: NetConfig, indexes: dict[str, P4InfoIndex]) -> dict[str, SwitchDesired]:
    return {name: build_switch(net, indexes[name], name) for name in net.switches}
