"""DLCP control ahead of DLCP DATA at the host port (TransportConfig hostControlFirst, on by default
since session 16; sim_net.h InstallHostPrio, dlcp_transport.h SendTo), issue 13.

Why this exists: with hostPriority a host port has one band for all of DLCP, so a PS that is sending
pulls queues its own ACKs and GRANTs behind that DATA. At paper-144, load 0.6, the iteration-0
pulls were still going out during the first 200 us of iteration 1's pushes: the PS's ACKs took
7-11.9 us instead of 4.0-4.1 to reach the granted workers, their windows stalled and the PS link ran
at 76-93 % for ~110 us (docs/simulation.md). hostControlFirst gives DLCP control a band of its own
ahead of DLCP DATA, as the switches' control queue (q7) is served first. It lowered the mean over
iterations 0-1 of the goal command on seeds 1-3 (docs/simulation.md) and is the default since
session 16; the test runs the default against ``hostControlFirst=false`` and fails if the default
went back to one DLCP band.

The case: scale-16 (100 Gbit/s, one leaf), h0 fans 1 MB out to each of h1-h7 (its port busy
with DATA for ~570 us) while h8-h15 push 500 kB each into it. With the knob off h0's control packets wait
behind its DATA in the host port; at the default they wait at most about one packet's serialization,
and the pushes finish no later; nothing dropped or retransmitted either way. Budget: about 40-60 s (the
ns-3 import).
"""

from __future__ import annotations

from simulation.job import JobSpec
from simulation.policy import FABRIC_POLICY, load_policy
from simulation.switch_model.transport_knobs import run_jobs_fresh
from simulation.topology import preset


def test_control_leaves_the_host_ahead_of_its_own_data(ns3_installed) -> None:
    topo = preset("scale-16")
    pulls = [(0, dst, 1_000_000, 0.0, 7) for dst in range(1, 8)]
    pushes = [(src, 0, 500_000, 5e-6, 7) for src in range(8, 16)]
    spec = JobSpec(None, flows=pulls + pushes, max_sim_s=0.02, progress=False)
    policy = load_policy(FABRIC_POLICY)
    before, now = run_jobs_fresh([({"hostControlFirst": False}, topo, policy, "dlcp", spec),
                                  ({}, topo, policy, "dlcp", spec)])        # now: the built-in default
    waits, push_mean = {}, {}
    for name, r in (("before", before), ("now", now)):
        assert r.finished and all(t["completed"] for t in r.transfers), name
        assert sum(t["retx"] for t in r.transfers) == 0 and not r.counters["tail_drops"].get("q7"), name
        ps = r.counters["host_queue"]["h0"]
        assert ps["dlcp_data"]["packets"] > 1000 and ps["dlcp_control"]["packets"] > 50, (name, ps)
        waits[name] = ps["dlcp_control"]["mean_us"]
        fct = [t["fct_s"] for t in r.transfers if t["dst"] == "h0"]
        push_mean[name] = sum(fct) / len(fct)
    assert waits["before"] > 0.5, waits                 # off: behind the fan-out's DATA (0.86 us when written)
    assert waits["now"] < min(0.2, waits["before"] / 4), waits   # default: about one 1,502-byte packet (0.12 us) at most
    assert push_mean["now"] <= push_mean["before"], push_mean
