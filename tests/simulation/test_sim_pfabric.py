"""The pFabric-like baseline's switch port (simulation/switch_model/pfabric_queue.h) on real ns-3
queue-disc items.

Why this exists: pFabric's switch is the part ns-3 does not have (PrioQueueDisc has fixed FIFO
bands): a port must send the earliest packet of the flow holding the highest-priority (smallest
remaining size) packet, and on a full buffer drop an arriving packet no better than the worst
queued, else evict the worst queued one (the latest of its flow). These checks pin that order and
those drops; the transport end to end is in test_sim_transport.py (the incast in pfabric mode).
Runs in the session's ns-3 process (shared import with the differential test); about 1 s after it.
"""

from __future__ import annotations

import pytest

HELPER = r"""
#include "ns3/internet-module.h"
namespace pftest {
// A UDP packet of the pFabric transport (priority = remaining bytes, flow = transfer id) as the
// switch's queue disc sees it: an Ipv4QueueDiscItem whose packet starts with the UDP header.
inline ns3::Ptr<ns3::QueueDiscItem> Item(uint32_t prio, uint32_t flow, uint32_t idx, uint16_t port) {
  uint8_t b[8 + 16] = {0};
  b[0] = port >> 8; b[1] = port & 0xff; b[2] = port >> 8; b[3] = port & 0xff; b[5] = sizeof(b);
  uint8_t* h = b + 8;
  h[0] = 'P'; h[1] = 0;
  for (int i = 0; i < 4; ++i) { h[4 + i] = prio >> (24 - 8 * i); h[8 + i] = flow >> (24 - 8 * i); h[12 + i] = idx >> (24 - 8 * i); }
  ns3::Ipv4Header ip;
  ip.SetProtocol(17);
  return ns3::Create<ns3::Ipv4QueueDiscItem>(ns3::Create<ns3::Packet>(b, sizeof(b)), ns3::Address(), 0x0800, ip);
}
inline ns3::Ptr<dlcpsim::PfabricQueueDisc> Port(uint32_t capacity) {
  auto qd = ns3::CreateObject<dlcpsim::PfabricQueueDisc>();
  qd->SetCapacity(capacity);
  qd->Initialize();
  return qd;
}
// (flow, packet) of what the port sends next; (0, 0) when empty
inline std::pair<uint32_t, uint32_t> Next(ns3::Ptr<dlcpsim::PfabricQueueDisc> qd) {
  auto item = qd->Dequeue();
  if (!item) return {0, 0};
  uint8_t b[8 + 16];
  item->GetPacket()->CopyData(b, sizeof(b));
  auto get = [&](int o) { return (uint32_t)b[o] << 24 | (uint32_t)b[o + 1] << 16 | (uint32_t)b[o + 2] << 8 | b[o + 3]; };
  return {get(16), get(20)};
}
}
"""


@pytest.fixture(scope="module")
def pf(ns3_model):
    import cppyy

    if not hasattr(cppyy.gbl, "pftest"):
        assert cppyy.cppdef(HELPER)
    return cppyy.gbl.pftest


def _drain(pf, qd) -> list[tuple[int, int]]:
    out = []
    while True:
        flow, idx = pf.Next(qd)
        if flow == 0:
            return out
        out.append((int(flow), int(idx)))


def test_smallest_remaining_first_and_its_flow_in_order(pf) -> None:
    qd = pf.Port(16)
    port = 9391
    # flow 1: remaining 800 then (after ACKs) 300; flow 2: 500; flow 3: 9000
    for prio, flow, idx in ((9000, 3, 0), (800, 1, 0), (500, 2, 0), (300, 1, 1)):
        assert qd.Enqueue(pf.Item(prio, flow, idx, port))
    # flow 1 holds the best packet (300): its earliest packet leaves first (starvation prevention)
    assert _drain(pf, qd) == [(1, 0), (1, 1), (2, 0), (3, 0)]


def test_full_buffer_drops_the_lowest_priority(pf) -> None:
    qd = pf.Port(4)
    port = 9391
    for prio, flow, idx in ((5000, 1, 0), (900, 2, 0), (5000, 1, 1), (100, 3, 0)):
        assert qd.Enqueue(pf.Item(prio, flow, idx, port))
    assert not qd.Enqueue(pf.Item(9000, 4, 0, port))       # no better than the worst queued: dropped
    assert not qd.Enqueue(pf.Item(5000, 5, 0, port))       # equal to the worst: dropped too (paper: <=)
    assert qd.Enqueue(pf.Item(50, 6, 0, port))             # better: the worst queued (flow 1's latest) evicted
    assert int(qd.Rejected()) == 2 and int(qd.Evicted()) == 1
    assert int(qd.GetStats().nTotalDroppedPackets) == 3 and int(qd.GetNPackets()) == 4
    assert _drain(pf, qd) == [(6, 0), (3, 0), (2, 0), (1, 0)]


def test_packets_without_the_header_go_first(pf) -> None:
    qd = pf.Port(8)
    assert qd.Enqueue(pf.Item(700, 1, 0, 9391))
    assert qd.Enqueue(pf.Item(700, 2, 0, 5000))            # another port: not a pFabric packet, top priority
    assert _drain(pf, qd) == [(2, 0), (1, 0)]
