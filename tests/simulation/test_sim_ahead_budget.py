"""A bound on grant-ahead's finishing senders (TransportConfig aheadBudget, dlcp_transport.h
Regrant), issue 13.

Why this exists: with grantAhead a granted sender whose packets left at the receiver fall to a
round trip of its share (the threshold) stops counting against ``overcommitSenders``, so the
next held sender is granted a round trip ahead; finishing senders keep their share and window.
With small transfers many senders are finishing at once and the granted set grows without a
bound: test_sim_first_contact's burst (scale-64: 15 one-hop senders open 8 x 5 kB, 48 three-hop
senders one 20 kB, all into h0) with 12 senders at once granted up to 42 senders (30 finishing),
filled h0's data queues and lost DATA and PROBE packets there (session 11: 153 DATA). With
``aheadBudget`` 1 the finishing senders together may have at most one threshold of packets left
(the ones with the most left count again), so the link is overcommitted by at most one sender's
round trip. The test runs the burst with 12 senders at once without grant-ahead, with it
unbounded (aheadBudget 0) and bounded (aheadBudget 1). Unbounded: DATA is tail-dropped and the
finishing set is large. Bounded: only OPENs are lost (the control queue, as without grant-ahead),
nothing is retransmitted, the finishing set is a fraction of the unbounded one, and the mean and
the last FCT are below those without grant-ahead. Real ns-3, all three runs in one fresh process.
Budget: about 30 s CPU (the ns-3 import about 18 s of it).
"""

from __future__ import annotations

import pytest

from simulation.switch_model.transport_knobs import run_jobs_fresh
from tests.simulation.bursts import first_contact_burst

GRANTED = 12


@pytest.fixture(scope="module")
def runs(ns3_installed) -> dict:
    topo, policy, spec = first_contact_burst()
    base = {"overcommitSenders": GRANTED, "grantAhead": 1.0}
    off, unbounded, bounded = run_jobs_fresh([(base | {"grantAhead": 0.0}, topo, policy, "dlcp", spec),
                                              (base | {"aheadBudget": 0.0}, topo, policy, "dlcp", spec),
                                              (base | {"aheadBudget": 1.0}, topo, policy, "dlcp", spec)])
    return {"off": off, "unbounded": unbounded, "bounded": bounded}


def _data_drops(run) -> int:
    return sum(n for k, n in run.counters["tail_drops_by_kind"].items() if k.endswith(("/DATA", "/RETX")))


def test_unbounded_finishing_senders_overfill_the_receivers_queues(runs) -> None:
    r = runs["unbounded"]
    assert r.finished and all(t["completed"] for t in r.transfers)
    tr = r.counters["transport"]
    assert _data_drops(r) > 0 and sum(t["retx"] for t in r.transfers) > 0
    assert tr["finishing_max"] > GRANTED and tr["granted_set_max"] > 2 * GRANTED, tr


def test_bounded_finishing_senders_lose_no_data(runs) -> None:
    off, unbounded, bounded = runs["off"], runs["unbounded"], runs["bounded"]
    for name, r in (("off", off), ("bounded", bounded)):
        assert r.finished and all(t["completed"] for t in r.transfers), name
        assert set(r.counters["tail_drops_by_kind"]) == {"q7/OPEN"}, (name, r.counters["tail_drops_by_kind"])
        assert sum(t["retx"] for t in r.transfers) == 0, name
    tr, tu = bounded.counters["transport"], unbounded.counters["transport"]
    assert 0 < tr["finishing_max"] < tu["finishing_max"] / 2, (tr, tu)
    assert tr["granted_set_max"] > GRANTED                         # it still grants ahead
    assert off.counters["transport"]["granted_set_max"] == GRANTED  # without grant-ahead: never past 12

    def mean_and_last(r) -> tuple[float, float]:
        fct = [t["fct_s"] for t in r.transfers]
        return sum(fct) / len(fct), max(t["start_s"] + t["fct_s"] for t in r.transfers)

    (m_off, l_off), (m_b, l_b), (m_u, l_u) = mean_and_last(off), mean_and_last(bounded), mean_and_last(unbounded)
    assert m_b < m_off and l_b < l_off, (m_b, m_off, l_b, l_off)
    assert m_b < 0.7 * m_u and l_b < 0.7 * l_u, (m_b, m_u, l_b, l_u)
