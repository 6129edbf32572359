"""`dlcp-sim`: run a preset fabric in ns-3 with DLCP and the TCP baselines, write results/sim-<run>/.

Why this exists: the reproducible entry point of docs/simulation.md; bad input (unknown preset or
mode, a bad policy file) is a one-line error, never a traceback.
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from controller.errors import ConfigError
from simulation.policy import policy_for
from simulation.topology import PRESETS, preset

PARALLEL_PROGRESS_S = 5.0       # --parallel > 1: each run prints a progress line this often (wall seconds)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="dlcp-sim", description=__doc__.splitlines()[0])
    p.add_argument("--preset", default="small-16", help=f"fabric: {', '.join(PRESETS)}")
    p.add_argument("--policy", help="policy YAML (default: controller/data/default_policy.yaml below 1 Gbit/s, simulation/data/fabric_policy.yaml on faster fabrics)")
    p.add_argument("--modes", default="dlcp,tcp-cubic,dctcp", help="comma-separated: dlcp, tcp-newreno, tcp-cubic, dctcp, pfabric (pfabric: job workloads only)")
    p.add_argument("--workload", default="ps-incast", choices=["ps-incast", "ps-train", "ring-train", "ps-incast-open"],
                   help="ps-incast: one gradient per worker into h0 over each mode's transport; ps-train: PS "
                        "iterations of --model with background; ring-train: ring all-reduce iterations of --model "
                        "over every host with background; ps-incast-open: open-loop DLCP sender (switch only)")
    p.add_argument("--model", default="resnet50", help="ps-train, ring-train: host_agent/profiles/<model>.json")
    p.add_argument("--scale", type=float, default=1 / 1000, help="ps-train, ring-train: model bytes x this (stated in the report)")
    p.add_argument("--groups", type=int, default=8, help="ps-train, ring-train: gradient groups (buckets) per iteration")
    p.add_argument("--iterations", type=int, default=10)
    p.add_argument("--compute-ratio", type=float, default=1.0,
                   help="ps-train, ring-train: compute per iteration = this x the worker's gradient time on its link")
    p.add_argument("--background-cdf", default="web-search", choices=["web-search", "data-mining"])
    p.add_argument("--loads", default="0.6", help="ps-train, ring-train: comma-separated background loads (share of host links)")
    p.add_argument("--background-ms", type=float, help="no new background flow after this (default: --max-sim-ms)")
    p.add_argument("--loss-bound", type=float, default=0.10, help="DLCP gradients' loss bound p")
    p.add_argument("--max-sim-ms", type=float, default=2000.0, help="ps-train, ring-train: stop here if iterations remain")
    p.add_argument("--gradient-bytes", type=int, default=200_000, help="bytes per worker->PS gradient flow")
    p.add_argument("--background", type=int, default=8, help="background TCP flows")
    p.add_argument("--background-bytes", type=int, default=100_000)
    p.add_argument("--sim-ms", type=float, default=5.0, help="simulated time per mode (ms)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--transport", default="", metavar="KNOB=VALUE[,KNOB=VALUE]",
                   help="ps-train, ps-incast, ring-train: DLCP transport knobs (sim_net.h TransportConfig) for every "
                        "run, set as per-process defaults (e.g. hostPriority=true)")
    p.add_argument("--parallel", type=int, default=1,
                   help="ps-train, ring-train, ps-incast: runs (mode x load) at a time, each its own process "
                        "(2 on a 2-core machine; results are the same as one at a time). SIGINT or SIGTERM to "
                        "dlcp-sim stops every running run after its current slice and writes what closed so far "
                        "(runs not started are left out); a second signal aborts at once")
    p.add_argument("--out", help="output directory (default results/sim-<preset>-<time>)")
    p.add_argument("--crosscheck", default=None, metavar="FILES|run|none",
                   help="the Mininet cross-check quoted at the end of report.md: comma-separated crosscheck.json "
                        "files (default: the recorded simulation/data/crosscheck*.json), 'run' to run it now into "
                        "<out>/crosscheck (minutes), 'none' to leave it out")
    return p.parse_args(argv)


def _crosscheck_source(a: argparse.Namespace) -> list[Path] | str | None:
    """Check --crosscheck before anything runs: None (left out), 'run', or readable records' paths
    (raises crosscheck.RecordError)."""
    from simulation.crosscheck import RECORDED, load_recorded

    if a.crosscheck in ("none", "run"):
        return None if a.crosscheck == "none" else "run"
    paths = [Path(p.strip()) for p in a.crosscheck.split(",") if p.strip()] if a.crosscheck else list(RECORDED)
    for path in paths:
        load_recorded(path)
    return paths


def _append_crosscheck(report: Path, source: list[Path] | str | None) -> None:
    """report.md gets the cross-check's verdicts (quoted from a record, or from a run made now)."""
    from simulation import crosscheck

    if source is None:
        return
    if source == "run":
        out = report.parent / "crosscheck"
        print(f"dlcp-sim: running the Mininet cross-check into {out} ...", flush=True)
        if crosscheck.main(["--out", str(out)]) != 0:
            print("dlcp-sim: --crosscheck run: the cross-check failed; report.md has no cross-check section",
                  file=sys.stderr)
            return
        source = [out / "crosscheck.json"]
    with report.open("a") as fh:
        fh.write("\n" + crosscheck.report_section(source))


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    from simulation.crosscheck import RecordError

    try:
        a.crosscheck_source = _crosscheck_source(a)
    except RecordError as err:
        print(f"dlcp-sim: --crosscheck: {err}", file=sys.stderr)
        return 2
    try:
        topo = preset(a.preset)
    except KeyError as err:
        print(f"dlcp-sim: --preset: {err.args[0]}", file=sys.stderr)
        return 2
    try:
        policy = policy_for(min(lk.rate_bps for lk in topo.links), a.policy)
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
    if a.workload == "ps-incast-open" and "pfabric" in modes:
        print("dlcp-sim: --modes: pfabric runs only with the job workloads (ps-incast, ps-train, ring-train), "
              "not --workload ps-incast-open", file=sys.stderr)
        return 2
    if a.workload in ("ps-train", "ring-train", "ps-incast"):
        return _run_jobs(a, topo, policy, modes)
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
    _append_crosscheck(report, a.crosscheck_source)
    print(f"dlcp-sim: wrote {report}")
    return 0


