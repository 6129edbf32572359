"""Cross-check with emulation: the Mininet scenarios `tcp-bulk` and `ecmp-collision` rebuilt in ns-3
and compared with the Mininet runs on record (issue 13, item 7).

Why this exists: the simulator is only trusted for the paper's scale if it agrees with the
emulation where both can run. This script rebuilds the two Mininet scenarios of
mininet_topos/scenarios.py in ns-3 (same leaf-spine, 20 Mbit/s links, 50 µs per link, 64-packet
queues, the controller's default policy for DLCP and one 64-packet FIFO for TCP cubic as the
status-quo switches; the same jobs on the same hosts: PS digits-wide with its six tensors and
their layer classes, a ring all-reduce of resnet50 x 0.005 in 4 buckets, compute ratio 1 with
overlap; tcp-bulk's two long-lived cubic flows; host_agent's own transport and admission timings
instead of the µs-scaled ones) and compares, per scenario and job, the direction of every DLCP-vs-TCP-cubic
comparison (iteration mean and p99, tail drops) and the selective drops per queue and per
magnitude-class group with the Mininet runs (`results/<run>/runs.jsonl`, `iterations.jsonl`).
The tolerance is stated in TOLERANCE and docs/simulation.md. Two more comparisons make it like with like:
each job's iteration mean "beside the other job" (only iterations that ran while the other job did, on both
sides: Mininet's agents take seconds to start, and in some runs one job ran alone), and, where the Mininet record
has its TCP runs' ECMP placements (``--extract RUN --tcp-conns FILE``, simulation/ecmp_placement.py), the TCP
cubic rebuild once per placement, compared per Mininet run (``run_placed``, ``compare_placements``).

    python -m simulation.crosscheck [--scenario tcp-bulk,ecmp-collision] [--mininet-tcp-bulk DIR] ...

Each run writes crosscheck.json with its date, commit and machine load; the ones in RECORDED (copied
there by hand after a run, with the docs: the rebuild as is, and the same with the switch ports at a
share of their link rate, as software switches that lose link time while backlogged) are what every
`dlcp-sim` report quotes (``report_section``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

from host_agent.overlap import (
    PS_MERGE_PACKETS,
    PS_SLICE_PACKETS,
    PS_TAPER_PACKETS,
    ComputeModel,
    PsPlan,
    buckets_of,
)
from host_agent.policy import TagPolicy
from host_agent.ring import bucket_need_positions
from host_agent.traffic import layer_sizes, load_profile
from simulation.job import JobDef, JobSpec
from simulation.provenance import provenance
from simulation.workload import PsWorkload

LINK_BPS = 20_000_000
MODES = ("dlcp", "tcp-cubic")
NUM_LAYER_CLASSES = 8
DIGITS_WIDE = [64 * 400, 400, 400 * 400, 400, 400 * 10, 10]     # the MLP's tensors (W1, b1, W2, b2, W3, b3)
RING_BUCKETS_IN_FLIGHT = 1      # dlcp-agent --buckets-in-flight (default 1): the Mininet ring's buckets one at a time
PS_MTU = 1500                   # dlcp-agent --mtu (default 1500): 362 float32 per DATA packet, as ns-3's payload
TIE = 0.05                      # |ratio - 1| within this is "no difference" (a direction of its own)
FACTOR = 2.0                    # selective drops per queue / class group: ns-3 within [1/2, 2] x Mininet's mean
MIN_COUNT = 5.0                 # ... for classes with at least this many drops per run in Mininet
TOLERANCE = (f"direction: DLCP / TCP cubic ratio > {1 + TIE:g} slower, < {1 - TIE:g} faster, else a tie, and the "
             f"two must name the same; selective drops per run, per queue and per magnitude group: ns-3 within "
             f"{1 / FACTOR:g}x..{FACTOR:g}x of Mininet's mean where Mininet has >= {MIN_COUNT:g} per run, "
             f"below {MIN_COUNT:g} per run where Mininet has less")
MAG_GROUPS = (("m0-3", range(0, 4)), ("m4-7", range(4, 8)), ("m8-11", range(8, 12)), ("m12-15", range(12, 16)))
# the Mininet runs on record (docs/simulation.md "Cross-check with Mininet"), extracted from results/<run>/
# (git-ignored) by ``--extract``: per run mode, seed, iterations, drops; per iteration and worker its time
DATA = Path(__file__).resolve().parent / "data" / "mininet"
# tcp-bulk: session 15's record at c5fa973 (H15c, slot 21:15-21:21 UTC, from a clone, through quiet.sh,
# --no-calibrate, dlcp and tcp-cubic interleaved), 6 seeds x 6 iterations. ecmp-collision: session 16's (H16b, slot
# M1 01:35-01:52 UTC, the same way at 64e4e5d, whose Mininet side is c5fa973's), three studies of 8 seeds x 4
# iterations (seeds 1-8, 9-16, 17-24) merged, with every iteration's start and every TCP run's ECMP placement
# (``--extract RUN DEST --tcp-conns FILE``); session 15's (8 seeds, 21:21 UTC), session 5's (the 04:50 demo, H10b's
# 04:18 study) and older ones stay in DATA for --mininet-tcp-bulk / --mininet-ecmp-collision
RECORDS = {"tcp-bulk": DATA / "tcp-bulk-20261203-211506", "ecmp-collision": DATA / "ecmp-collision-20261204-013500"}
# the cross-check runs every dlcp-sim report quotes (crosscheck.json files, copied here after a run): the
# rebuild as is, and with the switch ports at a share of their rate: 0.5 in both modes (about what session 5's
# Mininet switches delivered while backlogged, 0.35-0.75), and 0.8 in DLCP runs with 0.87 in TCP runs (what the
# switches of session 15's records delivered, backlog-weighted over every port of both scenarios' pcap runs,
# simulation.pcap_drain; docs/simulation.md "Cross-check with Mininet")
RECORDED = (Path(__file__).resolve().parent / "data" / "crosscheck.json",
            Path(__file__).resolve().parent / "data" / "crosscheck-switch-rate-0.5.json",
            Path(__file__).resolve().parent / "data" / "crosscheck-switch-rate-per-mode.json")
RUN_KEYS = ("mode", "seed", "iterations", "failure", "selective_drops", "tail_drops", "placement")
ITER_KEYS = ("scenario", "job", "mode", "seed", "worker", "iteration", "iter_time_s", "start_s")
# Mininet starts every agent of a run at once, but each takes 4-14 s to reach its first iteration on the loaded
# 2-core machine, so in some runs one job ran before or after the other: in the records' ecmp-collision study
# the ring started after the PS had ended in 8 of 16 runs (0.65-0.85 s per ring iteration alone, 1.07-1.44 s
# beside the PS). ns-3 starts both jobs at 0. "Beside" comparisons keep, on both sides, only the iterations
# whose midpoint lies within the other job's span in the same run (``iteration_times(beside=True)``)
# host_agent's timings (docs/simulation.md's mapping table): RTO 20 ms..0.5 s, hold-off 0.5 ms, AIMD
# (ratecontrol.py), and its admission (receiver.py GRANT_IDLE, GRANT_TICK, GRANT_MEMORY; ratecontrol.py
# GRANT_BURST_S; endpoint.py WRITE_OFF_MIN and the grant wait's 0.1 s), not the µs-scaled defaults: at
# 20 Mbit/s a packet takes 0.6 ms, so a 0.5 ms GRANT_IDLE counted every sender idle between two packets
HOST_AGENT_TIMING = {"ecnEchoGap": 1e-3, "decreaseGap": 10e-3, "increaseInterval": 5e-3,
                     "grantIdle": 0.5, "grantTick": 0.02, "grantMemory": 2.0, "grantBurstS": 2e-3,
                     "writeOffMin": 0.1, "grantWaitMin": 0.1}


def _classes(positions: list[int], n_layers: int) -> list[int]:
    """TagPolicy.layer_class (front_first): 8 equal groups in model order, front = 7."""
    return [NUM_LAYER_CLASSES - 1 - (p * NUM_LAYER_CLASSES) // n_layers for p in positions]


def _work(elems: list[int], groups: list[list[int]], iterations: int) -> PsWorkload:
    compute = ComputeModel.scaled(elems, LINK_BPS / 1e6, 1.0)
    return PsWorkload("", 1.0, [4 * sum(elems[i] for i in g) for g in groups],
                      _classes([g[0] for g in groups], len(elems)),
                      [sum(compute.forward[i] for i in g) for g in groups],
                      [sum(compute.backward[i] for i in g) for g in groups], iterations)


def digits_wide(iterations: int, sliced: bool = True) -> PsWorkload:
    """PS digits-wide as host_agent's PS moves it (``ps_worker_udp``, ``PsPlan`` at MTU 1500 with the
    defaults PS_SLICE_PACKETS, PS_MERGE_PACKETS, PS_TAPER_PACKETS): one push per tensor of the plan, each
    with its layer's class (7, 6, 5, 3, 2, 1 by layer). The hidden layer W2 goes in six slices (110, 110,
    110, 64, 32, 16 packets), listed here in reverse so that the job's backward pass (groups in reverse
    order) pushes them in the order a worker's send() does, the 110-packet slices first and the 16-packet
    one last; a layer's forward and backward compute sit on the group of its first slice, so its forward
    waits for all its slices and backprop pushes them all at once. ``sliced=False``: one push per layer
    (the PS before session 6's slices; the cross-check's records until session 15)."""
    if not sliced:
        return _work(DIGITS_WIDE, [[i] for i in range(len(DIGITS_WIDE))], iterations)
    shapes = [(64, 400), (400,), (400, 400), (400,), (400, 10), (10,)]
    plan = PsPlan.build(shapes, PS_MTU, PS_SLICE_PACKETS, PS_MERGE_PACKETS, PS_TAPER_PACKETS)
    compute = ComputeModel.scaled(DIGITS_WIDE, LINK_BPS / 1e6, 1.0)
    classes = _classes(list(range(len(shapes))), len(shapes))
    sizes, cls, fwd, bwd = [], [], [], []
    for layer, tensors in enumerate(plan.of_layer()):
        if any(plan.tensors[s][0] != layer or plan.tensors[s][2] > plan.offsets[layer + 1] for s in tensors):
            raise ValueError(f"digits-wide: a PS tensor spans layers (PsPlan {plan.tensors}); the rebuild "
                             f"maps only slices of single layers")
        for k, s in enumerate(reversed(tensors)):           # the layer's first slice is listed last
            _first, a, b = plan.tensors[s]
            last = k == len(tensors) - 1
            sizes.append(4 * (b - a))
            cls.append(classes[layer])
            fwd.append(compute.forward[layer] if last else 0.0)
            bwd.append(compute.backward[layer] if last else 0.0)
    return PsWorkload("", 1.0, sizes, cls, fwd, bwd, iterations)


def resnet_ring(scale: float, buckets: int, iterations: int) -> PsWorkload:
    """resnet50 x ``scale`` in ``buckets`` DDP-like buckets, classed as the DLCP ring worker tags them
    (``allreduce_worker_udp``: ``ring.bucket_need_positions`` with its default one bucket in flight, so every
    bucket inherits the front bucket's class 7; until 77e950b, session 5's records, by each bucket's first
    layer: 7, 2, 1, 0). Classes matter to the DLCP run only (TCP cubic's switches have one FIFO)."""
    elems = layer_sizes(load_profile("resnet50"), scale)
    groups = buckets_of(elems, buckets)
    work = _work(elems, groups, iterations)
    policy = TagPolicy()
    work.layer_class = [policy.layer_class(pos, out_of)
                        for pos, out_of in bucket_need_positions(elems, groups, RING_BUCKETS_IN_FLIGHT)]
    return work


def scenario(name: str) -> tuple[str, list[JobDef], list[tuple[int, int, int, float]], int]:
    """(preset, jobs, bulk TCP flows, iterations) of a Mininet scenario; Mininet's hN is host N-1."""
    if name == "tcp-bulk":
        it = 6                                  # the 22:20 demo's 6 iterations per run
        return ("mininet-tcp-bulk", [JobDef("ps", "ps", digits_wide(it), [0, 1, 3, 4])],
                [(5, 0, 1 << 34, 0.0), (2, 4, 1 << 34, 0.0)], it)
    if name == "ecmp-collision":
        it = 4
        return ("mininet-ecmp-collision",
                [JobDef("ps", "ps", digits_wide(it), [4, 0, 1]),
                 JobDef("ring", "ring", resnet_ring(0.005, 4, it), [2, 6, 3, 7])], [], it)
    raise KeyError(f"unknown scenario '{name}' (known: tcp-bulk, ecmp-collision)")


def run_scenario(name: str, out: Path, rate_share: dict[str, float] | None = None) -> list:
    """Both modes of scenario ``name`` in ns-3 (fresh process each); writes the usual job report.
    ``rate_share[mode]`` < 1: in that mode's run every switch port sends at that share of its 20 Mbit/s
    (Topology.switch_rate_share)."""
    from simulation import job_report
    from simulation.policy import policy_for
    from simulation.switch_model.transport_knobs import run_jobs_fresh
    from simulation.topology import preset

    pname, jobs, bulk, _ = scenario(name)
    topo = preset(pname)
    shares = {m: (rate_share or {}).get(m, 1.0) for m in MODES}
    policy = policy_for(LINK_BPS, None)
    runs = []
    for mode in MODES:
        # status quo: one 64-packet FIFO per port (Mininet's tcp-cubic switches), not 8 x 64
        pol = policy if mode == "dlcp" else dataclasses.replace(policy, queues=1)
        spec = _spec(jobs, bulk)
        print(f"crosscheck: {name} {mode} ...", flush=True)
        topo.switch_rate_share = shares[mode]
        # host_agent has no host egress priority: the Mininet hosts' DLCP and TCP share one queue
        (r,) = run_jobs_fresh([({"hostPriority": False}, topo, pol, mode, spec)])
        r.extra["load"] = 0.0
        runs.append(r)
    share = "".join(f" In the {m} run switch ports send at {f:g} x their link rate." for m, f in shares.items() if f != 1.0)
    job_report.write(out / name, runs, f"# ns-3 rebuild of the Mininet scenario `{name}`\n\n{topo.description}. "
                     f"Policy: {policy.source} (DLCP); TCP cubic: one 64-packet FIFO per port.{share}")
    return runs


def record_placements(record_dir: Path) -> list[dict[str, int]]:
    """The distinct ECMP placements of a Mininet record's TCP cubic runs whose jobs overlapped (an iteration
    beside the other job: the others have nothing to compare), none in a record without them."""
    recs = [json.loads(x) for x in (record_dir / "iterations.jsonl").read_text().splitlines()]
    out: list[dict[str, int]] = []
    for line in (record_dir / "runs.jsonl").read_text().splitlines():
        run = json.loads(line)
        p = run.get("placement")
        if p and p not in out and iteration_times([r for r in recs if (r["mode"], r["seed"]) == (run["mode"], run["seed"])
                                                   and r.get("start_s") is not None], "iter_time_s", beside=True):
            out.append(p)
    return out


def run_placed(name: str, out: Path, placements: list[dict[str, int]], rate_share: float = 1.0
               ) -> list[tuple[dict, SavedRun]]:
    """The TCP cubic run of scenario ``name`` once per ECMP placement (ecmp_placement: the ports each ns-3 host
    skips so that its connections hash as the placement says), all in one fresh process; written to
    ``out/<name>/placements.jsonl`` (``--from-results`` reads them back). The DLCP run has one placement (DATA
    sprayed, control hashed per tensor on fixed ports) and is the scenario's own."""
    from simulation import ecmp_placement
    from simulation.policy import policy_for
    from simulation.switch_model.transport_knobs import run_jobs_fresh
    from simulation.topology import preset

    pname, jobs, bulk, _ = scenario(name)
    pol = dataclasses.replace(policy_for(LINK_BPS, None), queues=1)
    todo = []
    for placement in placements:
        topo = preset(pname)
        topo.tcp_port_skip = ecmp_placement.ns3_port_skips(placement)
        topo.switch_rate_share = rate_share
        todo.append(({"hostPriority": False}, topo, pol, "tcp-cubic", _spec(jobs, bulk)))
    print(f"crosscheck: {name} tcp-cubic at {len(placements)} ECMP placements ...", flush=True)
    runs = run_jobs_fresh(todo)
    (out / name).mkdir(parents=True, exist_ok=True)
    with open(out / name / "placements.jsonl", "w") as f:
        for placement, (_, topo, *_), r in zip(placements, todo, runs, strict=True):
            f.write(json.dumps({"placement": placement, "tcp_port_skip": topo.tcp_port_skip, "mode": r.mode,
                                "counters": r.counters, "iterations": r.iterations}) + "\n")
    return load_placed(out / name)


def load_placed(directory: Path) -> list[tuple[dict, SavedRun]]:
    """``run_placed``'s runs as written (none if it did not run there)."""
    f = directory / "placements.jsonl"
    recs = [json.loads(x) for x in f.read_text().splitlines() if x.strip()] if f.is_file() else []
    return [(r["placement"], SavedRun(r["mode"], r["counters"], r["iterations"])) for r in recs]


def _spec(jobs: list[JobDef], bulk: list) -> JobSpec:
    return JobSpec(None, loss_bound=0.10, max_sim_s=60.0, jobs=jobs, bulk=bulk, bulk_tcp="TcpCubic",
                   holdoff_s=0.5e-3, rto_min_s=20e-3, transport=HOST_AGENT_TIMING)


def extract(src: Path, dst: Path, tcp_conns: Path | None = None) -> None:
    """Keep of a Mininet run directory what the cross-check reads (DLCP and TCP cubic only), with each
    iteration's start (``iteration_starts``) where the agents' own files are there, and each TCP run's ECMP
    placement from the connections sampled while the study ran (``tcp_conns``, ``run_placements``)."""
    dst.mkdir(parents=True, exist_ok=True)
    runs = [json.loads(x) for x in (src / "runs.jsonl").read_text().splitlines() if x.strip()]
    iters = [json.loads(x) for x in (src / "iterations.jsonl").read_text().splitlines() if x.strip()]
    iteration_starts(src, runs, iters)
    if tcp_conns is not None:
        run_placements(src, runs, [json.loads(x) for x in tcp_conns.read_text().splitlines() if x.strip()])
    for name, keys, recs in (("runs.jsonl", RUN_KEYS, runs), ("iterations.jsonl", ITER_KEYS, iters)):
        (dst / name).write_text("".join(json.dumps({k: r.get(k) for k in keys}) + "\n"
                                        for r in recs if r.get("mode") in MODES))


def iteration_starts(src: Path, runs: list[dict], iters: list[dict]) -> None:
    """Set ``start_s`` of every iteration record of a Mininet study (seconds after the run's first
    iteration began): an agent writes one JSON line per iteration, at its end, so its file's last write is
    the end of its last iteration, and its iterations ran back to back before it (``iter_time_s``; checked
    against the DLCP agents' own start stamps: within 0.03 s). Left unset for a run whose files are not
    there (an extract, a copy that lost its times)."""
    dirs = {(r["mode"], r["seed"]): _run_dir(src, r) for r in runs}
    workers: dict[tuple, list[dict]] = defaultdict(list)
    for rec in iters:
        workers[(rec["mode"], rec["seed"], rec["worker"])].append(rec)
    begun: dict[tuple, dict[str, float]] = defaultdict(dict)       # run -> worker -> its iteration 0's start
    for (mode, seed, worker), recs in workers.items():
        f = dirs.get((mode, seed), Path("/nonexistent")) / f"{worker}.jsonl"
        if not f.is_file() or any(r.get("iter_time_s") is None for r in recs):
            continue
        begun[(mode, seed)][worker] = f.stat().st_mtime - sum(r["iter_time_s"] for r in recs)
    for (mode, seed, worker), recs in workers.items():
        run = begun.get((mode, seed), {})
        if len(run) < len({w for m, s, w in workers if (m, s) == (mode, seed)}):
            continue                                                # every worker of the run, or none
        t = run[worker] - min(run.values())
        for rec in sorted(recs, key=lambda r: r["iteration"]):
            rec["start_s"] = round(t, 3)
            t += rec["iter_time_s"]


def _run_dir(src: Path, run: dict) -> Path:
    return src / Path(run.get("dir") or f"seed{run['seed']}-{run['mode']}").name


def run_placements(src: Path, runs: list[dict], conns: list[dict]) -> None:
    """Set ``placement`` of every TCP cubic run (ecmp_placement.FLOWS -> ECMP member) from the connections a
    study's sampler saw (``{"t", "local", "remote"}``, ``python -m simulation.ecmp_placement sample``): a run
    owns those first seen after the previous run's end (its agents' files' last write) and by its own."""
    import yaml

    from simulation import ecmp_placement

    net = yaml.safe_load((src / "net-tcp-cubic.yaml").read_text())
    host_ip = {h: spec["ip"] for h, spec in net["hosts"].items()}
    ends = sorted((max(f.stat().st_mtime for f in _run_dir(src, r).glob("*.jsonl")), i) for i, r in enumerate(runs)
                  if _run_dir(src, r).is_dir())
    prev = 0.0
    for end, i in ends:
        mine = [(c["local"], c["remote"]) for c in conns if prev < c["t"] <= end]
        if runs[i]["mode"] == "tcp-cubic":
            runs[i]["placement"] = ecmp_placement.mininet_placement(mine, host_ip)
        prev = end


def back_to_back(records: list[dict], key: str) -> list[dict]:
    """ns-3's iteration records with ``start_s``: both jobs start at 0 and a worker's iterations follow each
    other (``iter_s`` runs from one forward pass's end to the next: iteration 0 starts after the first
    forward pass, here counted from 0, as Mininet's are counted from the run's first iteration)."""
    t: dict[tuple, float | None] = {}
    out = []
    for rec in sorted(records, key=lambda r: (r["mode"], r["job"], r["worker"], r["iteration"])):
        k = (rec["mode"], rec["job"], rec["worker"])
        start = t.get(k, 0.0)
        out.append(rec | {"start_s": start})
        t[k] = None if start is None or rec.get(key) is None else start + rec[key]
    return out


def iteration_times(records: list[dict], key: str, beside: bool = False) -> dict[tuple[str, str], list[float]]:
    """(mode, job) -> per (run, iteration >= 1) the slowest worker's time (s), as Mininet's tables.
    ``beside``: only iterations whose midpoint (the earliest worker's start to the latest worker's end) lies
    within another job's span (its first start to its last end) in the same run; needs ``start_s``."""
    slowest: dict[tuple, float] = {}
    window: dict[tuple, list[float]] = {}
    span: dict[tuple, list[float]] = {}
    for rec in records:
        t = rec.get(key)
        if t is None:
            continue
        run = (rec["mode"], rec.get("seed", 0))
        if beside and rec.get("start_s") is not None:
            a, b = rec["start_s"], rec["start_s"] + t
            for table, k in ((span, (*run, rec["job"])), (window, (*run, rec["job"], rec["iteration"]))):
                w = table.setdefault(k, [a, b])
                w[0], w[1] = min(w[0], a), max(w[1], b)
        if rec["iteration"] < 1:
            continue
        k = (rec["mode"], rec["job"], rec.get("seed", 0), rec["iteration"])
        slowest[k] = max(slowest.get(k, 0.0), t)
    out: dict[tuple[str, str], list[float]] = defaultdict(list)
    for (mode, job, seed, it), t in sorted(slowest.items()):
        if beside:
            w = window.get((mode, seed, job, it))
            mid = (w[0] + w[1]) / 2 if w else None
            if mid is None or not any(j != job and a <= mid <= b for (m, s, j), (a, b) in span.items()
                                      if (m, s) == (mode, seed)):
                continue
        out[(mode, job)].append(t)
    return out


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)


