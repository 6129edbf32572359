"""Layer-class pre-emption with shedding: the pre-emption lag (TransportConfig preemptWait, sim_net.h;
dlcp_transport.h ReadyAt, SendOne, OnDone), issue 13.

Why this exists: with classAdmission the receiver grants the senders of the top layer class and holds
the others. A granted sender whose top-class transfer has been sent goes on with its lower-class one
until the HOLD comes, which the receiver sends when it finishes that top-class transfer: 9-10 packets
per sender per round, into a queue served only between rounds while the next group sends at line
rate. With shedDroppable (on by default) that overflowed h0's q1 in test_sim_overcommit's class run
(9 class-0 DATA lost, the last class-0 transfer 115.4 us instead of 87.9; traced in session 18,
/work/notes/s18/h18b-notes.md). With preemptWait (off by default) such a sender, while its
destination's GRANT carries the shed flag, sends at most ``unscheduled`` lower-class DATA until the
top-class transfer's DONE. The test runs that case with the knob off and on, and fails if the knob
no longer prevents the loss or if the case no longer loses packets without it.
Real ns-3, real DLCP packets through the C++ switch model, both runs in one fresh process.
Budget: about 30-40 s CPU (the ns-3 import most of it).
"""

from __future__ import annotations

from simulation.job import JobSpec
from simulation.policy import FABRIC_POLICY, load_policy
from simulation.switch_model.transport_knobs import run_jobs_fresh
from simulation.topology import preset

CLASSES = {"overcommitSenders": 4, "classAdmission": True}   # shedDroppable: the built-in default (on)


def _end(run, cls: int) -> float:
    return max(t["start_s"] + t["fct_s"] for t in run.transfers if t["layer_class"] == cls)


def test_lower_classes_wait_for_the_top_class_done_under_pressure(ns3_installed) -> None:
    """scale-16, 15 workers x 30 kB into h0, class 0 at 0 and class 7 at 1 us, 4 granted, one band.
    Off: class-0 DATA tail-dropped in q1 and retransmitted. On: none lost, none retransmitted, class 7
    unchanged, the last class-0 transfer earlier (measured 115.4 -> 94.3 us)."""
    flows = [(w, 0, 30_000, 0.0, 0) for w in range(1, 16)] + [(w, 0, 30_000, 1e-6, 7) for w in range(1, 16)]
    spec = JobSpec(None, flows=flows, max_sim_s=0.02, progress=False)
    topo, policy = preset("scale-16"), load_policy(FABRIC_POLICY)
    off, on = run_jobs_fresh([(CLASSES, topo, policy, "dlcp", spec),
                              (CLASSES | {"preemptWait": True}, topo, policy, "dlcp", spec)])
    for name, run in (("off", off), ("on", on)):
        assert run.finished and all(t["completed"] for t in run.transfers), name
        assert sum(t["packets"] - t["sent"] for t in run.transfers if t["retx"] == 0) > 0, name   # shedding
    assert off.counters["tail_drops_by_kind"].get("q1/DATA", 0) > 0, off.counters["tail_drops_by_kind"]
    assert sum(t["retx"] for t in off.transfers) > 0
    assert on.counters["tail_drops_by_kind"] == {}, on.counters["tail_drops_by_kind"]
    assert sum(t["retx"] for t in on.transfers) == 0
    assert _end(on, 7) <= _end(off, 7) + 1e-6, (_end(on, 7), _end(off, 7))
    assert _end(on, 0) < _end(off, 0) - 10e-6, (_end(on, 0), _end(off, 0))
