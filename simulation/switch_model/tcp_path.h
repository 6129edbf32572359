// tcp_path.h -- TCP transfers of an end host in ns-3 (the TCP NewReno/Cubic and DCTCP baselines).
//
// Why this file exists: issue 13's baselines run over ns-3's own TCP; this is the application side
// only (connections, framing of transfers on a byte stream, completion on the receiver), kept apart
// from the DLCP transport. DlcpHost (dlcp_transport.h) owns one TcpPath and hands it every
// non-DLCP transfer when the pFabric-like baseline is off.
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
#include "ns3/tcp-dctcp.h"

#include <sstream>
#include <string>

namespace dlcpsim {

// The DCTCP baseline as Linux runs it: ns-3's TcpDctcp with Linux's floor on its window reduction.
// ns-3 3.44's TcpDctcp::GetSsThresh returns cwnd * (1 - alpha / 2) with no floor (a 2,726-byte window
// at alpha = 1 gives 1,363 bytes, below one 1,448-byte segment); PRR then sets the window to that
// during CWR, and with nothing in flight ns-3 neither sends (it waits for a full segment's window)
// nor runs a timer: the sender stalls for good (issue 13, docs/simulation.md "DCTCP window floor").
// Linux's dctcp_ssthresh is max(cwnd - cwnd * alpha / 2, 2 segments) (RFC 8257 section 3.3 follows it),
// as ns-3's own NewReno and Cubic already floor theirs at 2 segments. scenario.py installs this
// type as the "dctcp" mode's congestion control; everything else is TcpDctcp's.
class TcpDctcpFloor : public ns3::TcpDctcp {
 public:
  static ns3::TypeId GetTypeId() {
    static ns3::TypeId tid = ns3::TypeId("dlcpsim::TcpDctcpFloor")
                                 .SetParent<ns3::TcpDctcp>()
                                 .SetGroupName("Internet")
                                 .AddConstructor<TcpDctcpFloor>();
    return tid;
  }
  TcpDctcpFloor() = default;
  TcpDctcpFloor(const TcpDctcpFloor& other) = default;
  uint32_t GetSsThresh(ns3::Ptr<const ns3::TcpSocketState> tcb, uint32_t bytesInFlight) override {
    uint32_t reduced = ns3::TcpDctcp::GetSsThresh(tcb, bytesInFlight), floor = 2 * tcb->m_segmentSize;
    if (reduced < floor) {                 // how often the floor mattered (diagnostics, per process)
      ++floored;
      if (reduced < tcb->m_segmentSize) ++belowOneSegment;
    }
    return std::max(reduced, floor);
  }
  // reductions that ns-3's TcpDctcp would have taken below 2 segments / below 1 segment
  static inline uint64_t floored = 0, belowOneSegment = 0;
  // an accepted socket forks its listener's algorithm: keep the floor there too
  ns3::Ptr<ns3::TcpCongestionOps> Fork() override { return ns3::CopyObject<TcpDctcpFloor>(this); }
};

// ns-3's TcpSocketBase with one repair: ns-3 3.44 counts duplicate ACKs in CA_CWR (the window
// reduction after an ECN echo, i.e. DCTCP) but never enters recovery from there, and an ACK past the
// CWR point returns the socket to CA_OPEN without clearing that count. The next SACK-carrying ACK then
// meets a stale count in CA_OPEN and the wheel's NS_ASSERT "From OPEN->DISORDER but with N dup ACKs"
// aborts the whole run (DCTCP with web-search background at load 0.6: scale-16 at 3.38 ms, with 430).
// In CA_OPEN ns-3 itself requires the count to be 0 (its DupAck asserts exactly that), so this socket
// clears a stale count when an ACK arrives in CA_OPEN; a run that stock ns-3 completes never has one
// there, so its events and results are unchanged (tests/simulation/test_sim_tcp_dupack.py checks both).
class TcpSocketStaleDupAck : public ns3::TcpSocketBase {
 public:
  static ns3::TypeId GetTypeId() {
    static ns3::TypeId tid = ns3::TypeId("dlcpsim::TcpSocketStaleDupAck")
                                 .SetParent<ns3::TcpSocketBase>()
                                 .SetGroupName("Internet")
                                 .AddConstructor<TcpSocketStaleDupAck>();
    return tid;
  }
  ns3::TypeId GetInstanceTypeId() const override { return GetTypeId(); }
  TcpSocketStaleDupAck() = default;
  TcpSocketStaleDupAck(const TcpSocketStaleDupAck& other) = default;
  // A socket as TcpL4Protocol::CreateSocket makes one (its RTT estimator, congestion control and
  // recovery types), of this class, registered with the node's TCP.
  static ns3::Ptr<ns3::Socket> Create(ns3::Ptr<ns3::Node> node) {
    auto tcp = node->GetObject<ns3::TcpL4Protocol>();
    ns3::TypeIdValue rttType, ccType, recType;
    tcp->GetAttribute("RttEstimatorType", rttType);
    tcp->GetAttribute("SocketType", ccType);
    tcp->GetAttribute("RecoveryType", recType);
    ns3::ObjectFactory rtt(rttType.Get().GetName()), cc(ccType.Get().GetName()), rec(recType.Get().GetName());
    auto r = rtt.Create<ns3::RttEstimator>();
    auto s = ns3::CreateObject<TcpSocketStaleDupAck>();
    auto algo = cc.Create<ns3::TcpCongestionOps>();
    auto recovery = rec.Create<ns3::TcpRecoveryOps>();
    s->SetNode(node);
    s->SetTcp(tcp);
    s->SetRtt(r);
    s->SetCongestionControlAlgorithm(algo);
    s->SetRecoveryAlgorithm(recovery);
    tcp->AddSocket(s);
    return s;
  }
  static inline uint64_t staleCleared = 0;     // ACKs that met a stale count (per process)
 protected:
  ns3::Ptr<ns3::TcpSocketBase> Fork() override { return ns3::CopyObject<TcpSocketStaleDupAck>(this); }
  void ProcessAck(const ns3::SequenceNumber32& ackNumber, bool scoreboardUpdated, uint32_t currentDelivered,
                  const ns3::SequenceNumber32& oldHeadSequence, bool receivedData) override {
    if (m_tcb->m_congState == ns3::TcpSocketState::CA_OPEN && m_dupAckCount != 0) {
      m_dupAckCount = 0;
      ++staleCleared;
    }
    ns3::TcpSocketBase::ProcessAck(ackNumber, scoreboardUpdated, currentDelivered, oldHeadSequence, receivedData);
  }
};

// One host's TCP side: a listener on kTcpPort and the connections it opened.
class TcpPath {
 public:
  // The node this path's sockets live on (DlcpHost, before anything else: a transfer scheduled at
  // t = 0 may start before the application does).
  void SetNode(ns3::Ptr<ns3::Node> node) { m_node = node; }
  // Listen on kTcpPort of ``node`` (DlcpHost::StartApplication).
  void Start(ns3::Ptr<ns3::Node> node) {
    m_node = node;
    m_listen = TcpSocketStaleDupAck::Create(node);
    m_listen->Bind(ns3::InetSocketAddress(ns3::Ipv4Address::GetAny(), kTcpPort));
    m_listen->Listen();
    m_listen->SetAcceptCallback(ns3::MakeNullCallback<bool, ns3::Ptr<ns3::Socket>, const ns3::Address&>(),
                                ns3::MakeCallback(&TcpPath::OnAccept, this));
  }
  // A connection carries transfers one after another, each as [transfer id: 4 bytes][its bytes].
  // Training traffic (pushes, pulls) uses one persistent connection per peer, opened when the job
  // starts (as ps-lite/Gloo keep theirs); background flows get a connection each, closed after.
  struct TcpConn { ns3::Ptr<ns3::Socket> s; std::deque<uint32_t> q; uint64_t left = 0; bool header = true;
                   bool persistent = false, connected = false; };
 public:
  // Open the persistent connection to host ``dst`` now (training jobs, when they start).
  void Preconnect(uint32_t dst) {
    if (!m_persistent.count(dst)) m_persistent[dst] = OpenConn(dst, true);
  }
 private:
  ns3::Socket* OpenConn(uint32_t dst, bool persistent) {
    SimNet& net = SimNet::Get();
    auto s = TcpSocketStaleDupAck::Create(m_node);
    s->Bind();
    TcpConn& c = m_conns[ns3::PeekPointer(s)];
    c.s = s;
    c.persistent = persistent;
    s->SetConnectCallback(ns3::MakeCallback(&TcpPath::OnConnected, this), ns3::MakeNullCallback<void, ns3::Ptr<ns3::Socket>>());
    s->SetSendCallback(ns3::MakeCallback(&TcpPath::OnSendSpace, this));
    s->Connect(ns3::InetSocketAddress(ns3::Ipv4Address(net.addr[dst]), kTcpPort));
    return ns3::PeekPointer(s);
  }
 public:
  // Send transfer ``id`` (this host is its source).
  void StartTransfer(uint32_t id) {
    SimNet& net = SimNet::Get();
    const TransferRec& r = net.transfers[id];
    ns3::Socket* s;
    if (r.kind == 2) {
      s = OpenConn(r.dst, false);
    } else {
      Preconnect(r.dst);
      s = m_persistent[r.dst];
    }
    TcpConn& c = m_conns[s];
    c.q.push_back(id);
    if (c.connected) Fill(c.s);
  }
  // One line per connection, for diagnosing a stalled transfer: "out" (opened here): transfers
  // queued, bytes of the current one not yet handed to the socket, socket tx available / buffered /
  // in flight; "in" (accepted): the transfer being received, its bytes still expected, bytes unread.
  std::string Describe() const {
    std::ostringstream os;
    for (const auto& kv : m_conns) {
      const TcpConn& c = kv.second;
      auto tcp = ns3::DynamicCast<ns3::TcpSocketBase>(c.s);
      os << "out q=" << c.q.size() << " head=" << (c.q.empty() ? -1 : (int64_t)c.q.front()) << " left=" << c.left
         << " header=" << c.header << " connected=" << c.connected << " txAvail=" << c.s->GetTxAvailable();
      if (tcp) os << " txBuf=" << tcp->GetTxBuffer()->Size() << " inFlight=" << tcp->GetTxBuffer()->BytesInFlight();
      os << "\n";
    }
    for (const auto& kv : m_tcpIn)
      os << "in id=" << kv.second.id << " left=" << kv.second.left << " hdrGot=" << kv.second.hdrGot
         << " unread=" << kv.first->GetRxAvailable() << "\n";
    return os.str();
  }
  void OnConnected(ns3::Ptr<ns3::Socket> s) {
    auto it = m_conns.find(ns3::PeekPointer(s));
    if (it == m_conns.end()) return;
    it->second.connected = true;
    Fill(s);
  }
  void OnSendSpace(ns3::Ptr<ns3::Socket> s, uint32_t) { Fill(s); }
  void Fill(ns3::Ptr<ns3::Socket> s) {
    auto it = m_conns.find(ns3::PeekPointer(s));
    if (it == m_conns.end() || !it->second.connected) return;
    TcpConn& c = it->second;
    while (!c.q.empty()) {
      uint32_t id = c.q.front();
      if (c.header) {
        if (s->GetTxAvailable() < 4) return;
        uint8_t h[4] = {(uint8_t)(id >> 24), (uint8_t)(id >> 16), (uint8_t)(id >> 8), (uint8_t)id};
        s->Send(ns3::Create<ns3::Packet>(h, 4));
        c.header = false;
        c.left = SimNet::Get().transfers[id].bytes;
      }
      while (c.left > 0) {
        uint32_t room = s->GetTxAvailable();
        if (room == 0) return;
        uint32_t n = (uint32_t)std::min<uint64_t>({c.left, room, 65536});
        int sent = s->Send(ns3::Create<ns3::Packet>(n));
        if (sent <= 0) return;
        c.left -= (uint64_t)sent;
      }
      c.q.pop_front();
      c.header = true;
      if (!c.persistent) {
        s->Close();
        m_conns.erase(it);
        return;
      }
    }
  }
  struct TcpIn { int64_t id = -1; uint8_t hdr[4]; uint32_t hdrGot = 0; uint64_t left = 0; };
  void OnAccept(ns3::Ptr<ns3::Socket> s, const ns3::Address&) {
    m_tcpIn[ns3::PeekPointer(s)] = TcpIn();
    m_tcpSockets.push_back(s);
    s->SetRecvCallback(ns3::MakeCallback(&TcpPath::OnTcpRecv, this));
    s->SetCloseCallbacks(ns3::MakeCallback(&TcpPath::OnPeerClose, this), ns3::MakeCallback(&TcpPath::OnPeerError, this));
  }
  // The sender closed (its FIN, after all its data): close this side too, as an application does when
  // a read returns 0. Before, accepted sockets stayed in CLOSE_WAIT and their senders in FIN_WAIT_2
  // for the whole run, and every node's endpoint list (ns-3 looks endpoints up by walking it, for
  // every packet received) grew with every background flow it ever sent or received.
  void OnPeerClose(ns3::Ptr<ns3::Socket> s) {
    if (!m_tcpIn.erase(ns3::PeekPointer(s))) return;
    s->Close();
    peerCloses++;
  }
  void OnPeerError(ns3::Ptr<ns3::Socket> s) { m_tcpIn.erase(ns3::PeekPointer(s)); }
  uint64_t peerCloses = 0;                     // accepted connections closed after their sender's FIN
  void OnTcpRecv(ns3::Ptr<ns3::Socket> s) {
    SimNet& net = SimNet::Get();
    TcpIn& in = m_tcpIn[ns3::PeekPointer(s)];
    ns3::Ptr<ns3::Packet> p;
    while ((p = s->Recv())) {
      uint32_t size = p->GetSize(), off = 0;
      while (off < size) {
        if (in.id < 0) {                       // the next transfer's id
          uint32_t take = std::min<uint32_t>(4 - in.hdrGot, size - off);
          uint8_t buf[4];
          p->CreateFragment(off, take)->CopyData(buf, take);
          for (uint32_t i = 0; i < take; ++i) in.hdr[in.hdrGot++] = buf[i];
          off += take;
          if (in.hdrGot < 4) break;
          in.hdrGot = 0;
          in.id = Get32(in.hdr);
          in.left = net.transfers[in.id].bytes;
        }
        uint32_t take = (uint32_t)std::min<uint64_t>(in.left, size - off);
        in.left -= take;
        off += take;
        if (in.left == 0) {
          net.Complete((uint32_t)in.id);
          in.id = -1;
        }
      }
    }
  }

  ns3::Ptr<ns3::Node> m_node;
  ns3::Ptr<ns3::Socket> m_listen;
  std::vector<ns3::Ptr<ns3::Socket>> m_tcpSockets;
  std::map<ns3::Socket*, TcpConn> m_conns;
  std::map<uint32_t, ns3::Socket*> m_persistent;
  std::map<ns3::Socket*, TcpIn> m_tcpIn;
};

}  // namespace dlcpsim