def _p99(xs: list[float]) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, int(round(0.99 * (len(s) - 1)))))]


def direction(dlcp: float, tcp: float) -> str:
    if tcp <= 0:
        return "n/a"
    ratio = dlcp / tcp
    return "DLCP higher" if ratio > 1 + TIE else "DLCP lower" if ratio < 1 - TIE else "tie"


def drops_per_run(runs: list[dict]) -> dict[str, float]:
    """Mean per run of selective drops per queue (``q4``), per magnitude group (``m0-3``), total; tail drops."""
    acc: dict[str, float] = defaultdict(float)
    for r in runs:
        for key, n in (r.get("selective_drops") or {}).items():
            q, m = key.split("/")
            acc[q] += n
            acc["total"] += n
            for g, rng in MAG_GROUPS:
                if int(m[1:]) in rng:
                    acc[g] += n
        acc["tail"] += sum((r.get("tail_drops") or {}).values())
    return {k: v / len(runs) for k, v in acc.items()} if runs else {}


def compare(name: str, sim_runs: list, record_dir: Path, placed: list[tuple[dict, SavedRun]] | None = None) -> dict:
    """Every comparison of scenario ``name``: Mininet's direction vs ns-3's, drops within tolerance; with
    ``placed`` (``run_placed``) also per Mininet TCP run at its ECMP placement (``compare_placements``)."""
    mn_recs = [json.loads(x) for x in (record_dir / "iterations.jsonl").read_text().splitlines()]
    mn_iters = iteration_times(mn_recs, "iter_time_s")
    mn_runs = [json.loads(x) for x in (record_dir / "runs.jsonl").read_text().splitlines()]
    sim_recs = [rec | {"iter_time_s": rec["iter_s"]} for r in sim_runs for rec in r.iterations]
    sim_iters = iteration_times(sim_recs, "iter_time_s")
    rows = []
    jobs = sorted({j for _, j in sim_iters})
    for job in jobs:
        for stat, fn in (("iteration mean", _mean), ("iteration p99", _p99)):
            vals = {}
            for src, table in (("mininet", mn_iters), ("ns-3", sim_iters)):
                d, t = table.get(("dlcp", job)), table.get(("tcp-cubic", job))
                vals[src] = (fn(d) if d else None, fn(t) if t else None)   # None: no iteration closed
            rows.append(_row(f"{job}: {stat} (s)", vals))
    if len(jobs) > 1 and all(r.get("start_s") is not None for r in mn_recs):   # a record with the iterations' times
        tables = {"mininet": iteration_times(mn_recs, "iter_time_s", beside=True),
                  "ns-3": iteration_times(back_to_back(sim_recs, "iter_time_s"), "iter_time_s", beside=True)}
        for job in jobs:
            vals = {src: tuple(_mean(t[(m, job)]) if t.get((m, job)) else None for m in MODES)
                    for src, t in tables.items()}
            n = {src: [len(t.get((m, job), [])) for m in MODES] for src, t in tables.items()}
            rows.append(_row(f"{job}: iteration mean beside the other job (s; iterations: Mininet "
                             f"{'/'.join(map(str, n['mininet']))}, ns-3 {'/'.join(map(str, n['ns-3']))})", vals))
    mn_drops = {m: drops_per_run([r for r in mn_runs if r["mode"] == m and not r.get("failure")]) for m in MODES}
    sim_drops = {r.mode: drops_per_run([{"selective_drops": r.counters.get("selective_drops"),
                                         "tail_drops": r.counters.get("tail_drops")
                                         or {"q0": r.counters.get("drops", 0)}}])   # FIFO: every drop a tail drop
                 for r in sim_runs}
    rows.append(_row("tail drops per run", {src: (t["dlcp"].get("tail", 0.0), t["tcp-cubic"].get("tail", 0.0))
                                            for src, t in (("mininet", mn_drops), ("ns-3", sim_drops))}))
    drops = []
    keys = sorted({k for k in mn_drops["dlcp"] | sim_drops.get("dlcp", {}) if k != "tail"})
    for k in keys:
        mn, sim = mn_drops["dlcp"].get(k, 0.0), sim_drops.get("dlcp", {}).get(k, 0.0)
        ok = (1 / FACTOR) * mn <= sim <= FACTOR * mn if mn >= MIN_COUNT else sim < MIN_COUNT
        drops.append({"class": k, "mininet_per_run": round(mn, 1), "ns3_per_run": round(sim, 1), "within": ok})
    out = {"scenario": name, "mininet_run": str(record_dir), "comparisons": rows, "selective_drops": drops,
           "directions_agree": sum(r["agree"] for r in rows), "directions": len(rows),
           "drops_within": sum(d["within"] for d in drops), "drop_classes": len(drops)}
    per = compare_placements(sim_runs, placed, record_dir) if placed else []
    if per:
        out["placements"] = per
        out["placements_agree"] = {job: sum(bool(r[job] and r[job]["agree"]) for r in per) for job in ("ring", "ps")}
        out["placements_compared"] = {job: sum(r[job] is not None for r in per) for job in ("ring", "ps")}
    return out


