// dlcp_switch.h -- the DLCP switch for ns-3: decision function, strict-priority queue disc,
// and the forwarding hook (per-packet spraying of DLCP DATA, per-flow ECMP otherwise).
//
// Why this file exists: every per-packet decision the P4 program (p4src/bmv2/dlcp.p4) makes must
// run in C++ inside ns-3, not in Python callbacks. simulation/switch_model/__init__.py compiles it
// at run time with cppyy.cppdef and fills DlcpPolicy from the controller's parsed policy YAML.
// The decision follows p4src/bmv2/control/{validate, priority_mapping, selective_drop, routing}.p4;
// the one intended difference (the depth is the queue's real length at enqueue, as on Tofino2,
// not BMv2's estimate from the last dequeued packet's wait) is listed in docs/simulation.md.
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <unordered_map>
#include <vector>

#include "ns3/core-module.h"
#include "ns3/network-module.h"
#include "ns3/internet-module.h"
#include "ns3/traffic-control-module.h"
#include "ns3/applications-module.h"

namespace dlcpsim {

constexpr uint16_t kDlcpPortDefault = 9290;   // DLCP_UDP_PORT_DEFAULT
constexpr uint8_t kMsgData = 0;               // DLCP_MSG_DATA
constexpr uint8_t kFlagCritical = 0x80;       // DLCP_FLAG_CRITICAL
constexpr uint8_t kFlagLast = 0x40;           // DLCP_FLAG_LAST
constexpr uint8_t kFlagEcnCapable = 0x08;     // DLCP_FLAG_ECN_CAPABLE
constexpr uint32_t kDlcpHeaderLen = 24;
constexpr int kQueues = 8;
constexpr int kMagClasses = 16;

enum Action : uint8_t { kForward = 0, kMark = 1, kDrop = 2 };

// What the priority_map / drop_thresholds / dlcp_udp_ports tables hold, as the controller installs
// them from the policy (rules in priority order, first match wins).
struct DlcpPolicy {
  struct Rule { uint8_t value[5]; uint8_t mask[5]; uint8_t queue; };   // is_dlcp msg layer mag flags
  std::vector<Rule> rules;
  int64_t drop[kQueues][kMagClasses];
  int64_t ecn[kQueues][kMagClasses];
  bool has[kQueues][kMagClasses];
  std::vector<uint16_t> udpPorts;
  uint32_t queueDepth = 64;

