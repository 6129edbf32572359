"""Simulator benchmark: events per CPU second of a TCP run with the TCP fast path against stock ns-3.

What it measures: the same dlcp-sim job (default: paper-144, DCTCP, PS job of ResNet-50 x 0.0005 in 4
groups, web-search background at load 0.6, seed 1; the goal command's run, cut at --sim-ms) run in a
fresh process (simulation.fresh, jemalloc as always) with stock ns-3's TcpTxBuffer
(``DLCP_SIM_TCP_FASTPATH=off``) and with simulation/tcp_fastpath.cc preloaded (``on``: the NextSeg cut
and the retransmission index; ``--arms off,nextseg,on`` adds session 15's NextSeg cut alone), arms
interleaved in each trial (off, on, off, on, ...). Figures: events per CPU second of the Run loop over
the whole run and over a later window (``--window-from-ms``: from the first slice that ends at or after
it to the end, where DCTCP's retransmissions take over), each arm over off in the same trial; median,
range and a 95 % t interval of the mean of the per-trial ratios. CPU time, not wall time, because the
machine is shared. The window is read at each of the run loop's slices (every 0.1 ms simulated at
most): the benchmark's run process wraps simulation.job's per-slice stop check with one that also notes
ns-3's simulated time, event count and the process's CPU time, and changes nothing else. Every arm must
simulate the same thing: the script prints each run's digest (SHA-256 over every transfer and
iteration record, the switch counters and the event count) and says DIFFER if any does not match. The
ns-3 import and the network build are outside the figures (each process pays them).

    .venv/bin/python benchmarks/bench_sim_tcp_fastpath.py [--preset paper-144] [--mode dctcp] [--sim-ms 1.0]
                       [--window-from-ms 0.8] [--arms off,on] [--trials 2] [--quick [--with-ns3]]

Needs the ns3 wheel (make test installs it); says so and exits 0 where it is absent.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmode import add_quick_flag, add_with_ns3_flag, announce, ns3_measures  # noqa: E402

T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}


def digest(r) -> str:
    """SHA-256 (16 hex digits) over a JobResult's records, counters and event count."""
    h = hashlib.sha256()
    for rec in r.transfers + r.iterations:
        h.update(json.dumps(rec, sort_keys=True).encode())
    h.update(json.dumps(r.counters, sort_keys=True).encode())
    h.update(str(r.events).encode())
    return h.hexdigest()[:16]


def run_sampled(topo, policy, mode: str, spec):
    """In a run's process: simulation.job.run_job, with (simulated s, events, CPU s) noted at each
    slice's stop check (before the slice) and at the Run loop's end; (JobResult, samples)."""
    import cppyy

    from simulation import job

    samples: list[tuple[float, int, float]] = []
    check = job.stop_requested

    def noted():
        sim = cppyy.gbl.ns3.Simulator
        samples.append((sim.Now().GetSeconds(), int(sim.GetEventCount()), time.process_time()))
        return check()

    job.stop_requested = noted
    try:
        r = job.run_job(topo, policy, mode, spec)
    finally:
        job.stop_requested = check
    start = samples[0][2] if samples else time.process_time()     # the first check: the Run loop's start
    return r, samples + [(r.sim_time_s, r.events, start + r.extra["run_cpu_s"])]


def window_rate(samples: list[tuple[float, int, float]], from_s: float) -> tuple[float, int, float]:
    """(events per CPU second, events, CPU s) from the first sample at or after from_s to the last."""
    first = next((s for s in samples if s[0] >= from_s - 1e-12), samples[-1])
    last = samples[-1]
    events, cpu = last[1] - first[1], last[2] - first[2]
    return (events / cpu if cpu > 0 else float("nan")), events, cpu