def compare_placements(sim_runs: list, placed: list[tuple[dict, SavedRun]], record_dir: Path) -> list[dict]:
    """Per Mininet TCP cubic run with a known ECMP placement (``extract --tcp-conns``): each job's iteration
    mean beside the other job, DLCP (every DLCP run: one placement) against that run, in Mininet and in ns-3
    (the DLCP run against the TCP cubic run at the same placement, ``run_placed``)."""
    from simulation import ecmp_placement

    mn_recs = [json.loads(x) for x in (record_dir / "iterations.jsonl").read_text().splitlines()]
    mn_runs = [json.loads(x) for x in (record_dir / "runs.jsonl").read_text().splitlines()]
    dlcp = [r for r in sim_runs if r.mode == "dlcp"]
    if not dlcp or any(r.get("start_s") is None for r in mn_recs):
        return []
    mn_dlcp = iteration_times([r for r in mn_recs if r["mode"] == "dlcp"], "iter_time_s", beside=True)
    ns_dlcp = iteration_times(back_to_back([x | {"iter_time_s": x["iter_s"]} for x in dlcp[0].iterations],
                                           "iter_time_s"), "iter_time_s", beside=True)
    rows = []
    for run in sorted((r for r in mn_runs if r["mode"] == "tcp-cubic" and r.get("placement")), key=lambda r: r["seed"]):
        sim = next((r for p, r in placed if p == run["placement"]), None)
        if sim is None:
            continue
        mn_tcp = iteration_times([r for r in mn_recs if r["mode"] == "tcp-cubic" and r["seed"] == run["seed"]],
                                 "iter_time_s", beside=True)
        ns_tcp = iteration_times(back_to_back([x | {"iter_time_s": x["iter_s"]} for x in sim.iterations],
                                              "iter_time_s"), "iter_time_s", beside=True)
        row = {"seed": run["seed"], "collisions": ecmp_placement.collisions(run["placement"]),
               "placement": run["placement"]}
        for job in ("ring", "ps"):
            vals = {src: tuple(_mean(t[(m, job)]) if t.get((m, job)) else None for m, t in zip(MODES, tables, strict=True))
                    for src, tables in (("mininet", (mn_dlcp, mn_tcp)), ("ns-3", (ns_dlcp, ns_tcp)))}
            # a run whose jobs never overlapped (one started after the other had ended) has nothing to compare
            row[job] = _row(f"{job}: iteration mean beside the other job (s)", vals) if vals["mininet"][1] else None
        rows.append(row)
    return rows