  DlcpPolicy() { std::memset(has, 0, sizeof(has)); std::memset(drop, 0, sizeof(drop)); std::memset(ecn, 0, sizeof(ecn)); }
  void AddRule(uint8_t v0, uint8_t m0, uint8_t v1, uint8_t m1, uint8_t v2, uint8_t m2, uint8_t v3, uint8_t m3,
               uint8_t v4, uint8_t m4, uint8_t queue) {
    Rule r{{v0, v1, v2, v3, v4}, {m0, m1, m2, m3, m4}, queue};
    rules.push_back(r);
  }
  void SetThreshold(int q, int m, int64_t dropDepth, int64_t ecnDepth) {
    has[q][m] = true; drop[q][m] = dropDepth; ecn[q][m] = ecnDepth;
  }
  void AddUdpPort(uint16_t p) { udpPorts.push_back(p); }
  bool IsDlcpPort(uint16_t p) const {
    if (p == kDlcpPortDefault) return true;
    for (auto u : udpPorts) if (u == p) return true;
    return false;
  }
};

// The DLCP tags the switch reads (zero for non-DLCP, as validate.p4 leaves them).
struct Tags {
  bool isDlcp = false;
  uint8_t msgType = 0, layerClass = 0, magClass = 0, flags = 0;
  uint32_t seq = 0, offset = 0;
  uint16_t sport = 0, dport = 0;
  uint8_t tensor[10] = {};           // job_id, worker_id, iteration, tensor_id as on the wire (per-tensor ECMP)
};

struct Decision {
  uint8_t queue = 0;
  uint8_t action = kForward;
  bool sprayed = false;
  uint32_t member = 0;
};

// L4 bytes (UDP/TCP header onwards) -> ports and DLCP tags. A UDP datagram to a DLCP port whose
// length leaves room for the header and whose payload starts with version 1 is DLCP.
inline Tags ParseL4(const uint8_t* l4, uint32_t len, uint8_t proto, const DlcpPolicy& pol) {
  Tags t;
  if ((proto == 6 || proto == 17) && len >= 4) {
    t.sport = (uint16_t)((l4[0] << 8) | l4[1]);
    t.dport = (uint16_t)((l4[2] << 8) | l4[3]);
  }
  if (proto != 17 || len < 8 + kDlcpHeaderLen) return t;
  uint16_t udpLen = (uint16_t)((l4[4] << 8) | l4[5]);
  const uint8_t* h = l4 + 8;
  if (udpLen < 8 + kDlcpHeaderLen || (h[0] >> 4) != 1 || !pol.IsDlcpPort(t.dport)) return t;
  t.isDlcp = true;
  t.msgType = h[0] & 0x0F;
  t.layerClass = h[1] >> 5;
  t.magClass = h[1] & 0x0F;          // bit<3> layer_class, bit<1> reserved0, bit<4> mag_class
  t.flags = h[2];
  t.offset = ((uint32_t)h[16] << 24) | ((uint32_t)h[17] << 16) | ((uint32_t)h[18] << 8) | h[19];
  t.seq = ((uint32_t)h[20] << 24) | ((uint32_t)h[21] << 16) | ((uint32_t)h[22] << 8) | h[23];
  for (int i = 0; i < 10; ++i) t.tensor[i] = h[4 + i];
  return t;
}

// priority_map: first matching rule's queue, default set_queue(0).
inline uint8_t Classify(const DlcpPolicy& pol, const Tags& t) {
  uint8_t key[5] = {(uint8_t)t.isDlcp, t.msgType, t.layerClass, t.magClass, t.flags};
  for (const auto& r : pol.rules) {
    bool ok = true;
    for (int i = 0; i < 5 && ok; ++i) ok = (key[i] & r.mask[i]) == r.value[i];
    if (ok) return r.queue;
  }
  return 0;
}

// selective_drop.p4's rule for a packet of queue ``queue`` seeing ``depth`` packets in it.
inline uint8_t ThresholdAction(const DlcpPolicy& pol, const Tags& t, uint8_t queue, uint8_t ipEcn, uint64_t depth) {
  if (!t.isDlcp || !pol.has[queue][t.magClass]) return kForward;
  if (t.msgType == kMsgData && !(t.flags & kFlagCritical) && (int64_t)depth > pol.drop[queue][t.magClass])
    return kDrop;
  if ((t.flags & kFlagEcnCapable) && ipEcn != 0 && (int64_t)depth > pol.ecn[queue][t.magClass]) return kMark;
  return kForward;
}

// BMv2's crc16 (CRC-16/ARC) and crc32 (CRC-32/ISO-HDLC), as p4sim/runtime/hashes.py.
inline uint16_t Crc16(const uint8_t* d, size_t n) {
  uint16_t crc = 0;
  for (size_t i = 0; i < n; ++i) {
    crc ^= d[i];
    for (int b = 0; b < 8; ++b) crc = (crc & 1) ? (uint16_t)((crc >> 1) ^ 0xA001) : (uint16_t)(crc >> 1);
  }
  return crc;
}
inline uint32_t Crc32(const uint8_t* d, size_t n) {
  uint32_t crc = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) {
    crc ^= d[i];
    for (int b = 0; b < 8; ++b) crc = (crc & 1) ? (crc >> 1) ^ 0xEDB88320u : crc >> 1;
  }
  return crc ^ 0xFFFFFFFFu;
}

inline void Put(uint8_t*& p, uint32_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) *p++ = (uint8_t)(v >> (8 * i));
}

// routing.p4: spray DLCP DATA of a spraying group per packet (crc32 over 5-tuple, seq, offset),
// other DLCP per tensor (crc32 over 5-tuple, job, worker, iteration, tensor id), everything else per
// flow (crc16 over the 5-tuple); member = hash % members.
inline void PickMember(const Tags& t, uint32_t src, uint32_t dst, uint8_t proto, bool groupSpray,
                       uint32_t members, Decision& d) {
  d.sprayed = groupSpray && t.isDlcp && t.msgType == kMsgData;
  if (members <= 1) { d.member = 0; return; }
  uint8_t buf[23];
  uint8_t* p = buf;
  Put(p, src, 4); Put(p, dst, 4); Put(p, proto, 1); Put(p, t.sport, 2); Put(p, t.dport, 2);
  if (d.sprayed) {
    Put(p, t.seq, 4); Put(p, t.offset, 4);
    d.member = Crc32(buf, 21) % members;
  } else if (t.isDlcp) {             // routing.p4 since 689ff0d: per tensor (crc32 over 5-tuple + tensor key)
    for (int i = 0; i < 10; ++i) *p++ = t.tensor[i];
    d.member = Crc32(buf, 23) % members;
  } else {
    d.member = Crc16(buf, 13) % members;
  }
}

