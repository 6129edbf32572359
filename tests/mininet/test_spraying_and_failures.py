"""End to end in Mininet: DLCP packets sprayed over both spines, TCP pinned to one; a dying switch."""

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from mininet_topos import agents
from mininet_topos.experiment import (
    ExperimentConfig,
    ExperimentError,
    compile_pipeline,
    netconfig,
    run_experiment,
)
from mininet_topos.network import EmulatedNetwork, leftovers
from mininet_topos.topologies import build

pytestmark = [pytest.mark.mininet, pytest.mark.slow]

AGENT = str(Path(sys.executable).parent / "dlcp-agent")
TCP_SINK = "import socket;s=socket.socket();s.bind(('0.0.0.0',5001));s.listen(1);c,_=s.accept()\nwhile c.recv(65536): pass"
TCP_SOURCE = "import socket;s=socket.create_connection(('{dst}',5001));s.sendall(b'x'*{n});s.close()"


def _spray(config: Path, switch: str) -> dict[int, int]:
    """member index -> packets of ECMP group 1 on ``switch``."""
    out = subprocess.run(agents.dlcpctl(config, "--json", "stats"), capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    cells = json.loads(out.stdout)[switch]["spray"]
    return {c["member"]: c["packets"] for c in cells}


def _delta(after: dict[int, int], before: dict[int, int]) -> dict[int, int]:
    return {m: after.get(m, 0) - before.get(m, 0) for m in set(after) | set(before)}


@pytest.fixture
def leaf_spine_net(tmp_path):
    topo = build("leaf-spine", spines=2, leaves=2, hosts_per_leaf=1)
    pipeline = compile_pipeline(tmp_path / "build")
    with EmulatedNetwork(topo, tmp_path) as net:
        config = tmp_path / "net.yaml"
        config.write_text(yaml.safe_dump(netconfig(topo, net, pipeline, ExperimentConfig())))
        proc = subprocess.run(agents.dlcpctl(config, "apply"), capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        yield topo, net, config
    assert leftovers(topo) == []


def test_dlcp_sprays_over_both_spines_and_tcp_keeps_one_path(leaf_spine_net):
    topo, net, config = leaf_spine_net
    h2 = topo.hosts["h2"]  # h1 sits on leaf1, h2 on leaf2

    before = _spray(config, "leaf1")
    sink = net.host("h2").popen(["/usr/bin/python3", "-c", TCP_SINK])
    time.sleep(0.3)
    src = net.host("h1").popen(["/usr/bin/python3", "-c", TCP_SOURCE.format(dst=h2.ip, n=300_000)])
    assert src.wait(timeout=60) == 0
    sink.wait(timeout=30)
    tcp = _delta(_spray(config, "leaf1"), before)
    used = [m for m, n in tcp.items() if n > 0]
    assert len(used) == 1 and tcp[used[0]] >= 200, tcp  # one TCP flow: one member only

    before = _spray(config, "leaf1")
    recv = net.host("h2").popen([AGENT, "recv", "--bind", f"{h2.ip}:9290", "--timeout", "10", "--count", "0",
                                 "--out", os.devnull])
    time.sleep(0.5)
    gen = net.host("h1").popen([AGENT, "gen", "--dest", f"{h2.ip}:9290", "--scale", "0.002", "--timeout", "30",
                                "--out", os.devnull])
    gen.wait(timeout=60)
    recv.send_signal(signal.SIGTERM)
    recv.wait(timeout=15)
    dlcp = _delta(_spray(config, "leaf1"), before)
    # Both spines carry DLCP data in bulk (control messages stay per flow, so the split is not even;
    # uniformity of the data spray itself is the chi-square test in tests/dataplane).
    assert len(dlcp) == 2 and min(dlcp.values()) >= 100, dlcp


def test_a_switch_killed_mid_run_fails_the_experiment_clearly_and_cleans_up(tmp_path):
    cfg = ExperimentConfig(topo="star", topo_params={"hosts": 3}, modes=("dlcp",), background=False,
                           iterations=200, timeout_s=60, out=str(tmp_path), model="resnet50")

    def kill_switch_when_running() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            ps = subprocess.run(["pgrep", "-f", "p4sim.cli switch.*@s1-eth1"], capture_output=True, text=True)
            if ps.stdout.strip() and list(tmp_path.glob("*/dlcp/h2.jsonl")):
                time.sleep(1.0)
                for pid in ps.stdout.split():
                    os.kill(int(pid), signal.SIGKILL)
                return
            time.sleep(0.2)

    killer = threading.Thread(target=kill_switch_when_running, daemon=True)
    killer.start()
    with pytest.raises(ExperimentError, match=r"switch s1 died during the dlcp run; see .*s1\.log"):
        run_experiment(cfg)
    killer.join(timeout=5)
    assert leftovers(build("star", hosts=3)) == []
