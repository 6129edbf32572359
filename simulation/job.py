"""One simulated training run: a PS job (or a one-shot incast) over DLCP's bounded-loss transport or
a TCP baseline, with background traffic, on a built fabric -> per-transfer and per-iteration records.

Why this exists: it is the plain scenario script behind `dlcp-sim --workload ps-train|ps-incast`.
Python builds the network (scenario.build_network), the C++ hosts (dlcp_transport.h: DlcpHost per
host, PsJob, Background) and then only calls Simulator::Run in slices to print progress; every
packet, timer and completion is handled in C++. Modes:

* ``dlcp``: gradient pushes and parameter pulls over DLCP (bounded loss ``loss_bound`` for
  gradients, 0 for parameters), switch ports DlcpQueueDisc; background TCP NewReno;
* ``tcp-newreno`` / ``tcp-cubic`` / ``dctcp``: every transfer over that TCP (one connection per
  transfer), switch ports as in scenario.py (FIFO, or RED marking for DCTCP).
"""

from __future__ import annotations

import multiprocessing
import resource
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field

from controller.netconfig import Policy
from simulation.scenario import build_network, switch_counters
from simulation.topology import Topology
from simulation.workload import PsWorkload

KINDS = {0: "gradient", 1: "parameter", 2: "background"}


@dataclass
class JobSpec:
    """What to run besides the fabric and the mode."""
    workload: PsWorkload | None            # None: no training job
    background_cdf: tuple[list[float], list[float]] | None = None
    background_name: str = ""
    load: float = 0.0                       # share of each host link offered as background
    loss_bound: float = 0.10                # DLCP gradients (host_agent TagPolicy default)
    seed: int = 1
    max_sim_s: float = 1.0                  # stop here even if iterations are left
    background_until_s: float | None = None  # no new background flow after (default: max_sim_s)
    progress: bool = True
    holdoff_s: float = 20e-6
    rto_min_s: float = 1e-3
    flows: list[tuple[int, int, int, float, int]] = field(default_factory=list)  # (src, dst, bytes, start, layer): one-shot gradients


@dataclass
class JobResult:
    mode: str
    transfers: list[dict]
    iterations: list[dict]
    counters: dict
    sim_time_s: float
    events: int
    run_wall_s: float                       # inside Simulator::Run (C++)
    build_wall_s: float                     # Python + cppyy: building the network and the hosts
    collect_wall_s: float
    max_rss_mb: float
    finished: bool
    extra: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in ("mode", "counters", "sim_time_s", "events", "run_wall_s",
                                              "build_wall_s", "collect_wall_s", "max_rss_mb", "finished",
                                              "extra")}


