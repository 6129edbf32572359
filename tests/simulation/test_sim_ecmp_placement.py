"""ECMP placements of the cross-check's TCP runs (simulation/ecmp_placement.py, Topology.tcp_port_skip).

Why this exists: which of ecmp-collision's flows share a spine decides the TCP ring's time (ns-3: 1.91 s per
iteration with every flow on one spine, 0.78 s with the ring apart from the PS), and it is a hash of the
connections' ports: Linux draws them at random per Mininet run, ns-3 hands them out in turn. The placement
read from a Mininet run must be the one its switches used (checked against a pcap study's spines), and the
ports ns-3's hosts skip must give the rebuild the same placement. Budget: < 1 s without ns-3; the port-skip
test ~20-30 s (the ns-3 import).
"""

from __future__ import annotations

import itertools

import pytest

from simulation import ecmp_placement as ep


def test_member_is_the_spine_the_mininet_switches_chose() -> None:
    """TCP 4-tuples seen entering spine1 (member 0) and spine2 (member 1) in the pcaps of session 15's
    ecmp-collision TCP cubic study (20261203-212852; all 124 of its 4-tuples agree)."""
    seen = [("10.0.1.2", 48392, "10.0.2.1", 9290, 0), ("10.0.2.4", 45376, "10.0.1.3", 9290, 0),
            ("10.0.2.1", 9290, "10.0.1.1", 58116, 0), ("10.0.1.4", 57260, "10.0.2.4", 9290, 0),
            ("10.0.1.1", 58116, "10.0.2.1", 9290, 1), ("10.0.1.3", 52362, "10.0.2.3", 9290, 1),
            ("10.0.2.1", 9290, "10.0.1.2", 46418, 1), ("10.0.2.3", 38740, "10.0.1.4", 9290, 1)]
    for src, sport, dst, dport, spine in seen:
        assert ep.member(ep.ip_int(src), ep.ip_int(dst), sport, dport) == spine


def test_the_rebuild_as_is_puts_every_flow_on_one_spine() -> None:
    """ns-3's own ports (49153, 49154, ... per host) hash every data direction of both jobs to member 1: each
    ring flow shares its spine with both PS flows of its direction, the most colliding placement there is."""
    assert ep.ns3_placement({}) == {f: 1 for f in ep.FLOWS}
    assert ep.collisions(ep.ns3_placement({})) == 8
    apart = {f: int(f in ep.RING) for f in ep.FLOWS}
    assert ep.collisions(apart) == 0 and ep.collisions({f: 0 for f in ep.FLOWS}) == 8


def test_port_skips_give_the_rebuild_any_placement() -> None:
    for bits in itertools.product((0, 1), repeat=len(ep.FLOWS)):
        want = dict(zip(ep.FLOWS, bits, strict=True))
        skips = ep.ns3_port_skips(want)
        assert ep.ns3_placement(skips) == want
        assert set(skips) <= {f"h{i}" for i in range(8)} and all(0 <= k < 64 for k in skips.values())


def test_a_runs_placement_from_its_connections() -> None:
    ip = {"h1": "10.0.1.1", "h2": "10.0.1.2", "h3": "10.0.1.3", "h4": "10.0.1.4", "h5": "10.0.2.1",
          "h7": "10.0.2.3", "h8": "10.0.2.4"}
    conns = [("10.0.1.1:58116", "10.0.2.1:9290"), ("10.0.2.1:9290", "10.0.1.2:46418"),   # seen from either end
             ("10.0.1.3:52362", "10.0.2.3:9290"), ("10.0.2.3:33742", "10.0.1.4:9290"),
             ("10.0.1.4:44550", "10.0.2.4:9290"), ("10.0.2.4:45376", "10.0.1.3:9290")]
    got = ep.mininet_placement(conns, ip)
    assert got == {"h1>h5": 1, "h2>h5": ep.member(ep.ip_int("10.0.1.2"), ep.ip_int("10.0.2.1"), 46418, 9290),
                   "h5>h1": ep.member(ep.ip_int("10.0.2.1"), ep.ip_int("10.0.1.1"), 9290, 58116), "h5>h2": 1,
                   "h3>h7": 1, "h7>h4": 0, "h4>h8": 1, "h8>h3": 0}     # the spines their pcaps show
    assert ep.mininet_placement(conns[1:], ip) is None            # h1 and h5 never connected: not known


def test_tcp_port_skip_moves_the_first_ephemeral_port() -> None:
    """In real ns-3: a host's first connection binds 49153 + its skip; an unknown host is refused in one line."""
    from simulation import switch_model
    from simulation.policy import policy_for
    from simulation.scenario import build_network
    from simulation.topology import preset

    ns, _ = switch_model.ns3()
    topo = preset("mininet-ecmp-collision")
    topo.tcp_port_skip = {"h2": 7}
    net = build_network(topo, policy_for(20_000_000, None), "tcp-cubic")
    ports = {}
    for host in ("h1", "h2"):
        s = ns.Socket.CreateSocket(net.nodes[host], ns.TcpSocketFactory.GetTypeId())
        s.Bind()
        addr = ns.Address()
        s.GetSockName(addr)
        ports[host] = ns.InetSocketAddress.ConvertFrom(addr).GetPort()
    assert ports == {"h1": ep.NS3_FIRST_EPHEMERAL, "h2": ep.NS3_FIRST_EPHEMERAL + 7}
    topo.tcp_port_skip = {"h9": 1}
    with pytest.raises(ValueError, match="tcp_port_skip: 'h9': 1 \\(a host of mininet-ecmp-collision"):
        build_network(topo, policy_for(20_000_000, None), "tcp-cubic")
