"""Parameterised DLCP topologies as plain data: switches, hosts, links with port numbers and addresses.

Topologies are data, not Mininet objects, so the same description drives Mininet (``network.py``),
derives the controller's routes and ECMP groups (``routing.py``) and can be unit-tested without
root. Addressing: every host sits behind exactly one edge switch; host ``i`` of edge switch ``e``
(both 1-based, in creation order) gets ``10.0.<e>.<i>/24`` with gateway ``10.0.<e>.254``.
Each switch has one router MAC ``00:d1:c0:00:00:<device id>`` (hex; the gateway MAC its hosts
resolve statically); host MACs are ``00:00:0a:00:<e>:<i>``. Routes and ECMP groups are not derived
here: the controller derives them from the links (``derive_routes`` in the network YAML).
"""

from __future__ import annotations

from dataclasses import dataclass, field

DEFAULT_LINK_BPS = 100_000_000  # emulated in the switch's traffic manager, not in tc


@dataclass
class SwitchSpec:
    """One P4 switch; ``ports`` maps port number -> neighbour node name."""

    name: str
    device_id: int
    role: str = "switch"  # edge | spine | core | aggregation | switch
    ports: dict[int, str] = field(default_factory=dict)

    @property
    def mac(self) -> str:
        return f"00:d1:c0:00:{self.device_id >> 8:02x}:{self.device_id & 0xFF:02x}"


@dataclass
class HostSpec:
    """One end host attached to ``switch`` on ``switch_port``."""

    name: str
    ip: str
    mac: str
    switch: str
    switch_port: int
    gateway: str


@dataclass
class LinkSpec:
    """A full-duplex link; ``rate_bps`` is emulated by the switches at both ends."""

    a: str
    a_port: int
    b: str
    b_port: int
    rate_bps: int = DEFAULT_LINK_BPS


@dataclass
class Topology:
    """A whole network description."""

    name: str
    switches: dict[str, SwitchSpec] = field(default_factory=dict)
    hosts: dict[str, HostSpec] = field(default_factory=dict)
    links: list[LinkSpec] = field(default_factory=list)
    _edge_index: dict[str, int] = field(default_factory=dict)

    def add_switch(self, name: str, role: str = "switch") -> SwitchSpec:
        if name in self.switches or name in self.hosts:
            raise ValueError(f"duplicate node name {name!r}")
        spec = SwitchSpec(name=name, device_id=len(self.switches) + 1, role=role)
        self.switches[name] = spec
        return spec

    def connect(self, a: str, b: str, rate_bps: int = DEFAULT_LINK_BPS) -> LinkSpec:
        """Link two switches on their next free ports."""
        a_port = self._next_port(a)
        self.switches[a].ports[a_port] = b
        b_port = self._next_port(b)
        self.switches[b].ports[b_port] = a
        link = LinkSpec(a, a_port, b, b_port, rate_bps)
        self.links.append(link)
        return link

    def add_host(self, switch: str, rate_bps: int = DEFAULT_LINK_BPS) -> HostSpec:
        """Attach a new host to an edge switch, addressing it from the switch's subnet."""
        edge = self._edge_index.setdefault(switch, len(self._edge_index) + 1)
        index = sum(1 for h in self.hosts.values() if h.switch == switch) + 1
        if index > 253 or edge > 255:
            raise ValueError(f"too many hosts on {switch} for the 10.0.<edge>.<i>/24 plan")
        name = f"h{len(self.hosts) + 1}"
        port = self._next_port(switch)
        self.switches[switch].ports[port] = name
        host = HostSpec(name=name, ip=f"10.0.{edge}.{index}", mac=f"00:00:0a:00:{edge:02x}:{index:02x}",
                        switch=switch, switch_port=port, gateway=f"10.0.{edge}.254")
        self.hosts[name] = host
        self.links.append(LinkSpec(name, 0, switch, port, rate_bps))
        return host

    def subnet_of(self, switch: str) -> str | None:
        edge = self._edge_index.get(switch)
        return f"10.0.{edge}.0/24" if edge else None

    def neighbours(self, switch: str) -> dict[int, str]:
        return dict(self.switches[switch].ports)

    def _next_port(self, switch: str) -> int:
        if switch not in self.switches:
            raise ValueError(f"unknown switch {switch!r}")
        used = self.switches[switch].ports
        return max(used, default=0) + 1


