"""``make demo``: the default comparison, DLCP versus the status quo, in one command.

Two experiments on the same leaf-spine network with background congestion, each running the
three modes (dlcp, baseline, tcp) with the same seed: parameter-server training of the real
digits MLP, then an all-reduce of a ResNet-50-shaped gradient profile. Prints a summary table per
workload and where the reports are. Budget: about 10 minutes on 2 cores.
"""

from __future__ import annotations

import os
import sys

from mininet_topos.experiment import ExperimentConfig, ExperimentError, run_experiment
from mininet_topos.p4switch import SwitchStartError
from mininet_topos.report import read_jsonl, summarise, summary_table

DEMO_RUNS = (
    ("parameter server, digits MLP (real training)",
     ExperimentConfig(workload="ps", model="digits", iterations=100, timeout_s=300)),
    ("ring all-reduce, ResNet-50 gradient profile (scaled)",
     ExperimentConfig(workload="profile:resnet50", iterations=20, timeout_s=300)),
)


def main() -> int:
    if os.geteuid() != 0:
        print("make demo: Mininet needs root (network namespaces); run it as root or with sudo", file=sys.stderr)
        return 1
    reports = []
    for title, cfg in DEMO_RUNS:
        print(f"== {title}: {cfg.topo}, modes {', '.join(cfg.modes)}, {cfg.iterations} iterations, "
              f"seed {cfg.seed}", flush=True)
        try:
            run_dir = run_experiment(cfg)
        except (ExperimentError, SwitchStartError, ValueError) as err:
            print(f"make demo: {title}: {err}", file=sys.stderr)
            return 1
        print(summary_table(summarise(read_jsonl(run_dir / "iterations.jsonl"),
                                      read_jsonl(run_dir / "switch_stats.jsonl"))), flush=True)
        reports.append(run_dir / "report.md")
    print("\nreports:")
    for path in reports:
        print(f"  {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
