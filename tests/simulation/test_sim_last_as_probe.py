"""The LAST DATA packet as an implicit PROBE in the ns-3 DLCP transport (TransportConfig lastAsProbe,
sim_net.h; dlcp_transport.h OnData), issue 13.

Why this exists: with shedDroppable (on by default since session 17) a sender granted while its
receiver holds others leaves its droppable packets out, so the receiver never gets all n packets
and finished such a transfer only on its PROBE: a lost PROBE cost an RTO. The PROBE follows the
first transmission's LAST packet at once, so a receiver that gets that LAST (LAST flag, not a
retransmission) knows the sender has sent every packet once and may act as on the round-0 PROBE:
finish if the loss bound's rule holds, else arm the hold-off BITMAP. The case is the first-contact
burst (tests/simulation/bursts.py: scale-64, 168 OPENs into h0) at the shed default, where PROBEs
are lost in h0's queue 6: with the knob off those transfers wait an RTO, with it they do not.
Real ns-3, real DLCP packets through the C++ switch model, both runs in one fresh process.
Budget: about 30-40 s CPU (the ns-3 import most of it).
"""

from __future__ import annotations

import pytest

from simulation.switch_model.transport_knobs import run_jobs_fresh
from tests.simulation.bursts import first_contact_burst


@pytest.fixture(scope="module")
def runs(ns3_installed) -> dict:
    """The burst at the built-in defaults (shedDroppable on) with lastAsProbe off and on."""
    topo, policy, spec = first_contact_burst()
    off, on = run_jobs_fresh([({"lastAsProbe": False}, topo, policy, "dlcp", spec),
                              ({"lastAsProbe": True}, topo, policy, "dlcp", spec)])
    return {"off": off, "on": on}


def _probe_drops(run) -> int:
    return sum(n for kind, n in run.counters["tail_drops_by_kind"].items() if kind.endswith("/PROBE"))


def test_a_lost_probe_no_longer_costs_a_shed_transfer_an_rto(runs) -> None:
    """Both runs lose PROBEs at h0 (the case this guards). Off: a shed transfer whose PROBE was lost
    finishes only on the re-PROBE after an RTO (max FCT >= 200 us, measured 256.9). On: it finishes on
    its LAST packet (max FCT well below, no transfer re-probed for want of an answer)."""
    off, on = runs["off"], runs["on"]
    for name, run in (("off", off), ("on", on)):
        assert run.finished and all(t["completed"] for t in run.transfers), name
        assert _probe_drops(run) > 0, (name, run.counters["tail_drops_by_kind"])
        assert all(t["zero_filled"] <= t["droppable"] for t in run.transfers), name   # within the loss bound
    fct_off = max(t["fct_s"] for t in off.transfers)
    fct_on = max(t["fct_s"] for t in on.transfers)
    assert fct_off >= 200e-6, fct_off
    assert fct_on <= 150e-6, fct_on
    assert sum(t["probes"] > 1 for t in off.transfers) > 0
