"""Load sweep: one training job with background at several loads and modes -> one report whose
"FCT by flow-size bucket vs load" plot has a point per load (issue 13, outputs).

Why this exists: `dlcp-sim` runs its (load, mode) pairs one after another; on a shared 2-core
machine a sweep of 6-9 runs then takes longer than the runs need. This script runs the same
`simulation.job.run_job` per pair, each in its own fresh process (ns-3 keeps state per process),
``--parallel`` at a time, and writes everything into one directory with simulation.job_report
(transfers.jsonl, iterations.jsonl, runs.json, report.md, fct_by_size.png, ...).

    python -m simulation.sweep --preset sweep-16 --workload ring-train --modes dlcp,dctcp \\
        --loads 0.3,0.5,0.8 --scale 0.005 --groups 4 --background-ms 10 --max-sim-ms 15 --parallel 3
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from controller.errors import ConfigError


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m simulation.sweep", description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="sweep-16")
    ap.add_argument("--workload", default="ring-train", choices=["ps-train", "ring-train"])
    ap.add_argument("--modes", default="dlcp,dctcp")
    ap.add_argument("--loads", default="0.3,0.5,0.8")
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--scale", type=float, default=0.005)
    ap.add_argument("--groups", type=int, default=4)
    ap.add_argument("--iterations", type=int, default=1000, help="more than fit: the job runs all along")
    ap.add_argument("--background-cdf", default="web-search", choices=["web-search", "data-mining"])
    ap.add_argument("--background-ms", type=float, default=10.0, help="no new background flow after this")
    ap.add_argument("--max-sim-ms", type=float, default=15.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--parallel", type=int, default=2, help="runs at a time (each its own process)")
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    from simulation.policy import policy_for
    from simulation.scenario import MODES
    from simulation.topology import preset
    from simulation.workload import WorkloadError, load_cdf, ps_workload

    try:
        topo = preset(a.preset)
        policy = policy_for(min(lk.rate_bps for lk in topo.links), None)
        loads = [float(x) for x in a.loads.split(",") if x.strip()]
        host_bps = max(lk.rate_bps for lk in topo.links if lk.a in topo.hosts)
        work = ps_workload(a.model, a.scale, a.groups, a.iterations, host_bps, 1.0)
        cdf = load_cdf(a.background_cdf)
    except (KeyError, ValueError, ConfigError, WorkloadError) as err:
        print(f"sweep: {err.args[0] if isinstance(err, KeyError) else err}", file=sys.stderr)
        return 2
    modes = [m.strip() for m in a.modes.split(",") if m.strip()]
    bad = [m for m in modes if m not in MODES] + [str(x) for x in loads if not 0 <= x < 1]
    if bad or not modes or not loads:
        print(f"sweep: --modes/--loads: bad value '{bad[0] if bad else ''}' (modes: {', '.join(MODES)}; loads in [0, 1))",
              file=sys.stderr)
        return 2
    from simulation import job_report
    from simulation.job import JobSpec, run_job_fresh

    pairs = [(load, mode) for load in loads for mode in modes]

    def one(pair: tuple[float, str]):
        load, mode = pair
        spec = JobSpec(work, cdf, a.background_cdf, load, 0.10, a.seed, a.max_sim_ms / 1000,
                       background_until_s=a.background_ms / 1000, progress=False,
                       collective="ring" if a.workload == "ring-train" else "ps")
        t = time.perf_counter()
        r = run_job_fresh(topo, policy, mode, spec)
        r.extra |= {"load": load, "process_wall_s": round(time.perf_counter() - t, 1)}
        s = job_report.summary(r)
        print(f"sweep: {mode} load {load}: {r.events:,} events, Run {r.run_wall_s:.1f} s ({s['events_per_s']:,}/s), "
              f"build {r.build_wall_s:.1f} s, {s['max_rss_mb']} MB; background {s['background']['completed']}/"
              f"{s['background']['flows']} complete, FCT mean {s['background']['mean_us']} µs p99 "
              f"{s['background']['p99_us']} µs; iterations {s['iteration']['iterations']}", flush=True)
        return r

    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=max(1, a.parallel)) as pool:
        runs = list(pool.map(one, pairs))
    wall = time.perf_counter() - t0
    out = Path(a.out or f"results/sim-sweep-{a.preset}-{time.strftime('%Y%m%d-%H%M%S')}")
    header = (f"# Load sweep on {a.preset}: {a.workload}\n\n{topo.description}. Policy: {policy.source}. "
              f"{a.workload} of {a.model} x {a.scale:g} ({work.bytes_per_worker:,} B per worker per iteration in "
              f"{len(work.group_bytes)} buckets) running all along; background {a.background_cdf} at loads {loads} "
              f"of each host link, flows starting in the first {a.background_ms:g} ms, {a.max_sim_ms:g} ms simulated; "
              f"seed {a.seed}. {len(pairs)} runs, {a.parallel} at a time: {wall:.0f} s wall.")
    print(f"sweep: wrote {job_report.write(out, runs, header)} ({wall:.0f} s wall)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
