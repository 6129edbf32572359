"""Simulator benchmark: events/s of the DLCP switch model in ns-3 against stock ns-3 in the same run.

What it measures: the same fabric (small-16: 4 leaves x 4 hosts, 2 spines, 10 Gbit/s) and the same
traffic (every host runs a BulkSend TCP flow to the host 5 places on, PacketSink receivers, ns-3's
NewReno) simulated for the same time twice per trial, trials interleaved:

* baseline: stock ns-3 switches: FifoQueueDisc of the same total buffer on every switch port,
  Ipv4GlobalRouting (ns-3's own routes; one path per destination, no ECMP);
* model: the DLCP switch model as dlcp-sim builds it (simulation.scenario.build_network, mode
  ``dlcp``): DlcpQueueDisc (8 strict-priority bands, priority map, per-(queue, magnitude)
  drop/ECN lookups) and DlcpRouting (per-flow CRC hash over ECMP members) on every switch port.

A third run per trial, model-alt, is the model under ALT_SCHEDULER (CalendarScheduler) instead of
dlcp-sim's scenario.SCHEDULER (ns-3's default MapScheduler, 4-6 % of a 144-host run's CPU in
inserts): model-alt's events per CPU second over the model's is what switching would buy (the event
counts must be identical: every ns-3 scheduler orders by time, then insertion; --preset paper-144
runs it with many pending events).

The figure is the model's events per CPU second over the baseline's (median of the per-trial
ratios): ns-3's own event count (Simulator::GetEventCount) over the process CPU time of
Simulator::Run (C++ only: no Python runs during it). CPU time, not wall time, because on the
shared machine other sessions' load swung wall-clock events/s 2-3x between consecutive trials;
wall-clock figures are printed too. The two networks do not see the same number of events (ECMP
spreads the flows over both spines in the model, ns-3's global routing takes one path), so
events/s, not run time, is compared. A ratio near 1 says
the per-packet decision costs about what a FIFO and a global route cost; a ratio well below 1
would say the model's C++ is the bottleneck of large runs. The ns-3 import and model compile
(20-60 s) are paid once and reported apart.

    .venv/bin/python benchmarks/bench_sim_events.py [--sim-ms 3] [--trials 3] [--preset small-16] [--quick [--with-ns3]]

Needs the ns3 wheel (make test installs it); says so and exits 0 where it is absent.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmode import add_quick_flag, add_with_ns3_flag, announce, ns3_measures  # noqa: E402

SINK_PORT = 6000
ALT_SCHEDULER = "ns3::CalendarScheduler"   # the candidate against scenario.SCHEDULER (ns-3's default MapScheduler)


def _traffic(ns, nodes, hosts: list[str], host_ip: dict[str, int], sim_s: float) -> None:
    """BulkSend from every host to the host 5 places on (crosses leaves), PacketSinks."""
    n = len(hosts)
    for i, h in enumerate(hosts):
        dst = hosts[(i + 5) % n]
        sink = ns.PacketSinkHelper("ns3::TcpSocketFactory",
                                   ns.InetSocketAddress(ns.Ipv4Address.GetAny(), SINK_PORT).ConvertTo())
        sink.Install(nodes[dst]).Start(ns.Seconds(0))
        bulk = ns.BulkSendHelper("ns3::TcpSocketFactory",
                                 ns.InetSocketAddress(ns.Ipv4Address(host_ip[dst]), SINK_PORT).ConvertTo())
        bulk.SetAttribute("MaxBytes", ns.UintegerValue(0))
        apps = bulk.Install(nodes[h])
        apps.Start(ns.MicroSeconds(1 + i))
        apps.Stop(ns.Seconds(sim_s))


def _baseline(ns, topo, total_buffer: int) -> tuple[dict, dict]:
    """Stock ns-3: the same links (scenario.build_links), FifoQueueDisc everywhere, Ipv4GlobalRouting."""
    from simulation.scenario import build_links, use_scheduler

    ns.Simulator.Destroy()
    use_scheduler(ns)
    ns.Config.Reset()
    ns.Config.SetDefault("ns3::DropTailQueue<Packet>::MaxSize", ns.QueueSizeValue(ns.QueueSize("1p")))
    ns.Config.SetDefault("ns3::TcpSocket::SegmentSize", ns.UintegerValue(1448))
    nodes = {name: ns.CreateObject[ns.Node]() for name in topo.hosts + topo.switches}

    def fifo(dev, _link) -> None:
        tch = ns.TrafficControlHelper()
        tch.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize", ns.QueueSizeValue(ns.QueueSize(f"{total_buffer}p")))
        tch.Install(dev)

    _, host_ip = build_links(ns, topo, nodes, fifo)
    ns.Ipv4GlobalRoutingHelper.PopulateRoutingTables()
    return nodes, host_ip


def _run(ns, sim_s: float) -> tuple[int, float, float]:
    """(events, wall s, CPU s) of one Simulator::Run."""
    before = int(ns.Simulator.GetEventCount())
    ns.Simulator.Stop(ns.Seconds(sim_s))
    t0, c0 = time.perf_counter(), time.process_time()
    ns.Simulator.Run()
    return int(ns.Simulator.GetEventCount()) - before, time.perf_counter() - t0, time.process_time() - c0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sim-ms", type=float, default=3.0, help="simulated time per run (ms)")
    ap.add_argument("--trials", type=int, default=3, help="interleaved baseline/model/model-alt triples")
    ap.add_argument("--preset", default="small-16", help="fabric (simulation.topology presets), e.g. paper-144")
    add_with_ns3_flag(ap)
    add_quick_flag(ap)
    a = ap.parse_args(argv)
    announce(a.quick)
    if not ns3_measures("bench_sim_events", a.quick, a.with_ns3):
        return 0
    if a.quick:
        a.sim_ms, a.trials = 0.2, 1
    from simulation import switch_model
    from simulation.policy import FABRIC_POLICY, load_policy
    from simulation.scenario import SCHEDULER, build_network
    from simulation.topology import preset

    t0 = time.perf_counter()
    ns, _ = switch_model.ns3()
    print(f"ns-3 import + model compile: {time.perf_counter() - t0:.1f} s (once)")
    topo = preset(a.preset)
    policy = load_policy(FABRIC_POLICY)
    sim_s = a.sim_ms / 1000
    kinds = ("baseline", "model", "model-alt")
    rates: dict[str, list[float]] = {k: [] for k in kinds}
    walls: dict[str, list[float]] = {k: [] for k in kinds}
    counts: dict[str, list[int]] = {k: [] for k in kinds}
    for trial in range(a.trials):
        for which in kinds:
            if which == "baseline":
                nodes, host_ip = _baseline(ns, topo, policy.queues * policy.queue_depth)
            else:
                net = build_network(topo, policy, "dlcp", ALT_SCHEDULER if which == "model-alt" else None)
                nodes, host_ip = net.nodes, net.host_ip
            _traffic(ns, nodes, topo.hosts, host_ip, sim_s)
            events, wall, cpu = _run(ns, sim_s)
            rates[which].append(events / cpu)
            walls[which].append(events / wall)
            counts[which].append(events)
            print(f"trial {trial + 1} {which:8s}: {events:>9,} events, {cpu:6.2f} s CPU = {events / cpu:>10,.0f} "
                  f"events/CPU-s ({wall:6.2f} s wall = {events / wall:>10,.0f} events/s)")
            ns.Simulator.Destroy()
    base, model = statistics.median(rates["baseline"]), statistics.median(rates["model"])
    pairs = [m / b for m, b in zip(rates["model"], rates["baseline"], strict=True)]
    wall_pairs = [m / b for m, b in zip(walls["model"], walls["baseline"], strict=True)]
    print(f"median events/CPU-s: baseline (stock ns-3 FIFO + global routing) {base:,.0f}; DLCP switch model {model:,.0f}")
    print(f"ratio model / baseline (median of trials): {statistics.median(pairs):.2f}x CPU "
          f"[{', '.join(f'{x:.2f}' for x in pairs)}], {statistics.median(wall_pairs):.2f}x wall "
          f"[{', '.join(f'{x:.2f}' for x in wall_pairs)}]  ({a.trials} interleaved trials, {a.sim_ms:g} ms simulated each)")
    # the scheduler: the same model, the same traffic, ALT_SCHEDULER against SCHEDULER (dlcp-sim's); events must
    # match (schedulers order by time, then insertion), so CPU time per event is compared
    sched = [o / m for m, o in zip(rates["model"], rates["model-alt"], strict=True)]
    same = counts["model"] == counts["model-alt"]
    print(f"ratio {ALT_SCHEDULER} / {SCHEDULER} (model, median of trials): {statistics.median(sched):.2f}x "
          f"events/CPU-s [{', '.join(f'{x:.2f}' for x in sched)}]; event counts "
          f"{'identical' if same else 'DIFFER: ' + str(counts['model']) + ' vs ' + str(counts['model-alt'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
