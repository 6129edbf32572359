"""The scale study: wall time, events and memory of one scenario on 16, 64, 144 and 288 hosts for the
same simulated time, plotted (`python -m simulation.scale_study`).

Why this exists: issue 13 asks how the cost grows with the fabric; every size runs the same
scenario (a ResNet-50 PS job scaled as given, DLCP transport, optional background) for the same
simulated time, each in a fresh process (ns-3 state and cppyy's memory are per process), and the
figures go to scale.json and scale.png beside the command line that made them.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from simulation.job import JobSpec, run_job_fresh
from simulation.policy import FABRIC_POLICY, load_policy
from simulation.provenance import provenance
from simulation.topology import preset
from simulation.workload import load_cdf, ps_workload

PRESETS = ("scale-16", "scale-64", "paper-144", "scale-288")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m simulation.scale_study", description=__doc__.splitlines()[0])
    p.add_argument("--presets", default=",".join(PRESETS))
    p.add_argument("--mode", default="dlcp")
    p.add_argument("--sim-ms", type=float, default=2.0, help="simulated time, the same for every size")
    p.add_argument("--scale", type=float, default=0.0005)
    p.add_argument("--load", type=float, default=0.0)
    p.add_argument("--out", default=f"results/sim-scale-{time.strftime('%Y%m%d-%H%M%S')}")
    a = p.parse_args(argv)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    made = provenance()
    t_start = time.perf_counter()
    for name in a.presets.split(","):
        topo = preset(name)
        work = ps_workload("resnet50", a.scale, 4, 1000, 100_000_000_000, 1.0)
        spec = JobSpec(work, load_cdf("web-search"), "web-search", a.load, max_sim_s=a.sim_ms / 1000, progress=False)
        t0 = time.perf_counter()
        r = run_job_fresh(topo, load_policy(FABRIC_POLICY), a.mode, spec)
        row = {"preset": name, "hosts": len(topo.hosts), "sim_ms": round(r.sim_time_s * 1e3, 3), "events": r.events,
               "run_wall_s": round(r.run_wall_s, 2), "build_wall_s": round(r.build_wall_s, 2),
               "process_wall_s": round(time.perf_counter() - t0, 1), "max_rss_mb": round(r.max_rss_mb),
               "events_per_s": round(r.events / r.run_wall_s) if r.run_wall_s else None,
               "transfers": len(r.transfers)}
        print(json.dumps(row), flush=True)
        rows.append(row)
    made |= {"load_average_end": round(os.getloadavg()[0], 1), "wall_s": round(time.perf_counter() - t_start)}
    (out / "scale.json").write_text(json.dumps({"argv": sys.argv} | made | {"rows": rows}, indent=1) + "\n")
    print(f"scale study: {made['date']}, commit {made['commit']}, load average {made['load_average']} -> "
          f"{made['load_average_end']}, {made['wall_s']} s wall", flush=True)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    hosts = [r["hosts"] for r in rows]
    ax1.plot(hosts, [r["run_wall_s"] for r in rows], marker="o", label="Simulator::Run (C++)")
    ax1.plot(hosts, [r["build_wall_s"] for r in rows], marker="o", label="build (Python + cppyy)")
    ax1.set_xlabel("hosts")
    ax1.set_ylabel("wall s")
    ax1.legend()
    ax1.set_title(f"{a.sim_ms} ms simulated, {a.mode}")
    ax2.plot(hosts, [r["max_rss_mb"] for r in rows], marker="o")
    ax2.set_xlabel("hosts")
    ax2.set_ylabel("peak RSS (MB)")
    fig.tight_layout()
    fig.savefig(out / "scale.png")
    print(f"wrote {out / 'scale.json'} and {out / 'scale.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
