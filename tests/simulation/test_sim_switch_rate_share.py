"""Topology.switch_rate_share in real ns-3: a switch port sends at that share of its link's rate.

Why this exists: the cross-check with Mininet gives ns-3's switch ports the share of their rate
that Mininet's software switches were measured to deliver while backlogged (docs/simulation.md,
"Cross-check with Mininet"); the selective-drop evidence rests on the ports really running at
that share while hosts keep their full rate. One TCP cubic transfer across one switch port of the
Mininet tcp-bulk fabric (20 Mbit/s), at share 1 and 0.5, in the session's ns-3 process.
Budget: a few seconds after the ns-3 import (shared with the other ns-3 tests).
"""

from __future__ import annotations

import pytest

from simulation.job import JobSpec, run_job
from simulation.policy import policy_for
from simulation.topology import preset

BYTES = 300_000


def _goodput_mbps(share: float) -> float:
    topo = preset("mininet-tcp-bulk")
    topo.switch_rate_share = share
    spec = JobSpec(None, max_sim_s=0.6, bulk=[(1, 0, BYTES, 0.0)], bulk_tcp="TcpCubic", progress=False)
    r = run_job(topo, policy_for(20_000_000, None), "tcp-cubic", spec)
    (t,) = [t for t in r.transfers if t["bytes"] == BYTES]
    assert t["completed"], t
    return BYTES * 8 / t["fct_s"] / 1e6


@pytest.mark.parametrize("share, low, high", [(1.0, 15.0, 20.0), (0.5, 7.0, 10.0)])
def test_switch_ports_send_at_their_share_of_the_link_rate(ns3_model, share: float, low: float, high: float) -> None:
    """h1 -> h0 over leaf0's port to h0: the host sends at 20 Mbit/s, the port drains at share x 20."""
    assert low < _goodput_mbps(share) <= high
