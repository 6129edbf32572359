// workloads.h -- what drives the end hosts in dlcp-sim: the PS training job and background traffic.
//
// Why this file exists: issue 13 asks for PS training iterations (backprop order,
// compute/communication overlap, as host_agent/overlap.py) and flow-size-CDF background traffic,
// scheduled in C++ so no Python runs during Simulator::Run. They start transfers on DlcpHost
// (dlcp_transport.h), which picks the transport; the ring job is ring_allreduce.h.
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

// One synchronous parameter-server job (host_agent/overlap.py): per iteration each worker runs the
// backward pass layer group by layer group in reverse model order and pushes each group's gradient
// as soon as it is ready; the PS pulls a group back to every worker once all workers pushed it;
// the next forward pass runs group by group as each group's parameters arrive.
// iteration time = fwd_done(i+1) - fwd_done(i).
class PsJob {
 public:
  void Configure(uint32_t ps, const std::vector<uint32_t>& workers, const std::vector<uint64_t>& groupBytes,
                 const std::vector<uint8_t>& groupLayer, const std::vector<double>& fwd, const std::vector<double>& bwd,
                 uint32_t iterations, bool dlcp, double lossBound) {
    m_ps = ps; m_workers = workers; m_bytes = groupBytes; m_layer = groupLayer; m_fwd = fwd; m_bwd = bwd;
    m_iters = iterations; m_dlcp = dlcp; m_p = lossBound;
    m_pushed.assign(iterations, std::vector<uint32_t>(groupBytes.size(), 0));
    W = workers.size();
    G = groupBytes.size();
    m_pulled.assign(W, std::vector<int32_t>(G, -1));
    m_fwdDone.assign(W, std::vector<double>(iterations + 1, -1));
    m_fwdPos.assign(W, 0);
    m_fwdBusy.assign(W, false);
    m_iterOf.assign(W, 0);
  }
  void Start() {
    SimNet::Get().onDone = [this](uint32_t id) { this->OnDone(id); };
    ns3::Simulator::Schedule(ns3::NanoSeconds(1), &PsJob::Begin, this);   // after the hosts started
  }
  double FwdDone(uint32_t w, uint32_t i) const { return m_fwdDone[w][i]; }
  uint32_t Iterations() const { return m_iters; }
  uint32_t Workers() const { return (uint32_t)W; }
  uint32_t FinishedWorkers() const {
    uint32_t n = 0;
    for (uint32_t w = 0; w < W; ++w) n += m_fwdDone[w][m_iters] >= 0;
    return n;
  }
  std::function<void(uint32_t)> background;   // chained: background transfers' completions

 private:
  struct Tag { uint32_t w, g, it; bool push; };
  void Begin() {
    SimNet& net = SimNet::Get();
    if (!m_dlcp && !net.cfg.pfabric) {         // TCP: the job's persistent connections, both ways
      for (uint32_t w = 0; w < W; ++w) {
        net.hosts[m_workers[w]]->Preconnect(m_ps);
        net.hosts[m_ps]->Preconnect(m_workers[w]);
      }
    }
    for (uint32_t w = 0; w < W; ++w) ForwardStep(w, 0);       // iteration 0's forward needs no pull
  }
  // forward pass of iteration ``it`` on worker w: group g may run once its parameters of it-1 arrived
  void ForwardStep(uint32_t w, uint32_t it) {
    if (m_fwdBusy[w]) return;
    uint32_t g = m_fwdPos[w];
    if (g == G) {                              // forward done: record, then the backward pass
      m_fwdDone[w][it] = ns3::Simulator::Now().GetSeconds();
      if (it == m_iters) return;
      m_fwdPos[w] = 0;
      double t = 0;
      for (int64_t k = (int64_t)G - 1; k >= 0; --k) {
        t += m_bwd[k];
        ns3::Simulator::Schedule(ns3::Seconds(t), &PsJob::Push, this, w, (uint32_t)k, it);
      }
      m_iterOf[w] = it + 1;
      return;
    }
    if (it > 0 && m_pulled[w][g] < (int32_t)(it - 1)) return;      // waits for the pull
    m_fwdBusy[w] = true;
    ns3::Simulator::Schedule(ns3::Seconds(m_fwd[g]), &PsJob::ForwardDone, this, w, it);
  }
  void ForwardDone(uint32_t w, uint32_t it) {
    m_fwdBusy[w] = false;
    m_fwdPos[w]++;
    ForwardStep(w, it);
  }
  void Push(uint32_t w, uint32_t g, uint32_t it) {
    SimNet& net = SimNet::Get();
    uint32_t id = net.Add(m_workers[w], m_ps, m_bytes[g], m_layer[g], 0, m_dlcp, m_p);
    net.transfers[id].iteration = (int32_t)it;
    m_tags[id] = Tag{w, g, it, true};
    net.hosts[m_workers[w]]->StartTransfer(id);
  }
  void OnDone(uint32_t id) {
    auto it = m_tags.find(id);
    if (it == m_tags.end()) { if (background) background(id); return; }
    Tag t = it->second;
    m_tags.erase(it);
    SimNet& net = SimNet::Get();
    if (t.push) {
      if (++m_pushed[t.it][t.g] < W) return;
      for (uint32_t w = 0; w < W; ++w) {       // all pushed: pull the group back to every worker
        uint32_t pid = net.Add(m_ps, m_workers[w], m_bytes[t.g], m_layer[t.g], 1, m_dlcp, 0.0);
        net.transfers[pid].iteration = (int32_t)t.it;
        m_tags[pid] = Tag{w, t.g, t.it, false};
        net.hosts[m_ps]->StartTransfer(pid);
      }
    } else {
      m_pulled[t.w][t.g] = (int32_t)t.it;
      if (m_iterOf[t.w] == t.it + 1) ForwardStep(t.w, t.it + 1);
    }
  }

