"""Topology shapes, addressing and derived routing (pure data: no root needed)."""

import ipaddress

import pytest

from mininet_topos.routing import compute_routes
from mininet_topos.topologies import build, dumbbell, fat_tree, leaf_spine, star


def test_star_addresses_hosts_from_one_subnet():
    topo = star(hosts=3)
    assert [h.ip for h in topo.hosts.values()] == ["10.0.1.1", "10.0.1.2", "10.0.1.3"]
    assert {h.switch_port for h in topo.hosts.values()} == {1, 2, 3}
    assert all(h.gateway == "10.0.1.254" for h in topo.hosts.values())


def test_leaf_spine_links_every_leaf_to_every_spine():
    topo = leaf_spine(spines=2, leaves=3, hosts_per_leaf=2)
    assert len(topo.hosts) == 6
    inter = [(link.a, link.b) for link in topo.links if link.a.startswith("leaf")]
    assert sorted(inter) == sorted((f"leaf{i}", f"spine{j}") for i in (1, 2, 3) for j in (1, 2))


def test_fat_tree_k4_sizes():
    topo = fat_tree(4)
    assert len(topo.hosts) == 16
    assert len(topo.switches) == 20
    assert sum(1 for link in topo.links if link.a in topo.switches) == 32


def test_fat_tree_rejects_odd_k():
    with pytest.raises(ValueError, match="even"):
        fat_tree(3)


def test_unknown_topology_is_named():
    with pytest.raises(ValueError, match="unknown topology 'ring'"):
        build("ring")


def test_leaf_spine_routes_use_an_ecmp_group_over_both_spines():
    topo = leaf_spine(spines=2, leaves=2, hosts_per_leaf=1)
    routes = compute_routes(topo)
    leaf1 = routes["leaf1"]
    remote = [r for r in leaf1.routes if r.prefix == "10.0.2.0/24"]
    assert len(remote) == 1 and remote[0].group_id is not None
    group = leaf1.groups[remote[0].group_id]
    ports = sorted(leaf1.nexthops[n].port for n in group.nexthop_ids)
    assert ports == [2, 3]  # port 1 is the host, 2 and 3 go to spine1 and spine2
    local = [r for r in leaf1.routes if r.prefix == "10.0.1.1/32"]
    assert leaf1.nexthops[local[0].nexthop_id].dmac == topo.hosts["h1"].mac
    # a spine has one path down to each leaf
    spine = routes["spine1"]
    assert {r.prefix for r in spine.routes} == {"10.0.1.0/24", "10.0.2.0/24"}
    assert all(r.nexthop_id is not None for r in spine.routes)


def test_next_hop_macs_point_at_the_peer_port():
    topo = dumbbell(1, 1)
    s1 = compute_routes(topo)["s1"]
    (route,) = [r for r in s1.routes if r.prefix == "10.0.2.0/24"]
    nh = s1.nexthops[route.nexthop_id]
    assert nh.dmac == topo.switches["s2"].port_mac(2)
    assert nh.smac == topo.switches["s1"].port_mac(2)


def test_every_host_is_routable_from_every_switch_in_a_fat_tree():
    topo = fat_tree(4)
    routes = compute_routes(topo)
    for name, state in routes.items():
        nets = [ipaddress.ip_network(r.prefix) for r in state.routes]
        for host in topo.hosts.values():
            assert any(ipaddress.ip_address(host.ip) in n for n in nets), (name, host.name)
