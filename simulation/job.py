"""One simulated training run: a PS or ring all-reduce job (or a one-shot incast) over DLCP's
bounded-loss transport or a TCP baseline, with background traffic, on a built fabric -> per-transfer
and per-iteration records.

Why this exists: it is the plain scenario script behind `dlcp-sim --workload ps-train|ring-train|ps-incast`
(and simulation/crosscheck.py's Mininet scenarios: several jobs on chosen hosts, long-lived bulk
TCP flows). Python builds the network (scenario.build_network), the C++ hosts (switch_model/dlcp_transport.h:
DlcpHost per host; workloads.h: PsJob, Background; ring_allreduce.h: RingJob) and then only calls Simulator::Run in slices to print progress; every
packet, timer and completion is handled in C++. Modes:

* ``dlcp``: gradient pushes and parameter pulls over DLCP (bounded loss ``loss_bound`` for
  gradients, 0 for parameters), switch ports DlcpQueueDisc; background TCP NewReno;
* ``tcp-newreno`` / ``tcp-cubic`` / ``dctcp``: every transfer over that TCP (training traffic over
  persistent connections per peer, a background flow over its own), switch ports as in
  scenario.py (FIFO, or RED marking for DCTCP).
"""

from __future__ import annotations

import os
import resource
import sys
import time
from dataclasses import dataclass, field

from controller.netconfig import Policy
from simulation import tcp_fastpath
from simulation.fresh import run_fresh, stop_requested
from simulation.scenario import (
    _longest_host_path_links,
    build_network,
    fabric_base_rtt_s,
    fabric_timer_floor_s,
    switch_counters,
)
from simulation.topology import Topology
from simulation.workload import PsWorkload

KINDS = {0: "gradient", 1: "parameter", 2: "background"}


COLLECTIVES = ("ps", "ring")


