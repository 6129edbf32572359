"""First contact of the ns-3 DLCP transport: lost OPENs (simulation/switch_model/dlcp_transport.h, issue 13).

Why this exists: in the goal command's first iteration (paper-144) 143 workers open 4 transfers
each to the PS within 2 us: 572 OPENs into the PS port's 64-packet control queue (the policy's
queue 7, which holds control only). The ones dropped there are the run's only control losses, and
a sender whose every OPEN was lost heard nothing until the grant wait (386 us) re-sent them: that
set iteration 0 and the run's gradient p99. A sender with no answer yet from a receiver now sends
its OPENs again after the fabric's lossless control round trip, jittered and doubling
(``openRetry``). The test makes such a burst on scale-64 and checks where the drops are and how
long the unanswered senders waited, with the retry and without it (the transport before).
Both runs leave ``shedDroppable`` (on by default since session 17) off: with it this burst also
loses 3 PROBEs of the 20 kB pushes in h0's queue 6 (it reaches 64 packets, 54 without; the granted
set is smaller, 46 against 50 senders), and a transfer whose sender shed its droppable packet never
gets all its packets, so it finishes on its PROBE: those 3 waited an RTO (257 us, at most 135 us
without). Measured in session 17 (/work/notes/s17/h17a-notes.md); not what this test is about.
Real ns-3, real DLCP packets through the C++ switch model, both runs in one fresh process.
Budget: about 30 s CPU (the ns-3 import about 18 s of it).
"""

from __future__ import annotations

import pytest

from simulation.job import fabric_control_rtt_s
from simulation.switch_model.transport_knobs import run_jobs_fresh
from tests.simulation.bursts import first_contact_burst


@pytest.fixture(scope="module")
def runs(ns3_installed) -> dict:
    """scale-64 (4 leaves of 16 hosts, 100 Gbit/s hosts): h1-h15 (h0's leaf, one hop) open 8
    transfers of 5 kB each at 2 us, h16-h63 (three hops) one of 20 kB at 0, so that all 168
    OPENs reach h0's port together; with the retry (the built-in transport, shedDroppable off: see
    above) and without it (the transport before: no retry, and no grant-ahead, which came later;
    with grantAhead 1.0 and no retry this burst also loses 7 DATA and 4 PROBE packets in queues 2
    and 4, measured in session 11)."""
    topo, policy, spec = first_contact_burst()
    now = {"shedDroppable": False}
    before = {**now, "openRetry": False, "grantAhead": 0.0}
    new, old = run_jobs_fresh([(now, topo, policy, "dlcp", spec), (before, topo, policy, "dlcp", spec)])
    return {"new": new, "old": old, "retry_s": fabric_control_rtt_s(topo, policy), "flows": len(spec.flows)}


def test_lost_first_contact_opens_are_sent_again_within_a_control_round_trip(runs) -> None:
    """The burst overflows the control queue at h0's port and only OPENs are lost there; every
    sender is answered (GRANT or HOLD) within a few control round trips (retry after 1-2 x 31.6 us,
    measured 65.5 us), where before the senders whose OPENs were all lost waited the grant wait
    (2 RTO >= 386 us, measured 394 us). Every transfer completes in both runs."""
    new, old = runs["new"], runs["old"]
    for run in (new, old):
        assert run.finished and all(t["completed"] for t in run.transfers)
        drops = run.counters["tail_drops_by_kind"]
        assert set(drops) == {"q7/OPEN"} and drops["q7/OPEN"] > 0, drops   # control only, and only OPENs
        assert sum(t["answer_wait_s"] is not None for t in run.transfers) == runs["flows"]   # all first contact
    assert new.counters["transport"]["open_retries"] > 0
    assert old.counters["transport"]["open_retries"] == 0
    waited_new = max(t["answer_wait_s"] for t in new.transfers)
    waited_old = max(t["answer_wait_s"] for t in old.transfers)
    assert waited_new <= 3 * runs["retry_s"], (waited_new, runs["retry_s"])
    assert waited_old >= 300e-6, waited_old
