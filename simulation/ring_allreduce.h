// ring_allreduce.h -- the ring all-reduce training job for ns-3, in C++ (dlcp-sim --workload ring-train).
//
// Why this file exists: issue 13 asks for ring all-reduce beside the PS job, with backprop order
// and compute/communication overlap as in the Mininet evaluation. This mirrors
// host_agent/overlap.py (allreduce_worker_udp / allreduce_worker_tcp) and host_agent/collectives.py
// (ring_steps): every rank runs the backward pass group (bucket) by group in reverse model order;
// a bucket is queued for all-reduce as soon as its gradients are ready; one bucket at a time, in
// the order they became ready, goes through N-1 reduce-scatter steps (gradient transfers to the
// right neighbour with the loss bound) then N-1 all-gather steps (parameter transfers, loss bound
// 0); a step ends when the rank's own send was received by its right neighbour AND its left
// neighbour's send of the same step arrived (ep.run([h, r]) in ring_steps). The next forward pass
// runs group by group as each group's reduced bucket of the previous iteration is complete.
// iteration time = fwd_done(i+1) - fwd_done(i). Over TCP each rank keeps one persistent
// connection to its right neighbour, opened when the job starts (Gloo's pairs, TcpRing).
// It uses sim_net.h's SimNet and dlcp_transport.h's DlcpHost and is compiled after them (simulation/ring_job.py).
#pragma once
#include <functional>
#include <map>
#include <vector>

namespace dlcpsim {

class RingJob {
 public:
  void Configure(const std::vector<uint32_t>& ranks, const std::vector<uint64_t>& groupBytes,
                 const std::vector<uint8_t>& groupLayer, const std::vector<double>& fwd, const std::vector<double>& bwd,
                 uint32_t iterations, bool dlcp, double lossBound) {
    m_ranks = ranks; m_bytes = groupBytes; m_layer = groupLayer; m_fwd = fwd; m_bwd = bwd;
    m_iters = iterations; m_dlcp = dlcp; m_p = lossBound;
    N = ranks.size();
    G = groupBytes.size();
    m_reduced.assign(N, std::vector<int32_t>(G, -1));
    m_fwdDone.assign(N, std::vector<double>(iterations + 1, -1));
    m_fwdPos.assign(N, 0);
    m_fwdBusy.assign(N, false);
    m_iterOf.assign(N, 0);
    m_ready.assign(N, {});
    m_cur.assign(N, Cur{});
    m_steps.assign(N, {});
  }
  void Start() {
    SimNet& net = SimNet::Get();
    m_prev = net.onDone;                       // chained: another job's or nobody's completions
    net.onDone = [this](uint32_t id) { this->OnDone(id); };
    ns3::Simulator::Schedule(ns3::NanoSeconds(1), &RingJob::Begin, this);
  }
  double FwdDone(uint32_t w, uint32_t i) const { return m_fwdDone[w][i]; }
  uint32_t Iterations() const { return m_iters; }
  uint32_t Workers() const { return (uint32_t)N; }
  uint32_t FinishedWorkers() const {
    uint32_t n = 0;
    for (size_t w = 0; w < N; ++w) n += m_fwdDone[w][m_iters] >= 0;
    return n;
  }
  uint64_t ChunkBytes(uint32_t g, uint32_t c) const {   // np.linspace(0, elems, N + 1).astype(int64)
    uint64_t elems = m_bytes[g] / kElem;
    uint64_t lo = elems * c / N, hi = elems * (c + 1) / N;
    return std::max<uint64_t>(kElem, (hi - lo) * kElem);
  }

 private:
  struct Tag { uint32_t w, g, it, step; };
  struct Cur { bool busy = false; uint32_t g = 0, it = 0, step = 0; };
  static constexpr uint8_t kSent = 1, kGot = 2;
  uint64_t Key(uint32_t it, uint32_t g, uint32_t step) const { return ((uint64_t)it * G + g) * 2 * N + step; }
  uint32_t Right(uint32_t w) const { return (uint32_t)((w + 1) % N); }

