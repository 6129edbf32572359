"""Simulator benchmark: events per CPU second of a TCP run with the NextSeg fast path against stock ns-3.

What it measures: the same dlcp-sim job (default: paper-144, DCTCP, PS job of ResNet-50 x 0.0005 in 4
groups, web-search background at load 0.6, seed 1; the goal command's run, cut at --sim-ms) run in a
fresh process (simulation.fresh, jemalloc as always) with stock ns-3's TcpTxBuffer::NextSeg
(``DLCP_SIM_TCP_FASTPATH=off``) and with simulation/tcp_fastpath.cc preloaded, trials interleaved
(off, on, off, on, ...). Figure: events per CPU second of the Run loop (ns-3's event count over the
run process's CPU time from the first slice to the last: C++ only, no Python runs between slices but
the progress check), on over off, median of the per-trial ratios. CPU time, not wall time, because
the machine is shared. Both arms must simulate the same thing: the script prints each run's digest
(SHA-256 over every transfer and iteration record, the switch counters and the event count) and
says DIFFER if any pair does not match. The ns-3 import and the network build are outside the
figure (each process pays them).

    .venv/bin/python benchmarks/bench_sim_tcp_fastpath.py [--preset paper-144] [--mode dctcp] [--sim-ms 1.0]
                                                          [--trials 2] [--quick [--with-ns3]]

Needs the ns3 wheel (make test installs it); says so and exits 0 where it is absent.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmode import add_quick_flag, add_with_ns3_flag, announce, ns3_measures  # noqa: E402


def digest(r) -> str:
    """SHA-256 (16 hex digits) over a JobResult's records, counters and event count."""
    h = hashlib.sha256()
    for rec in r.transfers + r.iterations:
        h.update(json.dumps(rec, sort_keys=True).encode())
    h.update(json.dumps(r.counters, sort_keys=True).encode())
    h.update(str(r.events).encode())
    return h.hexdigest()[:16]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="paper-144")
    ap.add_argument("--mode", default="dctcp", help="a TCP mode of dlcp-sim (dctcp, tcp-cubic, tcp-newreno) or dlcp")
    ap.add_argument("--load", type=float, default=0.6)
    ap.add_argument("--sim-ms", type=float, default=1.0, help="simulated time per run (ms)")
    ap.add_argument("--trials", type=int, default=2, help="interleaved off/on pairs")
    add_with_ns3_flag(ap)
    add_quick_flag(ap)
    a = ap.parse_args(argv)
    announce(a.quick)
    if not ns3_measures("bench_sim_tcp_fastpath", a.quick, a.with_ns3):
        return 0
    if a.quick:
        a.preset, a.sim_ms, a.trials = "scale-16", 0.2, 1
    from simulation import tcp_fastpath
    from simulation.job import JobSpec, run_job_fresh
    from simulation.policy import policy_for
    from simulation.topology import preset
    from simulation.workload import load_cdf, ps_workload

    topo = preset(a.preset)
    policy = policy_for(min(lk.rate_bps for lk in topo.links), None)
    host_bps = max(lk.rate_bps for lk in topo.links if lk.a in topo.hosts or lk.b in topo.hosts)
    work = ps_workload("resnet50", 0.0005, 4, 10, host_bps, 1.0)
    spec = JobSpec(work, load_cdf("web-search"), "web-search", a.load, 0.1, 1, a.sim_ms / 1000, progress=False)
    rates: dict[str, list[float]] = {"off": [], "on": []}
    digests: dict[str, list[str]] = {"off": [], "on": []}
    old = os.environ.get(tcp_fastpath.ENV)
    try:
        for trial in range(a.trials):
            for arm in ("off", "on"):
                os.environ[tcp_fastpath.ENV] = arm
                r = run_job_fresh(topo, policy, a.mode, spec)
                cpu = r.extra["run_cpu_s"]
                rates[arm].append(r.events / cpu)
                digests[arm].append(digest(r))
                print(f"trial {trial + 1} {arm:3s}: {r.events:>11,} events, {cpu:8.2f} s CPU = "
                      f"{r.events / cpu:>9,.0f} events/CPU-s ({r.run_wall_s:.1f} s wall), digest {digests[arm][-1]}, "
                      f"NextSeg {r.extra['tcp_fastpath']}", flush=True)
    finally:
        if old is None:
            os.environ.pop(tcp_fastpath.ENV, None)
        else:
            os.environ[tcp_fastpath.ENV] = old
    ratios = [n / o for o, n in zip(rates["off"], rates["on"], strict=True)]
    same = len(set(digests["off"] + digests["on"])) == 1
    print(f"{a.preset} {a.mode} load {a.load}, {a.sim_ms:g} ms simulated: events/CPU-s stock "
          f"{statistics.median(rates['off']):,.0f}, fast path {statistics.median(rates['on']):,.0f}")
    print(f"ratio fast path / stock ns-3 (median of {a.trials} interleaved trials): {statistics.median(ratios):.2f}x "
          f"[{', '.join(f'{x:.2f}' for x in ratios)}]; records {'identical' if same else 'DIFFER'} "
          f"({', '.join(sorted(set(digests['off'] + digests['on'])))})")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
