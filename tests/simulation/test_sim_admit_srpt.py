"""Receiver admission fewest packets left first (TransportConfig admitSrpt, dlcp_transport.h
Regrant), issue 13.

Why this exists: with more active senders than ``overcommitSenders`` a receiver grants some and
holds the rest; by default the held ones are admitted earliest OPEN first. The mean FCT of an
incast is lowest when the shortest transfers go first (SRPT; pFabric, Homa), so ``admitSrpt``
admits the held senders fewest packets left first (the earliest OPEN on a tie), never pre-empting
one already granted. Off by default: in paper-144's first iteration every worker pushes the same
four groups, so the sizes tie (docs/simulation.md "The whole link granted").

The case: scale-16 (100 Gbit/s, one leaf), 15 workers into h0, 4 granted at a time, the largest
opening first (worker w sends (16 - w) x 20 kB, OPENs 0.1 us apart). Built-in (earliest OPEN): the
held senders finish in OPEN order, large before small. admitSrpt: after the four granted at once,
they finish smallest first, the mean FCT is over 10 % lower, the last one within 5 % of the
built-in's; nothing dropped or retransmitted either way. Budget: about 40 s (the ns-3 import).
"""

from __future__ import annotations

from simulation.job import JobSpec
from simulation.policy import FABRIC_POLICY, load_policy
from simulation.switch_model.transport_knobs import run_jobs_fresh
from simulation.topology import preset

UNIT = 20_000
GRANTED = 4


def test_held_senders_admitted_fewest_packets_left_first(ns3_installed) -> None:
    topo = preset("scale-16")
    flows = [(w, 0, (16 - w) * UNIT, (w - 1) * 1e-7, 7) for w in range(1, 16)]
    spec = JobSpec(None, flows=flows, max_sim_s=0.02, progress=False)
    policy = load_policy(FABRIC_POLICY)
    base = {"overcommitSenders": GRANTED}
    built_in, srpt = run_jobs_fresh([(base, topo, policy, "dlcp", spec),
                                     (base | {"admitSrpt": True}, topo, policy, "dlcp", spec)])
    order, mean, last = {}, {}, {}
    for name, r in (("built_in", built_in), ("srpt", srpt)):
        assert r.finished and all(t["completed"] for t in r.transfers), name
        assert not r.counters["tail_drops"] and sum(t["retx"] for t in r.transfers) == 0, name
        assert r.counters["transport"]["holds_sent"] > 0, name          # senders were held: admission mattered
        done = sorted(r.transfers, key=lambda t: t["start_s"] + t["fct_s"])
        first_granted = {15 * UNIT - k * UNIT for k in range(GRANTED)}   # the four largest opened first
        order[name] = [t["bytes"] // UNIT for t in done if t["bytes"] not in first_granted]
        mean[name] = sum(t["fct_s"] for t in done) / len(done)
        last[name] = max(t["fct_s"] for t in done)
    assert order["srpt"] == sorted(order["srpt"]), order
    assert order["built_in"] != sorted(order["built_in"]), order                # earliest OPEN: large ones first
    assert order["built_in"].index(11) < order["built_in"].index(1), order
    assert mean["srpt"] < 0.9 * mean["built_in"], mean
    assert last["srpt"] < 1.05 * last["built_in"], last
