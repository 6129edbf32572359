// dlcp_transport.h -- DLCP's bounded-loss transport for ns-3: DlcpHost, the end-host Application
// (DLCP sender and receiver, receiver-driven admission), which hands non-DLCP transfers to its TCP
// path (tcp_path.h) or pFabric-like transport (pfabric_transport.h).
//
// Why this file exists: issue 13 asks for DLCP's transport (the host_agent state machine: OPEN,
// paced DATA tagged like host_agent, PROBE/BITMAP, selective retransmission of what the receiver
// needs, completion at the loss bound) inside ns-3, with no Python in the per-packet path, and for
// PS training iterations (backprop order, compute/communication overlap) plus flow-size-CDF
// background traffic. Python (simulation/scenario.py) builds these objects before Simulator::Run
// and reads their records after it. The mapping to host_agent is in docs/simulation.md.
#pragma once
#include <algorithm>
#include <cmath>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <tuple>
#include <vector>

#include "ns3/core-module.h"
#include "ns3/network-module.h"
#include "ns3/internet-module.h"

namespace dlcpsim {


// Sender state of one DLCP transfer (host_agent/outgoing.py).
struct OutTransfer {
  uint32_t id = 0;
  std::vector<uint8_t> mag, crit;             // per packet: magnitude class, CRITICAL
  std::vector<uint32_t> gRank;                // per packet: |g| rank (higher = larger)
  std::deque<uint32_t> queue;                 // packet indices still to send this round
  bool retxRound = false, probing = false, done = false;
  uint32_t round = 0, retxCounter = 0;
  double probeSent = 0;
  double rto = 0;
  ns3::EventId rtoEvent;
  bool openSent = false;
  // admission (endpoint.py): a tensor sends at most ``unscheduledLimit`` DATA before the GRANT
  // answering its OPEN (0 on first contact: host_agent waits for the OPEN_ACK, which follows it);
  // with standby grants only first contact waits
  bool granted = true;
  uint32_t unscheduledLimit = 0, dataSent = 0, lostWrittenOff = 0;
  double dataStart = 0, waitFrom = -1;        // waitFrom: when its DATA first waited for that GRANT
  int blockedBy = -1;                         // why its next DATA waits (kWait*), -1: it does not
  double blockedSince = 0;
};
constexpr int kWaitGrant = 0, kWaitHold = 1, kWaitTokens = 2, kWaitWindow = 3;

// Sender's view of one destination (ratecontrol.GrantPacer): its grant as a token bucket, and the
// window of DATA packets in flight towards it, clocked by its CONTROL/ACKs.
struct DestGrant {
  double rate = -1;                           // bytes/s granted; < 0: none yet (own link rate)
  double tokens = 0, refilled = -1;           // bytes (may go negative: the last packet's debt)
  uint32_t window = 0;                        // packets; 0: this destination set none
  uint64_t sent = 0, acked = 0, writtenOff = 0;
  double progress = 0;                        // when the in-flight count last went down
  bool hold = false;                          // the receiver's HOLD (overcommitment): no DATA until a GRANT
  double holdSince = 0;                       // when the hold began or its OPENs were last re-sent
  bool answered = false;                      // a GRANT or HOLD came from this destination (openRetry)
  bool shed = false;                          // shedDroppable: its last GRANT said it holds other senders
  uint32_t awaitId = UINT32_MAX;              // preemptWait: the top-class transfer whose DONE lower classes wait for
  uint8_t awaitLayer = 0;                     // ... its layer class
  uint32_t lagSent = 0;                       // ... lower-class DATA sent since (at most ``unscheduled``)
  double awaitSince = 0;                      // ... since when (a grant wait at most)
  double openRetryIn = 0;                     // s: the next retry's base wait (doubles per retry)
  ns3::EventId openRetryEvent;
  uint64_t InFlight() const { return sent > acked + writtenOff ? sent - acked - writtenOff : 0; }
};

// Receiver state of one DLCP transfer (host_agent/assembly.py + receiver.py).
struct InTransfer {
  uint32_t n = 0, nc = 0;
  double p = 0;
  std::vector<uint8_t> got;
  uint32_t gotCrit = 0, gotNc = 0, gotAll = 0, ce = 0, ceEchoed = 0;
  bool complete = false;
  double lastData = -1, lastEcho = -1;
  ns3::EventId answer;
  uint32_t pendingRound = 0;
  uint32_t src = 0;
  double opened = 0, reopened = -1;            // its first OPEN; an OPEN again (a held sender's)
  uint8_t layer = 0;                           // its layer class (the OPEN's or PROBE's header)
  bool probed = false;                         // shedDroppable: a PROBE came (the sender sent what it will)
};

// One end host: a DLCP endpoint on UDP 9290 (sender and receiver sides, one AIMD pacer shared by
// its transfers, served round robin); other transfers go to its TcpPath (or PfabricPath).
class DlcpHost : public ns3::Application {
 public:
  static ns3::TypeId GetTypeId() {
    static ns3::TypeId tid = ns3::TypeId("dlcpsim::DlcpHost").SetParent<ns3::Application>()
                                 .SetGroupName("Applications").AddConstructor<DlcpHost>();
    return tid;
  }
  void Setup(uint32_t index, uint16_t job) { m_index = index; m_job = job; m_jitter += index; }

  // Start transfer ``id`` now (from this host).
  void StartTransfer(uint32_t id) {
    SimNet& net = SimNet::Get();
    TransferRec& r = net.transfers[id];
    r.start = ns3::Simulator::Now().GetSeconds();
    m_tcp.SetNode(GetNode());                  // (a transfer at t = 0 may come before StartApplication)
    if (!m_udp) StartApplication();            // ... and a DLCP one needs its socket
    if (r.dlcp) StartDlcp(id); else if (net.cfg.pfabric) m_pfabric.StartTransfer(id); else m_tcp.StartTransfer(id);
  }

  // TCP: open the persistent connection to ``dst`` now (training jobs, when they start).
  void Preconnect(uint32_t dst) { m_tcp.SetNode(GetNode()); m_tcp.Preconnect(dst); }
  std::string DescribeTcp() const { return m_tcp.Describe(); }   // TcpPath::Describe (diagnostics)

 private:
  // ---------------------------------------------------------------- setup
  void StartApplication() override {
    if (m_udp) return;                         // started early by a transfer at t = 0 (StartTransfer)
    SimNet& net = SimNet::Get();
    m_rate = m_line = (double)net.lineRate[m_index];
    m_udp = ns3::Socket::CreateSocket(GetNode(), ns3::UdpSocketFactory::GetTypeId());
    m_udp->Bind(ns3::InetSocketAddress(ns3::Ipv4Address::GetAny(), kDlcpPortDefault));
    m_udp->SetIpRecvTos(true);
    m_udp->SetRecvCallback(ns3::MakeCallback(&DlcpHost::OnUdp, this));
    m_tcp.Start(GetNode());
    if (net.cfg.pfabric) m_pfabric.Start(GetNode());
  }
  void StopApplication() override { ns3::Simulator::Cancel(m_sendEvent); ns3::Simulator::Cancel(m_grantTick); }


