"""DLCP behind its own host's TCP: the host egress queue's waits, and hostPriority that really
puts DLCP first (issue 13).

Why this exists: at load 0.6 on paper-144 DLCP's gradients waited for admission far longer than
without background (docs/simulation.md "Load 0.6"). The session-7 run with the hostPriority knob
came out identical to the FIFO, event for event, and was read as "the host FIFO is not where they
wait". It was the knob: DlcpHost::SendTo sets the socket's TOS before every packet, and ns-3's
Socket::SetIpTos also sets the socket priority (socket.h: "Setting the IP TOS also changes the
socket priority"), so every DLCP packet left at priority 0, in the TCP band. The runs now count
how long packets wait in every host's egress queue disc (counters["host_queue"], sim_net.h
OnHostDequeue), DlcpHost::SendTo tags each DLCP packet with its priority, and the knob is on by
default.

The case: scale-16 (100 Gbit/s hosts, one leaf); h1 sends 20 MB of TCP to h2 from t = 0, so its
window (up to the 4 MiB send buffer, about 348 us at line rate) sits in h1's FIFO; at 0.5 ms h1
sends a 200 kB DLCP gradient to h0 (its wire time 16 us). With the FIFO the gradient's DATA waits
behind that window (measured: mean 352 us, max 360 us, FCT 867 us); with hostPriority it leaves
first (mean wait 0.06 us, FCT 23 us) while the TCP window still waits in the host queue behind it.
The priority assertions fail on the code before (both runs are the FIFO's there); with SendTo
setting the socket's priority after the TOS, the control messages go first but the DATA (ECT)
still waits 302 us on average. Real ns-3, one fresh process, both runs in it. Budget: about 60 s
(most of it the ns-3 import).
"""

from __future__ import annotations

from simulation.job import JobSpec
from simulation.policy import FABRIC_POLICY, load_policy
from simulation.switch_model.transport_knobs import run_jobs_fresh
from simulation.topology import preset

BULK, GRADIENT, AT = 20_000_000, 200_000, 0.5e-3


def test_dlcp_waits_behind_the_hosts_tcp_window_unless_host_priority(ns3_installed) -> None:
    topo = preset("scale-16")
    spec = JobSpec(None, flows=[(1, 0, GRADIENT, AT, 7)], bulk=[(1, 2, BULK, 0.0)], max_sim_s=0.004,
                   progress=False)
    policy = load_policy(FABRIC_POLICY)
    fifo, prio = run_jobs_fresh([({"hostPriority": False}, topo, policy, "dlcp", spec), ({}, topo, policy, "dlcp", spec)])
    grad = {name: next(t for t in r.transfers if t["dlcp"]) for name, r in (("fifo", fifo), ("prio", prio))}
    assert grad["fifo"]["completed"] and grad["prio"]["completed"], grad
    waits = {name: r.counters["host_queue"]["all"] for name, r in (("fifo", fifo), ("prio", prio))}
    wire = GRADIENT / (100e9 / 8)
    # the FIFO: the gradient's DATA waited behind h1's TCP window (hundreds of microseconds)
    assert waits["fifo"]["dlcp_data"]["max_us"] > 100, waits
    assert grad["fifo"]["fct_s"] > 100e-6 + wire, grad
    # hostPriority: DLCP leaves ahead of the window, at about its wire time plus admission
    assert waits["prio"]["dlcp_data"]["max_us"] < 5, waits
    assert waits["prio"]["dlcp_data"]["packets"] == waits["fifo"]["dlcp_data"]["packets"] == grad["prio"]["sent"], waits
    assert waits["prio"]["other"]["max_us"] > 100, waits       # the TCP window is still there, behind
    assert grad["prio"]["fct_s"] < 0.5 * grad["fifo"]["fct_s"], grad
