"""The DCTCP baseline never cuts its window below 2 segments, as Linux's DCTCP (and ns-3's own Cubic and NewReno).

Why this exists: ns-3 3.44's TcpDctcp reduces ssthresh to cwnd * (1 - alpha / 2) with no floor. In
a paper-144 run (compute-ratio 143) a sender's window of 2,726 bytes at alpha = 1 became 1,363 bytes,
below one 1,448-byte segment, during CWR with nothing in flight: ns-3 sends only when a full
segment fits the window and runs no timer with nothing in flight, so 51 kB stayed queued for good and
the job never finished (issue 13, docs/simulation.md "DCTCP window floor"). Linux's dctcp_ssthresh
keeps max(cwnd - cwnd * alpha / 2, 2 segments) (RFC 8257 follows it); build_network now installs
tcp_path.h's TcpDctcpFloor, which adds that floor and nothing else.

The checks read the congestion control that build_network configures on a host's TcpL4Protocol,
create it as a socket would (and fork it, as an accepted socket does) and ask it for its reduction
on real ns-3 TcpSocketState objects, at alpha = 1 (DCTCP's initial alpha). On the old code the
"dctcp" mode's reduction of 2,726 bytes is 1,363. Every TCP mode is checked in one process.
Budget: about 20-40 s (the ns-3 import and model compile; the checks take milliseconds).
"""

from __future__ import annotations

import dataclasses

import pytest

from simulation.policy import policy_for
from simulation.scenario import build_network
from simulation.topology import preset

SEGMENT = 1448
# (cwnd in bytes, what Linux's reduction gives at alpha = 1: max(cwnd / 2, 2 segments))
WINDOWS = [(SEGMENT, 2 * SEGMENT), (2726, 2 * SEGMENT), (3 * SEGMENT, 2 * SEGMENT), (10 * SEGMENT, 5 * SEGMENT)]


def _reductions(mode: str) -> list[tuple[int, int, int]]:
    """(cwnd, reduction of a new socket's algorithm, reduction of a forked one) for ``mode``'s TCP."""
    topo = preset("small-16")
    policy = dataclasses.replace(policy_for(min(link.rate_bps for link in topo.links), None), queues=1)
    net = build_network(topo, policy, mode)
    ns = net.ns
    tcp = net.nodes[topo.hosts[0]].GetObject[ns.TcpL4Protocol]()
    socket_type = ns.TypeIdValue()
    tcp.GetAttribute("SocketType", socket_type)
    reduce_window = _reducer()
    return [(cwnd, reduce_window(socket_type.Get(), cwnd, False), reduce_window(socket_type.Get(), cwnd, True))
            for cwnd, _ in WINDOWS]


def _reducer():
    """A C++ function: the reduction of a window of ``cwnd`` bytes by a new algorithm of the given
    type (forked from it when ``forked``), as TcpSocketBase asks it on ECN or loss."""
    import cppyy

    if not hasattr(cppyy.gbl, "dlcp_test_reduce_window"):
        assert cppyy.cppdef(f"""
        #include "ns3/tcp-congestion-ops.h"
        #include "ns3/tcp-socket-state.h"
        uint32_t dlcp_test_reduce_window(ns3::TypeId type, uint32_t cwnd, bool forked) {{
          ns3::ObjectFactory factory;
          factory.SetTypeId(type);
          ns3::Ptr<ns3::TcpCongestionOps> algo = factory.Create<ns3::TcpCongestionOps>();
          if (forked) algo = algo->Fork();
          auto tcb = ns3::CreateObject<ns3::TcpSocketState>();
          tcb->m_segmentSize = {SEGMENT};
          tcb->m_cWnd = cwnd;
          tcb->m_ssThresh = 1u << 30;
          algo->Init(tcb);
          return algo->GetSsThresh(tcb, cwnd);
        }}
        """)
    return cppyy.gbl.dlcp_test_reduce_window


@pytest.mark.usefixtures("ns3_installed")
def test_every_tcp_baseline_keeps_at_least_two_segments_after_a_reduction() -> None:
    for mode in ("dctcp", "tcp-cubic", "tcp-newreno"):
        for (cwnd, fresh, forked), (_, linux) in zip(_reductions(mode), WINDOWS, strict=True):
            assert fresh >= 2 * SEGMENT and forked >= 2 * SEGMENT, (mode, cwnd, fresh, forked)
            if mode == "dctcp":             # otherwise DCTCP's own reduction, unchanged (alpha = 1: a half)
                assert fresh == forked == linux, (cwnd, fresh, forked, linux)
