"""The small scenario end to end: 16 hosts, PS incast, DLCP vs TCP Cubic vs DCTCP in ns-3.

Why this exists: proves the whole path runs (policy -> C++ switch model in every switch port,
spraying/per-flow ECMP routing, DLCP sender, TCP baselines, FlowMonitor, results files) and that
the switch behaves as the policy says under real congestion: DLCP DATA sprayed while TCP stays
pinned, selective drops only of droppable classes in the data queues, never of the protected
ones; DCTCP's RED marks. Each mode in a fresh process (scenario.run_fresh). Budget: about 45 s.
"""

from __future__ import annotations

import json

from simulation import report
from simulation.policy import FABRIC_POLICY, load_policy
from simulation.scenario import ps_incast, run_fresh
from simulation.topology import preset


def test_small_incast_dlcp_tcp_dctcp(ns3_installed, tmp_path) -> None:
    topo = preset("small-16")
    policy = load_policy(FABRIC_POLICY)      # packet thresholds: the default's are tuned for 20 Mbit/s
    flows = ps_incast(topo, gradient_bytes=100_000, background=6, background_bytes=50_000, seed=3)
    runs = [run_fresh(topo, policy, mode, flows, 0.004) for mode in ("dlcp", "tcp-cubic", "dctcp")]
    dlcp, cubic, dctcp = runs

    # Cubic and DCTCP deliver every byte of every flow (DCTCP's one sender that crawled at a segment
    # per RTO, its delayed ACKs timed past MinRto, completes since build_network's DelAckTimeout)
    for r in (cubic, dctcp):
        assert all(f.completed and f.delivered_bytes == f.bytes for f in r.flows), [f for f in r.flows if not f.completed]
    for r in (cubic, dctcp):
        assert r.counters["sprayed_packets"] == 0 and r.counters["pinned_packets"] > 0
    assert dctcp.counters["ecn_marks"] > 0
    # DLCP: the incast overloads h0's port; gradient DATA is sprayed over both spines, TCP pinned
    c = dlcp.counters
    assert c["sprayed_packets"] > 0 and c["pinned_packets"] > 0
    assert c["selective_drops"], "15:1 incast into 64-packet queues must shed low magnitudes"
    for key in c["selective_drops"]:
        q, m = (int(x[1:]) for x in key.split("/"))
        assert 1 <= q <= 6 and m < 12, key              # data queues, droppable classes only
    grads = [f for f in dlcp.flows if f.kind == "gradient"]
    assert all(f.rx_packets > 0 for f in grads)
    assert all(f.completed for f in dlcp.flows if f.kind == "background")
    assert all(r.events > 10_000 for r in runs)

    rep = report.write(tmp_path, runs, "# test")
    lines = (tmp_path / "flows.jsonl").read_text().splitlines()
    assert len(lines) == 3 * len(flows)
    assert {json.loads(line)["mode"] for line in lines} == {"dlcp", "tcp-cubic", "dctcp"}
    assert "| dctcp |" in rep.read_text()
