"""``dlcp-exp --scenario torch-ddp`` in short form: real PyTorch DDP ranks in Mininet through p4sim.

One seed, 3 DDP iterations per mode, ``dlcp`` (the DLCP hook, full DLCP switches) against
``tcp-cubic`` (DDP's gloo all-reduce over TCP cubic, set in each host's network namespace: the
runner adds cubic to the kernel's allowed list for the study and restores it) next to the
scenario's bulk TCP flows. Checks the study runner's torch-ddp job kind end to end: every rank's
iteration records (time from ``iteration_seconds``, the hook's packets for dlcp), no failed run,
and a report row per mode. Budget: about 3 minutes on the loaded 2-core machine (torch imports in
8 rank processes, one network start).
"""

import json

import pytest

from mininet_topos import scenarios
from mininet_topos.network import leftovers
from mininet_topos.study import Study, StudyConfig
from mininet_topos.topologies import build

pytestmark = [pytest.mark.mininet, pytest.mark.slow]
MODES = ("dlcp", "tcp-cubic")
ALLOWED_CC = "/proc/sys/net/ipv4/tcp_allowed_congestion_control"
ITERATIONS = 3


def _read(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    cfg = StudyConfig(scenario="torch-ddp", modes=MODES, seeds=1, iterations=ITERATIONS, timeout_s=120,
                      link_mbps=40, calibrate=False, out=str(tmp_path_factory.mktemp("torch-ddp")))
    with open(ALLOWED_CC) as f:
        allowed_before = f.read()
    run_dir = Study(cfg, log=lambda line: None).run()
    with open(ALLOWED_CC) as f:
        assert f.read() == allowed_before       # the kernel's list is as the study found it
    scen = scenarios.get("torch-ddp")
    assert leftovers(build(scen.topo, **scen.topo_params)) == []
    return scen, run_dir


def test_torch_ddp_study_runs_every_rank_of_both_modes(study):
    scen, run_dir = study
    runs = _read(run_dir / "runs.jsonl")
    assert [(r["mode"], r["failure"]) for r in runs] == [(m, None) for m in MODES]
    recs = _read(run_dir / "iterations.jsonl")
    (job,) = scen.jobs
    for mode in MODES:
        for host in job.hosts:
            mine = [r for r in recs if (r["mode"], r["worker"]) == (mode, host)]
            assert [r["iteration"] for r in mine] == list(range(ITERATIONS)), (mode, host)
            assert all(r["iter_time_s"] > 0 and r["kind"] == "torch-ddp" for r in mine)
            if mode == "dlcp":          # the hook's own packets: two buckets' ring chunks per step
                assert all(r["recv_packets"] > 0 and r["bytes"] > 0 and r["comm_time_s"] > 0 for r in mine)
            else:                       # gloo: no DLCP packet at all
                assert all(r["recv_packets"] == 0 and r["bytes"] == 0 for r in mine)
        assert mine[-1]["accuracy"] is not None


def test_torch_ddp_report_has_a_row_per_mode(study):
    _, run_dir = study
    report = (run_dir / "report.md").read_text()
    for mode in MODES:
        assert f"| {mode} | 1 | {ITERATIONS - 1} |" in report
