"""The experiment runner: one topology, several modes, same seed, an honest comparison.

For each mode (``dlcp``, ``baseline``, ``tcp``) it starts the emulated network, applies the
controller configuration, runs the workload's agents and the background traffic on the hosts,
collects per-iteration records and the switches' counters, and tears everything down — also on
failure or Ctrl-C. Then it writes ``results/<run>/`` (raw JSON lines, ``report.md``, plots).

    dlcp-exp --topo leaf-spine --workload ps --mode dlcp,baseline,tcp --background --iterations 20
"""

from __future__ import annotations

import argparse
import json
import logging
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import yaml

from mininet_topos import agents
from mininet_topos.mininet_lock import mininet_lock
from mininet_topos.network import EmulatedNetwork, leftovers
from mininet_topos.p4switch import SwitchStartError, target_available
from mininet_topos.progress import Progress
from mininet_topos.report import summarise, summary_table, write_report
from mininet_topos.topologies import Topology, build

log = logging.getLogger(__name__)

REPO = Path(__file__).resolve().parent.parent
PROGRAM = REPO / "p4src" / "bmv2" / "dlcp.p4"
PROGRAM_TOFINO = REPO / "p4src" / "tofino" / "dlcp.p4"      # on p4sim's TNA model (--arch tna|t2na)
MODES = ("dlcp", "baseline", "tcp")
STATUS_QUO_POLICY = {"priority_map": [], "thresholds": [], "spray": False}


class ExperimentError(RuntimeError):
    """The experiment could not run (a switch died, the controller failed, ...): one clear line."""


@dataclass
class ExperimentConfig:
    topo: str = "leaf-spine"
    topo_params: dict = field(default_factory=dict)  # the topology factory's defaults
    workload: str = "ps"                 # ps | allreduce | profile:MODEL
    model: str = "digits"                # what ps trains (digits = real MLP) or allreduce reduces
    modes: tuple[str, ...] = MODES
    background: bool = True
    background_mbps: float = 8.0
    iterations: int = 10
    loss_bound: float = 0.1
    target: str = "p4sim"
    arch: str = "v1model"                # p4sim only: v1model (BMv2 program) | tna | t2na (Tofino program)
    seed: int = 1
    link_mbps: float = 20.0
    queue_depth: int = 64
    timeout_s: float = 120.0
    out: str = "results"
    pcap: bool = False
    policy: str | None = None            # DLCP policy YAML for dlcp mode (default: the shipped one)


def compile_pipeline(build_dir: Path, target: str = "p4sim", arch: str = "v1model") -> dict[str, Path]:
    """Compile the DLCP program once for ``target`` (p4sim: the BMv2 program, or with ``arch`` tna/t2na
    the Tofino one on p4sim's TNA model); returns the files the controller pushes."""
    build_dir.mkdir(parents=True, exist_ok=True)
    include = str(REPO / "p4src" / "include")
    if target == "bmv2":
        p4info = build_dir / "dlcp.p4info.txtpb"
        cmd = ["p4c", "--target", "bmv2", "--arch", "v1model", "-I", include, "-o", str(build_dir),
               "--p4runtime-files", str(p4info), str(PROGRAM)]
        files = {"p4info": p4info, "config": build_dir / "dlcp.json"}
    else:
        program = PROGRAM_TOFINO if arch in ("tna", "t2na") else PROGRAM
        cmd = [sys.executable, "-m", "p4sim.cli", "compile", str(program), "-o", str(build_dir), "-I", include,
               "--arch", arch]
        files = {"p4info": build_dir / "dlcp.p4info.txtpb", "config": build_dir / "dlcp.p4sim.json"}
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise ExperimentError(f"{cmd[0]} {PROGRAM} failed: {last}")
    return files


