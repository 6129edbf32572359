"""Routes, next hops and ECMP groups derived from a topology (shortest paths, all equal-cost ones).

For every switch and every edge subnet: the edge switch itself routes each attached host's /32 to a
next hop on the host's port; every other switch routes the /24 towards the edge switch over all
neighbours on a shortest path — one next hop, or an ECMP group when there are several.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from mininet_topos.topologies import Topology


@dataclass(frozen=True)
class Nexthop:
    id: int
    port: int
    smac: str
    dmac: str


@dataclass(frozen=True)
class EcmpGroup:
    id: int
    nexthop_ids: tuple[int, ...]
    spray: bool = True


@dataclass(frozen=True)
class Route:
    prefix: str
    nexthop_id: int | None = None
    group_id: int | None = None


@dataclass
class SwitchRoutes:
    nexthops: dict[int, Nexthop] = field(default_factory=dict)
    groups: dict[int, EcmpGroup] = field(default_factory=dict)
    routes: list[Route] = field(default_factory=list)

    def nexthop_for(self, port: int, smac: str, dmac: str) -> int:
        for nh in self.nexthops.values():
            if (nh.port, nh.dmac) == (port, dmac):
                return nh.id
        nh = Nexthop(len(self.nexthops) + 1, port, smac, dmac)
        self.nexthops[nh.id] = nh
        return nh.id

    def group_for(self, nexthop_ids: tuple[int, ...]) -> int:
        for group in self.groups.values():
            if group.nexthop_ids == nexthop_ids:
                return group.id
        group = EcmpGroup(len(self.groups) + 1, nexthop_ids)
        self.groups[group.id] = group
        return group.id


def _switch_distances(topo: Topology, target: str) -> dict[str, int]:
    """Hop counts from every switch to ``target`` over switch-to-switch links."""
    dist = {target: 0}
    queue = deque([target])
    while queue:
        node = queue.popleft()
        for neighbour in topo.switches[node].ports.values():
            if neighbour in topo.switches and neighbour not in dist:
                dist[neighbour] = dist[node] + 1
                queue.append(neighbour)
    return dist


def _peer_port(topo: Topology, switch: str, port: int) -> int:
    for link in topo.links:
        if (link.a, link.a_port) == (switch, port):
            return link.b_port
        if (link.b, link.b_port) == (switch, port):
            return link.a_port
    raise ValueError(f"no link on {switch} port {port}")


def compute_routes(topo: Topology) -> dict[str, SwitchRoutes]:
    """All switches' routing state for ``topo``."""
    result = {name: SwitchRoutes() for name in topo.switches}
    edges = sorted({h.switch for h in topo.hosts.values()}, key=list(topo.switches).index)
    for edge in edges:
        dist = _switch_distances(topo, edge)
        for name, spec in topo.switches.items():
            state = result[name]
            if name == edge:
                for host in topo.hosts.values():
                    if host.switch == edge:
                        nh = state.nexthop_for(host.switch_port, spec.port_mac(host.switch_port), host.mac)
                        state.routes.append(Route(f"{host.ip}/32", nexthop_id=nh))
                continue
            if name not in dist:
                continue  # disconnected
            hops = []
            for port, neighbour in sorted(spec.ports.items()):
                if neighbour in topo.switches and dist.get(neighbour, -1) == dist[name] - 1:
                    peer = topo.switches[neighbour]
                    dmac = peer.port_mac(_peer_port(topo, name, port))
                    hops.append(state.nexthop_for(port, spec.port_mac(port), dmac))
            subnet = topo.subnet_of(edge)
            assert subnet is not None
            if len(hops) == 1:
                state.routes.append(Route(subnet, nexthop_id=hops[0]))
            elif hops:
                state.routes.append(Route(subnet, group_id=state.group_for(tuple(hops))))
    return result
