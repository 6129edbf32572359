"""The TCP baselines in ns-3 keep sending after a loss: TCP cubic and DCTCP PS jobs close every iteration.

Why this exists: ns-3's TCP leaves loss recovery on the ACK of its retransmission without growing the
window (one segment), and its default delayed-ACK timer (200 ms) is at least the minimum RTO used here
(200 ms on Mininet-speed fabrics, at most 1 ms on datacenter ones). The receiver then held the ACK of
every lone segment until after the sender's RTO, every time: one segment per RTO, the "stall" that
kept the Mininet cross-check's TCP cubic PS job from closing an iteration (issue 13). build_network
now times delayed ACKs as Linux does against its RTO floor (a fifth). The job here is the cross-check's
tcp-bulk PS job (digits-wide, PS h1 <- h2, h4, h5, 20 Mbit/s, one 64-packet FIFO per port): its pulls
overflow the PS's port and lose packets, so a run that times out a segment must recover. Both modes
in one fresh process. Budget: about 35 s (20-30 s of it the ns-3 import).
"""

from __future__ import annotations

import dataclasses

from simulation import crosscheck
from simulation.job import JobSpec
from simulation.policy import policy_for
from simulation.switch_model.transport_knobs import run_jobs_fresh
from simulation.topology import preset

ITERATIONS = 2


def test_tcp_cubic_and_dctcp_ps_jobs_close_every_iteration_after_losses(ns3_installed) -> None:
    pname, jobs, _, _ = crosscheck.scenario("tcp-bulk")
    jobs = [dataclasses.replace(j, workload=crosscheck.digits_wide(ITERATIONS)) for j in jobs]
    topo = preset(pname)
    policy = dataclasses.replace(policy_for(crosscheck.LINK_BPS, None), queues=1)
    spec = JobSpec(None, max_sim_s=8.0, jobs=jobs, progress=False)
    cubic, dctcp = run_jobs_fresh([({}, topo, policy, "tcp-cubic", spec), ({}, topo, policy, "dctcp", spec)])
    assert cubic.counters["drops"] > 0          # the pulls overflow the port: recovery is exercised
    for r in (cubic, dctcp):
        workers = len(jobs[0].hosts) - 1
        times = [it["iter_s"] for it in r.iterations]
        assert r.finished and len(times) == workers * ITERATIONS, (r.mode, times)
        assert all(t is not None and 0 < t < 3.0 for t in times), (r.mode, times)
        assert all(t["completed"] for t in r.transfers), r.mode