// The whole decision for one packet, from raw L4 bytes: what the differential test calls.
inline Decision DecideRaw(const DlcpPolicy& pol, const uint8_t* l4, uint32_t len, uint8_t proto, uint32_t src,
                          uint32_t dst, uint8_t ipEcn, const uint64_t* depths, bool groupSpray, uint32_t members) {
  Tags t = ParseL4(l4, len, proto, pol);
  Decision d;
  d.queue = Classify(pol, t);
  d.action = ThresholdAction(pol, t, d.queue, ipEcn, depths[d.queue]);
  PickMember(t, src, dst, proto, groupSpray, members, d);
  return d;
}

inline Tags TagsOf(ns3::Ptr<const ns3::Packet> l4Packet, uint8_t proto, const DlcpPolicy& pol) {
  uint8_t buf[8 + kDlcpHeaderLen];
  uint32_t n = l4Packet->CopyData(buf, sizeof(buf));
  return ParseL4(buf, n, proto, pol);
}

// What a tail-dropped DLCP message was (PortCounters::tailDropsByKind): the control messages by
// subtype (a GRANT of rate 0 is a HOLD), then PROBE, then DATA first sent and DATA retransmitted.
enum MsgKind : uint8_t {
  kKindOpen = 0, kKindGrant, kKindHold, kKindAck, kKindEcnEcho, kKindBitmap, kKindDone, kKindProbe,
  kKindData, kKindRetx, kKindOther, kKinds
};
// L4 bytes of a DLCP packet (tags ``t``) -> its kind; reads the control subtype after the header.
inline uint8_t KindOf(const Tags& t, const uint8_t* l4, uint32_t len) {
  if (t.msgType == kMsgData) return (t.flags & 0x20) ? kKindRetx : kKindData;      // 0x20: RETX
  if (t.msgType == 1) return kKindProbe;
  if (t.msgType == 2) return kKindBitmap;
  if (t.msgType == 3) return kKindDone;
  if (t.msgType != 4 || len < 8 + kDlcpHeaderLen + 8) return kKindOther;
  const uint8_t* b = l4 + 8 + kDlcpHeaderLen;
  uint32_t sub = ((uint32_t)b[0] << 24) | ((uint32_t)b[1] << 16) | ((uint32_t)b[2] << 8) | b[3];
  uint32_t rate = ((uint32_t)b[4] << 24) | ((uint32_t)b[5] << 16) | ((uint32_t)b[6] << 8) | b[7];
  if (sub == 1) return kKindOpen;
  if (sub == 2) return kKindEcnEcho;
  if (sub == 4) return rate == 0 ? kKindHold : kKindGrant;
  if (sub == 5) return kKindAck;
  return kKindOther;
}

// Per-(queue, mag) counters of one switch port, read from Python at the end of a run.
struct PortCounters {
  uint64_t selectiveDrops[kQueues][kMagClasses];
  uint64_t ecnMarks[kQueues][kMagClasses];
  uint64_t tailDrops[kQueues];
  uint64_t enqueued[kQueues];
  uint64_t tailDropsByKind[kQueues][kKinds];   // DLCP packets only
  uint64_t maxDepth[kQueues];                  // packets, the deepest each band was at an enqueue
  double firstTailDropS[kQueues], lastTailDropS[kQueues];   // s, simulated (0 when none)
  PortCounters() { std::memset(this, 0, sizeof(*this)); }
};

