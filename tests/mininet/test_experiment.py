"""A short experiment end to end, every mode, in real Mininet namespaces through p4sim switches."""

import json

import pytest

from mininet_topos.experiment import ExperimentConfig, main, run_experiment
from mininet_topos.network import leftovers
from mininet_topos.report import PLOTS
from mininet_topos.topologies import build

pytestmark = [pytest.mark.mininet, pytest.mark.slow]

RECORD_FIELDS = {"mode", "workload", "worker", "iteration", "comm_time_s", "bytes", "retransmissions",
                 "lost_fraction", "loss_by_class", "accuracy"}


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    cfg = ExperimentConfig(topo="leaf-spine", topo_params={"spines": 2, "leaves": 2, "hosts_per_leaf": 2},
                           workload="ps", model="digits", iterations=3, background=True, timeout_s=90,
                           out=str(tmp_path_factory.mktemp("results")))
    path = run_experiment(cfg)
    assert leftovers(build("leaf-spine")) == []
    return path


def test_every_mode_produces_all_result_files(run_dir):
    for name in ("config.json", "iterations.jsonl", "switch_stats.jsonl", "report.md", *PLOTS):
        assert (run_dir / name).stat().st_size > 0, name
    for mode in ("dlcp", "baseline", "tcp"):
        assert (run_dir / mode / "net.yaml").exists()
        assert (run_dir / mode / "switch_stats.json").exists()


def test_records_have_the_documented_fields_and_plausible_numbers(run_dir):
    records = [json.loads(line) for line in (run_dir / "iterations.jsonl").read_text().splitlines()]
    assert {r["mode"] for r in records} == {"dlcp", "baseline", "tcp"}
    for r in records:
        assert RECORD_FIELDS <= set(r), set(r) ^ RECORD_FIELDS
        assert r["bytes"] > 0 and r["comm_time_s"] > 0
        assert 0.0 <= r["accuracy"] <= 1.0
    # 3 workers x 3 iterations per mode
    for mode in ("dlcp", "baseline", "tcp"):
        assert sorted((r["worker"], r["iteration"]) for r in records if r["mode"] == mode) == \
            sorted((w, i) for w in ("h2", "h3", "h4") for i in range(3))


def test_only_dlcp_drops_selectively_and_never_critical_packets(run_dir):
    stats = {s["mode"]: s for s in map(json.loads, (run_dir / "switch_stats.jsonl").read_text().splitlines())}
    assert sum(stats["baseline"]["selective_drops"].values()) == 0
    assert sum(stats["tcp"]["selective_drops"].values()) == 0
    # the default policy puts every CRITICAL packet (and control message) in queue 7, which has no threshold
    assert not [k for k in stats["dlcp"]["selective_drops"] if k.startswith("q7/")]
    assert all(s["malformed"] == 0 for s in stats.values())


def test_cli_errors_are_one_line(capsys):
    with pytest.raises(SystemExit):
        main(["--iterations", "0"])
    assert "--iterations 0: must be >= 1" in capsys.readouterr().err
    assert main(["--mode", "dlcp,fast", "--out", "/tmp/dlcp-exp-cli-test"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == "dlcp-exp: --mode 'fast': choose from dlcp, baseline, tcp"


def test_study_time_budget_must_be_positive(capsys):
    with pytest.raises(SystemExit):
        main(["--scenario", "tcp-bulk", "--time-budget", "0"])
    assert "--time-budget 0: must be > 0 minutes" in capsys.readouterr().err


@pytest.mark.parametrize(("args", "message"), [
    (["--cpu-load", "-1"], "--cpu-load -1: must be between 0 and 16 cores"),
    (["--switch-nice", "30"], "--switch-nice 30: must be between -20 and 19"),
])
def test_study_load_and_switch_nice_are_checked(args, message, capsys):
    with pytest.raises(SystemExit):
        main(["--scenario", "tcp-bulk", *args])
    assert message in capsys.readouterr().err
