"""The first-contact burst of small transfers that the ns-3 admission tests share (issue 13).

Why this exists: test_sim_first_contact (lost OPENs) and test_sim_ahead_budget (grant-ahead's
finishing senders) run the same burst on scale-64 and must keep running the same one.
"""

from __future__ import annotations

from controller.netconfig import Policy
from simulation.job import JobSpec
from simulation.policy import FABRIC_POLICY, load_policy
from simulation.topology import Topology, preset


def first_contact_burst() -> tuple[Topology, Policy, JobSpec]:
    """``(topology, policy, spec)`` of the burst: on scale-64 (4 leaves of 16 hosts, 100 Gbit/s
    hosts) h1-h15 (h0's leaf, one hop) open 8 transfers of 5 kB each at 2 us, h16-h63 (three hops)
    one of 20 kB at 0, so that all 168 OPENs reach h0's port together."""
    flows = [(w, 0, 5_000, 2e-6, 7 - g) for w in range(1, 16) for g in range(8)]
    flows += [(w, 0, 20_000, 0.0, 7) for w in range(16, 64)]
    return preset("scale-64"), load_policy(FABRIC_POLICY), JobSpec(None, flows=flows, max_sim_s=0.02, progress=False)