// Strict-priority queue disc: 8 FIFO bands (7 served first) of policy.queueDepth packets each,
// the DLCP priority map and the per-(queue, magnitude) drop/ECN rule on the band's real depth.
class DlcpQueueDisc : public ns3::QueueDisc {
 public:
  static ns3::TypeId GetTypeId() {
    static ns3::TypeId tid = ns3::TypeId("dlcpsim::DlcpQueueDisc")
                                 .SetParent<ns3::QueueDisc>()
                                 .SetGroupName("TrafficControl")
                                 .AddConstructor<DlcpQueueDisc>();
    return tid;
  }
  DlcpQueueDisc() : ns3::QueueDisc(ns3::QueueDiscSizePolicy::NO_LIMITS) {}
  void SetPolicy(const DlcpPolicy& pol) { m_policy = pol; }
  const PortCounters& Counters() const { return m_counters; }
  uint64_t SelectiveDrops(int q, int m) const { return m_counters.selectiveDrops[q][m]; }
  uint64_t EcnMarks(int q, int m) const { return m_counters.ecnMarks[q][m]; }
  uint64_t TailDrops(int q) const { return m_counters.tailDrops[q]; }
  uint64_t Enqueued(int q) const { return m_counters.enqueued[q]; }
  uint64_t TailDropsOfKind(int q, int kind) const { return m_counters.tailDropsByKind[q][kind]; }
  uint64_t MaxDepth(int q) const { return m_counters.maxDepth[q]; }
  double FirstTailDropS(int q) const { return m_counters.firstTailDropS[q]; }
  double LastTailDropS(int q) const { return m_counters.lastTailDropS[q]; }

 private:
  bool DoEnqueue(ns3::Ptr<ns3::QueueDiscItem> item) override {
    auto ipItem = ns3::DynamicCast<ns3::Ipv4QueueDiscItem>(item);
    Tags t;
    uint8_t ecn = 0;
    if (ipItem) {
      const ns3::Ipv4Header& ip = ipItem->GetHeader();
      ecn = (uint8_t)ip.GetEcn();
      t = TagsOf(item->GetPacket(), ip.GetProtocol(), m_policy);
    }
    uint8_t q = dlcpsim::Classify(m_policy, t);
    auto band = GetInternalQueue(q);
    uint8_t action = ThresholdAction(m_policy, t, q, ecn, band->GetNPackets());
    if (action == kDrop) {
      m_counters.selectiveDrops[q][t.magClass]++;
      DropBeforeEnqueue(item, "DLCP selective drop");
      return false;
    }
    if (action == kMark && Mark(item, "DLCP ECN mark")) m_counters.ecnMarks[q][t.magClass]++;
    if (!band->Enqueue(item)) {
      double now = ns3::Simulator::Now().GetSeconds();
      if (m_counters.tailDrops[q]++ == 0) m_counters.firstTailDropS[q] = now;
      m_counters.lastTailDropS[q] = now;
      if (t.isDlcp) {                            // which message: read again, only on this rare path
        uint8_t buf[8 + kDlcpHeaderLen + 8];
        uint32_t n = item->GetPacket()->CopyData(buf, sizeof(buf));
        m_counters.tailDropsByKind[q][KindOf(t, buf, n)]++;
      }
      return false;
    }
    m_counters.enqueued[q]++;
    m_counters.maxDepth[q] = std::max<uint64_t>(m_counters.maxDepth[q], band->GetNPackets());
    return true;
  }
  ns3::Ptr<ns3::QueueDiscItem> DoDequeue() override {
    for (int q = kQueues - 1; q >= 0; --q) {
      ns3::Ptr<ns3::QueueDiscItem> item = GetInternalQueue(q)->Dequeue();
      if (item) return item;
    }
    return nullptr;
  }
  bool CheckConfig() override {
    if (GetNInternalQueues() == 0) {
      for (int q = 0; q < kQueues; ++q) {
        AddInternalQueue(ns3::CreateObjectWithAttributes<ns3::DropTailQueue<ns3::QueueDiscItem>>(
            "MaxSize", ns3::QueueSizeValue(ns3::QueueSize(ns3::QueueSizeUnit::PACKETS, m_policy.queueDepth))));
      }
    }
    return GetNInternalQueues() == kQueues && GetNQueueDiscClasses() == 0;
  }
  void InitializeParams() override {}

  DlcpPolicy m_policy;
  PortCounters m_counters;
};

