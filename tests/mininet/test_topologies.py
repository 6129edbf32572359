"""Topology shapes, addressing and derived routing (pure data: no root needed)."""

import pytest

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


def test_each_switch_has_one_router_mac_its_hosts_use_as_gateway():
    topo = leaf_spine(spines=2, leaves=2, hosts_per_leaf=1)
    macs = {sw.mac for sw in topo.switches.values()}
    assert len(macs) == len(topo.switches)
    assert topo.switches["leaf1"].mac == "00:d1:c0:00:00:01"


def test_dumbbell_has_one_bottleneck_between_two_edges():
    topo = dumbbell(left=2, right=3, bottleneck_bps=10_000_000)
    inter = [link for link in topo.links if link.a in topo.switches]
    assert [(link.a, link.b, link.rate_bps) for link in inter] == [("s1", "s2", 10_000_000)]
    assert topo.subnet_of("s2") == "10.0.2.0/24"
    assert sum(1 for h in topo.hosts.values() if h.switch == "s2") == 3