@dataclass
class JobDef:
    """One training job on chosen hosts (indices into the topology's hosts): PS = hosts[0] is the
    server, the rest workers; ring = ranks in ring order (rank r sends to rank r + 1)."""
    name: str
    collective: str
    workload: PsWorkload
    hosts: list[int]


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
    progress_lines_s: float = 0.0           # > 0: progress as one whole line every this many wall seconds
    holdoff_s: float = 20e-6
    rto_min_s: float | None = None          # DLCP's RTO floor; None: the fabric's (scenario.fabric_timer_floor_s)
    flows: list[tuple[int, int, int, float, int]] = field(default_factory=list)  # (src, dst, bytes, start, layer): one-shot gradients
    collective: str = "ps"                  # the default job of ``workload``: PS on h0 <- all, or a ring of all
    jobs: list[JobDef] = field(default_factory=list)     # explicit jobs (then ``workload`` is ignored)
    bulk: list[tuple[int, int, int, float]] = field(default_factory=list)  # (src, dst, bytes, start): TCP, kind background
    bulk_tcp: str | None = None             # e.g. "TcpCubic": every TCP socket of the run (Mininet's bulk flows)
    transport: dict[str, float] = field(default_factory=dict)  # TransportConfig fields to override (e.g. decreaseGap)


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
    """Build, run until the job's last iteration closed (or ``max_sim_s``, or a stop signal:
    simulation.fresh.stop_requested, then ``extra["stopped_early"]``), collect."""
    t0 = time.perf_counter()
    net = build_network(topo, policy, mode)
    ns, sim = net.ns, net.sim
    simnet = sim.Net()
    simnet.Reset()
    sim.TcpSocketStaleDupAck.staleCleared = 0     # per process: count this run's only (tcp_path.h)
    cfg = simnet.cfg
    cfg.holdoff = spec.holdoff_s
    floor = fabric_timer_floor_s(topo, policy)     # TCP's MinRto on this fabric too (build_network)
    cfg.rtoInit = cfg.rtoMin = spec.rto_min_s if spec.rto_min_s is not None else floor
    cfg.baseRtt = fabric_base_rtt_s(topo)          # the granted window's BDP (dlcp_transport.h overcommit)
    cfg.openRetryAfter = fabric_control_rtt_s(topo, policy)   # first contact's OPEN retry (sim_net.h openRetry)
    if spec.rto_min_s is None:      # host_agent's Linux-timer floors (1 ms here) become the fabric's; lower knobs stay
        cfg.writeOffMin, cfg.grantWaitMin = min(cfg.writeOffMin, floor), min(cfg.grantWaitMin, floor)
    for name, value in spec.transport.items():
        if not hasattr(cfg, name):
            raise ValueError(f"JobSpec.transport: TransportConfig has no field '{name}'")
        if name == "hostPriority":          # the host ports are built by then (scenario.build_links)
            raise ValueError("JobSpec.transport: set hostPriority as a default (transport_knobs), not per run")
        setattr(cfg, name, value)
    rate = {lk.a: lk.rate_bps for lk in topo.links if lk.a in net.host_ip}
    rate |= {lk.b: lk.rate_bps for lk in topo.links if lk.b in net.host_ip}
    for h in topo.hosts:
        simnet.addr.push_back(net.host_ip[h])
        simnet.lineRate.push_back(rate[h])
    if spec.bulk_tcp:
        ns.Config.Set("/NodeList/*/$ns3::TcpL4Protocol/SocketType",
                      ns.TypeIdValue(ns.TypeId.LookupByName(f"ns3::{spec.bulk_tcp}")))
    for i, h in enumerate(topo.hosts):
        sim.NewHost(net.nodes[h], i)
        sim.WatchHostQueue(net.nodes[h], i)      # waits in the host's egress queue (counters "host_queue")
    dlcp = mode == "dlcp"
    # PS jobs first: PsJob takes SimNet's completion hook, a RingJob chains to whoever had it
    defs = sorted(_job_defs(spec, len(topo.hosts)), key=lambda d: d.collective == "ring")
    jobs = [(d, _start(sim, d, dlcp, spec.loss_bound)) for d in defs]
    job = jobs[0][1] if jobs else None
    for src, dst, nbytes, start, layer in spec.flows:
        tid = simnet.Add(src, dst, nbytes, layer, 0, dlcp, spec.loss_bound)
        sim.ScheduleTransfer(tid, start)
    for src, dst, nbytes, start in spec.bulk:
        sim.ScheduleTransfer(simnet.Add(src, dst, nbytes, 0, 2, False, 0.0), start)
    bg = None
    if spec.background_cdf is not None and spec.load > 0:
        bg = sim.Background()
        xs, ps = spec.background_cdf
        until = spec.background_until_s if spec.background_until_s is not None else spec.max_sim_s
        bg.Configure(list(range(len(topo.hosts))), xs, ps, spec.load, until, spec.seed)
        bg.Start()
    build = time.perf_counter() - t0

    t1, c1 = time.perf_counter(), time.process_time()
    step = max(spec.max_sim_s / 200, 50e-6)
    now = 0.0
    finished = False
    stopped = None
    last_print = 0.0
    while now < spec.max_sim_s - 1e-12:
        stopped = stop_requested()          # SIGINT/SIGTERM (simulation.fresh): end here, as at max_sim_s
        if stopped:
            break
        ns.Simulator.Stop(ns.Seconds(min(step, spec.max_sim_s - now)))
        ns.Simulator.Run()
        now = ns.Simulator.Now().GetSeconds()
        if jobs and all(j.FinishedWorkers() == j.Workers() for _, j in jobs):
            finished = True
        elif job is None and spec.flows and _all_flows_done(simnet, len(spec.flows)):
            finished = True
        wall = time.perf_counter() - t1
        every = spec.progress_lines_s or 1.0
        if spec.progress and (finished or wall - last_print > every or now >= spec.max_sim_s - 1e-12):
            last_print = wall
            events = int(ns.Simulator.GetEventCount())
            done_it = min((_closed_iterations(j, w) for _, j in jobs for w in range(j.Workers())), default=0)
            state = (f"{mode}: sim {now * 1e3:8.2f} ms, iterations {done_it}/{job.Iterations() if job else 0}, "
                     f"{events:,} events, {events / max(wall, 1e-9):,.0f} events/s")
            if spec.progress_lines_s:       # one whole line per print: runs in parallel share stderr
                print(f"  {state}", file=sys.stderr, flush=True)
            else:
                frac = now / spec.max_sim_s
                bar = "#" * int(30 * frac) + "-" * (30 - int(30 * frac))
                print(f"\r  [{bar}] {state}", end="", file=sys.stderr, flush=True)
        if finished:
            break
    if spec.progress and not spec.progress_lines_s:
        print("", file=sys.stderr)
    run_wall, run_cpu = time.perf_counter() - t1, time.process_time() - c1
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
                    "zero_filled": int(r.zeroFilled), "ce_marks": int(r.ceMarks), "loss_bound": float(r.lossBound),
                    "grant_wait_s": float(r.grantWait), "hold_wait_s": float(r.holdWait),
                    "token_wait_s": float(r.tokenWait), "window_wait_s": float(r.windowWait),
                    "answer_wait_s": float(r.answerWait) if r.answerWait >= 0 else None}
        transfers.append(rec)
    iterations = []
    for d, j in jobs:
        members = d.hosts[1:] if d.collective == "ps" else d.hosts
        for wk in range(j.Workers()):
            for it in range(j.Iterations()):
                a, b = float(j.FwdDone(wk, it)), float(j.FwdDone(wk, it + 1))
                iterations.append({"mode": mode, "job": d.name, "worker": topo.hosts[members[wk]], "iteration": it,
                                   "iter_s": b - a if a >= 0 and b >= 0 else None})
    counters = switch_counters(mode, net.qdiscs, net.routers)
    if dlcp:
        counters["tail_drops_by_kind"] = _tail_drops_by_kind(net.qdiscs)
    counters |= {"dlcp_data_packets": int(simnet.dataPackets), "dlcp_control_packets": int(simnet.ctrlPackets),
                 "tcp_stale_dupacks_cleared": int(sim.TcpSocketStaleDupAck.staleCleared)}
    if "transport" in counters:                 # DLCP: standby grants (dlcp_transport.h Regrant)
        counters["transport"] |= {"standby_grants": bool(simnet.cfg.standbyGrants),
                                  "standby_grants_sent": int(simnet.standbyGrantsSent),
                                  "open_retries": int(simnet.openRetries)}
    counters["host_queue"] = host_queue_waits(simnet, topo)
    extra = {"background_started": int(bg.Started()) if bg is not None else 0,
             "ld_preload": os.environ.get("LD_PRELOAD", ""),       # the malloc it ran with (simulation.fresh)
             "run_cpu_s": round(run_cpu, 3),                        # CPU time of the Run loop (this process)
             "tcp_fastpath": tcp_fastpath.calls()}                  # NextSeg calls shortened / stock, or None
    if stopped:                     # not a complete run: it ended early on a signal
        extra["stopped_early"] = {"signal": stopped, "sim_ms": round(now * 1e3, 6)}
    ns.Simulator.Destroy()
    collect = time.perf_counter() - t2
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return JobResult(mode, transfers, iterations, counters, now, events, run_wall, build, collect, rss,
                     finished, extra)


