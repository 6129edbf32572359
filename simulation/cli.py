"""`dlcp-sim`: run a preset fabric in ns-3 with DLCP and the TCP baselines, write results/sim-<run>/.

Why this exists: the reproducible entry point of docs/simulation.md; bad input (unknown preset or
mode, a bad policy file) is a one-line error, never a traceback.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from controller.errors import ConfigError
from simulation.policy import load_policy
from simulation.topology import PRESETS, preset


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="dlcp-sim", description=__doc__.splitlines()[0])
    p.add_argument("--preset", default="small-16", help=f"fabric: {', '.join(PRESETS)}")
    p.add_argument("--policy", help="policy YAML (default: controller/data/default_policy.yaml)")
    p.add_argument("--modes", default="dlcp,tcp-cubic,dctcp", help="comma-separated: dlcp, tcp-newreno, tcp-cubic, dctcp")
    p.add_argument("--workload", default="ps-incast", choices=["ps-incast"])
    p.add_argument("--gradient-bytes", type=int, default=200_000, help="bytes per worker->PS gradient flow")
    p.add_argument("--background", type=int, default=8, help="background TCP flows")
    p.add_argument("--background-bytes", type=int, default=100_000)
    p.add_argument("--sim-ms", type=float, default=5.0, help="simulated time per mode (ms)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", help="output directory (default results/sim-<preset>-<time>)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    try:
        topo = preset(a.preset)
    except KeyError as err:
        print(f"dlcp-sim: --preset: {err.args[0]}", file=sys.stderr)
        return 2
    try:
        policy = load_policy(a.policy)
    except ConfigError as err:
        print(f"dlcp-sim: {err}", file=sys.stderr)
        return 2
    from simulation.scenario import MODES, ps_incast, run_fresh

    modes = [m.strip() for m in a.modes.split(",") if m.strip()]
    bad = [m for m in modes if m not in MODES]
    if bad or not modes:
        print(f"dlcp-sim: --modes: unknown mode '{bad[0] if bad else ''}' (known: {', '.join(MODES)})",
              file=sys.stderr)
        return 2
    from simulation.report import summary, write

    flows = ps_incast(topo, a.gradient_bytes, a.background, a.background_bytes, a.seed)
    out = Path(a.out or f"results/sim-{a.preset}-{time.strftime('%Y%m%d-%H%M%S')}")
    runs = []
    for mode in modes:
        print(f"dlcp-sim: {a.preset} {mode}: {len(flows)} flows, {a.sim_ms} ms simulated ...", flush=True)
        r = run_fresh(topo, policy, mode, flows, a.sim_ms / 1000)
        g = summary(r)
        print(f"dlcp-sim: {mode}: gradient complete {g['completed']}/{g['flows']} FCT mean {g['mean_fct_us']} µs "
              f"p99 {g['p99_fct_us']} µs; arrivals {g['with_arrivals']}, last at {g['mean_last_arrival_us']} µs "
              f"(mean); delivered {g['delivered_fraction']}; {r.events} events in "
              f"{r.wall_s:.2f} s ({r.events / r.wall_s:,.0f}/s)", flush=True)
        runs.append(r)
    header = (f"# dlcp-sim {a.preset}: {a.workload}\n\n{topo.description}. Policy: {policy.source}. "
              f"{len(flows) - a.background} gradient flows of {a.gradient_bytes} B to h0, {a.background} background "
              f"TCP flows of {a.background_bytes} B, {a.sim_ms} ms simulated, seed {a.seed}.")
    report = write(out, runs, header)
    print(f"dlcp-sim: wrote {report}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