  void Begin() {
    SimNet& net = SimNet::Get();
    if (!m_dlcp)                               // TCP: one persistent connection per neighbour pair
      for (uint32_t w = 0; w < N; ++w) net.hosts[m_ranks[w]]->Preconnect(m_ranks[Right(w)]);
    for (uint32_t w = 0; w < N; ++w) ForwardStep(w, 0);
  }
  void ForwardStep(uint32_t w, uint32_t it) {
    if (m_fwdBusy[w]) return;
    uint32_t g = m_fwdPos[w];
    if (g == G) {
      m_fwdDone[w][it] = ns3::Simulator::Now().GetSeconds();
      if (it == m_iters) return;
      m_fwdPos[w] = 0;
      double t = 0;
      for (int64_t k = (int64_t)G - 1; k >= 0; --k) {     // backward: last group first
        t += m_bwd[k];
        ns3::Simulator::Schedule(ns3::Seconds(t), &RingJob::BucketReady, this, w, (uint32_t)k, it);
      }
      m_iterOf[w] = it + 1;
      return;
    }
    if (it > 0 && m_reduced[w][g] < (int32_t)(it - 1)) return;   // waits for the reduced bucket
    m_fwdBusy[w] = true;
    ns3::Simulator::Schedule(ns3::Seconds(m_fwd[g]), &RingJob::ForwardDone, this, w, it);
  }
  void ForwardDone(uint32_t w, uint32_t it) {
    m_fwdBusy[w] = false;
    m_fwdPos[w]++;
    ForwardStep(w, it);
  }
  void BucketReady(uint32_t w, uint32_t g, uint32_t it) {
    m_ready[w].push_back({g, it});
    NextBucket(w);
  }
  void NextBucket(uint32_t w) {
    Cur& c = m_cur[w];
    if (c.busy || m_ready[w].empty()) return;
    auto [g, it] = m_ready[w].front();
    m_ready[w].erase(m_ready[w].begin());
    c = Cur{true, g, it, 0};
    SendStep(w);
  }
  void SendStep(uint32_t w) {
    SimNet& net = SimNet::Get();
    Cur& c = m_cur[w];
    uint32_t n = (uint32_t)N, s = c.step;
    bool scatter = s < n - 1;                  // reduce-scatter: gradient, bound p; all-gather: parameter, 0
    uint32_t chunk = scatter ? (w + n - s % n) % n : (w + 1 + n - (s - (n - 1)) % n) % n;
    uint32_t id = net.Add(m_ranks[w], m_ranks[Right(w)], ChunkBytes(c.g, chunk), m_layer[c.g], scatter ? 0 : 1,
                          m_dlcp, scatter ? m_p : 0.0);
    net.transfers[id].iteration = (int32_t)c.it;
    m_tags[id] = Tag{w, c.g, c.it, s};
    net.hosts[m_ranks[w]]->StartTransfer(id);
  }
  void OnDone(uint32_t id) {
    auto found = m_tags.find(id);
    if (found == m_tags.end()) { if (m_prev) m_prev(id); return; }
    Tag t = found->second;
    m_tags.erase(found);
    uint64_t k = Key(t.it, t.g, t.step);
    m_steps[t.w][k] |= kSent;
    m_steps[Right(t.w)][k] |= kGot;
    Advance(t.w);
    Advance(Right(t.w));
  }
  void Advance(uint32_t w) {
    Cur& c = m_cur[w];
    if (!c.busy) return;
    auto st = m_steps[w].find(Key(c.it, c.g, c.step));
    if (st == m_steps[w].end() || st->second != (kSent | kGot)) return;
    m_steps[w].erase(st);
    if (++c.step < 2 * (N - 1)) { SendStep(w); return; }
    c.busy = false;
    m_reduced[w][c.g] = (int32_t)c.it;
    if (m_iterOf[w] == c.it + 1) ForwardStep(w, c.it + 1);
    NextBucket(w);
  }

  size_t N = 0, G = 0;
  uint32_t m_iters = 0;
  std::vector<uint32_t> m_ranks;
  std::vector<uint64_t> m_bytes;
  std::vector<uint8_t> m_layer;
  std::vector<double> m_fwd, m_bwd;
  bool m_dlcp = false;
  double m_p = 0;
  std::vector<std::vector<int32_t>> m_reduced;
  std::vector<std::vector<double>> m_fwdDone;
  std::vector<uint32_t> m_fwdPos, m_iterOf;
  std::vector<bool> m_fwdBusy;
  std::vector<std::vector<std::pair<uint32_t, uint32_t>>> m_ready;   // (group, iteration) in ready order
  std::vector<Cur> m_cur;
  std::vector<std::map<uint64_t, uint8_t>> m_steps;                   // per rank: step key -> sent/got bits
  std::map<uint32_t, Tag> m_tags;
  std::function<void(uint32_t)> m_prev;
};

}  // namespace dlcpsim