HOST_QUEUE_KINDS = ("dlcp_data", "dlcp_control", "other")    # sim_net.h SimNet::hostQueueWait's order


def host_queue_waits(simnet, topo: Topology) -> dict:
    """How long packets waited in the hosts' egress queue discs (sim_net.h OnHostDequeue), by kind
    (DLCP DATA, DLCP control messages, other: TCP), summed over every host ("all") and for the
    first host alone (h0: a PS job's server): packets, mean and max wait in µs, packets over 10 µs."""
    def one(ws: list) -> dict:
        out = {}
        for k, kind in enumerate(HOST_QUEUE_KINDS):
            n = sum(int(w[k].n) for w in ws)
            total = sum(float(w[k].sum) for w in ws)
            out[kind] = {"packets": n, "mean_us": round(1e6 * total / n, 3) if n else None,
                         "max_us": round(1e6 * max((float(w[k].max) for w in ws), default=0.0), 3),
                         "over_10us": sum(int(w[k].over10us) for w in ws), "drops": sum(int(w[k].drops) for w in ws)}
        return out

    waits = [simnet.hostQueueWait[i] for i in range(int(simnet.hostQueueWait.size()))]
    return {"all": one(waits), topo.hosts[0]: one(waits[:1])}


# dlcp_switch.h MsgKind, in order: what a tail-dropped DLCP packet was
DROP_KINDS = ("OPEN", "GRANT", "HOLD", "ACK", "ECN_ECHO", "BITMAP", "DONE", "PROBE", "DATA", "RETX", "OTHER")