  // ---------------------------------------------------------------- DLCP sender
  // Tagging as host_agent's TagPolicy (drop_within_bound): the top critical_share by |g| CRITICAL;
  // the d = n_nc - ceil((1-p) n_nc) smallest non-critical (never LAST) ranked onto 0..protected-1,
  // every other packet onto protected..15. |g| ranks are a random permutation (synthetic gradients).
  void StartDlcp(uint32_t id) {
    SimNet& net = SimNet::Get();
    TransferRec& r = net.transfers[id];
    auto o = std::make_shared<OutTransfer>();
    o->id = id;
    uint32_t n = (uint32_t)((r.bytes + net.cfg.payload - 1) / net.cfg.payload);
    n = std::max<uint32_t>(n, 1);
    uint64_t seed = 0x5EED0000ull + id;
    std::vector<uint32_t> perm(n);
    for (uint32_t i = 0; i < n; ++i) perm[i] = i;
    for (uint32_t i = n - 1; i > 0; --i) std::swap(perm[i], perm[Rng64(seed) % (i + 1)]);
    // perm[i] = |g| rank of packet i (0 = smallest)
    uint32_t nc = (uint32_t)std::ceil(net.cfg.criticalShare * n - 1e-9);
    uint32_t nnc = n - nc;
    uint32_t d = nnc - (uint32_t)std::ceil((1.0 - r.lossBound) * nnc - 1e-9);
    if (d > 0 && perm[n - 1] < d) {             // LAST is never droppable: swap its rank with rank d
      uint32_t j = (uint32_t)(std::find(perm.begin(), perm.end(), d) - perm.begin());
      std::swap(perm[n - 1], perm[j]);
      if (perm[n - 1] < d) d = 0;               // (only when n is tiny)
    }
    o->mag.resize(n); o->crit.resize(n); o->gRank = perm;
    uint8_t pm = net.cfg.protectedMag;
    uint32_t rest = n - d;
    for (uint32_t i = 0; i < n; ++i) {
      uint32_t g = perm[i];
      o->crit[i] = g >= n - nc;
      if (g < d) o->mag[i] = (uint8_t)(g * std::min<uint32_t>(pm, d) / d);
      else o->mag[i] = (uint8_t)(pm + (g - d) * std::min<uint32_t>(16 - pm, rest) / rest);
      o->queue.push_back(i);
    }
    r.packets = n; r.critical = nc; r.droppable = d;
    o->rto = std::max(net.cfg.rtoInit, m_srtt > 0 ? m_srtt + 4 * m_rttvar : 0.0);
    if (net.cfg.grants) {                        // wait for the GRANT answering this OPEN (endpoint.py) ...
      auto d = m_dest.find(r.dst);
      bool known = d != m_dest.end() && (d->second.rate > 0 || d->second.hold);   // a HOLD answers too
      if (!known && net.cfg.overcommit) {        // overcommit: first contact is held until a GRANT (its
        DestGrant& h = m_dest[r.dst];            // OPEN again every grant wait), never sent at line rate
        h.hold = true;
        h.holdSince = ns3::Simulator::Now().GetSeconds();
      } else if (!known || !net.cfg.standbyGrants) {   // ... unless the last grant (active or standby) stands
        o->granted = false;
        o->unscheduledLimit = known ? net.cfg.unscheduled : 0;
        o->dataStart = ns3::Simulator::Now().GetSeconds();
      }
    }
    m_out[id] = o;
    auto held = m_dest.find(r.dst);
    if (held != m_dest.end() && held->second.hold) held->second.holdSince = ns3::Simulator::Now().GetSeconds();
    SendControlOpen(*o);
    if (net.cfg.grants && net.cfg.openRetry && net.cfg.openRetryAfter > 0) {
      DestGrant& d = m_dest[r.dst];
      if (!d.answered && !d.openRetryEvent.IsPending()) {
        d.openRetryIn = std::min(net.cfg.openRetryAfter, GrantWait());   // never later than the grant wait's own re-OPEN
        ScheduleOpenRetry(r.dst, d);
      }
    }
    m_active.push_back(id);
    Kick();
  }
  // openRetry: no answer from ``dst`` yet (first contact): its OPENs again after openRetryIn x (1 + u)
  void ScheduleOpenRetry(uint32_t dst, DestGrant& d) {
    double u = (double)(Rng64(m_jitter) >> 11) * (1.0 / 9007199254740992.0);
    d.openRetryEvent = ns3::Simulator::Schedule(ns3::Seconds(d.openRetryIn * (1.0 + u)), &DlcpHost::OpenRetry, this, dst);
  }
  void OpenRetry(uint32_t dst) {
    SimNet& net = SimNet::Get();
    DestGrant& d = m_dest[dst];
    if (d.answered) return;
    bool any = false;
    for (auto& kv : m_out)
      if (!kv.second->done && net.transfers[kv.first].dst == dst) { SendControlOpen(*kv.second); net.openRetries++; any = true; }
    if (!any) return;
    d.openRetryIn = std::min(2 * d.openRetryIn, GrantWait());
    ScheduleOpenRetry(dst, d);
  }
  void Header(uint8_t* h, uint8_t msg, uint8_t layer, uint8_t mag, uint8_t flags, uint32_t id, uint16_t count,
              uint32_t offset, uint32_t seq, uint16_t worker) {
    uint8_t* p = h;
    Put(p, (1u << 4) | msg, 1); Put(p, ((uint32_t)layer << 5) | mag, 1); Put(p, flags, 1); Put(p, 0, 1);
    Put(p, m_job, 2); Put(p, worker, 2); Put(p, id, 4); Put(p, 0, 2); Put(p, count, 2);
    Put(p, offset, 4); Put(p, seq, 4);
  }
  void SendTo(uint32_t host, std::vector<uint8_t>& buf, bool ect) {
    SimNet& net = SimNet::Get();
    if ((buf[0] & 0x0F) != kMsgData) {          // control bytes per host, both directions
      if (net.ctrlBytesIn.size() < net.addr.size()) { net.ctrlBytesIn.resize(net.addr.size()); net.ctrlBytesOut.resize(net.addr.size()); }
      net.ctrlBytesOut[m_index] += buf.size();
      net.ctrlBytesIn[host] += buf.size();
    }
    m_udp->SetIpTos(ect ? 0x02 : 0x00);
    ns3::Ptr<ns3::Packet> pkt = ns3::Create<ns3::Packet>(buf.data(), buf.size());
    if (net.cfg.hostPriority) {
      // the packet's own priority tag: the socket's priority (SetPriority) does not reach the queue
      // disc, as ns-3's SetIpTos resets it and UdpSocketImpl replaces it by the TOS's (0) for ECT
      ns3::SocketPriorityTag prio;
      // hostControlFirst: control at 7, its own band; read from the per-process defaults the host ports were
      // built from (InstallHostPrio), so a per-run override cannot put control in a 2-band port's TCP band
      bool control = TransportDefaults().hostControlFirst && (buf[0] & 0x0F) != kMsgData;
      prio.SetPriority(control ? 7 : 6);
      pkt->ReplacePacketTag(prio);
    }
    m_udp->SendTo(pkt, 0, ns3::InetSocketAddress(ns3::Ipv4Address(net.addr[host]), kDlcpPortDefault));
  }
  // OPEN (CONTROL subtype 1) with the descriptor: n_packets, n_critical, loss bound (ppm).
  void SendControlOpen(OutTransfer& o) {
    SimNet& net = SimNet::Get();
    TransferRec& r = net.transfers[o.id];
    std::vector<uint8_t> buf(kDlcpHeaderLen + 16, 0);
    Header(buf.data(), kMsgControl, r.layer, 15, kFlagCritical, o.id, 0, 0, 0, (uint16_t)m_index);
    uint8_t* p = buf.data() + kDlcpHeaderLen;
    Put(p, kSubOpen, 4); Put(p, r.packets, 4); Put(p, r.critical, 4); Put(p, (uint32_t)std::lround(r.lossBound * 1e6), 4);
    SendTo(r.dst, buf, false);
    net.ctrlPackets++;
  }
  void SendProbe(OutTransfer& o) {
    SimNet& net = SimNet::Get();
    TransferRec& r = net.transfers[o.id];
    std::vector<uint8_t> buf(kDlcpHeaderLen + 12, 0);
    Header(buf.data(), kMsgProbe, r.layer, 15, kFlagCritical, o.id, 0, 0, o.round, (uint16_t)m_index);
    uint8_t* p = buf.data() + kDlcpHeaderLen;
    Put(p, r.packets, 4); Put(p, r.critical, 4); Put(p, (uint32_t)std::lround(r.lossBound * 1e6), 4);
    SendTo(r.dst, buf, false);
    net.ctrlPackets++;
    r.probes++;
    o.probing = true;
    o.probeSent = ns3::Simulator::Now().GetSeconds();
    ns3::Simulator::Cancel(o.rtoEvent);
    o.rtoEvent = ns3::Simulator::Schedule(ns3::Seconds(o.rto), &DlcpHost::OnRto, this, o.id);
  }
  void OnRto(uint32_t id) {
    auto it = m_out.find(id);
    if (it == m_out.end() || it->second->done) return;
    OutTransfer& o = *it->second;
    o.rto = std::min(o.rto * 2, SimNet::Get().cfg.rtoMax);
    o.round++;
    SendProbe(o);
  }
  // The pacer: one DATA packet per gap at the current AIMD rate, round robin over the transfers whose
  // destination admits one now (its grant's token bucket, its window, the GRANT answering the OPEN).
  void Kick() { WakeAt(std::max(ns3::Simulator::Now().GetSeconds(), m_nextSend)); }
  void WakeAt(double at) {
    double now = ns3::Simulator::Now().GetSeconds();
    at = std::max(at, now);
    if (m_sendEvent.IsPending() && m_sendAt <= at + 1e-12) return;
    ns3::Simulator::Cancel(m_sendEvent);
    // whole ns, rounded up: a wait that rounded down to 0 would re-run SendOne at the same instant
    int64_t ns = (int64_t)std::ceil((at - now) * 1e9 - 1e-3);
    m_sendAt = now + (double)ns * 1e-9;
    m_sendEvent = ns3::Simulator::Schedule(ns3::NanoSeconds(std::max<int64_t>(ns, 0)), &DlcpHost::SendOne, this);
  }
  double WriteOffAfter() const {
    const TransportConfig& c = SimNet::Get().cfg;
    double rto = m_srtt > 0 ? std::min(std::max(c.rtoInit, m_srtt + 4 * m_rttvar), c.rtoMax) : c.rtoInit;
    return std::max(c.writeOffMin, c.writeOffRtos * rto);
  }
  double GrantWait() const {
    return std::max(SimNet::Get().cfg.grantWaitMin, WriteOffAfter());   // both max(min, 2 RTO) in host_agent
  }
  double Burst(double rate) const {
    const TransportConfig& c = SimNet::Get().cfg;
    return std::max(c.grantBurstMin, rate * c.grantBurstS);
  }
  double DestRate(const DestGrant& d) const { return d.rate > 0 ? d.rate : m_line / 8.0; }
  void Refill(DestGrant& d, double now) {
    double rate = DestRate(d);
    d.tokens = d.refilled < 0 ? Burst(rate) : std::min(Burst(rate), d.tokens + (now - d.refilled) * rate);
    d.refilled = now;
  }
  // 0 when transfer ``o`` may send a DATA packet now; otherwise the time it may (or +inf: on an ACK).
  // ``why``: what it waits for (kWait*).
  double ReadyAt(OutTransfer& o, uint32_t dst, double now, int& why) {
    SimNet& net = SimNet::Get();
    if (!net.cfg.grants) return 0;
    if (!o.granted && o.dataSent >= o.unscheduledLimit) {
      if (o.waitFrom < 0) o.waitFrom = now;
      double until = o.dataStart + GrantWait();
      why = kWaitGrant;
      if (now < until) return until;
      Granted(o);                                // no GRANT came (OPEN or GRANT lost): last rate
      net.grantsMissed++;
    }
    DestGrant& d = m_dest[dst];
    if (net.cfg.preemptWait && d.awaitId != UINT32_MAX && net.transfers[o.id].layer < d.awaitLayer &&
        d.lagSent >= net.cfg.unscheduled) {      // preemptWait: the receiver may pre-empt us at that DONE
      why = kWaitHold;
      double until = d.awaitSince + GrantWait();
      if (now < until) return until;
      d.awaitId = UINT32_MAX;                    // no DONE for a grant wait: go on
    }
    if (d.hold) {                                // held (overcommitment): until a GRANT comes
      why = kWaitHold;
      double until = d.holdSince + GrantWait();
      if (now < until) return until;
      d.holdSince = now;                         // none for a grant wait: OPEN again (lost OPEN or GRANT)
      net.holdReopens++;
      for (auto& kv : m_out)
        if (!kv.second->done && net.transfers[kv.first].dst == dst) SendControlOpen(*kv.second);
      return now + GrantWait();
    }
    Refill(d, now);
    why = kWaitTokens;
    if (d.tokens < 0) return now + std::max(-d.tokens / DestRate(d), 1e-9);
    if (d.window > 0) {
      uint64_t flight = d.InFlight();
      if (flight >= d.window) {
        double until = d.progress + WriteOffAfter();
        why = kWaitWindow;
        if (now < until) return until;
        d.writtenOff += flight;                  // unacknowledged for too long: presumed lost
        d.progress = now;
        net.windowStalls++;
      }
    }
    return 0;
  }
  // Time a transfer's next DATA waited, by cause (TransferRec holdWait / tokenWait / windowWait).
  void Blocked(OutTransfer& o, TransferRec& r, int why, double now) {
    if (why == o.blockedBy) return;
    double waited = now - o.blockedSince;
    if (o.blockedBy == kWaitHold) r.holdWait += waited;
    else if (o.blockedBy == kWaitTokens) r.tokenWait += waited;
    else if (o.blockedBy == kWaitWindow) r.windowWait += waited;
    o.blockedBy = why;
    o.blockedSince = now;
  }
  void SendOne() {
    SimNet& net = SimNet::Get();
    Increase();
    double now = ns3::Simulator::Now().GetSeconds();
    double wake = INFINITY;
    if (net.cfg.senderSrpt && m_active.size() > 1) {   // fewest packets left first, then the earliest
      std::vector<std::tuple<int, size_t, uint32_t>> order;   // (classAdmission: the top layer class before that)
      order.reserve(m_active.size());
      for (uint32_t id : m_active) {
        auto it = m_out.find(id);
        int cls = net.cfg.classAdmission ? -(int)net.transfers[id].layer : 0;
        order.push_back({cls, it == m_out.end() ? 0 : it->second->queue.size(), id});
      }
      std::sort(order.begin(), order.end());
      m_active.clear();
      for (auto& x : order) m_active.push_back(std::get<2>(x));
    }
    size_t tries = m_active.size();
    while (tries-- > 0 && !m_active.empty()) {
      uint32_t id = m_active.front();
      m_active.pop_front();
      auto it = m_out.find(id);
      if (it == m_out.end() || it->second->done || it->second->queue.empty()) continue;
      OutTransfer& o = *it->second;
      TransferRec& r = net.transfers[id];
      int why = -1;
      double ready = ReadyAt(o, r.dst, now, why);
      if (ready > 0) {                           // this destination does not admit a packet yet
        Blocked(o, r, why, now);
        wake = std::min(wake, ready);
        m_active.push_back(id);
        continue;
      }
      Blocked(o, r, -1, now);
      if (net.cfg.shedDroppable && !o.retxRound && m_dest[r.dst].shed)   // shedDroppable (TransportConfig):
        while (o.queue.size() > 1 && !o.crit[o.queue.front()] && o.mag[o.queue.front()] < net.cfg.protectedMag) {
          o.queue.pop_front();                   // the droppable-by-design packets are not sent
          r.shed++;
        }
      uint32_t i = o.queue.front();
      o.queue.pop_front();
      uint32_t chunk = (uint32_t)std::min<uint64_t>(net.cfg.payload, r.bytes - (uint64_t)i * net.cfg.payload);
      if (r.bytes == 0) chunk = 0;
      bool last = i == r.packets - 1;
      uint8_t flags = kFlagEcnCapable | (o.crit[i] ? kFlagCritical : 0) | (last ? kFlagLast : 0) |
                      (r.kind == 1 ? kFlagPull : 0);
      uint32_t seq;
      if (o.retxRound) {                         // retransmissions: CRITICAL, low seq bit = was critical
        flags |= kFlagRetx | kFlagCritical;
        seq = (++o.retxCounter << 1) | o.crit[i];
        r.retx++;
      } else {
        seq = m_seq++;
      }
      std::vector<uint8_t> buf(kDlcpHeaderLen + chunk, 0);
      Header(buf.data(), kMsgData, r.layer, o.mag[i], flags, id, (uint16_t)(chunk / kElem),
             i * (net.cfg.payload / kElem), seq, (uint16_t)m_index);
      SendTo(r.dst, buf, true);
      net.dataPackets++;
      r.sent++;
      o.dataSent++;
      if (net.cfg.grants) {                      // charge the bucket, count the packet in flight
        DestGrant& d = m_dest[r.dst];
        d.tokens -= (double)buf.size();
        if (d.window > 0) {
          if (d.InFlight() == 0) d.progress = now;   // the write-off timer runs from here
          d.sent++;
        }
      }
      if (net.cfg.preemptWait && net.cfg.grants) {   // preemptWait: count the lag, or start waiting
        DestGrant& d = m_dest[r.dst];
        if (d.awaitId != UINT32_MAX && r.layer < d.awaitLayer) d.lagSent++;
        if (o.queue.empty() && !o.retxRound && d.shed && net.cfg.classAdmission) {
          d.awaitId = id; d.awaitLayer = r.layer; d.lagSent = 0; d.awaitSince = now;
        }
      }
      if (o.queue.empty()) SendProbe(o); else m_active.push_back(id);
      double bits = (double)(buf.size() + 8 + 20 + 2) * 8.0;
      m_nextSend = now + bits / m_rate;
      Kick();
      return;
    }
    if (!m_active.empty() && wake < INFINITY) WakeAt(std::max({wake, m_nextSend, now + 1e-9}));
    // else: every destination's window is closed and waits for its ACK (OnAck kicks the pacer)
  }
  // A round's answer (BITMAP or DONE): what the receiver has not counted is lost, not in flight,
  // unless another transfer to the same receiver is sending (endpoint.py _round_over). With
  // writeOffPerTransfer the answered transfer's own losses (sent - received) are written off anyway.
  void RoundOver(uint32_t id, uint32_t dst, OutTransfer& o, uint32_t received) {
    SimNet& net = SimNet::Get();
    if (!net.cfg.grants) return;
    if (net.cfg.writeOffPerTransfer) {
      uint32_t lost = o.dataSent > received ? o.dataSent - received : 0;
      auto d = m_dest.find(dst);
      if (lost > o.lostWrittenOff && d != m_dest.end() && d->second.window > 0) {
        d->second.writtenOff += lost - o.lostWrittenOff;
        d->second.progress = ns3::Simulator::Now().GetSeconds();
        net.writeOffs++;
      }
      o.lostWrittenOff = std::max(o.lostWrittenOff, lost);
    }
    for (auto& kv : m_out)
      if (kv.first != id && !kv.second->done && !kv.second->probing && !kv.second->queue.empty() &&
          net.transfers[kv.first].dst == dst) return;
    auto d = m_dest.find(dst);
    if (d == m_dest.end() || d->second.window == 0) return;
    uint64_t before = d->second.writtenOff;
    d->second.writtenOff = d->second.sent > d->second.acked ? d->second.sent - d->second.acked : 0;
    if (d->second.writtenOff > before) net.writeOffs++;
    d->second.progress = ns3::Simulator::Now().GetSeconds();
  }
  void OnGrant(uint32_t id, double rate, uint32_t window, bool shed = false) {
    SimNet& net = SimNet::Get();
    uint32_t dst = net.transfers[id].dst;
    DestGrant& d = m_dest[dst];
    if (rate > 0) d.shed = shed;                 // shedDroppable: each GRANT says whether others are held
    double now = ns3::Simulator::Now().GetSeconds();
    bool first = !d.answered;                    // the first answer from dst: no more OPEN retries
    d.answered = true;
    ns3::Simulator::Cancel(d.openRetryEvent);
    if (first)
      for (auto& kv : m_out)
        if (net.transfers[kv.first].dst == dst) net.transfers[kv.first].answerWait = now - net.transfers[kv.first].start;
    if (rate <= 0) {                             // HOLD (overcommitment): it answers the OPEN too
      bool wasGranted = !d.hold && !first;       // granted, now held: dst knows no unfinished transfer of ours
      if (!d.hold || first) { d.hold = true; d.holdSince = now; }   // the grant wait runs from the HOLD
      auto it = m_out.find(id);
      if (it != m_out.end()) Granted(*it->second);
      for (auto& kv : m_out)
        if (!kv.second->granted && net.transfers[kv.first].dst == dst) Granted(*kv.second);
      if (wasGranted && net.cfg.reopenOnHold)    // their OPENs were lost: send them again now (TransportConfig)
        for (auto& kv : m_out)
          if (!kv.second->done && net.transfers[kv.first].dst == dst) { SendControlOpen(*kv.second); net.holdOpens++; }
      return;
    }
    d.hold = false;
    Refill(d, now);
    d.rate = std::max(net.cfg.grantFloor, rate);
    d.tokens = std::min(d.tokens, Burst(d.rate));
    d.window = std::max<uint32_t>(1, window);
    auto it = m_out.find(id);
    if (it != m_out.end()) Granted(*it->second);   // the answer to this transfer's OPEN
    if (net.cfg.grantAnswersAll)
      for (auto& kv : m_out)
        if (!kv.second->granted && net.transfers[kv.first].dst == dst) Granted(*kv.second);
    if (!m_active.empty()) Kick();
  }
  void Granted(OutTransfer& o) {
    if (o.granted) return;
    o.granted = true;
    if (o.waitFrom >= 0) SimNet::Get().transfers[o.id].grantWait = ns3::Simulator::Now().GetSeconds() - o.waitFrom;
  }
  void OnAck(uint32_t id, uint32_t count) {
    SimNet& net = SimNet::Get();
    DestGrant& d = m_dest[net.transfers[id].dst];
    if (count > d.acked) {
      d.acked = count;
      d.progress = ns3::Simulator::Now().GetSeconds();
      if (!m_active.empty()) Kick();
    }
  }
  // AIMD (host_agent/ratecontrol.py): cut on ECN echo by half the marked share, halve on a lossy
  // BITMAP, at most once per decrease gap; add additive_frac of the cut rate per interval.
  void Cut(double factor) {
    SimNet& net = SimNet::Get();
    double now = ns3::Simulator::Now().GetSeconds();
    double gap = std::max(net.cfg.decreaseGap, m_srtt);
    if (now - m_lastCut < gap) return;
    m_lastCut = now;
    m_rate = std::max(m_rate * factor, m_line * net.cfg.minRateFrac);
    m_cutRate = m_rate;
    m_lastIncrease = now;
  }
  void Increase() {
    SimNet& net = SimNet::Get();
    double now = ns3::Simulator::Now().GetSeconds();
    int steps = (int)((now - m_lastIncrease) / net.cfg.increaseInterval);
    if (steps <= 0) return;
    m_lastIncrease += steps * net.cfg.increaseInterval;
    m_rate = std::min(m_line, m_rate + steps * std::max(net.cfg.additiveFrac * m_cutRate, m_line * net.cfg.additiveLineFrac));
  }
  void OnBitmap(uint32_t id, uint32_t round, uint32_t deficit, const uint8_t* bits, uint32_t nbits) {
    auto it = m_out.find(id);
    if (it == m_out.end() || it->second->done) return;
    OutTransfer& o = *it->second;
    if (round != o.round || !o.probing) return;            // stale answer
    SimNet& net = SimNet::Get();
    TransferRec& r = net.transfers[id];
    Rtt(ns3::Simulator::Now().GetSeconds() - o.probeSent);
    ns3::Simulator::Cancel(o.rtoEvent);
    // plan: every missing critical, then the deficit's largest-|g| missing non-critical
    std::vector<uint32_t> missNc;
    o.queue.clear();
    for (uint32_t i = 0; i < nbits && i < r.packets; ++i) {
      if (bits[i >> 3] & (1u << (i & 7))) continue;
      if (o.crit[i]) o.queue.push_back(i); else missNc.push_back(i);
    }
    std::sort(missNc.begin(), missNc.end(), [&](uint32_t a, uint32_t b) { return o.gRank[a] > o.gRank[b]; });
    for (uint32_t k = 0; k < deficit && k < missNc.size(); ++k) o.queue.push_back(missNc[k]);
    uint32_t received = 0;
    for (uint32_t i = 0; i < nbits && i < r.packets; ++i) received += (bits[i >> 3] >> (i & 7)) & 1u;
    RoundOver(id, r.dst, o, received);
    Cut(0.5);                                     // a BITMAP with missing packets is congestion
    o.round++;
    r.rounds++;
    o.probing = false;
    o.retxRound = true;
    o.rto = std::max(net.cfg.rtoMin, std::min(net.cfg.rtoMax, m_srtt + 4 * m_rttvar));
    if (o.queue.empty()) { SendProbe(o); return; }
    m_active.push_back(id);
    Kick();
  }
  void Rtt(double sample) {
    if (m_srtt <= 0) { m_srtt = sample; m_rttvar = sample / 2; return; }
    m_rttvar = 0.75 * m_rttvar + 0.25 * std::fabs(m_srtt - sample);
    m_srtt = 0.875 * m_srtt + 0.125 * sample;
  }
  void OnDone(uint32_t id, uint32_t received) {
    auto it = m_out.find(id);
    if (it == m_out.end()) return;
    if (it->second->probing) Rtt(ns3::Simulator::Now().GetSeconds() - it->second->probeSent);
    ns3::Simulator::Cancel(it->second->rtoEvent);
    auto o = it->second;
    m_out.erase(it);
    RoundOver(id, SimNet::Get().transfers[id].dst, *o, received);
    auto d = m_dest.find(SimNet::Get().transfers[id].dst);
    if (d != m_dest.end() && d->second.awaitId == id) {   // preemptWait: the lower classes may go on
      d->second.awaitId = UINT32_MAX;
      if (!m_active.empty()) Kick();
    }
  }

