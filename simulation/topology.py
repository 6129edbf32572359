"""Fabric topologies for the simulator: leaf-spine and fat-tree at any size, named presets.

Why this exists: the experiment is defined by its fabric (hosts, switches, link rates, delays,
oversubscription); scenarios and reports take a Topology and never build links themselves.
Routing is all shortest paths (`next_hops`), as controller/desired.py derives for real switches:
one next hop is a plain route, several are an ECMP group.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Link:
    a: str
    b: str
    rate_bps: int
    delay_ns: int


@dataclass
class Topology:
    name: str
    description: str
    hosts: list[str] = field(default_factory=list)
    switches: list[str] = field(default_factory=list)
    links: list[Link] = field(default_factory=list)      # host links first (host is ``a``), then fabric
    # a switch port sends at this share of its link's rate; the transport's line rate and the policy's
    # delay thresholds keep the nominal rate. 1.0 everywhere but the Mininet cross-check's model of a
    # software switch that loses link time to its stalls (crosscheck --switch-rate-share)
    switch_rate_share: float = 1.0
    # host -> ephemeral TCP ports the host skips before its first connection (ns-3 hands them out in turn from
    # 49153): which spine a TCP flow takes is a hash of its ports, so this chooses the per-flow ECMP placement.
    # Empty everywhere but the Mininet cross-check's placements (simulation/ecmp_placement.py)
    tcp_port_skip: dict[str, int] = field(default_factory=dict)

    def host_switch(self, host: str) -> str:
        for link in self.links:
            if link.a == host:
                return link.b
        raise KeyError(host)

    def neighbours(self) -> dict[str, list[str]]:
        adj: dict[str, list[str]] = {n: [] for n in self.hosts + self.switches}
        for link in self.links:
            adj[link.a].append(link.b)
            adj[link.b].append(link.a)
        return adj


def leaf_spine(leaves: int, spines: int, hosts_per_leaf: int, host_bps: int, fabric_bps: int,
               delay_ns: int = 1000, name: str = "leaf-spine") -> Topology:
    """``leaves`` x ``spines``, every leaf linked to every spine: ``spines`` equal-cost paths."""
    if min(leaves, spines, hosts_per_leaf) < 1:
        raise ValueError(f"leaf-spine needs at least one leaf, spine and host per leaf "
                         f"(got {leaves}, {spines}, {hosts_per_leaf})")
    down, up = hosts_per_leaf * host_bps, spines * fabric_bps
    topo = Topology(name, f"leaf-spine: {leaves} leaves x {hosts_per_leaf} hosts, {spines} spines, hosts "
                          f"{host_bps / 1e9:g} Gbit/s, fabric {fabric_bps / 1e9:g} Gbit/s, "
                          f"oversubscription {down / up:g}:1, {delay_ns} ns per link")
    topo.switches = [f"leaf{i}" for i in range(leaves)] + [f"spine{j}" for j in range(spines)]
    for i in range(leaves):
        for h in range(hosts_per_leaf):
            host = f"h{i * hosts_per_leaf + h}"
            topo.hosts.append(host)
            topo.links.append(Link(host, f"leaf{i}", host_bps, delay_ns))
    for i in range(leaves):
        for j in range(spines):
            topo.links.append(Link(f"leaf{i}", f"spine{j}", fabric_bps, delay_ns))
    return topo


def fat_tree(k: int, rate_bps: int, delay_ns: int = 1000, name: str = "fat-tree") -> Topology:
    """The k-ary fat-tree (k even): k pods of k/2 edge and k/2 aggregation switches, (k/2)^2 cores,
    k^3/4 hosts, every link ``rate_bps`` (full bisection)."""
    if k < 2 or k % 2:
        raise ValueError(f"fat-tree k must be even and >= 2 (got {k})")
    half = k // 2
    topo = Topology(name, f"fat-tree k={k}: {k ** 3 // 4} hosts, {k * k + half * half} switches, all links "
                          f"{rate_bps / 1e9:g} Gbit/s, no oversubscription, {delay_ns} ns per link")
    cores = [f"core{c}" for c in range(half * half)]
    for p in range(k):
        for e in range(half):
            topo.switches.append(f"edge{p}_{e}")
            for h in range(half):
                host = f"h{(p * half + e) * half + h}"
                topo.hosts.append(host)
                topo.links.append(Link(host, f"edge{p}_{e}", rate_bps, delay_ns))
        topo.switches += [f"agg{p}_{a}" for a in range(half)]
    topo.switches += cores
    for p in range(k):
        for e in range(half):
            for a in range(half):
                topo.links.append(Link(f"edge{p}_{e}", f"agg{p}_{a}", rate_bps, delay_ns))
        for a in range(half):
            for c in range(half):
                topo.links.append(Link(f"agg{p}_{a}", cores[a * half + c], rate_bps, delay_ns))
    return topo


PRESETS = {
    # the Mininet demo's default (mininet_topos/topologies.py leaf_spine(), dlcp-exp --link-mbps 20)
    "mininet-demo": lambda: leaf_spine(2, 2, 2, 20_000_000, 20_000_000, 50_000, "mininet-demo"),
    # the small end-to-end scenario of make test: 16 hosts, 2:1 oversubscribed
    "small-16": lambda: leaf_spine(4, 2, 4, 10_000_000_000, 10_000_000_000, 1000, "small-16"),
    "fat-tree-16": lambda: fat_tree(4, 10_000_000_000, 1000, "fat-tree-16"),
    # the load sweep's fabric: 16 hosts, 4 leaves x 4, 4 spines, 10 Gbit/s everywhere (1:1, so load on
    # host links is load on the fabric too)
    "sweep-16": lambda: leaf_spine(4, 4, 4, 10_000_000_000, 10_000_000_000, 1000, "sweep-16"),
    # the Mininet scenarios' leaf-spines (mininet_topos/scenarios.py): 2 leaves x 3 / x 4 hosts, 2 spines
    "mininet-tcp-bulk": lambda: leaf_spine(2, 2, 3, 20_000_000, 20_000_000, 50_000, "mininet-tcp-bulk"),
    "mininet-ecmp-collision": lambda: leaf_spine(2, 2, 4, 20_000_000, 20_000_000, 50_000, "mininet-ecmp-collision"),
    # the paper's fabric: 144 hosts, 9 leaves x 16, 4 spines, 100 Gbit/s hosts, 400 Gbit/s fabric (1:1)
    "paper-144": lambda: leaf_spine(9, 4, 16, 100_000_000_000, 400_000_000_000, 1000, "paper-144"),
    # the scale study around it: same leaves, spines and rates, 16 / 64 / 288 hosts
    "scale-16": lambda: leaf_spine(1, 4, 16, 100_000_000_000, 400_000_000_000, 1000, "scale-16"),
    "scale-64": lambda: leaf_spine(4, 4, 16, 100_000_000_000, 400_000_000_000, 1000, "scale-64"),
    "scale-288": lambda: leaf_spine(18, 4, 16, 100_000_000_000, 400_000_000_000, 1000, "scale-288"),
}


def preset(name: str) -> Topology:
    if name not in PRESETS:
        raise KeyError(f"unknown preset '{name}' (known: {', '.join(PRESETS)})")
    return PRESETS[name]()


def next_hops(topo: Topology) -> dict[str, dict[str, list[str]]]:
    """switch -> host -> the neighbours on a shortest path to it (several = an ECMP group)."""
    adj = topo.neighbours()
    plan: dict[str, dict[str, list[str]]] = {s: {} for s in topo.switches}
    for host in topo.hosts:
        dist = {host: 0}
        todo = deque([host])
        while todo:
            node = todo.popleft()
            for n in adj[node]:
                if n not in dist and (n in plan or n == host):
                    dist[n] = dist[node] + 1
                    todo.append(n)
        for s in topo.switches:
            if s in dist:
                plan[s][host] = sorted(n for n in adj[s] if dist.get(n) == dist[s] - 1)
    return plan
