"""Benchmark: CPU the PS agents use per iteration, DLCP against TCP cubic, on rate-limited veths.

The tcp-bulk scenario's parameter-server job (digits-wide, server + 3 workers, emulated compute
ratio 1 at 20 Mbit/s, overlap) run by the real ``dlcp-agent`` processes, one per network
namespace, the namespaces joined by a Linux bridge whose ports towards the hosts are shaped to the
link rate (tbf, 64 full frames of queue, like the p4sim ports). No Mininet and no Python switch:
the agents get the CPU alone, so the figure is the agents' own cost. Modes alternate round by
round (machine noise hits both alike). Figure per mode and role: CPU seconds (user + system, from
the kernel's rusage of each process) per iteration and share of a core over the run, and the ratio
DLCP / TCP measured in the same run. ``--py-spy PATH`` records where the DLCP agents' CPU goes
(sampled flame data per process, ``PATH.<host>.txt`` in py-spy's raw format).

    .venv/bin/python benchmarks/bench_host_agent_cpu.py [--rounds 3] [--iterations 12] [--quick]

Needs root and iproute2 (``ip netns``, ``tc``); prints a note and exits 0 without them. Holds the
machine's Mininet lock (mininet_topos/mininet_lock.py) while it runs, as everything that makes
network namespaces does: no emulation runs beside it, and it runs beside none.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmode import add_quick_flag, announce

from mininet_topos.mininet_lock import mininet_lock

HOSTS = ("h1", "h2", "h3", "h4")        # h1: the server (tcp-bulk: h1 <- h2, h4, h5)
PS_PORT = 9290
MODES = {"dlcp": ("dlcp", None), "tcp-cubic": ("tcp", "cubic")}
# the agent under cProfile with a CPU clock (time.process_time): where its CPU goes, not its waits
CPROFILE = ("import cProfile, os, sys, time\nfrom host_agent import cli\n"
            "prof = cProfile.Profile(timer=time.process_time)\nprof.enable()\n"
            "try:\n    rc = cli.main(sys.argv[1:])\nfinally:\n    prof.disable()\n"
            "    prof.dump_stats(os.environ['DLCP_BENCH_CPROFILE'])\nsys.exit(rc)\n")
THREADS_ENV = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def sh(*cmd: str) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode:
        raise RuntimeError(f"{' '.join(cmd)}: {proc.stderr.strip()}")


class Star:
    """Namespaces ``<tag>h1..`` on a bridge in namespace ``<tag>sw``; bridge ports shaped to ``mbps``."""

    def __init__(self, mbps: float, queue_packets: int = 64) -> None:
        self.tag = f"bac{os.getpid() % 10000}"
        self.sw = f"{self.tag}sw"
        self.ns = {h: f"{self.tag}{h}" for h in HOSTS}
        self.ip = {h: f"10.253.9.{i + 1}" for i, h in enumerate(HOSTS)}
        self.mbps, self.queue = mbps, queue_packets

    def __enter__(self) -> Star:
        try:
            sh("ip", "netns", "add", self.sw)
            sh("ip", "-n", self.sw, "link", "add", "br0", "type", "bridge")
            sh("ip", "-n", self.sw, "link", "set", "br0", "up")
            for h, ns in self.ns.items():
                a, b = f"{self.tag}{h}a", f"{self.tag}{h}b"
                sh("ip", "netns", "add", ns)
                sh("ip", "link", "add", a, "type", "veth", "peer", "name", b)
                sh("ip", "link", "set", a, "netns", ns)
                sh("ip", "link", "set", b, "netns", self.sw)
                sh("ip", "-n", ns, "addr", "add", f"{self.ip[h]}/24", "dev", a)
                sh("ip", "-n", ns, "link", "set", a, "up")
                sh("ip", "-n", ns, "link", "set", "lo", "up")
                sh("ip", "-n", self.sw, "link", "set", b, "master", "br0")
                sh("ip", "-n", self.sw, "link", "set", b, "up")
                # the switch port towards the host: link rate, a queue of `queue` full frames
                sh("ip", "netns", "exec", self.sw, "tc", "qdisc", "add", "dev", b, "root", "tbf",
                   "rate", f"{self.mbps}mbit", "burst", "3028", "limit", str(self.queue * 1514))
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *_exc: object) -> None:
        for ns in (*self.ns.values(), self.sw):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)


def agent_cmd(star: Star, host: str, mode: str, iterations: int, out: Path, mbps: float) -> list[str]:
    agent, cc = MODES[mode]
    common = ["--mode", agent, "--out", str(out), "--loss-bound", "0.1", "--seed", "1", "--timeout", "120",
              "--job", "0", "--compute-ratio", "1.0", "--link-mbps", str(mbps), "--overlap",
              "--workload", "digits-wide", "--iterations", str(iterations), "--scale", "1.0"]
    if cc:
        common += ["--tcp-cc", cc]
    cli = [sys.executable, "-m", "host_agent.cli"]
    if host == HOSTS[0]:
        return [*cli, "ps-server", "--bind", f"{star.ip[host]}:{PS_PORT}", "--workers", str(len(HOSTS) - 1),
                *common]
    rank = HOSTS.index(host) - 1
    return [*cli, "worker", "--server", f"{star.ip[HOSTS[0]]}:{PS_PORT}", "--rank", str(rank),
            "--workers", str(len(HOSTS) - 1), "--bind", f"{star.ip[host]}:{PS_PORT}", *common]


def proc_cpu(pid: int) -> tuple[float, float, int]:
    """(user CPU seconds, system CPU seconds, voluntary context switches) of a live process, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    status = Path(f"/proc/{pid}/status").read_text()
    vol = int(status.split("voluntary_ctxt_switches:")[1].split()[0])
    return int(fields[11]) / tick, int(fields[12]) / tick, vol