def interval(xs: list[float]) -> str:
    """Median [min, max] and the 95 % t interval of the mean."""
    med = statistics.median(xs)
    text = f"{med:.2f}x (median of {len(xs)}; range {min(xs):.2f}-{max(xs):.2f}"
    if len(xs) >= 2:
        half = T95.get(len(xs) - 1, 1.96) * statistics.stdev(xs) / math.sqrt(len(xs))
        text += f"; mean {statistics.fmean(xs):.2f} [{statistics.fmean(xs) - half:.2f}, {statistics.fmean(xs) + half:.2f}]"
    return text + ")"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="paper-144")
    ap.add_argument("--mode", default="dctcp", help="a TCP mode of dlcp-sim (dctcp, tcp-cubic, tcp-newreno) or dlcp")
    ap.add_argument("--load", type=float, default=0.6)
    ap.add_argument("--sim-ms", type=float, default=1.0, help="simulated time per run (ms)")
    ap.add_argument("--window-from-ms", type=float, default=None,
                    help="also the figure from this simulated time to the end (default: half of --sim-ms)")
    ap.add_argument("--arms", default="off,on", help="comma-separated DLCP_SIM_TCP_FASTPATH values; off first")
    ap.add_argument("--trials", type=int, default=2, help="interleaved rounds of the arms")
    add_with_ns3_flag(ap)
    add_quick_flag(ap)
    a = ap.parse_args(argv)
    arms = [x.strip() for x in a.arms.split(",") if x.strip()]
    from simulation import tcp_fastpath

    bad = [x for x in arms if x not in tcp_fastpath.CHOICES]
    if not arms or arms[0] != "off" or bad or len(set(arms)) != len(arms):
        ap.error(f"--arms {a.arms!r}: expected 'off' first, then distinct values of {', '.join(tcp_fastpath.CHOICES)}")
    announce(a.quick)
    if not ns3_measures("bench_sim_tcp_fastpath", a.quick, a.with_ns3):
        return 0
    if a.quick:
        a.preset, a.sim_ms, a.trials, a.window_from_ms = "scale-16", 0.2, 1, 0.1
    window_s = (a.window_from_ms if a.window_from_ms is not None else a.sim_ms / 2) / 1000
    from simulation.fresh import run_fresh
    from simulation.job import JobSpec
    from simulation.policy import policy_for
    from simulation.topology import preset
    from simulation.workload import load_cdf, ps_workload

    topo = preset(a.preset)
    policy = policy_for(min(lk.rate_bps for lk in topo.links), None)
    host_bps = max(lk.rate_bps for lk in topo.links if lk.a in topo.hosts or lk.b in topo.hosts)
    work = ps_workload("resnet50", 0.0005, 4, 10, host_bps, 1.0)
    spec = JobSpec(work, load_cdf("web-search"), "web-search", a.load, 0.1, 1, a.sim_ms / 1000, progress=False)
    whole: dict[str, list[float]] = {arm: [] for arm in arms}
    late: dict[str, list[float]] = {arm: [] for arm in arms}
    digests: set[str] = set()
    old = os.environ.get(tcp_fastpath.ENV)
    try:
        for trial in range(a.trials):
            for arm in arms:
                os.environ[tcp_fastpath.ENV] = arm
                r, samples = run_fresh(run_sampled, topo, policy, a.mode, spec)
                cpu = r.extra["run_cpu_s"]
                rate, wev, wcpu = window_rate(samples, window_s)
                whole[arm].append(r.events / cpu)
                late[arm].append(rate)
                digests.add(digest(r))
                print(f"trial {trial + 1} {arm:7s}: {r.events:>11,} events, {cpu:8.2f} s CPU = "
                      f"{r.events / cpu:>9,.0f} events/CPU-s; from {window_s * 1e3:g} ms: {wev:>10,} events, "
                      f"{wcpu:8.2f} s CPU = {rate:>9,.0f} events/CPU-s ({r.run_wall_s:.1f} s wall), digest "
                      f"{digest(r)}, calls {r.extra['tcp_fastpath']}", flush=True)
    finally:
        if old is None:
            os.environ.pop(tcp_fastpath.ENV, None)
        else:
            os.environ[tcp_fastpath.ENV] = old
    print(f"{a.preset} {a.mode} load {a.load}, {a.sim_ms:g} ms simulated, window from {window_s * 1e3:g} ms; "
          f"events/CPU-s (median), whole run / window: "
          + "; ".join(f"{arm} {statistics.median(whole[arm]):,.0f} / {statistics.median(late[arm]):,.0f}"
                      for arm in arms))
    for arm in arms[1:]:
        for name, rates in (("whole run", whole), (f"from {window_s * 1e3:g} ms", late)):
            ratios = [n / o for o, n in zip(rates["off"], rates[arm], strict=True)]
            print(f"ratio {arm} / stock ns-3, {name}: {interval(ratios)}")
    same = len(digests) == 1
    print(f"records {'identical' if same else 'DIFFER'} ({', '.join(sorted(digests))})")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
