"""``dlcp-exp --target bmv2``: the PS workload through real BMv2 switches in Mininet (issue 17).

Until the DLCP UDP ports became a table, ``dlcpctl apply`` stopped at its first write on BMv2
(``UNIMPLEMENTED: ValueSet writes are not supported yet``), so no BMv2 experiment ran. This
runs one short DLCP mode end to end: p4c, four ``simple_switch_grpc`` in Mininet, the controller
(pipeline, tables, queue depth and per-queue rates through the Thrift CLI), the agents, the
counters and the report. Budget: about a minute. Holds /tmp/dlcp-mininet.lock while it runs.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil

import pytest

pytestmark = [pytest.mark.bmv2, pytest.mark.mininet, pytest.mark.slow]

TOOLS = ("p4c", "simple_switch_grpc", "simple_switch_CLI")


def test_ps_experiment_on_bmv2_switches(tmp_path) -> None:
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        pytest.skip(f"BMv2 not installed ({', '.join(missing)} not on PATH)")
    if os.geteuid() != 0 or shutil.which("mnexec") is None:
        pytest.skip("Mininet needs root and mnexec")
    from mininet_topos.experiment import ExperimentConfig, run_experiment
    from mininet_topos.network import leftovers
    from mininet_topos.topologies import build

    cfg = ExperimentConfig(target="bmv2", topo="leaf-spine", workload="ps", model="digits", iterations=3,
                           modes=("dlcp",), background=True, timeout_s=90, out=str(tmp_path))
    with open("/tmp/dlcp-mininet.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        run_dir = run_experiment(cfg)
        assert leftovers(build("leaf-spine")) == []
    records = [json.loads(line) for line in (run_dir / "iterations.jsonl").read_text().splitlines()]
    assert {r["mode"] for r in records} == {"dlcp"} and len(records) >= 3
    assert all(r["comm_time_s"] > 0 for r in records)
    net = (run_dir / "dlcp" / "net.yaml").read_text()
    assert "target: bmv2" in net and "thrift_port" in net and "rate_mbps: 20.0" in net
    stats = json.loads((run_dir / "dlcp" / "switch_stats.json").read_text())
    assert set(stats) == {"leaf1", "leaf2", "spine1", "spine2"}
    # DLCP traffic really went through BMv2's priority queues (queue > 0 on some port)
    assert any(cell["queue"] > 0 and cell["packets"] > 0
               for sw in stats.values() for cell in sw["port_queue_tx"]), stats
    assert (run_dir / "report.md").stat().st_size > 0