def has_iteration(path: Path) -> bool:
    return path.exists() and '"event": "iteration"' in path.read_text()


def run_once(star: Star, mode: str, iterations: int, mbps: float, work: Path,
             spy: str | None = None, cprofile: bool = False, tag: str = "") -> dict:
    """One PS job; per host its CPU seconds (rusage) and wall seconds, the same from its first iteration
    record to its exit (steady state: start-up excluded), and the workers' iteration times."""
    env = {**os.environ, **THREADS_ENV, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    procs: dict[str, subprocess.Popen] = {}
    t0 = time.monotonic()
    for host in HOSTS:
        out = work / f"{mode}{tag}-{host}.jsonl"
        cmd = agent_cmd(star, host, mode, iterations, out, mbps)
        if cprofile:
            cmd = [sys.executable, "-c", CPROFILE, *cmd[3:]]
            env["DLCP_BENCH_CPROFILE"] = str(work / f"cprofile-{mode}-{host}.pstats")
        elif spy and mode == "dlcp":
            cmd = [spy, "record", "--format", "raw", "--rate", "250", "--nonblocking", "-o",
                   str(work / f"spy-{host}.txt"), "--", *cmd]
        log = open(work / f"{mode}{tag}-{host}.log", "w")  # noqa: SIM115 - closed with the process
        procs[host] = subprocess.Popen(["ip", "netns", "exec", star.ns[host], *cmd], stdout=log,
                                       stderr=subprocess.STDOUT, env=dict(env))
        if host == HOSTS[0]:
            time.sleep(0.5)
    res: dict = {"cpu_s": {}, "wall_s": {}, "steady": {}}
    first: dict[str, tuple[float, float, float, int]] = {}   # host -> (time, user s, system s, wake-ups) at 1st record
    left = dict(procs)
    while left:
        for host, p in list(left.items()):
            if host not in first and not spy and has_iteration(work / f"{mode}{tag}-{host}.jsonl"):
                try:
                    first[host] = (time.monotonic(), *proc_cpu(p.pid))
                except (OSError, IndexError):
                    pass
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid:
                p.returncode = os.waitstatus_to_exitcode(status)
                res["cpu_s"][host] = ru.ru_utime + ru.ru_stime
                res["wall_s"][host] = time.monotonic() - t0
                if host in first:
                    t1, u1, s1, v1 = first[host]
                    res["steady"][host] = (time.monotonic() - t1, ru.ru_utime - u1 + ru.ru_stime - s1,
                                           ru.ru_nvcsw - v1, ru.ru_stime - s1)
                del left[host]
                if p.returncode:
                    for q in left.values():
                        q.kill()
                    raise RuntimeError(f"{mode} agent on {host} exited {p.returncode}: see {work}/{mode}{tag}-{host}.log")
        if time.monotonic() - t0 > 300:
            for q in left.values():
                q.kill()
            raise RuntimeError(f"{mode} run took over 300 s")
        time.sleep(0.05)
    iters = []
    for host in HOSTS[1:]:
        for line in (work / f"{mode}{tag}-{host}.jsonl").read_text().splitlines():
            rec = json.loads(line)
            if rec.get("event") == "iteration" and rec["iteration"] > 0:
                iters.append(rec["iter_seconds"])
    res["iter_s"] = iters
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=None, help="runs per mode, modes alternating (default 3)")
    ap.add_argument("--iterations", type=int, default=None, help="iterations per run (default 12)")
    ap.add_argument("--link-mbps", type=float, default=20.0)
    ap.add_argument("--modes", default="dlcp,tcp-cubic")
    ap.add_argument("--py-spy", metavar="PATH", help="record the DLCP agents with this py-spy binary")
    ap.add_argument("--cprofile", action="store_true",
                    help="first round under cProfile (CPU clock): cprofile-MODE-HOST.pstats in --keep's directory")
    ap.add_argument("--keep", help="keep the agents' records and logs in this directory (default: a temporary "
                                   "one, deleted at the end)")
    add_quick_flag(ap)
    args = ap.parse_args()
    announce(args.quick)
    if os.geteuid() != 0 or shutil.which("ip") is None or shutil.which("tc") is None:
        print("skipped (needs root, ip and tc: network namespaces)")
        return
    rounds = args.rounds or (1 if args.quick else 3)
    iterations = args.iterations or (2 if args.quick else 12)
    modes = args.modes.split(",")
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-agent-cpu-"))
    work.mkdir(parents=True, exist_ok=True)
    runs: dict[str, list[dict]] = {m: [] for m in modes}
    with mininet_lock(log=print), Star(args.link_mbps) as star:
        for r in range(rounds):
            for mode in modes if r % 2 == 0 else reversed(modes):
                res = run_once(star, mode, iterations, args.link_mbps, work, args.py_spy if r == 0 else None,
                               cprofile=args.cprofile and r == 0, tag=f"-r{r + 1}")
                runs[mode].append(res)
                cpu = " ".join(f"{h}={res['cpu_s'][h]:.2f}" for h in HOSTS)
                print(f"round {r + 1} {mode:>9}: CPU s {cpu}; iteration median "
                      f"{statistics.median(res['iter_s']):.3f} s", flush=True)
    print(f"\nPS digits-wide, 3 workers, {args.link_mbps:g} Mbit/s (tbf), {iterations} iterations x {rounds} runs. "
          "Steady state (first iteration record to exit, start-up excluded), median over runs (min-max): "
          "CPU ms per iteration, share of a core (kernel's share of it), voluntary context switches (wake-ups) per second; "
          "then whole-process CPU per iteration incl. start-up")
    per_it: dict[str, dict[str, float]] = {}
    for mode in modes:
        per_it[mode] = {}
        for role, hosts in (("server", HOSTS[:1]), ("worker", HOSTS[1:])):
            steady = [r["steady"][h] for r in runs[mode] for h in hosts if h in r["steady"]]
            whole = [sum(r["cpu_s"][h] for h in hosts) / len(hosts) / iterations for r in runs[mode]]
            if steady:
                ms = [c / (iterations - 1) * 1e3 for _w, c, _v, _s in steady]
                share = [c / w for w, c, _v, _s in steady]
                wake = [v / w for w, _c, v, _s in steady]
                system = [s / c for _w, c, _v, s in steady if c > 0]
                per_it[mode][role] = statistics.median(ms)
                print(f"  {mode:>9} {role:>6}: {statistics.median(ms):6.1f} ms/it ({min(ms):.1f}-{max(ms):.1f}), "
                      f"{statistics.median(share):5.1%} of a core ({statistics.median(system):.0%} system), "
                      f"{statistics.median(wake):6.0f} wake-ups/s; "
                      f"whole process {statistics.median(whole) * 1e3:.0f} ms/it")
        med = statistics.median(x for r in runs[mode] for x in r["iter_s"])
        print(f"  {mode:>9} iteration median {med:.3f} s")
    if all(m in per_it and len(per_it[m]) == 2 for m in ("dlcp", "tcp-cubic")):
        for role in ("server", "worker"):
            print(f"ratio dlcp / tcp-cubic steady CPU per iteration, {role}: "
                  f"{per_it['dlcp'][role] / per_it['tcp-cubic'][role]:.2f}x")
    if args.keep:
        print(f"records and logs: {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