def _run_jobs(a: argparse.Namespace, topo, policy, modes: list[str]) -> int:
    """ps-train / ps-incast over each mode's transport (simulation.job), one fresh process per run."""
    from simulation import job_report
    from simulation.fresh import stop_on_signals
    from simulation.job import JobSpec, run_job_fresh
    from simulation.scenario import ps_incast
    from simulation.switch_model.transport_knobs import parse_knobs, run_jobs_fresh
    from simulation.workload import WorkloadError, load_cdf, ps_workload

    try:
        loads = [float(x) for x in a.loads.split(",") if x.strip()]
    except ValueError:
        print(f"dlcp-sim: --loads: expected numbers, got '{a.loads}'", file=sys.stderr)
        return 2
    if not loads or any(not 0 <= x < 1 for x in loads):
        print(f"dlcp-sim: --loads: every load must be in [0, 1), got '{a.loads}'", file=sys.stderr)
        return 2
    if not 0 <= a.loss_bound < 1:
        print(f"dlcp-sim: --loss-bound: {a.loss_bound} outside [0, 1)", file=sys.stderr)
        return 2
    try:
        knobs = parse_knobs(a.transport) if a.transport.strip() else {}
    except ValueError as e:
        print(f"dlcp-sim: --transport: {e}", file=sys.stderr)
        return 2
    host_bps = max(lk.rate_bps for lk in topo.links if lk.a in topo.hosts or lk.b in topo.hosts)
    try:
        cdf = load_cdf(a.background_cdf)
        work = ps_workload(a.model, a.scale, a.groups, a.iterations, host_bps, a.compute_ratio) \
            if a.workload in ("ps-train", "ring-train") else None
    except WorkloadError as err:
        print(f"dlcp-sim: {err}", file=sys.stderr)
        return 2
    index = {h: i for i, h in enumerate(topo.hosts)}
    flows = []
    if a.workload == "ps-incast":
        flows = [(index[f.src], index[f.dst], f.bytes, f.start_s, f.layer_class)
                 for f in ps_incast(topo, a.gradient_bytes, 0, 0, a.seed)]
    out = Path(a.out or f"results/sim-{a.preset}-{a.workload}-{time.strftime('%Y%m%d-%H%M%S')}")
    if a.parallel < 1:
        print(f"dlcp-sim: --parallel: expected at least 1, got {a.parallel}", file=sys.stderr)
        return 2
    t0 = time.perf_counter()

    def one(pair: tuple[float, str]):
        load, mode = pair
        if stop["signal"]:
            return None                         # stopped before this run started: left out
        spec = JobSpec(work, cdf, a.background_cdf, load, a.loss_bound, a.seed, a.max_sim_ms / 1000,
                       background_until_s=a.background_ms / 1000 if a.background_ms is not None else None,
                       flows=flows, collective="ring" if a.workload == "ring-train" else "ps",
                       progress_lines_s=0.0 if a.parallel == 1 else PARALLEL_PROGRESS_S)
        print(f"dlcp-sim: {a.preset} {a.workload} {mode} load {load} ...\n", end="", flush=True)  # one write: threads
        if knobs:                               # as defaults in the fresh process, before the network is built
            (r,) = run_jobs_fresh([(knobs, topo, policy, mode, spec)])
            r.extra["transport_knobs"] = knobs
        else:
            r = run_job_fresh(topo, policy, mode, spec)
        r.extra["load"] = load
        s = job_report.summary(r)
        print(f"dlcp-sim: {mode} load {load}: iteration mean {s['iteration']['mean_ms']} ms "
              f"({s['iteration']['iterations']} closed); gradient FCT mean {s['gradient']['mean_us']} µs "
              f"p99 {s['gradient']['p99_us']} µs ({s['gradient']['completed']}/{s['gradient']['flows']}); "
              f"{r.events:,} events in {r.run_wall_s:.1f} s Run ({s['events_per_s']:,}/s), build "
              f"{r.build_wall_s:.1f} s, {s['max_rss_mb']} MB\n", end="", flush=True)
        if "stopped_early" in r.extra:
            print(f"dlcp-sim: {mode} load {load}: {_stopped_text(r.extra['stopped_early'])} "
                  f"({s['iteration']['iterations']} iterations closed); records of everything closed so far "
                  f"written\n", end="", flush=True)
        return r

    pairs = [(load, mode) for load in loads for mode in modes]
    with stop_on_signals() as stop, ThreadPoolExecutor(max_workers=a.parallel) as pool:   # a process per run
        done = list(pool.map(one, pairs))
    runs = [r for r in done if r is not None]
    left_out = [f"{mode} load {load}" for (load, mode), r in zip(pairs, done, strict=True) if r is None]
    if not runs:
        print(f"dlcp-sim: stopped by {stop['signal']} before any run started; nothing written", file=sys.stderr)
        return 1
    what = (f"{'ring all-reduce over every host' if a.workload == 'ring-train' else 'PS'} job of {a.model} x {a.scale:g} ({work.bytes_per_worker:,} B of gradients per worker per "
            f"iteration in {len(work.group_bytes)} groups), {a.iterations} iterations, compute ratio "
            f"{a.compute_ratio}" if work else f"{len(flows)} gradient flows of {a.gradient_bytes} B into h0")
    header = (f"# dlcp-sim {a.preset}: {a.workload}\n\n{topo.description}. Policy: {policy.source}. {what}; "
              f"background {a.background_cdf} at loads {loads} of each host link"
              f"{f' for the first {a.background_ms} ms' if a.background_ms is not None else ''}; DLCP loss bound "
              f"{a.loss_bound}; seed {a.seed}{f'; DLCP transport knobs {knobs}' if knobs else ''}. Whole command {time.perf_counter() - t0:.0f} s wall, {a.parallel} run(s) "
              f"at a time.")
    stopped = [f"{r.mode} load {r.extra['load']}: {_stopped_text(r.extra['stopped_early'])}"
               for r in runs if "stopped_early" in r.extra]
    if stopped or left_out:
        header += ("\n\n**Not a complete run.** " + "; ".join(stopped) + (". " if stopped else "")
                   + (f"Not run (stopped before they started): {', '.join(left_out)}. " if left_out else "")
                   + "A stopped run's records are those of a run that ended at --max-sim-ms at that time: "
                     "iterations and transfers still open then are recorded open (iter_s null, completed false).")
    report = job_report.write(out, runs, header)
    if stop["signal"] and a.crosscheck_source == "run":
        print("dlcp-sim: stopped early: the Mininet cross-check is not run", file=sys.stderr)
        a.crosscheck_source = None
    _append_crosscheck(report, a.crosscheck_source)
    print(f"dlcp-sim: wrote {report}")
    return 0


def _stopped_text(stop: dict) -> str:
    """How a run ended early (job.run_job's extra["stopped_early"])."""
    return f"stopped early by {stop['signal']} at {stop['sim_ms']:.3f} ms simulated"


if __name__ == "__main__":
    sys.exit(main())