  // ---------------------------------------------------------------- DLCP receiver
  void OnUdp(ns3::Ptr<ns3::Socket> s) {
    ns3::Address from;
    ns3::Ptr<ns3::Packet> p;
    while ((p = s->RecvFrom(from))) {
      uint8_t h[kDlcpHeaderLen + 16];
      uint32_t len = p->CopyData(h, sizeof(h));
      if (len < kDlcpHeaderLen || (h[0] >> 4) != 1) continue;
      uint8_t msg = h[0] & 0x0F, flags = h[2];
      uint32_t id = Get32(h + 8), offset = Get32(h + 16), seq = Get32(h + 20);
      uint32_t srcHost = ((uint32_t)h[6] << 8) | h[7];
      if (msg == kMsgData) {
        CountData(srcHost, id);
        ns3::SocketIpTosTag tos;
        bool ce = p->PeekPacketTag(tos) && (tos.GetTos() & 0x3) == 3;
        OnData(id, srcHost, offset / (SimNet::Get().cfg.payload / kElem), flags, seq, ce);
      } else if (msg == kMsgControl && len >= kDlcpHeaderLen + 16) {
        uint32_t sub = Get32(h + kDlcpHeaderLen);
        if (sub == kSubOpen) Open(id, srcHost, Get32(h + kDlcpHeaderLen + 4), Get32(h + kDlcpHeaderLen + 8),
                                  Get32(h + kDlcpHeaderLen + 12), (uint8_t)(h[1] >> 5), true);
        else if (sub == kSubEcnEcho) OnEcnEcho(id, Get32(h + kDlcpHeaderLen + 4), Get32(h + kDlcpHeaderLen + 8));
        else if (sub == kSubGrant) OnGrant(id, Get32(h + kDlcpHeaderLen + 4) * 1000.0, Get32(h + kDlcpHeaderLen + 12),
                                           (flags & kFlagShed) != 0);
        else if (sub == kSubAck) OnAck(id, Get32(h + kDlcpHeaderLen + 4));
      } else if (msg == kMsgProbe && len >= kDlcpHeaderLen + 12) {
        Open(id, srcHost, Get32(h + kDlcpHeaderLen), Get32(h + kDlcpHeaderLen + 4), Get32(h + kDlcpHeaderLen + 8),
             (uint8_t)(h[1] >> 5));
        OnProbe(id, seq);
      } else if (msg == kMsgBitmap) {
        std::vector<uint8_t> all(p->GetSize());
        p->CopyData(all.data(), all.size());
        const uint8_t* b = all.data() + kDlcpHeaderLen;
        OnBitmap(id, Get32(b), Get32(b + 4), b + 12, Get32(b + 8));
      } else if (msg == kMsgDone) {
        OnDone(id, len >= kDlcpHeaderLen + 4 ? Get32(h + kDlcpHeaderLen) : 0);
      }
    }
  }
  InTransfer* Open(uint32_t id, uint32_t src, uint32_t n, uint32_t nCrit, uint32_t ppm, uint8_t layer, bool isOpen = false) {
    auto it = m_in.find(id);
    if (it != m_in.end()) {                      // a held sender's OPEN again: answer it (GRANT or HOLD)
      if (isOpen && !it->second.complete) { it->second.reopened = ns3::Simulator::Now().GetSeconds(); Regrant(src, true); }
      return &it->second;
    }
    InTransfer& t = m_in[id];
    t.n = n; t.nc = nCrit; t.p = ppm / 1e6; t.src = src; t.layer = layer;
    t.got.assign(n, 0);
    t.opened = ns3::Simulator::Now().GetSeconds();
    m_incomplete.insert(id);
    Regrant(src);
    // DATA that arrived before its OPEN (sprayed past it) was held: replay
    auto e = m_early.find(id);
    if (e != m_early.end()) {
      auto held = e->second;
      m_early.erase(e);
      for (auto& x : held) OnData(id, src, x.first, x.second.first, x.second.second, false);
    }
    return &t;
  }
  bool RuleHolds(const InTransfer& t) const {
    uint32_t nnc = t.n - t.nc;
    return t.gotCrit >= t.nc && t.gotNc >= (uint32_t)std::ceil((1.0 - t.p) * nnc - 1e-9);
  }
  void OnData(uint32_t id, uint32_t src, uint32_t idx, uint8_t flags, uint32_t seq, bool ce) {
    auto it = m_in.find(id);
    if (it == m_in.end()) {
      if (m_early[id].size() < 4096) m_early[id].push_back({idx, {flags, seq}});
      return;
    }
    InTransfer& t = it->second;
    SimNet& net = SimNet::Get();
    double now = ns3::Simulator::Now().GetSeconds();
    if (ce) {
      t.ce++;
      net.transfers[id].ceMarks++;
      if (!t.complete && now - t.lastEcho >= net.cfg.ecnEchoGap) {
        t.lastEcho = now;
        std::vector<uint8_t> buf(kDlcpHeaderLen + 16, 0);
        Header(buf.data(), kMsgControl, 7, 15, kFlagCritical, id, 0, 0, 0, (uint16_t)src);
        uint8_t* p = buf.data() + kDlcpHeaderLen;
        Put(p, kSubEcnEcho, 4); Put(p, t.ce, 4); Put(p, t.gotAll, 4);
        SendTo(src, buf, false);
        net.ctrlPackets++;
      }
    }
    if (t.complete || idx >= t.n || t.got[idx]) return;
    t.got[idx] = 1;
    t.gotAll++;
    bool critical = (flags & kFlagCritical) && (!(flags & kFlagRetx) || (seq & 1));
    if (critical) t.gotCrit++; else t.gotNc++;
    t.lastData = now;
    if (t.gotAll == t.n) { Finish(id, t); return; }
    // lastAsProbe: the first transmission's LAST is sent after every other first-round packet and
    // right before the round-0 PROBE: act as on that PROBE (a retransmitted LAST is not a trigger)
    if (net.cfg.lastAsProbe && !t.probed && (flags & kFlagLast) && !(flags & kFlagRetx)) {
      net.lastProbes++;
      OnProbe(id, 0);
      if (t.complete) return;
    }
    if (t.probed && net.cfg.shedDroppable && RuleHolds(t)) { Finish(id, t); return; }   // the PROBE overtook it
    // grantAhead: a granted sender may have become a finishing one (Regrant decides, over all its
    // transfers here): only while senders are held and this transfer is below the threshold
    if (net.cfg.grantAhead > 0 && !m_held.empty() && m_sched.count(src)) {
      uint64_t ahead = AheadPackets();
      if (ahead > 0 && t.n - t.gotAll <= ahead) Regrant(UINT32_MAX);
    }
  }
  void OnProbe(uint32_t id, uint32_t round) {
    InTransfer& t = m_in[id];
    t.probed = true;
    if (t.complete) { SendDone(id, t); return; }
    if (RuleHolds(t)) { Finish(id, t); return; }
    t.pendingRound = round;
    ns3::Simulator::Cancel(t.answer);
    t.answer = ns3::Simulator::Schedule(ns3::Seconds(SimNet::Get().cfg.holdoff), &DlcpHost::AnswerProbe, this, id);
  }
  // The hold-off: answer once DATA has been quiet for ``holdoff`` (stragglers sprayed over another
  // path are not asked for again), or at once when the rule holds.
  void AnswerProbe(uint32_t id) {
    InTransfer& t = m_in[id];
    if (t.complete) return;
    if (RuleHolds(t)) { Finish(id, t); return; }
    double now = ns3::Simulator::Now().GetSeconds(), quiet = SimNet::Get().cfg.holdoff;
    if (t.lastData >= 0 && now - t.lastData < quiet) {
      double wait = std::max(t.lastData + quiet - now, 1e-8);   // never 0: ns-3 time is whole ns
      t.answer = ns3::Simulator::Schedule(ns3::Seconds(wait), &DlcpHost::AnswerProbe, this, id);
      return;
    }
    uint32_t nnc = t.n - t.nc;
    uint32_t need = (uint32_t)std::ceil((1.0 - t.p) * nnc - 1e-9);
    uint32_t deficit = need > t.gotNc ? need - t.gotNc : 0;
    std::vector<uint8_t> buf(kDlcpHeaderLen + 12 + (t.n + 7) / 8, 0);
    Header(buf.data(), kMsgBitmap, 7, 15, kFlagCritical, id, 0, 0, t.pendingRound, (uint16_t)t.src);
    uint8_t* p = buf.data() + kDlcpHeaderLen;
    Put(p, t.pendingRound, 4); Put(p, deficit, 4); Put(p, t.n, 4);
    for (uint32_t i = 0; i < t.n; ++i) if (t.got[i]) p[i >> 3] |= (uint8_t)(1u << (i & 7));
    SendTo(t.src, buf, false);
    SimNet::Get().ctrlPackets++;
  }
  void Finish(uint32_t id, InTransfer& t) {
    t.complete = true;
    ns3::Simulator::Cancel(t.answer);
    SimNet& net = SimNet::Get();
    net.transfers[id].zeroFilled = t.n - t.gotAll;
    SendDone(id, t);
    t.got.clear(); t.got.shrink_to_fit();
    m_incomplete.erase(id);
    if (!m_granted.empty()) Regrant(UINT32_MAX);   // one sender fewer: the others' shares grow
    net.Complete(id);
  }
  void SendDone(uint32_t id, InTransfer& t) {
    std::vector<uint8_t> buf(kDlcpHeaderLen + 8, 0);
    Header(buf.data(), kMsgDone, 7, 15, kFlagCritical, id, 0, 0, 0, (uint16_t)t.src);
    uint8_t* p = buf.data() + kDlcpHeaderLen;
    Put(p, t.gotAll, 4); Put(p, t.n - t.gotAll, 4);
    SendTo(t.src, buf, false);
    SimNet::Get().ctrlPackets++;
  }
  // ---------------------------------------------------------------- receiver-driven admission
  // (receiver.py): every active sender -- an unfinished transfer here that got DATA (or was opened)
  // within grantIdle, or a sender this receiver holds -- is granted grantShare x link / n bytes/s
  // and a window of max(windowMin, W / n) packets (CONTROL/GRANT, naming the transfer it answers),
  // W = windowPackets (host_agent) or, with overcommit, max(windowPackets, windowBdps x BDP); sent to
  // an opener and to every active sender whose share fell or grew by more than regrantChange
  // (host_agent: changed at all). With overcommit and more than overcommitSenders active senders,
  // n = overcommitSenders: the ones granted before stay, the longest-waiting others fill up, the
  // rest get a HOLD (a GRANT of rate 0) once. With standbyGrants every sender active within
  // grantMemory but not now holds the standby share, grantShare x link / n recent (sent when it
  // stops being active and whenever that share changes as above); with overcommit and more than
  // overcommitSenders recent senders, a HOLD instead. Every ackEvery DATA packets from a sender (all
  // its transfers, whatever became of them) a CONTROL/ACK carries the cumulative count.
  // ``opener``: the sender whose OPEN this answers (UINT32_MAX: none); a held opener is told again
  // only when ``reopen`` (its OPEN came again: it may have lost the HOLD or the GRANT).
  void Regrant(uint32_t opener, bool reopen = false) {
    SimNet& net = SimNet::Get();
    if (!net.cfg.grants) return;
    const TransportConfig& c = net.cfg;
    double now = ns3::Simulator::Now().GetSeconds();
    std::map<uint32_t, std::pair<uint32_t, double>> active;   // sender host -> (a transfer of it, its first OPEN)
    std::map<uint32_t, std::pair<int, double>> top;           // sender host -> (its top layer class, that class's first OPEN)
    std::map<uint32_t, uint64_t> left;                        // sender host -> packets left of its transfers here (admitSrpt)
    for (uint32_t id : m_incomplete) {
      const InTransfer& t = m_in[id];
      double last = std::max({t.lastData, t.opened, t.reopened});
      if (now - last >= c.grantIdle && !m_held.count(t.src)) continue;
      left[t.src] += t.n - t.gotAll;
      auto a = active.find(t.src);
      if (a == active.end()) active[t.src] = {id, t.opened};
      else a->second = {id, std::min(a->second.second, t.opened)};
      auto b = top.find(t.src);
      if (b == top.end() || t.layer > b->second.first || (t.layer == b->second.first && t.opened < b->second.second))
        top[t.src] = {t.layer, t.opened};
    }
    // the senders granted now: all active ones, or (overcommit) at most overcommitSenders of them
    std::set<uint32_t> granted;
    size_t counted = 0;                          // granted senders that share the link (0: all granted)
    if (c.overcommit && active.size() > c.overcommitSenders && c.classAdmission) {
      // the senders of the top layer classes (needed first by the next forward pass), the ones
      // granted before first within a class, then the earliest OPEN; the others are held (pre-empted)
      std::vector<std::tuple<int, int, double, uint32_t>> rank;
      if (!c.classPreempt)                       // no pre-emption: the ones granted before stay
        for (uint32_t s : m_sched) if (active.count(s)) granted.insert(s);
      std::vector<int> classes;                  // the top classes present, highest first: band = position / classBands
      for (auto& kv : top) classes.push_back(kv.second.first);
      std::sort(classes.begin(), classes.end(), std::greater<int>());
      classes.erase(std::unique(classes.begin(), classes.end()), classes.end());
      uint32_t bands = std::max<uint32_t>(1, c.classBands);
      for (auto& kv : top) {
        int band = (int)((std::find(classes.begin(), classes.end(), kv.second.first) - classes.begin()) / bands);
        rank.push_back({band, m_sched.count(kv.first) ? 0 : 1, kv.second.second, kv.first});
      }
      std::sort(rank.begin(), rank.end());
      for (auto& x : rank) {
        if (granted.size() >= c.overcommitSenders) break;
        granted.insert(std::get<3>(x));
      }
    } else if (c.overcommit && active.size() > c.overcommitSenders) {
      // grantAhead: a granted sender with at most ``ahead`` packets left here is finishing and does
      // not count against overcommitSenders (nor in the shares)
      uint64_t ahead = AheadPackets();
      std::vector<std::pair<uint64_t, uint32_t>> finishing;   // (packets left here, sender)
      for (uint32_t s : m_sched)
        if (active.count(s)) {
          granted.insert(s);
          if (ahead == 0 || left[s] > ahead) counted++;
          else finishing.push_back({left[s], s});
        }
      if (c.aheadBudget > 0 && !finishing.empty()) {   // aheadBudget: the fewest left stay uncounted
        std::sort(finishing.begin(), finishing.end());
        double budget = c.aheadBudget * (double)ahead, sum = 0;
        for (auto& f : finishing) {
          if (sum + (double)f.first <= budget) sum += (double)f.first;
          else counted++;
        }
      }
      // (packets left: admitSrpt only, else 0 for all; first OPEN; sender)
      std::vector<std::tuple<uint64_t, double, uint32_t>> waiting;
      for (auto& kv : active)
        if (!granted.count(kv.first)) waiting.push_back({c.admitSrpt ? left[kv.first] : 0, kv.second.second, kv.first});
      std::sort(waiting.begin(), waiting.end());
      for (auto& w : waiting) {
        if (counted >= c.overcommitSenders) break;
        granted.insert(std::get<2>(w));
        counted++;
      }
    } else {
      for (auto& kv : active) granted.insert(kv.first);
    }
    m_sched = granted;
    // grantAhead's granted set over time (SimNet::grantedSetMax and the rest): the state since the last call
    bool heldNow = c.overcommit && active.size() > c.overcommitSenders;
    m_pressure = heldNow;                        // shedDroppable: the GRANTs below carry it
    bool overNow = heldNow && granted.size() > c.overcommitSenders;
    if (m_setHeld) net.heldS += now - m_setAt;
    if (m_setOver) net.overBoundS += now - m_setAt;
    m_setAt = now; m_setHeld = heldNow; m_setOver = overNow;
    if (heldNow) {
      net.grantedSetMax = std::max<uint32_t>(net.grantedSetMax, (uint32_t)granted.size());
      if (counted > 0)
        net.finishingMax = std::max<uint32_t>(net.finishingMax, (uint32_t)(granted.size() - counted));
    }
    if (c.standbyGrants) {
      for (auto& kv : active) m_recent[kv.first] = {now, kv.second.first};
      for (auto r = m_recent.begin(); r != m_recent.end();)
        r = now - r->second.first > c.grantMemory ? m_recent.erase(r) : std::next(r);
    }
    if (active.empty() && m_recent.empty()) { m_granted.clear(); m_held.clear(); return; }
    if (!active.empty()) {
      net.activeSendersMax = std::max<uint32_t>(net.activeSendersMax, (uint32_t)active.size());
      size_t sharing = counted > 0 ? counted : granted.size();
      uint32_t wireRate = ShareRate(sharing);
      for (auto& kv : active) {
        uint32_t s = kv.first;
        if (granted.count(s)) {
          auto g = m_granted.find(s);
          if (s == opener || g == m_granted.end() || Moved(g->second, wireRate))
            SendGrant(s, kv.second.first, wireRate, (uint32_t)sharing);
        } else if (!m_held.count(s) || (s == opener && reopen)) {
          SendHold(s, kv.second.first);
        }
      }
    }
    if (!m_recent.empty()) {                      // standby: the share if every recent sender came back
      bool hold = c.overcommit && m_recent.size() > c.overcommitSenders;
      uint32_t wireRate = ShareRate(m_recent.size());
      for (auto& kv : m_recent) {
        if (active.count(kv.first)) continue;
        if (hold) {
          if (!m_held.count(kv.first)) SendHold(kv.first, kv.second.second);
          continue;
        }
        auto g = m_granted.find(kv.first);
        if (g == m_granted.end() || Moved(g->second, wireRate)) {
          SendGrant(kv.first, kv.second.second, wireRate, (uint32_t)m_recent.size());
          net.standbyGrantsSent++;
        }
      }
    }
    for (auto g = m_granted.begin(); g != m_granted.end();)
      g = active.count(g->first) || m_recent.count(g->first) ? std::next(g) : m_granted.erase(g);
    for (auto h = m_held.begin(); h != m_held.end();)
      h = m_granted.count(*h) ? std::next(h) : m_held.erase(h);
    if (!m_granted.empty() && !m_grantTick.IsPending())
      m_grantTick = ns3::Simulator::Schedule(ns3::Seconds(c.grantTick), &DlcpHost::GrantTick, this);
  }
  // Whether a sender granted ``was`` (kB/s; 0: held) must hear of ``now``: always when it fell or it
  // was held; when it grew, only by more than regrantChange (host_agent: any change).
  bool Moved(uint32_t was, uint32_t now) const {
    if (was == 0 || now < was) return true;
    return (double)(now - was) > SimNet::Get().cfg.regrantChange * (double)was;
  }
  // grantAhead's threshold: packets a sender on overcommitSenders' share sends in grantAhead x
  // baseRtt (0: off, or no base RTT known). Computed on the first call and kept: OnData asks on
  // each DATA packet while senders are held, and the config and this host's line rate are fixed
  // for the run by then (simulation/job.py sets them before it creates the hosts)
  uint64_t AheadPackets() const {
    if (m_ahead >= 0) return (uint64_t)m_ahead;
    const TransportConfig& c = SimNet::Get().cfg;
    m_ahead = 0;
    if (c.grantAhead <= 0 || c.baseRtt <= 0 || !c.overcommit) return 0;
    double wire = (double)(c.payload + kDlcpHeaderLen + 8 + 20 + 2);
    double rate = (double)ShareRate(std::max<uint32_t>(1, c.overcommitSenders)) * 1000.0;   // bytes/s
    m_ahead = (int64_t)std::ceil(c.grantAhead * c.baseRtt * rate / wire);
    return (uint64_t)m_ahead;
  }
  // grantShare x link / n in kB/s (the GRANT's rate field: bytes/s overflow its u32 above 34 Gbit/s)
  uint32_t ShareRate(size_t n) const {
    double rate = SimNet::Get().cfg.grantShare * (double)SimNet::Get().lineRate[m_index] / 8.0 / (double)n;
    return (uint32_t)std::max(1.0, std::min(4294967295.0, rate / 1000.0));
  }
  // Packets all granted senders together may have in flight: windowPackets (host_agent) or, with
  // overcommit, at least windowBdps x this receiver's bandwidth-delay product over baseRtt.
  uint32_t WindowTotal() const {
    const TransportConfig& c = SimNet::Get().cfg;
    if (!c.overcommit || c.baseRtt <= 0) return c.windowPackets;
    double wire = (double)(c.payload + kDlcpHeaderLen + 8 + 20 + 2);
    double bdp = (double)SimNet::Get().lineRate[m_index] / 8.0 * c.baseRtt / wire;
    return std::max<uint32_t>(c.windowPackets, (uint32_t)std::ceil(c.windowBdps * bdp));
  }
  // CONTROL/GRANT to ``sender`` naming transfer ``id``: rate (kB/s), n senders, window max(windowMin, W / n)
  void SendGrant(uint32_t sender, uint32_t id, uint32_t wireRate, uint32_t n) {
    SimNet& net = SimNet::Get();
    uint32_t window = std::max<uint32_t>(net.cfg.windowMin, WindowTotal() / n);
    m_granted[sender] = wireRate;
    m_held.erase(sender);
    net.grantsSent++;
    SendGrantPacket(sender, id, wireRate, n, window);
  }
  // CONTROL/GRANT of rate 0 (overcommitment): no DATA to this receiver until a GRANT comes.
  void SendHold(uint32_t sender, uint32_t id) {
    SimNet& net = SimNet::Get();
    m_granted[sender] = 0;
    m_held.insert(sender);
    net.holdsSent++;
    SendGrantPacket(sender, id, 0, 0, 0);
  }
  void SendGrantPacket(uint32_t sender, uint32_t id, uint32_t wireRate, uint32_t n, uint32_t window) {
    std::vector<uint8_t> buf(kDlcpHeaderLen + 16, 0);
    uint8_t flags = kFlagCritical | (SimNet::Get().cfg.shedDroppable && m_pressure && wireRate > 0 ? kFlagShed : 0);
    Header(buf.data(), kMsgControl, 7, 15, flags, id, 0, 0, 0, (uint16_t)sender);
    uint8_t* p = buf.data() + kDlcpHeaderLen;
    Put(p, kSubGrant, 4); Put(p, wireRate, 4); Put(p, n, 4); Put(p, window, 4);
    SendTo(sender, buf, false);
    SimNet::Get().ctrlPackets++;
  }
  void GrantTick() { if (!m_granted.empty()) Regrant(UINT32_MAX); }   // senders gone quiet: the others' shares
  void CountData(uint32_t src, uint32_t id) {
    SimNet& net = SimNet::Get();
    if (!net.cfg.grants || src >= net.hosts.size()) return;
    uint32_t n = ++m_rxFrom[src];
    uint32_t& at = m_ackedAt[src];
    if (n - at < net.cfg.ackEvery) return;
    at = n;
    net.acksSent++;
    std::vector<uint8_t> buf(kDlcpHeaderLen + 16, 0);
    Header(buf.data(), kMsgControl, 7, 15, kFlagCritical, id, 0, 0, 0, (uint16_t)src);
    uint8_t* p = buf.data() + kDlcpHeaderLen;
    Put(p, kSubAck, 4); Put(p, n, 4);
    SendTo(src, buf, false);
    net.ctrlPackets++;
  }
  void OnEcnEcho(uint32_t id, uint32_t ce, uint32_t got) {
    auto it = m_out.find(id);
    if (it == m_out.end()) return;
    auto& seen = m_ceSeen[id];                    // (CE, received) at the last echo
    uint32_t dce = ce - std::min(ce, seen.first), dgot = got - std::min(got, seen.second);
    double frac = std::min(1.0, (double)dce / std::max<uint32_t>(1, dgot));
    seen = {ce, got};
    Cut(1.0 - std::max(frac, 0.05) / 2.0);
  }

