// pfabric_queue.h -- the pFabric-like baseline's switch port and packet format, in C++ for ns-3.
//
// Why this file exists: issue 13 asks for a pFabric comparison (Alizadeh et al., "pFabric: Minimal
// Near-Optimal Datacenter Transport", SIGCOMM 2013). ns-3 has no part for it: PrioQueueDisc has a
// fixed number of FIFO bands, not per-packet priority order with eviction. This queue disc does
// what the paper's switch does: every packet carries one number, its flow's remaining size (the
// transport, DlcpHost's pFabric mode in dlcp_transport.h, stamps it); a port dequeues the earliest
// packet of the flow that holds the highest-priority (smallest) packet (the paper's starvation
// prevention), and when its small buffer is full an arriving packet whose priority is no better
// than the worst queued is dropped, otherwise the worst queued packet (the latest of that flow)
// is evicted to make room. Packets without the header (none in a pfabric run) get top priority.
#pragma once
#include <map>
#include <utility>

#include "ns3/core-module.h"
#include "ns3/network-module.h"
#include "ns3/internet-module.h"
#include "ns3/traffic-control-module.h"

namespace dlcpsim {

constexpr uint16_t kPfPort = 9391;            // UDP port of the pFabric-like transport
constexpr uint8_t kPfMagic = 'P', kPfData = 0, kPfAck = 1;
constexpr uint32_t kPfHeaderLen = 16;         // magic, type, 2 pad, priority (remaining bytes), transfer id, packet

// The port's buffer: a list in arrival order; the queue disc picks what leaves and what is evicted.
class PfabricBuffer : public ns3::Queue<ns3::QueueDiscItem> {
 public:
  static ns3::TypeId GetTypeId() {
    static ns3::TypeId tid = ns3::TypeId("dlcpsim::PfabricBuffer").SetParent<ns3::Queue<ns3::QueueDiscItem>>()
                                 .SetGroupName("TrafficControl").AddConstructor<PfabricBuffer>();
    return tid;
  }
  struct Key { uint32_t prio; uint64_t flow; };
  bool Enqueue(ns3::Ptr<ns3::QueueDiscItem> item) override {
    m_keys[ns3::PeekPointer(item)] = KeyOf(item);
    if (DoEnqueue(GetContainer().end(), item)) return true;
    m_keys.erase(ns3::PeekPointer(item));
    return false;
  }
  ns3::Ptr<ns3::QueueDiscItem> Dequeue() override {
    auto pos = Next();
    if (pos == GetContainer().end()) return nullptr;
    auto item = DoDequeue(pos);
    if (item) m_keys.erase(ns3::PeekPointer(item));
    return item;
  }
  ns3::Ptr<ns3::QueueDiscItem> Remove() override {
    auto item = DoRemove(GetContainer().begin());
    if (item) m_keys.erase(ns3::PeekPointer(item));
    return item;
  }
  ns3::Ptr<const ns3::QueueDiscItem> Peek() const override {
    auto pos = Next();
    return pos == GetContainer().end() ? nullptr : DoPeek(pos);
  }
  // Full buffer: true if ``item`` may enter after the worst queued packet was evicted (it was);
  // false if ``item`` itself is no better than the worst queued (the caller drops it).
  bool MakeRoomFor(ns3::Ptr<ns3::QueueDiscItem> item) {
    const auto& c = GetContainer();
    if (c.empty()) return true;
    Key k = KeyOf(item);
    auto worst = c.end();
    uint32_t worstPrio = 0;
    for (auto it = c.begin(); it != c.end(); ++it) {      // the latest packet of the lowest priority
      uint32_t p = m_keys.at(ns3::PeekPointer(*it)).prio;
      if (worst == c.end() || p >= worstPrio) { worst = it; worstPrio = p; }
    }
    if (k.prio >= worstPrio) return false;
    auto gone = DoRemove(worst);                  // counted by the queue disc as dropped after dequeue
    if (gone) m_keys.erase(ns3::PeekPointer(gone));
    return true;
  }
  static Key KeyOf(ns3::Ptr<const ns3::QueueDiscItem> item) {
    auto ip = ns3::DynamicCast<const ns3::Ipv4QueueDiscItem>(item);
    if (!ip || ip->GetHeader().GetProtocol() != 17) return {0, 0};
    uint8_t b[8 + kPfHeaderLen];
    if (item->GetPacket()->CopyData(b, sizeof(b)) < sizeof(b)) return {0, 0};
    uint16_t sport = (uint16_t)(b[0] << 8 | b[1]), dport = (uint16_t)(b[2] << 8 | b[3]);
    const uint8_t* h = b + 8;
    if ((sport != kPfPort && dport != kPfPort) || h[0] != kPfMagic) return {0, 0};
    uint32_t prio = (uint32_t)h[4] << 24 | (uint32_t)h[5] << 16 | (uint32_t)h[6] << 8 | h[7];
    uint32_t id = (uint32_t)h[8] << 24 | (uint32_t)h[9] << 16 | (uint32_t)h[10] << 8 | h[11];
    return {prio, ((uint64_t)h[1] << 32) | id};   // DATA and ACKs of a transfer are different flows
  }