def _row(what: str, vals: dict) -> dict:
    mn, sim = vals.get("mininet"), vals.get("ns-3")
    dm = direction(*mn) if mn and None not in mn else "n/a"
    ds = direction(*sim) if sim and None not in sim else "n/a"
    return {"what": what, "mininet": [_r(x) for x in mn] if mn else None, "mininet_direction": dm,
            "ns3": [_r(x) for x in sim] if sim else None, "ns3_direction": ds, "agree": dm == ds and dm != "n/a"}


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


def markdown(results: list[dict]) -> str:
    lines = [f"Tolerance: {TOLERANCE}.", ""]
    for res in results:
        lines += [f"### `{res['scenario']}` (Mininet: `{res['mininet_run']}`)", "",
                  "| comparison | Mininet DLCP / TCP cubic | direction | ns-3 DLCP / TCP cubic | direction | agree |",
                  "|---|---|---|---|---|---|"]
        for r in res["comparisons"]:
            lines.append(f"| {r['what']} | {_pair(r['mininet'])} | {r['mininet_direction']} | {_pair(r['ns3'])} | "
                         f"{r['ns3_direction']} | {'yes' if r['agree'] else '**no**'} |")
        lines += ["", "| DLCP selective drops per run | Mininet (mean) | ns-3 | within tolerance |", "|---|---|---|---|"]
        for d in res["selective_drops"]:
            lines.append(f"| {d['class']} | {d['mininet_per_run']} | {d['ns3_per_run']} | "
                         f"{'yes' if d['within'] else '**no**'} |")
        lines += ["", f"Directions agree: {res['directions_agree']} of {res['directions']}; selective-drop classes "
                      f"within tolerance: {res['drops_within']} of {res['drop_classes']}.", ""]
        if res.get("placements"):
            lines += ["Per ECMP placement (each Mininet TCP cubic run's, replayed in ns-3; DLCP: every run, one "
                      "placement); iteration means beside the other job, DLCP / TCP cubic (s):", "",
                      "| Mininet seed | ring-PS collisions | ring Mininet | ring ns-3 | agree | PS Mininet | PS ns-3 "
                      "| agree |", "|---|---|---|---|---|---|---|---|"]
            for p in res["placements"]:
                cells = [f"{_pair(p[j]['mininet'])} ({p[j]['mininet_direction']}) | {_pair(p[j]['ns3'])} "
                         f"({p[j]['ns3_direction']}) | {'yes' if p[j]['agree'] else '**no**'}" if p[j] else
                         "jobs did not overlap | - | -" for j in ("ring", "ps")]
                lines.append(f"| {p['seed']} | {p['collisions']} | {' | '.join(cells)} |")
            ok, n = res["placements_agree"], res["placements_compared"]
            lines += ["", f"Placements agreeing (runs whose jobs overlapped): ring {ok['ring']} of {n['ring']}, PS "
                          f"{ok['ps']} of {n['ps']}.", ""]
    return "\n".join(lines)