def netconfig(topo: Topology, net: EmulatedNetwork, pipeline: dict[str, Path], cfg: ExperimentConfig,
              mode: str = "dlcp") -> dict:
    """The controller's network YAML for this running emulation (routes derived by the controller)."""
    grpc = net.grpc_addresses()
    doc: dict = {
        "defaults": {"target": cfg.target, "pipeline": {k: str(v) for k, v in pipeline.items()}},
        # Twenty Python switches starting on two cores answer their first RPC slowly: be patient.
        "controller": {"timeout": 30},
        "switches": {name: {"grpc": grpc[name], "device_id": sw.device_id, "mac": sw.mac,
                            "runtime": _runtime(cfg.target, net.switch(name).ctl_port)}
                     for name, sw in topo.switches.items()},
        "hosts": {name: {"ip": h.ip, "mac": h.mac, "switch": h.switch, "port": h.switch_port}
                  for name, h in topo.hosts.items()},
        "links": [[f"{link.a}:{link.a_port}", f"{link.b}:{link.b_port}"] for link in topo.links
                  if link.a in topo.switches],
        "derive_routes": True,
        # every link's speed: the controller sets each port's drain rate (DlcpEgress.port_drain)
        # and converts delay thresholds from it (issue 10 item 6)
        "queues": {"rate_mbps": cfg.link_mbps},
    }
    if cfg.target == "bmv2":
        # BMv2 has no port shaper: the link speed becomes a rate limit of each priority queue
        # (set_queue_rate, packets/s of full-size packets) and its depth, set by dlcpctl through
        # the Thrift CLI (docs/bmv2.md "Per-queue rates")
        doc["queues"].update(rate_pps=max(1, round(cfg.link_mbps * 1e6 / (1500 * 8))), depth=cfg.queue_depth)
    if mode == "dlcp" and cfg.policy:
        doc["policy"] = str(Path(cfg.policy).resolve())
    if mode != "dlcp":
        # The status quo: the same switches and routes, but a network that does not know DL traffic:
        # every packet in the default queue, nothing dropped selectively, per-flow ECMP only.
        doc["policy"] = STATUS_QUO_POLICY
    return doc


def _runtime(target: str, port: int) -> dict:
    """How dlcpctl reaches a switch's runtime CLI: p4sim's ctl socket or BMv2's Thrift port."""
    return {"thrift_port": port} if target == "bmv2" else {"addr": f"127.0.0.1:{port}"}


def _run(cmd: list[str], what: str, timeout: float = 60.0) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    if proc.returncode != 0:
        last = (proc.stderr.strip() or proc.stdout.strip()).splitlines()[-1:] or ["(no output)"]
        raise ExperimentError(f"{what} failed (exit {proc.returncode}): {last[0]}")
    return proc.stdout


def workload_commands(cfg: ExperimentConfig, topo: Topology, mode: str, out_dir: Path) -> dict[str, list[str]]:
    """Host name -> agent command for this workload (the first host serves / is rank 0)."""
    hosts = list(topo.hosts.values())
    common = dict(mode=mode, loss_bound=cfg.loss_bound, seed=cfg.seed, timeout=cfg.timeout_s)
    # every host's link runs at --link-mbps: DLCP receivers grant their senders shares of it
    # (docs/transport.md "Admission"), as in the --scenario studies
    link = ("--link-mbps", str(cfg.link_mbps))
    if cfg.workload == "ps":
        server, workers = hosts[0], hosts[1:]
        cmds = {server.name: agents.ps_server(server, len(workers), cfg.model, cfg.iterations,
                                              out=out_dir / f"{server.name}.jsonl", extra=link, **common)}
        for rank, w in enumerate(workers):
            cmds[w.name] = agents.ps_worker(server, rank, len(workers), cfg.model, cfg.iterations,
                                            out=out_dir / f"{w.name}.jsonl", extra=link, **common)
        return cmds
    if cfg.workload == "allreduce" or cfg.workload.startswith("profile:"):
        model = cfg.workload.split(":", 1)[1] if ":" in cfg.workload else "resnet50"
        return {h.name: agents.allreduce_rank(hosts, rank, model, cfg.iterations, out=out_dir / f"{h.name}.jsonl",
                                              extra=link, **common) for rank, h in enumerate(hosts)}
    if cfg.workload == "torch-ddp":      # PyTorch DDP, digits CNN; mode tcp = gloo (host_agent/torch_train.py)
        return {h.name: agents.torch_ddp_rank(hosts, rank, cfg.iterations, out=out_dir / f"{h.name}.jsonl", **common)
                for rank, h in enumerate(hosts)}
    raise ExperimentError(f"--workload {cfg.workload!r}: use ps, allreduce, torch-ddp or profile:MODEL")


