"""Topologies, routing plan, policy loading and CLI errors of dlcp-sim (no ns-3 needed).

Why this exists: the fabric and the policy are the inputs every simulated number depends on;
bad input must be a one-line error naming what and where.
"""

from __future__ import annotations

import pytest

from simulation import cli
from simulation.policy import load_policy, policy_for, thresholds_for_rate
from simulation.scenario import fabric_timer_floor_s
from simulation.topology import fat_tree, leaf_spine, next_hops, preset


def test_paper_preset_is_144_hosts_non_oversubscribed() -> None:
    t = preset("paper-144")
    assert len(t.hosts) == 144 and len(t.switches) == 13
    assert "oversubscription 1:1" in t.description
    plan = next_hops(t)
    assert plan["leaf0"]["h143"] == ["spine0", "spine1", "spine2", "spine3"]    # 4 equal-cost paths
    assert plan["leaf8"]["h143"] == ["h143"]
    assert plan["spine2"]["h20"] == ["leaf1"]
    assert [len(preset(f"scale-{n}").hosts) for n in (16, 64, 288)] == [16, 64, 288]


def test_fat_tree_paths() -> None:
    t = fat_tree(4, 10**9)
    assert (len(t.hosts), len(t.switches)) == (16, 20)
    plan = next_hops(t)
    assert plan["edge0_0"]["h15"] == ["agg0_0", "agg0_1"]
    assert plan["agg0_0"]["h15"] == ["core0", "core1"]
    assert plan["core3"]["h15"] == ["agg3_1"]
    assert plan["edge0_0"]["h2"] == ["agg0_0", "agg0_1"]       # same pod, other edge: via aggregation
    with pytest.raises(ValueError, match="even"):
        fat_tree(3, 10**9)


def test_leaf_spine_oversubscription_and_bad_sizes() -> None:
    assert "oversubscription 2:1" in leaf_spine(4, 2, 4, 10**10, 10**10).description
    with pytest.raises(ValueError, match="at least one"):
        leaf_spine(0, 2, 2, 1, 1)


def test_policy_is_the_controllers_and_delay_thresholds_scale_with_rate(tmp_path) -> None:
    p = load_policy()
    assert p.thresholds[(6, 0)] == (9600, 4800) and p.thresholds[(1, 15)] == (4000000000, 19200)   # µs
    assert [r.queue for r in p.priority_map][:3] == [7, 7, 7]
    f = tmp_path / "delay.yaml"
    f.write_text("version: 1\nqueues: 8\nqueue_depth: 64\ndlcp_udp_ports: [9290]\npriority_map: []\n"
                 "thresholds:\n  - queues: [1]\n    mag_classes: [0]\n    drop_delay_us: 12\n    ecn_delay_us: 6\n")
    d = load_policy(f)
    assert thresholds_for_rate(d, 10_000_000_000) == {(1, 0): (10, 5)}      # 12 µs at 10G = 10 full packets