// Forwarding hook of a switch: dst /32 -> ECMP group of (interface, gateway) members, chosen as
// routing.p4 does. Sits in the node's Ipv4ListRouting above static routing.
class DlcpRouting : public ns3::Ipv4RoutingProtocol {
 public:
  static ns3::TypeId GetTypeId() {
    static ns3::TypeId tid = ns3::TypeId("dlcpsim::DlcpRouting")
                                 .SetParent<ns3::Ipv4RoutingProtocol>()
                                 .SetGroupName("Internet")
                                 .AddConstructor<DlcpRouting>();
    return tid;
  }
  void SetPolicy(const DlcpPolicy& pol) { m_policy = pol; }
  void SetSpray(bool spray) { m_spray = spray; }
  void AddMember(uint32_t dst, uint32_t iface, uint32_t gateway) {
    m_groups[dst].push_back({iface, gateway});
  }
  uint64_t Sprayed() const { return m_sprayed; }
  uint64_t Pinned() const { return m_pinned; }
  uint64_t NoRoute() const { return m_noRoute; }

  bool RouteInput(ns3::Ptr<const ns3::Packet> p, const ns3::Ipv4Header& header,
                  ns3::Ptr<const ns3::NetDevice> idev, const UnicastForwardCallback& ucb,
                  const MulticastForwardCallback& mcb, const LocalDeliverCallback& lcb,
                  const ErrorCallback& ecb) override {
    auto it = m_groups.find(header.GetDestination().Get());
    if (it == m_groups.end()) { m_noRoute++; return false; }
    const auto& members = it->second;
    Tags t = TagsOf(p, header.GetProtocol(), m_policy);
    Decision d;
    PickMember(t, header.GetSource().Get(), header.GetDestination().Get(), header.GetProtocol(), m_spray,
               (uint32_t)members.size(), d);
    if (members.size() > 1) (d.sprayed ? m_sprayed : m_pinned)++;
    const auto& m = members[d.member];
    ns3::Ptr<ns3::Ipv4Route> route = ns3::Create<ns3::Ipv4Route>();
    route->SetDestination(header.GetDestination());
    route->SetGateway(ns3::Ipv4Address(m.second));
    route->SetOutputDevice(m_ipv4->GetNetDevice(m.first));
    route->SetSource(m_ipv4->GetAddress(m.first, 0).GetLocal());
    ucb(route, p, header);
    return true;
  }
  ns3::Ptr<ns3::Ipv4Route> RouteOutput(ns3::Ptr<ns3::Packet>, const ns3::Ipv4Header&, ns3::Ptr<ns3::NetDevice>,
                                       ns3::Socket::SocketErrno& err) override {
    err = ns3::Socket::ERROR_NOROUTETOHOST;   // switches originate nothing; static routing answers
    return nullptr;
  }
  void NotifyInterfaceUp(uint32_t) override {}
  void NotifyInterfaceDown(uint32_t) override {}
  void NotifyAddAddress(uint32_t, ns3::Ipv4InterfaceAddress) override {}
  void NotifyRemoveAddress(uint32_t, ns3::Ipv4InterfaceAddress) override {}
  void SetIpv4(ns3::Ptr<ns3::Ipv4> ipv4) override { m_ipv4 = ipv4; }
  void PrintRoutingTable(ns3::Ptr<ns3::OutputStreamWrapper> stream, ns3::Time::Unit) const override {
    *stream->GetStream() << "DlcpRouting: " << m_groups.size() << " destinations\n";
  }

 private:
  DlcpPolicy m_policy;
  bool m_spray = true;
  ns3::Ptr<ns3::Ipv4> m_ipv4;
  std::unordered_map<uint32_t, std::vector<std::pair<uint32_t, uint32_t>>> m_groups;
  uint64_t m_sprayed = 0, m_pinned = 0, m_noRoute = 0;
};

// Open-loop DLCP sender: one gradient flow of ``bytes`` as DATA packets of ``payload`` bytes paced at
// ``rateBps``, layer class fixed, magnitude class drawn per packet; classes >= protectedMag and the
// last packet carry CRITICAL (the host agent's tagging, docs/transport.md). No retransmission.
class DlcpSender : public ns3::Application {
 public:
  static ns3::TypeId GetTypeId() {
    static ns3::TypeId tid = ns3::TypeId("dlcpsim::DlcpSender")
                                 .SetParent<ns3::Application>()
                                 .SetGroupName("Applications")
                                 .AddConstructor<DlcpSender>();
    return tid;
  }
  void Configure(uint32_t dst, uint16_t port, uint64_t bytes, uint32_t payload, uint64_t rateBps,
                 uint8_t layerClass, uint8_t protectedMag, uint16_t jobId, uint16_t workerId, uint32_t seed) {
    m_dst = dst; m_port = port; m_bytes = bytes; m_payload = payload; m_rate = rateBps;
    m_layer = layerClass; m_protected = protectedMag; m_job = jobId; m_worker = workerId;
    m_rng = seed * 2654435761u + 1;
  }
  uint64_t Sent() const { return m_sentPackets; }

