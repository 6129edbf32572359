"""DLCP's bounded-loss transport and the PS training job in ns-3 (simulation/switch_model/dlcp_transport.h).

Why this exists: the open-loop DLCP sender delivered about a quarter of the bytes of an incast and
completed no flow; the transport must complete every gradient within its loss bound (missing
critical data retransmitted, the deficit below the bound repaired, never more zero-filled than the
bound allows), the switch may only shed what the tagging made droppable, and a PS job's iterations
must close over DLCP and over DCTCP alike. Real ns-3, real packets through the C++ switch model;
each run in a fresh process. Budget: about 60-90 s (two runs; the ns-3 import dominates).
"""

from __future__ import annotations

import math

import pytest

from simulation import job_report
from simulation.job import JobSpec, run_job_fresh
from simulation.policy import FABRIC_POLICY, load_policy
from simulation.scenario import PAYLOAD, ps_incast
from simulation.switch_model.transport_knobs import run_jobs_fresh
from simulation.topology import preset
from simulation.workload import load_cdf, ps_workload


def _incast_runs() -> tuple[object, object, float, object]:
    """The 15:1 small-16 incast (150 kB per worker into h0) with receiver-driven admission (the
    default), without it, and over the pFabric-like baseline, in one fresh process; and the PS
    port's wire time for its bytes."""
    topo = preset("small-16")
    index = {h: i for i, h in enumerate(topo.hosts)}
    flows = [(index[f.src], index[f.dst], f.bytes, f.start_s, f.layer_class)
             for f in ps_incast(topo, 150_000, 0, 0, seed=5)]
    policy = load_policy(FABRIC_POLICY)
    spec = JobSpec(None, flows=flows, max_sim_s=0.05, progress=False)
    granted, ungranted, pfabric = run_jobs_fresh([({}, topo, policy, "dlcp", spec), ({"grants": False}, topo, policy, "dlcp", spec),
                                                  ({}, topo, policy, "pfabric", spec)])
    packets = sum(math.ceil(f[2] / PAYLOAD) for f in flows)
    wire_s = (sum(f[2] for f in flows) + packets * (24 + 8 + 20 + 2)) * 8 / 10e9   # DLCP+UDP+IP+PPP headers
    return granted, ungranted, wire_s, pfabric


@pytest.fixture(scope="module")
def incast_runs(ns3_installed):
    return _incast_runs()


def _check_within_bound(r) -> list[dict]:
    grads = [t for t in r.transfers if t["kind"] == "gradient"]
    assert len(grads) == 15 and r.finished
    for t in grads:
        assert t["completed"], t
        non_critical = t["packets"] - t["critical"]
        allowed = non_critical - math.ceil((1 - t["loss_bound"]) * non_critical - 1e-9)
        assert t["zero_filled"] <= allowed, t            # never more missing than the bound
        assert t["droppable"] == allowed                 # tagging: exactly what the receiver can do without
    return grads


def test_grants_admit_the_incast_at_link_speed_without_loss(incast_runs) -> None:
    """Receiver-driven admission (host_agent's GRANT/window/ACK): the 15 senders share the PS link,
    nothing overflows, nothing is retransmitted, and the last gradient lands near the link's wire
    time. The transport before admission (every sender at line rate) tail-dropped ~1,600 packets,
    retransmitted every packet once and finished the last flow at ~2x the wire time."""
    r, _, wire_s, _ = incast_runs
    grads = _check_within_bound(r)
    packets = sum(t["packets"] for t in grads)
    c = r.counters
    assert sum(c["tail_drops"].values()) <= 0.01 * packets, c["tail_drops"]
    assert sum(c["selective_drops"].values()) <= 0.01 * packets, c["selective_drops"]
    assert sum(t["retx"] for t in grads) <= 0.01 * packets
    fcts = [t["fct_s"] for t in grads]
    assert max(fcts) <= 1.15 * wire_s, (max(fcts), wire_s)   # the link stays busy: near its wire time
    tr = c["transport"]
    assert tr["grants"] and tr["active_senders_max"] == 15, tr
    assert tr["grants_sent"] >= 15 and tr["acks_sent"] >= packets // 4 - 15, tr
    assert tr["grants_missed"] == 0, tr


def test_without_grants_the_incast_recovers_within_the_loss_bound(incast_runs) -> None:
    """Admission off (every sender at line rate): the 15:1 incast overflows h0's port, the switch
    sheds droppable DATA only, tail drops force repair rounds, and every gradient still completes
    within its loss bound, later than with grants."""
    granted, r, _, _ = incast_runs
    grads = _check_within_bound(r)
    c = r.counters
    assert not c["transport"]["grants"] and c["transport"]["grants_sent"] == 0
    assert c["selective_drops"], c
    for key in c["selective_drops"]:
        q, m = (int(x[1:]) for x in key.split("/"))
        assert 1 <= q <= 6 and m < 12, key
    assert sum(t["retx"] for t in grads) > 0 and sum(t["rounds"] for t in grads) > 0
    assert sum(t["zero_filled"] for t in grads) > 0
    assert c["sprayed_packets"] > 0
    s = job_report.summary(r)
    assert s["gradient"]["completed"] == 15 and s["gradient"]["p99_us"] > 0
    with_grants = job_report.summary(granted)["gradient"]
    assert with_grants["mean_us"] < s["gradient"]["mean_us"]