  uint32_t m_ps = 0, m_iters = 0;
  size_t W = 0, G = 0;
  std::vector<uint32_t> m_workers;
  std::vector<uint64_t> m_bytes;
  std::vector<uint8_t> m_layer;
  std::vector<double> m_fwd, m_bwd;
  bool m_dlcp = false;
  double m_p = 0;
  std::vector<std::vector<uint32_t>> m_pushed;
  std::vector<std::vector<int32_t>> m_pulled;
  std::vector<std::vector<double>> m_fwdDone;
  std::vector<uint32_t> m_fwdPos, m_iterOf;
  std::vector<bool> m_fwdBusy;
  std::map<uint32_t, Tag> m_tags;
};

// Background: per host, Poisson flow arrivals to uniformly random other hosts with sizes from a
// flow-size CDF (piecewise linear between the published points), at ``load`` of the host's link.
class Background {
 public:
  void Configure(const std::vector<uint32_t>& hosts, const std::vector<double>& cdfBytes,
                 const std::vector<double>& cdfProb, double load, double until, uint64_t seed) {
    m_hosts = hosts; m_x = cdfBytes; m_p = cdfProb; m_load = load; m_until = until; m_seed = seed;
    double mean = 0;
    for (size_t i = 1; i < m_x.size(); ++i) mean += (m_p[i] - m_p[i - 1]) * (m_x[i] + m_x[i - 1]) / 2;
    m_mean = mean;
  }
  double MeanBytes() const { return m_mean; }
  void Start() {
    for (uint32_t h : m_hosts) Next(h);
  }
  uint32_t Started() const { return m_started; }

 private:
  double Uniform() { return (Rng64(m_seed) >> 11) * (1.0 / 9007199254740992.0); }
  void Next(uint32_t h) {
    SimNet& net = SimNet::Get();
    double lambda = m_load * (double)net.lineRate[h] / (8.0 * m_mean);   // flows per second
    double gap = -std::log(1.0 - Uniform()) / lambda;
    double at = ns3::Simulator::Now().GetSeconds() + gap;
    if (at >= m_until) return;
    ns3::Simulator::Schedule(ns3::Seconds(gap), &Background::Fire, this, h);
  }
  void Fire(uint32_t h) {
    SimNet& net = SimNet::Get();
    uint32_t dst = m_hosts[Rng64(m_seed) % m_hosts.size()];
    if (dst == h) dst = m_hosts[(std::find(m_hosts.begin(), m_hosts.end(), h) - m_hosts.begin() + 1) % m_hosts.size()];
    double u = Uniform(), size = m_x.back();
    for (size_t i = 1; i < m_x.size(); ++i) {
      if (u <= m_p[i]) {
        double f = m_p[i] > m_p[i - 1] ? (u - m_p[i - 1]) / (m_p[i] - m_p[i - 1]) : 1.0;
        size = m_x[i - 1] + f * (m_x[i] - m_x[i - 1]);
        break;
      }
    }
    uint32_t id = net.Add(h, dst, std::max<uint64_t>(1, (uint64_t)size), 0, 2, false, 0.0);
    m_started++;
    net.hosts[h]->StartTransfer(id);
    Next(h);
  }
  std::vector<uint32_t> m_hosts;
  std::vector<double> m_x, m_p;
  double m_load = 0, m_until = 0, m_mean = 1;
  uint64_t m_seed = 1;
  uint32_t m_started = 0;
};

// Python-side helpers (cppyy): build and read without touching per-packet paths.
inline ns3::Ptr<DlcpHost> NewHost(ns3::Ptr<ns3::Node> node, uint32_t index) {
  auto h = ns3::CreateObject<DlcpHost>();
  h->Setup(index, 1);
  node->AddApplication(h);
  h->SetStartTime(ns3::Seconds(0));
  SimNet::Get().hosts.push_back(h);
  return h;
}
inline void ScheduleTransfer(uint32_t id, double at) {
  SimNet& net = SimNet::Get();
  ns3::Simulator::Schedule(ns3::Seconds(at), &DlcpHost::StartTransfer, net.hosts[net.transfers[id].src], id);
}
inline SimNet& Net() { return SimNet::Get(); }

}  // namespace dlcpsim
