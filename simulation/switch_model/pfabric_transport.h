// pfabric_transport.h -- the pFabric-like baseline's end-host transport in ns-3 (--modes pfabric).
//
// Why this file exists: issue 13 asks for a pFabric-like priority baseline built from ns-3 parts;
// its switch port is PfabricQueueDisc (pfabric_queue.h), and this is its host side: remaining size
// as each DATA's priority, per-packet ACKs, a fixed RTO, no loss bound. DlcpHost
// (dlcp_transport.h) owns one PfabricPath and hands it every non-DLCP transfer when cfg.pfabric.
#pragma once
#include <algorithm>
#include <cmath>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "ns3/core-module.h"
#include "ns3/network-module.h"
#include "ns3/internet-module.h"

namespace dlcpsim {

class PfabricPath {
 public:
  // Bind UDP kPfPort on ``node`` (DlcpHost::StartApplication, when cfg.pfabric).
  void Start(ns3::Ptr<ns3::Node> node) {
    m_pf = ns3::Socket::CreateSocket(node, ns3::UdpSocketFactory::GetTypeId());
    m_pf->Bind(ns3::InetSocketAddress(ns3::Ipv4Address::GetAny(), kPfPort));
    m_pf->SetRecvCallback(ns3::MakeCallback(&PfabricPath::OnPf, this));
  }
  // Send transfer ``id`` (this host is its source).
  void StartTransfer(uint32_t id) { StartPf(id); }