  uint32_t m_index = 0;
  uint16_t m_job = 1;
  mutable int64_t m_ahead = -1;                     // receiver: AheadPackets() once known (-1: not yet)
  double m_setAt = 0;                               // receiver: the last Regrant (SimNet::heldS, overBoundS)
  bool m_setHeld = false, m_setOver = false;        // ... senders held then; more than overcommitSenders granted then
  ns3::Ptr<ns3::Socket> m_udp;
  TcpPath m_tcp;                                    // non-DLCP transfers (TCP baselines)
  PfabricPath m_pfabric;                            // non-DLCP transfers (cfg.pfabric)
  std::map<uint32_t, std::shared_ptr<OutTransfer>> m_out;
  std::map<uint32_t, InTransfer> m_in;
  std::map<uint32_t, std::vector<std::pair<uint32_t, std::pair<uint8_t, uint32_t>>>> m_early;
  std::map<uint32_t, std::pair<uint32_t, uint32_t>> m_ceSeen;
  std::deque<uint32_t> m_active;
  ns3::EventId m_sendEvent, m_grantTick;
  double m_sendAt = 0;
  std::map<uint32_t, DestGrant> m_dest;             // sender: per destination host
  std::set<uint32_t> m_incomplete;                  // receiver: transfers not complete yet
  std::map<uint32_t, uint32_t> m_granted;           // receiver: sender host -> rate last granted (kB/s; 0: HOLD)
  std::set<uint32_t> m_sched, m_held;               // receiver: senders granted now; senders sent a HOLD
  std::map<uint32_t, std::pair<double, uint32_t>> m_recent;   // receiver: sender host -> (last active, a transfer of it)
  std::map<uint32_t, uint32_t> m_rxFrom, m_ackedAt; // receiver: DATA from each sender, count at the last ACK
  bool m_pressure = false;                          // receiver: senders held at the last Regrant (shedDroppable)
  double m_nextSend = 0, m_rate = 1e9, m_line = 1e9, m_cutRate = 0, m_lastCut = -1, m_lastIncrease = 0;
  double m_srtt = 0, m_rttvar = 0;
  uint32_t m_seq = 0;
  uint64_t m_jitter = 0x0FE7A11ull;                // openRetry's jitter (Setup seeds it per host)
};

}  // namespace dlcpsim