def test_cli_bad_input_is_one_line(capsys, tmp_path) -> None:
    assert cli.main(["--preset", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown preset 'nope'" in err and "paper-144" in err
    bad = tmp_path / "p.yaml"
    bad.write_text("version: 1\nqueues: 8\nthresholds:\n  - queues: [1]\n    mag_classes: [0]\n    drop_depth: x\n")
    assert cli.main(["--policy", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{bad}:" in err
    assert cli.main(["--modes", "dlcp,quic"]) == 2
    assert "unknown mode 'quic'" in capsys.readouterr().err
    out = tmp_path / "open"
    assert cli.main(["--workload", "ps-incast-open", "--modes", "dlcp,pfabric", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pfabric runs only with the job workloads" in err
    assert not out.exists()                                  # nothing written
    assert cli.main(["--workload", "ps-train", "--transport", "hostPriority", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--transport: expected KNOB=VALUE, got 'hostPriority'" in err
    assert not out.exists()


def test_workload_bad_input_is_one_line(capsys, tmp_path) -> None:
    for args, needle in ((["--loads", "0.6,x"], "--loads: expected numbers"),
                         (["--loads", "1.5"], "--loads: every load must be in [0, 1)"),
                         (["--model", "alexnet"], "--model: unknown profile 'alexnet'"),
                         (["--scale", "0"], "--scale: 0.0 outside (0, 1]"),
                         (["--loss-bound", "1.2"], "--loss-bound: 1.2 outside [0, 1)"),
                         (["--parallel", "0"], "--parallel: expected at least 1, got 0")):
        for workload in ("ps-train", "ring-train"):
            assert cli.main(["--workload", workload, "--out", str(tmp_path), *args]) == 2, (workload, args)
            err = capsys.readouterr().err
            assert err.count("\n") == 1 and needle in err, (workload, args, err)
    assert not any(tmp_path.iterdir())                      # nothing written


def test_timer_floor_is_the_fabrics_lossless_round_trip_capped_at_1_ms() -> None:
    """One floor for TCP's MinRto and DLCP's timers (scenario.fabric_timer_floor_s), by hand:
    paper-144's longest path h0 -> leaf0 -> spine -> leaf8 -> h143 is 4 links of 1 µs; base RTT =
    2 x (4 µs + 2 x 120 ns at 100 Gbit/s + 2 x 30 ns at 400 Gbit/s) = 8.60 µs; a full 512-packet
    buffer drains in 15.36 µs at 400 Gbit/s (leaf up, spine down) and 61.44 µs at 100 Gbit/s (leaf
    down to h143), for the data and for its ACK: 2 x 92.16 µs."""
    fast = preset("paper-144")
    policy = policy_for(min(lk.rate_bps for lk in fast.links), None)
    assert policy.queues * policy.queue_depth == 512
    assert fabric_timer_floor_s(fast, policy) == pytest.approx(8.60e-6 + 2 * 92.16e-6, rel=1e-6)
    # one leaf (h0 -> leaf0 -> h15): base 2 x (2 µs + 2 x 120 ns) = 4.48 µs, one 61.44 µs drain each way
    one_leaf = preset("scale-16")
    assert fabric_timer_floor_s(one_leaf, policy) == pytest.approx(4.48e-6 + 2 * 61.44e-6, rel=1e-6)
    # 10 Gbit/s with 512-packet buffers: 3 x 614 µs per way is above the cap, which keeps the old 1 ms
    for name in ("small-16", "sweep-16", "mininet-demo"):
        topo = preset(name)
        assert fabric_timer_floor_s(topo, policy_for(min(lk.rate_bps for lk in topo.links), None)) == 1e-3


def test_sweep_and_mininet_presets() -> None:
    sweep = preset("sweep-16")
    assert len(sweep.hosts) == 16 and "oversubscription 1:1" in sweep.description
    assert next_hops(sweep)["leaf0"]["h15"] == ["spine0", "spine1", "spine2", "spine3"]
    for name, per_leaf in (("mininet-tcp-bulk", 3), ("mininet-ecmp-collision", 4)):
        t = preset(name)
        assert len(t.hosts) == 2 * per_leaf and {lk.rate_bps for lk in t.links} == {20_000_000}
        assert t.host_switch(f"h{per_leaf}") == "leaf1"       # Mininet's h(per_leaf + 1): first host of leaf2


def test_fabric_policy_and_workload_data() -> None:
    from simulation.policy import FABRIC_POLICY, policy_for
    from simulation.workload import cdf_mean, load_cdf, ps_workload

    fab = load_policy(FABRIC_POLICY)
    assert fab.threshold_unit == "packets" and fab.thresholds[(1, 0)] == (16, 8)
    assert [r.name for r in fab.priority_map] == [r.name for r in load_policy().priority_map]
    assert policy_for(100_000_000_000, None).source == str(FABRIC_POLICY)
    assert policy_for(20_000_000, None).threshold_unit == "us"          # the demo's speed: the default
    xs, ps = load_cdf("web-search")
    assert ps[0] == 0 and ps[-1] == 1 and 1.5e6 < cdf_mean(xs, ps) < 1.8e6
    xs, ps = load_cdf("data-mining")
    assert ps[1] == 0.5 and 7e6 < cdf_mean(xs, ps) < 8e6
    w = ps_workload("resnet50", 1 / 1000, 8, 10, 100_000_000_000, 1.0)
    assert len(w.group_bytes) == 8 and w.layer_class == [7, 6, 5, 4, 3, 2, 1, 0]
    assert abs(w.bytes_per_worker - 25_557_032 * 4 / 1000) < 8 * 4
    # compute = 1 x the worker's gradient time on its link, 1/3 forward, 2/3 backward
    total = w.bytes_per_worker * 8 / 100e9
    assert abs(sum(w.forward_s) - total / 3) < 1e-12 and abs(sum(w.backward_s) - 2 * total / 3) < 1e-12


def test_plots_of_runs_without_drops_or_iterations_say_so(tmp_path) -> None:
    """A run with no drops and no closed iteration (an open-loop incast) gets plots with a note,
    not empty axes and matplotlib's 'No artists with labels' warning (seen in CI)."""
    import warnings

    from simulation import job_report
    from simulation.job import JobResult

    run = JobResult("dlcp", [], [], {"selective_drops": {}, "tail_drops": {}}, 0.01, 10, 0.1, 0.1, 0.1, 100.0,
                    True, {"load": 0.0})
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        job_report._plots(tmp_path, [run])
    assert {p.name for p in tmp_path.iterdir()} == {"fct_by_size.png", "iteration_cdf.png", "drops_per_class.png"}
