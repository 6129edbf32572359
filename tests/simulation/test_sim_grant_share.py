"""The receiver grants its whole link (TransportConfig grantShare 1.0, host_agent's GRANT_SHARE
since session 9), issue 13.

Why this exists: host_agent's receiver split 0.93 of its link over the active senders until
session 9 (273fe8c), and ns-3 until session 10. With 0.93 an incast's granted senders together
fill at most 0.93 of the receiver's link: the queue in front of the receiver stays below the
switch's selective-drop depths, the loss bound never acts and the link idles 7 % of the time.
Granting the whole link, the senders' pacing jitter lets that queue reach the drop depths, the
switch gives up droppable packets, and the link runs near its rate.

The case: small-16 (10 Gbit/s hosts), four DLCP flows of 1 MB from the last leaf's hosts into h0
at once, the built-in knobs and again with grantShare 0.93, in one fresh process. Built-in: the
payload crosses h0's link at over 0.94 of its rate, the queue at h0's port gets deeper than with
0.93, droppable packets are selectively dropped there, and the last flow ends over 4 % earlier;
0.93: under 0.93 of the rate, no selective drop. With 0.93 as the built-in value (the model
before) the two runs are the same and the test fails. Budget: about 30 s (the ns-3 import).
"""

from __future__ import annotations

from simulation.job import JobSpec
from simulation.policy import FABRIC_POLICY, load_policy
from simulation.switch_model.transport_knobs import run_jobs_fresh
from simulation.topology import preset

FLOW_BYTES = 1_000_000
SENDERS = 4


def test_whole_link_granted_fills_the_receivers_link(ns3_installed) -> None:
    topo = preset("small-16")
    senders = [len(topo.hosts) - 1 - i for i in range(SENDERS)]       # h15..h12: another leaf, via the spines
    spec = JobSpec(None, flows=[(s, 0, FLOW_BYTES, 0.0, 7) for s in senders], max_sim_s=0.01, progress=False)
    policy = load_policy(FABRIC_POLICY)
    built_in, old = run_jobs_fresh([({}, topo, policy, "dlcp", spec), ({"grantShare": 0.93}, topo, policy, "dlcp", spec)])
    rate = next(lk.rate_bps for lk in topo.links if "h0" in (lk.a, lk.b))
    util, last, data_queue = {}, {}, {}
    for name, r in (("built_in", built_in), ("old", old)):
        assert len(r.transfers) == SENDERS and all(t["completed"] for t in r.transfers), name
        assert r.counters["transport"]["active_senders_max"] == SENDERS, r.counters["transport"]
        assert not r.counters["tail_drops"], r.counters["tail_drops"]
        last[name] = max(t["start_s"] + t["fct_s"] for t in r.transfers)
        util[name] = SENDERS * FLOW_BYTES * 8 / last[name] / rate
        data_queue[name] = max(depth for q, depth in r.counters["max_depth"].items() if q != "q7")   # q7: control
    assert util["built_in"] > 0.94 and util["old"] < 0.93, util
    assert last["built_in"] < 0.96 * last["old"], last
    assert data_queue["built_in"] > data_queue["old"], data_queue        # the deepest: h0's port, the one contended
    assert built_in.counters["selective_drops"], "the whole link granted: the queue reaches the drop depths"
    assert not old.counters["selective_drops"], old.counters["selective_drops"]
    for r in (built_in, old):                 # what the switch gave up stays within the loss bound
        for t in r.transfers:
            assert t["zero_filled"] <= t["loss_bound"] * t["packets"], t