def run_mode(cfg: ExperimentConfig, mode: str, run_dir: Path, pipeline: dict[str, Path],
             progress: Progress) -> tuple[list[dict], dict]:
    topo = build(cfg.topo, **cfg.topo_params)
    for link in topo.links:
        link.rate_bps = int(cfg.link_mbps * 1e6)
    mode_dir = run_dir / mode
    mode_dir.mkdir(parents=True, exist_ok=True)
    procs: list[subprocess.Popen] = []
    net = EmulatedNetwork(topo, mode_dir, target=cfg.target, pcap=cfg.pcap, queue_depth=cfg.queue_depth)
    try:
        net.start()
        config_path = mode_dir / "net.yaml"
        config_path.write_text(yaml.safe_dump(netconfig(topo, net, pipeline, cfg, mode), sort_keys=False))
        _run(agents.dlcpctl(config_path, "apply"), "dlcpctl apply")
        hosts = list(topo.hosts.values())
        if cfg.background:
            # Bulk + incast towards the first host (the PS / rank 0) from the last host: a shared bottleneck.
            cmd = agents.background(hosts[0], cfg.background_mbps, cfg.timeout_s, burst=32, burst_every=0.3)
            procs.append(net.host(hosts[-1].name).popen(cmd, stdout=open(mode_dir / "background.jsonl", "w"),
                                                        stderr=subprocess.STDOUT))
        if cfg.workload == "allreduce" or cfg.workload.startswith("profile:"):
            from host_agent.workloads import warm_gradient_cache
            warm_gradient_cache(cfg.seed)        # the profile's gradients before the agents start (study.warm_workloads)
        agent_procs = {}
        for name, cmd in workload_commands(cfg, topo, mode, mode_dir).items():
            with open(mode_dir / f"{name}.log", "w") as logf:
                agent_procs[name] = net.host(name).popen(cmd, stdout=logf, stderr=subprocess.STDOUT,
                                                         env=agents.agent_env())
            procs.append(agent_procs[name])
            if name == hosts[0].name:
                time.sleep(0.5)  # the server binds before workers send (agents retry; this only avoids noise)
        deadline = time.monotonic() + cfg.timeout_s + 30
        exit_at: dict[str, float] = {}
        while any(p.poll() is None for p in agent_procs.values()):
            for name, p in agent_procs.items():
                if name not in exit_at and p.returncode is not None:
                    exit_at[name] = time.monotonic()    # who failed FIRST holds the cause in its log
            if any(agent_procs[n].returncode for n in exit_at):
                break                                   # the run is lost: do not wait for the others' timeouts
            dead = net.dead_switches()
            if dead:
                raise ExperimentError(f"switch {', '.join(dead)} died during the {mode} run; "
                                      f"see {mode_dir}/{dead[0]}.log")
            if time.monotonic() > deadline:
                raise ExperimentError(f"{mode}: agents still running after {cfg.timeout_s + 30:.0f} s")
            done = _iterations_done(mode_dir, [h.name for h in hosts[1:]] or [hosts[0].name])
            progress.update(mode, done)
            time.sleep(0.25)
        # The background flows end with the agents: the counters then describe the workload's run,
        # not also the seconds the read itself takes (a slower read would count more background).
        for p in procs:
            if p not in agent_procs.values() and p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    p.kill()
        # Counters first, also when an agent failed: they explain what happened.
        stats_out = _run(agents.dlcpctl(config_path, "--json", "stats"), "dlcpctl stats")
        (mode_dir / "switch_stats.json").write_text(stats_out)
        stats = {"mode": mode, **_switch_stats(json.loads(stats_out) if stats_out.strip() else {}),
                 "tail_drops": _tail_drops(net) if cfg.target == "p4sim" else {}}
        failed = {n: p.returncode for n, p in agent_procs.items() if p.returncode}
        if failed:
            name = min(failed, key=lambda n: exit_at.get(n, float("inf")))
            raise ExperimentError(f"{mode}: the first error is on {name} (exit {failed[name]}); see {mode_dir}/{name}.log "
                                  f"and {mode_dir}/switch_stats.json")
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
        for p in procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
        net.stop()
    records = []
    for h in topo.hosts.values():
        records += agents.iteration_records(mode_dir / f"{h.name}.jsonl", mode, cfg.workload, h.name)
    return records, stats


def _iterations_done(mode_dir: Path, hosts: list[str]) -> int:
    counts = []
    for name in hosts:
        path = mode_dir / f"{name}.jsonl"
        counts.append(path.read_text().count('"event": "iteration"') if path.exists() else 0)
    return min(counts) if counts else 0