def run_job(topo: Topology, policy: Policy, mode: str, spec: JobSpec) -> JobResult:
    """Build, run until the job's last iteration closed (or ``max_sim_s``), collect."""
    t0 = time.perf_counter()
    net = build_network(topo, policy, mode)
    ns, sim = net.ns, net.sim
    simnet = sim.Net()
    simnet.Reset()
    cfg = simnet.cfg
    cfg.holdoff = spec.holdoff_s
    cfg.rtoInit = cfg.rtoMin = spec.rto_min_s
    rate = {lk.a: lk.rate_bps for lk in topo.links if lk.a in net.host_ip}
    rate |= {lk.b: lk.rate_bps for lk in topo.links if lk.b in net.host_ip}
    for h in topo.hosts:
        simnet.addr.push_back(net.host_ip[h])
        simnet.lineRate.push_back(rate[h])
    for i, h in enumerate(topo.hosts):
        sim.NewHost(net.nodes[h], i)
    job = None
    dlcp = mode == "dlcp"
    if spec.workload is not None:
        w = spec.workload
        job = sim.PsJob()
        job.Configure(0, list(range(1, len(topo.hosts))), w.group_bytes, w.layer_class, w.forward_s,
                      w.backward_s, w.iterations, dlcp, spec.loss_bound)
        job.Start()
    for src, dst, nbytes, start, layer in spec.flows:
        tid = simnet.Add(src, dst, nbytes, layer, 0, dlcp, spec.loss_bound)
        sim.ScheduleTransfer(tid, start)
    bg = None
    if spec.background_cdf is not None and spec.load > 0:
        bg = sim.Background()
        xs, ps = spec.background_cdf
        until = spec.background_until_s if spec.background_until_s is not None else spec.max_sim_s
        bg.Configure(list(range(len(topo.hosts))), xs, ps, spec.load, until, spec.seed)
        bg.Start()
    build = time.perf_counter() - t0

    t1 = time.perf_counter()
    step = max(spec.max_sim_s / 200, 50e-6)
    now = 0.0
    finished = False
    last_print = 0.0
    while now < spec.max_sim_s - 1e-12:
        ns.Simulator.Stop(ns.Seconds(min(step, spec.max_sim_s - now)))
        ns.Simulator.Run()
        now = ns.Simulator.Now().GetSeconds()
        if job is not None and job.FinishedWorkers() == job.Workers():
            finished = True
        elif job is None and spec.flows and _all_flows_done(simnet, len(spec.flows)):
            finished = True
        wall = time.perf_counter() - t1
        if spec.progress and (finished or wall - last_print > 1.0 or now >= spec.max_sim_s - 1e-12):
            last_print = wall
            events = int(ns.Simulator.GetEventCount())
            done_it = min((_closed_iterations(job, w) for w in range(job.Workers())), default=0) if job else 0
            frac = now / spec.max_sim_s
            bar = "#" * int(30 * frac) + "-" * (30 - int(30 * frac))
            print(f"\r  [{bar}] {mode}: sim {now * 1e3:8.2f} ms, iterations {done_it}/"
                  f"{spec.workload.iterations if spec.workload else 0}, {events:,} events, "
                  f"{events / max(wall, 1e-9):,.0f} events/s", end="", file=sys.stderr, flush=True)
        if finished:
            break
    if spec.progress:
        print("", file=sys.stderr)
    run_wall = time.perf_counter() - t1
    events = int(ns.Simulator.GetEventCount())

    t2 = time.perf_counter()
    transfers = []
    for i in range(int(simnet.transfers.size())):
        r = simnet.transfers[i]
        end = float(r.end)
        rec = {"mode": mode, "id": i, "kind": KINDS[int(r.kind)], "src": topo.hosts[int(r.src)],
               "dst": topo.hosts[int(r.dst)], "bytes": int(r.bytes), "layer_class": int(r.layer),
               "iteration": int(r.iteration), "start_s": float(r.start), "completed": end >= 0,
               "fct_s": end - float(r.start) if end >= 0 else None, "dlcp": bool(r.dlcp)}
        if r.dlcp:
            rec |= {"packets": int(r.packets), "critical": int(r.critical), "droppable": int(r.droppable),
                    "sent": int(r.sent), "retx": int(r.retx), "probes": int(r.probes), "rounds": int(r.rounds),
                    "zero_filled": int(r.zeroFilled), "ce_marks": int(r.ceMarks), "loss_bound": float(r.lossBound)}
        transfers.append(rec)
    iterations = []
    if job is not None:
        for wk in range(job.Workers()):
            for it in range(job.Iterations()):
                a, b = float(job.FwdDone(wk, it)), float(job.FwdDone(wk, it + 1))
                iterations.append({"mode": mode, "worker": topo.hosts[wk + 1], "iteration": it,
                                   "iter_s": b - a if a >= 0 and b >= 0 else None})
    counters = switch_counters(mode, net.qdiscs, net.routers)
    counters |= {"dlcp_data_packets": int(simnet.dataPackets), "dlcp_control_packets": int(simnet.ctrlPackets)}
    extra = {"background_started": int(bg.Started()) if bg is not None else 0}
    ns.Simulator.Destroy()
    collect = time.perf_counter() - t2
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return JobResult(mode, transfers, iterations, counters, now, events, run_wall, build, collect, rss,
                     finished, extra)


def _all_flows_done(simnet, n: int) -> bool:
    return all(float(simnet.transfers[i].end) >= 0 for i in range(n))


def _closed_iterations(job, worker: int) -> int:
    n = 0
    while n < job.Iterations() and float(job.FwdDone(worker, n + 1)) >= 0:
        n += 1
    return n


def run_job_fresh(topo: Topology, policy: Policy, mode: str, spec: JobSpec) -> JobResult:
    """``run_job`` in a fresh process (ns-3 keeps state across runs in one process)."""
    with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"),
                             max_tasks_per_child=1) as pool:
        return pool.submit(run_job, topo, policy, mode, spec).result()