 private:
  // The paper's minimal rate control: a flow starts at line rate with a window of one BDP, every
  // DATA is acknowledged on its own (selective), each ACK adds to the window as TCP does (one packet
  // in slow start, 1/cwnd above ssthresh), no fast retransmit: losses are found by a fixed RTO, after
  // which everything unacknowledged is resent from a window of 1; after pfProbeAfter consecutive
  // timeouts the flow probes (one packet in flight per RTO) until an ACK comes. Every DATA carries the
  // flow's remaining (unacknowledged) bytes as its priority; switches (PfabricQueueDisc) serve the
  // smallest first and drop the largest on overflow. Fully reliable (no loss bound).
  struct PfOut {
    uint32_t n = 0;
    uint64_t bytes = 0, ackedBytes = 0;
    std::vector<uint8_t> state;                  // per packet: 0 to send, 1 in flight, 2 acknowledged
    std::deque<uint32_t> resend;
    uint32_t nextNew = 0, inFlight = 0, acked = 0, timeouts = 0;
    double cwnd = 1, ssthresh = 1e18;
    ns3::EventId rto;
  };
  struct PfIn { std::vector<uint8_t> got; uint32_t count = 0; bool complete = false; };
  uint32_t PfChunk(uint64_t bytes, uint32_t i) const {
    uint32_t pl = SimNet::Get().cfg.payload;
    return (uint32_t)std::min<uint64_t>(pl, bytes - (uint64_t)i * pl);
  }
  void StartPf(uint32_t id) {
    SimNet& net = SimNet::Get();
    PfOut& o = m_pfOut[id];
    o.bytes = net.transfers[id].bytes;
    o.n = (uint32_t)std::max<uint64_t>(1, (o.bytes + net.cfg.payload - 1) / net.cfg.payload);
    o.state.assign(o.n, 0);
    o.cwnd = net.cfg.pfWindow;
    net.transfers[id].packets = o.n;
    PfSend(id, o);
  }
  void PfPacket(uint32_t dst, uint8_t type, uint32_t prio, uint32_t id, uint32_t idx, uint32_t chunk) {
    SimNet& net = SimNet::Get();
    std::vector<uint8_t> buf(kPfHeaderLen + chunk, 0);
    uint8_t* p = buf.data();
    Put(p, kPfMagic, 1); Put(p, type, 1); Put(p, 0, 2); Put(p, prio, 4); Put(p, id, 4); Put(p, idx, 4);
    m_pf->SendTo(ns3::Create<ns3::Packet>(buf.data(), buf.size()), 0,
                 ns3::InetSocketAddress(ns3::Ipv4Address(net.addr[dst]), kPfPort));
  }
  void PfSend(uint32_t id, PfOut& o) {
    SimNet& net = SimNet::Get();
    TransferRec& r = net.transfers[id];
    double limit = o.timeouts >= net.cfg.pfProbeAfter ? 1.0 : o.cwnd;
    while (o.inFlight + 1 <= limit + 1e-9) {
      uint32_t i;
      if (!o.resend.empty()) {
        i = o.resend.front();
        o.resend.pop_front();
        if (o.state[i] != 0) continue;           // acknowledged meanwhile
        r.retx++;
        net.pfRetx++;
      } else if (o.nextNew < o.n) {
        i = o.nextNew++;
      } else {
        break;
      }
      uint64_t remaining = o.bytes - o.ackedBytes;
      PfPacket(r.dst, kPfData, (uint32_t)std::min<uint64_t>(remaining, 0xFFFFFFFFull), id, i, PfChunk(o.bytes, i));
      o.state[i] = 1;
      o.inFlight++;
      r.sent++;
      net.pfData++;
    }
    if (o.inFlight > 0 && !o.rto.IsPending())
      o.rto = ns3::Simulator::Schedule(ns3::Seconds(net.cfg.pfRto), &PfabricPath::PfTimeout, this, id);
  }
  void PfTimeout(uint32_t id) {
    auto it = m_pfOut.find(id);
    if (it == m_pfOut.end()) return;
    PfOut& o = it->second;
    SimNet& net = SimNet::Get();
    net.pfTimeouts++;
    for (uint32_t i = 0; i < o.n; ++i)
      if (o.state[i] == 1) { o.state[i] = 0; o.resend.push_back(i); }
    o.inFlight = 0;
    o.timeouts++;
    o.ssthresh = std::max(o.cwnd / 2, 2.0);
    o.cwnd = 1;
    PfSend(id, o);
  }
  void OnPfAck(uint32_t id, uint32_t idx) {
    auto it = m_pfOut.find(id);
    if (it == m_pfOut.end()) return;
    PfOut& o = it->second;
    if (idx >= o.n || o.state[idx] == 2) return;
    if (o.state[idx] == 1) o.inFlight--;
    o.state[idx] = 2;
    o.acked++;
    o.ackedBytes += PfChunk(o.bytes, idx);
    o.timeouts = 0;
    o.cwnd += o.cwnd < o.ssthresh ? 1.0 : 1.0 / o.cwnd;
    ns3::Simulator::Cancel(o.rto);
    if (o.acked == o.n) { m_pfOut.erase(it); return; }
    PfSend(id, o);
  }
  void OnPf(ns3::Ptr<ns3::Socket> s) {
    SimNet& net = SimNet::Get();
    ns3::Address from;
    ns3::Ptr<ns3::Packet> p;
    while ((p = s->RecvFrom(from))) {
      uint8_t h[kPfHeaderLen];
      if (p->CopyData(h, kPfHeaderLen) < kPfHeaderLen || h[0] != kPfMagic) continue;
      uint32_t id = Get32(h + 8), idx = Get32(h + 12);
      if (id >= net.transfers.size()) continue;
      if (h[1] == kPfAck) { OnPfAck(id, idx); continue; }
      const TransferRec& r = net.transfers[id];
      PfPacket(r.src, kPfAck, 0, id, idx, 0);    // every DATA acknowledged, at the highest priority
      PfIn& in = m_pfIn[id];
      if (in.complete) continue;
      uint32_t n = (uint32_t)std::max<uint64_t>(1, (r.bytes + net.cfg.payload - 1) / net.cfg.payload);
      if (in.got.empty()) in.got.assign(n, 0);
      if (idx >= n || in.got[idx]) continue;
      in.got[idx] = 1;
      if (++in.count == n) {
        in.complete = true;
        in.got.clear(); in.got.shrink_to_fit();
        net.Complete(id);
      }
    }
  }

  ns3::Ptr<ns3::Socket> m_pf;
  std::map<uint32_t, PfOut> m_pfOut;
  std::map<uint32_t, PfIn> m_pfIn;
};

}  // namespace dlcpsim