def _switch_stats(raw: dict) -> dict:
    """Sum ``dlcpctl --json stats`` (switch -> counter lists) into per-class totals for the report.

    Selective drops count both the ingress early drops and the egress safety-net drops; keys are
    ``q<queue>/m<mag>``. Spray counts are per switch, group and member.
    """
    drops: dict[str, int] = {}
    marks: dict[str, int] = {}
    spray: dict[str, int] = {}
    malformed = 0
    for switch, counters in raw.items():
        if not isinstance(counters, dict):
            continue
        for name, into in (("selective_drops", drops), ("egress_safety_drops", drops), ("ecn_marks", marks)):
            for cell in counters.get(name) or []:
                key = f"q{cell['queue']}/m{cell['mag']}"
                into[key] = into.get(key, 0) + int(cell.get("packets", 0))
        for cell in counters.get("spray") or []:
            key = f"{switch}/" + "/".join(f"{k}{v}" for k, v in sorted(cell.items()) if k not in ("packets", "bytes"))
            spray[key] = spray.get(key, 0) + int(cell.get("packets", 0))
        malformed += sum(int(v) for v in (counters.get("malformed") or {}).values())
    return {"selective_drops": drops, "ecn_marks": marks, "spray": spray, "malformed": malformed}


def _tail_drops(net: EmulatedNetwork) -> dict[str, int]:
    """Traffic-manager tail drops (queue full) per queue, summed over every p4sim switch port."""
    from p4sim.switch.ctl import CtlClient

    drops: dict[str, int] = {}
    for name in net.topo.switches:
        with CtlClient(f"127.0.0.1:{net.switch(name).ctl_port}") as ctl:
            for port in ctl.show_queues()["ports"].values():
                for q in port["queues"]:
                    if q["tail_drops"]:
                        drops[f"q{q['prio']}"] = drops.get(f"q{q['prio']}", 0) + q["tail_drops"]
    return drops


def _port_drops(net: EmulatedNetwork) -> dict[str, dict[str, int]]:
    """Where each lost packet went, per p4sim port: tail drops per queue (``s1-eth1/q4``) and
    receive-side drops (``s1-eth1``: frames the port could not take, incl. the kernel's AF_PACKET
    ring overflow), so a queue overflow and a switch too slow to read its port tell apart."""
    from p4sim.switch.ctl import CtlClient

    tail: dict[str, int] = {}
    rx: dict[str, int] = {}
    for name in net.topo.switches:
        with CtlClient(f"127.0.0.1:{net.switch(name).ctl_port}") as ctl:
            stats = ctl.stats()
            names = {no: p.get("name") or f"{name}:{no}" for no, p in stats.get("ports", {}).items()}
            for no, port in stats.get("ports", {}).items():
                if port.get("rx_dropped"):
                    rx[names[no]] = int(port["rx_dropped"])
            for no, port in ctl.show_queues()["ports"].items():
                for q in port["queues"]:
                    if q["tail_drops"]:
                        tail[f"{names.get(str(no), f'{name}:{no}')}/q{q['prio']}"] = int(q["tail_drops"])
    return {"tail_drops_by_port": tail, "rx_dropped": rx}


def run_experiment(cfg: ExperimentConfig) -> Path:
    ok, why = target_available(cfg.target)
    if not ok:
        raise ExperimentError(why)
    for mode in cfg.modes:
        if mode not in MODES:
            raise ExperimentError(f"--mode {mode!r}: choose from {', '.join(MODES)}")
    run_dir = Path(cfg.out).resolve() / time.strftime("%Y%m%d-%H%M%S")
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "config.json").write_text(json.dumps(asdict(cfg), indent=2))
    pipeline = compile_pipeline(run_dir / "build", cfg.target, cfg.arch)
    progress = Progress(cfg.modes, cfg.iterations)
    with mininet_lock(log=lambda line: print(f"dlcp-exp: {line}", file=sys.stderr, flush=True)), \
            open(run_dir / "iterations.jsonl", "w") as it_f, open(run_dir / "switch_stats.jsonl", "w") as st_f:
        for mode in cfg.modes:
            records, stats = run_mode(cfg, mode, run_dir, pipeline, progress)
            it_f.write("".join(json.dumps(r) + "\n" for r in records))
            st_f.write(json.dumps(stats) + "\n")
            it_f.flush()
            st_f.flush()
    progress.close()
    write_report(run_dir, asdict(cfg))
    return run_dir


