"""Receiver grants the next held sender a round trip ahead of the hand-over (TransportConfig
grantAhead, dlcp_transport.h Regrant/OnData), issue 13.

Why this exists: with more active senders than ``overcommitSenders`` a receiver grants some and
holds the rest; without grantAhead a held sender is granted only when a granted one finishes, so
its GRANT and first DATA take a round trip during which the finishing sender's share of the link is
idle. ``grantAhead`` (in round trips) lets a granted sender whose packets left here fall to that
many round trips of its share stop counting against ``overcommitSenders``, so the next one is
granted while the last packets are still on their way (Homa's grant-ahead). On by default (1.0)
since session 11; 0 turns it off.

The case: scale-16 (100 Gbit/s, one leaf), 15 workers send 100 kB each into h0, one granted at a
time (the hand-overs are all there is). The 1.5 MB take 120 us of payload at h0's link. Off
(grantAhead 0, the default before session 11): each of the 14 hand-overs idles the link, the last
transfer ends over 1.3x that. Built-in (grantAhead 1.0) and grantAhead 1.0 set explicitly: the last
ends within 1.15x of it, the last and the mean FCT are over 20 % lower than off; nothing is dropped
or retransmitted in any of them. Budget: about 40 s (the ns-3 import).
"""

from __future__ import annotations

from simulation.job import JobSpec
from simulation.policy import FABRIC_POLICY, load_policy
from simulation.switch_model.transport_knobs import run_jobs_fresh
from simulation.topology import preset

UNIT = 100_000
WORKERS = 15
LINK_BPS = 100e9


def test_next_sender_granted_a_round_trip_ahead(ns3_installed) -> None:
    topo = preset("scale-16")
    flows = [(w, 0, UNIT, (w - 1) * 1e-7, 7) for w in range(1, WORKERS + 1)]
    spec = JobSpec(None, flows=flows, max_sim_s=0.02, progress=False)
    policy = load_policy(FABRIC_POLICY)
    base = {"overcommitSenders": 1}
    off, ahead, built_in = run_jobs_fresh([(base | {"grantAhead": 0.0}, topo, policy, "dlcp", spec),
                                           (base | {"grantAhead": 1.0}, topo, policy, "dlcp", spec),
                                           (base, topo, policy, "dlcp", spec)])
    drain = WORKERS * UNIT * 8 / LINK_BPS                              # payload alone at h0's link
    mean, last = {}, {}
    for name, r in (("off", off), ("ahead", ahead), ("built_in", built_in)):
        assert r.finished and all(t["completed"] for t in r.transfers), name
        assert not r.counters["tail_drops"] and sum(t["retx"] for t in r.transfers) == 0, name
        assert r.counters["transport"]["holds_sent"] >= WORKERS - 1, name  # one at a time: the rest held
        fct = [t["fct_s"] for t in r.transfers]
        mean[name] = sum(fct) / len(fct)
        last[name] = max(t["start_s"] + t["fct_s"] for t in r.transfers)
    assert last["off"] > 1.3 * drain, (last, drain)                   # a round trip idle per hand-over
    for name in ("ahead", "built_in"):                                 # the default grants ahead too
        assert last[name] < 1.15 * drain, (name, last, drain)
        assert last[name] < 0.8 * last["off"], (name, last)
        assert mean[name] < 0.8 * mean["off"], (name, mean)