def test_ps_training_iterations_close_over_dlcp_and_dctcp(ns3_installed, tmp_path) -> None:
    topo = preset("small-16")
    work = ps_workload("resnet50", 1 / 2000, 4, 3, 10_000_000_000, 1.0)
    runs = []
    for mode in ("dlcp", "dctcp"):
        spec = JobSpec(work, load_cdf("web-search"), "web-search", 0.3, seed=2, max_sim_s=0.2,
                       background_until_s=0.002, progress=False)
        r = run_job_fresh(topo, load_policy(FABRIC_POLICY), mode, spec)
        r.extra["load"] = 0.3
        runs.append(r)
        assert r.finished, mode
        times = [it["iter_s"] for it in r.iterations]
        assert len(times) == 15 * 3 and all(t is not None and t > 0 for t in times), mode
        kinds = {t["kind"] for t in r.transfers}
        assert kinds == {"gradient", "parameter", "background"}, kinds
        assert all(t["completed"] for t in r.transfers if t["kind"] != "background"), mode
        # pushes: 15 workers x 4 groups x 3 iterations; pulls the same
        assert sum(t["kind"] == "gradient" for t in r.transfers) == 15 * 4 * 3
    dlcp = runs[0]
    params = [t for t in dlcp.transfers if t["kind"] == "parameter"]
    assert all(t["droppable"] == 0 and t["zero_filled"] == 0 for t in params)   # parameters: reliable
    rep = job_report.write(tmp_path, runs, "# test")
    assert "| dctcp | 0.3 |" in rep.read_text()
    for name in ("transfers.jsonl", "iterations.jsonl", "runs.json", "fct_by_size.png", "iteration_cdf.png",
                 "drops_per_class.png"):
        assert (tmp_path / name).stat().st_size > 0, name


def test_pfabric_serves_the_incast_shortest_remaining_first(incast_runs) -> None:
    """pFabric-like baseline: flows start at line rate into 2 x BDP buffers, so the switch drops
    (the lowest priorities) and fixed RTOs resend; every flow still completes, and because the port
    serves the smallest remaining size first the flows finish one after another: the mean FCT is far
    below the fair share's (where all 15 finish together near the wire time) and the last lands
    near the wire time."""
    granted, _, wire_s, r = incast_runs
    grads = [t for t in r.transfers if t["kind"] == "gradient"]
    assert len(grads) == 15 and r.finished and all(t["completed"] for t in grads)
    pf = r.counters["pfabric"]
    assert pf["buffer_packets"] == 2 * pf["window_packets"] and pf["rto_us"] > 0, pf
    assert r.counters["drops"] > 0 and pf["timeouts"] > 0 and pf["retransmitted"] > 0, pf
    fcts = sorted(t["fct_s"] for t in grads)
    assert fcts[-1] <= 1.2 * wire_s, (fcts[-1], wire_s)
    assert sum(fcts) / len(fcts) <= 0.7 * wire_s                     # SRPT-like: ~ (n + 1) / 2n of it
    fair = [t["fct_s"] for t in granted.transfers if t["kind"] == "gradient"]
    assert sum(fcts) / len(fcts) < 0.7 * sum(fair) / len(fair)


def test_standby_grants_start_every_later_transfer_without_a_grant_round_trip(ns3_installed) -> None:
    """host_agent's standby grants (H10-2): the receiver keeps every sender seen in the last
    GRANT_MEMORY on its share of the link, so only first contact waits for the GRANT answering an
    OPEN. A 3-iteration PS job: with standby grants no push or pull of iterations 1-2 waits; with the
    earlier rule (4 unscheduled packets, then that GRANT) some wait a grant round trip. Both close
    every iteration, parameters reliable. Fails on the transport before (no standby grants)."""
    topo = preset("small-16")
    work = ps_workload("resnet50", 1 / 2000, 4, 3, 10_000_000_000, 1.0)
    spec = JobSpec(work, max_sim_s=0.2, progress=False)
    policy = load_policy(FABRIC_POLICY)
    standby, before = run_jobs_fresh([({}, topo, policy, "dlcp", spec), ({"standbyGrants": False}, topo, policy, "dlcp", spec)])
    for r in (standby, before):
        assert r.finished and all(t["completed"] for t in r.transfers)
        assert all(t["zero_filled"] == 0 for t in r.transfers if t["kind"] == "parameter")
    # iteration 0 is first contact (its transfers start before any GRANT came back): they all wait
    later = [t for t in standby.transfers if t["iteration"] >= 1]
    assert len(later) == 2 * 2 * 15 * 4 and all(t["grant_wait_s"] == 0 for t in later)
    assert standby.counters["transport"]["standby_grants_sent"] > 0
    waited = [t for t in before.transfers if t["iteration"] >= 1 and t["grant_wait_s"] > 0]
    assert waited and before.counters["transport"]["standby_grants_sent"] == 0


@pytest.mark.parametrize(("argv", "message"), [
    (["--off", "grantIdle"], "transport_knobs: --off: 'grantIdle' is not a boolean TransportConfig knob (sim_net.h)"),
    (["--preset", "nope"], "transport_knobs: --preset: unknown 'nope' (known: "),
    (["--set", "classBands"], "transport_knobs: --set: expected KNOB=VALUE, got 'classBands'"),
    (["--set", "classBands=two"], "transport_knobs: --set: 'classBands': expected a number or true/false, got 'two'"),
    (["--set", "classBands=2,noSuchKnob=1"], "transport_knobs: --set: 'noSuchKnob' is not a TransportConfig knob (sim_net.h)"),
])
def test_knob_ablation_script_rejects_bad_input_in_one_line(argv: list[str], message: str, capsys) -> None:
    from simulation.switch_model.transport_knobs import main

    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1
