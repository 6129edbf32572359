"""Senders shed their droppable packets while the receiver holds others (TransportConfig shedDroppable,
on by default since session 17; sim_net.h; dlcp_transport.h SendOne, OnGrant, SendGrantPacket), issue 13.

Why this exists: at paper-144, load 0.6, the PS link carries every push packet unless a switch drops
it, including the droppable-by-design ones (not CRITICAL, magnitude class below the protected class:
the smallest-|g| packets the loss bound lets the receiver zero-fill). The switches drop them only
when a queue is deep, and receiver-driven admission keeps the queues short, so they were always
sent: 17 us of the PS link per iteration (docs/simulation.md). With shedDroppable a receiver that
holds senders flags its GRANTs, and a granted sender leaves those packets out while the flag stands.
It lowered the mean over iterations 0-1 of the goal command on seeds 1-3 (docs/simulation.md) and
is the default since session 17; the test runs the default against ``shedDroppable=false`` and fails
if the default went back to sending every packet.

The case: scale-16 (100 Gbit/s, one leaf), 15 senders push 50 kB each into h0 (35 packets, 2
critical, 3 droppable) with 4 senders granted at once, at the default and with the knob off; then 3
senders (none held) at the default. Off: every packet is sent (a switch may still drop a droppable
one). Default: the senders granted while others are held leave out their droppable packets
(zero-filled, never more than the droppable count, nothing CRITICAL) and every push completes
without retransmission; with no sender held nothing is left out (the switches may still drop
droppable packets, knob or not). Budget: about 40-60 s (the ns-3 import), one fresh process.
"""

from __future__ import annotations

from simulation.job import JobSpec
from simulation.policy import FABRIC_POLICY, load_policy
from simulation.switch_model.transport_knobs import run_jobs_fresh
from simulation.topology import preset

BYTES = 50_000


def _spec(senders: int) -> JobSpec:
    flows = [(src, 0, BYTES, 0.5e-6 * src, 5) for src in range(1, senders + 1)]
    return JobSpec(None, flows=flows, max_sim_s=0.01, progress=False)


def test_held_receivers_senders_leave_their_droppable_packets_out(ns3_installed) -> None:
    topo = preset("scale-16")
    policy = load_policy(FABRIC_POLICY)
    four = {"overcommitSenders": 4}                   # default: the built-in shedDroppable
    off, on, calm = run_jobs_fresh([({**four, "shedDroppable": False}, topo, policy, "dlcp", _spec(15)),
                                    (four, topo, policy, "dlcp", _spec(15)),
                                    (four, topo, policy, "dlcp", _spec(3))])
    for name, r in (("off", off), ("default", on), ("calm", calm)):
        assert r.finished and all(t["completed"] for t in r.transfers), name
        assert sum(t["retx"] for t in r.transfers) == 0, name
        assert all(t["packets"] == 35 and t["critical"] == 2 and t["droppable"] == 3 for t in r.transfers), name
    assert off.counters["transport"]["holds_sent"] > 0, off.counters["transport"]       # senders were held
    sent = {name: [t["sent"] for t in r.transfers] for name, r in (("off", off), ("default", on), ("calm", calm))}
    assert all(t["sent"] == t["packets"] for t in off.transfers), sent["off"]     # off: every packet is sent
    shed = [t["packets"] - t["sent"] for t in on.transfers]
    assert all(0 <= t["packets"] - t["sent"] <= t["droppable"] and t["zero_filled"] <= t["droppable"]
               for t in on.transfers), (shed, [t["zero_filled"] for t in on.transfers])
    assert sum(shed) >= 12, shed                      # default: the senders granted while others were held left theirs out
    assert all(t["sent"] == t["packets"] for t in calm.transfers), sent["calm"]   # none held: nothing left out