def _pair(p: list | None) -> str:
    return " / ".join("none closed" if x is None else f"{x:g}" for x in p) if p else "-"


class RecordError(Exception):
    """A recorded cross-check file that cannot be quoted (missing, not JSON, wrong shape): one line."""


def load_recorded(path: Path) -> dict:
    """The cross-check result file at ``path`` (crosscheck.json as ``main`` writes it)."""
    try:
        data = json.loads(Path(path).read_text())
    except OSError as err:
        raise RecordError(f"{path}: cannot read the cross-check record: {err.strerror}") from None
    except json.JSONDecodeError as err:
        raise RecordError(f"{path}:{err.lineno}: not JSON: {err.msg}") from None
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise RecordError(f"{path}: not a cross-check record (no 'results' list; written by "
                          f"`python -m simulation.crosscheck` since 2026-12-02 07:00 UTC)")
    for key in ("date", "commit"):
        if not isinstance(data.get(key), str):
            raise RecordError(f"{path}: field '{key}' missing")
    for i, res in enumerate(data["results"]):
        missing = [k for k in ("scenario", "comparisons", "directions_agree", "directions", "drops_within",
                               "drop_classes") if k not in res]
        if missing:
            raise RecordError(f"{path}: results[{i}]: field '{missing[0]}' missing")
    return data