def star(hosts: int = 4, rate_bps: int = DEFAULT_LINK_BPS) -> Topology:
    """One switch, ``hosts`` hosts."""
    topo = Topology("star")
    topo.add_switch("s1", role="edge")
    for _ in range(hosts):
        topo.add_host("s1", rate_bps)
    return topo


def dumbbell(left: int = 2, right: int = 2, rate_bps: int = DEFAULT_LINK_BPS,
             bottleneck_bps: int = DEFAULT_LINK_BPS // 2) -> Topology:
    """Two edge switches joined by one bottleneck link."""
    topo = Topology("dumbbell")
    topo.add_switch("s1", role="edge")
    topo.add_switch("s2", role="edge")
    for _ in range(left):
        topo.add_host("s1", rate_bps)
    for _ in range(right):
        topo.add_host("s2", rate_bps)
    topo.connect("s1", "s2", bottleneck_bps)
    return topo


def leaf_spine(spines: int = 2, leaves: int = 2, hosts_per_leaf: int = 2,
               rate_bps: int = DEFAULT_LINK_BPS) -> Topology:
    """S spines x L leaves, every leaf linked to every spine: S equal-cost paths between leaves."""
    topo = Topology("leaf-spine")
    for i in range(1, leaves + 1):
        topo.add_switch(f"leaf{i}", role="edge")
    for i in range(1, spines + 1):
        topo.add_switch(f"spine{i}", role="spine")
    for i in range(1, leaves + 1):
        for _ in range(hosts_per_leaf):
            topo.add_host(f"leaf{i}", rate_bps)
    for i in range(1, leaves + 1):
        for j in range(1, spines + 1):
            topo.connect(f"leaf{i}", f"spine{j}", rate_bps)
    return topo


def fat_tree(k: int = 4, rate_bps: int = DEFAULT_LINK_BPS) -> Topology:
    """The k-ary fat tree: k pods of k/2 edge and k/2 aggregation switches, (k/2)^2 cores, k^3/4 hosts."""
    if k < 2 or k % 2:
        raise ValueError(f"fat-tree k must be an even number >= 2, got {k}")
    half = k // 2
    topo = Topology(f"fat-tree-k{k}")
    for pod in range(k):
        for e in range(half):
            topo.add_switch(f"e{pod}x{e}", role="edge")
    for pod in range(k):
        for a in range(half):
            topo.add_switch(f"a{pod}x{a}", role="aggregation")
    for c in range(half * half):
        topo.add_switch(f"c{c}", role="core")
    for pod in range(k):
        for e in range(half):
            for _ in range(half):
                topo.add_host(f"e{pod}x{e}", rate_bps)
    for pod in range(k):
        for e in range(half):
            for a in range(half):
                topo.connect(f"e{pod}x{e}", f"a{pod}x{a}", rate_bps)
        for a in range(half):
            for c in range(half):
                topo.connect(f"a{pod}x{a}", f"c{a * half + c}", rate_bps)
    return topo


TOPOLOGIES = {"star": star, "dumbbell": dumbbell, "leaf-spine": leaf_spine, "fat-tree": fat_tree}


def build(name: str, **params: int) -> Topology:
    """Build a topology by name (``star``, ``dumbbell``, ``leaf-spine``, ``fat-tree``)."""
    try:
        factory = TOPOLOGIES[name]
    except KeyError:
        raise ValueError(f"unknown topology {name!r}; choose one of {', '.join(TOPOLOGIES)}") from None
    return factory(**params)
