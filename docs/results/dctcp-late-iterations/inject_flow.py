"""Causal check of the slow-iteration mechanism: the goal command with ONE extra background flow into the PS.

Why this exists: in the goal command's DCTCP run (seed 1) iteration 5 is 6x slower than iterations 1-3 and
it coincides with a 26.5 MB background flow into the PS (h68 -> h0, 13.1-20.0 ms); the records show the
gradient connections stalling for sums of retransmission timeouts (late_iterations.py). A coincidence in
one run is not a cause. This re-runs the same command (same seed, so the same background: workloads.h
draws it open loop from its own random stream) with one more flow of that size into the PS at a chosen
time, and traces what the records cannot hold:

* every TCP connection whose peer is the PS, on the workers: ns-3's ``RTO`` (each timeout doubles it:
  an RTO that at least doubles is a timeout) and ``CongState`` (CA_RECOVERY: fast retransmit, CA_LOSS:
  timeout), with the connection's local port (the push connection's is ephemeral; 5000 is the worker's
  listener side of the PS's pull connection);
* the switch port into the PS: every packet its queue disc drops (source host and TCP port, so a
  dropped gradient segment is told from a background one) and the most packets queued per 10 µs.

Nothing in the simulation changes (trace sinks only read); the run's records before the extra flow starts
must equal the unmodified run's (``--compare DIR`` checks that and prints per-iteration FCTs side by side).

    python docs/results/dctcp-late-iterations/inject_flow.py --mode dctcp --seed 1 --src h68 --mbytes 26.5 \
        --at-ms 3.0 --max-sim-ms 6.5 --out DIR [--compare /work/s17-results/lead/dctcp10-s1] [--no-flow]

Writes DIR/transfers.jsonl, DIR/iterations.jsonl, DIR/trace.json and prints a summary. The goal command's
other settings are fixed here (paper-144, ps-train, ResNet-50 x 0.0005 in 4 groups, 10 iterations,
web-search background at load 0.6, loss bound 0.1), as in ``dlcp-sim``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

LISTEN_PORT = 5000          # switch_model/sim_net.h kTcpPort: a worker's accepted (pull) connection
TRACE_CPP = r"""
#include "ns3/inet-socket-address.h"
#include "ns3/ipv4-queue-disc-item.h"
#include "ns3/object-vector.h"
#include "ns3/point-to-point-channel.h"
#include "ns3/point-to-point-net-device.h"
#include "ns3/queue-disc.h"
#include "ns3/simulator.h"
#include "ns3/tcp-header.h"
#include "ns3/tcp-l4-protocol.h"
#include "ns3/tcp-socket-base.h"
#include "ns3/traffic-control-layer.h"
#include <map>
#include <set>
#include <vector>
namespace h18a {
struct Rto { double t; uint32_t sock; double was, now; };
struct Cong { double t; uint32_t sock; int was, now; };
struct Drop { double t; uint32_t src; uint32_t sport; };
struct Sock { uint32_t host; uint32_t port; };
std::vector<Rto> rto;
std::vector<Cong> cong;
std::vector<Drop> drops;
std::vector<Sock> socks;
std::map<int64_t, uint32_t> qmax;
std::set<ns3::Socket*> seen;
void OnRto(uint32_t sock, ns3::Time a, ns3::Time b) {
  rto.push_back({ns3::Simulator::Now().GetSeconds(), sock, a.GetSeconds(), b.GetSeconds()});
}
void OnCong(uint32_t sock, ns3::TcpSocketState::TcpCongState_t a, ns3::TcpSocketState::TcpCongState_t b) {
  cong.push_back({ns3::Simulator::Now().GetSeconds(), sock, (int)a, (int)b});
}
void OnDrop(ns3::Ptr<const ns3::QueueDiscItem> item) {
  uint32_t src = 0, sport = 0;
  auto ip = ns3::DynamicCast<const ns3::Ipv4QueueDiscItem>(item);
  if (ip) {
    src = ip->GetHeader().GetSource().Get();
    ns3::TcpHeader th;
    if (ip->GetHeader().GetProtocol() == 6 && item->GetPacket()->PeekHeader(th)) sport = th.GetSourcePort();
  }
  drops.push_back({ns3::Simulator::Now().GetSeconds(), src, sport});
}
void OnQueue(uint32_t, uint32_t v) {
  auto& m = qmax[ns3::Simulator::Now().GetNanoSeconds() / 10000];
  if (v > m) m = v;
}
// Trace every TCP socket of ``node`` connected to ``peerAddr`` not traced yet; how many were added.
uint32_t HookSockets(ns3::Ptr<ns3::Node> node, uint32_t host, uint32_t peerAddr) {
  auto tcp = node->GetObject<ns3::TcpL4Protocol>();
  ns3::ObjectVectorValue v;
  tcp->GetAttribute("SocketList", v);
  uint32_t n = 0;
  for (auto it = v.Begin(); it != v.End(); ++it) {
    auto s = ns3::DynamicCast<ns3::TcpSocketBase>(it->second);
    if (!s || seen.count(ns3::PeekPointer(s))) continue;
    ns3::Address peer, self;
    if (s->GetPeerName(peer) != 0 || !ns3::InetSocketAddress::IsMatchingType(peer)) continue;
    if (ns3::InetSocketAddress::ConvertFrom(peer).GetIpv4().Get() != peerAddr) continue;
    if (s->GetSockName(self) != 0) continue;
    seen.insert(ns3::PeekPointer(s));
    uint32_t id = socks.size();
    socks.push_back({host, ns3::InetSocketAddress::ConvertFrom(self).GetPort()});
    s->TraceConnectWithoutContext("RTO", ns3::MakeBoundCallback(&OnRto, id));
    s->TraceConnectWithoutContext("CongState", ns3::MakeBoundCallback(&OnCong, id));
    ++n;
  }
  return n;
}
// Trace the queue disc of ``sw``'s port towards ``host``.
bool HookPort(ns3::Ptr<ns3::Node> sw, ns3::Ptr<ns3::Node> host) {
  for (uint32_t i = 0; i < sw->GetNDevices(); ++i) {
    auto dev = ns3::DynamicCast<ns3::PointToPointNetDevice>(sw->GetDevice(i));
    if (!dev) continue;
    auto ch = dev->GetChannel();
    for (std::size_t k = 0; k < ch->GetNDevices(); ++k) {
      if (ch->GetDevice(k)->GetNode() != host) continue;
      auto qd = sw->GetObject<ns3::TrafficControlLayer>()->GetRootQueueDiscOnDevice(dev);
      if (!qd) return false;
      qd->TraceConnectWithoutContext("Drop", ns3::MakeCallback(&OnDrop));
      qd->TraceConnectWithoutContext("PacketsInQueue", ns3::MakeCallback(&OnQueue));
      return true;
    }
  }
  return false;
}
}  // namespace h18a
"""
HOOK_UNTIL_S = 200e-6       # sockets to the PS opened by then are traced (the job opens its connections at 0)


def run_traced(topo, policy, mode: str, spec, ps: str):
    """In a fresh process: simulation.job.run_job with the trace sinks attached; (JobResult, trace dict)."""
    import cppyy

    from simulation import job

    held: dict = {}
    build, check = job.build_network, job.stop_requested

    def build_and_keep(*args, **kwargs):
        held["net"] = build(*args, **kwargs)
        return held["net"]

    def hook_then_check():
        net = held.get("net")
        if net is not None:
            if "defined" not in held:
                cppyy.cppdef(TRACE_CPP)
                held["defined"] = True
                held["port"] = bool(cppyy.gbl.h18a.HookPort(net.nodes[topo.host_switch(ps)], net.nodes[ps]))
            now = cppyy.gbl.ns3.Simulator.Now().GetSeconds()
            if now <= HOOK_UNTIL_S:
                for i, h in enumerate(topo.hosts):
                    if h != ps:
                        cppyy.gbl.h18a.HookSockets(net.nodes[h], i, net.host_ip[ps])
        return check()

    job.build_network, job.stop_requested = build_and_keep, hook_then_check
    try:
        r = job.run_job(topo, policy, mode, spec)
    finally:
        job.build_network, job.stop_requested = build, check
    t = cppyy.gbl.h18a
    addr = {int(held["net"].host_ip[h]): h for h in topo.hosts}
    trace = {
        "port_traced": held.get("port", False),
        "sockets": [{"host": topo.hosts[s.host], "port": int(s.port)} for s in t.socks],
        "rto": [(e.t, int(e.sock), e.was, e.now) for e in t.rto],
        "cong": [(e.t, int(e.sock), int(e.was), int(e.now)) for e in t.cong],
        "drops": [(e.t, addr.get(int(e.src), str(int(e.src))), int(e.sport)) for e in t.drops],
        "qmax_10us": [(int(k) * 10e-6, int(v)) for k, v in t.qmax],
    }
    return r, trace


def summarize(recs: list[dict], trace: dict, ps: str, rto_min: float) -> None:
    """Per iteration: gradient FCT, timeouts and fast recoveries of the push connections, drops at the PS
    port (gradient segments / other), deepest queue."""
    socks = trace["sockets"]
    push = {i for i, s in enumerate(socks) if s["port"] != LISTEN_PORT}
    push_port = {(s["host"], s["port"]) for i, s in enumerate(socks) if i in push}
    grads = [r for r in recs if r["kind"] == "gradient"]
    its = sorted({r["iteration"] for r in grads})
    span = {}
    for it in its:
        g = [r for r in grads if r["iteration"] == it]
        done = [r for r in g if r["completed"]]
        end = max((r["start_s"] + r["fct_s"] for r in done), default=float("nan"))
        span[it] = (min(r["start_s"] for r in g), end if len(done) == len(g) else float("inf"), g, done)
    timeouts = [(t, s) for t, s, a, b in trace["rto"] if s in push and b >= 1.9 * a and a > 0]
    into_loss = [(t, s) for t, s, a, b in trace["cong"] if s in push and b == 4]
    into_rec = [(t, s) for t, s, a, b in trace["cong"] if s in push and b == 3]
    print(f"traced: {len(socks)} connections to {ps} ({len(push)} push), PS port traced: {trace['port_traced']}")
    print("\n| iteration | window (ms) | gradients done | FCT mean (µs) | p99 (µs) | push timeouts (RTO doublings) | "
          "push conns timed out | entries to CA_LOSS / CA_RECOVERY | drops at PS port: gradient / other | "
          "deepest queue (packets) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for it in its:
        a, b, g, done = span[it]
        f = sorted(r["fct_s"] * 1e6 for r in done)

        def inside(t: float, a: float = a, b: float = b) -> bool:
            return a <= t < b
        to = [x for x in timeouts if inside(x[0])]
        dg = sum(1 for t, src, port in trace["drops"] if inside(t) and (src, port) in push_port)
        do = sum(1 for t, src, port in trace["drops"] if inside(t) and (src, port) not in push_port)
        q = max((v for t, v in trace["qmax_10us"] if inside(t)), default=0)
        p99 = f[max(0, -(-99 * len(f) // 100) - 1)] if f else float("nan")
        print(f"| {it} | {a * 1e3:.3f} - {b * 1e3:.3f} | {len(done)}/{len(g)} | "
              f"{(sum(f) / len(f)) if f else float('nan'):.1f} | {p99:.1f} | {len(to)} | {len({s for _, s in to})} | "
              f"{sum(1 for t, _ in into_loss if inside(t))} / {sum(1 for t, _ in into_rec if inside(t))} | "
              f"{dg} / {do} | {q} |")
    backoff = defaultdict(int)
    for _t, s, a, b in trace["rto"]:
        if s in push and b >= 1.9 * a and a > 0:
            backoff[round(b / rto_min)] += 1
    print("\nPush connections' timeouts by the RTO they set (in minimum RTOs; 2 = first timeout from the floor, "
          "4 = second, ...): " + ", ".join(f"{k} R: {v}" for k, v in sorted(backoff.items())))


def compare(recs: list[dict], base_dir: str, before_s: float) -> None:
    """Records that started before ``before_s`` must equal the unmodified run's; then per-iteration FCTs."""
    path = Path(base_dir) / "transfers.jsonl"
    if not path.is_file():
        sys.exit(f"inject_flow: --compare {base_dir}: no transfers.jsonl there")
    base = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]

    def key(r: dict) -> tuple:
        return (r["kind"], r["src"], r["dst"], r["bytes"], round(r["start_s"], 12), r["iteration"], r["layer_class"])
    ended = {key(r): r["fct_s"] for r in base
             if r["completed"] and r["start_s"] + r["fct_s"] < before_s}
    mine = {key(r): r["fct_s"] for r in recs if r["completed"] and r["start_s"] + r["fct_s"] < before_s}
    same = sum(1 for k, v in ended.items() if k in mine and mine[k] == v)
    print(f"\nrecords that ended before {before_s * 1e3:g} ms: {len(ended)} in {base_dir}, {len(mine)} here, "
          f"{same} identical (key and FCT) -> {'IDENTICAL' if same == len(ended) == len(mine) else 'DIFFER'}")
    print("\n| iteration | gradients done here / there | FCT mean here / there (µs) | p99 here / there (µs) |")
    print("|---|---|---|---|")
    for it in sorted({r["iteration"] for r in recs if r["kind"] == "gradient"}):
        rows = []
        for rs in (recs, base):
            f = sorted(r["fct_s"] * 1e6 for r in rs if r["kind"] == "gradient" and r["iteration"] == it and r["completed"])
            rows.append((len(f), sum(f) / len(f), f[max(0, -(-99 * len(f) // 100) - 1)]) if f else (0, float("nan"),
                                                                                                   float("nan")))
        print(f"| {it} | {rows[0][0]} / {rows[1][0]} | {rows[0][1]:.1f} / {rows[1][1]:.1f} | "
              f"{rows[0][2]:.1f} / {rows[1][2]:.1f} |")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", default="dctcp", choices=("dctcp", "dlcp", "tcp-cubic", "tcp-newreno"))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--src", default="h68", help="the extra flow's source host (comma-separated: several flows)")
    ap.add_argument("--ps", default="h0")
    ap.add_argument("--mbytes", default="26.5", help="the extra flow's size (MB, 1e6 bytes; comma-separated: one each)")
    ap.add_argument("--at-ms", default="3.0", help="when the extra flow starts (ms; comma-separated: one each)")
    ap.add_argument("--no-flow", action="store_true", help="trace the unmodified run")
    ap.add_argument("--max-sim-ms", type=float, default=6.5)
    ap.add_argument("--out", required=True)
    ap.add_argument("--compare", help="the unmodified run's result directory (same mode and seed)")
    a = ap.parse_args(argv)
    from simulation.fresh import run_fresh
    from simulation.job import JobSpec
    from simulation.policy import policy_for
    from simulation.scenario import fabric_timer_floor_s
    from simulation.topology import preset
    from simulation.workload import load_cdf, ps_workload

    topo = preset("paper-144")
    srcs = [x.strip() for x in a.src.split(",")]
    try:
        sizes = [float(x) for x in a.mbytes.split(",")]
        ats = [float(x) for x in a.at_ms.split(",")]
    except ValueError:
        ap.error(f"--mbytes {a.mbytes!r} / --at-ms {a.at_ms!r}: expected numbers, comma-separated")
    if not len(srcs) == len(sizes) == len(ats):
        ap.error(f"--src, --mbytes, --at-ms: {len(srcs)}, {len(sizes)}, {len(ats)} values; give one of each per flow")
    for name, host in [("--src", h) for h in srcs] + [("--ps", a.ps)]:
        if host not in topo.hosts:
            ap.error(f"{name} {host}: not a host of paper-144 (h0-h143)")
    if a.ps in srcs or min(sizes) <= 0 or not all(0 <= t < a.max_sim_ms for t in ats):
        ap.error("need every --src != --ps, --mbytes > 0 and 0 <= --at-ms < --max-sim-ms")
    policy = policy_for(min(lk.rate_bps for lk in topo.links), None)
    host_bps = max(lk.rate_bps for lk in topo.links if lk.a in topo.hosts or lk.b in topo.hosts)
    work = ps_workload("resnet50", 0.0005, 4, 10, host_bps, 1.0)
    idx = {h: i for i, h in enumerate(topo.hosts)}
    bulk = [] if a.no_flow else [(idx[h], idx[a.ps], int(mb * 1e6), t / 1e3) for h, mb, t in zip(srcs, sizes, ats,
                                                                                                 strict=True)]
    spec = JobSpec(work, load_cdf("web-search"), "web-search", 0.6, 0.1, a.seed, a.max_sim_ms / 1e3, bulk=bulk)
    r, trace = run_fresh(run_traced, topo, policy, a.mode, spec, a.ps)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    recs = [t | {"load": 0.6} for t in r.transfers]
    (out / "transfers.jsonl").write_text("".join(json.dumps(t) + "\n" for t in recs))
    (out / "iterations.jsonl").write_text("".join(json.dumps(t | {"load": 0.6}) + "\n" for t in r.iterations))
    (out / "trace.json").write_text(json.dumps(trace))
    (out / "run.json").write_text(json.dumps(r.as_dict() | {"args": vars(a)}, indent=1, default=str))
    extra = "none" if a.no_flow else ", ".join(f"{h} -> {a.ps} {mb:g} MB at {t:g} ms" for h, mb, t in zip(srcs, sizes, ats,
                                                                                                          strict=True))
    print(f"{a.mode} seed {a.seed}, extra flow(s): {extra}; "
          f"{r.sim_time_s * 1e3:.2f} ms simulated, {r.events:,} events, {r.extra['run_cpu_s']:.0f} s CPU")
    summarize(recs, trace, a.ps, fabric_timer_floor_s(topo, policy))
    if a.compare:
        compare(recs, a.compare, min(ats) / 1e3 if not a.no_flow else a.max_sim_ms / 1e3)
    return 0


if __name__ == "__main__":
    sys.exit(main())