 private:
  void StartApplication() override {
    m_socket = ns3::Socket::CreateSocket(GetNode(), ns3::UdpSocketFactory::GetTypeId());
    m_socket->Bind();
    m_socket->Connect(ns3::InetSocketAddress(ns3::Ipv4Address(m_dst), m_port));
    SendNext();
  }
  void StopApplication() override {
    ns3::Simulator::Cancel(m_event);
    if (m_socket) m_socket->Close();
  }
  void SendNext() {
    if (m_offset >= m_bytes) return;
    uint32_t chunk = (uint32_t)std::min<uint64_t>(m_payload, m_bytes - m_offset);
    bool last = m_offset + chunk >= m_bytes;
    m_rng = m_rng * 1103515245u + 12345u;
    uint8_t mag = (uint8_t)((m_rng >> 16) & 0x0F);
    uint8_t flags = (uint8_t)((mag >= m_protected ? kFlagCritical : 0) | (last ? (kFlagCritical | kFlagLast) : 0));
    std::vector<uint8_t> buf(kDlcpHeaderLen + chunk, 0);
    uint8_t* p = buf.data();
    Put(p, (1u << 4) | kMsgData, 1); Put(p, ((uint32_t)m_layer << 5) | mag, 1); Put(p, flags, 1); Put(p, 0, 1);
    Put(p, m_job, 2); Put(p, m_worker, 2); Put(p, 0, 4); Put(p, 0, 2); Put(p, chunk / 4, 2);
    Put(p, (uint32_t)(m_offset / 4), 4); Put(p, m_seq, 4);
    m_socket->Send(ns3::Create<ns3::Packet>(buf.data(), buf.size()));
    m_offset += chunk; m_seq++; m_sentPackets++;
    double gap = (double)(buf.size() + 8 + 20 + 2) * 8.0 / (double)m_rate;
    m_event = ns3::Simulator::Schedule(ns3::Seconds(gap), &DlcpSender::SendNext, this);
  }

  ns3::Ptr<ns3::Socket> m_socket;
  ns3::EventId m_event;
  uint32_t m_dst = 0, m_payload = 1448, m_seq = 0, m_rng = 1;
  uint16_t m_port = kDlcpPortDefault, m_job = 1, m_worker = 1;
  uint64_t m_bytes = 0, m_offset = 0, m_rate = 1000000000, m_sentPackets = 0;
  uint8_t m_layer = 7, m_protected = 12;
};

// Registration helpers callable from Python.
inline ns3::Ptr<DlcpQueueDisc> NewQueueDisc(const DlcpPolicy& pol) {
  auto q = ns3::CreateObject<DlcpQueueDisc>();
  q->SetPolicy(pol);
  return q;
}
inline ns3::Ptr<DlcpRouting> AttachRouting(ns3::Ptr<ns3::Node> node, const DlcpPolicy& pol, bool spray) {
  auto r = ns3::CreateObject<DlcpRouting>();
  r->SetPolicy(pol);
  r->SetSpray(spray);
  auto ipv4 = node->GetObject<ns3::Ipv4>();
  auto list = ns3::DynamicCast<ns3::Ipv4ListRouting>(ipv4->GetRoutingProtocol());
  list->AddRoutingProtocol(r, 100);
  return r;
}
// Replace the root queue disc of ``dev`` (installed by the internet stack) with ``qd``.
inline void InstallRootQueueDisc(ns3::Ptr<ns3::NetDevice> dev, ns3::Ptr<ns3::QueueDisc> qd) {
  auto tc = dev->GetNode()->GetObject<ns3::TrafficControlLayer>();
  tc->DeleteRootQueueDiscOnDevice(dev);
  tc->SetRootQueueDiscOnDevice(dev, qd);
}
inline ns3::Ptr<DlcpSender> NewSender() { return ns3::CreateObject<DlcpSender>(); }

}  // namespace dlcpsim