def report_section(paths: list[Path]) -> str:
    """The cross-check's verdicts for a dlcp-sim report.md, quoted from the records at ``paths``."""
    lines = ["## Cross-check with Mininet", "",
             "Re-run with `python -m simulation.crosscheck [--switch-rate-share F]` (or `dlcp-sim --crosscheck "
             "run`). Tolerance, and what the disagreements are due to: docs/simulation.md, \"Cross-check with "
             "Mininet\".", ""]
    for path in paths:
        lines += _record_lines(Path(path))
    return "\n".join(lines) + "\n"


# what the ns-3 side of a cross-check depends on: a change here since a record makes the record stale
MODEL_PATHS = ("simulation/switch_model", "simulation/job.py", "simulation/scenario.py", "simulation/topology.py",
               "simulation/ecmp_placement.py",
               "simulation/workload.py", "simulation/crosscheck.py", "controller/data/default_policy.yaml")


def changes_since(commit: str) -> int | None:
    """Commits since ``commit`` (a record's, "abc1234 (+ local changes ...)") that touched MODEL_PATHS;
    None where git or the commit is not known here."""
    head = commit.split()[0] if commit else ""
    repo = Path(__file__).resolve().parent.parent
    try:
        res = subprocess.run(["git", "-C", str(repo), "rev-list", "--count", f"{head}..HEAD", "--", *MODEL_PATHS],
                             capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return int(res.stdout) if res.returncode == 0 and res.stdout.strip().isdigit() else None


def _record_lines(path: Path) -> list[str]:
    rec = load_recorded(path)
    since = changes_since(rec["commit"])
    stale = ("" if not since else f" **Stale:** {since} commit(s) since then changed the ns-3 model or the "
             f"cross-check (`git log {rec['commit'].split()[0]}..HEAD -- {' '.join(MODEL_PATHS)}`); "
             f"`dlcp-sim --crosscheck run` re-runs it with this code.")
    what = "the Mininet scenarios rebuilt as they are"
    share = rec.get("switch_rate_share", 1.0)
    if isinstance(share, dict) and len(set(share.values())) == 1:
        share = next(iter(share.values()))
    if isinstance(share, dict):
        what = (f"switch ports at {' and '.join(f'{f:g} x their link rate in the {m} runs' for m, f in share.items())}"
                f" (the shares Mininet's software switches delivered while backlogged in each mode)")
    elif share != 1.0:
        what = (f"switch ports at {share:g} x their link rate (a software switch's loss of link time while "
                f"backlogged; the shares measured in Mininet: docs/simulation.md)")
    lines = [f"### {what[0].upper()}{what[1:]}", "",
             f"Quoted from `{path.name}`: run {rec['date']} at commit {rec['commit']}, load average "
             f"{rec.get('load_average', '?')}.{stale}", "",
             "| scenario | comparison | Mininet DLCP / TCP cubic | direction | ns-3 DLCP / TCP cubic | direction | agree |",
             "|---|---|---|---|---|---|---|"]
    for res in rec["results"]:
        for r in res["comparisons"]:
            lines.append(f"| {res['scenario']} | {r['what']} | {_pair(r['mininet'])} | {r['mininet_direction']} | "
                         f"{_pair(r['ns3'])} | {r['ns3_direction']} | {'yes' if r['agree'] else '**no**'} |")
    lines.append("")
    for res in rec["results"]:
        off = [f"{d['class']} {d['mininet_per_run']} vs {d['ns3_per_run']}" for d in res.get("selective_drops", [])
               if not d["within"]]
        lines.append(f"* `{res['scenario']}` (Mininet record `{Path(res.get('mininet_run', '?')).name}`): directions "
                     f"agree {res['directions_agree']} of {res['directions']}; DLCP selective drops per run within "
                     f"tolerance {res['drops_within']} of {res['drop_classes']}"
                     + (f" (outside, Mininet vs ns-3: {', '.join(off)})" if off else "")
                     + (f"; per ECMP placement of Mininet's TCP runs, replayed in ns-3, the ring's direction beside "
                        f"the PS agrees in {res['placements_agree']['ring']} of {res['placements_compared']['ring']}, "
                        f"the PS's in {res['placements_agree']['ps']} of {res['placements_compared']['ps']}"
                        if res.get("placements") else "") + ".")
    return lines + [""]


@dataclasses.dataclass
class SavedRun:
    """An ns-3 run as ``run_scenario`` wrote it (runs.json, iterations.jsonl): enough for ``compare``."""
    mode: str
    counters: dict
    iterations: list[dict]


def load_runs(directory: Path) -> list[SavedRun]:
    """The runs of one scenario's ns-3 results directory (``--from-results``)."""
    iters = [json.loads(x) for x in (directory / "iterations.jsonl").read_text().splitlines() if x.strip()]
    return [SavedRun(r["mode"], r["counters"], [i for i in iters if i["mode"] == r["mode"]])
            for r in json.loads((directory / "runs.json").read_text())]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m simulation.crosscheck", description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", default="tcp-bulk,ecmp-collision")
    ap.add_argument("--mininet-tcp-bulk", default=str(RECORDS["tcp-bulk"]), help="Mininet run (results/<run> or its extract)")
    ap.add_argument("--mininet-ecmp-collision", default=str(RECORDS["ecmp-collision"]))
    ap.add_argument("--extract", nargs=2, metavar=("RUN_DIR", "DEST"),
                    help="only write the cross-check's extract of a Mininet run directory to DEST")
    ap.add_argument("--from-results", metavar="DIR", help="compare the ns-3 runs already in DIR/<scenario>/ "
                    "(as an earlier run of this script wrote them) instead of running ns-3")
    ap.add_argument("--switch-rate-share", default="1", metavar="F[,F_TCP]",
                    help="every switch port sends at F x its link rate (0 < F <= 1; the Mininet switches' "
                         "measured loss of link time to stalls), or F in the DLCP run and F_TCP in the TCP cubic "
                         "run; transport and thresholds keep the nominal rate")
    ap.add_argument("--tcp-conns", metavar="FILE", help="with --extract: the TCP connections sampled while the study "
                    "ran (python -m simulation.ecmp_placement sample FILE): each TCP cubic run's ECMP placement")
    ap.add_argument("--placements", choices=("record", "none"), default="record",
                    help="record (default): also run TCP cubic at every ECMP placement of the Mininet record's TCP "
                         "runs (where the record has them) and compare per placement; none: only the rebuild as is")
    ap.add_argument("--out", default=f"results/sim-crosscheck-{time.strftime('%Y%m%d-%H%M%S')}")
    a = ap.parse_args(argv)
    try:
        shares = [float(x) for x in a.switch_rate_share.split(",")]
    except ValueError:
        shares = []
    if len(shares) not in (1, 2) or not all(0 < f <= 1 for f in shares):
        print(f"crosscheck: --switch-rate-share: '{a.switch_rate_share}': expected one or two (DLCP, TCP cubic) "
              f"shares in (0, 1]", file=sys.stderr)
        return 2
    rate_share = dict(zip(MODES, shares * 2 if len(shares) == 1 else shares, strict=True))
    if a.extract:
        src = Path(a.extract[0])
        if not (src / "runs.jsonl").is_file() or not (src / "iterations.jsonl").is_file():
            print(f"crosscheck: --extract: {src} holds no runs.jsonl and iterations.jsonl", file=sys.stderr)
            return 2
        if a.tcp_conns and not Path(a.tcp_conns).is_file():
            print(f"crosscheck: --tcp-conns: {a.tcp_conns} not found", file=sys.stderr)
            return 2
        if a.tcp_conns and not (src / "net-tcp-cubic.yaml").is_file():
            print(f"crosscheck: --tcp-conns: {src} holds no net-tcp-cubic.yaml (the hosts' addresses)", file=sys.stderr)
            return 2
        extract(src, Path(a.extract[1]), Path(a.tcp_conns) if a.tcp_conns else None)
        return 0
    if a.tcp_conns:
        print("crosscheck: --tcp-conns: only with --extract", file=sys.stderr)
        return 2
    names = [s.strip() for s in a.scenario.split(",") if s.strip()]
    records = {"tcp-bulk": Path(a.mininet_tcp_bulk), "ecmp-collision": Path(a.mininet_ecmp_collision)}
    for n in names:
        if n not in records:
            print(f"crosscheck: --scenario: unknown '{n}' (known: {', '.join(records)})", file=sys.stderr)
            return 2
        for f in ("runs.jsonl", "iterations.jsonl"):
            if not (records[n] / f).is_file():
                print(f"crosscheck: --mininet-{n}: {records[n] / f} not found", file=sys.stderr)
                return 2
    out = Path(a.out)
    results = []
    record = provenance() | {"switch_rate_share": shares[0] if len(shares) == 1 else rate_share,
                             "tolerance": TOLERANCE}
    t0 = time.perf_counter()
    for n in names:
        if a.from_results:
            if not (Path(a.from_results) / n / "runs.json").is_file():
                print(f"crosscheck: --from-results: {Path(a.from_results) / n / 'runs.json'} not found", file=sys.stderr)
                return 2
            runs = load_runs(Path(a.from_results) / n)
            placed = load_placed(Path(a.from_results) / n)
        else:
            runs = run_scenario(n, out, rate_share)
            wanted = record_placements(records[n]) if a.placements == "record" else []
            placed = run_placed(n, out, wanted, rate_share["tcp-cubic"]) if wanted else []
        results.append(compare(n, runs, records[n], placed))
    out.mkdir(parents=True, exist_ok=True)
    record |= {"ns3_runs": str(a.from_results or out), "wall_s": round(time.perf_counter() - t0),
               "load_average_end": round(os.getloadavg()[0], 1), "results": results}
    (out / "crosscheck.json").write_text(json.dumps(record, indent=1) + "\n")
    text = markdown(results)
    (out / "crosscheck.md").write_text(f"# ns-3 vs Mininet ({time.perf_counter() - t0:.0f} s wall)\n\n{text}\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
