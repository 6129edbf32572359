"""Each topology in real Mininet namespaces through p4sim switches: reachability and clean teardown."""

import subprocess
import sys

import pytest
import yaml

from mininet_topos import agents
from mininet_topos.experiment import ExperimentConfig, compile_pipeline, netconfig
from mininet_topos.network import EmulatedNetwork, leftovers
from mininet_topos.topologies import build

pytestmark = [pytest.mark.mininet, pytest.mark.slow]

TOPOLOGIES = [
    ("star", {"hosts": 3}),
    ("dumbbell", {"left": 2, "right": 2}),
    ("leaf-spine", {"spines": 2, "leaves": 2, "hosts_per_leaf": 2}),
    ("fat-tree", {"k": 4}),
]


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory):
    return compile_pipeline(tmp_path_factory.mktemp("build"))


def _reachable_pairs(net, topo) -> list[tuple[str, str]]:
    """Pairs (src, dst) that do NOT answer one ping; the whole mesh, one ping each."""
    failures = []
    hosts = list(topo.hosts.values())
    for src in hosts:
        targets = " ".join(h.ip for h in hosts if h is not src)
        # all pings of one source in parallel inside its namespace, one line per failed target
        out = net.host(src.name).cmd(
            f"for t in {targets}; do (ping -c1 -W2 $t >/dev/null 2>&1 || echo FAIL $t) & done; wait")
        failures += [(src.name, line.split()[1]) for line in out.splitlines() if line.startswith("FAIL")]
    return failures


@pytest.mark.parametrize(("name", "params"), TOPOLOGIES, ids=[t[0] for t in TOPOLOGIES])
def test_topology_builds_routes_every_pair_and_tears_down(name, params, pipeline, tmp_path):
    topo = build(name, **params)
    with EmulatedNetwork(topo, tmp_path) as net:
        config = tmp_path / "net.yaml"
        config.write_text(yaml.safe_dump(netconfig(topo, net, pipeline, ExperimentConfig())))
        proc = subprocess.run(agents.dlcpctl(config, "apply"), capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert _reachable_pairs(net, topo) == []
        assert net.dead_switches() == []
    assert leftovers(topo) == []


def test_what_a_killed_run_left_behind_is_cleared_before_the_build(tmp_path):
    """A SIGKILLed run leaves its root-namespace switch-to-switch veths and its switch processes;
    the next build used to stop at "RTNETLINK answers: File exists" (CI, 2026-12-02)."""
    topo = build("leaf-spine", spines=2, leaves=2, hosts_per_leaf=1)
    subprocess.run(["ip", "link", "add", "leaf1-eth2", "type", "veth", "peer", "name", "spine1-eth1"],
                   check=True)
    orphan = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", "p4sim.cli switch",
                               "--interface", "1@leaf2-eth1"])
    try:
        found = leftovers(topo)
        assert {"interface leaf1-eth2", "interface spine1-eth1"} <= set(found)
        assert any(item.startswith(f"switch process {orphan.pid}:") for item in found), found
        with EmulatedNetwork(topo, tmp_path) as net:
            assert orphan.wait(timeout=10) == -9
            assert "leaf1-eth2" in net.switch("leaf1").intfNames()
            assert net.dead_switches() == []
        assert leftovers(topo) == []
    finally:
        orphan.kill()
        subprocess.run(["ip", "link", "del", "leaf1-eth2"], capture_output=True, check=False)


def test_teardown_after_a_failure_inside_the_network(tmp_path):
    topo = build("star", hosts=2)
    with pytest.raises(RuntimeError, match="boom"):
        with EmulatedNetwork(topo, tmp_path) as net:
            assert net.host("h1").cmd("echo alive").strip() == "alive"
            raise RuntimeError("boom")
    assert leftovers(topo) == []


def test_unroutable_without_controller(tmp_path):
    """The switches start empty (--no-p4): without `dlcpctl apply` nothing is forwarded."""
    topo = build("star", hosts=2)
    with EmulatedNetwork(topo, tmp_path) as net:
        assert "100% packet loss" in net.host("h1").cmd("ping -c1 -W1 10.0.1.2")
    assert leftovers(topo) == []
