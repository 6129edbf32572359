"""Every scenario of ``dlcp-exp --scenario`` in a short form, in real Mininet through p4sim switches.

Short form: one seed, 2 iterations, 40 Mbit/s links, emulated compute at 0.2 of the link time. ``incast`` runs all
seven modes (so every mode is covered once); the others run DLCP against a TCP flavour (``incast-wide``: its 13
agents against TCP cubic, the status quo it is measured against). Budget: about 6 minutes for the whole module
on 2 cores.
"""

import json

import pytest

from mininet_topos import scenarios
from mininet_topos.network import leftovers
from mininet_topos.study import Study, StudyConfig
from mininet_topos.topologies import build

pytestmark = [pytest.mark.mininet, pytest.mark.slow]

RECORD_FIELDS = {"scenario", "job", "kind", "workload", "mode", "seed", "worker", "iteration", "iter_time_s",
                 "compute_s", "exposed_comm_s", "comm_time_s", "bytes", "retransmissions", "recv_packets",
                 "recv_given_up", "lost_fraction", "server_packets", "server_given_up", "server_retransmissions",
                 "server_zero_filled_elements", "accuracy"}
RUN_FIELDS = {"mode", "seed", "iterations", "seconds", "failure", "cpu", "cpu_bound_switches", "selective_drops",
              "ecn_marks", "spray", "tail_drops", "tail_drops_by_port", "rx_dropped", "malformed", "bulk_tcp_mbps",
              "dir"}
NO_SELECTIVE_DROP = {"dlcp-prio", "dlcp-spray", "udp-reliable", "tcp-cubic", "tcp-bbr"}
SHORT = {"incast": tuple(scenarios.MODES), "incast-wide": ("dlcp", "tcp-cubic"), "ecmp-collision": ("dlcp", "tcp-cubic"),
         "tcp-bulk": ("dlcp", "tcp-bbr"), "accuracy": ("dlcp", "udp-reliable")}


def _read(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module", params=list(SHORT))
def study(request, tmp_path_factory):
    name = request.param
    cfg = StudyConfig(scenario=name, modes=SHORT[name], seeds=1, iterations=2, compute_ratio=0.2, timeout_s=90, link_mbps=40,
                      calibrate=False, out=str(tmp_path_factory.mktemp(name)))
    run_dir = Study(cfg, log=lambda line: None).run()
    scen = scenarios.get(name)
    assert leftovers(build(scen.topo, **scen.topo_params)) == []
    return scen, cfg, run_dir


def test_every_mode_runs_and_records_cpu_of_every_switch_and_agent(study):
    scen, cfg, run_dir = study
    runs = _read(run_dir / "runs.jsonl")
    assert [(r["mode"], r["failure"]) for r in runs] == [(m, None) for m in cfg.modes]
    topo = build(scen.topo, **scen.topo_params)
    for r in runs:
        assert RUN_FIELDS <= set(r)
        assert {f"switch:{s}" for s in topo.switches} <= set(r["cpu"])
        assert {f"agent:{j.name}/{h}" for j in scen.jobs for h in j.hosts} <= set(r["cpu"])
        if r["mode"] in NO_SELECTIVE_DROP:
            assert r["selective_drops"] == {}, r["mode"]      # the status quo and the other ablations never shed
        if scen.flows:
            assert r["bulk_tcp_mbps"] > 0


def test_each_mode_produces_records_with_the_documented_fields(study):
    scen, cfg, run_dir = study
    recs = _read(run_dir / "iterations.jsonl")
    for mode in cfg.modes:
        for job in scen.jobs:
            members = job.hosts[1:] if job.kind == "ps" else job.hosts
            for host in members:
                mine = [r for r in recs if (r["mode"], r["job"], r["worker"]) == (mode, job.name, host)]
                assert [r["iteration"] for r in mine] == [0, 1], (mode, job.name, host)
                for r in mine:
                    assert RECORD_FIELDS <= set(r)
                    assert r["iter_time_s"] >= r["compute_s"] * 0.95 > 0   # compute is part of the iteration
                    assert r["exposed_comm_s"] >= 0 and r["bytes"] > 0
                    assert (r["accuracy"] is not None) == job.workload.startswith("digits")
                    if job.workload == "digits-wide" and scenarios.MODES[mode].agent != "tcp":
                        assert r["recv_packets"] >= 500                 # a real-size model per worker


def test_report_has_a_row_per_mode_and_the_plots(study):
    scen, cfg, run_dir = study
    text = (run_dir / "report.md").read_text()
    for job in scen.jobs:
        assert f"## Job `{job.name}`" in text
        assert (run_dir / f"iter_time_cdf_{job.name}.png").stat().st_size > 0
    for mode in cfg.modes:
        assert f"| {mode} | 1 | " in text
    assert (run_dir / "accuracy.png").exists() == any(j.workload.startswith("digits") for j in scen.jobs)