def parse_args(argv: list[str] | None) -> ExperimentConfig:
    from mininet_topos.scenarios import MODES, SCENARIOS
    p = argparse.ArgumentParser(prog="dlcp-exp", description="DLCP versus the status quo in Mininet",
                                epilog=f"With --scenario NAME ({', '.join(SCENARIOS)}): a study of that scenario, "
                                       f"--seeds runs per mode interleaved, modes {', '.join(MODES)}; "
                                       "report with 95 % intervals.")
    p.add_argument("--topo", default="leaf-spine", help="star | dumbbell | leaf-spine | fat-tree")
    p.add_argument("--workload", default="ps", help="ps | allreduce | torch-ddp | profile:MODEL")
    p.add_argument("--model", default="digits", help="what ps trains: digits (real MLP) or a profile name")
    p.add_argument("--mode", default="dlcp,baseline,tcp", help="comma-separated modes, run in this order")
    p.add_argument("--background", action=argparse.BooleanOptionalAction, default=True,
                   help="competing bulk flows and incast bursts")
    p.add_argument("--iterations", type=int, default=10)
    p.add_argument("--loss-bound", type=float, default=0.1)
    p.add_argument("--target", default="p4sim", help="p4sim | bmv2")
    p.add_argument("--arch", default="v1model", choices=("v1model", "tna", "t2na"),
                   help="p4sim only: v1model runs p4src/bmv2/dlcp.p4, tna/t2na the Tofino program")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--link-mbps", type=float, default=20.0, help="emulated link speed (in the switches)")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per mode before giving up")
    p.add_argument("--out", default="results")
    p.add_argument("--pcap", action="store_true", help="per-port pcaps in the run directory")
    p.add_argument("--policy", help="DLCP policy YAML for the dlcp mode (default: controller/data/default_policy.yaml)")
    a = p.parse_args(argv)
    if a.iterations < 1:
        p.error(f"--iterations {a.iterations}: must be >= 1")
    if not 0 <= a.loss_bound < 1:
        p.error(f"--loss-bound {a.loss_bound}: must be in [0, 1)")
    if a.arch != "v1model" and a.target != "p4sim":
        p.error(f"--arch {a.arch}: the Tofino program runs on p4sim only (--target p4sim)")
    return ExperimentConfig(topo=a.topo, workload=a.workload, model=a.model,
                            modes=tuple(m.strip() for m in a.mode.split(",") if m.strip()),
                            background=a.background, iterations=a.iterations, loss_bound=a.loss_bound,
                            target=a.target, arch=a.arch, seed=a.seed, link_mbps=a.link_mbps, timeout_s=a.timeout,
                            out=a.out, pcap=a.pcap, policy=a.policy)


def study_parser() -> argparse.ArgumentParser:
    from mininet_topos.scenarios import SCENARIOS
    p = argparse.ArgumentParser(prog="dlcp-exp --scenario", description="one scenario, several modes and seeds, "
                                "interleaved, with 95 % intervals (docs/experiments.md)")
    p.add_argument("--scenario", required=True, help=" | ".join(SCENARIOS))
    p.add_argument("--mode", default="dlcp,dlcp-prio,dlcp-drop,dlcp-spray,udp-reliable,tcp-cubic,tcp-bbr",
                   help="comma-separated modes (default: all seven)")
    p.add_argument("--seeds", type=int, default=5, help="runs per mode (default 5)")
    p.add_argument("--first-seed", type=int, default=1)
    p.add_argument("--iterations", type=int, help="iterations per run (default: the scenario's)")
    p.add_argument("--link-mbps", type=float, help="emulated link speed (default: the scenario's)")
    p.add_argument("--compute-ratio", type=float, help="emulated compute per iteration in units of one worker's "
                   "gradient transfer time on one link (default: the scenario's, 1.0)")
    p.add_argument("--overlap", action=argparse.BooleanOptionalAction, default=True,
                   help="overlap compute and communication layer by layer (--no-overlap: one after the other)")
    p.add_argument("--loss-bound", type=float, default=0.1)
    p.add_argument("--timeout", type=float, default=180.0, help="seconds per run before giving up")
    p.add_argument("--calibrate", action=argparse.BooleanOptionalAction, default=True,
                   help="first check that no switch is CPU-bound or CPU-starved and slow the links down until "
                        "none is")
    p.add_argument("--time-budget", type=float, metavar="MIN",
                   help="calibration slows the links down only while the study's estimated duration stays "
                        "under MIN minutes (default: no limit)")
    p.add_argument("--cpu-load", type=float, default=0.0, metavar="CORES",
                   help="keep this many cores of busy-loop load on the machine during every run of every mode "
                        "alike (a reproducible CPU-starved emulation; default 0: none)")
    p.add_argument("--switch-nice", type=int, metavar="N",
                   help="run every switch thread at nice N (e.g. -10) during the runs, above agents, bulk flows "
                        "and load, so the emulated network gets its CPU first (default: as started)")
    p.add_argument("--out", default="results")
    p.add_argument("--pcap", action="store_true")
    return p