def _tail_drops_by_kind(qdiscs: list) -> dict[str, int]:
    """Tail drops of DLCP packets summed over the switch ports, as 'q<queue>/<kind>' -> count."""
    out: dict[str, int] = {}
    for qd in qdiscs:
        for q in range(8):
            for k, kind in enumerate(DROP_KINDS):
                n = int(qd.TailDropsOfKind(q, k))
                if n:
                    out[f"q{q}/{kind}"] = out.get(f"q{q}/{kind}", 0) + n
    return out


def fabric_control_rtt_s(topo: Topology, policy: Policy) -> float:
    """The longest round trip of a DLCP control message without a loss: the fabric's base RTT plus
    the control queue (queue_depth full-size packets; control has a queue of its own, the policy's
    top one) drained at every switch port of the longest host path, there and back: 31.6 µs on
    paper-144. A first contact's OPEN unanswered for longer was lost (dlcp_transport.h OpenRetry)."""
    queue_bits = policy.queue_depth * 1500 * 8
    drain = sum(queue_bits / lk.rate_bps for lk in _longest_host_path_links(topo)[1:])
    return fabric_base_rtt_s(topo) + 2 * drain


def _job_defs(spec: JobSpec, n_hosts: int) -> list[JobDef]:
    if spec.jobs:
        return spec.jobs
    if spec.workload is None:
        return []
    if spec.collective not in COLLECTIVES:
        raise ValueError(f"unknown collective '{spec.collective}' (known: {', '.join(COLLECTIVES)})")
    return [JobDef(f"{spec.collective}-train", spec.collective, spec.workload, list(range(n_hosts)))]


def _start(sim, d: JobDef, dlcp: bool, loss_bound: float):
    """Configure and start one job in C++ (PsJob / RingJob); returns it."""
    w = d.workload
    if d.collective == "ring":
        from simulation.ring_job import start_ring
        return start_ring(d.hosts, w, dlcp, loss_bound)
    job = sim.PsJob()
    job.Configure(d.hosts[0], d.hosts[1:], w.group_bytes, w.layer_class, w.forward_s, w.backward_s, w.iterations,
                  dlcp, loss_bound)
    job.Start()
    return job


def _all_flows_done(simnet, n: int) -> bool:
    return all(float(simnet.transfers[i].end) >= 0 for i in range(n))


def _closed_iterations(job, worker: int) -> int:
    n = 0
    while n < job.Iterations() and float(job.FwdDone(worker, n + 1)) >= 0:
        n += 1
    return n


def run_job_fresh(topo: Topology, policy: Policy, mode: str, spec: JobSpec) -> JobResult:
    """``run_job`` in a fresh process (ns-3 keeps state across runs in one process; simulation.fresh)."""
    return run_fresh(run_job, topo, policy, mode, spec)
