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

from simulation import job_report
from simulation.job import JobSpec, run_job_fresh
from simulation.policy import FABRIC_POLICY, load_policy
from simulation.scenario import ps_incast
from simulation.topology import preset
from simulation.workload import load_cdf, ps_workload


def test_dlcp_incast_completes_within_the_loss_bound(ns3_installed) -> None:
    topo = preset("small-16")
    index = {h: i for i, h in enumerate(topo.hosts)}
    flows = [(index[f.src], index[f.dst], f.bytes, f.start_s, f.layer_class)
             for f in ps_incast(topo, 150_000, 0, 0, seed=5)]
    r = run_job_fresh(topo, load_policy(FABRIC_POLICY), "dlcp", JobSpec(None, flows=flows, max_sim_s=0.05, progress=False))
    grads = [t for t in r.transfers if t["kind"] == "gradient"]
    assert len(grads) == 15 and r.finished
    for t in grads:
        assert t["completed"], t
        non_critical = t["packets"] - t["critical"]
        allowed = non_critical - math.ceil((1 - t["loss_bound"]) * non_critical - 1e-9)
        assert t["zero_filled"] <= allowed, t            # never more missing than the bound
        assert t["droppable"] == allowed                 # tagging: exactly what the receiver can do without
    c = r.counters
    # the 15:1 incast overflows h0's port: the switch sheds droppable DATA, and tail drops force repairs
    assert c["selective_drops"], c
    for key in c["selective_drops"]:
        q, m = (int(x[1:]) for x in key.split("/"))
        assert 1 <= q <= 6 and m < 12, key
    assert sum(t["retx"] for t in grads) > 0 and sum(t["rounds"] for t in grads) > 0
    assert sum(t["zero_filled"] for t in grads) > 0
    assert c["sprayed_packets"] > 0
    s = job_report.summary(r)
    assert s["gradient"]["completed"] == 15 and s["gradient"]["p99_us"] > 0


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