 private:
  using ns3::Queue<ns3::QueueDiscItem>::GetContainer;
  // the earliest packet of the flow holding the highest-priority (smallest) packet
  ns3::Queue<ns3::QueueDiscItem>::ConstIterator Next() const {
    const auto& c = GetContainer();
    if (c.empty()) return c.end();
    uint32_t best = UINT32_MAX;
    uint64_t flow = 0;
    bool found = false;
    for (const auto& x : c) {
      const Key& k = m_keys.at(ns3::PeekPointer(x));
      if (!found || k.prio < best) { best = k.prio; flow = k.flow; found = true; }
    }
    for (auto it = c.begin(); it != c.end(); ++it)
      if (m_keys.at(ns3::PeekPointer(*it)).flow == flow) return it;
    return c.begin();
  }
  std::map<const ns3::QueueDiscItem*, Key> m_keys;
};

class PfabricQueueDisc : public ns3::QueueDisc {
 public:
  static ns3::TypeId GetTypeId() {
    static ns3::TypeId tid = ns3::TypeId("dlcpsim::PfabricQueueDisc").SetParent<ns3::QueueDisc>()
                                 .SetGroupName("TrafficControl").AddConstructor<PfabricQueueDisc>();
    return tid;
  }
  PfabricQueueDisc() : ns3::QueueDisc(ns3::QueueDiscSizePolicy::NO_LIMITS) {}
  void SetCapacity(uint32_t packets) { m_capacity = packets; }
  uint32_t Capacity() const { return m_capacity; }
  uint64_t Evicted() const { return m_evicted; }
  uint64_t Rejected() const { return m_rejected; }

 private:
  bool DoEnqueue(ns3::Ptr<ns3::QueueDiscItem> item) override {
    auto buf = ns3::DynamicCast<PfabricBuffer>(GetInternalQueue(0));
    if (buf->GetNPackets() >= m_capacity) {
      if (!buf->MakeRoomFor(item)) {
        m_rejected++;
        DropBeforeEnqueue(item, "pFabric: lowest priority on a full buffer");
        return false;
      }
      m_evicted++;
    }
    return buf->Enqueue(item);
  }
  ns3::Ptr<ns3::QueueDiscItem> DoDequeue() override { return GetInternalQueue(0)->Dequeue(); }
  bool CheckConfig() override {
    if (GetNInternalQueues() == 0) {
      auto buf = ns3::CreateObject<PfabricBuffer>();
      buf->SetMaxSize(ns3::QueueSize(ns3::QueueSizeUnit::PACKETS, 1u << 20));   // the disc enforces m_capacity
      AddInternalQueue(buf);
    }
    return GetNInternalQueues() == 1 && GetNQueueDiscClasses() == 0;
  }
  void InitializeParams() override {}

  uint32_t m_capacity = 24;
  uint64_t m_evicted = 0, m_rejected = 0;
};

}  // namespace dlcpsim