def study_main(argv: list[str]) -> int:
    from mininet_topos import scenarios
    from mininet_topos.study import Study, StudyConfig, StudyError
    from mininet_topos.study_report import print_summary
    p = study_parser()
    a = p.parse_args(argv)
    try:
        scenarios.get(a.scenario)
        modes = scenarios.resolve_modes(a.mode)
    except ValueError as err:
        p.error(str(err))
    if a.seeds < 1:
        p.error(f"--seeds {a.seeds}: must be >= 1")
    if a.iterations is not None and a.iterations < 2:
        p.error(f"--iterations {a.iterations}: must be >= 2 (iteration 0 is warm-up and left out)")
    if not 0 <= a.loss_bound < 1:
        p.error(f"--loss-bound {a.loss_bound}: must be in [0, 1)")
    if a.time_budget is not None and a.time_budget <= 0:
        p.error(f"--time-budget {a.time_budget:g}: must be > 0 minutes")
    if not 0 <= a.cpu_load <= 16:
        p.error(f"--cpu-load {a.cpu_load:g}: must be between 0 and 16 cores")
    if a.switch_nice is not None and not -20 <= a.switch_nice <= 19:
        p.error(f"--switch-nice {a.switch_nice}: must be between -20 and 19")
    cfg = StudyConfig(scenario=a.scenario, modes=modes, seeds=a.seeds, first_seed=a.first_seed,
                      iterations=a.iterations, link_mbps=a.link_mbps, compute_ratio=a.compute_ratio,
                      overlap=a.overlap, loss_bound=a.loss_bound, timeout_s=a.timeout, out=a.out, pcap=a.pcap,
                      calibrate=a.calibrate, time_budget_s=None if a.time_budget is None else 60 * a.time_budget,
                      cpu_load=a.cpu_load, switch_nice=a.switch_nice)
    ok, why = target_available(cfg.target)
    if not ok:
        print(f"dlcp-exp: {why}", file=sys.stderr)
        return 1
    study = Study(cfg, log=lambda line: print(line, flush=True))
    try:
        run_dir = study.run()
    except (StudyError, ExperimentError, SwitchStartError, ValueError) as err:
        print(f"dlcp-exp: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("dlcp-exp: interrupted; network torn down", file=sys.stderr)
        return 130
    finally:
        left = leftovers(build(study.scen.topo, **study.scen.topo_params))
        if left:
            print(f"dlcp-exp: warning: left behind: {'; '.join(left)}", file=sys.stderr)
    print(print_summary(run_dir))
    print(f"report: {run_dir / 'report.md'}")
    return 0


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    args = sys.argv[1:] if argv is None else argv
    if any(a == "--scenario" or a.startswith("--scenario=") for a in args):
        return study_main(args)
    cfg = parse_args(argv)
    try:
        run_dir = run_experiment(cfg)
    except (ExperimentError, SwitchStartError, ValueError) as err:
        print(f"dlcp-exp: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("dlcp-exp: interrupted; network torn down", file=sys.stderr)
        return 130
    finally:
        left = leftovers(build(cfg.topo, **cfg.topo_params))
        if left:
            print(f"dlcp-exp: warning: left behind: {'; '.join(left)}", file=sys.stderr)
    from mininet_topos.report import read_jsonl
    print(summary_table(summarise(read_jsonl(run_dir / "iterations.jsonl"),
                                  read_jsonl(run_dir / "switch_stats.jsonl"))))
    print(f"report: {run_dir / 'report.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
