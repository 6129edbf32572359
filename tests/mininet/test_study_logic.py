"""The study's pure parts: run order, statistics, ablation policies, the report (synthetic records)."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from mininet_topos import scenarios, stats
from mininet_topos.cpu import cpu_ticks
from mininet_topos.study import CpuLoad, StudyConfig, cpu_load_plan, renice_threads, run_order
from mininet_topos.study_report import (
    comparisons,
    cpu_load_notes,
    per_iteration,
    steal_notes,
    summarise_study,
    switch_nice_notes,
    write_study_report,
)


def test_runs_are_interleaved_seed_by_seed_with_rotating_mode_order():
    order = run_order(("a", "b", "c"), [1, 2, 3])
    assert order[:3] == [(1, "a"), (1, "b"), (1, "c")]
    assert order[3:6] == [(2, "b"), (2, "c"), (2, "a")]
    assert [m for s, m in order if s == 3][0] == "c"
    assert sorted(order) == sorted((s, m) for s in (1, 2, 3) for m in "abc")


def test_bootstrap_interval_contains_the_estimate_and_narrows_with_more_seeds():
    rng = np.random.default_rng(0)
    few = {s: list(rng.normal(1.0, 0.1, 8)) for s in range(2)}
    many = {s: list(rng.normal(1.0, 0.1, 8)) for s in range(20)}
    e_few, e_many = stats.bootstrap(few, stats.STATS["mean"]), stats.bootstrap(many, stats.STATS["mean"])
    for e in (e_few, e_many):
        assert e.lo <= e.value <= e.hi
    assert e_many.hi - e_many.lo < e_few.hi - e_few.lo


def test_p99_interpolates_instead_of_taking_the_maximum():
    data = {1: [1.0] * 34 + [10.0]}
    assert stats.summarise(data, rounds=50)["p99"].value < 10.0


def test_overlap_flag_separates_distinct_and_equal_distributions():
    rng = np.random.default_rng(1)
    a = {s: list(rng.normal(1.0, 0.05, 10)) for s in range(5)}
    b = {s: list(rng.normal(2.0, 0.05, 10)) for s in range(5)}
    c = {s: list(rng.normal(1.0, 0.05, 10)) for s in range(5)}
    ma, mb, mc = (stats.bootstrap(x, stats.STATS["mean"]) for x in (a, b, c))
    assert not ma.overlaps(mb)
    assert ma.overlaps(mc)
    r = stats.ratio(b, a, "mean")
    assert r.lo <= r.value <= r.hi and 1.9 < r.value < 2.1


DEFAULT = {"thresholds": [{"queues": [1, 2], "mag_classes": [0, 1], "drop_depth": 16, "ecn_depth": 8},
                          {"queues": [1, 2], "mag_classes": [2, 3], "drop_depth": 524287, "ecn_depth": 32}]}


def test_ablations_are_cut_from_the_default_policy():
    pol = {name: scenarios.switch_policy(scenarios.MODES[name], DEFAULT) for name in scenarios.MODES}
    assert pol["dlcp"] is None                                   # the shipped default, everything on
    assert pol["tcp-cubic"] == pol["tcp-bbr"] == pol["udp-reliable"] == scenarios.STATUS_QUO_POLICY
    assert pol["dlcp-prio"] == {"thresholds": [], "spray": False}
    assert pol["dlcp-spray"] == {"priority_map": [], "thresholds": [], "spray": True}
    drop = pol["dlcp-drop"]
    assert drop["priority_map"] == [] and drop["spray"] is False
    assert [b["queues"] for b in drop["thresholds"]] == [[0], [0]]
    assert [b["drop_depth"] for b in drop["thresholds"]] == [16, 524287]


def test_mode_names_and_aliases_resolve_and_unknown_ones_are_named():
    assert scenarios.resolve_modes("dlcp, tcp,baseline") == ("dlcp", "tcp-cubic", "udp-reliable")
    with pytest.raises(ValueError, match="'quic'"):
        scenarios.resolve_modes("dlcp,quic")
    with pytest.raises(ValueError, match="'nosuch'"):
        scenarios.get("nosuch")


def test_every_scenario_names_hosts_of_its_topology_and_real_size_workloads():
    from mininet_topos.topologies import build
    for scen in scenarios.SCENARIOS.values():
        topo = build(scen.topo, **scen.topo_params)
        for job in scen.jobs:
            assert set(job.hosts) <= set(topo.hosts)
        for f in scen.flows:
            assert {f.src, f.dst} <= set(topo.hosts)
    incast = scenarios.SCENARIOS["incast"]
    assert len(incast.jobs[0].hosts) - 1 >= 6                    # >= 6 workers into one server port
    wide = scenarios.SCENARIOS["incast-wide"]                    # twice the fan-in into the same port and queue
    assert wide.topo == incast.topo and len(wide.jobs[0].hosts) - 1 >= 2 * (len(incast.jobs[0].hosts) - 1)
    assert wide.jobs[0].workload == incast.jobs[0].workload and wide.link_mbps == incast.link_mbps
    assert len(scenarios.SCENARIOS["ecmp-collision"].jobs) == 2


def _synthetic(tmp_path, with_accuracy=True):
    recs = []
    rng = np.random.default_rng(2)
    for seed in (1, 2, 3):
        for mode, base in (("tcp-cubic", 2.0), ("dlcp", 1.0), ("udp-reliable", 2.0)):
            for it in range(6):
                for w in ("h2", "h3"):
                    recs.append({"scenario": "incast", "job": "ps", "kind": "ps", "workload": "digits-wide",
                                 "mode": mode, "seed": seed, "worker": w, "iteration": it,
                                 "iter_time_s": base + rng.uniform(0, 0.1) + (5.0 if it == 0 else 0.0),
                                 "compute_s": 0.3, "exposed_comm_s": base - 0.3, "comm_time_s": base,
                                 "bytes": 1000, "retransmissions": 1, "recv_packets": 100, "recv_given_up": 0,
                                 "lost_fraction": 0.0, "server_packets": 200,
                                 "server_given_up": 10 if mode == "dlcp" else 0, "server_retransmissions": 0,
                                 "server_zero_filled_elements": 0,
                                 "accuracy": (0.9 if with_accuracy else None)})
    runs = [{"mode": m, "seed": s, "failure": None, "selective_drops": {"q2/m0": 3} if m == "dlcp" else {},
             "tail_drops": {"q0": 5}, "cpu": {"switch:s1": {"mean_core": 0.2, "peak_core": 0.4},
                                              "agent:ps/h1": {"mean_core": 0.1, "peak_core": 0.2}},
             "cpu_bound_switches": []} for s in (1, 2, 3) for m in ("tcp-cubic", "dlcp", "udp-reliable")]
    cfg = StudyConfig(modes=("dlcp", "udp-reliable", "tcp-cubic"), seeds=3)
    config = {"study": {**cfg.__dict__, "modes": list(cfg.modes)}, "iterations": 6, "link_mbps": 20.0,
              "compute_ratio": 1.0, "modes": {m: scenarios.MODES[m].about for m in cfg.modes},
              "scenario": {"name": "incast", "about": "test", "topo": "star", "topo_params": {"hosts": 3},
                           "jobs": [], "flows": []}, "started": "20260101-000000"}
    (tmp_path / "config.json").write_text(json.dumps(config))
    (tmp_path / "iterations.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    (tmp_path / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in runs))
    return recs, runs, config


def test_warm_up_iteration_is_dropped_and_the_slowest_worker_counts(tmp_path):
    recs, _, _ = _synthetic(tmp_path)
    cells = per_iteration(recs)
    assert sorted(cells[("ps", "dlcp")][1]) == [1, 2, 3, 4, 5]
    cell = cells[("ps", "dlcp")][1][1]
    assert cell["iter"] == max(r["iter_time_s"] for r in recs if (r["mode"], r["seed"], r["iteration"]) == ("dlcp", 1, 1))
    assert cell["given_up"] == 10 and cell["packets"] == 200 + 2 * 100   # server counted once per iteration


def test_study_report_tables_in_mode_order_with_intervals_and_significance(tmp_path):
    recs, runs, config = _synthetic(tmp_path)
    summary = summarise_study(recs, runs, config)
    assert list(summary["jobs"]["ps"]) == ["dlcp", "udp-reliable", "tcp-cubic"]
    comps = {c["mode"]: c for c in comparisons(summary["jobs"]["ps"])}
    assert comps["dlcp"]["significant"]["mean"] and comps["dlcp"]["mean_speedup"].value > 1.8
    assert not comps["udp-reliable"]["significant"]["mean"]
    text = write_study_report(tmp_path).read_text()
    rows = [c for c in (line.split("|")[1].strip() for line in text.splitlines() if line.startswith("| ")) if c in scenarios.MODES]
    assert rows[:3] == ["dlcp", "udp-reliable", "tcp-cubic"]
    assert "no significant difference" in text and "significant" in text
    assert "Goal (DLCP p99" in text
    for png in ("iter_time_cdf_ps.png", "iter_time_stats_ps.png", "drops_per_class.png", "accuracy.png"):
        assert (tmp_path / png).stat().st_size > 0
    assert json.loads((tmp_path / "summary.json").read_text())["jobs"]["ps"]["dlcp"]["mean"]["value"] > 0


def test_no_accuracy_plot_for_jobs_without_a_model(tmp_path):
    _synthetic(tmp_path, with_accuracy=False)
    text = write_study_report(tmp_path).read_text()
    assert not (tmp_path / "accuracy.png").exists()
    assert "no accuracy plot" in text


def test_unmeasured_communication_times_print_as_a_dash_not_zero(tmp_path):
    """torch-ddp: DDP's records have no compute/exposed split and gloo's no communication time; the
    report must say "-" for them (it printed a measured-looking 0.000), and keep measured ones."""
    recs, runs, _ = _synthetic(tmp_path)
    for r in recs:
        r["exposed_comm_s"] = r["compute_s"] = None
        if r["mode"] == "tcp-cubic":
            r["comm_time_s"] = None
    (tmp_path / "iterations.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    text = write_study_report(tmp_path).read_text()
    row = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[1:-1]]
           for line in text.splitlines() if line.startswith("| ") and line.split("|")[1].strip() in scenarios.MODES
           and line.count("|") > 12}
    assert row["tcp-cubic"][6:8] == ["-", "-"]                  # comm p50, exposed comm: not measured
    assert row["dlcp"][6] == "1.000" and row["dlcp"][7] == "-"  # measured comm time kept


def test_cpu_load_is_split_into_one_busy_loop_per_started_core():
    assert cpu_load_plan(0) == (0, 0.0)
    assert cpu_load_plan(0.6) == (1, 0.6)
    assert cpu_load_plan(1.0) == (1, 1.0)
    assert cpu_load_plan(1.5) == (2, 0.75)
    for bad in (-0.1, float("nan"), float("inf")):
        with pytest.raises(ValueError):
            cpu_load_plan(bad)


def test_cpu_load_runs_real_busy_loops_and_reports_the_cpu_they_got():
    """Real loader processes: they use CPU while the load is on, are gone after stop(), and the run
    record says what was asked and what they got."""
    load = CpuLoad(0.5, period_s=0.01).start()
    pids = [p.pid for p in load._popen]
    assert len(pids) == 1
    while not cpu_ticks(pids[0]):          # until the loop has used at least one clock tick of CPU
        time.sleep(0.05)
    load.stop()
    assert not os.path.exists(f"/proc/{pids[0]}")          # killed and reaped
    got = load.result()
    assert (got["cores"], got["procs"], got["duty"], got["period_s"]) == (0.5, 1, 0.5, 0.01)
    assert got["measured_cores"] > 0


def test_report_states_the_cpu_load_kept_during_the_runs(tmp_path):
    _, runs, _ = _synthetic(tmp_path)
    for k, r in enumerate(runs):
        r["cpu_load"] = {"cores": 0.6, "procs": 1, "duty": 0.6, "period_s": 0.01, "measured_cores": 0.5 + k / 100}
    (tmp_path / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in runs))
    text = write_study_report(tmp_path).read_text()
    line = next(x for x in text.splitlines() if "stated CPU load" in x)
    assert "during 9 of 9 runs" in line and "1 process(es) busy 60% of every 10 ms" in line
    assert "0.50-0.58 cores" in line
    assert cpu_load_notes([{"mode": "dlcp"}]) == []      # no load: no note


def _nice_of(tid_stat: str) -> int:
    return int(tid_stat.rsplit(")", 1)[1].split()[16])     # field 19 of /proc/<pid>/task/<tid>/stat


def test_switch_priority_sets_every_thread_of_a_process():
    """Linux's setpriority on a pid changes one thread; a switch's packet thread is not its main
    thread, so renice_threads sets each (a real process with three threads)."""
    code = "import threading, time\nfor _ in range(2): threading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n" \
           "print('up', flush=True)\ntime.sleep(60)\n"
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                            start_new_session=True)     # its own autogroup, as a switch has
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "up"
        assert renice_threads(proc.pid, 7) == 3
        tasks = sorted(Path(f"/proc/{proc.pid}/task").iterdir())
        assert [_nice_of((t / "stat").read_text()) for t in tasks] == [7, 7, 7]
        group = Path(f"/proc/{proc.pid}/autogroup")
        if group.exists():          # autogroup scheduling: the session's group gets the level too
            assert group.read_text().split()[-1] == "7"
    finally:
        proc.kill()
        proc.wait()
    assert renice_threads(proc.pid, 7) == 0                 # gone: nothing to set


def test_report_states_the_switch_priority(tmp_path):
    _, runs, _ = _synthetic(tmp_path)
    for r in runs:
        r["switch_nice"] = -10
    (tmp_path / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in runs))
    text = write_study_report(tmp_path).read_text()
    assert "every switch thread ran at nice -10 during 9 of 9 runs" in text
    assert switch_nice_notes([{"mode": "dlcp", "switch_nice": None}]) == []


def test_steal_notes_flag_runs_the_hypervisor_took_cpu_from() -> None:
    runs = [{"mode": "dlcp", "seed": 1, "machine_cpu": {"steal_share": 0.10}},
            {"mode": "dlcp", "seed": 2, "machine_cpu": {"steal_share": 0.01}},
            {"mode": "tcp-cubic", "seed": 1, "machine_cpu": {"steal_share": 0.16}},
            {"mode": "tcp-cubic", "seed": 2}]
    (line,) = steal_notes(runs)
    assert "2 of 4 runs (dlcp 1, tcp-cubic 1; worst 16%, tcp-cubic seed 1)" in line, line
    assert steal_notes(runs[1:2] + runs[3:]) == []
