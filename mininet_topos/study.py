"""``dlcp-exp --scenario NAME``: one scenario, several modes, several seeds, interleaved, with statistics.

One Mininet network serves the whole study (the switch processes stay up); before each run the
controller re-applies the network YAML of that run's mode (``dlcpctl apply`` reconciles: DLCP
policy, ablation or status quo), so only what differs between modes changes. Runs go seed by seed,
each seed running every mode in a rotated order, so machine noise hits all modes alike. Switch
counters are read before and after each run and the difference is that run's.

Before the study, a calibration run checks that no switch process is CPU-bound (> 70 % of a
core on average) or CPU-starved (its packet thread waited for a CPU > 30 % of the run, cpu.py):
if one is, the links (and with them the emulated compute, which scales with the link) are slowed
down by 0.6x and the network restarted, at most ``max_scale_downs`` times and only while the
study's estimated duration stays within ``time_budget_s``; otherwise it keeps the speed and the
report flags the starvation. The Notes say what was measured and chosen.

A stated CPU load (``cpu_load``, in cores) makes a starved emulation reproducible instead of
accidental: during every run of every mode alike (and the calibration), busy-loop processes outside
the network (``CpuLoad``: one per started core, each busy ``duty`` of every ``CPU_LOAD_PERIOD_S``,
at the switches' nice level) compete with the switches and agents for the cores; each run's record
keeps the load asked for and the CPU the loaders actually got (``cpu_load``), and the report's Notes
say so. ``switch_nice`` (e.g. -10) runs every thread of every switch process at that nice level
before each run, above the agents, bulk flows and load (nice 0): on real hardware the network does
not share CPUs with the hosts, and in the emulation a switch that waits for a CPU delivers less than
its link rate (cpu.py). Off by default; the run records and the Notes say when it was used.

Output ``results/<stamp>-<scenario>/``: ``config.json``, ``iterations.jsonl`` (one record per worker
per iteration, fields in docs/experiments.md), ``runs.jsonl`` (one record per run: mode, seed,
counters, CPU and CPU wait, failure), ``calibration.jsonl`` (the calibration runs), ``report.md`` and plots, and ``<seed>-<mode>/`` with every process's log.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import yaml

from mininet_topos import agents, scenarios
from mininet_topos.cpu import (
    STARVED_WAIT_SHARE,
    TICKS,
    CpuSampler,
    cpu_bound_switches,
    cpu_ticks,
    starved_switches,
)
from mininet_topos.mininet_lock import mininet_lock
from mininet_topos.network import EmulatedNetwork
from mininet_topos.scenarios import MODES, Job, Scenario
from mininet_topos.topologies import Topology, build

FLOW_WARMUP_S = 1.0
SCALE_DOWN = 0.6            # calibration: link speed (and emulated compute) factor per scale-down
# The study-time estimate takes the other modes' iterations as this many times the calibrated
# (DLCP) mode's: in tcp-bulk, TCP cubic's runs took 1.3-1.7x DLCP's (08:10 demo, H10c's 12:22 runs).
OTHER_MODES_MARGIN = 1.5
# The competing bulk flows run Linux's default congestion control, set per socket: some machines
# (this project's VMs) default to bbr, and the scenarios' status quo is cubic.
BULK_TCP_CC = "cubic"
ALLOWED_CC = Path("/proc/sys/net/ipv4/tcp_allowed_congestion_control")
CPU_LOAD_PERIOD_S = 0.01    # a loader's busy/idle cycle (busy duty x this, then idle the rest)
# One loader: busy-loops for DUTY x PERIOD seconds, sleeps the rest of the period, until killed.
_LOADER = ("import sys, time\n"
           "duty, period = float(sys.argv[1]), float(sys.argv[2])\n"
           "busy, t = duty * period, time.monotonic()\n"
           "while True:\n"
           "    while time.monotonic() - t < busy:\n"
           "        pass\n"
           "    t += period\n"
           "    pause = t - time.monotonic()\n"
           "    if pause > 0:\n"
           "        time.sleep(pause)\n"
           "    else:\n"
           "        t = time.monotonic()\n")


class StudyError(RuntimeError):
    """The study could not run: one clear line."""


@dataclass
class StudyConfig:
    scenario: str = "incast"
    modes: tuple[str, ...] = ("dlcp", "tcp-cubic", "tcp-bbr", "udp-reliable")
    seeds: int = 5
    first_seed: int = 1
    iterations: int | None = None        # scenario default
    link_mbps: float | None = None       # scenario default
    compute_ratio: float | None = None   # scenario default
    overlap: bool = True
    loss_bound: float = 0.1
    queue_depth: int = 64
    timeout_s: float = 180.0             # per run
    target: str = "p4sim"
    out: str = "results"
    pcap: bool = False
    calibrate: bool = True
    max_scale_downs: int = 2
    time_budget_s: float | None = None   # calibration does not slow the links down past this (None: no limit)
    keep_speed_if_starved: str | None = None   # set (to the reason): starvation alone never slows the links
    dlcp_pull: bool = True               # PS workers listen on the DLCP port: parameters are DLCP too
    cpu_load: float = 0.0                # cores of busy-loop load kept on the machine during every run (0: none)
    switch_nice: int | None = None       # nice level of every switch thread during the runs (None: as started)
    notes: list[str] = field(default_factory=list)


NUMPY_WORKLOADS = ("digits", "digits-wide")   # host_agent.workloads.make_workload: every other name is a profile


def warm_workloads(scen: Scenario, seed: int) -> list[str]:
    """Compute now what a run's agents would otherwise each compute at start-up: seed ``seed``'s torch gradients
    of every job built on a model profile (host_agent ``ProfileWorkload`` -> ``warm_gradient_cache``). Without
    it the first run of a seed new to the machine started those agents seconds late (the torch import and a CNN in
    each, on the busy 2-core machine): in ecmp-collision the ring began after the PS job had ended in 8 of 16 runs
    of session 15's record and 14 of 48 in session 16's (docs/simulation.md, "Cross-check with Mininet").
    Returns the jobs warmed."""
    from host_agent.workloads import warm_gradient_cache
    warmed = []
    for job in scen.jobs:
        if job.kind in ("ps", "allreduce") and job.workload not in NUMPY_WORKLOADS:
            warm_gradient_cache(seed)
            warmed.append(job.name)
    return warmed


def run_order(modes: tuple[str, ...], seeds: list[int]) -> list[tuple[int, str]]:
    """Seed by seed; within seed k the mode list is rotated by k (interleaved, no fixed position)."""
    order = []
    for k, seed in enumerate(seeds):
        shift = k % len(modes)
        order += [(seed, m) for m in modes[shift:] + modes[:shift]]
    return order


def allow_congestion_controls(needed: set[str]) -> str | None:
    """Add ``needed`` to the kernel's allowed list and return the old list (None: nothing changed).

    A network namespace may make only an allowed congestion control its default, and gloo's
    sockets (torch-ddp's TCP modes) use the namespace default: with the list at "reno bbr", a
    namespace cannot pick cubic. Per-socket choices (our agents, the bulk flows) need no change:
    the runner is root. ``stop_network`` restores the old list.
    """
    try:
        old = ALLOWED_CC.read_text().split()
    except OSError:
        return None
    missing = sorted(needed - set(old))
    if not missing:
        return None
    ALLOWED_CC.write_text(" ".join(old + missing))
    return " ".join(old)


def cpu_load_plan(cores: float) -> tuple[int, float]:
    """(loader processes, duty cycle of each) that together keep ``cores`` cores busy: one loader
    per started core, the load split evenly (0.6 -> 1 at 0.6; 1.5 -> 2 at 0.75)."""
    if cores < 0 or not math.isfinite(cores):
        raise ValueError(f"cpu load {cores}: must be a finite number of cores >= 0")
    if cores == 0:
        return 0, 0.0
    n = math.ceil(cores - 1e-9)
    return n, cores / n


class CpuLoad:
    """``cores`` cores of busy-loop load (``cpu_load_plan``) while in use; ``result()`` afterwards
    says what was asked and what the loaders got (CPU seconds per wall second, all loaders)."""

    def __init__(self, cores: float, period_s: float = CPU_LOAD_PERIOD_S) -> None:
        self.cores = cores
        self.period_s = period_s
        self.procs, self.duty = cpu_load_plan(cores)
        self._popen: list[subprocess.Popen] = []
        self._ticks: list[int] = []
        self._t0 = self._t1 = 0.0

    def start(self) -> CpuLoad:
        for _ in range(self.procs):
            self._popen.append(subprocess.Popen([sys.executable, "-c", _LOADER, str(self.duty), str(self.period_s)],
                                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        self._t0 = time.monotonic()
        return self

    def stop(self) -> None:
        self._ticks = [cpu_ticks(p.pid) or 0 for p in self._popen]
        self._t1 = time.monotonic()
        for p in self._popen:
            p.kill()
        for p in self._popen:
            p.wait(timeout=5)
        self._popen = []

    def result(self) -> dict:
        span = self._t1 - self._t0
        got = sum(self._ticks) / TICKS / span if span > 0 else 0.0
        return {"cores": self.cores, "procs": self.procs, "duty": round(self.duty, 4), "period_s": self.period_s,
                "measured_cores": round(got, 3)}


def renice_threads(pid: int, nice: int) -> int:
    """Set the nice level of every thread of ``pid`` (Linux's setpriority on a pid changes one
    thread only) and of its scheduler autogroup; returns how many threads were set (0 once the
    process is gone).

    With autogroup scheduling (``/proc/sys/kernel/sched_autogroup_enabled``, on in this VM's
    kernel) the CPU is shared between sessions first and a thread's nice level counts only within
    its session; every switch and agent runs in a session of its own, so the nice level that
    matters is the autogroup's (``/proc/<pid>/autogroup``). Measured: threads at nice -10 alone left
    leaf1 waiting 53-54 % of a run, as at nice 0 (tcp-bulk, 0.5-core load, 20:47-20:52 UTC).
    """
    try:
        tids = [int(t.name) for t in Path(f"/proc/{pid}/task").iterdir() if t.name.isdigit()]
    except OSError:
        return 0
    done = 0
    for tid in tids:
        try:
            os.setpriority(os.PRIO_PROCESS, tid, nice)
            done += 1
        except ProcessLookupError:
            continue
    try:
        Path(f"/proc/{pid}/autogroup").write_text(str(nice))
    except OSError:                 # no autogroup support, or the process is gone
        pass
    return done


def _sh(cmd: list[str], what: str, timeout: float = 120.0) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    if proc.returncode != 0:
        last = (proc.stderr.strip() or proc.stdout.strip()).splitlines()[-1:] or ["(no output)"]
        raise StudyError(f"{what} failed (exit {proc.returncode}): {last[0]}")
    return proc.stdout


class Study:
    def __init__(self, cfg: StudyConfig, log=print) -> None:
        self.cfg = cfg
        self.scen: Scenario = scenarios.get(cfg.scenario)
        self.modes = cfg.modes
        self.iterations = cfg.iterations or self.scen.iterations
        self.link_mbps = cfg.link_mbps or self.scen.link_mbps
        self.compute_ratio = self.scen.compute_ratio if cfg.compute_ratio is None else cfg.compute_ratio
        self.log = log
        self.run_dir = Path(cfg.out).resolve() / f"{time.strftime('%Y%m%d-%H%M%S')}-{cfg.scenario}"
        self.net: EmulatedNetwork | None = None
        self.topo: Topology | None = None
        self.pipeline: dict[str, Path] = {}
        self.configs: dict[str, Path] = {}
        self._allowed_cc_before: str | None = None

    # -- network ----------------------------------------------------------------------------
    def _topology(self) -> Topology:
        topo = build(self.scen.topo, **self.scen.topo_params)
        for link in topo.links:
            link.rate_bps = int(self.link_mbps * 1e6)
        for job in self.scen.jobs:
            for h in job.hosts:
                if h not in topo.hosts:
                    raise StudyError(f"scenario {self.scen.name}: job {job.name} names host {h}, not in {topo.name}")
        return topo

    def start_network(self) -> None:
        from mininet_topos.experiment import ExperimentConfig, netconfig
        self.topo = self._topology()
        if any(j.kind == "torch-ddp" for j in self.scen.jobs):
            self._allowed_cc_before = allow_congestion_controls({MODES[m].tcp_cc for m in self.modes
                                                                 if MODES[m].tcp_cc})
        self.net = EmulatedNetwork(self.topo, self.run_dir / "switches", target=self.cfg.target, pcap=self.cfg.pcap,
                                   queue_depth=self.cfg.queue_depth)
        self.net.start()
        default_policy = shipped_policy()
        shim = ExperimentConfig(target=self.cfg.target, link_mbps=self.link_mbps, queue_depth=self.cfg.queue_depth)
        for name in self.modes:
            doc = netconfig(self.topo, self.net, self.pipeline, shim, "dlcp")
            policy = scenarios.switch_policy(MODES[name], default_policy)
            if policy is not None:
                doc["policy"] = policy
            path = self.run_dir / f"net-{name}.yaml"
            path.write_text(yaml.safe_dump(doc, sort_keys=False))
            self.configs[name] = path

    def stop_network(self) -> None:
        if self.net is not None:
            self.net.stop()
            self.net = None
        if self._allowed_cc_before is not None:
            ALLOWED_CC.write_text(self._allowed_cc_before)
            self._allowed_cc_before = None

    # -- one run ----------------------------------------------------------------------------
    def _job_commands(self, job: Job, mode: str, seed: int, iterations: int, out_dir: Path) -> dict[str, list[str]]:
        assert self.topo is not None
        m = MODES[mode]
        hosts = [self.topo.hosts[h] for h in job.hosts]
        extra = ["--job", str(job.job_id), "--compute-ratio", str(self.compute_ratio),
                 "--link-mbps", str(self.link_mbps), "--overlap" if self.cfg.overlap else "--no-overlap"]
        if m.tcp_cc:
            extra += ["--tcp-cc", m.tcp_cc]
        common = dict(mode=m.agent, loss_bound=self.cfg.loss_bound, seed=seed, timeout=self.cfg.timeout_s)
        if job.kind == "ps":
            server, workers = hosts[0], hosts[1:]
            cmds = {server.name: agents.ps_server(server, len(workers), job.workload, iterations,
                                                  out=out_dir / f"{server.name}.jsonl",
                                                  extra=(*extra, "--scale", str(job.scale)), **common)}
            for rank, w in enumerate(workers):
                bind = ("--bind", f"{w.ip}:{agents.PS_PORT}") if self.cfg.dlcp_pull else ()
                cmds[w.name] = agents.ps_worker(server, rank, len(workers), job.workload, iterations,
                                                out=out_dir / f"{w.name}.jsonl",
                                                extra=(*extra, "--scale", str(job.scale), *bind), **common)
            return cmds
        if job.kind == "allreduce":
            return {h.name: agents.allreduce_rank(hosts, r, job.workload, iterations, out=out_dir / f"{h.name}.jsonl",
                                                  scale=job.scale, extra=(*extra, "--buckets", str(job.buckets)),
                                                  **common)
                    for r, h in enumerate(hosts)}
        if job.kind == "torch-ddp":     # PyTorch DDP, digits CNN (host_agent/torch_train.py); TCP modes: gloo
            cmds = {h.name: agents.torch_ddp_rank(hosts, r, iterations, out=out_dir / f"{h.name}.jsonl", **common)
                    for r, h in enumerate(hosts)}
            if m.tcp_cc:                # gloo's sockets use the host's default congestion control (per netns)
                cmds = {h: ["sh", "-c", f'sysctl -qw net.ipv4.tcp_congestion_control={m.tcp_cc} && exec "$@"', "sh", *c]
                        for h, c in cmds.items()}
            return cmds
        raise StudyError(f"scenario {self.scen.name}: job {job.name}: unknown kind {job.kind!r}")

    def _counters(self, config: Path) -> dict:
        from mininet_topos.experiment import _port_drops, _switch_stats, _tail_drops
        raw = _sh(agents.dlcpctl(config, "--json", "stats"), "dlcpctl stats")
        stats = _switch_stats(json.loads(raw) if raw.strip() else {})
        assert self.net is not None
        stats["tail_drops"] = _tail_drops(self.net) if self.cfg.target == "p4sim" else {}
        if self.cfg.target == "p4sim":
            stats.update(_port_drops(self.net))
        return stats

    def run_once(self, mode: str, seed: int, iterations: int, tag: str = "") -> dict:
        """One mode with one seed on the running network; returns the run record."""
        assert self.net is not None and self.topo is not None
        out_dir = self.run_dir / f"{tag}seed{seed}-{mode}"
        out_dir.mkdir(parents=True, exist_ok=True)
        warm_workloads(self.scen, seed)            # before any agent starts: every job's start-up as fast
        config = self.configs[mode]
        _sh(agents.dlcpctl(config, "apply"), f"dlcpctl apply ({mode})")
        before = self._counters(config)
        sampler = CpuSampler(1.0)
        for name in self.topo.switches:
            proc = self.net.switch(name).process
            if proc is not None:
                sampler.add(f"switch:{name}", proc.pid)
                if self.cfg.switch_nice is not None:
                    renice_threads(proc.pid, self.cfg.switch_nice)
        sampler.start()
        load = CpuLoad(self.cfg.cpu_load).start()
        flows: list[subprocess.Popen] = []
        agents_running: dict[str, subprocess.Popen] = {}
        exit_at: dict[str, float] = {}
        failure = None
        t_start = time.monotonic()
        try:
            sinks = {f.dst for f in self.scen.flows}
            for dst in sorted(sinks):
                flows.append(self._popen(dst, agents.tcp_sink(self.cfg.timeout_s + 30), out_dir / f"sink-{dst}.log"))
            for i, f in enumerate(self.scen.flows):
                cmd = agents.tcp_bulk(self.topo.hosts[f.dst], self.cfg.timeout_s + 30, cc=BULK_TCP_CC)
                flows.append(self._popen(f.src, cmd, out_dir / f"bulk{i}-{f.src}.log"))
            if flows:
                time.sleep(FLOW_WARMUP_S)   # the bulk flows are long-lived: running before training starts
            for job in self.scen.jobs:
                for host, cmd in self._job_commands(job, mode, seed, iterations, out_dir).items():
                    key = f"{job.name}/{host}"
                    agents_running[key] = self._popen(host, cmd, out_dir / f"{host}.log")
                    sampler.add(f"agent:{key}", agents_running[key].pid)
            deadline = time.monotonic() + self.cfg.timeout_s + 30
            while len(exit_at) < len(agents_running):
                now = time.monotonic()
                for key, p in agents_running.items():
                    if key not in exit_at and p.poll() is not None:
                        exit_at[key] = now
                if any(agents_running[k].returncode for k in exit_at):
                    break                          # the run is lost: stop the others now
                dead = self.net.dead_switches()
                if dead:
                    raise StudyError(f"switch {', '.join(dead)} died during {mode} seed {seed}; "
                                     f"see {self.run_dir}/switches/{dead[0]}.log")
                if now > deadline:
                    failure = f"agents still running after {self.cfg.timeout_s + 30:.0f} s"
                    break
                time.sleep(0.2)
        finally:
            for p in [*agents_running.values(), *flows]:
                if p.poll() is None:
                    p.terminate()
            for p in [*agents_running.values(), *flows]:
                try:
                    p.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    p.kill()
            try:
                cpu = sampler.stop()
            finally:
                load.stop()             # busy loops never outlive the run, whatever the sampler did
        failed = sorted((t, k) for k, t in exit_at.items() if agents_running[k].returncode)
        if failed:
            key = failed[0][1]
            host = key.split("/", 1)[1]
            log = out_dir / f"{host}.log"
            last = (log.read_text().strip().splitlines() or ["(empty log)"])[-1] if log.exists() else "(no log)"
            failure = (f"{mode} seed {seed}: the first error is on {host} (exit {agents_running[key].returncode}): "
                       f"{last}; see {log}")
        after = self._counters(config)
        counters = _diff(before, after)
        bulk = _bulk_mbps(out_dir, time.monotonic() - t_start)
        time.sleep(0.5)                            # let the queues drain before the next run
        return {"mode": mode, "seed": seed, "iterations": iterations, "seconds": round(time.monotonic() - t_start, 1),
                "failure": failure, "cpu": cpu, "cpu_bound_switches": cpu_bound_switches(cpu),
                "starved_switches": starved_switches(cpu), "machine_cpu": sampler.machine(), **counters,
                "bulk_tcp_mbps": bulk, "cpu_load": load.result() if load.procs else None,
                "switch_nice": self.cfg.switch_nice,
                "dir": str(out_dir)}

    def _popen(self, host: str, cmd: list[str], log: Path) -> subprocess.Popen:
        assert self.net is not None
        with open(log, "w") as f:
            return self.net.host(host).popen(cmd, stdout=f, stderr=subprocess.STDOUT, env=agents.agent_env())

    # -- records --------------------------------------------------------------------------------
    def records(self, run: dict) -> list[dict]:
        return collect_records(Path(run["dir"]), self.scen, run["mode"], run["seed"])

    # -- the whole study ------------------------------------------------------------------------
    def calibrate(self) -> None:
        """Scale the links down until no switch is CPU-bound or CPU-starved in a short run of the
        busiest mode, as long as the study still fits its time budget; the Notes say what was chosen."""
        mode = "dlcp" if "dlcp" in self.modes else self.modes[0]
        its = min(3, self.iterations)
        for attempt in range(self.cfg.max_scale_downs + 1):
            run = self.run_once(mode, self.cfg.first_seed, its, tag=f"calibrate{attempt}-")
            with open(self.run_dir / "calibration.jsonl", "a") as f:
                f.write(json.dumps({"link_mbps": self.link_mbps, **run}) + "\n")
            self._note(f"calibration at {self.link_mbps:g} Mbit/s ({mode}, {its} iterations, {run['seconds']:.0f} s): "
                       f"{cpu_verdict(run)}")
            if run["failure"]:
                raise StudyError(f"calibration run failed: {run['failure']}")
            slower, note = calibration_decision(run, self.link_mbps, attempt, self.cfg.max_scale_downs,
                                                self.estimate_study_s(run, SCALE_DOWN),
                                                self.cfg.time_budget_s, self.cfg.keep_speed_if_starved)
            if note:
                self._note(note)
            if slower is None:
                return
            self.stop_network()
            self.link_mbps = slower
            self.start_network()

    def _note(self, text: str) -> None:
        self.cfg.notes.append(text)
        self.log(f"   {text}")

    def estimate_study_s(self, run: dict, scale: float = 1.0) -> float:
        """Rough duration of the study's runs with the links at ``scale`` times the current speed,
        from calibration run ``run``: its fixed part (start, warm-up, counters: its seconds minus its
        iterations' time) stays, its mean iteration time grows by 1 / ``scale`` (compute and
        transfers scale with the link), and the other modes' iterations are taken as
        ``OTHER_MODES_MARGIN`` times the calibrated mode's."""
        per_it: dict[int, float] = {}
        for r in self.records(run):
            per_it[r["iteration"]] = max(per_it.get(r["iteration"], 0.0), float(r["iter_time_s"] or 0.0))
        in_iterations = sum(per_it.values())
        fixed = max(0.0, run["seconds"] - in_iterations)
        mean_it = in_iterations / max(1, len(per_it)) / scale
        others = len(self.modes) - 1
        return self.cfg.seeds * ((1 + others) * fixed + (1 + OTHER_MODES_MARGIN * others) * self.iterations * mean_it)

    def run(self) -> Path:
        from mininet_topos.experiment import compile_pipeline
        from mininet_topos.study_report import write_study_report
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.pipeline = compile_pipeline(self.run_dir / "build", self.cfg.target)
        seeds = list(range(self.cfg.first_seed, self.cfg.first_seed + self.cfg.seeds))
        order = run_order(self.modes, seeds)
        with mininet_lock(log=lambda line: self.log(f"   {line}")):
            self._run_all(order)
        (self.run_dir / "config.json").write_text(json.dumps(self.config_record(), indent=2))
        write_study_report(self.run_dir)
        return self.run_dir

    def _run_all(self, order: list[tuple[int, str]]) -> None:
        """Calibration and every run, on one network (the caller holds the Mininet lock)."""
        try:
            self.start_network()
            if self.cfg.calibrate:
                self.calibrate()
            (self.run_dir / "config.json").write_text(json.dumps(self.config_record(), indent=2))
            with open(self.run_dir / "iterations.jsonl", "w") as it_f, open(self.run_dir / "runs.jsonl", "w") as run_f:
                for k, (seed, mode) in enumerate(order, 1):
                    t0 = time.monotonic()
                    run = self.run_once(mode, seed, self.iterations)
                    recs = self.records(run)
                    it_f.write("".join(json.dumps(r) + "\n" for r in recs))
                    run_f.write(json.dumps(run) + "\n")
                    it_f.flush()
                    run_f.flush()
                    self.log(f"   [{k}/{len(order)}] seed {seed} {mode:<12} {time.monotonic() - t0:5.1f} s"
                             + (f"  FAILED: {run['failure']}" if run["failure"] else ""))
        finally:
            self.stop_network()

    def config_record(self) -> dict:
        return {"study": asdict(replace(self.cfg, notes=list(self.cfg.notes))), "scenario": _scenario_dict(self.scen),
                "iterations": self.iterations, "link_mbps": self.link_mbps, "compute_ratio": self.compute_ratio,
                "modes": {m: MODES[m].about for m in self.modes}, "python": sys.version.split()[0],
                "git": _git_head(),
                "started": self.run_dir.name[:15]}


def calibration_decision(run: dict, link_mbps: float, attempt: int, max_scale_downs: int, estimate_s: float,
                         budget_s: float | None, keep_if_starved: str | None = None) -> tuple[float | None, str | None]:
    """After calibration run number ``attempt`` at ``link_mbps``: the slower link speed to try next
    (None: keep this one) and the note saying why. ``estimate_s`` is the study's estimated duration
    at the slower speed; past ``budget_s`` the speed is kept and the starvation stays in the report.
    With ``keep_if_starved`` (the reason) only a CPU-bound switch slows the links, not starvation."""
    if not run["cpu_bound_switches"] and not run["starved_switches"]:
        return None, None
    if not run["cpu_bound_switches"] and keep_if_starved:
        return None, (f"CPU-starved, kept {link_mbps:g} Mbit/s: {keep_if_starved}; the runs below may be "
                      "CPU-starved too (the note on the runs and the CPU table say whether they were)")
    if attempt >= max_scale_downs:
        return None, (f"still CPU-bound or CPU-starved after {attempt} scale-down(s): results are limited by the "
                      "emulation's CPU, not only by the network")
    slower = round(link_mbps * SCALE_DOWN, 2)
    if budget_s is not None and estimate_s > budget_s:
        return None, (f"not scaled down to {slower:g} Mbit/s: the study would take about {estimate_s / 60:.0f} min "
                      f"there, over its budget of {budget_s / 60:.0f} min; kept {link_mbps:g} Mbit/s, so the runs "
                      "below may be CPU-starved too (the note on the runs and the CPU table say whether they were)")
    return slower, (f"scaled the links down to {slower:g} Mbit/s (and the emulated compute with them); the study "
                    f"should take about {estimate_s / 60:.0f} min")


def cpu_verdict(run: dict) -> str:
    """One line on a run's CPU: the busiest switch, the switch that waited longest for a CPU, the
    machine, and whether a switch was CPU-bound or starved."""
    cpu = run.get("cpu") or {}
    switches = {k.split(":", 1)[1]: v for k, v in cpu.items() if k.startswith("switch:")}
    parts = []
    if switches:
        busy = max(switches, key=lambda n: switches[n]["mean_core"])
        parts.append(f"busiest switch {busy} {switches[busy]['mean_core']:.0%} of a core")
        waits = {n: v["wait_share"] for n, v in switches.items() if "wait_share" in v}
        if waits:
            slow = max(waits, key=waits.__getitem__)
            parts.append(f"switch packet threads waited for a CPU up to {waits[slow]:.0%} of the run ({slow})")
    m = run.get("machine_cpu") or {}
    if m:
        own = sum(v["mean_core"] for v in cpu.values()) / max(1, m["cores"])
        parts.append(f"machine {m['busy_share']:.0%} busy ({m['cores']} cores; the switches and agents "
                     f"{own:.0%}), {m['runnable_mean']:g} runnable tasks on average")
    if run.get("cpu_bound_switches"):
        parts.append(f"CPU-bound: {', '.join(run['cpu_bound_switches'])}")
    if run.get("starved_switches"):
        parts.append(f"CPU-starved (waited > {STARVED_WAIT_SHARE:.0%}): {', '.join(run['starved_switches'])}")
    return "; ".join(parts) or "no CPU figures"


def _git_head() -> str:
    """The commit measured (and whether the tree had local changes), for the record."""
    repo = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(["git", "-C", str(repo), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, timeout=10, check=False).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10, check=False).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return f"{head}{' (+ local changes)' if dirty else ''}" if head else "unknown"


def shipped_policy() -> dict:
    """The controller's shipped default policy (the ablations are cut from it)."""
    path = Path(__file__).resolve().parent.parent / "controller" / "data" / "default_policy.yaml"
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise StudyError(f"{path}: cannot read the default policy: {exc}") from None
    if isinstance(data, dict) and isinstance(data.get("policy"), dict):
        data = data["policy"]
    return data if isinstance(data, dict) else {}


def _scenario_dict(s: Scenario) -> dict:
    return {"name": s.name, "about": s.about, "topo": s.topo, "topo_params": s.topo_params,
            "jobs": [asdict(j) for j in s.jobs], "flows": [asdict(f) for f in s.flows]}


def _diff(before: dict, after: dict) -> dict:
    out: dict = {}
    for key in ("selective_drops", "ecn_marks", "spray", "tail_drops", "tail_drops_by_port", "rx_dropped"):
        b, a = before.get(key) or {}, after.get(key) or {}
        out[key] = {k: a[k] - b.get(k, 0) for k in a if a[k] - b.get(k, 0)}
    out["malformed"] = int(after.get("malformed", 0)) - int(before.get("malformed", 0))
    return out


def _bulk_mbps(out_dir: Path, seconds: float) -> float | None:
    """Goodput of the competing bulk TCP flows over the run (what the job left them), from the senders."""
    total, seen = 0, False
    for log in out_dir.glob("bulk*.log"):
        for line in reversed(log.read_text().splitlines()):
            try:
                total += int(json.loads(line).get("bytes", 0))
                seen = True
                break
            except (json.JSONDecodeError, AttributeError):
                continue
    return round(total * 8 / seconds / 1e6, 2) if seen and seconds > 0 else None


def _read(path: Path) -> list[dict]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return [r for r in out if r.get("event") == "iteration"]


def collect_records(out_dir: Path, scen: Scenario, mode: str, seed: int) -> list[dict]:
    """The agents' JSON lines of one run as the study's per-worker, per-iteration records."""
    records = []
    for job in scen.jobs:
        server = {}
        if job.kind == "ps":
            server = {r["iteration"]: r for r in _read(out_dir / f"{job.hosts[0]}.jsonl")}
            members = job.hosts[1:]
        else:
            members = job.hosts
        for host in members:
            for r in _read(out_dir / f"{host}.jsonl"):
                srv = server.get(r["iteration"], {})
                hook = r.get("dlcp") or {}            # torch-ddp: the DDP hook's step report
                own_pk = (sum((r.get("packets_by_class") or {}).values())
                          or sum((hook.get("packets_by_layer_class") or {}).values()))
                own_miss = sum((r.get("missing_by_class") or {}).values()) or int(hook.get("packets_given_up", 0))
                records.append({
                    "scenario": scen.name, "job": job.name, "kind": job.kind, "workload": job.workload,
                    "mode": mode, "seed": seed, "worker": host, "iteration": r["iteration"],
                    "iter_time_s": r.get("iter_seconds", r.get("iteration_seconds", r.get("comm_seconds", 0.0))),
                    # None where the agent did not measure it (DDP: no compute/exposed split; gloo: no
                    # communication time), so the report prints "-" rather than a measured-looking 0
                    "compute_s": r.get("compute_seconds"),
                    "exposed_comm_s": r.get("exposed_comm_seconds"),
                    "comm_time_s": r.get("comm_seconds", hook.get("comm_seconds")), "bytes": r.get("bytes_sent", 0),
                    "retransmissions": r.get("retransmissions", 0),
                    # receiver side, what was actually given up: this worker's parameters / reduced chunks
                    # kept stale, and (PS) the server's zero-filled gradient packets of the iteration
                    "recv_packets": own_pk, "recv_given_up": own_miss,
                    "lost_fraction": own_miss / own_pk if own_pk else 0.0,
                    "server_packets": sum((srv.get("packets_by_class") or {}).values()),
                    "server_given_up": sum((srv.get("missing_by_class") or {}).values()),
                    "server_retransmissions": srv.get("retransmissions", 0),
                    "server_zero_filled_elements": srv.get("zero_filled_elements", 0),
                    "accuracy": r.get("accuracy"),
                })
    return records
