"""Runs of the PS job / incast with the DLCP transport's knobs changed (ablations).

Why this exists: the C++ transport reads its knobs (dlcp_transport.h TransportConfig) from
per-process defaults, as ns-3 attributes do with Config::SetDefault; an ablation (receiver-driven
admission off, to show what it buys and to exercise loss recovery) sets them in a fresh process
before simulation.job.run_job builds the run. Several runs share one process so that the ns-3
import (20-60 s) is paid once. As a script it runs the goal command's DLCP PS job with the built-in
knobs and again with each named knob off, or with each ``--set`` variant (one JSON line per run):

    python -m simulation.switch_model.transport_knobs --preset scale-64 --off standbyGrants
    python -m simulation.switch_model.transport_knobs --preset paper-144 --set classBands=2 --set classAdmission=false
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from typing import Any

from controller.netconfig import Policy
from simulation.fresh import run_fresh
from simulation.topology import Topology


def set_transport_defaults(**knobs: Any) -> None:
    """Set ``dlcpsim::TransportDefaults()`` fields (e.g. ``grants=False``) for later runs here."""
    from simulation import switch_model

    _, sim = switch_model.ns3()
    sim.ResetTransportDefaults()                 # unnamed knobs: the built-in defaults
    defaults = sim.TransportDefaults()
    for name, value in knobs.items():
        if not hasattr(defaults, name):
            raise ValueError(f"unknown transport knob '{name}'")
        setattr(defaults, name, value)


def run_jobs(runs: list[tuple[dict, Topology, Policy, str, Any]]) -> list:
    """``simulation.job.run_job`` for each (knobs, topology, policy, mode, JobSpec), in order."""
    from simulation.job import run_job

    out = []
    for knobs, topo, policy, mode, spec in runs:
        set_transport_defaults(**knobs)
        out.append(run_job(topo, policy, mode, spec))
    set_transport_defaults()
    return out


def run_jobs_fresh(runs: list[tuple[dict, Topology, Policy, str, Any]]) -> list:
    """``run_jobs`` in one fresh process (ns-3 keeps state across processes' runs otherwise)."""
    return run_fresh(run_jobs, runs)


def parse_knobs(text: str) -> dict[str, Any]:
    """``"classBands=2,classAdmission=false"`` -> ``{"classBands": 2, "classAdmission": False}``
    (ValueError naming the bad part; whether the knob exists is checked when the run starts)."""
    knobs: dict[str, Any] = {}
    for part in (p.strip() for p in text.split(",")):
        name, sep, value = part.partition("=")
        if not sep or not re.fullmatch(r"[A-Za-z_]\w*", name.strip()) or not value.strip():
            raise ValueError(f"expected KNOB=VALUE, got '{part}'")
        value = value.strip().lower()
        if value in ("true", "false"):
            knobs[name.strip()] = value == "true"
            continue
        try:
            knobs[name.strip()] = int(value) if re.fullmatch(r"-?\d+", value) else float(value)
        except ValueError:
            raise ValueError(f"'{name.strip()}': expected a number or true/false, got '{value}'") from None
    return knobs


def main(argv: list[str] | None = None) -> int:
    from simulation import job_report
    from simulation.job import JobSpec
    from simulation.policy import FABRIC_POLICY, load_policy
    from simulation.topology import PRESETS, preset
    from simulation.workload import ps_workload

    ap = argparse.ArgumentParser(prog="python -m simulation.switch_model.transport_knobs",
                                 description="DLCP PS job with the built-in transport knobs, then with each --off knob off")
    ap.add_argument("--preset", default="scale-64")
    ap.add_argument("--off", action="append", default=[], metavar="KNOB", help="a boolean TransportConfig knob")
    ap.add_argument("--set", action="append", default=[], metavar="KNOB=VALUE[,KNOB=VALUE]",
                    help="one more run with these TransportConfig knobs (numbers, true/false)")
    ap.add_argument("--scale", type=float, default=0.0005)
    ap.add_argument("--groups", type=int, default=4)
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--max-sim-ms", type=float, default=200.0)
    a = ap.parse_args(argv)
    if a.preset not in PRESETS:
        print(f"transport_knobs: --preset: unknown '{a.preset}' (known: {', '.join(PRESETS)})", file=sys.stderr)
        return 2
    from simulation.switch_model import HOST_HEADERS

    config = HOST_HEADERS[0].read_text()            # sim_net.h: struct TransportConfig
    for knob in a.off:
        if not re.search(rf"\bbool {re.escape(knob)} = ", config):
            print(f"transport_knobs: --off: '{knob}' is not a boolean TransportConfig knob ({HOST_HEADERS[0].name})",
                  file=sys.stderr)
            return 2
    try:
        variants = [parse_knobs(v) for v in a.set]
    except ValueError as e:
        print(f"transport_knobs: --set: {e}", file=sys.stderr)
        return 2
    fields = config.split("struct TransportConfig {", 1)[-1].split("\n};", 1)[0]
    for knob in (k for v in variants for k in v):
        if not re.search(rf"\b\w+ {re.escape(knob)} = ", fields):
            print(f"transport_knobs: --set: '{knob}' is not a TransportConfig knob ({HOST_HEADERS[0].name})",
                  file=sys.stderr)
            return 2
    topo = preset(a.preset)
    host_bps = max(lk.rate_bps for lk in topo.links if lk.a in topo.hosts or lk.b in topo.hosts)
    spec = JobSpec(ps_workload("resnet50", a.scale, a.groups, a.iterations, host_bps, 1.0),
                   max_sim_s=a.max_sim_ms / 1e3, progress=False)
    policy = load_policy(FABRIC_POLICY)
    settings = [{}] + [{knob: False} for knob in a.off] + variants
    try:
        runs = run_jobs_fresh([(s, topo, policy, "dlcp", spec) for s in settings])
    except ValueError as e:
        print(f"transport_knobs: --off/--set: {e}", file=sys.stderr)
        return 2
    for knobs, r in zip(settings, runs, strict=True):
        its = [i["iter_s"] for i in r.iterations if i["iter_s"] is not None]
        grad = job_report.summary(r)["gradient"]
        waits = [t["grant_wait_s"] for t in r.transfers if t.get("dlcp")]
        print(json.dumps({"preset": a.preset, "knobs": knobs, "closed": len(its), "of": len(r.iterations),
                          "iteration_mean_ms": round(1e3 * sum(its) / max(1, len(its)), 4),
                          "job_iteration_mean_ms": job_report.iteration_stats(r)["mean_ms"],   # dlcp-sim's (slowest worker)
                          "gradient_mean_us": grad["mean_us"], "gradient_p99_us": grad["p99_us"],
                          "waited_for_grant": sum(w > 0 for w in waits), "grant_wait_total_us": round(1e6 * sum(waits), 1),
                          "transport": r.counters["transport"], "events": r.events,
                          "run_wall_s": round(r.run_wall_s, 1), "build_wall_s": round(r.build_wall_s, 1)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
